"""Statistics over axes, composed of ops: std, average, ptp, the NaN-ignoring reductions, all, any.

Every function takes NumPy's ``axis`` (int, tuple, negative, None) and ``keepdims``. None needs a rule of its
own: each is written with ops that have one, so gradients of every order follow.

- ``std`` is ``sqrt(var)``; ``average`` ``sum(a * w) / sum(w)`` (weights may be tensors too); ``ptp`` ``max - min``;
  ``amax``/``amin`` are ``max``/``min`` (tied extremes share the gradient).
- ``nansum``, ``nanmean``, ``nanvar``, ``nanstd``, ``nanprod``, ``nanmax``, ``nanmin``: NaN entries are
  replaced with a ``where`` (0, 1 or -inf/+inf), so they get gradient 0; a slice of NaN only gives NaN for
  max/min (as NumPy, which also warns), its NaN elements sharing the gradient as ``max``'s do, and a NaN mean
  (0/0).
- ``median``, ``percentile`` and ``quantile`` live in ``quantiles.py``.
- ``all``, ``any`` and ``count_nonzero`` have no gradient.
"""

import math

import numpy as np

from .._batched import Batched
from ..backend import to_numpy
from ..registry import defnondiff
from ._axes import count, normalize_axes
from .creation import full_like
from .cumulative import prod
from .elementwise import astype, divide, multiply, sqrt, subtract, where
from .math import isnan, logical_and, logical_not
from .reductions import max, min, sum, var
from .shape import broadcast_to, reshape

# fmt: off
_all = defnondiff("all", lambda x, axis=None, keepdims=False, *, xp=np: xp.all(x, axis=axis, keepdims=keepdims), batch="axis")
_any = defnondiff("any", lambda x, axis=None, keepdims=False, *, xp=np: xp.any(x, axis=axis, keepdims=keepdims), batch="axis")
_count_nonzero = defnondiff("count_nonzero", lambda x, axis=None, keepdims=False, *, xp=np:
                            xp.count_nonzero(x, axis=axis, keepdims=keepdims), batch="axis")
# fmt: on

amax = max  # NumPy spells the reductions both ways
amin = min


def _shape(a):
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def all(a, axis=None, keepdims=False):
    """Whether every element along ``axis`` is true (no gradient).

    >>> import tapegrad as tg
    >>> tg.all(tg.Tensor([1.0, 0.0])).item()
    False
    """
    return _all(a, axis=normalize_axes(a, axis, "all"), keepdims=keepdims)


def any(a, axis=None, keepdims=False):
    """Whether some element along ``axis`` is true (no gradient).

    >>> import tapegrad as tg
    >>> tg.any(tg.Tensor([1.0, 0.0])).item()
    True
    """
    return _any(a, axis=normalize_axes(a, axis, "any"), keepdims=keepdims)


def count_nonzero(a, axis=None, keepdims=False):
    """How many elements along ``axis`` are nonzero (no gradient).

    >>> import tapegrad as tg
    >>> tg.count_nonzero(tg.Tensor([1.0, 0.0, 2.0])).item()
    2
    """
    return _count_nonzero(a, axis=normalize_axes(a, axis, "count_nonzero"), keepdims=keepdims)


def std(a, axis=None, ddof=0, keepdims=False):
    """The standard deviation over ``axis``: ``sqrt(var(a, axis, ddof))``.

    >>> import tapegrad as tg
    >>> tg.std(tg.Tensor([1.0, 3.0]))
    Tensor(1.)
    """
    return sqrt(var(a, axis=axis, ddof=ddof, keepdims=keepdims))


def ptp(a, axis=None, keepdims=False):
    """The range over ``axis``: ``max - min``.

    >>> import tapegrad as tg
    >>> tg.ptp(tg.Tensor([1.0, 4.0, 2.0]))
    Tensor(3.)
    """
    return subtract(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """The weighted average over ``axis`` (``weights`` of ``a``'s shape, or 1-D along a single axis), as
    ``np.average``; with ``returned=True`` also the sum of the weights.

    >>> import tapegrad as tg
    >>> tg.average(tg.Tensor([1.0, 3.0]), weights=tg.Tensor([3.0, 1.0]))
    Tensor(1.5)
    """
    axes = normalize_axes(a, axis, "average")
    if weights is None:
        avg = sum(a, axis=axes, keepdims=keepdims) / count(_shape(a), axes)
        return (avg, full_like(avg, count(_shape(a), axes))) if returned else avg
    shape, wshape = _shape(a), _shape(weights)
    if wshape != shape:
        if axes is None:
            raise TypeError(f"average: weights of shape {wshape} for an input of shape {shape} need an axis")
        if wshape != tuple(shape[i] for i in axes):
            raise ValueError(f"average: weights of shape {wshape} do not match axis {axis} of shape {shape}")
        weights = reshape(weights, tuple(n if i in axes else 1 for i, n in enumerate(shape)))
    scale = sum(broadcast_to(weights, shape), axis=axes, keepdims=keepdims)
    if np.any(np.asarray(_host(scale)) == 0.0):
        raise ZeroDivisionError("average: the weights sum to zero, so they cannot be normalised")
    avg = divide(sum(multiply(a, weights), axis=axes, keepdims=keepdims), scale)
    return (avg, scale) if returned else avg


def _host(t):
    # inside vmap a check reads every example's values at once (t.data of one example is refused)
    return to_numpy(t._data if t.__class__ is Batched else t.data)


# -- ignoring NaN -----------------------------------------------------------------------------------------------
def _valid_count(a, axes, keepdims):
    return sum(astype(logical_not(isnan(a)), dtype=a.dtype), axis=axes, keepdims=keepdims)


def nansum(a, axis=None, keepdims=False):
    """The sum over ``axis`` treating NaN as 0; NaN entries get gradient 0.

    >>> import tapegrad as tg
    >>> tg.nansum(tg.Tensor([1.0, float("nan"), 2.0]))
    Tensor(3.)
    """
    return sum(where(isnan(a), 0.0, a), axis=axis, keepdims=keepdims)


def nanmean(a, axis=None, keepdims=False):
    """The mean over ``axis`` of the entries that are not NaN; NaN entries get gradient 0.

    >>> import tapegrad as tg
    >>> tg.nanmean(tg.Tensor([1.0, float("nan"), 2.0]))
    Tensor(1.5)
    """
    axes = normalize_axes(a, axis, "nanmean")
    return divide(nansum(a, axis=axes, keepdims=keepdims), _valid_count(a, axes, keepdims))


def nanvar(a, axis=None, ddof=0, keepdims=False):
    """The variance over ``axis`` of the entries that are not NaN (``ddof`` as ``var``).

    >>> import tapegrad as tg
    >>> tg.nanvar(tg.Tensor([1.0, float("nan"), 3.0]))
    Tensor(1.)
    """
    axes = normalize_axes(a, axis, "nanvar")
    missing = isnan(a)
    centred = where(missing, 0.0, subtract(a, nanmean(a, axis=axes, keepdims=True)))
    return divide(sum(centred * centred, axis=axes, keepdims=keepdims), _valid_count(a, axes, keepdims) - ddof)


def nanstd(a, axis=None, ddof=0, keepdims=False):
    """The standard deviation over ``axis`` of the entries that are not NaN.

    >>> import tapegrad as tg
    >>> tg.nanstd(tg.Tensor([1.0, float("nan"), 3.0]))
    Tensor(1.)
    """
    return sqrt(nanvar(a, axis=axis, ddof=ddof, keepdims=keepdims))


def nanprod(a, axis=None, keepdims=False):
    """The product over ``axis`` treating NaN as 1 (exact at zeros, as ``prod``).

    >>> import tapegrad as tg
    >>> tg.nanprod(tg.Tensor([2.0, float("nan"), 3.0]))
    Tensor(6.)
    """
    return prod(where(isnan(a), 1.0, a), axis=axis, keepdims=keepdims)


def _nan_extreme(a, axis, keepdims, fill, reduce, op):
    axes = normalize_axes(a, axis, op)
    missing = isnan(a)
    # a slice of NaN only keeps them: its extreme is NaN, as NumPy's, with the gradient going to them (max's rule)
    skipped = logical_and(missing, logical_not(all(missing, axis=axes, keepdims=True)))
    return reduce(where(skipped, fill, a), axis=axes, keepdims=keepdims)


def nanmax(a, axis=None, keepdims=False):
    """The maximum over ``axis`` ignoring NaN (NaN for a slice of NaN only).

    >>> import tapegrad as tg
    >>> tg.nanmax(tg.Tensor([1.0, float("nan"), 2.0]))
    Tensor(2.)
    """
    return _nan_extreme(a, axis, keepdims, -math.inf, max, "nanmax")


def nanmin(a, axis=None, keepdims=False):
    """The minimum over ``axis`` ignoring NaN (NaN for a slice of NaN only).

    >>> import tapegrad as tg
    >>> tg.nanmin(tg.Tensor([1.0, float("nan"), 2.0]))
    Tensor(1.)
    """
    return _nan_extreme(a, axis, keepdims, math.inf, min, "nanmin")
