"""Selections and insertions, composed of ops: ``select`` (``where``), ``compress``, ``extract``, ``delete``
and ``insert`` (``getitem`` at the positions NumPy's own function computes on an array of element ids, so
its rules for ``obj``, ``axis`` and broadcasting hold exactly; a value inserted at several places gets all
their gradients).
"""

import numpy as np

from .._tensor import Tensor
from ..backend import to_numpy
from ._axes import normalize_axes
from .elementwise import astype, where
from .shape import concatenate, getitem, reshape


def _data(a):
    return a._data if isinstance(a, Tensor) else a


def _shape(a):
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def _flat_positions(a):
    return np.arange(int(np.prod(_shape(a), dtype=np.int64))).reshape(_shape(a))


def select(condlist, choicelist, default=0):
    """The element of the first choice whose condition holds, else ``default``, as ``np.select``.

    >>> import tapegrad as tg
    >>> x = tg.Tensor([-1.0, 0.5, 2.0])
    >>> tg.select([x < 0, x < 1], [-x, x * 10], default=x)
    Tensor([1., 5., 2.])
    """
    condlist, choicelist = list(condlist), list(choicelist)
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: {len(condlist)} conditions for {len(choicelist)} choices; give one per choice")
    if not condlist:
        raise ValueError("select: needs at least one condition")
    out = default
    for cond, choice in zip(reversed(condlist), reversed(choicelist)):
        out = where(cond, choice, out)
    return out


def compress(condition, a, axis=None):
    """The slices of ``a`` along ``axis`` (None: elements of the flattened input) where ``condition`` holds.

    >>> import tapegrad as tg
    >>> tg.compress([False, True, True], tg.Tensor([1.0, 2.0, 3.0]))
    Tensor([2., 3.])
    """
    keep = np.nonzero(np.asarray(_host(condition), dtype=bool).reshape(-1))[0]
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    (axis,) = normalize_axes(a, axis, "compress")
    if keep.size and keep[-1] >= _shape(a)[axis]:
        raise IndexError(f"compress: a condition of length {keep[-1] + 1} or more for an axis of {_shape(a)[axis]}")
    return getitem(a, index=(slice(None),) * axis + (keep, ...))


def extract(condition, arr):
    """The elements of ``arr`` where ``condition`` is nonzero, flattened, as ``np.extract``.

    >>> import tapegrad as tg
    >>> tg.extract([[True, False], [False, True]], tg.Tensor([[1.0, 2.0], [3.0, 4.0]]))
    Tensor([1., 4.])
    """
    return getitem(reshape(arr, (-1,)), index=np.nonzero(np.asarray(_host(condition)).reshape(-1))[0])


def _host(a):
    d = _data(a)
    return d if isinstance(d, (list, tuple, np.ndarray, int, float, bool)) else to_numpy(d)


def delete(arr, obj, axis=None):
    """``arr`` without the entries ``obj`` (an index, slice or indices) along ``axis`` (None: flattened).

    >>> import tapegrad as tg
    >>> tg.delete(tg.Tensor([1.0, 2.0, 3.0]), 1)
    Tensor([1., 3.])
    """
    if axis is not None:
        (axis,) = normalize_axes(arr, axis, "delete")
    return getitem(reshape(arr, (-1,)), index=np.delete(_flat_positions(arr), obj, axis=axis))


def insert(arr, obj, values, axis=None):
    """``values`` inserted before ``obj`` along ``axis`` (None: flattened), with NumPy's rules for ``obj``
    and for broadcasting ``values``; a value broadcast to several places gets all their gradients.

    >>> import tapegrad as tg
    >>> tg.insert(tg.Tensor([1.0, 2.0]), 1, tg.Tensor(9.0))
    Tensor([1., 9., 2.])
    """
    if axis is not None:
        (axis,) = normalize_axes(arr, axis, "insert")
    ids = _flat_positions(arr)
    values_ids = ids.size + np.arange(int(np.prod(_shape(values), dtype=np.int64))).reshape(_shape(values))
    index = np.insert(ids, obj, values_ids, axis=axis)
    dtype = arr.dtype if hasattr(arr, "dtype") else None
    if isinstance(values, Tensor) and dtype is not None and values.dtype != dtype:
        values = astype(values, dtype=dtype)  # NumPy casts the values to the array's dtype
    return getitem(concatenate([reshape(arr, (-1,)), reshape(values, (-1,))]), index=index)
