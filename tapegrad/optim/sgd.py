"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and L2 weight decay.

The update follows PyTorch's published equations (``torch.optim.SGD``). With gradient ``g`` of parameter ``p``:

    g = g + weight_decay * p                    (if weight_decay != 0)
    b = g                                       (first step)
    b = momentum * b + (1 - dampening) * g      (later steps; only if momentum != 0)
    g = g + momentum * b  if nesterov  else  b
    p = p - lr * g
"""

from __future__ import annotations

import numpy as np

from .optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent (optionally with momentum), PyTorch's update rule.

    >>> import numpy as np, tapegrad as tg
    >>> w = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> opt = tg.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> w.grad = np.array([1.0, 1.0]); opt.step(); w.data
    array([0.9, 1.9])
    >>> w.grad = np.array([1.0, 1.0]); opt.step(); w.data   # the buffer is now 0.9 * 1 + 1 = 1.9
    array([0.71, 1.71])
    """

    def __init__(
        self,
        params,
        lr: float,
        momentum: float = 0.0,
        dampening: float = 0.0,
        nesterov: bool = False,
        weight_decay: float = 0.0,
    ):
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, nesterov=nesterov, weight_decay=weight_decay)
        super().__init__(params, defaults)

    def _check_group(self, group: dict) -> None:
        super()._check_group(group)
        if group["momentum"] < 0 or group["weight_decay"] < 0:
            raise ValueError(
                f"SGD: momentum and weight_decay must be >= 0, got {group['momentum']}, {group['weight_decay']}"
            )
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("SGD: Nesterov momentum needs momentum > 0 and dampening = 0")

    def _update(self, p: np.ndarray, g: np.ndarray, state: dict, group: dict) -> None:
        lr, momentum, wd = group["lr"], group["momentum"], group["weight_decay"]
        if wd != 0:
            g = g + wd * p
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = np.array(g, dtype=p.dtype)
            else:
                buf *= momentum
                buf += (1 - group["dampening"]) * g
            g = g + momentum * buf if group["nesterov"] else buf
        p -= lr * g
