"""NumPy's order statistics that skip NaN: ``nanquantile``, ``nanpercentile``, ``nanmedian``, composed of ops.

Each slice has its own count of values that are not NaN, so its own order statistics: the positions around the
virtual index ``(k - 1) q`` of each slice's ``k`` values are read from the sorted values (NaN sorts last) and
the two elements there gathered with ``take_along_axis``; the result is NumPy's ``method="linear"`` formula
between them, so the gradient goes to those two elements with weights ``1 - t`` and ``t``, as ``quantile``'s
does. A slice of NaN only gives NaN, as NumPy's (which warns), and its gradient goes to one of them, as
``quantile``'s of a slice holding NaN does.

>>> import tapegrad as tg, tapegrad.numpy as np
>>> tg.grad(lambda x: np.nanmedian(x))(np.array([3.0, np.nan, 1.0, 2.0]))
array([0., 0., 0., 1.])
"""

from __future__ import annotations

import numpy as np

import tapegrad.ops as ops

from ..ops._axes import normalize_axes
from ._calculus import data, shape
from ._signatures import check_out, unsupported


def _slices(a, axes):
    """``a`` with the reduced axes moved last and merged: (rest..., n), and the shape of what is kept."""
    ndim = len(shape(a))
    axes = tuple(range(ndim)) if axes is None else axes
    rest = tuple(i for i in range(ndim) if i not in axes)
    moved = ops.transpose(a, rest + axes) if rest + axes != tuple(range(ndim)) else a
    kept = tuple(shape(a)[i] for i in rest)
    return ops.reshape(moved, kept + (-1,)), kept


def _nanquantile(name, a, q, axis, keepdims, method):
    if method != "linear":
        raise unsupported(name, f"method={method!r}", "tapegrad's NaN-skipping quantiles are linear", "Leave it out")
    q = np.asarray(q, dtype=np.float64)
    if np.any((q < 0) | (q > 1)) or np.any(np.isnan(q)):
        raise ValueError(f"np.{name}: the quantiles must lie in [0, 1] (percentiles in [0, 100]), got {q!r}")
    axes = normalize_axes(a, axis, name)
    y, kept = _slices(a, axes)
    values = data(y)
    order = np.argsort(values, axis=-1)  # NaN last
    k = np.sum(~np.isnan(values), axis=-1)
    out = []
    for v in q.reshape(-1):
        position = np.maximum(k - 1, 0) * v
        low = np.floor(position).astype(np.int64)
        high = np.minimum(low + 1, np.maximum(k - 1, 0))
        t = position - low
        below = ops.take_along_axis(y, np.take_along_axis(order, low[..., None], -1), axis=-1)[..., 0]
        above = ops.take_along_axis(y, np.take_along_axis(order, high[..., None], -1), axis=-1)[..., 0]
        step = ops.subtract(above, below)
        # NumPy's lerp: a + t (b - a) below t = 1/2, b - (1 - t) (b - a) from there
        value = ops.where(
            t < 0.5, ops.add(below, ops.multiply(step, t)), ops.subtract(above, ops.multiply(step, 1 - t))
        )
        out.append(value)  # a slice of NaN only: its first NaN (k = 0, t = 0), which gets the gradient
    result = ops.stack(out) if q.ndim else out[0]
    if keepdims:
        ndim = len(shape(a))
        full = tuple(1 if axes is None or i in axes else s for i, s in enumerate(shape(a)))
        result = ops.reshape(result, q.shape + full if ndim else q.shape)
    else:
        result = ops.reshape(result, q.shape + kept)
    return result


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None):
    """NumPy's ``np.nanquantile`` on tensors: the quantiles of the values that are not NaN (linear)."""
    check_out("nanquantile", out)
    if weights is not None:
        raise unsupported("nanquantile", "weights=...", "tapegrad has no rule for weighted quantiles", "Leave it out")
    return _nanquantile("nanquantile", a, q, axis, keepdims, method)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None):
    """NumPy's ``np.nanpercentile`` on tensors: ``nanquantile(a, q / 100)``."""
    check_out("nanpercentile", out)
    if weights is not None:
        raise unsupported("nanpercentile", "weights=...", "tapegrad has no rule for weighted quantiles", "Leave it out")
    return _nanquantile("nanpercentile", a, np.true_divide(q, 100), axis, keepdims, method)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """NumPy's ``np.nanmedian`` on tensors: the median of the values that are not NaN."""
    check_out("nanmedian", out)
    return _nanquantile("nanmedian", a, 0.5, axis, keepdims, "linear")
