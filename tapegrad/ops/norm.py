"""Standardisation with an affine map, the op behind layer, batch and group normalisation.

``standardize(x, weight, bias, axis, eps) = (x - mean) / sqrt(var + eps) * weight + bias``, the mean and the
(biased) variance taken over ``axis``. It saves its input and weight, never the normalised array: its one
joint rule recomputes the statistics (one pass over ``x``) and returns the three gradients at once,

    gx = rstd * (gw_hat - mean(gw_hat) - x_hat * mean(gw_hat * x_hat)),   gw_hat = g * weight
    gweight = g * x_hat,   gbias = g   (summed back to their shapes by the replay's unbroadcast)

written with tapegrad's own ops on a recorded replay, so second derivatives work.
"""

from __future__ import annotations

import numpy as np

from ..registry import defop
from ._axes import normalize_axes
from ._batching import standardize_rule


def _statistics(x, axis, eps, xp):
    centred = x - xp.mean(x, axis=axis, keepdims=True)
    rstd = 1.0 / xp.sqrt(xp.mean(centred * centred, axis=axis, keepdims=True) + eps)
    return centred * rstd, rstd


def _standardize(x, w, b, axis, eps, *, xp=np):
    x_hat, _ = _statistics(x, axis, eps, xp)
    return x_hat * w + b


def _standardize_vjp(xp, g, ans, x, w, b, axis, eps):
    x_hat, rstd = _statistics(x, axis, eps, xp)
    gw_hat = g * w
    mean = lambda a: xp.mean(a, axis=axis, keepdims=True)  # noqa: E731
    gx = rstd * (gw_hat - mean(gw_hat) - x_hat * mean(gw_hat * x_hat))
    return gx, (g * x_hat if hasattr(w, "shape") else None), g  # a number as weight needs no gradient


_standardize_op = defop(
    "standardize",
    _standardize,
    _standardize_vjp,
    inputs=("x", "w", "b"),
    save="x w",
    broadcast=True,
    joint=True,
    jvp="transpose",
    batch=standardize_rule(_standardize),
)


def standardize(x, weight=None, bias=None, axis=-1, eps=1e-5):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` with the mean and biased variance over ``axis``.

    ``weight`` and ``bias`` (optional) broadcast against ``x`` without changing its shape: layer norm is
    ``axis=-1`` with per-feature ``weight``; batch norm over ``(N, C, H, W)`` is ``axis=(0, 2, 3)`` with weight
    ``(C, 1, 1)``. The tape keeps ``x`` and ``weight`` only.

    >>> import tapegrad as tg
    >>> tg.standardize(tg.Tensor([[1.0, 2.0, 3.0]]), eps=0.0)
    Tensor([[-1.22474487,  0.        ,  1.22474487]])
    """
    shape = tuple(x.shape) if hasattr(x, "shape") else np.shape(x)
    for name, v in (("weight", weight), ("bias", bias)):
        if v is not None and np.broadcast_shapes(shape, np.shape(v) if not hasattr(v, "shape") else v.shape) != shape:
            raise ValueError(f"standardize: {name} of shape {v.shape} does not broadcast to the input's shape {shape}")
    axis = normalize_axes(x, axis, "standardize")
    if eps < 0:
        raise ValueError(f"standardize: eps must be >= 0, got {eps}")
    return _standardize_op(
        x, 1.0 if weight is None else weight, 0.0 if bias is None else bias, axis=axis, eps=float(eps)
    )
