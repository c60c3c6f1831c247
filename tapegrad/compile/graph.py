"""The program's vocabulary: values (numbered slots), constants, and steps (one op each, one backend call).

A traced function becomes a :class:`Graph`: its inputs (one :class:`Value` per array argument), a list of
:class:`Step` in execution order, and its outputs (values, constants or static Python objects). A step is an
:class:`~tapegrad.registry.Op` and what it is applied to: its arguments and parameters refer to values by
object, and to everything else as a :class:`Const` (an array or object the program holds) or as a plain
Python literal written into the source. Which function runs it is decided when the source is generated
(:mod:`.kernels`: ``LOWERINGS[backend][op]``), from the op and the values' array type. Nothing here holds an
array of the traced call: values know their shape and dtype only.
"""

from __future__ import annotations

import linecache

import numpy as np

__all__ = ["Value", "Const", "Step", "Graph", "walk", "substitute", "source_line", "forget_inputs"]


class Value:
    """One slot of the program: an input or the output of a step, with its shape, dtype and array type."""

    __slots__ = ("index", "shape", "dtype", "kind", "step", "input_index", "nbytes", "strides")

    def __init__(self, index, shape, dtype, kind, step=None, input_index=None, nbytes=0, strides=None):
        self.index = index
        self.shape = tuple(shape)
        self.dtype = dtype
        self.kind = kind  # the array type: np.ndarray, or another library's
        self.step = step  # the step computing it (None for an input)
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
        if self.dtype.__class__ is str:  # the tuple of an op with several outputs: its dtype says what it holds
            return self.dtype
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


_LEAVES = frozenset((int, float, bool, complex, str, type(None), Const))  # arguments that hold no value


class Step:
    """One op of the program: ``out = op(*args, **params)``, with where it came from.

    ``line`` is ``(filename, lineno)`` of the user's code that called the op (None for an op of a rule whose
    forward step is known: the program names that step's line); ``grad_of`` the forward step
    whose rule this op belongs to (None for the forward pass); ``random`` marks a draw (never removed or moved
    across another draw).
    """

    __slots__ = ("op", "args", "params", "out", "line", "grad_of", "random", "order", "meta", "_inputs")

    def __init__(self, op, args, params, out, line=None, grad_of=None, random=False):
        self.op = op
        self.args = args
        self.params = params
        self.out = out
        self.line = line
        self.grad_of = grad_of
        self.random = random
        self.order = 0  # position in the traced order
        self.meta = None  # what a rewrite says of the step, for the source's comment
        self._inputs = None

    @property
    def name(self) -> str:
        return self.op.name

    def inputs(self):
        """The values this step reads, arguments and parameters (an index array), each once, in order (kept
        until a pass gives the step new arguments or parameters; the list is not to be changed)."""
        cached = self._inputs
        if cached is not None and cached[0] is self.args and cached[1] is self.params:
            return cached[2]
        args = self.args
        out = [] if len(args) <= 8 and not self.params else None
        if out is not None:  # most steps: a few values and numbers, read without walk's generators
            for a in args:
                cls = a.__class__
                if cls is Value:
                    if a not in out:  # each value once (a Value compares by identity)
                        out.append(a)
                elif cls not in _LEAVES:
                    out = None
                    break
        if out is None:
            seen, out = set(), []
            for v in walk((args, self.params)):
                if id(v) not in seen:
                    seen.add(id(v))
                    out.append(v)
        self._inputs = (self.args, self.params, out)
        return out

    def __repr__(self) -> str:
        return f"<step {self.name} -> v{self.out.index}>"


def forget_inputs(steps) -> None:
    """Drop what :meth:`Step.inputs` keeps of each step (made again when asked): two objects per step that a
    built program would otherwise hold, and that each of Python's full collections would walk."""
    for n in steps:
        n._inputs = None


def source_line(line) -> str:
    """``file:line  source`` of a step's line (``(filename, lineno)`` or None), for comments and errors."""
    if line is None:
        return "?"
    filename, lineno = line
    text = linecache.getline(filename, lineno).strip()
    short = filename.rsplit("/", 1)[-1]
    return f"{short}:{lineno}" + (f"  {text}" if text else "")


class Graph:
    """The traced program: inputs, steps in order, output leaves (a Value, a Const, or a static object)."""

    def __init__(self, inputs, steps, outputs):
        self.inputs = inputs
        self.steps = steps
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
    """``obj`` with each value ``v`` replaced by ``mapping(v)`` (same nesting); ``obj`` itself where nothing
    changes (so that a step's :meth:`Step.inputs` stay known)."""
    if isinstance(obj, Value):
        return mapping(obj)
    if isinstance(obj, (tuple, list)):
        new = [substitute(x, mapping) for x in obj]
        if all(a is b for a, b in zip(new, obj)):
            return obj
        return tuple(new) if isinstance(obj, tuple) else new
    if isinstance(obj, dict):
        if not obj:
            return obj
        new = {k: substitute(x, mapping) for k, x in obj.items()}
        return obj if all(new[k] is x for k, x in obj.items()) else new
    if isinstance(obj, slice):
        parts = (obj.start, obj.stop, obj.step)
        new = tuple(substitute(x, mapping) for x in parts)
        return obj if all(a is b for a, b in zip(new, parts)) else slice(*new)
    return obj
