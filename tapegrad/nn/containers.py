"""Containers: ``ModuleList`` and ``ModuleDict``, which hold submodules by position or by name.

Their modules are found like any attribute's (``named_parameters``, ``state_dict``, ``train``/``eval``), named
``"0"``, ``"1"``, ... or by their keys, as PyTorch names them, so weights copy between the two libraries.
Neither has a ``forward``: iterate over them in yours.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from .module import Module

__all__ = ["ModuleList", "ModuleDict"]


def _module(m, where):
    if not isinstance(m, Module):
        raise TypeError(f"{where}: expected a Module, got {type(m).__name__}")
    return m


class ModuleList(Module):
    """A list of modules: ``append``, ``extend``, ``insert``, indexing (also by slice), ``len`` and iteration.

    >>> import tapegrad as tg
    >>> layers = tg.nn.ModuleList([tg.nn.Linear(4, 4, rng=i) for i in range(3)])
    >>> _ = layers.append(tg.nn.ReLU())
    >>> len(layers), [name for name, _ in layers.named_parameters()][:2]
    (4, ['0.weight', '0.bias'])
    """

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        self._items: list[Module] = []
        if modules is not None:
            self.extend(modules)

    def _members(self):
        yield from ((str(i), m) for i, m in enumerate(self._items))
        yield from ((n, v) for n, v in super()._members() if not n.startswith("_items."))

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward(): iterate over its modules in your own forward()")

    def append(self, module: Module) -> ModuleList:
        self._items.append(_module(module, "ModuleList.append"))
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        self._items.insert(index, _module(module, "ModuleList.insert"))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ModuleList(self._items[index])
        return self._items[self._index(index)]

    def __setitem__(self, index: int, module: Module) -> None:
        self._items[self._index(index)] = _module(module, "ModuleList")

    def __delitem__(self, index) -> None:
        del self._items[index if isinstance(index, slice) else self._index(index)]

    def _index(self, index: int) -> int:
        n = len(self._items)
        if not -n <= index < n:
            raise IndexError(f"ModuleList index {index} out of range for {n} modules")
        return index % n

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._items))

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)


class ModuleDict(Module):
    """An ordered dict of modules with string keys (no dots): indexing, ``in``, ``keys``/``values``/``items``,
    ``update``, ``pop``; names in ``state_dict`` are ``"<key>.<param>"``.

    >>> import tapegrad as tg
    >>> heads = tg.nn.ModuleDict({"cls": tg.nn.Linear(4, 3, rng=0), "box": tg.nn.Linear(4, 2, rng=1)})
    >>> list(heads), sorted(heads.state_dict())[:2]
    (['cls', 'box'], ['box.bias', 'box.weight'])
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None):
        super().__init__()
        self._items: dict[str, Module] = {}
        if modules is not None:
            self.update(modules)

    def _members(self):
        yield from self._items.items()
        yield from super()._members()

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward(): pick its modules by key in your own forward()")

    def __setitem__(self, key: str, module: Module) -> None:
        if not isinstance(key, str) or not key or "." in key:
            raise KeyError(f"ModuleDict keys are non-empty strings without dots, got {key!r}")
        self._items[key] = _module(module, f"ModuleDict[{key!r}]")

    def __getitem__(self, key: str) -> Module:
        try:
            return self._items[key]
        except KeyError:
            raise KeyError(f"ModuleDict has no key {key!r}; its keys are {list(self._items)}") from None

    def __delitem__(self, key: str) -> None:
        self.pop(key)

    def __contains__(self, key) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))

    def keys(self):
        return self._items.keys()

    def values(self):
        return self._items.values()

    def items(self):
        return self._items.items()

    def pop(self, key: str) -> Module:
        module = self[key]
        del self._items[key]
        return module

    def clear(self) -> None:
        self._items.clear()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for key, module in pairs:
            self[key] = module
