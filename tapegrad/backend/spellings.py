"""NumPy spellings over other array libraries: what forwards and rules call when the data is not NumPy.

Op forwards and rules are written with NumPy's names (``power``, ``concatenate``, ``transpose(x, axes)``,
``var(x, ddof=)``) plus three helpers NumPy spells with syntax or methods (``astype``, ``getitem``,
``scatter``: zeros with ``g`` added at ``index``, repeats accumulating). :class:`NumpySpellings` provides these
names over any namespace of the Python array API standard; :func:`cupy_spellings` over CuPy, which implements
NumPy's API and only needs the three helpers.

Indexing is where libraries differ most. The array API has no scatter-add, and ``array_api_strict`` accepts
an integer array index only when every other index is an integer. So ``getitem`` and ``scatter`` here take
basic indices (ints, slices, ``...``, ``None``), one boolean mask, or one integer array among slices (``x[1:,
idx]``, with repeats): the integer array is a ``take`` along its axis, and its adjoint adds ``g`` back with a
one-hot matrix product. Any other index raises ``NotImplementedError`` naming the op and the library.

>>> import numpy as np
>>> fx = NumpySpellings(np, "numpy")    # any array API namespace; NumPy 2 is one
>>> fx.scatter(np.ones(3), np.array([0, 0, 2]), (4,))
array([2., 0., 1., 0.])
"""

from __future__ import annotations

import types

import numpy as np

from ._index import is_basic_index
from ._index import is_basic_item as _is_basic

__all__ = ["NumpySpellings", "numpy_like_spellings", "cupy_spellings", "MissingFunction"]


class MissingFunction(NotImplementedError, AttributeError):
    """A library lacks a function an op needs (an AttributeError too, so ``getattr(fx, name, None)`` works)."""


class NumpySpellings:
    """NumPy's names for the functions tapegrad's forwards and rules call, over array API namespace ``xp``."""

    def __init__(self, xp, name: str):
        self.xp = xp
        self.name = name

    def __getattr__(self, attr):
        # Names the two APIs share (exp, sum, where, matmul, ...): the library's own, cached on first use.
        if attr.startswith("__"):
            raise AttributeError(attr)
        try:
            f = getattr(self.xp, attr)
        except AttributeError:
            raise MissingFunction(f"the {self.name} backend has no {attr}") from None
        setattr(self, attr, f)
        return f

    # -- names that differ ------------------------------------------------------------------------------
    def power(self, x, y):
        return self.xp.pow(x, y)

    def absolute(self, x):
        return self.xp.abs(x)

    def concatenate(self, xs, axis=0):
        return self.xp.concat(list(xs), axis=axis)

    def transpose(self, x, axes=None):
        return self.xp.permute_dims(x, tuple(range(x.ndim))[::-1] if axes is None else tuple(axes))

    def swapaxes(self, x, axis1, axis2):
        axes = list(range(x.ndim))
        axes[axis1], axes[axis2] = axes[axis2], axes[axis1]
        return self.xp.permute_dims(x, tuple(axes))

    def squeeze(self, x, axis=None):
        if axis is None:  # the standard needs the axes named
            return self.xp.reshape(x, tuple(n for n in x.shape if n != 1))
        return self.xp.squeeze(x, axis=axis)

    def var(self, x, axis=None, ddof=0, keepdims=False):
        return self.xp.var(x, axis=axis, correction=ddof, keepdims=keepdims)

    def clip(self, x, a_min=None, a_max=None):
        return self.xp.clip(x, min=a_min, max=a_max)

    def astype(self, x, dtype):
        return self.xp.astype(x, dtype)

    def zeros(self, shape, dtype=None):
        return self.xp.zeros(shape, dtype=None if dtype is float else dtype)

    def masked(self, cond, g):
        return self.xp.where(cond, g, self.xp.zeros_like(g))  # the standard multiplies no bool by float

    def ones(self, shape, dtype=None):
        return self.xp.ones(shape, dtype=None if dtype is float else dtype)

    # -- indexing -------------------------------------------------------------------------------------
    def getitem(self, x, index):
        items, k = self._index(index, x.ndim, "getitem")
        if k is None:
            return x[items[0] if len(items) == 1 and not _is_basic(items[0]) else items]
        basic, axis, idx = self._split(items, k)
        flat = self.xp.reshape(idx, (-1,))
        flat = self.xp.where(flat < 0, flat + x.shape[k], flat)
        y = self.xp.take(x[basic], flat, axis=axis)
        return self.xp.reshape(y, y.shape[:axis] + tuple(idx.shape) + y.shape[axis + 1 :])

    def scatter(self, g, index, shape):
        xp = self.xp
        kw = {"device": g.device} if hasattr(g, "device") else {}
        out = xp.zeros(shape, dtype=g.dtype, **kw)
        items, k = self._index(index, len(shape), "scatter")
        if k is None:
            if len(items) == 1 and not _is_basic(items[0]):  # one boolean mask
                out[items[0]] = g
                return out
            items = tuple(i for i in items if i is not None)  # new axes of size 1: drop them from g
            out[items] = xp.reshape(g, out[items].shape)
            return out
        basic, axis, idx = self._split(items, k)
        n, m = shape[k], int(np.prod(idx.shape, dtype=np.int64))
        flat = xp.reshape(idx, (-1,))
        flat = xp.where(flat < 0, flat + n, flat)
        # Repeated indices must add up: a one-hot (m, n) matrix does the scatter-add with a matmul.
        onehot = xp.astype(xp.reshape(flat, (m, 1)) == xp.reshape(xp.arange(n, **kw), (1, n)), g.dtype)
        g = xp.reshape(g, g.shape[:axis] + (m,) + g.shape[axis + idx.ndim :])
        last = g.ndim - 1
        to_end = tuple(i for i in range(g.ndim) if i != axis) + (axis,)
        back = tuple(range(axis)) + (last,) + tuple(range(axis, last))
        out[basic] = xp.permute_dims(xp.matmul(xp.permute_dims(g, to_end), onehot), back)
        return out

    def _index(self, index, ndim, op):
        """The index as a tuple with arrays of this library, and the position of its one integer array."""
        items = index if isinstance(index, tuple) else (index,)
        items = tuple(i if _is_basic(i) else self.xp.asarray(i) for i in items)
        arrays = [p for p, i in enumerate(items) if not _is_basic(i)]
        if len(items) == 1 and arrays and self.xp.isdtype(items[0].dtype, "bool"):
            return items, None
        if not any(i is Ellipsis for i in items):  # the standard wants every axis indexed: x[0] is x[0, ...]
            items = items + (Ellipsis,)
        if not arrays:
            return items, None
        a = items[arrays[0]]
        if (
            len(arrays) == 1
            and self.xp.isdtype(a.dtype, "integral")
            and all(isinstance(i, slice) or i is Ellipsis or p == arrays[0] for p, i in enumerate(items))
        ):
            e = next((p for p, i in enumerate(items) if i is Ellipsis), None)
            if e is not None:  # spell it out, so the integer array's axis is known
                items = items[:e] + (slice(None),) * (ndim - len(items) + 1) + items[e + 1 :]
            return items, next(p for p, i in enumerate(items) if not _is_basic(i))
        raise NotImplementedError(
            f"{op}: the {self.name} backend supports basic indices, one boolean mask as the whole index, or one "
            f"integer array among slices (x[1:, idx]); got {index!r}. Index in steps, or use NumPy or CuPy arrays"
        )

    @staticmethod
    def _split(items, k):
        # x[items] == take(x[basic], idx, axis): ``basic`` keeps axis k whole; slices before k keep their axes.
        basic = tuple(slice(None) if p == k else i for p, i in enumerate(items))
        return basic, k, items[k]


def numpy_like_spellings(module, name: str, scatter_add, index_array=None):
    """A library with NumPy's API (CuPy): its namespace plus ``astype``, ``getitem`` and ``scatter``.

    ``scatter_add(out, index, g)`` adds with repeats accumulating (``np.add.at``, ``cupyx.scatter_add``);
    ``index_array`` moves NumPy index arrays into the library (``cupy.asarray``: to the device).
    """

    def own(index):
        if index_array is None:
            return index
        items = index if isinstance(index, tuple) else (index,)
        items = tuple(index_array(i) if isinstance(i, (np.ndarray, list)) else i for i in items)
        return items if isinstance(index, tuple) else items[0]

    def scatter(g, index, shape):
        out = module.zeros(shape, dtype=g.dtype)
        index = own(index)
        if is_basic_index(index):
            out[index] = g  # basic indexing never repeats an element
        else:
            scatter_add(out, index, g)  # repeated integer indices must accumulate
        return out

    names = {k: v for k, v in vars(module).items() if not k.startswith("_")}
    names.update(astype=lambda x, dtype: x.astype(dtype), getitem=lambda x, index: x[own(index)])
    names.update(scatter=scatter, masked=lambda cond, g: module.where(cond, g, 0), name=name)
    return types.SimpleNamespace(**names)


def cupy_spellings(cupy):
    """CuPy has NumPy's names; NumPy index arrays (a user's ``np.array([0, 2])``) go to the device."""
    import cupyx

    return numpy_like_spellings(cupy, "cupy", cupyx.scatter_add, cupy.asarray)
