"""Indexing by position: take, sort and partition, selections, insertions, and indexed updates that record.

Ops with their own rules:

- ``take_along_axis`` and its adjoint ``scatter_along_axis`` (zeros with ``g`` added at ``indices`` along an
  axis, repeats accumulating), each the other's rule, so every derivative order works. Libraries without a
  scatter-add through several index arrays (the array API standard) add with a one-hot comparison instead.
- ``index_update(x, index, v)``: ``x`` with ``x[index] = v``. Its gradient is ``g`` with zeros at ``index`` for
  ``x`` and ``g[index]`` for ``v``. Where an integer index repeats a position the last value written wins,
  by construction (the index is deduplicated first), and only that value gets the gradient. Under ``vmap`` an
  index that varies along the batch cannot be deduplicated before the op: the batching rule keeps each
  example's last write, and the nondifferentiable ``last_writes`` masks the gradient of the others (a select).

Public functions composed of ops: ``take`` (``getitem``), ``sort`` and ``partition`` (``take_along_axis`` of
``argsort``/``argpartition``: the gradient follows the permutation) and ``index_add`` (``x + scatter(v)``).
``At(x)[index].set(v)`` / ``.add(v)`` is JAX's ``x.at[index]`` spelling. Selections and insertions live in
``selection.py``, constant-shaped results in ``creation.py``.
"""

import numpy as np

from .._batched import Batched
from .._tensor import Tensor
from ..backend import NUMPY, backend_of, is_basic_index
from ..backend import dask_array as dask
from ..backend.numpy_rules import numpy_rules
from ..registry import defnondiff, defop
from ._axes import ndim_of, normalize_axes
from ._batching import (
    index_update_rule,
    last_writes,
    last_writes_rule,
    scatter_along_axis_rule,
    take_along_axis_rule,
)
from .creation import _full_like
from .elementwise import add, astype
from .shape import broadcast_to, getitem, reshape, scatter


def _data(a):
    return a._data if isinstance(a, Tensor) else a


def _index_data(i):
    # an index array's data; a batched one (inside vmap) stays a tensor, for vmap's rules to line up
    return i if i.__class__ is Batched else _data(i)


def _shape(a):
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def _in_library_of(x, index):
    """Index arrays moved into the library of ``x``'s data (a NumPy index on the GPU, say)."""
    b = backend_of(_data(x))
    if b is None or b is NUMPY or b.takes_numpy:  # Dask takes NumPy indices as they are (known when building)
        return index
    items = index if isinstance(index, tuple) else (index,)
    items = tuple(b.asarray(i) if isinstance(i, (np.ndarray, list)) else i for i in items)
    return items if isinstance(index, tuple) else items[0]


def _along(indices, axis, shape):
    """The index tuple that puts ``indices`` (along ``axis``) at their places in an array of ``shape``."""
    ndim = len(shape)
    return tuple(
        indices if i == axis else np.arange(n).reshape((1,) * i + (n,) + (1,) * (ndim - i - 1))
        for i, n in enumerate(shape)
    )


def _scatter_along_axis(g, indices, axis, shape, *, xp=numpy_rules):
    try:
        return xp.scatter(g, _along(indices, axis, shape), shape)
    except NotImplementedError:  # no scatter-add through several index arrays: add with a one-hot comparison
        n = shape[axis]
        g, idx = xp.moveaxis(g, axis, -1), xp.moveaxis(indices, axis, -1)
        idx = xp.where(idx < 0, idx + n, idx)
        onehot = xp.reshape(idx, idx.shape + (1,)) == xp.reshape(xp.arange(n), (1,) * idx.ndim + (n,))
        out = xp.sum(xp.where(onehot, xp.reshape(g, g.shape + (1,)), 0), axis=-2)
        return xp.moveaxis(out, -1, axis)


def _call(xp, name, forward, *args, **params):
    """A helper op from a rule: the op itself on a recorded replay (where ``xp`` has it), else its forward."""
    op = getattr(xp, name, None)
    return op(*args, **params) if op is not None else forward(*args, xp=xp, **params)


def _index_update(x, v, index, *, xp=np):
    copy = getattr(x, "copy", None)
    if copy is not None:  # NumPy, CuPy
        out = copy()
        out[index] = v
        return out
    if is_basic_index(index):  # the array API: every axis indexed, no new axes
        items = tuple(i for i in (index if isinstance(index, tuple) else (index,)) if i is not None)
        items = items if any(i is Ellipsis for i in items) else items + (Ellipsis,)
        out = xp.asarray(x, copy=True)
        out[items] = xp.reshape(v, out[items].shape) if hasattr(v, "shape") else v
        return out
    # a library that cannot assign through an integer array (the array API): select from a scatter
    hit = xp.scatter(xp.ones_like(xp.getitem(x, index)), index, x.shape) != 0
    return xp.where(hit, v if not hasattr(v, "shape") else xp.scatter(v, index, x.shape), x)


def _written(xp, g, index):
    """Where ``index`` (naming each position at most once) writes into an array like ``g``."""
    return xp.scatter(xp.ones_like(xp.getitem(g, index)), index=index, shape=g.shape) != 0


def _written_values(xp, g, index):
    """The gradient of the values written: ``g`` at ``index``; a batched index (vmap's) may repeat a position
    within an example, and only the last write there gets it."""
    picked = xp.getitem(g, index)
    return picked if index.__class__ is not Batched else xp.where(_last_writes(index), picked, 0)


# fmt: off
_take_along_axis = defop(
    "take_along_axis", lambda x, indices, axis, *, xp=np: xp.take_along_axis(x, indices, axis=axis),
    lambda xp, g, ans, x, indices, axis: _call(xp, "scatter_along_axis", _scatter_along_axis, g, indices=indices,
                                               axis=axis, shape=x.shape),
    save="x.shape", refuses={"dask": "dask.array has no take_along_axis"}, linear=True, batch=take_along_axis_rule)
_scatter_along_axis_op = defop(
    "scatter_along_axis", _scatter_along_axis,
    lambda xp, g, ans, x, indices, axis, shape: xp.take_along_axis(g, indices, axis=axis),
    refuses={"dask": "dask.array has no scatter-add along an axis"}, linear=True, batch=scatter_along_axis_rule)
_index_update_op = defop(
    "index_update", _index_update,
    lambda xp, g, ans, x, v, index: xp.where(_written(xp, g, index), 0, g),
    lambda xp, g, ans, x, v, index: _written_values(xp, g, index),
    inputs=("x", "v"), linear=True, batch=index_update_rule)
_last_writes = defnondiff("last_writes", last_writes, batch=last_writes_rule)
_argsort = defnondiff("argsort", lambda x, axis=-1, kind=None, *, xp=np: xp.argsort(x, axis=axis)
                      if kind is None else xp.argsort(x, axis=axis, kind=kind), refuses={"dask": dask.SORT}, batch="axis")
_argpartition = defnondiff("argpartition", lambda x, kth, axis=-1, *, xp=np: xp.argpartition(x, kth, axis=axis),
                           refuses={"dask": dask.SORT}, batch="axis")
# fmt: on


def take_along_axis(arr, indices, axis=-1):
    """Pick values along ``axis`` at ``indices`` (an integer array broadcasting against ``arr`` elsewhere), as
    ``np.take_along_axis``; repeated indices accumulate in the gradient. ``axis=None`` takes from the
    flattened input.

    >>> import numpy as np, tapegrad as tg
    >>> tg.take_along_axis(tg.Tensor([[3.0, 1.0, 2.0]]), np.array([[1, 2, 0]]), axis=1)
    Tensor([[1., 2., 3.]])
    """
    indices = _index_data(indices)
    if axis is None:
        arr, axis = reshape(arr, (-1,)), 0
    (axis,) = normalize_axes(arr, axis, "take_along_axis")
    if ndim_of(indices) != ndim_of(arr):
        raise ValueError(
            f"take_along_axis: indices of {ndim_of(indices)} dimensions for an input of {ndim_of(arr)}; they "
            "must have as many dimensions"
        )
    return _take_along_axis(arr, indices=_in_library_of(arr, indices), axis=axis)


def scatter_along_axis(g, indices, axis, shape):
    """Zeros of ``shape`` with ``g`` added at ``indices`` along ``axis`` (repeats accumulate): the adjoint of
    ``take_along_axis``.

    >>> import numpy as np, tapegrad as tg
    >>> tg.scatter_along_axis(tg.Tensor([1.0, 1.0]), np.array([2, 2]), 0, (3,))
    Tensor([0., 0., 2.])
    """
    return _scatter_along_axis_op(
        g, indices=_in_library_of(g, _index_data(indices)), axis=int(axis), shape=tuple(shape)
    )


def argsort(a, axis=-1, kind=None):
    """The indices that sort ``a`` along ``axis`` (None: flattened); no gradient.

    >>> import tapegrad as tg
    >>> tg.argsort(tg.Tensor([3.0, 1.0, 2.0]))
    Tensor([1, 2, 0])
    """
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    (axis,) = normalize_axes(a, axis, "argsort")
    return _argsort(a, axis=axis, kind=kind)


def argpartition(a, kth, axis=-1):
    """Indices that partition ``a`` around its ``kth`` smallest element(s) along ``axis``; no gradient.

    >>> import tapegrad as tg
    >>> int(tg.argpartition(tg.Tensor([3.0, 1.0, 2.0]), 0)[0].item())
    1
    """
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    (axis,) = normalize_axes(a, axis, "argpartition")
    kth = tuple(int(k) for k in kth) if isinstance(kth, (tuple, list, np.ndarray)) else int(kth)
    return _argpartition(a, kth=kth, axis=axis)


def sort(a, axis=-1, kind=None):
    """``a`` sorted along ``axis`` (None: flattened); the gradient follows the permutation (at ties, to the
    element the sort put there).

    >>> import tapegrad as tg
    >>> tg.sort(tg.Tensor([3.0, 1.0, 2.0]))
    Tensor([1., 2., 3.])
    """
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    return take_along_axis(a, argsort(a, axis=axis, kind=kind), axis=axis)


def partition(a, kth, axis=-1):
    """``a`` with its ``kth`` smallest element(s) in sorted position, smaller ones before, larger after, as
    ``np.partition``; the gradient follows the permutation.

    >>> import tapegrad as tg
    >>> tg.partition(tg.Tensor([3.0, 1.0, 2.0]), 0)[0]
    Tensor(1.)
    """
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    return take_along_axis(a, argpartition(a, kth, axis=axis), axis=axis)


def take(a, indices, axis=None, mode="raise"):
    """Elements at ``indices`` along ``axis`` (None: of the flattened input); ``mode`` "raise", "wrap" or
    "clip" as NumPy's. Repeated indices accumulate in the gradient.

    >>> import tapegrad as tg
    >>> tg.take(tg.Tensor([[1.0, 2.0], [3.0, 4.0]]), [0, 3, 3])
    Tensor([1., 4., 4.])
    """
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    (axis,) = normalize_axes(a, axis, "take")
    index = _index_data(indices)
    if isinstance(index, (list, tuple)):
        index = np.asarray(index, dtype=np.intp)
    if mode != "raise":
        n = _shape(a)[axis]
        if mode not in ("wrap", "clip"):
            raise ValueError(f"take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
        index = np.mod(index, n) if mode == "wrap" else np.clip(index, 0, n - 1)
    if isinstance(index, (int, np.integer)) or (isinstance(index, np.ndarray) and index.ndim == 0):
        index = int(index)
    return getitem(a, index=(slice(None),) * axis + (index, ...))


def _flat_positions(a):
    return np.arange(int(np.prod(_shape(a), dtype=np.int64))).reshape(_shape(a))


def _constant_of(x):
    return x.detach() if isinstance(x, Tensor) else x  # detach: vmap's batched tensor stays batched


def _indexed_shape(shape, index):
    return np.broadcast_to(np.zeros((), np.int8), shape)[index].shape


def _index_of(index):
    if isinstance(index, Tensor):
        return _index_data(index)
    if isinstance(index, tuple):
        return tuple(_index_data(i) if isinstance(i, Tensor) else i for i in index)
    return np.asarray(index) if isinstance(index, list) else index


def _value_for(x, v):
    """An update value as index_update/index_add use it: a number stays one; an array moves into ``x``'s
    library (tensors are left to the ops)."""
    if isinstance(v, Tensor) or (not hasattr(v, "shape") and np.ndim(v) == 0):
        return v
    return _in_library_of(x, np.asarray(v) if isinstance(v, (list, tuple)) else v)


def index_update(x, index, v):
    """``x`` with ``x[index] = v`` (``v`` broadcast to the indexed shape), recorded: ``x`` gets the gradient
    except where it was overwritten, ``v`` the gradient at ``index``. Where an integer index repeats a
    position the last value written wins, and only it gets the gradient.

    >>> import numpy as np, tapegrad as tg
    >>> tg.index_update(tg.Tensor([1.0, 2.0, 3.0]), np.array([0, 0]), tg.Tensor([8.0, 9.0]))
    Tensor([9., 2., 3.])
    """
    index, v = _index_of(index), _value_for(x, v)
    shape = _shape(x)
    if index.__class__ is Batched or (isinstance(index, tuple) and any(i.__class__ is Batched for i in index)):
        return _index_update_batched(x, index, v, shape)
    target = _indexed_shape(shape, index)
    number = not hasattr(v, "shape")
    if not number and _shape(v) != target:
        v = broadcast_to(v, target)
    if is_basic_index(index):
        return _index_update_op(x, v, index=_in_library_of(x, index))
    positions = _flat_positions(x)[index].reshape(-1)
    last = positions.size - 1 - np.unique(positions[::-1], return_index=True)[1]  # the last write to each
    keep = np.sort(last)
    if not number:
        v = reshape(v, (-1,))
        if keep.size != positions.size:
            v = getitem(v, index=keep)
    out = _index_update_op(reshape(x, (-1,)), v, index=_in_library_of(x, positions[keep]))
    return reshape(out, shape)


def _per_example_positions(x, index, v):
    """The flat positions of ``x`` that an index varying along vmap's batch names, gathered per example (one
    example's shape, batched values), and ``v`` broadcast to them where it is an array (a number stays one)."""
    picked = getitem(Tensor._wrap(_flat_positions(x)), index=index)
    if hasattr(v, "shape") and tuple(v.shape) != tuple(picked.shape):
        v = broadcast_to(v, tuple(picked.shape))
    return picked, v


def _index_update_batched(x, index, v, shape):
    """``index_update`` with an index that varies along vmap's batch: one update of the flattened ``x`` at each
    example's positions (the batching rule keeps each example's last write)."""
    picked, v = _per_example_positions(x, index, v)
    if hasattr(v, "shape"):
        v = reshape(v, (-1,))
    return reshape(_index_update_op(reshape(x, (-1,)), v, index=reshape(picked, (-1,))), shape)


def _index_add_batched(x, index, v, shape):
    """``index_add`` with an index that varies along vmap's batch: one scatter-add into the flattened ``x`` at
    each example's positions (repeated positions accumulate, as without vmap)."""
    picked, v = _per_example_positions(x, index, v)
    values = v if hasattr(v, "shape") else _full_like(picked, fill_value=v, dtype=getattr(x, "dtype", None))
    size = int(np.prod(shape, dtype=np.int64))
    added = scatter(reshape(values, (-1,)), index=reshape(picked, (-1,)), shape=(size,))
    return reshape(add(reshape(x, (-1,)), added), shape)


def index_add(x, index, v):
    """``x`` with ``v`` added at ``index`` (broadcast to the indexed shape; repeated positions accumulate),
    recorded: ``x`` gets ``g``, ``v`` the sum of ``g`` over the places it was added to.

    >>> import numpy as np, tapegrad as tg
    >>> tg.index_add(tg.Tensor([1.0, 2.0, 3.0]), np.array([0, 0]), tg.Tensor([8.0, 9.0]))
    Tensor([18.,  2.,  3.])
    """
    index, v = _index_of(index), _value_for(x, v)
    shape = _shape(x)
    if index.__class__ is Batched or (isinstance(index, tuple) and any(i.__class__ is Batched for i in index)):
        return _index_add_batched(x, index, v, shape)
    target = _indexed_shape(shape, index)
    if not hasattr(v, "shape"):  # a number: made an array of x's library, dtype and the indexed shape
        v = _full_like(getitem(_constant_of(x), index=index), fill_value=v)
    if _shape(v) != target:
        v = broadcast_to(v, target)
    dtype = getattr(x, "dtype", None)
    if dtype is not None and getattr(v, "dtype", dtype) != dtype:
        v = astype(v, dtype=dtype)
    if is_basic_index(index):
        return add(x, scatter(v, index=_in_library_of(x, index), shape=shape))
    # through flat positions: one integer array, which every library can scatter-add
    positions = _in_library_of(x, _flat_positions(x)[index].reshape(-1))
    size = int(np.prod(shape, dtype=np.int64))
    return reshape(add(reshape(x, (-1,)), scatter(reshape(v, (-1,)), index=positions, shape=(size,))), shape)


class At:
    """JAX's indexed-update spelling: ``At(x)[index].set(v)``, ``.add(v)``, ``.get()``.

    >>> import tapegrad as tg
    >>> At(tg.Tensor([1.0, 2.0]))[1].set(5.0)
    Tensor([1., 5.])
    """

    __slots__ = ("_x",)

    def __init__(self, x):
        self._x = x

    def __getitem__(self, index):
        return _AtIndex(self._x, index)

    def __repr__(self) -> str:
        return f"At({self._x!r})"


class _AtIndex:
    __slots__ = ("_x", "_index")

    def __init__(self, x, index):
        self._x, self._index = x, index

    def set(self, v):
        """``x`` with ``x[index] = v``, recorded (see ``index_update``)."""
        return index_update(self._x, self._index, v)

    def add(self, v):
        """``x`` with ``v`` added at ``index``, recorded (see ``index_add``)."""
        return index_add(self._x, self._index, v)

    def get(self):
        """``x[index]``."""
        return getitem(self._x, index=_index_of(self._index))
