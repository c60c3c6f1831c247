"""The optimizer base class: parameter groups, hyperparameter checks, per-parameter state, a transactional
``step`` and checked ``state_dict`` / ``load_state_dict``.

An optimizer holds ``param_groups``, a list of dicts, each with its ``"params"`` (a list of tensors) and its
own hyperparameters (``lr`` and the rest), defaulted from the constructor's arguments. ``state`` maps a
parameter to a dict of running values (step counts, moments).

Contract:

- Hyperparameters are checked by one table (``HYPERPARAMETERS``), for the constructor's arguments, for every
  group added and for every group a ``load_state_dict`` brings in: the error names the optimizer, the
  argument and the value.
- A subclass writes its update once, as ``_update(p, g, state, group) -> (new_p, new_state)``: a pure function
  of the parameter's array, its gradient, its state (``_init_state`` before the first step) and its group.
  It receives read-only arrays and returns new ones, so it cannot change anything by mistake.
- ``step()`` computes every parameter's new value and state first and commits them only when all are
  computed and every parameter can be written: a step that fails (a read-only array, a gradient of the wrong
  shape) leaves parameters, step counts and moments as they were.
- Every update reads its gradient through ``_grad`` (one place for the dtype, ``maximize`` and, later,
  complex parameters).
- Committing writes into each parameter's own array and goes through the ``Tensor.data`` setter, which bumps
  the tensor's version: a tape that saved the old value refuses to replay. ``step()`` runs no tapegrad op, so
  nothing it does is recorded, even inside a ``record()`` block.
- ``load_state_dict`` checks everything (structure, group and parameter counts, hyperparameters as the
  constructor does, each parameter's state against what this optimizer keeps: names, kinds and shapes)
  before it changes anything.
- **Functional updates** (for ``tg.compile``): ``functional_state()`` gives every parameter's state as arrays
  (step counts as 0-d integer arrays, so a compiled step does not trace again each step), and
  ``functional_update(params, grads, state, **hyper)`` returns the new parameters and states without changing
  anything, computed by the same ``_update`` (its scalars kept in the parameter's dtype). ``hyper`` overrides
  hyperparameters for this update, e.g. ``lr`` as a 0-d array that a schedule changes between calls.
  ``load_functional_state(state)`` puts such a state back (for ``state_dict()``). RAdam's update branches
  on its step count in Python, so it cannot be traced.
"""

from __future__ import annotations

import copy
import numbers
from collections.abc import Callable, Iterable

import numpy as np

from .._tensor import Tensor
from ..backend import backend_of, is_lazy
from ._math import like as _like
from .hyperparameters import (
    HYPERPARAMETERS,
    SCHEDULE_KEYS,
    checked_array,
    is_flag,
    is_number,
    param_index,
    shown,
)

__all__ = ["Optimizer"]


def _lerp(start: np.ndarray, end: np.ndarray, weight: float) -> np.ndarray:
    """``start + weight * (end - start)``, rounded as PyTorch's ``lerp`` rounds it (running averages use it)."""
    if weight < 0.5:
        return start + weight * (end - start)
    return end - (end - start) * (1 - weight)


def _readonly(value):
    if isinstance(value, np.ndarray):
        view = value.view()
        view.flags.writeable = False
        return view
    if isinstance(value, list):
        return [_readonly(v) for v in value]
    return value


def _copied(value):
    if isinstance(value, np.ndarray):
        return np.array(value)
    if isinstance(value, list):
        return [_copied(v) for v in value]
    return value


class Optimizer:
    """Base class: subclasses pass their ``defaults`` to ``__init__`` and implement ``_init_state`` and
    ``_update`` (see the module docstring).

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
        if isinstance(params, Tensor):
            raise TypeError(f"{type(self).__name__} takes an iterable of Tensors or of dicts, got one Tensor: pass [w]")
        params = list(params)
        if not params:
            raise ValueError(f"{type(self).__name__} got an empty parameter list: pass model.parameters()")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        for group in groups:
            self.add_param_group(group)

    # -- groups and their hyperparameters ---------------------------------------------------------------
    def add_param_group(self, group: dict) -> None:
        """Add a group of parameters with its own hyperparameters (those it leaves out take the defaults).

        >>> import tapegrad as tg
        >>> opt = tg.optim.Adam([tg.Tensor([1.0], requires_grad=True)], lr=0.1)
        >>> opt.add_param_group({"params": [tg.Tensor([2.0], requires_grad=True)], "lr": 0.01})
        >>> [g["lr"] for g in opt.param_groups]
        [0.1, 0.01]
        """
        name = type(self).__name__
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError("a parameter group is a dict with a 'params' list, e.g. {'params': [w], 'lr': 0.01}")
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"{name} optimizes Tensors, got {type(p).__name__}")
            if not p.requires_grad:
                raise ValueError(
                    f"{name}: a parameter of shape {p.shape} has requires_grad=False; create it with requires_grad=True"
                )
            if id(p) in seen:
                raise ValueError(f"{name}: a parameter appears in more than one group")
            seen.add(id(p))
        self.param_groups.append(self._complete_group(group, params, name))

    def _complete_group(self, group: dict, params: list, where: str) -> dict:
        """The group as the optimizer keeps it: the defaults under the group's values, checked."""
        unknown = set(group) - set(self.defaults) - {"params", *SCHEDULE_KEYS}
        if unknown:
            raise TypeError(
                f"{where}: unknown hyperparameter(s) {sorted(unknown)} for {type(self).__name__}, which takes "
                f"{sorted(self.defaults)}"
            )
        full = {**self.defaults, **{k: v for k, v in group.items() if k != "params"}, "params": params}
        self._check_group(full, where)
        return full

    def _check_group(self, group: dict, where: str) -> None:
        """Check every hyperparameter of ``group`` against the table (subclasses add checks across values)."""
        for key, value in group.items():
            if key == "params":
                continue
            must, ok = HYPERPARAMETERS.get(key, ("", lambda v: True))  # a subclass checks its own extras
            if not ok(value):
                raise ValueError(f"{where}: {key} must be {must}, got {shown(value)}")
            if key == "betas":
                group[key] = tuple(value)
            elif is_flag(value):
                group[key] = bool(value)

    # -- stepping -----------------------------------------------------------------------------------------
    def zero_grad(self) -> None:
        """Set every parameter's ``grad`` to None (the next backward writes fresh gradients).

        >>> import numpy as np, tapegrad as tg
        >>> w = tg.Tensor([1.0], requires_grad=True); w.grad = np.ones(1)
        >>> opt = tg.optim.SGD([w], lr=0.1); opt.zero_grad(); w.grad is None
        True
        """
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    def _grad(self, p: Tensor, group: dict) -> np.ndarray:
        """The gradient an update reads: ``p.grad`` as an array of the parameter's dtype and shape, negated
        when the group maximizes. Every update reads its gradient here (complex parameters will too)."""
        g = p.grad.data if isinstance(p.grad, Tensor) else p.grad  # a create_graph gradient updates by value
        if g.__class__ is not np.ndarray and is_lazy(g):  # np.asarray would compute it, one pass per parameter
            raise TypeError(
                f"{type(self).__name__}.step: the gradient of a parameter of shape {p.shape} is a lazy "
                f"{backend_of(g).name} array; call tg.compute(loss, *params) after backward() to compute the loss "
                "and every gradient in one pass, then step"
            )
        g = np.asarray(g, dtype=p.dtype)
        if g.shape != p.shape:
            raise ValueError(
                f"{type(self).__name__}.step: a parameter of shape {p.shape} has a gradient of shape {g.shape}"
            )
        return -g if group.get("maximize", False) else g

    @staticmethod
    def _weight_decay(p: np.ndarray, g: np.ndarray, group: dict) -> tuple[np.ndarray, np.ndarray]:
        """Weight decay as PyTorch applies it: ``g + weight_decay * p`` (L2), or with ``decoupled_weight_decay``
        the parameter shrunk first, ``p * (1 - lr * weight_decay)``. Returns the new ``(p, g)``."""
        wd = group["weight_decay"]
        if wd == 0:
            return p, g
        if group.get("decoupled_weight_decay", False):
            return p * _like(1 - group["lr"] * wd, p), g
        return p, g + wd * p

    def step(self, closure: Callable | None = None):
        """Update every parameter that has a gradient; parameters whose grad is None are skipped.

        ``closure``, if given, is called first (it re-evaluates the loss and its gradients) and its loss is
        returned. All new values and states are computed before any is written, so a step that raises
        changes nothing.

        >>> import numpy as np, tapegrad as tg
        >>> w = tg.Tensor([1.0, 2.0], requires_grad=True)
        >>> opt = tg.optim.SGD([w], lr=0.5)
        >>> w.grad = np.array([1.0, -1.0]); opt.step(); w.data
        array([0.5, 2.5])
        """
        loss = closure() if closure is not None else None
        updates = []
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = self._grad(p, group)
                state = self.state.get(id(p)) or self._init_state(p.data, group)
                state = {k: _readonly(v) for k, v in state.items()}
                value, new_state = self._update(_readonly(p.data), _readonly(g), state, group)
                updates.append((p, value, new_state))
        self._commit(updates)
        return loss

    def _commit(self, updates: list) -> None:
        name = type(self).__name__
        for p, value, _ in updates:
            if not p.data.flags.writeable:
                raise ValueError(
                    f"{name}.step: a parameter of shape {p.shape} has a read-only array; nothing was updated "
                    "(make it writeable, or give the optimizer a copy)"
                )
            if np.shape(value) != p.shape:
                raise ValueError(f"{name}.step: the update of a {p.shape} parameter has shape {np.shape(value)}")
        for p, value, new_state in updates:
            data = p.data
            np.copyto(data, value)
            p.data = data  # the setter bumps the version: tapes that saved the old value refuse to replay
            self.state[id(p)] = new_state

    def _init_state(self, p: np.ndarray, group: dict) -> dict:
        """The state a parameter starts with (zeros, counts at 0; None for a buffer made on the first step)."""
        return {}

    def _update(self, p: np.ndarray, g: np.ndarray, state: dict, group: dict) -> tuple[np.ndarray, dict]:
        """The parameter's new value and state from its value ``p``, gradient ``g``, ``state`` and ``group``."""
        raise NotImplementedError

    # -- functional updates (tg.compile) ---------------------------------------------------------------
    def functional_state(self) -> list:
        """Per parameter, in order, its state as arrays (a fresh one where it has none yet); step counts as 0-d
        int64 arrays, so that a compiled step takes them as values, not as part of its signature.

        >>> import numpy as np, tapegrad as tg
        >>> opt = tg.optim.Adam([tg.Tensor([1.0], requires_grad=True)])
        >>> sorted(opt.functional_state()[0])
        ['exp_avg', 'exp_avg_sq', 'step']
        """
        out = []
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state.get(id(p)) or self._init_state(p.data, group)
                out.append(
                    {k: np.array(v, dtype=np.int64) if isinstance(v, int) else _copied(v) for k, v in state.items()}
                )
        return out

    def functional_update(self, params, grads, state, **hyper):
        """``(new params, new state)`` from ``params`` and ``grads`` (sequences, or dicts in the order of this
        optimizer's parameters, of arrays or tensors) and ``state`` (from :meth:`functional_state`); nothing is
        changed. ``hyper`` overrides hyperparameters of every group (``lr=...``). Inside ``tg.compile`` every
        argument is a traced tensor, and this is the optimizer's step of the compiled program.

        >>> import numpy as np, tapegrad as tg
        >>> opt = tg.optim.SGD([tg.Tensor([1.0], requires_grad=True)], lr=0.5)
        >>> new, state = opt.functional_update([np.array([1.0])], [np.array([1.0])], opt.functional_state())
        >>> new
        [array([0.5])]
        """
        keys = list(params) if isinstance(params, dict) else None
        ps = list(params.values()) if keys is not None else list(params)
        gs = list(grads.values()) if isinstance(grads, dict) else list(grads)
        mine = [(p, group) for group in self.param_groups for p in group["params"]]
        name = type(self).__name__
        if not (len(ps) == len(gs) == len(state) == len(mine)):
            raise ValueError(
                f"{name}.functional_update: {len(ps)} parameters, {len(gs)} gradients and {len(state)} states for "
                f"an optimizer of {len(mine)} parameters (pass them in the order the optimizer holds them)"
            )
        unknown = set(hyper) - set(self.defaults)
        if unknown:
            raise TypeError(f"{name}.functional_update: unknown hyperparameter(s) {sorted(unknown)}")
        new_ps, new_states = [], []
        for p, g, s, (mp, group) in zip(ps, gs, state, mine):
            if tuple(p.shape) != mp.shape:
                raise ValueError(f"{name}.functional_update: a parameter of shape {mp.shape} got one of {p.shape}")
            g = -g if group.get("maximize", False) else g
            full = {**group, **hyper}
            value, new = self._update(p, g, dict(s), full)
            new_ps.append(value)
            new_states.append(new)
        return (dict(zip(keys, new_ps)) if keys is not None else new_ps), new_states

    def load_functional_state(self, state) -> None:
        """Make ``state`` (as :meth:`functional_update` returns it) this optimizer's own, for ``state_dict()``
        and eager steps; 0-d integer arrays become counts again."""
        params = self._params()
        if len(state) != len(params):
            raise ValueError(
                f"{type(self).__name__}.load_functional_state: {len(state)} states for {len(params)} parameters"
            )
        for p, s in zip(params, state):
            self.state[id(p)] = {
                k: int(v) if isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "iu" else _copied(v)
                for k, v in s.items()
            }

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
        state = {index[key]: {k: _copied(v) for k, v in s.items()} for key, s in self.state.items() if key in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore hyperparameters and running state saved by ``state_dict()``.

        Everything is checked first, as the constructor checks its arguments: the structure, the number of
        groups and of parameters in each, every hyperparameter, and each parameter's state (the entries this
        optimizer keeps, their kinds and shapes). On any problem it raises ``ValueError`` naming it and changes
        nothing. Arrays are copied, in each parameter's dtype.

        >>> import numpy as np, tapegrad as tg
        >>> w = tg.Tensor([1.0], requires_grad=True)
        >>> sgd = tg.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> w.grad = np.ones(1); sgd.step()
        >>> try:
        ...     tg.optim.Adam([w]).load_state_dict(sgd.state_dict())
        ... except ValueError as err:
        ...     print(err)
        Adam.load_state_dict: group 0: unknown hyperparameter(s) ['dampening', 'momentum', 'nesterov'] for Adam, ...
        """
        where = f"{type(self).__name__}.load_state_dict"
        try:
            groups, saved_state = state_dict["param_groups"], state_dict["state"]
        except (KeyError, TypeError, IndexError):
            raise ValueError(f"{where}: expected a dict with 'state' and 'param_groups'") from None
        if not isinstance(groups, (list, tuple)) or not isinstance(saved_state, dict):
            raise ValueError(f"{where}: 'param_groups' must be a list and 'state' a dict")
        if len(groups) != len(self.param_groups):
            raise ValueError(
                f"{where}: the state has {len(groups)} parameter group(s), this optimizer has {len(self.param_groups)}"
            )
        by_index: dict[int, Tensor] = {}
        new_groups = []
        for i, (saved, mine) in enumerate(zip(groups, self.param_groups)):
            if not isinstance(saved, dict) or not isinstance(saved.get("params"), (list, tuple)):
                raise ValueError(f"{where}: group {i} is not a dict with a 'params' list")
            if len(saved["params"]) != len(mine["params"]):
                raise ValueError(
                    f"{where}: group {i} has {len(saved['params'])} parameter(s) in the state and "
                    f"{len(mine['params'])} here"
                )
            for key, p in zip(saved["params"], mine["params"]):
                k = param_index(key, where)
                if k in by_index:
                    raise ValueError(f"{where}: parameter {k} is listed twice")
                by_index[k] = p
            hyper = {k: copy.deepcopy(v) for k, v in saved.items() if k != "params"}
            try:
                new_groups.append(self._complete_group(hyper, mine["params"], f"{where}: group {i}"))
            except TypeError as err:  # a bad value in a state dict is a bad value, whatever its type
                raise ValueError(str(err)) from None
        group_of = {id(p): g for g in new_groups for p in g["params"]}
        new_state = {}
        for key, saved in saved_state.items():
            k = param_index(key, where)
            if k not in by_index:
                raise ValueError(f"{where}: the state has an entry for parameter {k}, which no group lists")
            if not isinstance(saved, dict):
                raise ValueError(f"{where}: the state of parameter {k} is not a dict")
            p = by_index[k]
            if saved:
                new_state[id(p)] = self._load_param_state(p, group_of[id(p)], saved, f"{where}: parameter {k}")
        for mine, new in zip(self.param_groups, new_groups):
            mine.clear()
            mine.update(new)
        self.state = new_state

    def _load_param_state(self, p: Tensor, group: dict, saved: dict, where: str) -> dict:
        """A saved parameter state, checked against the one ``_init_state`` makes: the same entries; arrays of
        the same shape (copied in the parameter's dtype); counts as integers >= 0; numbers as numbers; an
        entry that starts as None (a buffer made on the first step) is None or an array of the parameter's shape."""
        template = self._init_state(p.data, group)
        missing, extra = sorted(set(template) - set(saved)), sorted(set(saved) - set(template))
        if missing or extra:
            raise ValueError(
                f"{where}: the state "
                + (f"lacks {missing}" if missing else "")
                + (" and " if missing and extra else "")
                + (f"has {extra}, which {type(self).__name__} does not keep" if extra else "")
                + f" (with these hyperparameters it keeps {sorted(template)})"
            )
        out = {}
        for key, start in template.items():
            value = saved[key]
            if isinstance(start, np.ndarray) or (start is None and value is not None):
                shape = p.shape if start is None else start.shape
                out[key] = checked_array(value, shape, p.dtype, f"{where}: '{key}'")
            elif start is None:
                out[key] = None
            elif isinstance(start, int):
                if not (isinstance(value, numbers.Integral) and not is_flag(value) and value >= 0):
                    raise ValueError(f"{where}: '{key}' must be an integer count >= 0, got {shown(value)}")
                out[key] = int(value)
            else:
                if not is_number(value):
                    raise ValueError(f"{where}: '{key}' must be a number, got {shown(value)}")
                out[key] = float(value)
        return out

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(
                f"  group {i}: {len(group['params'])} params, "
                + ", ".join(f"{k}={v}" for k, v in group.items() if k != "params")
            )
        return "\n".join(lines) + "\n)"
