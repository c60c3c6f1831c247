"""The namespace rules compute with on a plain replay of NumPy arrays: NumPy itself, plus the few functions
NumPy spells with syntax or methods. Other libraries get a namespace with the same names
(:class:`~tapegrad.backend.NumpySpellings`, :func:`~tapegrad.backend.numpy_like_spellings`).

>>> import numpy as np
>>> numpy_rules.exp is np.exp
True
>>> numpy_rules.masked(np.array([True, False]), np.array([1.0, np.inf]))   # a select: 0 where masked, never NaN
array([1., 0.])
"""

from __future__ import annotations

import numpy as np

from ._index import is_basic_index

__all__ = ["numpy_rules", "scatter", "masked"]

_SMALL = 4096  # below this many elements a select is as cheap as a product (measured)


def masked(cond, g, out=None):
    """``where(cond, g, 0)``: the gradient where ``cond`` holds, exactly 0 elsewhere (also where ``g`` is
    infinite or NaN, which ``g * cond`` would turn into NaN); written into ``out`` (which may be ``g`` itself)
    when given, as compiled programs do with their buffers.

    NumPy's ``where`` is several times slower than a product on large arrays with random masks (a branch per
    element), so a large float ``g`` is selected without a branch: its bits (each part's, for a complex ``g``)
    and'ed with a mask of all bits set where ``cond`` holds, as cheap as the product ``g * cond`` and exact.
    """
    kind = g.dtype.kind
    bits = _BITS.get(g.dtype.itemsize // (2 if kind == "c" else 1)) if kind in "fc" else None
    if g.size < _SMALL or bits is None or (out is not None and out.dtype != g.dtype):
        if out is None:
            return np.where(cond, g, 0)
        out[...] = np.where(cond, g, 0)  # a compiled program's kernels may read it from its buffer
        return out
    cond = np.asarray(cond, dtype=bool)  # a mask of 0/1 (or of any truth values) selects as where does
    ones = np.negative(cond.view(np.int8)).astype(bits)  # -1, all bits set, where cond holds; 0 elsewhere
    if kind == "c":  # each part on its own
        into = out if out is not None else np.empty(np.broadcast_shapes(cond.shape, g.shape), g.dtype)
        np.bitwise_and(g.real.view(bits), ones, out=into.real.view(bits))
        np.bitwise_and(g.imag.view(bits), ones, out=into.imag.view(bits))
        return into
    into = out.view(bits) if out is not None else ones if cond.shape == g.shape else None
    selected = np.bitwise_and(g.view(bits), ones, out=into)
    return out if out is not None else selected.view(g.dtype)


_BITS = {2: np.int16, 4: np.int32, 8: np.int64}  # the integer as wide as a float, whose bits a select and's


def scatter(g, index, shape):
    """Zeros of ``shape`` with ``g`` added at ``index``: repeated integer indices accumulate."""
    out = np.zeros(shape, dtype=g.dtype)
    if is_basic_index(index):
        out[index] = g  # basic indexing never repeats an element
    else:
        np.add.at(out, index, g)  # repeated integer indices must accumulate
    return out


def sum(a, axis=None, dtype=None, out=None, keepdims=False, **more):  # noqa: A001 (NumPy's name)
    """``np.sum``: on an array, the ``np.add.reduce`` it calls (which widens small integers as it does), without
    its Python wrapper, which costs more than the reduction on a bias's gradient (each broadcast input's, every
    step)."""
    if a.__class__ is np.ndarray and dtype is None and not more:
        return np.add.reduce(a, axis=axis, out=out, keepdims=keepdims)
    return np.sum(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **more)


def broadcast_to(x, shape):
    """``np.broadcast_to``: a NumPy array (or scalar) onto a tuple of sizes is viewed directly, read-only as
    NumPy's view is, without its Python layers (2.0 µs against NumPy's 3.6 µs, on the gradient of every sum and
    mean: a loss's, each step)."""
    if shape.__class__ is tuple and (x.__class__ is np.ndarray or isinstance(x, np.generic)):
        view = _broadcast_view(x, shape)
        if view is not None:
            return view
    return np.broadcast_to(x, shape)


def _broadcast_view(x, shape):
    # None where NumPy must decide (or explain): a size that does not broadcast, an object or empty array, or
    # memory that is not one C-ordered block (a buffer must be)
    lead = len(shape) - x.ndim
    if lead < 0 or not x.flags.c_contiguous or x.dtype.hasobject or x.size == 0:
        return None
    strides = [0] * lead
    for n, size, stride in zip(x.shape, shape[lead:], x.strides):
        if n == size:
            strides.append(stride)
        elif n == 1 and size.__class__ is int and size >= 0:
            strides.append(0)
        else:
            return None
    view = np.ndarray(shape, x.dtype, x, 0, tuple(strides))
    view.flags.writeable = False
    return view


def swapaxes(a, axis1, axis2):
    """``np.swapaxes``, by the array's method where it is one (the transposes of a matrix product's rules)."""
    return a.swapaxes(axis1, axis2) if a.__class__ is np.ndarray else np.swapaxes(a, axis1, axis2)


class _NumpyRules:
    """NumPy by its own names (any of them, looked up once and cached), plus ``astype``, ``getitem``,
    ``masked`` and ``scatter``; ``broadcast_to``, ``sum`` and ``swapaxes`` are NumPy's with a shorter path for arrays."""

    name = "numpy"

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        f = getattr(np, attr)  # AttributeError names the missing function
        setattr(self, attr, f)
        return f

    @staticmethod
    def astype(x, dtype):
        return x.astype(dtype)

    @staticmethod
    def getitem(x, index):
        return x[index]

    broadcast_to = staticmethod(broadcast_to)
    masked = staticmethod(masked)
    scatter = staticmethod(scatter)
    sum = staticmethod(sum)
    swapaxes = staticmethod(swapaxes)


numpy_rules = _NumpyRules()
