"""The optimizer base class: parameter groups, per-parameter state, ``zero_grad`` and ``state_dict``.

An optimizer holds ``param_groups``, a list of dicts, each with its ``"params"`` (a list of tensors) and its
own hyperparameters (``lr`` and the rest), defaulted from the constructor's arguments. ``state`` maps a
parameter to a dict of running arrays (momentum, moments, step counts).

Updates happen in place on each parameter's array and go through the ``Tensor.data`` setter, which bumps the
tensor's version: a tape that saved the old value refuses to replay instead of computing a wrong gradient.
``step()`` never runs tapegrad ops, so nothing it does is recorded, even inside a ``record()`` block.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

import numpy as np

from ..tensor import Tensor

__all__ = ["Optimizer"]


class Optimizer:
    """Base class: subclasses pass their ``defaults`` to ``__init__`` and implement ``_update(p, g, state, group)``,
    which changes the array ``p`` in place.

    ``params`` is an iterable of tensors, or of dicts ``{"params": [...], "lr": ..., ...}`` (parameter
    groups, each overriding the defaults it names).

    >>> import tapegrad as tg
    >>> w, b = tg.Tensor([1.0], requires_grad=True), tg.Tensor([0.0], requires_grad=True)
    >>> opt = tg.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.01}], lr=0.1)
    >>> [g["lr"] for g in opt.param_groups]
    [0.1, 0.01]
    """

    def __init__(self, params: Iterable, defaults: dict):
        self.defaults = dict(defaults)
        self.state: dict = {}  # id(param) -> dict; ids are stable because the groups hold the params
        self.param_groups: list[dict] = []
        params = list(params)
        if not params:
            raise ValueError(f"{type(self).__name__} got an empty parameter list: pass model.parameters()")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group: dict) -> None:
        """Add a group of parameters with its own hyperparameters (those it leaves out take the defaults)."""
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError("a parameter group is a dict with a 'params' list, e.g. {'params': [w], 'lr': 0.01}")
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"{type(self).__name__} optimizes Tensors, got {type(p).__name__}")
            if not p.requires_grad:
                raise ValueError(
                    f"{type(self).__name__}: a parameter of shape {p.shape} has requires_grad=False; "
                    "create it with requires_grad=True"
                )
            if id(p) in seen:
                raise ValueError(f"{type(self).__name__}: a parameter appears in more than one group")
            seen.add(id(p))
        unknown = set(group) - set(self.defaults) - {"params", "initial_lr"}
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown hyperparameter(s) {sorted(unknown)}")
        full = {**self.defaults, **group, "params": params}
        self._check_group(full)
        self.param_groups.append(full)

    def _check_group(self, group: dict) -> None:
        if group["lr"] < 0:
            raise ValueError(f"{type(self).__name__}: invalid learning rate {group['lr']} (must be >= 0)")

    def zero_grad(self) -> None:
        """Set every parameter's ``grad`` to None (the next backward writes fresh gradients)."""
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    def step(self) -> None:
        """Update every parameter that has a gradient, in place; parameters whose grad is None are skipped."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = np.asarray(p.grad)  # a tensor gradient (create_graph=True) updates by its value
                state = self.state.setdefault(id(p), {})
                data = p.data
                self._update(data, g, state, group)
                p.data = data  # the setter bumps the version: tapes that saved the old value refuse to replay

    def _update(self, p: np.ndarray, g: np.ndarray, state: dict, group: dict) -> None:
        """Change ``p`` in place from its gradient ``g``, the parameter's ``state`` and its ``group``."""
        raise NotImplementedError

    # -- checkpoints ------------------------------------------------------------------------------------
    def _params(self) -> list:
        return [p for group in self.param_groups for p in group["params"]]

    def state_dict(self) -> dict:
        """The optimizer's state as plain data: ``{"state": {index: {...}}, "param_groups": [...]}``.

        Parameters are named by their position across the groups (as PyTorch does); arrays are copies.

        >>> import tapegrad as tg
        >>> w = tg.Tensor([1.0], requires_grad=True)
        >>> tg.optim.SGD([w], lr=0.1, momentum=0.9).state_dict()["param_groups"][0]["params"]
        [0]
        """
        index = {id(p): i for i, p in enumerate(self._params())}
        groups = []
        for group in self.param_groups:
            g = {k: copy.deepcopy(v) for k, v in group.items() if k != "params"}
            g["params"] = [index[id(p)] for p in group["params"]]
            groups.append(g)
        state = {
            index[key]: {k: np.array(v) if isinstance(v, np.ndarray) else v for k, v in s.items()}
            for key, s in self.state.items()
            if key in index
        }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore hyperparameters and running state saved by ``state_dict()``; checks everything first.

        Raises ``ValueError`` (and changes nothing) when the groups, parameter counts or array shapes differ.
        """
        name = type(self).__name__
        try:
            groups, saved_state = state_dict["param_groups"], state_dict["state"]
        except (KeyError, TypeError):
            raise ValueError(f"{name}.load_state_dict: expected a dict with 'state' and 'param_groups'") from None
        if len(groups) != len(self.param_groups):
            raise ValueError(
                f"{name}.load_state_dict: the state has {len(groups)} parameter group(s), this optimizer has "
                f"{len(self.param_groups)}"
            )
        params = self._params()
        for i, (saved, mine) in enumerate(zip(groups, self.param_groups)):
            if len(saved["params"]) != len(mine["params"]):
                raise ValueError(
                    f"{name}.load_state_dict: group {i} has {len(saved['params'])} parameter(s) in the state and "
                    f"{len(mine['params'])} here"
                )
        new_state = {}
        for key, s in saved_state.items():
            idx = int(key)
            if not 0 <= idx < len(params):
                raise ValueError(f"{name}.load_state_dict: state for parameter {idx}, but there are {len(params)}")
            p = params[idx]
            entry = {}
            for k, v in s.items():
                if isinstance(v, np.ndarray) and v.ndim and v.shape != p.shape:
                    raise ValueError(
                        f"{name}.load_state_dict: state '{k}' of parameter {idx} has shape {v.shape}, "
                        f"the parameter has shape {p.shape}"
                    )
                entry[k] = np.array(v, dtype=p.dtype) if isinstance(v, np.ndarray) and v.ndim else v
            new_state[id(p)] = entry
        for saved, mine in zip(groups, self.param_groups):
            mine.update({k: copy.deepcopy(v) for k, v in saved.items() if k != "params"})
        self.state = new_state

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(
                f"  group {i}: {len(group['params'])} params, "
                + ", ".join(f"{k}={v}" for k, v in group.items() if k != "params")
            )
        return "\n".join(lines) + "\n)"
