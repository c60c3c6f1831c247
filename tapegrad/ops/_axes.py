"""Axis arguments, normalised once in the public functions so that rules see a sorted tuple or None."""

import math

import numpy as np


def ndim_of(x) -> int:
    return x.ndim if hasattr(x, "ndim") else np.ndim(x)


def normalize_axes(x, axis, op):
    """None, an int or a tuple of ints (negative allowed) -> None or a sorted tuple of non-negative ints."""
    if axis is None:
        return None
    ndim = ndim_of(x)
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in items:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"{op}: axis must be an int or a tuple of ints, got {axis!r}")
        if not -ndim <= a < ndim:
            raise ValueError(f"{op}: axis {a} is out of range for an input of {ndim} dimensions")
        out.append(int(a) % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: repeated axis in {axis!r}")
    return tuple(sorted(out))


def kept_shape(shape, axis):
    """The shape a reduction over ``axis`` gives with keepdims=True."""
    if axis is None:
        return (1,) * len(shape)
    return tuple(1 if i in axis else n for i, n in enumerate(shape))


def reduced_shape(shape, axis):
    """The shape a reduction over ``axis`` gives with keepdims=False."""
    if axis is None:
        return ()
    return tuple(n for i, n in enumerate(shape) if i not in axis)


def count(shape, axis) -> int:
    """How many elements a reduction over ``axis`` combines."""
    # math.prod: NumPy's prod is a Python-level wrapper, a few µs a call, and a reduction's rule calls it each time
    if axis is None:
        return int(math.prod(shape))
    return int(math.prod([shape[i] for i in axis]))
