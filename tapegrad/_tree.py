"""Nested containers of arrays ("pytrees"): flatten to a list of leaves and rebuild the same structure.

Containers are lists, tuples (named tuples too) and dicts (in insertion order). An *array leaf* is a tensor, an
array of any backend or a NumPy scalar (:func:`is_array_leaf`: the one definition, for the transforms and for
``tg.compile`` alike). The two differ in what else a tree may hold:

- the transforms differentiate with respect to numbers too: a Python number (bool excluded) is a leaf, ``None`` an
  empty container, and anything else is refused by name, so a typo in an argument fails here and not deep inside
  a transform (:func:`tree_flatten`);
- ``tg.compile`` traces the array leaves only: everything else (numbers, strings, None, any object) is a
  :class:`Static` leaf, part of the call's signature by value, and the spec is hashable so that a signature can
  be a dictionary key (``tree_flatten(tree, static=True)``).

Both rebuild with :func:`tree_unflatten`.
"""

from __future__ import annotations

import numbers

import numpy as np

from ._tensor import Tensor
from .backend import is_array

__all__ = ["LEAF", "Static", "is_array_leaf", "is_leaf", "tree_flatten", "tree_unflatten"]

LEAF = "*"  # the spec of a leaf (for tg.compile: of an array leaf, traced)


class Static:
    """A static leaf of ``tg.compile``'s trees: compared by type and value (by identity if it cannot be hashed)."""

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


def is_array_leaf(x) -> bool:
    """Whether ``x`` is an array leaf: a tensor, a NumPy array or scalar, or another library's array.

    >>> is_array_leaf(np.ones(2)), is_array_leaf(np.float32(1)), is_array_leaf(1.0), is_array_leaf([np.ones(2)])
    (True, True, False, False)
    """
    return isinstance(x, (Tensor, np.ndarray, np.generic)) or (
        not isinstance(x, (list, tuple, dict, int, float, complex)) and x is not None and is_array(x)
    )


def is_leaf(x) -> bool:
    """Whether ``x`` is a leaf of the transforms' trees: an array leaf or a Python number (bool excluded)."""
    return is_array_leaf(x) or (isinstance(x, numbers.Number) and not isinstance(x, bool))


def tree_flatten(tree, what: str = "argument", *, static: bool = False):
    """The leaves of ``tree`` in order, and a spec that :func:`tree_unflatten` rebuilds it from.

    ``static=False`` (the transforms): numbers are leaves and other objects are refused, naming ``what``.
    ``static=True`` (``tg.compile``): the array leaves only, everything else a :class:`Static` leaf in the spec.

    >>> leaves, spec = tree_flatten({"a": 1.0, "b": [2.0, (3.0,)]})
    >>> leaves
    [1.0, 2.0, 3.0]
    >>> tree_unflatten(spec, [10, 20, 30])
    {'a': 10, 'b': [20, (30,)]}
    >>> leaves, spec = tree_flatten({"w": np.ones(2), "lr": 0.1}, static=True)
    >>> len(leaves), tree_unflatten(spec, [np.zeros(2)])["lr"]
    (1, 0.1)
    """
    leaves: list = []
    return leaves, _walk(tree, leaves, what, static)


def tree_unflatten(spec, leaves):
    """Rebuild the structure ``spec`` describes, with ``leaves`` in place of the original (array) leaves."""
    return _rebuild(spec, iter(leaves))


# Module-level recursion, not nested closures: a closure that calls itself is a reference cycle, which
# would keep the leaves (tensors, arrays) alive until the garbage collector runs.
def _walk(node, leaves, what, static):
    if is_array_leaf(node) or (not static and is_leaf(node)):
        leaves.append(node)
        return LEAF
    if isinstance(node, (list, tuple)):
        return (type(node), None, tuple(_walk(c, leaves, what, static) for c in node))
    if isinstance(node, dict):
        return (type(node), tuple(node), tuple(_walk(v, leaves, what, static) for v in node.values()))
    if static:
        return Static(node)
    if node is None:
        return None
    raise TypeError(
        f"{what}: cannot differentiate with respect to a {type(node).__name__}; pass arrays, tensors, "
        "Python numbers, or lists/tuples/dicts of them"
    )


def _rebuild(spec, it):
    """The structure ``spec`` describes, its leaves (``LEAF``) taken from the iterator ``it``; a static leaf
    stands for its ``value``."""
    if spec is LEAF:
        return next(it)
    if spec is None:
        return None
    if type(spec) is not tuple:
        return spec.value
    kind, keys, children = spec
    values = [_rebuild(c, it) for c in children]
    if keys is not None:
        return kind(zip(keys, values))
    if kind is not tuple and issubclass(kind, tuple):
        return kind(*values)  # a named tuple
    return kind(values)
