"""``tapegrad.numpy``: NumPy's namespace, differentiable on tensors. ``import tapegrad.numpy as np`` and code
written for ``autograd.numpy`` runs with only its imports changed.

Every name is NumPy's: ``np.exp``, ``np.sum``, ``np.linalg.solve`` are NumPy's own functions (wrapped so that
tensors inside lists are stacked on the tape first: ``np.sum([x[0], x[1]])`` records), so on arrays and numbers
they run NumPy and return what NumPy returns; given a tensor, NumPy hands the call to tapegrad
(``Tensor.__array_ufunc__`` and ``__array_function__``), which runs its op and records it. The table of what
tapegrad implements is :func:`implementation`'s; a NumPy function it has no rule for raises a ``TypeError``
naming it on tensors, never a silent constant.

Four kinds of name:

- **differentiable**: the ufuncs, reductions, shape and indexing functions, products, statistics, ``np.linalg``
  and ``np.fft``, and NumPy functions composed of ops (``diff``, ``interp``, ``cov``, ``polyval``...);
- **non-differentiable pass-throughs**: functions of integer, boolean or shape results (``shape``, ``ndim``,
  ``allclose``, ``isfinite``, ``argwhere``, ``searchsorted``), run on the values;
- **NumPy's as they are**: constants (``pi``, ``e``, ``inf``, ``newaxis``), dtypes, constructors of new arrays
  (``zeros``, ``eye``, ``arange``: constants to a tape) and ``np.random``;
- **tapegrad's own**, for the constructors NumPy does not dispatch: ``array`` and ``asarray`` stack tensors
  found in lists on the tape (``np.array([x, 2 * x])``) and keep a tensor itself, where real NumPy's
  ``np.asarray(t)`` leaves the tape on purpose; ``full`` with a tensor fill value; ``r_`` and ``c_``, which
  concatenate tensors on the tape.

>>> import tapegrad as tg
>>> import tapegrad.numpy as np
>>> def loss(w):
...     return np.sum(np.tanh(np.dot(np.ones((3, 2)), w)) ** 2)
>>> tg.grad(loss)(np.array([0.1, -0.2])).shape
(2,)
"""

import numpy as _np

# NumPy's namespace (tensors dispatch to tapegrad), as `from numpy import *` binds it, but for the submodules
# NumPy imports on first access (np.f2py, np.testing, np.ma: 50 ms of importing tapegrad): this module's
# __getattr__ gives them, from NumPy, when they are asked for
_LOADED = [n for n in _np.__all__ if n in vars(_np)]
globals().update({n: getattr(_np, n) for n in _LOADED})

# NumPy's linalg, fft and random: ours replace them (while they are bound, `from . import linalg` would find
# the attribute and not import the submodule)
for _name in ("fft", "linalg", "random"):
    globals().pop(_name, None)
del _name

from . import _dispatch, _namespace, fft, linalg, random  # noqa: E402, F401  (_dispatch: NumPy's protocols on Tensor)
from ._table import MAIN as _MAIN  # noqa: E402

globals().update(_namespace.wrapped(_np, _LOADED, _MAIN))  # NumPy's functions, recording tensors inside lists
del _LOADED

from ._arrays import array, asanyarray, asarray, ascontiguousarray, full  # noqa: E402
from ._dispatch import implementation  # noqa: E402
from ._index_tricks import c_, r_  # noqa: E402

__all__ = [
    "array",
    "asarray",
    "asanyarray",
    "ascontiguousarray",
    "asfortranarray",
    "asarray_chkfinite",
    "full",
    "r_",
    "c_",
    "implementation",
]


def asfortranarray(a, dtype=None, *, like=None):
    """``np.asfortranarray``: as :func:`asarray` (the layout of a tensor is not a tape's concern)."""
    return asarray(a, dtype=dtype, like=like)


def asarray_chkfinite(a, dtype=None, order=None):
    """``np.asarray_chkfinite``: as :func:`asarray`, raising ``ValueError`` if a value is infinite or NaN."""
    out = asarray(a, dtype=dtype, order=order)
    if not _np.isfinite(getattr(out, "_data", out)).all():
        raise ValueError("array must not contain infs or NaNs")
    return out


def __getattr__(name):
    return getattr(_np, name)


def __dir__():
    return sorted(set(globals()) | set(dir(_np)))
