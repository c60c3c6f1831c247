"""The learning-rate scheduler base class, with PyTorch's semantics.

A scheduler remembers each group's starting ``lr`` (as ``initial_lr`` in the group, and in ``base_lrs``) and
on each ``step()`` (after ``optimizer.step()``) sets every group's ``lr``. Building one takes the first step
at once (epoch 0). Schedules are *chainable*, as PyTorch's are: most compute the next rate from the group's
current ``lr`` (``get_lr``), so two schedules on one optimizer compose (``ChainedScheduler``); those with a
closed form also give it (``_closed_form_lr``), which ``SequentialLR`` uses when it hands over.

``state_dict()`` holds everything but the optimizer (functions given as lambdas are not saved, as in
PyTorch); ``load_state_dict()`` checks that the state is one this scheduler wrote, restores it and sets each
group's ``lr`` to the rate the scheduler last set, so a resumed run continues exactly.
"""

from __future__ import annotations

import copy

from ..optimizer import Optimizer

__all__ = ["LRScheduler"]


def check_optimizer(optimizer, name: str) -> Optimizer:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{name} needs a tapegrad Optimizer, got {type(optimizer).__name__}")
    return optimizer


def per_group(name: str, optimizer: Optimizer, value, owner: str) -> list:
    """``value`` for each parameter group: a list of one per group, or one value for all."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{owner}: {name} has {len(value)} value(s) for {n} parameter group(s)")
        return list(value)
    return [value] * n


def integer_arg(value, name: str, owner: str, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{owner}: {name} must be an integer >= {least}, got {value!r}")
    return value


class LRScheduler:
    """Base class: subclasses give ``get_lr()``, the learning rate of each group after ``last_epoch`` advanced.

    >>> import tapegrad as tg
    >>> class Halve(tg.optim.LRScheduler):
    ...     def get_lr(self):
    ...         return [base / 2**self.last_epoch for base in self.base_lrs]
    >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    >>> sched = Halve(opt); sched.step(); sched.step(); sched.get_last_lr()
    [0.25]
    """

    _is_initial = False  # True only during the first step, which the constructor takes
    _not_saved: tuple = ("optimizer",)

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        self.optimizer = check_optimizer(optimizer, type(self).__name__)
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(
                    f"{type(self).__name__}: last_epoch={last_epoch} resumes a schedule and needs 'initial_lr' in "
                    f"param_groups[{i}]: load the optimizer's state first"
                )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            del self._is_initial  # back to the class's False; not part of the state

    def get_lr(self) -> list[float]:
        """The learning rate of each group at ``last_epoch`` (called by ``step``)."""
        raise NotImplementedError

    def _closed_form_lr(self) -> list[float]:
        """The learning rates at ``last_epoch`` from ``base_lrs`` alone (the chainable ``get_lr`` by default)."""
        return self.get_lr()

    def step(self) -> None:
        """Advance one epoch (or batch, for the cyclic schedules) and set each group's ``lr``."""
        self._step_count += 1
        self._update_lr()

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            values = self._closed_form_lr()
        self._set_lrs(values)

    def _set_lrs(self, values: list) -> None:
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The learning rate of each group, as this scheduler last set it.

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=0.5)
        >>> tg.optim.ExponentialLR(opt, gamma=0.5).get_last_lr()
        [0.5]
        """
        return list(self._last_lr)

    def state_dict(self) -> dict:
        """Everything but the optimizer (which has its own state dict), as plain data ``tapegrad.save`` stores.

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
        >>> tg.optim.StepLR(opt, step_size=5).state_dict()
        {'step_size': 5, 'gamma': 0.1, 'base_lrs': [1.0], 'last_epoch': 0, '_step_count': 1, '_last_lr': [1.0]}
        """
        return {k: copy.deepcopy(v) for k, v in self.__dict__.items() if k not in self._not_saved}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a state saved by ``state_dict()`` of the same kind of scheduler, and set each group's
        ``lr`` to the rate the scheduler had last set. Raises ``ValueError`` (changing nothing) for a state
        that another kind of scheduler wrote or that has a rate for a different number of groups.

        >>> import tapegrad as tg
        >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
        >>> sched = tg.optim.StepLR(opt, step_size=1, gamma=0.5); sched.step(); sched.step()
        >>> fresh = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
        >>> resumed = tg.optim.StepLR(fresh, step_size=1, gamma=0.5); resumed.load_state_dict(sched.state_dict())
        >>> fresh.param_groups[0]["lr"], resumed.last_epoch
        (0.25, 2)
        """
        state = self._checked_state(state_dict)
        self.__dict__.update(state)
        self._set_lrs(self._last_lr)

    def _checked_state(self, state_dict) -> dict:
        name = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, dict):
            raise ValueError(f"{name}: expected a dict, got {type(state_dict).__name__}")
        mine = set(self.state_dict())
        missing, extra = sorted(mine - set(state_dict)), sorted(set(state_dict) - mine)
        if missing or extra:
            raise ValueError(
                f"{name}: the state lacks {missing} and has {extra}: was it saved by another kind of scheduler?"
            )
        last = state_dict["_last_lr"]
        if not isinstance(last, (list, tuple)) or len(last) != len(self.optimizer.param_groups):
            raise ValueError(
                f"{name}: the state has learning rates for {len(last) if isinstance(last, (list, tuple)) else '?'} "
                f"group(s), the optimizer has {len(self.optimizer.param_groups)}"
            )
        return copy.deepcopy(state_dict)
