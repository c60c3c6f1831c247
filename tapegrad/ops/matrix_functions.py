"""Matrix functions: expm and logm (SciPy's, on stacked matrices), with rules by the block-triangular trick.

For a primary matrix function f, f([[A, E], [0, A]]) = [[f(A), L_f(A, E)], [0, f(A)]], where L_f(A, E) is
the Frechet derivative of f at A in the direction E (Higham, *Functions of Matrices*, theorem 3.6). f is
holomorphic, so in tapegrad's convention its vector-Jacobian product is the transpose of L_f(A, .), which is
L_f(A^T, .): the rule of f is f itself on a matrix twice the size, so second derivatives come from the same
rule. This is as stable as f itself: SciPy's scaling-and-squaring Pade expm, and its inverse scaling and
squaring logm (whose error estimate on the doubled matrix SciPy reports as a warning when it is poor).

logm's rule raises at a singular matrix, where log has no derivative. Left out: sqrtm, funm and the other
matrix functions; these two need SciPy (without it they raise
``NotImplementedError`` naming the op), and run on NumPy arrays only.
"""

import math

import numpy as np

from ..backend import MissingFunction, to_numpy
from ..backend import dask_array as dask
from ..registry import defop
from ._complex import finfo_eps, like
from ._matrix import is_numpy, mT, scipy_linalg
from ._rules import data, in_rule
from .linalg import check_matrices


def _scipy(op, xp):
    sl = scipy_linalg() if is_numpy(xp) else None
    if sl is None:
        where = "SciPy is not installed" if is_numpy(xp) else f"the {getattr(xp, 'name', xp)} backend has none"
        raise MissingFunction(f"needs scipy.linalg.{op} ({where}); compute {op} with NumPy arrays and SciPy")
    return sl


def _same_precision(out, a):
    # SciPy computes logm of float32 in float64: give back a's precision (complex when the log is)
    out = np.asarray(out)
    return out.astype(np.result_type(a.dtype, np.complex64) if out.dtype.kind == "c" else a.dtype, copy=False)


def _expm(a, *, xp=np):
    return _same_precision(_scipy("expm", xp).expm(a), a)


def _logm(a, *, xp=np):
    # in double precision (SciPy's single-precision logm is accurate to about 1e-6 only, and warns), one
    # matrix at a time (SciPy's logm takes one)
    sl = _scipy("logm", xp)
    a64 = a.astype(np.result_type(a.dtype, np.float64))
    parts = [sl.logm(a64[i]) for i in np.ndindex(*a.shape[:-2])]
    # no matrix at all (an empty batch) has a real logarithm: the dtype is the input's, as for a batch of them
    dtype = np.result_type(a64.dtype, *[p.dtype for p in parts])
    stacked = np.stack(parts) if parts else np.empty(a.shape, dtype)
    return _same_precision(stacked.astype(dtype).reshape(a.shape), a)


def _frechet_vjp(xp, f, g, a):
    """L_f(a^T, g): the top right block of f([[a^T, g], [0, a^T]])."""
    n = a.shape[-1]
    at = mT(xp, a)
    top = xp.concatenate([at, g], axis=-1)
    bottom = xp.concatenate([xp.zeros_like(at), at], axis=-1)
    return like(xp, f(xp.concatenate([top, bottom], axis=-2))[..., :n, n:], a)


def _logm_vjp(xp, g, ans, a):
    # log has no derivative at 0: a singular matrix (to sqrt(eps) of its norm) has no logm to differentiate
    s = np.linalg.svd(to_numpy(data(a)), compute_uv=False)
    if np.any(s[..., -1] <= s[..., 0] * math.sqrt(finfo_eps(s.dtype))):
        raise ValueError(
            "logm: the matrix is singular (an eigenvalue is 0, where log has no derivative, and logm's value "
            "there is not finite); keep the matrix invertible (add a multiple of the identity)"
        )
    return _frechet_vjp(xp, in_rule(xp, _logm_op), g, a)


# fmt: off
_expm_op = defop("expm", _expm, lambda xp, g, ans, a: _frechet_vjp(xp, in_rule(xp, _expm_op), g, a), save="x",
                 refuses={"dask": dask.LINALG}, jvp="transpose", batch="leading")
_logm_op = defop("logm", _logm, _logm_vjp, save="x", refuses={"dask": dask.LINALG}, jvp="transpose", batch="leading")
# fmt: on


def expm(a):
    """The matrix exponential of each square matrix (scipy.linalg.expm); its gradient is the Frechet derivative
    at a^T, by the block-triangular trick (this module's docstring).

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.expm(tg.Tensor([[0.0, 0.0], [0.0, 1.0]]))
    Tensor([[1.        , 0.        ],
            [0.        , 2.71828183]])
    """
    check_matrices(a, "expm")
    return _expm_op(a)


def logm(a):
    """The principal matrix logarithm of each square matrix (scipy.linalg.logm; complex when a real matrix has
    no real logarithm); its gradient by the block-triangular trick (this module's docstring).

    >>> import tapegrad as tg
    >>> from tapegrad import linalg as la
    >>> la.logm(tg.Tensor([[1.0, 0.0], [0.0, 2.0]]))
    Tensor([[0.        , 0.        ],
            [0.        , 0.69314718]])
    """
    check_matrices(a, "logm")
    return _logm_op(a)
