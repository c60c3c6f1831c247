"""Per-coordinate step sizes from running squares of the gradient: RMSprop, Adagrad and Adadelta, following
PyTorch's published equations.

For gradient ``g`` of parameter ``p`` (negated first when ``maximize``; ``g + weight_decay * p`` when
``weight_decay != 0``), at step ``t`` counted from 1:

    RMSprop   s = alpha * s + (1 - alpha) * g**2
              a = lerp(a, g, 1 - alpha);  d = sqrt(s - a**2) + eps      (centered)
              d = sqrt(s) + eps                                          (otherwise)
              b = momentum * b + g / d;  p = p - lr * b                  (momentum > 0)
              p = p - lr * g / d                                         (otherwise)
    Adagrad   s = s + g**2                                               (s starts at initial_accumulator_value)
              p = p - lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)
    Adadelta  s = rho * s + (1 - rho) * g**2
              delta = sqrt(u + eps) / sqrt(s + eps) * g
              u = rho * u + (1 - rho) * delta**2
              p = p - lr * delta
"""

from __future__ import annotations

import numpy as np

from ._math import like as _like
from ._math import sqrt as _sqrt
from .optimizer import Optimizer, _lerp

__all__ = ["RMSprop", "Adagrad", "Adadelta"]


class RMSprop(Optimizer):
    """RMSprop (Hinton, 2012), optionally centered (Graves, 2013) and with momentum, as PyTorch computes it.

    >>> import numpy as np, tapegrad as tg
    >>> w = tg.Tensor([1.0], requires_grad=True)
    >>> opt = tg.optim.RMSprop([w], lr=0.01, alpha=0.75)
    >>> w.grad = np.array([3.0]); opt.step(); w.data.round(6)   # s = 0.25 * 9: the step is lr * 3 / 1.5
    array([0.98])
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        centered: bool = False,
        *,
        maximize: bool = False,
    ):
        defaults = dict(
            lr=lr,
            alpha=alpha,
            eps=eps,
            weight_decay=weight_decay,
            momentum=momentum,
            centered=centered,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def _init_state(self, p: np.ndarray, group: dict) -> dict:
        state = {"step": 0, "square_avg": np.zeros_like(p)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = np.zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = np.zeros_like(p)
        return state

    def _update(self, p: np.ndarray, g: np.ndarray, state: dict, group: dict) -> tuple[np.ndarray, dict]:
        lr, alpha, eps, momentum = group["lr"], group["alpha"], group["eps"], group["momentum"]
        p, g = self._weight_decay(p, g, group)
        s = alpha * state["square_avg"] + (1 - alpha) * g * g
        new = {"step": state["step"] + 1, "square_avg": s}
        if group["centered"]:
            a = new["grad_avg"] = _lerp(state.get("grad_avg", np.zeros_like(p)), g, 1 - alpha)
            avg = _sqrt(s - a * a) + eps
        else:
            avg = _sqrt(s) + eps
        if momentum > 0:
            buf = new["momentum_buffer"] = momentum * state.get("momentum_buffer", np.zeros_like(p)) + g / avg
            return p - _like(lr, p) * buf, new
        return p - _like(lr, p) * (g / avg), new


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011): each coordinate's step shrinks with the sum of its squared gradients.

    >>> import numpy as np, tapegrad as tg
    >>> w = tg.Tensor([1.0, 1.0], requires_grad=True)
    >>> opt = tg.optim.Adagrad([w], lr=0.5)
    >>> w.grad = np.array([2.0, -0.1]); opt.step(); w.data   # the first step is lr * sign(g) in every coordinate
    array([0.5, 1.5])
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        lr_decay: float = 0.0,
        weight_decay: float = 0.0,
        initial_accumulator_value: float = 0.0,
        eps: float = 1e-10,
        *,
        maximize: bool = False,
    ):
        defaults = dict(
            lr=lr,
            lr_decay=lr_decay,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            eps=eps,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def _init_state(self, p: np.ndarray, group: dict) -> dict:
        return {"step": 0, "sum": np.full_like(p, group["initial_accumulator_value"])}

    def _update(self, p: np.ndarray, g: np.ndarray, state: dict, group: dict) -> tuple[np.ndarray, dict]:
        p, g = self._weight_decay(p, g, group)
        t = state["step"] + 1
        clr = group["lr"] / (1 + (t - 1) * group["lr_decay"])
        s = state["sum"] + g * g
        return p - _like(clr, p) * (g / (_sqrt(s) + group["eps"])), {"step": t, "sum": s}


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012): steps scaled by the ratio of running RMS of past updates and of gradients.

    >>> import numpy as np, tapegrad as tg
    >>> w = tg.Tensor([1.0], requires_grad=True)
    >>> opt = tg.optim.Adadelta([w], rho=0.0, eps=1e-4)
    >>> w.grad = np.array([3.0]); opt.step(); w.data.round(4)   # rho = 0: delta = sqrt(eps) * g / sqrt(g**2 + eps)
    array([0.99])
    """

    def __init__(
        self,
        params,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        *,
        maximize: bool = False,
    ):
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)
        super().__init__(params, defaults)

    def _init_state(self, p: np.ndarray, group: dict) -> dict:
        return {"step": 0, "square_avg": np.zeros_like(p), "acc_delta": np.zeros_like(p)}

    def _update(self, p: np.ndarray, g: np.ndarray, state: dict, group: dict) -> tuple[np.ndarray, dict]:
        lr, rho, eps = group["lr"], group["rho"], group["eps"]
        p, g = self._weight_decay(p, g, group)
        s = rho * state["square_avg"] + (1 - rho) * g * g
        delta = _sqrt(state["acc_delta"] + eps) / _sqrt(s + eps) * g
        u = rho * state["acc_delta"] + (1 - rho) * delta * delta
        return p - _like(lr, p) * delta, {"step": state["step"] + 1, "square_avg": s, "acc_delta": u}
