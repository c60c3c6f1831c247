"""Constant-shaped results: ``zeros_like``, ``ones_like`` (no gradient) and ``full``/``full_like``, whose
fill value, when it is a tensor, gets the gradient (summed over the places it filled, as ``broadcast_to``).

``zeros_like`` and ``ones_like`` make their result in the library of their input, so rules use them through
``xp`` for constants on a recorded replay too.
"""

import numpy as np

from ..registry import defnondiff
from ..tensor import Tensor
from .elementwise import astype
from .shape import broadcast_to


def _shape(a):
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


zeros_like = defnondiff(
    "zeros_like",
    lambda a, dtype=None, *, xp=np: xp.zeros_like(a, dtype=dtype),
    doc="Zeros of ``a``'s shape, dtype and array library (no gradient).\n\n>>> import tapegrad as tg\n"
    ">>> tg.zeros_like(tg.Tensor([1.0, 2.0]))\nTensor([0., 0.])",
)
ones_like = defnondiff(
    "ones_like",
    lambda a, dtype=None, *, xp=np: xp.ones_like(a, dtype=dtype),
    doc="Ones of ``a``'s shape, dtype and array library (no gradient).\n\n>>> import tapegrad as tg\n"
    ">>> tg.ones_like(tg.Tensor([1.0, 2.0]))\nTensor([1., 1.])",
)
_full_like = defnondiff(
    "full_like", lambda a, fill_value, dtype=None, *, xp=np: xp.full_like(a, fill_value, dtype=dtype)
)


def full(shape, fill_value, dtype=None):
    """A tensor of ``shape`` filled with ``fill_value``; a tensor fill value gets the gradient (summed).

    >>> import tapegrad as tg
    >>> tg.full((2,), tg.Tensor(3.0))
    Tensor([3., 3.])
    """
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)
    if not isinstance(fill_value, Tensor):
        return Tensor._wrap(np.full(shape, fill_value, dtype=dtype))
    out = broadcast_to(fill_value, shape)
    return out if dtype is None or out.dtype == dtype else astype(out, dtype=dtype)


def full_like(a, fill_value, dtype=None):
    """A tensor of ``a``'s shape and dtype (or ``dtype``) filled with ``fill_value``; a tensor fill value gets
    the gradient (summed).

    >>> import tapegrad as tg
    >>> tg.full_like(tg.Tensor([1.0, 2.0]), 0.5)
    Tensor([0.5, 0.5])
    """
    if not isinstance(fill_value, Tensor):
        return _full_like(a, fill_value=fill_value, dtype=dtype)
    out = broadcast_to(fill_value, _shape(a))
    dtype = dtype if dtype is not None else getattr(a, "dtype", None)
    return out if dtype is None or out.dtype == dtype else astype(out, dtype=dtype)
