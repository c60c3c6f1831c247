"""Schedules made of schedules, and the one driven by a metric: ``SequentialLR`` (one after another, e.g. a
warm-up then a decay), ``ChainedScheduler`` (several at once, their factors multiplied) and
``ReduceLROnPlateau`` (cut the rate when a metric stops improving), with PyTorch's semantics.
"""

from __future__ import annotations

import copy
import math
from bisect import bisect_right

from ..optimizer import Optimizer
from .base import LRScheduler, check_optimizer, integer_arg, per_group

__all__ = ["SequentialLR", "ChainedScheduler", "ReduceLROnPlateau"]


def _check_members(schedulers, optimizer: Optimizer, owner: str) -> list:
    schedulers = list(schedulers)
    if not schedulers:
        raise ValueError(f"{owner} needs at least one scheduler")
    for i, s in enumerate(schedulers):
        if not isinstance(s, LRScheduler):
            raise TypeError(f"{owner}: scheduler {i} is a {type(s).__name__}, not a learning-rate scheduler")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(
                f"{owner}: scheduler {i} is a ReduceLROnPlateau, whose step() needs the metric; step it yourself"
            )
        if s.optimizer is not optimizer:
            raise ValueError(f"{owner}: scheduler {i} ({type(s).__name__}) belongs to another optimizer")
    return schedulers


class _Composite(LRScheduler):
    """State of a schedule made of schedules: its own, with each member's state dict under ``_schedulers``."""

    _not_saved = ("optimizer", "_schedulers")

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state = self._checked_state(state_dict)
        members = state.pop("_schedulers")
        if not isinstance(members, list) or len(members) != len(self._schedulers):
            raise ValueError(f"{type(self).__name__}.load_state_dict: the state holds a different number of schedulers")
        for s, saved in zip(self._schedulers, members):
            s._checked_state(saved)  # all checked before any is loaded
        self.__dict__.update(state)
        for s, saved in zip(self._schedulers, members):
            s.load_state_dict(saved)
        self._set_lrs(self._last_lr)


class SequentialLR(_Composite):
    """Run ``schedulers`` one after another, switching at each epoch in ``milestones`` (one fewer than the
    schedulers); the next one starts from its own epoch 0.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    >>> warmup = tg.optim.LinearLR(opt, start_factor=0.25, total_iters=3)
    >>> decay = tg.optim.ExponentialLR(opt, gamma=0.5)
    >>> sched = tg.optim.SequentialLR(opt, [warmup, decay], milestones=[3])
    >>> lrs = []
    >>> for epoch in range(6):
    ...     lrs.append(sched.get_last_lr()[0]); sched.step()
    >>> lrs
    [0.25, 0.5, 0.75, 1.0, 0.5, 0.25]
    """

    def __init__(self, optimizer: Optimizer, schedulers: list, milestones: list[int], last_epoch: int = -1):
        self.optimizer = check_optimizer(optimizer, "SequentialLR")
        schedulers = _check_members(schedulers, optimizer, "SequentialLR")
        milestones = [integer_arg(m, "each milestone", "SequentialLR", least=0) for m in milestones]
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                f"SequentialLR: {len(schedulers)} schedulers need {len(schedulers) - 1} milestone(s), got {len(milestones)}"
            )
        if milestones != sorted(milestones):
            raise ValueError(f"SequentialLR: milestones must increase, got {milestones}")
        self._schedulers, self._milestones = schedulers, milestones
        self.last_epoch = last_epoch + 1
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]  # undo what the members' first steps did
        for s in schedulers:
            self._undo(s)
        first = schedulers[bisect_right(milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def _undo(self, scheduler) -> None:
        if hasattr(scheduler, "_schedulers"):
            for s in scheduler._schedulers:
                self._undo(s)
        elif hasattr(scheduler, "last_epoch"):
            scheduler.last_epoch -= 1

    def step(self) -> None:
        """Advance one epoch: step the scheduler whose turn it is (a new one starts at its epoch 0)."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Composite):
    """Step several schedules at once; as each scales the current rate, their factors multiply.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.ChainedScheduler([tg.optim.ConstantLR(opt, factor=0.5, total_iters=2),
    ...                                    tg.optim.ExponentialLR(opt, gamma=0.5)])
    >>> lrs = []
    >>> for epoch in range(4):
    ...     lrs.append(sched.get_last_lr()[0]); sched.step()
    >>> lrs
    [0.5, 0.25, 0.25, 0.125]
    """

    def __init__(self, schedulers: list, optimizer: Optimizer | None = None):
        schedulers = list(schedulers)
        if optimizer is None and schedulers:
            optimizer = getattr(schedulers[0], "optimizer", None)
        self.optimizer = check_optimizer(optimizer, "ChainedScheduler")
        self._schedulers = _check_members(schedulers, optimizer, "ChainedScheduler")
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def step(self) -> None:
        """Step every scheduler in order."""
        for s in self._schedulers:
            s.step()
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


class ReduceLROnPlateau(LRScheduler):
    """Multiply the learning rate by ``factor`` once the metric given to ``step(metric)`` has not improved
    (by ``threshold``, relative or absolute) for more than ``patience`` epochs; then wait ``cooldown`` epochs.
    Rates never go below ``min_lr`` (one value, or one per group), and changes smaller than ``eps`` are skipped.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    >>> sched = tg.optim.ReduceLROnPlateau(opt, factor=0.5, patience=1)
    >>> for loss in [3.0, 2.0, 2.0, 2.0, 2.0, 2.0]:
    ...     sched.step(loss)
    >>> sched.get_last_lr()   # no improvement after 2.0: halved after two bad epochs, and again after two more
    [0.25]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: float | list[float] = 0,
        eps: float = 1e-8,
    ):
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 <= factor < 1:
            raise ValueError(f"ReduceLROnPlateau: factor must be a number in [0, 1), got {factor!r}")
        self.factor = factor
        self.optimizer = check_optimizer(optimizer, "ReduceLROnPlateau")
        if isinstance(min_lr, (list, tuple)):
            self.default_min_lr = None
            self.min_lrs = per_group("min_lr", optimizer, min_lr, "ReduceLROnPlateau")
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = integer_arg(patience, "patience", "ReduceLROnPlateau", least=0)
        self.cooldown = integer_arg(cooldown, "cooldown", "ReduceLROnPlateau", least=0)
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]
        self._init_is_better(mode, threshold, threshold_mode)
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min":
            return a < (best * (1.0 - self.threshold) if self.threshold_mode == "rel" else best - self.threshold)
        return a > (best * (self.threshold + 1.0) if self.threshold_mode == "rel" else best + self.threshold)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def step(self, metrics) -> None:  # type: ignore[override]
        """Record this epoch's metric (a number or a one-element tensor) and cut the rates if it is time."""
        current = float(metrics)
        self.last_epoch += 1
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in the cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"ReduceLROnPlateau: the optimizer now has {len(groups)} parameter groups and min_lr has "
                    f"{len(self.min_lrs)} values; set .min_lrs to one per group"
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, floor in zip(groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, floor)
            if old - new > self.eps:
                group["lr"] = new

    def load_state_dict(self, state_dict: dict) -> None:
        state = self._checked_state(state_dict)
        self._init_is_better(state["mode"], state["threshold"], state["threshold_mode"])
        self.__dict__.update(copy.deepcopy(state))
        self._set_lrs(self._last_lr)
