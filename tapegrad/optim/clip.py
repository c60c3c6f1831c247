"""Gradient clipping: rescale all gradients to a maximum total norm, or clamp each element.

Both work on ``p.grad`` of the given parameters (skipping those whose grad is None) and replace each gradient
with a new array of the same dtype, so an array the user kept from before is not changed behind their back.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ..tensor import Tensor

__all__ = ["clip_grad_norm", "clip_grad_value"]


def _with_grads(params) -> list:
    params = [params] if isinstance(params, Tensor) else list(params)
    return [p for p in params if p.grad is not None]


def clip_grad_norm(params: Iterable[Tensor] | Tensor, max_norm: float, norm_type: float = 2.0) -> float:
    """Scale the gradients together so that their total ``norm_type``-norm is at most ``max_norm``.

    The total norm is taken over all gradients as if they were one vector; when it exceeds ``max_norm`` every
    gradient is multiplied by ``max_norm / (total + 1e-6)`` (PyTorch's rule). Returns the total norm measured
    before clipping, so a training loop can log it. ``norm_type`` may be ``float("inf")`` (the largest element).

    >>> import numpy as np, tapegrad as tg
    >>> a, b = tg.Tensor([0.0, 0.0], requires_grad=True), tg.Tensor([0.0], requires_grad=True)
    >>> a.grad, b.grad = np.array([3.0, 0.0]), np.array([4.0])
    >>> tg.optim.clip_grad_norm([a, b], max_norm=1.0)
    5.0
    >>> a.grad.round(6), b.grad.round(6)
    (array([0.6, 0. ]), array([0.8]))
    """
    if max_norm < 0:
        raise ValueError(f"clip_grad_norm: max_norm must be >= 0, got {max_norm}")
    params = _with_grads(params)
    if not params:
        return 0.0
    grads = [np.asarray(p.grad) for p in params]
    norm_type = float(norm_type)
    if math.isinf(norm_type):
        total = float(max(np.abs(g).max(initial=0.0) for g in grads))
    else:
        total = float(sum(float((np.abs(g) ** norm_type).sum()) for g in grads) ** (1.0 / norm_type))
    coef = max_norm / (total + 1e-6)
    if coef < 1.0:
        for p, g in zip(params, grads):
            p.grad = g * g.dtype.type(coef)
    return total


def clip_grad_value(params: Iterable[Tensor] | Tensor, clip_value: float) -> None:
    """Clamp every gradient element into ``[-clip_value, clip_value]``.

    >>> import numpy as np, tapegrad as tg
    >>> w = tg.Tensor([0.0, 0.0, 0.0], requires_grad=True)
    >>> w.grad = np.array([-3.0, 0.5, 2.0])
    >>> tg.optim.clip_grad_value([w], 1.0); w.grad
    array([-1. ,  0.5,  1. ])
    """
    if clip_value < 0:
        raise ValueError(f"clip_grad_value: clip_value must be >= 0, got {clip_value}")
    for p in _with_grads(params):
        p.grad = np.clip(np.asarray(p.grad), -clip_value, clip_value)
