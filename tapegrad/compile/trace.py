"""Tracing: run the function once on its arguments and record every op as a step of a :class:`Graph`.

The tracer is installed in the context's ``TRACER`` slot (:mod:`tapegrad._state`) and a tape records while
the function runs, so the transforms inside it (``tg.grad``, ``tg.value_and_grad``, ``tg.jacobian``) run their
rules on a recorded replay, as ``create_graph`` does: the rules' ops reach the tracer too, and the graph holds
the forward and the backward pass. Values are identified by their array object: an argument of an op whose
array the tracer produced is a value of the graph; any other array is a constant, held by the program
(arrays read from outside the function, and everything computed from constants only, which is therefore
folded at trace time). Shapes, broadcasting and what the rules read of ``x.shape`` are Python values at
trace time, so the sums that undo broadcasting and every shape in the program are fixed here.

What a program cannot replay is refused, naming the user's line: Python reading a traced value
(``concrete``), an in-place change of one (``modified``), a boolean mask of traced values as an index (its
result's shape depends on the values).
"""

from __future__ import annotations

import sys

import numpy as np

from .._state import TRACER, TRACING
from .._tensor import Tensor
from .._tree import tree_flatten, tree_unflatten
from ..backend import memory_root, nbytes
from ..core import keep_pending
from ..errors import TracingError, user_frame
from ..random import RANDOM_OPS
from ..tape import record
from .graph import Const, Graph, Step, Value, source_line, walk
from .kernels import OUTPUT

__all__ = ["Tracer", "trace"]

_LITERALS = frozenset((int, float, complex, bool, str, type(None), type(Ellipsis)))


class Tracer:
    """Records the ops of one call; see the module docstring. ``op``, ``replaying``, ``concrete``, ``backward``,
    ``modified`` (and ``replayed``) are what the core calls (:mod:`tapegrad._state`)."""

    def __init__(self):
        self.values: dict = {}  # id(array) -> Value
        self.inputs: list = []
        self.steps: list = []
        self.consts: dict = {}  # id(object) -> Const
        self.keep: list = []  # every array and object named above, alive while tracing (ids stay unique)
        self.roots: set = set()  # id(memory root) of every traced array: in-place changes are refused
        self.forward_of: dict = {}  # id(tape node) -> (tape node, step): which op a rule differentiates
        # The steps whose rules a recorded replay is running, innermost last (a rule may replay a tape of
        # its own: recomputation); the replay says so (replaying, replayed), so no stack needs walking.
        self.rules: list = []

    # -- the graph ----------------------------------------------------------------------------------
    def _new_value(self, array, step=None, input_index=None) -> Value:
        if array.__class__ is np.ndarray:  # most values: read directly (a third of the tracer's time per op)
            strides, size, root = array.strides, array.nbytes, array if array.base is None else memory_root(array)
        else:
            strides, size, root = None, nbytes(array), memory_root(array)
        v = Value(len(self.values), array.shape, array.dtype, type(array), step, input_index, size, strides)
        self.values[id(array)] = v
        self.keep.append(array)
        if root is not array:
            self.keep.append(root)
        self.roots.add(id(root))
        return v

    def input(self, array) -> Tensor:
        """A traced argument: a new array object on the caller's memory (so two arguments passed the same
        array stay two values), wrapped as a tensor for the function."""
        view = array.view() if isinstance(array, np.ndarray) else array[...]
        v = self._new_value(view, input_index=len(self.inputs))
        self.inputs.append(v)
        return Tensor._wrap(view)

    def const(self, obj) -> Const:
        c = self.consts.get(id(obj))
        if c is None:
            c = self.consts[id(obj)] = Const(obj)
            self.keep.append(obj)
        return c

    def _arg(self, a):
        if a.__class__ in _LITERALS:
            return a
        v = self.values.get(id(a))
        if v is not None:
            return v
        return self.const(a)

    def _param(self, p):
        if p.__class__ in _LITERALS:
            return p
        if isinstance(p, tuple) and not hasattr(p, "_fields"):
            return tuple(self._param(x) for x in p)
        if isinstance(p, list):
            return [self._param(x) for x in p]
        if isinstance(p, dict):
            return {k: self._param(x) for k, x in p.items()}
        if isinstance(p, slice):
            return slice(self._param(p.start), self._param(p.stop), self._param(p.step))
        v = self.values.get(id(p))
        return v if v is not None else self.const(p)

    # -- what the core calls ------------------------------------------------------------------------
    def op(self, op, datas, params, out) -> None:
        if op.outputs:
            self._several(op, datas, params, out)
            return
        array = out._data
        values = self.values
        if id(array) in values:  # the op returned a value itself (a squeeze with nothing to squeeze)
            return
        args = []
        reads = False  # whether an argument is a traced value
        for d in datas:
            if d.__class__ in _LITERALS:
                args.append(d)
                continue
            v = values.get(id(d))
            if v is None:
                args.append(self.const(d))
            else:
                args.append(v)
                reads = True
        args = tuple(args)
        prm = {k: self._param(p) for k, p in params.items()} if params else {}
        random = op in RANDOM_OPS
        traced = [v for v in walk(prm)] if prm else ()
        if not (random or traced or reads):
            return  # computed from constants only: a constant of the program, folded here
        line = self._line()
        for v in traced:
            if _is_bool(v.dtype):
                raise TracingError(
                    f"{op.name}: indexing with a traced boolean mask at {source_line(_user_line())}: the result's "
                    "shape depends on the values, which a compiled program cannot allow; select with "
                    "tg.where(mask, x, 0) (same shape), or index with integer arrays"
                )
        step = self._step(op, args, prm, line, random)
        step.out = self._new_value(array, step)
        if out._node is not None:
            self.forward_of[id(out._node)] = (out._node, step)

    def _line(self):
        """The user's line of the op being recorded; None for an op of a rule of a traced step, whose source
        shows the line of the op it differentiates (walking out of the replay's frames to the user's costs
        more than the rest of recording the op)."""
        if self.rules and self.rules[-1] is not None:
            return None
        return _user_line(3)

    def _step(self, op, args, prm, line, random=False):
        step = Step(op, args, prm, None, line, self.rules[-1] if self.rules else None, random)
        step.order = len(self.steps)
        self.steps.append(step)
        return step

    def _several(self, op, datas, params, outs) -> None:
        """An op with several outputs (``op.outputs``): one step whose value is the tuple of its outputs (it
        holds their memory), and one ``OUTPUT`` step per output, a view of it, that the rest of the program
        reads."""
        args = tuple(self._arg(d) for d in datas)
        prm = {k: self._param(p) for k, p in params.items()} if params else {}
        if not (any(isinstance(a, Value) for a in args) or any(True for _ in walk(prm))):
            return  # computed from constants only: constants of the program
        line = self._line()
        arrays = tuple(t._data for t in outs)
        step = self._step(op, args, prm, line)
        what = ", ".join(Value(0, a.shape, a.dtype, type(a)).describe() for a in arrays)
        whole = Value(len(self.values), (), f"tuple({what})", type(arrays[0]), step, None, sum(map(nbytes, arrays)))
        self.values[id(arrays)] = whole
        self.keep.append(arrays)
        step.out = whole
        for i, array in enumerate(arrays):
            part = self._step(OUTPUT, (whole,), {"index": i}, line)
            part.grad_of = step.grad_of
            part.out = self._new_value(array, part)
        group = getattr(outs[0]._node, "group", None)
        if group is not None:
            self.forward_of[id(group)] = (group, step)

    def replaying(self, tape_node, rec) -> None:
        """A recorded replay is about to run the rules of the entry whose output is ``tape_node``."""
        found = self.forward_of.get(id(tape_node))
        self.rules.append(found[1] if found is not None else None)

    def replayed(self) -> None:
        """The rules :meth:`replaying` announced have run."""
        self.rules.pop()

    def concrete(self, array, what) -> None:
        v = self.values.get(id(array))
        if v is None:
            return
        line = _user_line()
        raise TracingError(
            f"{what} of a traced value ({v.describe()}) at {source_line(line)}: a compiled function runs as a fixed "
            "program, so Python cannot branch on or compute with values that change from call to call. Keep it "
            "a tensor (tg.where(c, x, y) for a choice, tapegrad ops for arithmetic), pass it as a Python number "
            "(a static argument: a new value traces again), or call the function without tg.compile"
        )

    def backward(self, what) -> None:
        line = _user_line()
        raise TracingError(
            f"{what} inside a function traced by tg.compile, at {source_line(line)}: a compiled program cannot run a "
            "backward pass of its own (its rules would run once, on the first call's arrays, and write .grad of "
            "tensors the program never returns). Compute the gradients with tg.grad or tg.value_and_grad inside "
            "the function and return them: loss, grads = tg.value_and_grad(loss_fn)(params, x)"
        )

    def traces(self, array) -> bool:
        """Whether ``array`` is a value of the function being traced (``tapegrad._state.is_traced``)."""
        return id(array) in self.values

    def modified(self, array) -> None:
        if id(memory_root(array)) in self.roots:
            line = _user_line()
            raise TracingError(
                f"an in-place change of a traced value at {source_line(line)}: a compiled function may not change its "
                "arguments or the values it computes in place; compute a new value (x = x + 1) and return it"
            )

    # -- the end of the trace -------------------------------------------------------------------------
    def output(self, leaf):
        """A result leaf: its value in the graph, or a constant."""
        array = leaf._data if isinstance(leaf, Tensor) else leaf
        v = self.values.get(id(array))
        return v if v is not None else self.const(array)


def _is_bool(dtype) -> bool:
    return getattr(dtype, "kind", None) == "b" or str(dtype) == "bool"


def _user_line(depth=2):
    """(file, line) of the user's code that called the current op (``depth``: frames up to the tracer's caller)."""
    user = user_frame(sys._getframe(depth))
    return (user.f_code.co_filename, user.f_lineno) if user is not None else None


def trace(fn, arrays, spec):
    """Run ``fn`` once on ``arrays``, the dynamic leaves of its ``(args, kwargs)`` whose structure is ``spec``,
    while tracing; return the graph, the results' spec and the results (arrays, as the first call returns)."""
    tracer = Tracer()
    TRACING.add(1)  # atomically: a profile in another thread counts in it too
    token = TRACER.set(tracer)
    pending = keep_pending().__enter__()
    tape = record()
    try:
        with tape:
            leaves = [tracer.input(_array_of(a)) for a in arrays]
            call_args, call_kwargs = tree_unflatten(spec, leaves)
            result = fn(*call_args, **call_kwargs)
        out_leaves, out_spec = tree_flatten(result, static=True)
        outputs = [tracer.output(leaf) for leaf in out_leaves]
        first = [_array_of(leaf) for leaf in out_leaves]
    finally:
        TRACER.reset(token)
        TRACING.add(-1)
        tape.release()
        pending.__exit__()
    graph = Graph(tracer.inputs, tracer.steps, outputs)
    return graph, out_spec, first


def _array_of(leaf):
    if isinstance(leaf, Tensor):
        return leaf._data
    if isinstance(leaf, np.generic):
        return np.asarray(leaf)
    return leaf
