"""Joining and splitting: the stacks, ``append``, the splits, ``atleast_*d``, ``meshgrid``, ``broadcast_arrays``.

All are composed of ops (``reshape``, ``concatenate``, ``getitem``, ``broadcast_to``), so they need no rule of
their own. The splits return lists of tensors and ``meshgrid``/``broadcast_arrays`` tuples, as NumPy does;
each piece of a split is a ``getitem`` of the input, so its gradient flows back to its slice.
"""

import numpy as np

from ._axes import ndim_of, normalize_axes
from .arrange import ravel
from .shape import broadcast_to, concatenate, getitem, reshape


def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _axis(x, axis, op):
    return normalize_axes(x, axis, op)[0]


def _atleast(a, ndim):
    shape = _shape(a)
    if len(shape) >= ndim:
        return a
    if ndim == 3 and len(shape) == 2:
        return reshape(a, shape + (1,))
    if ndim == 3 and len(shape) == 1:
        return reshape(a, (1,) + shape + (1,))
    return reshape(a, (1,) * (ndim - len(shape)) + shape)


def _each(arys, ndim):
    out = tuple(_atleast(a, ndim) for a in arys)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
    """Each input with at least one dimension (one input: a tensor; several: a tuple).

    >>> import tapegrad as tg
    >>> tg.atleast_1d(tg.Tensor(1.0)).shape
    (1,)
    """
    return _each(arys, 1)


def atleast_2d(*arys):
    """Each input with at least two dimensions, new axes in front.

    >>> import tapegrad as tg
    >>> tg.atleast_2d(tg.Tensor([1.0, 2.0])).shape
    (1, 2)
    """
    return _each(arys, 2)


def atleast_3d(*arys):
    """Each input with at least three dimensions: (n,) becomes (1, n, 1) and (m, n) becomes (m, n, 1).

    >>> import tapegrad as tg
    >>> tg.atleast_3d(tg.Tensor([1.0, 2.0])).shape
    (1, 2, 1)
    """
    return _each(arys, 3)


def _sequence(tup, op):
    tup = tuple(tup)
    if not tup:
        raise ValueError(f"{op}: needs at least one array")
    return tup


def vstack(tup):
    """Stack row-wise: 1-D inputs become rows, then join along axis 0.

    >>> import tapegrad as tg
    >>> tg.vstack([tg.Tensor([1.0, 2.0]), tg.Tensor([3.0, 4.0])]).shape
    (2, 2)
    """
    return concatenate([_atleast(a, 2) for a in _sequence(tup, "vstack")], axis=0)


row_stack = vstack


def hstack(tup):
    """Stack column-wise: join along axis 1, or along axis 0 for 1-D inputs.

    >>> import tapegrad as tg
    >>> tg.hstack([tg.Tensor([1.0]), tg.Tensor([2.0, 3.0])])
    Tensor([1., 2., 3.])
    """
    arrs = [_atleast(a, 1) for a in _sequence(tup, "hstack")]
    return concatenate(arrs, axis=0 if ndim_of(arrs[0]) == 1 else 1)


def dstack(tup):
    """Stack depth-wise: inputs made at least 3-D, then joined along axis 2.

    >>> import tapegrad as tg
    >>> tg.dstack([tg.Tensor([1.0, 2.0]), tg.Tensor([3.0, 4.0])]).shape
    (1, 2, 2)
    """
    return concatenate([_atleast(a, 3) for a in _sequence(tup, "dstack")], axis=2)


def column_stack(tup):
    """Stack 1-D inputs as columns (and 2-D ones as they are) along axis 1.

    >>> import tapegrad as tg
    >>> tg.column_stack([tg.Tensor([1.0, 2.0]), tg.Tensor([3.0, 4.0])]).shape
    (2, 2)
    """
    cols = []
    for a in _sequence(tup, "column_stack"):
        shape = _shape(a)
        cols.append(reshape(a, (int(np.prod(shape, dtype=np.int64)), 1)) if len(shape) < 2 else a)
    return concatenate(cols, axis=1)


def append(arr, values, axis=None):
    """``values`` appended to ``arr`` along ``axis`` (None: both flattened).

    >>> import tapegrad as tg
    >>> tg.append(tg.Tensor([1.0, 2.0]), tg.Tensor([[3.0]]))
    Tensor([1., 2., 3.])
    """
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


def _split(ary, indices_or_sections, axis, op, even):
    shape = _shape(ary)
    axis = _axis(ary, axis, op)
    n = shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError(f"{op}: the number of sections must be larger than 0, got {sections}")
        if even and n % sections:
            raise ValueError(f"{op}: an axis of length {n} does not split into {sections} equal sections")
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    lead = (slice(None),) * axis
    return [getitem(ary, index=lead + (slice(a, b),)) for a, b in zip(bounds[:-1], bounds[1:])]


def split(ary, indices_or_sections, axis=0):
    """Split into equal sections (an int that divides the axis) or at the given indices: a list of tensors.

    >>> import tapegrad as tg
    >>> [t.shape for t in tg.split(tg.Tensor([1.0, 2.0, 3.0, 4.0]), 2)]
    [(2,), (2,)]
    """
    return _split(ary, indices_or_sections, axis, "split", even=True)


def array_split(ary, indices_or_sections, axis=0):
    """As ``split``, but an int need not divide the axis: the first sections get one element more.

    >>> import tapegrad as tg
    >>> [t.shape for t in tg.array_split(tg.Tensor([1.0, 2.0, 3.0]), 2)]
    [(2,), (1,)]
    """
    return _split(ary, indices_or_sections, axis, "array_split", even=False)


def hsplit(ary, indices_or_sections):
    """``split`` along axis 1 (axis 0 for 1-D inputs).

    >>> import tapegrad as tg
    >>> [t.shape for t in tg.hsplit(tg.Tensor([[1.0, 2.0]]), 2)]
    [(1, 1), (1, 1)]
    """
    if ndim_of(ary) == 0:
        raise ValueError("hsplit: needs an input of at least 1 dimension")
    return _split(ary, indices_or_sections, 1 if ndim_of(ary) > 1 else 0, "hsplit", even=True)


def vsplit(ary, indices_or_sections):
    """``split`` along axis 0, for inputs of at least 2 dimensions.

    >>> import tapegrad as tg
    >>> [t.shape for t in tg.vsplit(tg.Tensor([[1.0], [2.0]]), 2)]
    [(1, 1), (1, 1)]
    """
    if ndim_of(ary) < 2:
        raise ValueError(f"vsplit: needs an input of at least 2 dimensions, got shape {_shape(ary)}")
    return _split(ary, indices_or_sections, 0, "vsplit", even=True)


def dsplit(ary, indices_or_sections):
    """``split`` along axis 2, for inputs of at least 3 dimensions.

    >>> import tapegrad as tg
    >>> [t.shape for t in tg.dsplit(tg.Tensor([[[1.0, 2.0]]]), 2)]
    [(1, 1, 1), (1, 1, 1)]
    """
    if ndim_of(ary) < 3:
        raise ValueError(f"dsplit: needs an input of at least 3 dimensions, got shape {_shape(ary)}")
    return _split(ary, indices_or_sections, 2, "dsplit", even=True)


def meshgrid(*xi, indexing="xy", sparse=False):
    """Coordinate tensors from 1-D coordinate vectors (``indexing`` "xy" or "ij"), as a tuple.

    >>> import tapegrad as tg
    >>> [t.shape for t in tg.meshgrid(tg.Tensor([1.0, 2.0, 3.0]), tg.Tensor([4.0, 5.0]))]
    [(2, 3), (2, 3)]
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    ndim = len(xi)
    out = [reshape(x, (1,) * i + (-1,) + (1,) * (ndim - i - 1)) for i, x in enumerate(xi)]
    if indexing == "xy" and ndim > 1:
        out[0] = reshape(out[0], (1, -1) + (1,) * (ndim - 2))
        out[1] = reshape(out[1], (-1, 1) + (1,) * (ndim - 2))
    return tuple(out) if sparse else broadcast_arrays(*out)


def broadcast_arrays(*args):
    """The inputs broadcast against each other, as a tuple.

    >>> import tapegrad as tg
    >>> [t.shape for t in tg.broadcast_arrays(tg.Tensor([1.0, 2.0]), tg.Tensor([[1.0], [2.0], [3.0]]))]
    [(3, 2), (3, 2)]
    """
    shape = np.broadcast_shapes(*[_shape(a) for a in args])
    return tuple(broadcast_to(a, shape) for a in args)
