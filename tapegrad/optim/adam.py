"""The Adam family: Adam, AdamW, Adamax, NAdam and RAdam, following PyTorch's published equations.

For gradient ``g`` of parameter ``p`` at step ``t`` (counted from 1; ``g`` negated first when ``maximize``),
weight decay first (``Optimizer._weight_decay``: ``g + wd * p``, or with decoupled weight decay
``p * (1 - lr * wd)``), then the running moments ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 * v + (1 - beta2) * g**2``:

    Adam     v_max = max(v_max, v) (amsgrad: v_max replaces v)
             p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)
    Adamax   u = max(beta2 * u, |g| + eps)            (an infinity norm instead of v)
             p = p - lr / (1 - beta1**t) * m / u
    NAdam    mu_t = beta1 * (1 - 0.5 * 0.96**(t * momentum_decay)),  P_t = mu_1 * ... * mu_t
             d = sqrt(v / (1 - beta2**t)) + eps
             p = p - lr * (1 - mu_t) / (1 - P_t) * g / d - lr * mu_{t+1} / (1 - P_t * mu_{t+1}) * m / d
    RAdam    rho_inf = 2 / (1 - beta2) - 1,  rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)
             p = p - lr * m / (1 - beta1**t) * [sqrt(1 - beta2**t) / (sqrt(v) + eps) * r_t  if rho_t > 5  else 1]
             with r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
"""

from __future__ import annotations

import numpy as np

from ._math import absolute as _absolute
from ._math import like as _like
from ._math import maximum as _maximum
from ._math import power as _power
from ._math import sqrt as _sqrt
from .optimizer import Optimizer, _lerp

__all__ = ["Adam", "AdamW", "Adamax", "NAdam", "RAdam"]


def _moments(g: np.ndarray, state: dict, group: dict) -> tuple[int, np.ndarray, np.ndarray]:
    """The step count and the first and second running moments after this gradient (Adam, NAdam, RAdam)."""
    b1, b2 = group["betas"]
    m = _lerp(state["exp_avg"], g, 1 - b1)
    v = b2 * state["exp_avg_sq"] + (1 - b2) * g * g
    return state["step"] + 1, m, v


def _zero_moments(p: np.ndarray) -> dict:
    return {"step": 0, "exp_avg": np.zeros_like(p), "exp_avg_sq": np.zeros_like(p)}


class Adam(Optimizer):
    """Adam (Kingma and Ba, 2015); ``weight_decay`` adds an L2 penalty to the gradient, as PyTorch's Adam does
    (``decoupled_weight_decay=True`` makes it AdamW).

    >>> import numpy as np, tapegrad as tg
    >>> w = tg.Tensor([1.0, -1.0], requires_grad=True)
    >>> opt = tg.optim.Adam([w], lr=0.1)
    >>> w.grad = np.array([0.5, -2.0]); opt.step(); w.data   # the first step moves each weight by about lr
    array([ 0.9, -0.9])
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        decoupled_weight_decay: bool = False,
    ):
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            decoupled_weight_decay=decoupled_weight_decay,
        )
        super().__init__(params, defaults)

    def _init_state(self, p: np.ndarray, group: dict) -> dict:
        state = _zero_moments(p)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = np.zeros_like(p)
        return state

    def _update(self, p: np.ndarray, g: np.ndarray, state: dict, group: dict) -> tuple[np.ndarray, dict]:
        lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
        p, g = self._weight_decay(p, g, group)
        t, m, v = _moments(g, state, group)
        new = {"step": t, "exp_avg": m, "exp_avg_sq": v}
        if group["amsgrad"]:
            v = new["max_exp_avg_sq"] = _maximum(state.get("max_exp_avg_sq", v), v)
        denom = _sqrt(v) / _like(_sqrt(1 - _power(b2, t)), p) + eps
        return p - _like(lr / (1 - _power(b1, t)), p) * (m / denom), new


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov and Hutter, 2019): ``p *= 1 - lr * weight_decay`` each step.

    >>> import numpy as np, tapegrad as tg
    >>> w = tg.Tensor([1.0], requires_grad=True)
    >>> opt = tg.optim.AdamW([w], lr=0.1, weight_decay=0.5)
    >>> w.grad = np.array([0.0]); opt.step(); w.data   # no gradient: only the decay acts
    array([0.95])
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
    ):
        super().__init__(
            params,
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            decoupled_weight_decay=True,
        )


class Adamax(Optimizer):
    """Adamax (Kingma and Ba, 2015, section 7): Adam with the infinity norm of past gradients in place of ``v``.

    >>> import numpy as np, tapegrad as tg
    >>> w = tg.Tensor([1.0], requires_grad=True)
    >>> opt = tg.optim.Adamax([w], lr=0.1)
    >>> w.grad = np.array([4.0]); opt.step(); w.data.round(6)   # first step: lr * sign(g)
    array([0.9])
    """

    def __init__(
        self,
        params,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        *,
        maximize: bool = False,
    ):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize)
        super().__init__(params, defaults)

    def _init_state(self, p: np.ndarray, group: dict) -> dict:
        return {"step": 0, "exp_avg": np.zeros_like(p), "exp_inf": np.zeros_like(p)}

    def _update(self, p: np.ndarray, g: np.ndarray, state: dict, group: dict) -> tuple[np.ndarray, dict]:
        lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
        p, g = self._weight_decay(p, g, group)
        t = state["step"] + 1
        m = _lerp(state["exp_avg"], g, 1 - b1)
        u = _maximum(b2 * state["exp_inf"], _absolute(g) + eps)
        return p - _like(lr / (1 - _power(b1, t)), p) * (m / u), {"step": t, "exp_avg": m, "exp_inf": u}


class NAdam(Optimizer):
    """NAdam (Dozat, 2016): Adam with Nesterov momentum, its momentum warmed up by ``momentum_decay``.

    >>> import numpy as np, tapegrad as tg
    >>> w = tg.Tensor([1.0], requires_grad=True)
    >>> opt = tg.optim.NAdam([w], lr=0.1)
    >>> for _ in range(3):
    ...     w.grad = 2 * w.data; opt.step()
    >>> float(w.data[0]) < 0.8
    True
    """

    def __init__(
        self,
        params,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        maximize: bool = False,
    ):
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def _init_state(self, p: np.ndarray, group: dict) -> dict:
        return {**_zero_moments(p), "mu_product": 1.0}

    def _update(self, p: np.ndarray, g: np.ndarray, state: dict, group: dict) -> tuple[np.ndarray, dict]:
        lr, (b1, b2), eps, psi = group["lr"], group["betas"], group["eps"], group["momentum_decay"]
        p, g = self._weight_decay(p, g, group)
        t, m, v = _moments(g, state, group)
        mu = b1 * (1.0 - 0.5 * _power(0.96, t * psi))
        mu_next = b1 * (1.0 - 0.5 * _power(0.96, (t + 1) * psi))
        mu_product = state["mu_product"] * mu
        denom = _sqrt(v / _like(1 - _power(b2, t), p)) + eps
        p = p + _like(-lr * (1.0 - mu) / (1.0 - mu_product), p) * (g / denom)
        p = p + _like((-lr * mu_next) / (1.0 - mu_product * mu_next), p) * (m / denom)
        return p, {"step": t, "exp_avg": m, "exp_avg_sq": v, "mu_product": mu_product}


class RAdam(Optimizer):
    """RAdam (Liu et al., 2020): Adam whose adaptive step is switched on, and rectified, once the variance of
    its estimate is tractable (``rho_t > 5``); before that, SGD with momentum.

    >>> import numpy as np, tapegrad as tg
    >>> w = tg.Tensor([1.0], requires_grad=True)
    >>> opt = tg.optim.RAdam([w], lr=0.1)
    >>> w.grad = np.array([4.0]); opt.step(); w.data   # the first steps are plain momentum: lr * m / (1 - beta1)
    array([0.6])
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        decoupled_weight_decay: bool = False,
        *,
        maximize: bool = False,
    ):
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def _init_state(self, p: np.ndarray, group: dict) -> dict:
        return _zero_moments(p)

    def _update(self, p: np.ndarray, g: np.ndarray, state: dict, group: dict) -> tuple[np.ndarray, dict]:
        lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
        p, g = self._weight_decay(p, g, group)
        t, m, v = _moments(g, state, group)
        bias1, bias2 = 1 - b1**t, 1 - b2**t
        step = m / bias1 * lr
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * (b2**t) / bias2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            step = step * ((bias2**0.5) / (np.sqrt(v) + eps)) * rect
        return p - step, {"step": t, "exp_avg": m, "exp_avg_sq": v}
