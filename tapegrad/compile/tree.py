"""Arguments and results of a compiled function as pytrees: array leaves (traced) and static leaves (part of
the signature), with a hashable spec so that a signature is a dictionary key.

Containers are lists, tuples (named tuples too) and dicts. Arrays of any backend, tensors and NumPy scalars
are *dynamic* leaves: their values change from call to call, their type, shape and dtype do not (they are in
the signature). Everything else (Python numbers, strings, None, any other object) is a *static* leaf, passed
to the function as it is and part of the signature by value (by identity when it cannot be hashed).
"""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from .._tree import LEAF, rebuild
from ..backend import is_array

__all__ = ["DYNAMIC", "Static", "flatten", "unflatten", "is_dynamic"]

DYNAMIC = LEAF  # an array leaf, rebuilt from the call's arrays as the transforms' leaves are


class Static:
    """A static leaf: compared by type and value (by identity if it cannot be hashed)."""

    __slots__ = ("value", "key")

    def __init__(self, value):
        self.value = value
        try:
            hash(value)
            self.key = (type(value), value)
        except TypeError:
            self.key = (type(value), "id", id(value))

    def __eq__(self, other):
        return isinstance(other, Static) and self.key == other.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Static({self.value!r})"


def is_dynamic(x) -> bool:
    """Whether ``x`` is an array leaf: a tensor, a NumPy array or scalar, or another library's array."""
    return isinstance(x, (Tensor, np.ndarray, np.generic)) or (not isinstance(x, (int, float, complex)) and is_array(x))


def flatten(tree):
    """``(dynamic leaves, spec)``: the array leaves in order, and a hashable spec holding the structure and
    the static leaves.

    >>> import numpy as np
    >>> leaves, spec = flatten({"w": np.ones(2), "lr": 0.1})
    >>> len(leaves), unflatten(spec, [np.zeros(2)])["lr"]
    (1, 0.1)
    """
    leaves: list = []
    return leaves, _walk(tree, leaves)


def unflatten(spec, leaves):
    """Rebuild the tree ``spec`` describes, with ``leaves`` for its dynamic leaves."""
    return rebuild(spec, iter(leaves))


def _walk(node, leaves):
    if isinstance(node, (list, tuple)):
        return (type(node), None, tuple(_walk(c, leaves) for c in node))
    if isinstance(node, dict):
        return (type(node), tuple(node), tuple(_walk(v, leaves) for v in node.values()))
    if is_dynamic(node):
        leaves.append(node)
        return DYNAMIC
    return Static(node)
