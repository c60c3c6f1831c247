"""What a parameter group and a saved optimizer state may hold: one table of hyperparameters for every
optimizer (so a name means one thing everywhere), and the checks ``load_state_dict`` applies to saved values.

Each entry of ``HYPERPARAMETERS`` is ``name -> (what it must be, check)``; an error names the optimizer, the
argument and the value ("Adam: lr must be a number >= 0, got -1").
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

import numpy as np

from .._tensor import Tensor

__all__ = ["HYPERPARAMETERS", "SCHEDULE_KEYS"]

# Values that learning-rate schedules keep in a parameter group beside its hyperparameters.
SCHEDULE_KEYS = ("initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum")


def is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def _nonnegative(v) -> bool:
    return is_number(v) and v >= 0  # False for NaN


def _unit(v) -> bool:
    return is_number(v) and 0 <= v <= 1


def _betas(v) -> bool:
    return isinstance(v, (tuple, list)) and len(v) == 2 and all(is_number(b) and 0 <= b < 1 for b in v)


def is_flag(v) -> bool:
    return isinstance(v, (bool, np.bool_))


def _positive_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not is_flag(v) and v >= 1


HYPERPARAMETERS: dict[str, tuple[str, Callable]] = {
    "lr": ("a number >= 0", _nonnegative),
    "momentum": ("a number >= 0", _nonnegative),
    "dampening": ("a number", is_number),
    "weight_decay": ("a number >= 0", _nonnegative),
    "eps": ("a number >= 0", _nonnegative),
    "betas": ("two numbers in [0, 1)", _betas),
    "alpha": ("a number in [0, 1]", _unit),
    "rho": ("a number in [0, 1]", _unit),
    "lr_decay": ("a number >= 0", _nonnegative),
    "initial_accumulator_value": ("a number >= 0", _nonnegative),
    "momentum_decay": ("a number >= 0", _nonnegative),
    "max_iter": ("an integer >= 1", _positive_int),
    "max_eval": ("an integer >= 1", _positive_int),
    "history_size": ("an integer >= 1", _positive_int),
    "tolerance_grad": ("a number >= 0", _nonnegative),
    "tolerance_change": ("a number >= 0", _nonnegative),
    "line_search_fn": ("None or 'strong_wolfe'", lambda v: v is None or v == "strong_wolfe"),
    "nesterov": ("True or False", is_flag),
    "amsgrad": ("True or False", is_flag),
    "centered": ("True or False", is_flag),
    "maximize": ("True or False", is_flag),
    "decoupled_weight_decay": ("True or False", is_flag),
    "initial_lr": ("a number >= 0", _nonnegative),
    "max_lr": ("a number >= 0", _nonnegative),
    "min_lr": ("a number >= 0", _nonnegative),
    "max_momentum": ("a number", is_number),
    "base_momentum": ("a number", is_number),
}


def shown(value) -> str:
    plain = is_number(value) or value is None or isinstance(value, tuple)
    return repr(value) if plain else f"{value!r} (a {type(value).__name__})"


def param_index(key, where: str) -> int:
    if isinstance(key, numbers.Integral) and not is_flag(key):
        return int(key)
    raise ValueError(f"{where}: parameters are named by their integer position, got {key!r}")


def checked_array(value, shape: tuple, dtype, where: str) -> np.ndarray:
    """A copy of ``value`` as a numeric array of ``shape`` and ``dtype``, or a ValueError saying what is wrong."""
    arr = np.asarray(value) if not isinstance(value, Tensor) else np.asarray(value.data)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{where} must be a numeric array, got dtype {arr.dtype}")
    if arr.shape != tuple(shape):
        raise ValueError(f"{where} has shape {arr.shape}, expected shape {tuple(shape)}")
    return np.array(arr, dtype=dtype)
