"""Learning-rate schedules: step decay and cosine annealing, with PyTorch's semantics.

A scheduler remembers each group's starting ``lr`` (as ``initial_lr`` in the group) and, on each ``step()``
(call it once per epoch, after ``optimizer.step()``), sets every group's ``lr`` from the epoch count. Building
one sets the epoch-0 learning rate at once. ``state_dict()``/``load_state_dict()`` save the epoch count.
"""

from __future__ import annotations

import math

from .optimizer import Optimizer

__all__ = ["LRScheduler", "StepLR", "CosineAnnealingLR"]


class LRScheduler:
    """Base class: subclasses give the learning rate of a group from its base lr and ``last_epoch``.

    >>> import tapegrad as tg
    >>> class Halve(tg.optim.LRScheduler):
    ...     def _lr(self, base_lr):
    ...         return base_lr / 2**self.last_epoch
    >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    >>> sched = Halve(opt); sched.step(); sched.step(); sched.get_last_lr()
    [0.25]
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__} needs an Optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"{type(self).__name__}: last_epoch={last_epoch} needs 'initial_lr' in every group")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def _lr(self, base_lr: float) -> float:
        raise NotImplementedError

    def step(self) -> None:
        """Advance one epoch and set each group's ``lr``."""
        self.last_epoch += 1
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = self._lr(base)

    def get_last_lr(self) -> list[float]:
        """The learning rate of each group, as last set."""
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        """Everything but the optimizer (which has its own state dict).

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
        >>> tg.optim.StepLR(opt, step_size=5).state_dict()
        {'step_size': 5, 'gamma': 0.1, 'base_lrs': [1.0], 'last_epoch': 0}
        """
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore ``last_epoch`` and the schedule's settings, and set the learning rates they give."""
        self.__dict__.update({k: (list(v) if k == "base_lrs" else v) for k, v in state_dict.items()})
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = self._lr(base)


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
        if step_size < 1:
            raise ValueError(f"StepLR: step_size must be >= 1, got {step_size}")
        self.step_size, self.gamma = int(step_size), gamma
        super().__init__(optimizer, last_epoch)

    def _lr(self, base_lr: float) -> float:
        return base_lr * self.gamma ** (self.last_epoch // self.step_size)


class CosineAnnealingLR(LRScheduler):
    """Cosine decay from the base lr to ``eta_min`` over ``T_max`` epochs (SGDR without restarts).

    ``lr = eta_min + (base - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``

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
        if T_max < 1:
            raise ValueError(f"CosineAnnealingLR: T_max must be >= 1, got {T_max}")
        self.T_max, self.eta_min = int(T_max), eta_min
        super().__init__(optimizer, last_epoch)

    def _lr(self, base_lr: float) -> float:
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
