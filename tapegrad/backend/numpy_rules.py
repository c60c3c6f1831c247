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
    element), so large arrays take the product, and only where it is not finite (one sum tells) set the rest
    to 0: the product already holds g where ``cond`` holds (inf * 1, NaN * 1), so that is the select.
    """
    if g.size < _SMALL:
        if out is None:
            return np.where(cond, g, 0)
        out[...] = np.where(cond, g, 0)  # a compiled program's kernels may read it from its buffer
        return out
    with np.errstate(invalid="ignore", over="ignore"):  # 0 * inf's NaN is put right below; a test's overflow too
        out = np.multiply(g, cond, out=out)
        finite = _finite(out)
    if not finite:
        np.copyto(out, 0, where=np.logical_not(cond))
    return out


def _finite(a) -> bool:
    """False where ``a`` holds an inf or a NaN (or where its one-pass test overflows: a false alarm only costs the
    exact path). A contiguous real array's dot with itself, a BLAS loop, is twice as fast as a sum."""
    if a.dtype.kind == "f" and a.dtype.itemsize >= 4 and a.flags.c_contiguous:
        flat = a.reshape(-1)
        return bool(np.isfinite(np.dot(flat, flat)))
    return bool(np.isfinite(np.add.reduce(a, axis=None)))


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


def swapaxes(a, axis1, axis2):
    """``np.swapaxes``, by the array's method where it is one (the transposes of a matrix product's rules)."""
    return a.swapaxes(axis1, axis2) if a.__class__ is np.ndarray else np.swapaxes(a, axis1, axis2)


class _NumpyRules:
    """NumPy by its own names (any of them, looked up once and cached), plus ``astype``, ``getitem``,
    ``masked`` and ``scatter``; ``sum`` and ``swapaxes`` are NumPy's with a shorter path for arrays."""

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

    masked = staticmethod(masked)
    scatter = staticmethod(scatter)
    sum = staticmethod(sum)
    swapaxes = staticmethod(swapaxes)


numpy_rules = _NumpyRules()
