"""Schedules that scale the learning rate epoch by epoch, each as PyTorch computes it (chainable where
PyTorch's are): by a function (``LambdaLR``, ``MultiplicativeLR``), in steps (``StepLR``, ``MultiStepLR``,
``ConstantLR``), linearly (``LinearLR``), geometrically (``ExponentialLR``) or by a polynomial
(``PolynomialLR``). The cosine schedules are in ``cosine.py``.
"""

from __future__ import annotations

import types
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable

from ..optimizer import Optimizer
from .base import LRScheduler, check_optimizer, integer_arg

__all__ = [
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ConstantLR",
    "LinearLR",
    "ExponentialLR",
    "PolynomialLR",
]


def current_lrs(scheduler: LRScheduler) -> list[float]:
    return [group["lr"] for group in scheduler.optimizer.param_groups]


def _number(value, name: str, owner: str, low: float, high: float, low_open: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (low < value if low_open else low <= value)
    if not (ok and value <= high):
        interval = f"{'(' if low_open else '['}{low}, {high}]"
        raise ValueError(f"{owner}: {name} must be a number in {interval}, got {value!r}")
    return value


class _FunctionSchedule(LRScheduler):
    """Shared by the two schedules given functions: one per group, saved only when they are callable objects."""

    _not_saved = ("optimizer", "lr_lambdas")

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int):
        name = type(self).__name__
        n = len(check_optimizer(optimizer, name).param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"{name}: {len(lr_lambda)} lr_lambda function(s) for {n} parameter group(s)")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"{name}: lr_lambda must be a function of the epoch, got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else dict(fn.__dict__) for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state = self._checked_state(state_dict)
        for fn, saved in zip(self.lr_lambdas, state.pop("lr_lambdas")):
            if saved is not None:
                fn.__dict__.update(saved)
        self.__dict__.update(state)
        self._set_lrs(self._last_lr)


class LambdaLR(_FunctionSchedule):
    """``lr = base_lr * lr_lambda(epoch)``; ``lr_lambda`` is one function or one per group.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.LambdaLR(opt, lambda epoch: 1 / (epoch + 1))
    >>> for _ in range(3):
    ...     sched.step()
    >>> sched.get_last_lr()
    [0.25]
    """

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list, last_epoch: int = -1):
        super().__init__(optimizer, lr_lambda, last_epoch)

    def get_lr(self) -> list[float]:
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_FunctionSchedule):
    """Multiply the current learning rate by ``lr_lambda(epoch)`` at each step after the first.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.MultiplicativeLR(opt, lambda epoch: 0.5)
    >>> sched.step(); sched.step(); sched.get_last_lr()
    [0.25]
    """

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list, last_epoch: int = -1):
        super().__init__(optimizer, lr_lambda, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return current_lrs(self)
        return [g["lr"] * fn(self.last_epoch) for fn, g in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` epochs: ``lr = base * gamma ** (epoch // step_size)``.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.StepLR(opt, step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(sched.get_last_lr()[0]); sched.step()
    >>> lrs
    [1.0, 1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size, self.gamma = integer_arg(step_size, "step_size", "StepLR"), gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return current_lrs(self)
        return [lr * self.gamma for lr in current_lrs(self)]

    def _closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` at each epoch listed in ``milestones``.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.MultiStepLR(opt, milestones=[1, 3], gamma=0.5)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(sched.get_last_lr()[0]); sched.step()
    >>> lrs
    [1.0, 0.5, 0.5, 0.25, 0.25]
    """

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1, last_epoch: int = -1):
        milestones = list(milestones)
        for m in milestones:
            integer_arg(m, "each milestone", "MultiStepLR", least=0)
        self.milestones, self.gamma = Counter(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return current_lrs(self)
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in current_lrs(self)]

    def _closed_form_lr(self) -> list[float]:
        milestones = sorted(self.milestones.elements())
        return [base * self.gamma ** bisect_right(milestones, self.last_epoch) for base in self.base_lrs]

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        self.milestones = Counter({int(k): int(v) for k, v in self.milestones.items()})  # a checkpoint gives a dict


class ConstantLR(LRScheduler):
    """Multiply the learning rate by ``factor`` until epoch ``total_iters``, then restore it.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.ConstantLR(opt, factor=0.5, total_iters=2)
    >>> lrs = []
    >>> for epoch in range(4):
    ...     lrs.append(sched.get_last_lr()[0]); sched.step()
    >>> lrs
    [0.5, 0.5, 1.0, 1.0]
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1):
        self.factor = _number(factor, "factor", "ConstantLR", 0, 1)
        self.total_iters = integer_arg(total_iters, "total_iters", "ConstantLR", least=0)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.factor for lr in current_lrs(self)]
        if self.last_epoch != self.total_iters:
            return current_lrs(self)
        return [lr * (1.0 / self.factor) for lr in current_lrs(self)]

    def _closed_form_lr(self) -> list[float]:
        return [
            base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)) for base in self.base_lrs
        ]


class LinearLR(LRScheduler):
    """Scale the learning rate by a factor going linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` epochs (a warm-up, with the defaults).

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.LinearLR(opt, start_factor=0.25, total_iters=3)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(sched.get_last_lr()[0]); sched.step()
    >>> lrs
    [0.25, 0.5, 0.75, 1.0, 1.0]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ):
        self.start_factor = _number(start_factor, "start_factor", "LinearLR", 0, 1, low_open=True)
        self.end_factor = _number(end_factor, "end_factor", "LinearLR", 0, 1)
        self.total_iters = integer_arg(total_iters, "total_iters", "LinearLR")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in current_lrs(self)]
        if self._is_initial or self.last_epoch > self.total_iters:
            return current_lrs(self)
        span = self.end_factor - self.start_factor
        scale = 1.0 + span / (self.total_iters * self.start_factor + (self.last_epoch - 1) * span)
        return [lr * scale for lr in current_lrs(self)]

    def _closed_form_lr(self) -> list[float]:
        span = self.end_factor - self.start_factor
        return [
            base * (self.start_factor + span * min(self.total_iters, self.last_epoch) / self.total_iters)
            for base in self.base_lrs
        ]


class ExponentialLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every epoch: ``lr = base * gamma ** epoch``.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.ExponentialLR(opt, gamma=0.5)
    >>> sched.step(); sched.step(); sched.get_last_lr()
    [0.25]
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return current_lrs(self)
        return [lr * self.gamma for lr in current_lrs(self)]

    def _closed_form_lr(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay to zero over ``total_iters`` epochs: ``lr = base * (1 - epoch / total_iters) ** power``.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.PolynomialLR(opt, total_iters=4, power=1.0)
    >>> lrs = []
    >>> for epoch in range(6):
    ...     lrs.append(sched.get_last_lr()[0]); sched.step()
    >>> lrs
    [1.0, 0.75, 0.5, 0.25, 0.0, 0.0]
    """

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1):
        self.total_iters, self.power = integer_arg(total_iters, "total_iters", "PolynomialLR"), power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial or self.last_epoch > self.total_iters:
            return current_lrs(self)
        e, n = self.last_epoch, self.total_iters
        decay = ((1.0 - e / n) / (1.0 - (e - 1) / n)) ** self.power
        return [lr * decay for lr in current_lrs(self)]

    def _closed_form_lr(self) -> list[float]:
        return [
            base * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
            for base in self.base_lrs
        ]
