"""Rearranging elements without changing them: NumPy's shape functions beyond reshape and transpose.

Three ops with their own rules: ``flip`` (its own adjoint), ``roll`` (rolled back) and ``pad`` (the gradient
of a constant pad is the centre of ``g``; of an edge, reflect, symmetric or wrap pad, ``g`` added back to the
elements each padded entry copied, repeats accumulating). Everything else is a public function composed of
ops (``reshape``, ``transpose``, ``concatenate``, ``broadcast_to``, ``getitem``), so it needs no rule: the
splits return lists of tensors, ``meshgrid`` and ``broadcast_arrays`` tuples, as NumPy does.
"""

import numpy as np

from ..registry import defop
from ._axes import ndim_of, normalize_axes
from .shape import broadcast_to, concatenate, getitem, reshape, transpose

_PAD_COPY_MODES = ("edge", "reflect", "symmetric", "wrap")


def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _axis(x, axis, op):
    return normalize_axes(x, axis, op)[0]


def _pad(x, pad_width, mode="constant", constant_values=0, *, xp=np):
    if mode == "constant":
        return xp.pad(x, pad_width, mode=mode, constant_values=constant_values)
    return xp.pad(x, pad_width, mode=mode)


def _pad_vjp(xp, g, ans, x, pad_width, mode="constant", constant_values=0):
    if mode == "constant":
        return g[tuple(slice(b, b + n) for (b, _), n in zip(pad_width, x.shape)) + (...,)]
    # each padded entry copies one input element: send g back through the same index, accumulating
    index = np.ix_(*[np.pad(np.arange(n), w, mode=mode) for n, w in zip(x.shape, pad_width)])
    return xp.scatter(g, index=index, shape=x.shape)


# fmt: off
_flip = defop("flip", lambda x, axis=None, *, xp=np: xp.flip(x, axis=axis),
              lambda xp, g, ans, x, axis=None: xp.flip(g, axis=axis))
_roll = defop("roll", lambda x, shift, axis=None, *, xp=np: xp.roll(x, shift, axis=axis),
              lambda xp, g, ans, x, shift, axis=None: xp.roll(g, _negated(shift), axis=axis))
_pad_op = defop("pad", _pad, _pad_vjp, save="x.shape")
# fmt: on


def _negated(shift):
    return tuple(-s for s in shift) if isinstance(shift, tuple) else -shift


def flip(m, axis=None):
    """Reverse the order of elements along ``axis`` (int, tuple or None: all axes).

    >>> import tapegrad as tg
    >>> tg.flip(tg.Tensor([1.0, 2.0, 3.0]))
    Tensor([3., 2., 1.])
    """
    return _flip(m, axis=normalize_axes(m, axis, "flip"))


def fliplr(m):
    """Reverse the columns (axis 1).

    >>> import tapegrad as tg
    >>> tg.fliplr(tg.Tensor([[1.0, 2.0]]))
    Tensor([[2., 1.]])
    """
    if ndim_of(m) < 2:
        raise ValueError(f"fliplr: needs an input of at least 2 dimensions, got shape {_shape(m)}")
    return flip(m, 1)


def flipud(m):
    """Reverse the rows (axis 0).

    >>> import tapegrad as tg
    >>> tg.flipud(tg.Tensor([1.0, 2.0]))
    Tensor([2., 1.])
    """
    if ndim_of(m) < 1:
        raise ValueError("flipud: needs an input of at least 1 dimension, got a 0-d one")
    return flip(m, 0)


def roll(a, shift, axis=None):
    """Shift elements along ``axis`` cyclically (None: of the flattened input, the shape kept).

    >>> import tapegrad as tg
    >>> tg.roll(tg.Tensor([1.0, 2.0, 3.0]), 1)
    Tensor([3., 1., 2.])
    """
    if axis is not None:
        ndim = ndim_of(a)
        items = axis if isinstance(axis, (tuple, list)) else (axis,)
        for ax in items:
            if not -ndim <= ax < ndim:
                raise ValueError(f"roll: axis {ax} is out of range for an input of {ndim} dimensions")
        axis = tuple(int(ax) % ndim for ax in items) if isinstance(axis, (tuple, list)) else int(axis) % ndim
    shift = tuple(int(s) for s in shift) if isinstance(shift, (tuple, list)) else int(shift)
    return _roll(a, shift=shift, axis=axis)


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes`` (from the first axis towards the second).

    >>> import tapegrad as tg
    >>> tg.rot90(tg.Tensor([[1.0, 2.0], [3.0, 4.0]]))
    Tensor([[2., 4.],
            [1., 3.]])
    """
    ndim = ndim_of(m)
    if len(axes) != 2 or ndim < 2:
        raise ValueError(f"rot90: needs two axes of an input of at least 2 dimensions, got {axes} of {ndim}")
    a0, a1 = (int(a) % ndim for a in axes)
    if a0 == a1:
        raise ValueError(f"rot90: the axes {axes} must differ")
    k %= 4
    if k == 0:
        return transpose(m, list(range(ndim)))
    if k == 2:
        return flip(flip(m, a0), a1)
    perm = list(range(ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return transpose(flip(m, a1), perm) if k == 1 else flip(transpose(m, perm), a1)


def ravel(a):
    """The elements as a 1-D tensor (C order).

    >>> import tapegrad as tg
    >>> tg.ravel(tg.Tensor([[1.0, 2.0], [3.0, 4.0]]))
    Tensor([1., 2., 3., 4.])
    """
    return reshape(a, (-1,))


flatten = ravel  # ndarray.flatten copies where ravel may not; tapegrad never aliases, so they agree


def moveaxis(a, source, destination):
    """Move axes to new positions, the others keeping their order.

    >>> import tapegrad as tg
    >>> tg.moveaxis(tg.Tensor([[[1.0, 2.0, 3.0]]]), -1, 0).shape
    (3, 1, 1)
    """
    ndim = ndim_of(a)
    src = _each_axis(source, ndim, "moveaxis")
    dst = _each_axis(destination, ndim, "moveaxis")
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination {destination} differ in length")
    order = [n for n in range(ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


def _each_axis(axis, ndim, op):
    items = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for ax in items:
        if not -ndim <= ax < ndim:
            raise ValueError(f"{op}: axis {ax} is out of range for an input of {ndim} dimensions")
        out.append(int(ax) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: repeated axis in {axis!r}")
    return out


def rollaxis(a, axis, start=0):
    """Move ``axis`` to just before position ``start`` (NumPy's older spelling of moveaxis).

    >>> import tapegrad as tg
    >>> tg.rollaxis(tg.Tensor([[[1.0, 2.0, 3.0]]]), 2).shape
    (3, 1, 1)
    """
    ndim = ndim_of(a)
    (axis,) = _each_axis(axis, ndim, "rollaxis")
    if not -ndim <= start <= ndim:
        raise ValueError(f"rollaxis: start {start} is out of range for an input of {ndim} dimensions")
    start = start % (ndim + 1) if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)


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


def tile(A, reps):
    """``A`` repeated ``reps`` times along each axis (reps and A's shape aligned from the right).

    >>> import tapegrad as tg
    >>> tg.tile(tg.Tensor([1.0, 2.0]), 2)
    Tensor([1., 2., 1., 2.])
    """
    reps = tuple(int(r) for r in reps) if isinstance(reps, (tuple, list)) else (int(reps),)
    shape = _shape(A)
    ndim = max(len(shape), len(reps))
    shape = (1,) * (ndim - len(shape)) + shape
    reps = (1,) * (ndim - len(reps)) + reps
    x = reshape(A, tuple(n for s in shape for n in (1, s)))
    x = broadcast_to(x, tuple(n for r, s in zip(reps, shape) for n in (r, s)))
    return reshape(x, tuple(r * s for r, s in zip(reps, shape)))


def repeat(a, repeats, axis=None):
    """Each element repeated ``repeats`` times (an int, or one count per element) along ``axis`` (None: of
    the flattened input).

    >>> import tapegrad as tg
    >>> tg.repeat(tg.Tensor([1.0, 2.0]), 2)
    Tensor([1., 1., 2., 2.])
    """
    if axis is None:
        a, axis = ravel(a), 0
    axis = _axis(a, axis, "repeat")
    shape = _shape(a)
    if isinstance(repeats, (int, np.integer)) or np.ndim(repeats) == 0 or np.size(repeats) == 1:
        r = int(np.reshape(repeats, -1)[0]) if np.ndim(repeats) else int(repeats)
        if r < 0:
            raise ValueError(f"repeat: repeats must be non-negative, got {r}")
        x = reshape(a, shape[: axis + 1] + (1,) + shape[axis + 1 :])
        x = broadcast_to(x, shape[: axis + 1] + (r,) + shape[axis + 1 :])
        return reshape(x, shape[:axis] + (shape[axis] * r,) + shape[axis + 1 :])
    index = np.repeat(np.arange(shape[axis]), np.asarray(repeats))  # ValueError names a length mismatch
    return getitem(a, index=(slice(None),) * axis + (index,))


def pad(array, pad_width, mode="constant", **kwargs):
    """Pad with ``mode`` ``"constant"`` (``constant_values=``, numbers), ``"edge"``, ``"reflect"``,
    ``"symmetric"`` or ``"wrap"``; ``pad_width`` as NumPy takes it (an int, a pair, one pair per axis).

    >>> import tapegrad as tg
    >>> tg.pad(tg.Tensor([1.0, 2.0]), 1, mode="edge")
    Tensor([1., 1., 2., 2.])
    """
    ndim = ndim_of(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (ndim, 2))
    if (widths < 0).any():
        raise ValueError(f"pad: pad widths must be non-negative, got {pad_width!r}")
    widths = tuple((int(b), int(a)) for b, a in widths)
    if mode == "constant":
        unknown = set(kwargs) - {"constant_values"}
        values = kwargs.get("constant_values", 0)
        if np.ndim(values):
            values = tuple(tuple(float(v) for v in pair) for pair in np.broadcast_to(values, (ndim, 2)))
        else:
            values = float(values)
    elif mode in _PAD_COPY_MODES:
        unknown = set(kwargs) - ({"reflect_type"} if mode in ("reflect", "symmetric") else set())
        if kwargs.get("reflect_type", "even") != "even":
            raise NotImplementedError("pad: reflect_type='odd' has no gradient rule in tapegrad; use 'even'")
        values = None
    else:
        raise NotImplementedError(
            f"pad: mode {mode!r} has no gradient rule in tapegrad; use 'constant', 'edge', 'reflect', 'symmetric' "
            "or 'wrap'"
        )
    if unknown:
        raise TypeError(f"pad: unsupported keyword arguments for mode {mode!r}: {sorted(unknown)}")
    if values is None:
        return _pad_op(array, pad_width=widths, mode=mode)
    return _pad_op(array, pad_width=widths, mode=mode, constant_values=values)


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
