"""Order statistics composed of ops: ``median``, ``percentile`` and ``quantile``, over any ``axis``.

NumPy's default ``method="linear"``: the value is ``a_lo + t (a_hi - a_lo)`` between the two order statistics
around the virtual index ``(n - 1) q`` (NumPy's own two-sided formula, so values agree to the last bit), so
the gradient goes to those two elements with weights ``1 - t`` and ``t``: the selected elements only, as HIPS
autograd's ``sort``-based rules do. ``median`` averages the two middle elements of an even count (weights
1/2). ``"lower"``, ``"higher"``, ``"nearest"`` and ``"midpoint"`` are supported too. The elements are found with
``argsort`` and gathered with ``take_along_axis``, so only they are saved; at ties the weight goes to the
element the sort placed there. A slice holding NaN gives NaN, as in NumPy.
"""

import builtins
import math

import numpy as np

from ._axes import count, ndim_of, normalize_axes, reduced_shape
from .elementwise import where
from .indexing import argsort, take_along_axis
from .math import isnan
from .shape import getitem, reshape, stack, transpose


def _shape(a):
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _along_last(a, axes):
    """``a`` with the reduced axes moved to the end and flattened into one: (rest..., n)."""
    ndim = ndim_of(a)
    axes = tuple(range(ndim)) if axes is None else axes
    rest = tuple(i for i in range(ndim) if i not in axes)
    moved = transpose(a, rest + axes) if rest + axes != tuple(range(ndim)) else a
    shape = _shape(a)
    return reshape(moved, tuple(shape[i] for i in rest) + (count(shape, axes),))


def _order_statistics(a, axes, positions, op):
    """The elements at the sorted ``positions`` of each reduction of ``a`` over ``axes``, by position (only
    they are gathered, so only they are saved and get a gradient), and the reduced shape; a slice holding
    NaN (which sorts last) gives NaN at every position."""
    shape = _shape(a)
    n = count(shape, axes)
    if n == 0:
        raise ValueError(f"{op}: needs at least one element to reduce, got shape {shape} and axis {axes}")
    y = _along_last(a, axes)
    wanted = sorted(set(positions) | {n - 1})
    order = getitem(argsort(y, axis=-1), index=(..., np.asarray(wanted)))
    picked = take_along_axis(y, order, axis=-1)
    at = {p: getitem(picked, index=(..., j)) for j, p in enumerate(wanted)}
    last = at[n - 1]
    return {p: where(isnan(last), last, v) for p, v in at.items()}, n


def _finish(values, q_shape, shape, axes, keepdims):
    out_shape = (
        tuple(1 if axes is None or i in axes else s for i, s in enumerate(shape))
        if keepdims
        else (reduced_shape(shape, axes))
    )
    if not q_shape:
        return reshape(values[0], out_shape)
    return reshape(stack(values, axis=0), q_shape + out_shape)


def _quantile(a, q, axis, keepdims, method, op):
    if method not in _METHODS:
        raise NotImplementedError(f"{op}: method {method!r} is not supported; use one of {_METHODS}")
    q = np.asarray(q, dtype=np.float64)
    if np.any((q < 0) | (q > 1)) or np.any(np.isnan(q)):
        raise ValueError(f"{op}: the quantiles must lie in [0, 1] (percentiles in [0, 100]), got {q!r}")
    axes = normalize_axes(a, axis, op)
    shape = _shape(a)
    n = count(shape, axes)
    vis = [(n - 1) * float(v) for v in q.reshape(-1)] if n else []
    lows = [math.floor(v) for v in vis]
    highs = [builtins.min(lo + 1, n - 1) for lo in lows]
    at, n = _order_statistics(a, axes, lows + highs + [math.ceil(v) for v in vis] + [round(v) for v in vis], op)
    values = []
    for v, lo, hi in zip(vis, lows, highs):
        t = v - lo
        below, above = at[lo], at[hi]
        if method == "lower":
            values.append(below)
        elif method == "higher":
            values.append(at[math.ceil(v)])
        elif method == "nearest":
            values.append(at[round(v)])  # halves to even, as NumPy's around
        else:
            if method == "midpoint":  # halfway between the order statistics around v, or the one at v
                t = 0.0 if v == lo else 0.5
            if t == 0.0:
                values.append(below)
            elif t < 0.5:  # NumPy's lerp: a + t (b - a) below t = 1/2, b - (1 - t) (b - a) from there
                values.append(below + (above - below) * t)
            else:
                values.append(above - (above - below) * (1 - t))
    return _finish(values, q.shape, shape, axes, keepdims)


def quantile(a, q, axis=None, keepdims=False, method="linear"):
    """The ``q``-th quantile(s) over ``axis`` (q in [0, 1], a number or an array: its axes come first), by
    NumPy's ``method`` (default "linear"); the gradient goes to the (one or two) order statistics it used.

    >>> import tapegrad as tg
    >>> tg.quantile(tg.Tensor([1.0, 2.0, 3.0, 4.0]), 0.5)
    Tensor(2.5)
    """
    return _quantile(a, q, axis, keepdims, method, "quantile")


def percentile(a, q, axis=None, keepdims=False, method="linear"):
    """The ``q``-th percentile(s) over ``axis`` (q in [0, 100]), as ``quantile(a, q / 100)``.

    >>> import tapegrad as tg
    >>> tg.percentile(tg.Tensor([1.0, 2.0, 3.0, 4.0]), 25)
    Tensor(1.75)
    """
    return _quantile(a, np.true_divide(q, 100), axis, keepdims, method, "percentile")


def median(a, axis=None, keepdims=False):
    """The median over ``axis``: the middle element, or the mean of the two middle ones (each gets half the
    gradient).

    >>> import tapegrad as tg
    >>> tg.median(tg.Tensor([3.0, 1.0, 4.0, 2.0]))
    Tensor(2.5)
    """
    axes = normalize_axes(a, axis, "median")
    shape = _shape(a)
    n = count(shape, axes)
    middle = [n // 2] if n % 2 else [n // 2 - 1, n // 2]
    at, n = _order_statistics(a, axes, middle, "median")
    value = at[middle[0]] if n % 2 else (at[middle[0]] + at[middle[1]]) / 2
    return _finish([value], (), shape, axes, keepdims)
