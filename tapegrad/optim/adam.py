"""Adam and AdamW, with bias correction and the AMSGrad variant, following PyTorch's published equations.

For gradient ``g`` of parameter ``p`` at step ``t`` (counted from 1):

    g = g + weight_decay * p                    (Adam: L2 penalty in the gradient)
    p = p * (1 - lr * weight_decay)             (AdamW: decoupled decay, applied to p instead)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g**2
    v_max = max(v_max, v)                       (amsgrad only; then v_max replaces v below)
    p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)
"""

from __future__ import annotations

import math

import numpy as np

from .optimizer import Optimizer

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam (Kingma and Ba, 2015); ``weight_decay`` adds an L2 penalty to the gradient, as PyTorch's Adam does.

    >>> import numpy as np, tapegrad as tg
    >>> w = tg.Tensor([1.0, -1.0], requires_grad=True)
    >>> opt = tg.optim.Adam([w], lr=0.1)
    >>> w.grad = np.array([0.5, -2.0]); opt.step(); w.data   # the first step moves each weight by about lr
    array([ 0.9, -0.9])
    """

    _decoupled = False

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
    ):
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)
        super().__init__(params, defaults)

    def _check_group(self, group: dict) -> None:
        super()._check_group(group)
        b1, b2 = group["betas"]
        if not (0 <= b1 < 1 and 0 <= b2 < 1):
            raise ValueError(f"{type(self).__name__}: betas must be in [0, 1), got {group['betas']}")
        if group["eps"] < 0 or group["weight_decay"] < 0:
            raise ValueError(f"{type(self).__name__}: eps and weight_decay must be >= 0")
        group["betas"] = (b1, b2)

    def _update(self, p: np.ndarray, g: np.ndarray, state: dict, group: dict) -> None:
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        if not state:
            state["step"] = 0
            state["exp_avg"] = np.zeros_like(p)
            state["exp_avg_sq"] = np.zeros_like(p)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = np.zeros_like(p)
        state["step"] += 1
        t = state["step"]
        if wd != 0:
            if self._decoupled:
                p *= 1 - lr * wd
            else:
                g = g + wd * p
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * (g * g)
        if group["amsgrad"]:
            v = np.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
        bias1, bias2 = 1 - b1**t, 1 - b2**t
        denom = np.sqrt(v) / math.sqrt(bias2) + eps
        p -= (lr / bias1) * (m / denom)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov and Hutter, 2019): ``p *= 1 - lr * weight_decay`` each step.

    >>> import numpy as np, tapegrad as tg
    >>> w = tg.Tensor([1.0], requires_grad=True)
    >>> opt = tg.optim.AdamW([w], lr=0.1, weight_decay=0.5)
    >>> w.grad = np.array([0.0]); opt.step(); w.data   # no gradient: only the decay acts
    array([0.95])
    """

    _decoupled = True

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
    ):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)
