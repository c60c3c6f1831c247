"""Cosine schedules, as PyTorch computes them: ``CosineAnnealingLR`` (recursive, so it chains with other
schedules) and ``CosineAnnealingWarmRestarts`` (SGDR, restarting every ``T_i`` epochs, ``T_i`` growing by
``T_mult``; it may be stepped by fractional epochs).
"""

from __future__ import annotations

import math

from ..optimizer import Optimizer
from .base import LRScheduler, integer_arg
from .decay import current_lrs

__all__ = ["CosineAnnealingLR", "CosineAnnealingWarmRestarts"]


class CosineAnnealingLR(LRScheduler):
    """Cosine decay from the base lr to ``eta_min`` over ``T_max`` epochs (SGDR without restarts), computed
    recursively as PyTorch does, so that it chains with other schedules:

    ``lr = eta_min + (base - eta_min) * (1 + cos(pi * epoch / T_max)) / 2`` when it runs alone.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.CosineAnnealingLR(opt, T_max=4)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
    >>> lrs
    [1.0, 0.8536, 0.5, 0.1464, 0.0]
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_max, self.eta_min = integer_arg(T_max, "T_max", "CosineAnnealingLR"), eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        e, T, lo = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return current_lrs(self)
        if self._step_count == 1 and e > 0:  # resumed with last_epoch: start from the closed form
            return [lo + (base - lo) * (1 + math.cos(e * math.pi / T)) / 2 for base in self.base_lrs]
        if (e - 1 - T) % (2 * T) == 0:  # past the minimum: the curve turns up again
            return [
                lr + (base - lo) * (1 - math.cos(math.pi / T)) / 2 for base, lr in zip(self.base_lrs, current_lrs(self))
            ]
        ratio = (1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T))
        return [ratio * (lr - lo) + lo for lr in current_lrs(self)]

    def _closed_form_lr(self) -> list[float]:
        lo = self.eta_min
        return [lo + (base - lo) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2 for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the base lr to ``eta_min`` over ``T_0`` epochs, then restarting, each period
    ``T_mult`` times longer (SGDR). ``step(epoch)`` may be given a fractional epoch, to step every batch.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.CosineAnnealingWarmRestarts(opt, T_0=2)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
    >>> lrs
    [1.0, 0.5, 1.0, 0.5, 1.0]
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_0 = self.T_i = integer_arg(T_0, "T_0", "CosineAnnealingWarmRestarts")
        self.T_mult = integer_arg(T_mult, "T_mult", "CosineAnnealingWarmRestarts")
        if isinstance(eta_min, bool) or not isinstance(eta_min, (int, float)):
            raise ValueError(f"CosineAnnealingWarmRestarts: eta_min must be a number, got {eta_min!r}")
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        lo = self.eta_min
        return [lo + (base - lo) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2 for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch, or go to ``epoch`` (which may be fractional: ``epoch + batch / batches``)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"CosineAnnealingWarmRestarts.step: epoch must be >= 0, got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** (n)
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._set_lrs(self.get_lr())
