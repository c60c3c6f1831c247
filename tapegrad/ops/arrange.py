"""Rearranging elements without changing them: flips, rolls, rotations, axis moves, tiles, repeats, pads.

Three ops with their own rules: ``flip`` (its own adjoint), ``roll`` (rolled back) and ``pad`` (the gradient
of a constant pad is the centre of ``g``; of an edge, reflect, symmetric or wrap pad, ``g`` added back to the
elements each padded entry copied, repeats accumulating). ``fliplr``, ``flipud``, ``rot90``, ``ravel``,
``moveaxis``, ``rollaxis``, ``tile`` and ``repeat`` are composed of ops (``flip``, ``transpose``, ``reshape``,
``broadcast_to``, ``getitem``), so they need no rule. Joining and splitting live in ``joining.py``.
"""

import numpy as np

from ..registry import defop
from ._axes import ndim_of, normalize_axes
from ._batching import pad_rule, roll_rule
from ._rules import in_rule
from .shape import broadcast_to, getitem, reshape, transpose

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


def _pad_jvp(xp, ts, ans, x, pad_width, mode="constant", constant_values=0):
    # pad is affine: the padding's constant values have no tangent
    return in_rule(xp, _pad_op)(ts[0], pad_width=pad_width, mode=mode)


# fmt: off
_flip = defop("flip", lambda x, axis=None, *, xp=np: xp.flip(x, axis=axis),
              lambda xp, g, ans, x, axis=None: xp.flip(g, axis=axis), view=True, linear=True, batch="axis")
_roll = defop("roll", lambda x, shift, axis=None, *, xp=np: xp.roll(x, shift, axis=axis),
              lambda xp, g, ans, x, shift, axis=None: xp.roll(g, _negated(shift), axis=axis), linear=True, batch=roll_rule)
_pad_op = defop("pad", _pad, _pad_vjp, save="x.shape", jvp=_pad_jvp, batch=pad_rule, refuses={"dask": (
    "Dask's reflect, symmetric and wrap padding differ from NumPy's when the padding is wider than the axis",
    lambda params: params.get("mode") in ("reflect", "symmetric", "wrap"))})
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
