"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and L2 weight decay.

The update follows PyTorch's published equations (``torch.optim.SGD``). With gradient ``g`` of parameter ``p``
(negated first when ``maximize``):

    g = g + weight_decay * p                    (if weight_decay != 0)
    b = g                                       (first step)
    b = momentum * b + (1 - dampening) * g      (later steps; only if momentum != 0)
    g = g + momentum * b  if nesterov  else  b
    p = p - lr * g
"""

from __future__ import annotations

import numpy as np

from ._math import copy as _copy
from ._math import like as _like
from .optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent (optionally with momentum), PyTorch's update rule and argument order.

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
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
    ):
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def _check_group(self, group: dict, where: str) -> None:
        super()._check_group(group, where)
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(
                f"{where}: Nesterov momentum needs momentum > 0 and dampening = 0, got momentum={group['momentum']}, "
                f"dampening={group['dampening']}"
            )

    def _init_state(self, p: np.ndarray, group: dict) -> dict:
        return {"momentum_buffer": None} if group["momentum"] != 0 else {}

    def _update(self, p: np.ndarray, g: np.ndarray, state: dict, group: dict) -> tuple[np.ndarray, dict]:
        lr, momentum = group["lr"], group["momentum"]
        p, g = self._weight_decay(p, g, group)
        lr = _like(lr, p)  # a learning rate passed in as a 0-d array meets p as a Python number would
        if momentum == 0:
            return p - lr * g, {}
        buf = state.get("momentum_buffer")
        buf = _copy(g) if buf is None else momentum * buf + (1 - group["dampening"]) * g
        g = g + momentum * buf if group["nesterov"] else buf
        return p - lr * g, {"momentum_buffer": buf}
