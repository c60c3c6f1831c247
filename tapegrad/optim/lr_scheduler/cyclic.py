"""Schedules stepped every batch that cycle the learning rate, and the momentum inversely to it: ``CyclicLR``
(Smith, 2017) and ``OneCycleLR`` (Smith and Topin, 2018), as PyTorch computes them.

Momentum cycling (``cycle_momentum=True``) sets each group's ``momentum`` (SGD, RMSprop) or ``betas[0]``
(the Adam family); the boundaries are kept in the groups as ``max_momentum`` and ``base_momentum``, so the
optimizer's state dict carries them.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable

from ..optimizer import Optimizer
from .base import LRScheduler, check_optimizer, integer_arg, per_group

__all__ = ["CyclicLR", "OneCycleLR"]


def _set_momentum(group: dict, momentum: float, use_beta1: bool) -> None:
    if use_beta1:
        group["betas"] = (momentum, *group["betas"][1:])
    else:
        group["momentum"] = momentum


def _momentum_setup(optimizer: Optimizer, owner: str) -> bool:
    """Whether the optimizer's momentum is ``betas[0]`` (else ``momentum``); an error if it has neither."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError(
            f"{owner}: cycle_momentum=True needs an optimizer with momentum or betas, and "
            f"{type(optimizer).__name__} has neither; pass cycle_momentum=False"
        )
    return "betas" in optimizer.defaults


def _phase(end_step: float, start_lr: str, end_lr: str, start_momentum: str, end_momentum: str) -> dict:
    """One phase of the 1cycle policy: where it ends and which group values it anneals between."""
    return dict(
        end_step=end_step, start_lr=start_lr, end_lr=end_lr, start_momentum=start_momentum, end_momentum=end_momentum
    )


class CyclicLR(LRScheduler):
    """Cycle the learning rate between ``base_lr`` and ``max_lr`` (up in ``step_size_up`` batches, down in
    ``step_size_down``), its amplitude scaled by ``mode``: ``"triangular"`` (constant), ``"triangular2"`` (halved
    each cycle) or ``"exp_range"`` (``gamma ** batch``), or by a custom ``scale_fn``. Call ``step()`` every batch.

    >>> import tapegrad as tg
    >>> opt = tg.optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0, momentum=0.9)
    >>> sched = tg.optim.CyclicLR(opt, base_lr=0.1, max_lr=0.5, step_size_up=2)
    >>> lrs = []
    >>> for batch in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
    >>> lrs, opt.param_groups[0]["momentum"]
    ([0.1, 0.3, 0.5, 0.3, 0.1], 0.9)
    """

    _not_saved = ("optimizer", "_scale_fn_ref", "_scale_fn_custom")

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | list[float],
        max_lr: float | list[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.8,
        max_momentum: float | list[float] = 0.9,
        last_epoch: int = -1,
    ):
        self.optimizer = check_optimizer(optimizer, "CyclicLR")
        base_lrs = per_group("base_lr", optimizer, base_lr, "CyclicLR")
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = per_group("max_lr", optimizer, max_lr, "CyclicLR")
        up = float(integer_arg(step_size_up, "step_size_up", "CyclicLR"))
        down = float(integer_arg(step_size_down, "step_size_down", "CyclicLR")) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(f"CyclicLR: mode must be 'triangular', 'triangular2' or 'exp_range', got {mode!r}")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
        self.mode, self.gamma, self.scale_mode = mode, gamma, scale_mode
        self._scale_fn_custom = scale_fn
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _momentum_setup(optimizer, "CyclicLR")
            self.base_momentums = per_group("base_momentum", optimizer, base_momentum, "CyclicLR")
            self.max_momentums = per_group("max_momentum", optimizer, max_momentum, "CyclicLR")
            if last_epoch == -1:
                for top, bottom, group in zip(self.max_momentums, self.base_momentums, optimizer.param_groups):
                    _set_momentum(group, top, self.use_beta1)
                    group["max_momentum"], group["base_momentum"] = top, bottom
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref, self.scale_mode = (lambda x: 1.0), "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref, self.scale_mode = (lambda x: 1 / (2.0 ** (x - 1))), "cycle"
        else:
            gamma = self.gamma
            self._scale_fn_ref, self.scale_mode = (lambda x: gamma**x), "iterations"

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at cycle (or batch) ``x``."""
        return (self._scale_fn_custom or self._scale_fn_ref)(x)

    def get_lr(self) -> list[float]:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        scale_factor = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [base + (top - base) * scale_factor * self.scale_fn(at) for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, bottom, top in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                _set_momentum(group, top - (top - bottom) * scale_factor * self.scale_fn(at), self.use_beta1)
        return lrs

    def state_dict(self) -> dict:
        state = super().state_dict()
        fn = self._scale_fn_custom  # saved only as a callable object's attributes, as in PyTorch
        state["_scale_fn_custom"] = None if fn is None or isinstance(fn, types.FunctionType) else dict(fn.__dict__)
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state = self._checked_state(state_dict)
        saved = state.pop("_scale_fn_custom")
        if saved is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(saved)
        self.__dict__.update(state)
        self._init_scale_fn()
        self._set_lrs(self._last_lr)


class OneCycleLR(LRScheduler):
    """The 1cycle policy: from ``max_lr / div_factor`` up to ``max_lr`` over the first ``pct_start`` of
    ``total_steps``, then down to ``initial_lr / final_div_factor`` (``three_phase``: back to the initial rate
    first, then down), by cosine or linear annealing; momentum moves the opposite way. Step every batch.

    >>> import tapegrad as tg
    >>> opt = tg.optim.Adam([tg.Tensor([0.0], requires_grad=True)])
    >>> sched = tg.optim.OneCycleLR(opt, max_lr=1.0, total_steps=5, pct_start=0.4, anneal_strategy="linear",
    ...                              final_div_factor=1.0)
    >>> lrs = []
    >>> for batch in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 4)); sched.step()
    >>> lrs
    [0.04, 1.0, 0.68, 0.36, 0.04]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ):
        self.optimizer = check_optimizer(optimizer, "OneCycleLR")
        if total_steps is not None:
            self.total_steps = integer_arg(total_steps, "total_steps", "OneCycleLR")
        elif epochs is not None and steps_per_epoch is not None:
            self.total_steps = integer_arg(epochs, "epochs", "OneCycleLR") * integer_arg(
                steps_per_epoch, "steps_per_epoch", "OneCycleLR"
            )
        else:
            raise ValueError("OneCycleLR: give total_steps, or both epochs and steps_per_epoch")
        if isinstance(pct_start, bool) or not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"OneCycleLR: pct_start must be a float in [0, 1], got {pct_start!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        self._anneal_func_type = anneal_strategy
        n = self.total_steps
        if three_phase:
            self._schedule_phases = [
                _phase(float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(float(2 * pct_start * n) - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                _phase(n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._schedule_phases = [
                _phase(float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        max_lrs = per_group("max_lr", optimizer, max_lr, "OneCycleLR")
        if last_epoch == -1:
            for top, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _momentum_setup(optimizer, "OneCycleLR")
            tops = per_group("max_momentum", optimizer, max_momentum, "OneCycleLR")
            bottoms = per_group("base_momentum", optimizer, base_momentum, "OneCycleLR")
            if last_epoch == -1:
                for top, bottom, group in zip(tops, bottoms, optimizer.param_groups):
                    _set_momentum(group, top, self.use_beta1)
                    group["max_momentum"], group["base_momentum"] = top, bottom
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(
                f"OneCycleLR: stepped {step} times, but total_steps is {self.total_steps}; make total_steps (or "
                "epochs * steps_per_epoch) cover the whole run"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        momentum = self._anneal(group[phase["start_momentum"]], group[phase["end_momentum"]], pct)
                        _set_momentum(group, momentum, self.use_beta1)
                    break
                start = phase["end_step"]
        return lrs
