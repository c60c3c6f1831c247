"""``Module``: the base class of layers and models, which finds its parameters and submodules by attribute.

Any attribute holding a :class:`~tapegrad.Tensor` with ``requires_grad=True`` is a parameter, any attribute
holding a ``Module`` is a submodule, and lists or tuples of either count too (named ``attr.0``, ``attr.1``,
...). Names are dotted paths in attribute order: ``"0.weight"``, ``"encoder.bias"``. *Buffers* are tensors
without a gradient that belong to the model's state (a batch norm's running statistics): a module declares
them with ``register_buffer``. A module's ``state_dict()`` maps those names to copies of the arrays, module by
module (its parameters, its persistent buffers, then ``"<path>._extra_state"`` for other state such as a
dropout layer's random generator), as PyTorch orders them, so a checkpoint restores training exactly.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .._html import STYLE, esc, table
from .._tensor import Tensor
from ..errors import fmt_bytes

__all__ = ["Module"]

EXTRA_STATE = "_extra_state"


def _is_param(value) -> bool:
    return isinstance(value, Tensor) and value.requires_grad


class Module:
    """Base class for layers and models: subclass it, set layers and parameters as attributes, write ``forward``.

    >>> import numpy as np, tapegrad as tg
    >>> class Affine(tg.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.scale = tg.Tensor(np.ones(2), requires_grad=True)
    ...         self.inner = tg.nn.Linear(2, 2, rng=0)
    ...     def forward(self, x):
    ...         return self.inner(x) * self.scale
    >>> [name for name, _ in Affine().named_parameters()]
    ['scale', 'inner.weight', 'inner.bias']
    """

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        self._buffers: dict[str, bool] = {}  # buffer name -> persistent (saved in state_dict)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # -- discovery ------------------------------------------------------------------------------------
    def _members(self) -> Iterator[tuple[str, object]]:
        for name, value in vars(self).items():
            if isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, Module) or _is_param(item):
                        yield f"{name}.{i}", item
            elif isinstance(value, Module) or _is_param(value):
                yield name, value

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The direct submodules, with their attribute names.

        >>> import tapegrad as tg
        >>> [name for name, _ in tg.nn.Sequential(tg.nn.ReLU(), tg.nn.Tanh()).named_children()]
        ['0', '1']
        """
        for name, value in self._members():
            if isinstance(value, Module):
                yield name, value

    def children(self) -> Iterator[Module]:
        """The direct submodules."""
        for _, m in self.named_children():
            yield m

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """This module (named ``prefix``) and every submodule below it, depth first, each once.

        >>> import tapegrad as tg
        >>> model = tg.nn.Sequential(tg.nn.Linear(2, 2), tg.nn.Sequential(tg.nn.ReLU()))
        >>> [(name, type(m).__name__) for name, m in model.named_modules()]
        [('', 'Sequential'), ('0', 'Linear'), ('1', 'Sequential'), ('1.0', 'ReLU')]
        """
        seen: set[int] = set()
        stack = [(prefix, self)]
        while stack:
            name, m = stack.pop()
            if id(m) in seen:
                continue
            seen.add(id(m))
            yield name, m
            kids = [(f"{name}.{n}" if name else n, c) for n, c in m.named_children()]
            stack.extend(reversed(kids))

    def modules(self) -> Iterator[Module]:
        """This module and every submodule below it."""
        for _, m in self.named_modules():
            yield m

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
        """Every parameter (a tensor attribute with ``requires_grad=True``) with its dotted name, each once.

        >>> import tapegrad as tg
        >>> model = tg.nn.Sequential(tg.nn.Linear(3, 2, rng=0), tg.nn.ReLU(), tg.nn.Linear(2, 1, rng=0))
        >>> [(name, p.shape) for name, p in model.named_parameters()]
        [('0.weight', (2, 3)), ('0.bias', (2,)), ('2.weight', (1, 2)), ('2.bias', (1,))]
        """
        seen: set[int] = set()
        for path, m in self.named_modules(prefix):
            for name, value in m._members():
                if isinstance(value, Tensor) and id(value) not in seen:
                    seen.add(id(value))
                    yield (f"{path}.{name}" if path else name), value

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Keep ``tensor`` (no gradient) as the attribute ``name`` and, if ``persistent``, in ``state_dict()``.

        >>> import numpy as np, tapegrad as tg
        >>> class Counter(tg.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.register_buffer("count", tg.Tensor(np.zeros((), np.int64)))
        >>> Counter().state_dict()
        {'count': array(0)}
        """
        if not isinstance(name, str) or not name.isidentifier() or "." in name:
            raise ValueError(f"register_buffer: name must be an identifier without dots, got {name!r}")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: {name} must be a Tensor or None, got {type(tensor).__name__}")
        if tensor is not None and tensor.requires_grad:
            raise ValueError(f"register_buffer: {name} requires a gradient; a parameter is an attribute, not a buffer")
        if name in vars(self) and name not in vars(self).get("_buffers", ()):
            raise KeyError(f"register_buffer: attribute {name!r} already exists")
        setattr(self, name, tensor)
        if "_buffers" not in vars(self):  # a subclass that did not call Module.__init__
            self._buffers = {}
        self._buffers[name] = bool(persistent)

    def named_buffers(self, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
        """Every buffer (registered with ``register_buffer``, not None) with its dotted name.

        >>> import tapegrad as tg
        >>> [name for name, _ in tg.nn.BatchNorm1d(3).named_buffers()]
        ['running_mean', 'running_var', 'num_batches_tracked']
        """
        for path, m in self.named_modules(prefix):
            for name in vars(m).get("_buffers", ()):
                value = getattr(m, name)
                if value is not None:
                    yield (f"{path}.{name}" if path else name), value

    def buffers(self) -> list[Tensor]:
        """Every buffer, in a list."""
        return [b for _, b in self.named_buffers()]

    def parameters(self) -> list[Tensor]:
        """Every parameter, in a list (what an optimizer takes).

        >>> import tapegrad as tg
        >>> sum(p.size for p in tg.nn.Linear(3, 2).parameters())
        8
        """
        return [p for _, p in self.named_parameters()]

    def zero_grad(self) -> None:
        """Set every parameter's ``grad`` to None.

        >>> import numpy as np, tapegrad as tg
        >>> layer = tg.nn.Linear(1, 1); layer.weight.grad = np.ones((1, 1))
        >>> layer.zero_grad(); layer.weight.grad is None
        True
        """
        for p in self.parameters():
            p.grad = None

    # -- modes ----------------------------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode (``mode=True``) or evaluation mode on this module and all below; returns self."""
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self) -> Module:
        """Evaluation mode (dropout off), the same as ``train(False)``; returns self.

        >>> import tapegrad as tg
        >>> model = tg.nn.Sequential(tg.nn.Dropout(0.5)).eval()
        >>> model[0].training
        False
        """
        return self.train(False)

    # -- extra state (random generators and the like) --------------------------------------------------
    def get_extra_state(self):
        """State other than parameters to save in ``state_dict()`` (None: nothing). Override it together with
        ``set_extra_state``; the value may be any nested dict/list of arrays, numbers and strings.

        >>> import tapegrad as tg
        >>> class Counter(tg.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.seen = 0
        ...     def get_extra_state(self):
        ...         return {"seen": self.seen}
        ...     def set_extra_state(self, state):
        ...         self.seen = state["seen"]
        >>> c = Counter(); c.seen = 5
        >>> c.state_dict()
        {'_extra_state': {'seen': 5}}
        """
        return None

    def set_extra_state(self, state) -> None:
        """Restore what ``get_extra_state`` returned (see its example); raise if ``state`` is not valid."""
        raise NotImplementedError(f"{type(self).__name__} saves extra state but cannot restore it")

    # -- checkpoints ----------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """A dict from dotted names to copies of the parameter and persistent buffer arrays (and
        ``<path>._extra_state`` entries), module by module as PyTorch orders them.

        >>> import tapegrad as tg
        >>> sorted(tg.nn.Linear(2, 1, rng=0).state_dict())
        ['bias', 'weight']
        """
        out = {}
        for kind, name, value in self._state_items():
            out[name] = value.get_extra_state() if kind == "extra" else np.array(value.data)
        return out

    def _state_items(self):
        """(kind, name, owner) for everything ``state_dict`` holds: parameters, buffers, extra states."""
        seen: set[int] = set()
        for path, m in self.named_modules():
            dot = f"{path}." if path else ""
            for name, value in m._members():
                if isinstance(value, Tensor) and id(value) not in seen:
                    seen.add(id(value))
                    yield "param", dot + name, value
            for name, persistent in vars(m).get("_buffers", {}).items():
                value = getattr(m, name)
                if persistent and value is not None and id(value) not in seen:
                    seen.add(id(value))
                    yield "buffer", dot + name, value
            if m.get_extra_state() is not None:
                yield "extra", dot + EXTRA_STATE, m

    def load_state_dict(self, state_dict: dict, strict: bool = True) -> None:
        """Copy the arrays of ``state_dict`` into the parameters and buffers (cast to each one's dtype).

        Everything is checked first: missing or unexpected names (``strict=False`` allows both) and shape
        mismatches raise one ``KeyError``/``ValueError`` listing every problem, and nothing is changed.

        >>> import tapegrad as tg
        >>> a, b = tg.nn.Linear(2, 1, rng=0), tg.nn.Linear(2, 1, rng=1)
        >>> b.load_state_dict(a.state_dict()); bool((a.weight.data == b.weight.data).all())
        True
        >>> tg.nn.Linear(3, 1).load_state_dict(a.state_dict())
        Traceback (most recent call last):
        ...
        ValueError: Linear.load_state_dict: weight has shape (1, 2) in the state dict but (1, 3) in the model
        """
        if not isinstance(state_dict, dict):
            raise TypeError(f"load_state_dict expects a dict (from state_dict()), got {type(state_dict).__name__}")
        where = f"{type(self).__name__}.load_state_dict"
        tensors = {name: v for kind, name, v in self._state_items() if kind != "extra"}
        extras = {name: m for kind, name, m in self._state_items() if kind == "extra"}
        missing = [k for k in list(tensors) + list(extras) if k not in state_dict]
        unexpected = [k for k in state_dict if k not in tensors and k not in extras]
        if strict and (missing or unexpected):
            parts = []
            if missing:
                parts.append(f"missing keys {missing}")
            if unexpected:
                parts.append(f"unexpected keys {unexpected}")
            raise KeyError(f"{where}: {' and '.join(parts)}; pass strict=False to load the keys that match")
        updates, problems = [], []
        for name, p in tensors.items():
            if name not in state_dict:
                continue
            value = state_dict[name]
            value = value.data if isinstance(value, Tensor) else np.asarray(value)
            if value.shape != p.shape:
                problems.append(f"{name} has shape {value.shape} in the state dict but {p.shape} in the model")
            elif value.dtype.kind not in "fiu":
                problems.append(f"{name} has dtype {value.dtype} in the state dict, expected real numbers")
            else:
                updates.append((p, np.array(value, dtype=p.dtype)))
        if problems:
            raise ValueError(f"{where}: " + "; ".join(problems))
        # Extra state (a generator's) is validated by restoring it; undo those already set if one fails.
        done = []
        try:
            for key, m in extras.items():
                if key in state_dict:
                    old = m.get_extra_state()
                    m.set_extra_state(state_dict[key])
                    done.append((m, old))
        except Exception as err:
            for m, old in reversed(done):
                m.set_extra_state(old)
            raise ValueError(f"{where}: cannot restore {key}: {err}") from err
        for p, value in updates:
            p.data = value  # a new array: the state dict's arrays are never shared with the model

    # -- attributes and printing -----------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside this module's parentheses when printed."""
        return ""

    def summary_rows(self) -> list[tuple]:
        """A layer summary as torchinfo gives one: per module (this one first, then every submodule, depth
        first), ``(name, depth, type, [(parameter, shape)...], parameters)``, counting each parameter once, in
        the module that holds it (a tensor that needs no gradient is not a parameter: a buffer or a constant).

        >>> import tapegrad as tg
        >>> model = tg.nn.Sequential(tg.nn.Linear(3, 2, rng=0), tg.nn.ReLU())
        >>> for row in model.summary_rows(): print(row)
        ('', 0, 'Sequential', [], 0)
        ('0', 1, 'Linear', [('weight', (2, 3)), ('bias', (2,))], 8)
        ('1', 1, 'ReLU', [], 0)
        """
        own: dict = {}
        for name, p in self.named_parameters():
            path, _, leaf = name.rpartition(".")
            own.setdefault(path, []).append((leaf, p))
        rows = []
        for path, m in self.named_modules():
            params = own.get(path, [])
            n = sum(p.size for _, p in params)
            depth = path.count(".") + 1 if path else 0
            rows.append((path, depth, type(m).__name__, [(k, tuple(p.shape)) for k, p in params], n))
        return rows

    def _repr_html_(self) -> str:
        """What a notebook shows: a layer summary (module, type, parameter shapes, counts) and the totals
        (parameters, their bytes, and the buffers' values, such as running statistics).

        >>> import tapegrad as tg
        >>> html = tg.nn.Sequential(tg.nn.Linear(3, 2, rng=0), tg.nn.ReLU())._repr_html_()
        >>> "<td>8</td>" in html, "Total params: 8" in html
        (True, True)
        """
        rows = self.summary_rows()
        body = [
            [
                "\u00a0\u00a0" * depth + (name or "(model)"),
                kind,
                ", ".join(f"{k} {shape}" for k, shape in params) or "-",
                f"{n:,}",
            ]
            for name, depth, kind, params, n in rows
        ]
        total = sum(r[4] for r in rows)
        size = sum(p.data.nbytes for p in self.parameters())
        buffers = sum(b.size for b in self.buffers())
        foot = f"<div>Total params: {total:,}; Params size: {esc(fmt_bytes(size))}; Buffers: {buffers:,} values</div>"
        head = f"<div><b>{esc(type(self).__name__)}</b></div>"
        return STYLE + head + table(["Layer", "Type", "Parameters", "Param #"], body, left=(0, 1, 2)) + foot

    def __repr__(self) -> str:
        kids = list(self.named_children())
        if not kids:
            return f"{type(self).__name__}({self.extra_repr()})"
        lines = [f"{type(self).__name__}("]
        for name, m in kids:
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return "\n".join(lines) + "\n)"
