"""The program's vocabulary: values (numbered slots), constants, and nodes (one backend call each).

A traced function becomes a :class:`Graph`: its inputs (one :class:`Value` per array argument), a list of
:class:`Node` in execution order, and its outputs (values, constants or static Python objects). A node's
arguments and parameters refer to values by object, and to everything else as a :class:`Const` (an array or
object the program holds) or as a plain Python literal written into the source. Nothing here holds an array
of the traced call: values know their shape and dtype only.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Value", "Const", "Node", "Graph", "walk", "substitute"]


class Value:
    """One slot of the program: an input or the output of a node, with its shape, dtype and array type."""

    __slots__ = ("index", "shape", "dtype", "kind", "node", "input_index", "nbytes", "strides")

    def __init__(self, index, shape, dtype, kind, node=None, input_index=None, nbytes=0, strides=None):
        self.index = index
        self.shape = tuple(shape)
        self.dtype = dtype
        self.kind = kind  # the array type: np.ndarray, or another library's
        self.node = node
        self.input_index = input_index
        self.nbytes = nbytes
        self.strides = strides  # NumPy's layout when traced: a planned buffer must have the same (a reduction's
        # order of summation, so its rounding, follows the layout)

    @property
    def c_contiguous(self) -> bool:
        """Whether the traced value was laid out as a new C-ordered array is (what planned buffers are)."""
        if self.strides is None:
            return False
        expected, step = [], self.dtype.itemsize
        for n in reversed(self.shape):
            expected.append(step)
            step *= n
        return all(n == 1 or s == e for n, s, e in zip(self.shape, self.strides, reversed(expected)))

    @property
    def numpy(self) -> bool:
        return self.kind is np.ndarray

    def describe(self) -> str:
        dtype = getattr(self.dtype, "name", str(self.dtype))
        return f"{dtype}{list(self.shape)}"

    def __repr__(self) -> str:
        return f"<v{self.index} {self.describe()}>"


class Const:
    """An object the program holds and its source refers to by name: an array read from outside the function,
    a value computed at trace time from constants only (constant folding), a dtype, a random generator."""

    __slots__ = ("value", "name")

    def __init__(self, value):
        self.value = value
        self.name = None

    def __repr__(self) -> str:
        return f"<const {type(self.value).__name__}>"


class Node:
    """One backend call: ``out = fn(*args, **params)``, with where it came from.

    ``line`` is ``(filename, lineno)`` of the user's code that called the op; ``grad_of`` the forward node
    whose rule this op belongs to (None for the forward pass); ``random`` marks a draw (never removed or moved
    across another draw).
    """

    __slots__ = ("op", "name", "fn", "args", "params", "out", "line", "grad_of", "random", "order", "meta")

    def __init__(self, op, name, fn, args, params, out, line=None, grad_of=None, random=False):
        self.op = op
        self.name = name
        self.fn = fn
        self.args = args
        self.params = params
        self.out = out
        self.line = line
        self.grad_of = grad_of
        self.random = random
        self.order = 0  # position in the traced order
        self.meta = None  # what later passes attach (a kernel, an in-place target)

    def inputs(self):
        """The values this node reads, arguments and parameters (an index array), each once, in order."""
        seen, out = set(), []
        for v in walk((self.args, self.params)):
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        return out

    def __repr__(self) -> str:
        return f"<node {self.name} -> v{self.out.index}>"


class Graph:
    """The traced program: inputs, nodes in order, output leaves (a Value, a Const, or a static object)."""

    def __init__(self, inputs, nodes, outputs):
        self.inputs = inputs
        self.nodes = nodes
        self.outputs = outputs


def walk(obj):
    """Every :class:`Value` inside ``obj`` (nested tuples, lists, dicts and slices), in order."""
    if isinstance(obj, Value):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            yield from walk(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from walk(x)
    elif isinstance(obj, slice):
        yield from walk((obj.start, obj.stop, obj.step))


def substitute(obj, mapping):
    """``obj`` with each value ``v`` replaced by ``mapping(v)`` (same nesting)."""
    if isinstance(obj, Value):
        return mapping(obj)
    if isinstance(obj, tuple):
        return tuple(substitute(x, mapping) for x in obj)
    if isinstance(obj, list):
        return [substitute(x, mapping) for x in obj]
    if isinstance(obj, dict):
        return {k: substitute(x, mapping) for k, x in obj.items()}
    if isinstance(obj, slice):
        return slice(*(substitute(x, mapping) for x in (obj.start, obj.stop, obj.step)))
    return obj
