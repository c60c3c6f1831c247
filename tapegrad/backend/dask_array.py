"""Dask arrays: NumPy's names over ``dask.array``, so that forwards and rules build Dask graphs lazily.

``dask.array`` implements most of NumPy's API on chunked arrays, lazily: every function builds a graph and
computes nothing. :func:`dask_spellings` is that namespace plus what rules call that NumPy spells with syntax
or methods (``astype``, ``getitem``, ``scatter``, ``masked``) and ``isdtype``. Dask's functions take NumPy
arrays as inputs (as one-chunk arrays), which is why NumPy arrays mix with Dask in one op
(``Backend.takes_numpy``): small parameters stay NumPy, large data is Dask, the result is Dask.

Indexing. A NumPy index (ints, slices, integer arrays, a boolean mask) is known when the graph is built, so
any of NumPy's indices works: basic indices and one integer array are Dask's own; any other index gathers
through the flat positions NumPy computes for it. The adjoint, ``scatter`` (zeros with ``g`` added at
``index``, repeats accumulating), is a Dask assignment for a basic index; for any other index each chunk of
``g`` adds into a zero array with ``np.add.at`` (inside ``map_blocks``) and Dask sums the partial results. An
index that is itself a Dask array (a lazy mask ``x[x > 0]``) has a size Dask knows only after computing, and
raises ``NotImplementedError``: use ``tg.where(mask, x, 0)``, or compute the index first.

Nothing here imports Dask: the namespace is handed in when the first Dask array is met.

>>> import dask.array as da, numpy as np
>>> fx = dask_spellings(da)
>>> fx.scatter(da.ones(3, chunks=2), np.array([0, 0, 2]), (4,)).compute()
array([2., 0., 1., 0.])
"""

from __future__ import annotations

import math

import numpy as np

from ._index import is_basic_index
from .spellings import MissingFunction

__all__ = ["dask_spellings", "DaskSpellings", "LINALG", "SORT", "FFT"]

# Why Dask cannot run an op, for the ops' rows to declare (``refuses={"dask": LINALG}``, tapegrad.registry.Op):
# the backend then raises NotImplementedError naming the op, Dask and the reason, rather than compute something
# else (or eagerly).
LINALG = (
    "dask.array.linalg factors one large matrix chunked its own way; it has no batched small-matrix linear "
    "algebra (stacks of matrices, det, eig, expm). A model's matrices are usually parameters: keep them NumPy"
)
SORT = "dask.array has no sort, argsort or partition (order statistics need every element of an axis at once)"
FFT = "Dask's FFT needs one chunk along every transformed axis and differs from NumPy's in n= and s="


class DaskSpellings:
    """``dask.array`` by NumPy's names (looked up once, then cached), plus the helpers rules call."""

    name = "dask"

    def __init__(self, da):
        self.da = da

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        f = getattr(self.da, attr, None)
        if f is None and attr in _SPECIAL:
            f = _special(self.da, attr)
        if f is None:
            raise MissingFunction(f"the dask backend has no {attr} (dask.array lacks it)")
        setattr(self, attr, f)
        return f

    @staticmethod
    def isdtype(dtype, kind) -> bool:
        kinds = {"bool": "b", "integral": "iu", "real floating": "f", "complex floating": "c", "numeric": "iufc"}
        return any(np.dtype(dtype).kind in kinds[k] for k in ((kind,) if isinstance(kind, str) else kind))

    @staticmethod
    def astype(x, dtype):
        return x.astype(dtype)

    def masked(self, cond, g):
        return self.da.where(cond, g, 0)

    def broadcast_to(self, x, shape):
        """``da.broadcast_to``; onto the shape of a chunked array (a ``ChunkedShape``, what rules read of a saved
        input), the new and stretched axes take that array's chunks: the gradient of ``mean`` over a thousand
        chunks is a thousand chunks, not one block of the data's size."""
        chunks = getattr(shape, "chunks", None)
        if chunks is None:
            return self.da.broadcast_to(x, shape)
        x = self.da.asarray(x)
        lead = len(shape) - x.ndim
        own = ((None,) * lead) + tuple(x.chunks)
        chunks = tuple(c if n is None or x.shape[i - lead] == 1 else n for i, (c, n) in enumerate(zip(chunks, own)))
        return self.da.broadcast_to(x, tuple(shape), chunks=chunks)

    def eye(self, N, M=None, k=0, dtype=float):
        return self.da.eye(N, M=M, k=k, dtype=dtype)  # Dask's second positional parameter is chunks=

    def reshape(self, x, shape):
        if x.size == 0:  # Dask cannot reshape an empty array
            return self.da.zeros(np.empty(x.shape, dtype=np.bool_).reshape(shape).shape, dtype=x.dtype)
        return self.da.reshape(x, shape)

    def zeros(self, shape, dtype=None):
        return self.da.zeros(shape, dtype=float if dtype is None else dtype)

    # -- indexing -------------------------------------------------------------------------------------
    def getitem(self, x, index):
        index = _known(index, "getitem")
        if is_basic_index(index):
            return x[index]
        items = index if isinstance(index, tuple) else (index,)
        arrays = [i for i in items if isinstance(i, np.ndarray)]
        if (
            len(arrays) == 1
            and arrays[0].ndim == 1
            and arrays[0].dtype != bool
            and len(arrays) + sum(isinstance(i, (int, slice, type(None), type(Ellipsis), np.integer)) for i in items)
            == len(items)
        ):
            return x[index]  # one integer vector among basic items: Dask's own fancy indexing
        pos = _positions(x.shape, index)
        flat = self.da.reshape(x, (-1,)) if x.ndim != 1 else x
        return self.da.reshape(self.da.take(flat, pos.reshape(-1)), pos.shape)

    def scatter(self, g, index, shape):
        da = self.da
        index = _known(index, "scatter")
        if is_basic_index(index):
            out = da.zeros(shape, dtype=g.dtype)
            items = index if isinstance(index, tuple) else (index,)
            items = tuple(i for i in items if i is not None)  # new axes of size 1: drop them from g
            view = np.empty(shape, dtype=np.bool_)[items]  # the shape the assignment fills
            if view.size == 0:
                return out
            out[items] = da.reshape(g, view.shape) if g.shape != view.shape else g
            return out
        pos = _positions(shape, index)
        g = da.asarray(g)
        if g.ndim == 0:
            g, pos = da.reshape(g, (1,)), pos.reshape(1)
        n = math.prod(shape)
        pos = da.from_array(pos, chunks=g.chunks)
        parts = da.map_blocks(
            _add_at,
            g,
            pos,
            n,
            new_axis=g.ndim,
            chunks=tuple((1,) * len(c) for c in g.chunks) + ((n,),),
            dtype=g.dtype,
            meta=np.empty((0,) * (g.ndim + 1), dtype=g.dtype),
        )
        return da.reshape(parts.sum(axis=tuple(range(g.ndim))), shape)


_SPECIAL = ("erf", "erfc")  # SciPy's, chunk by chunk: one task per chunk, not a graph of a series per element


def _special(da, name):
    """SciPy's ``special.<name>`` on each chunk, or None without SciPy (ops then compose it of Dask's functions)."""
    try:
        import scipy.special  # noqa: PLC0415  (optional, and slow to import: only when first used)
    except ImportError:
        return None
    f = getattr(scipy.special, name)
    return lambda x: da.map_blocks(f, x, dtype=x.dtype)


def _add_at(g, pos, n):
    """One chunk of a scatter-add: ``g`` added at flat positions ``pos`` of ``n`` zeros, repeats accumulating."""
    out = np.zeros(n, dtype=g.dtype)
    np.add.at(out, pos.reshape(-1), g.reshape(-1))
    return out.reshape((1,) * g.ndim + (n,))


def _positions(shape, index):
    """The flat position in an array of ``shape`` of every element that ``index`` selects (NumPy's semantics)."""
    return np.arange(math.prod(shape), dtype=np.intp).reshape(shape)[index]


def _known(index, op):
    """``index`` with lists as NumPy arrays; an index holding a Dask array raises."""
    if isinstance(index, list):
        index = np.asarray(index)
    items = index if isinstance(index, tuple) else (index,)
    if any(isinstance(i, list) for i in items):
        index = tuple(np.asarray(i) if isinstance(i, list) else i for i in items)
    for i in items:
        if hasattr(i, "__dask_graph__"):
            raise NotImplementedError(
                f"{op}: the dask backend needs an index known when the graph is built (ints, slices, NumPy "
                f"arrays); this index is a Dask array, whose size (for a mask) or values Dask knows only after "
                f"computing. Use tg.where(mask, x, 0) instead of x[mask], or compute the index first"
            )
    return index


def dask_spellings(da) -> DaskSpellings:
    """The spellings of ``dask.array`` (the module, handed in so that nothing here imports Dask)."""
    return DaskSpellings(da)
