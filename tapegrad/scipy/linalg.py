"""``scipy.linalg`` on tensors, with SciPy's signatures: ``solve_triangular``, ``cho_factor``/``cho_solve`` and
``expm`` are tapegrad's (:mod:`tapegrad.linalg`, differentiable to any order); ``sqrtm`` is one op here, whose
gradient solves the Sylvester equation ``S^T X + X S^T = G`` for the principal square root ``S`` (first
derivatives only: a second one raises).

>>> import numpy as np, tapegrad as tg
>>> from tapegrad.scipy import linalg
>>> a = np.array([[4.0, 1.0], [1.0, 3.0]])
>>> c = linalg.cho_factor(a)
>>> linalg.cho_solve(c, np.array([5.0, 4.0]))  # arrays in, an array out, as SciPy's
array([1., 1.])
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

import tapegrad.linalg as _linalg
import tapegrad.ops as ops

from ..ops._rules import recorded
from ..registry import defop
from ._types import like_scipy

__all__ = ["solve_triangular", "cho_factor", "cho_solve", "expm", "sqrtm"]

solve_triangular = like_scipy(_linalg.solve_triangular)
cho_solve = like_scipy(_linalg.cho_solve)
expm = like_scipy(_linalg.expm)


@like_scipy
def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """``(c, lower)``: a's Cholesky factor, upper by default as SciPy's, for :func:`cho_solve`. Unlike SciPy's,
    the other triangle of c is zeros.

    >>> import numpy as np
    >>> from tapegrad.scipy import linalg
    >>> linalg.cho_factor(np.array([[4.0, 2.0], [2.0, 2.0]]))[0]
    array([[2., 1.],
           [0., 1.]])
    """
    c = _linalg.cholesky(a)
    return (c, True) if lower else (ops.swapaxes(c, -1, -2), False)


def _sqrtm_vjp(xp, g, ans, x):
    if recorded(xp):
        raise NotImplementedError("sqrtm: tapegrad has its first derivative only (a Sylvester solve by SciPy)")
    s = np.asarray(ans)
    return scipy.linalg.solve_sylvester(s.T, s.T, np.asarray(g))


def _sqrtm(a):
    if np.iscomplexobj(a) or np.ndim(a) != 2:
        raise TypeError(f"sqrtm takes one real square matrix here, got {np.asarray(a).dtype} of shape {np.shape(a)}")
    s = scipy.linalg.sqrtm(a)
    if np.iscomplexobj(s):
        raise ValueError("sqrtm: this matrix has no real square root (a negative eigenvalue); tapegrad's is real only")
    return np.asarray(s, dtype=np.result_type(a, np.float32))


_sqrtm_op = defop("sqrtm", _sqrtm, _sqrtm_vjp, save="ans", register=False)


@like_scipy
def sqrtm(A, disp=True, blocksize=64):
    """The principal square root of a real square matrix (``scipy.linalg.sqrtm``), differentiable once.

    >>> import numpy as np
    >>> from tapegrad.scipy import linalg
    >>> linalg.sqrtm(np.array([[4.0, 0.0], [0.0, 9.0]]))
    array([[2., 0.],
           [0., 3.]])
    """
    return _sqrtm_op(A)
