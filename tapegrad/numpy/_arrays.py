"""NumPy's array functions that tapegrad composes from its ops: building and reshaping, functions applied along
axes, ``cross``, and the constructors NumPy does not dispatch (``array``, ``asarray``, ``full``), which put
tensors found inside lists on the tape.

>>> import tapegrad as tg, tapegrad.numpy as np
>>> x = tg.Tensor(2.0, requires_grad=True)
>>> with tg.record():
...     y = np.array([x, 3.0 * x]).sum()
>>> y.backward(); float(x.grad)
4.0
"""

from __future__ import annotations

import numpy as np

import tapegrad.ops as ops

from .._tensor import Tensor
from .._tree import holds_tensor
from ..linalg import cross as _cross3
from ._calculus import data, shape
from ._nested import stacked
from ._signatures import cast, unsupported


def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    """``np.array``; tensors, and lists holding tensors (stacked on the tape), give a tensor.

    >>> import tapegrad as tg, tapegrad.numpy as np
    >>> np.array([tg.Tensor(1.0), 2.0])
    Tensor([1., 2.])
    """
    if not holds_tensor(object):
        return np.array(object, dtype=dtype, copy=copy, order=order, subok=subok, ndmin=ndmin, like=like)
    out = cast(stacked(object), dtype)
    if out is object and copy:
        out = ops.astype(out, dtype=out.dtype)  # a copy on the tape, as np.array copies
    n = ndmin - len(shape(out))
    return ops.reshape(out, (1,) * n + shape(out)) if n > 0 else out


def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """``np.asarray``; a tensor stays itself (on the tape), lists holding tensors are stacked on it.

    Real NumPy's ``np.asarray(t)`` is the way to leave the tape on purpose; this one, tapegrad.numpy's, keeps
    autograd-style code differentiable.

    >>> import tapegrad as tg, tapegrad.numpy as np
    >>> t = tg.Tensor([1.0])
    >>> np.asarray(t) is t
    True
    """
    if not holds_tensor(a):
        kwargs = {} if copy is None else {"copy": copy}
        return np.asarray(a, dtype=dtype, order=order, like=like, **kwargs)
    return cast(stacked(a), dtype)


def asanyarray(a, dtype=None, order=None, *, like=None):
    """``np.asanyarray``: as :func:`asarray`."""
    return asarray(a, dtype=dtype, order=order, like=like)


def ascontiguousarray(a, dtype=None, *, like=None):
    """``np.ascontiguousarray``: as :func:`asarray` (tensors are contiguous to a tape)."""
    return asarray(a, dtype=dtype, like=like)


def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    """``np.full``; a tensor fill value gives a tensor that passes its gradient back (tapegrad's ``full``)."""
    if not isinstance(fill_value, Tensor):
        return np.full(shape, fill_value, dtype=dtype, order=order, like=like)
    return ops.full(shape, fill_value, dtype)


def copy(a, order="K", subok=False):
    """NumPy's ``np.copy`` on tensors: a new tensor on the tape (gradient 1)."""
    return ops.astype(a, dtype=a.dtype)


def matrix_transpose(x, /):
    """NumPy's ``np.matrix_transpose`` on tensors: the last two axes swapped."""
    if len(shape(x)) < 2:
        raise ValueError(f"np.matrix_transpose: needs at least 2 dimensions, got shape {shape(x)}")
    return ops.swapaxes(x, -1, -2)


def permute_dims(a, /, axes=None):
    """NumPy's ``np.permute_dims`` on tensors (tapegrad's ``transpose``)."""
    return ops.transpose(a, axes)


def unstack(x, /, *, axis=0):
    """NumPy's ``np.unstack`` on tensors: the slices along ``axis``, as a tuple."""
    ndim = len(shape(x))
    axis = axis % ndim
    return tuple(ops.getitem(x, index=(slice(None),) * axis + (i,)) for i in range(shape(x)[axis]))


def _depth(obj):
    if isinstance(obj, tuple):
        raise TypeError("np.block: arrays is a tuple; only lists can be used to arrange blocks")
    if isinstance(obj, list):
        if not obj:
            raise ValueError("np.block: list cannot be empty")
        levels = [_depth(o) for o in obj]
        if len({d for d, _ in levels}) != 1:
            raise ValueError("np.block: list depths are mismatched")
        return levels[0][0] + 1, max(n for _, n in levels)
    return 0, len(shape(obj))


def block(arrays):
    """NumPy's ``np.block`` on tensors: nested lists concatenated along the last axes, innermost first."""
    depth, ndim = _depth(arrays)
    ndim = max(ndim, depth)

    def build(obj, level):
        if isinstance(obj, list):
            return ops.concatenate([build(o, level + 1) for o in obj], axis=-(depth - level))
        missing = ndim - len(shape(obj))
        return ops.reshape(obj, (1,) * missing + shape(obj)) if missing else obj

    return build(arrays, 0)


def resize(a, new_shape):
    """NumPy's ``np.resize`` on tensors: the flattened input repeated to fill ``new_shape``."""
    new_shape = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    flat = ops.ravel(a)
    n, size = int(np.prod(new_shape, dtype=np.int64)), shape(flat)[0]
    if size == 0 or n == 0:  # NumPy gives zeros
        return ops.zeros_like(np.zeros(new_shape, dtype=data(a).dtype))
    repeats = -(-n // size)
    return ops.reshape(ops.getitem(ops.tile(flat, repeats), index=slice(0, n)), new_shape)


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """NumPy's ``np.apply_along_axis`` on tensors: ``func1d`` on each 1-D slice, the results stacked."""
    ndim = len(shape(arr))
    axis = axis % ndim
    moved = ops.moveaxis(arr, axis, -1)
    batch = shape(moved)[:-1]
    results = [func1d(ops.getitem(moved, index=i), *args, **kwargs) for i in np.ndindex(*batch)]
    if not results:
        raise ValueError("np.apply_along_axis: cannot apply to an input with an empty batch of slices")
    out = ops.stack(results)
    inner = shape(out)[1:]
    out = ops.reshape(out, batch + inner)
    order = list(range(len(batch)))
    dims = list(range(len(batch), len(batch) + len(inner)))
    return ops.transpose(out, tuple(order[:axis] + dims + order[axis:])) if inner else out


def apply_over_axes(func, a, axes):
    """NumPy's ``np.apply_over_axes`` on tensors: ``func(a, axis)`` for each axis, keeping the dimensions."""
    value, ndim = a, len(shape(a))
    for axis in np.atleast_1d(axes).tolist():
        axis = axis % ndim
        res = func(value, axis)
        if len(shape(res)) != len(shape(value)):
            res = ops.expand_dims(res, axis=axis)
            if len(shape(res)) != len(shape(value)):
                raise ValueError("np.apply_over_axes: function is not returning an array of the correct shape")
        value = res
    return value


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """NumPy's ``np.cross`` on tensors, of 3-vectors (tapegrad.linalg's ``cross``), or of 2-vectors (the z
    component)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = ops.moveaxis(a, axisa, -1), ops.moveaxis(b, axisb, -1)
    na, nb = shape(a)[-1], shape(b)[-1]
    if na == nb == 2:
        at = lambda x, i: ops.getitem(x, index=(Ellipsis, i))
        return ops.subtract(ops.multiply(at(a, 0), at(b, 1)), ops.multiply(at(a, 1), at(b, 0)))
    if na != 3 or nb != 3:
        raise unsupported(
            "cross",
            f"vectors of lengths {na} and {nb}",
            "tapegrad handles 3-vectors and pairs of 2-vectors",
            "Pad the 2-vector with a zero third component",
        )
    return ops.moveaxis(_cross3(a, b, axis=-1), -1, axisc)


def in_place(name, instead):
    """NumPy's functions that write into their argument: a tape cannot record them."""

    def f(*args, **kwargs):
        raise TypeError(f"np.{name} writes into its first argument in place, which a tape cannot record. {instead}")

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"NumPy's ``np.{name}`` writes in place: on tensors it raises (what to use is in the message)."
    return f
