"""Nested containers of arrays ("pytrees"): flatten to a list of leaves and rebuild the same structure.

Containers are lists, tuples (named tuples too) and dicts (in insertion order); ``None`` is an empty
container. Leaves are tensors, arrays, NumPy scalars and Python numbers; anything else is refused by name,
so a typo in an argument fails here and not deep inside a transform.
"""

from __future__ import annotations

import numbers

import numpy as np

from ._tensor import Tensor
from .backend import is_array

LEAF = "*"  # the spec of a leaf; compile/tree.py uses it for its dynamic leaves


def is_leaf(x) -> bool:
    """Whether ``x`` is a leaf: a tensor, an array (of any backend), a NumPy scalar or a Python number (bool
    excluded)."""
    return (
        isinstance(x, (Tensor, np.ndarray, np.generic))
        or (isinstance(x, numbers.Number) and not isinstance(x, bool))
        or (not isinstance(x, (list, tuple, dict)) and x is not None and is_array(x))
    )


def holds_tensor(obj) -> bool:
    """Whether ``obj`` is a tensor or a list or tuple holding one, at any depth: what NumPy would read as an
    array-like, and make a constant of (``np.sum([t0, t1])``).

    >>> holds_tensor([1.0, [Tensor(2.0)]]), holds_tensor([1.0, (2.0,)])
    (True, False)
    """
    return isinstance(obj, Tensor) or (obj.__class__ in (list, tuple) and any(holds_tensor(o) for o in obj))


def tree_flatten(tree, what: str = "argument"):
    """The leaves of ``tree`` in order, and a spec that :func:`tree_unflatten` rebuilds it from.

    >>> leaves, spec = tree_flatten({"a": 1.0, "b": [2.0, (3.0,)]})
    >>> leaves
    [1.0, 2.0, 3.0]
    >>> tree_unflatten(spec, [10, 20, 30])
    {'a': 10, 'b': [20, (30,)]}
    """
    leaves: list = []
    return leaves, _walk(tree, leaves, what)


def tree_unflatten(spec, leaves):
    """Rebuild the structure ``spec`` describes, with ``leaves`` in place of the original leaves."""
    return rebuild(spec, iter(leaves))


# Module-level recursion, not nested closures: a closure that calls itself is a reference cycle, which
# would keep the leaves (tensors, arrays) alive until the garbage collector runs.
def _walk(node, leaves, what):
    if is_leaf(node):
        leaves.append(node)
        return LEAF
    if node is None:
        return None
    if isinstance(node, (list, tuple)):
        return (type(node), None, tuple(_walk(c, leaves, what) for c in node))
    if isinstance(node, dict):
        return (type(node), tuple(node), tuple(_walk(v, leaves, what) for v in node.values()))
    raise TypeError(
        f"{what}: cannot differentiate with respect to a {type(node).__name__}; pass arrays, tensors, "
        "Python numbers, or lists/tuples/dicts of them"
    )


def rebuild(spec, it):
    """The structure ``spec`` describes, its leaves (``LEAF``) taken from the iterator ``it``. A spec that is
    neither a leaf, None nor a container is a static leaf (``tapegrad.compile``'s), which stands for its
    ``value``."""
    if spec is LEAF:
        return next(it)
    if spec is None:
        return None
    if type(spec) is not tuple:
        return spec.value
    kind, keys, children = spec
    values = [rebuild(c, it) for c in children]
    if keys is not None:
        return kind(zip(keys, values))
    if kind is not tuple and issubclass(kind, tuple):
        return kind(*values)  # a named tuple
    return kind(values)
