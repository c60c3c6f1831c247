"""Random programs: hypothesis composes up to eight ops on one to three inputs that broadcast against each
other, each step reading any earlier value, so intermediates are reused on several paths.

The builder evaluates every step as it draws it and keeps a step only where finite differences are
meaningful (log of positive values, division away from zero, no near-ties for max/maximum/where/relu/abs,
no overflow); otherwise that step becomes ``tanh`` of its first operand. A :class:`Program` is a plain list
of steps, printed one per line when hypothesis reports a failing example.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

import tapegrad as tg
from tapegrad import strategies as tgst

MARGIN = 0.05  # distance to a kink or tie, far above the finite-difference step
LIMIT = 20.0  # |values| stay below this, so finite differences keep their accuracy


def _gap(x, axis, low):
    """Smallest distance between the extreme and the runner-up within each reduced group."""
    x = np.asarray(x)
    axis = tuple(range(x.ndim)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    axis = tuple(a % x.ndim for a in axis) if x.ndim else ()
    keep = [i for i in range(x.ndim) if i not in axis]
    groups = np.transpose(x, keep + list(axis)).reshape(int(np.prod([x.shape[i] for i in keep])), -1)
    if groups.shape[1] < 2:
        return np.inf
    s = np.sort(groups, axis=1)
    return float(np.min(s[:, 1] - s[:, 0] if low else s[:, -1] - s[:, -2]))


def _far_from(x, points):
    return all(np.all(np.abs(np.asarray(x) - p) >= MARGIN) for p in points)


# name -> (arity, function on tensors, check on the operands' arrays and the keyword arguments)
UNARY = {
    "sin": (tg.sin, None),
    "cos": (tg.cos, None),
    "tanh": (tg.tanh, None),
    "sigmoid": (tg.sigmoid, None),
    "negative": (tg.negative, None),
    "square": (lambda x: x**2, None),
    "exp": (tg.exp, lambda x: np.max(x, initial=-np.inf) <= 2.5),
    "log": (tg.log, lambda x: np.min(x, initial=np.inf) >= 0.2),
    "sqrt": (tg.sqrt, lambda x: np.min(x, initial=np.inf) >= 0.2),
    "absolute": (tg.absolute, lambda x: _far_from(x, [0.0])),
    "relu": (tg.relu, lambda x: _far_from(x, [0.0])),
    "clip": (lambda x: tg.clip(x, -0.5, 0.5), lambda x: _far_from(x, [-0.5, 0.5])),
    "reshape": (lambda x: tg.reshape(x, (-1,)), None),
    "transpose": (tg.transpose, None),
    "expand_dims": (lambda x: tg.expand_dims(x, 0), lambda x: np.ndim(x) < 4),
    "squeeze": (tg.squeeze, None),
    "reverse": (lambda x: x[..., ::-1], lambda x: np.ndim(x) >= 1),
    "gather": (lambda x: x[np.array([0, 0, -1])], lambda x: np.ndim(x) >= 1),  # a repeated index
}
REDUCE = {
    "sum": (tg.sum, None),
    "mean": (tg.mean, None),
    "var": (tg.var, lambda x, axis: np.size(np.sum(x, axis=axis)) < np.size(x)),  # at least two per group
    "max": (tg.max, lambda x, axis: _gap(x, axis, low=False) >= MARGIN),
    "min": (tg.min, lambda x, axis: _gap(x, axis, low=True) >= MARGIN),
    "logsumexp": (tg.logsumexp, None),
}
SOFTMAX = {"softmax": tg.softmax, "log_softmax": tg.log_softmax}
BINARY = {
    "add": (tg.add, None),
    "subtract": (tg.subtract, None),
    "multiply": (tg.multiply, None),
    "divide": (tg.divide, lambda x, y: _far_from(y, [0.0]) and np.min(np.abs(y)) >= 0.2),
    "power": (tg.power, lambda x, y: np.min(x, initial=np.inf) >= 0.2 and np.max(np.abs(y), initial=0) <= 2),
    "maximum": (tg.maximum, lambda x, y: np.all(np.abs(np.subtract(x, y)) >= MARGIN)),
    "minimum": (tg.minimum, lambda x, y: np.all(np.abs(np.subtract(x, y)) >= MARGIN)),
    "matmul": (tg.matmul, lambda x, y: np.ndim(x) >= 1 and np.ndim(y) >= 1),
    "concatenate": (lambda x, y: tg.concatenate([x, y], axis=-1), lambda x, y: np.ndim(x) >= 1),
    "stack": (lambda x, y: tg.stack([x, y]), None),
}
OPS = [*BINARY, "where", *UNARY, *REDUCE, *SOFTMAX]  # add first: hypothesis favours the first choice


@dataclass(frozen=True)
class Step:
    op: str
    args: tuple  # positions of the operands in the list of values (inputs first)
    kwargs: dict

    def run(self, values):
        operands = [values[i] for i in self.args]
        if self.op in UNARY:
            return UNARY[self.op][0](*operands)
        if self.op in REDUCE:
            return REDUCE[self.op][0](*operands, **self.kwargs)
        if self.op in SOFTMAX:
            return SOFTMAX[self.op](*operands, **self.kwargs)
        if self.op == "where":
            c, x, y = operands
            return tg.where(c > 0, x, y)
        return BINARY[self.op][0](*operands)


@dataclass(frozen=True)
class Program:
    """``inputs`` (float64 arrays) and ``steps``; calling it on tensors returns the last step's value."""

    inputs: tuple
    steps: tuple

    def __call__(self, *xs):
        return self.run(*xs)[-1]

    def run(self, *xs):
        """Every value, inputs first: tests use it to watch intermediates."""
        values = list(xs)
        for step in self.steps:
            values.append(step.run(values))
        return values

    def __repr__(self) -> str:
        lines = [f"v{i} = input{a.shape}" for i, a in enumerate(self.inputs)]
        for k, s in enumerate(self.steps, start=len(self.inputs)):
            args = ", ".join(f"v{i}" for i in s.args)
            kw = "".join(f", {n}={v!r}" for n, v in s.kwargs.items())
            lines.append(f"v{k} = {s.op}({args}{kw})")
        arrays = ", ".join(np.array2string(a, precision=17, separator=", ") for a in self.inputs)
        return "Program(\n    " + "\n    ".join(lines) + f"\n  inputs: {arrays}\n)"


def _broadcasts(a, b):
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


def _acceptable(out):
    a = out.numpy()
    return a.size <= 81 and a.ndim <= 4 and np.all(np.isfinite(a)) and np.max(np.abs(a), initial=0.0) <= LIMIT


def _valid(op, arrays, kwargs):
    """Whether finite differences are meaningful for ``op`` on these operands."""
    if op in UNARY:
        check = UNARY[op][1]
        return check is None or check(*arrays)
    if op in REDUCE:
        check = REDUCE[op][1]
        return check is None or check(arrays[0], kwargs.get("axis"))
    if op in SOFTMAX:
        return np.ndim(arrays[0]) >= 1
    if op == "where":
        return _far_from(arrays[0], [0.0])
    check = BINARY[op][1]
    return check is None or check(*arrays)


@st.composite
def programs(draw, max_steps: int = 8, max_inputs: int = 3, max_dims: int = 3):
    """A random :class:`Program` over inputs drawn with ``tapegrad.strategies``."""
    n = draw(st.integers(2, max_inputs) | st.integers(1, max_inputs))  # mostly inputs that broadcast together
    shapes = draw(tgst.broadcast_shapes(n, max_dims=max_dims))
    inputs = draw(tgst.inputs(shapes, "real"))
    values = [tg.Tensor(a) for a in inputs]  # evaluated as the program grows, never recorded
    steps = []
    for _ in range(draw(st.integers(1, max_steps) | st.just(max_steps))):  # long programs half the time
        op = draw(st.sampled_from(OPS))
        arity = 3 if op == "where" else (2 if op in BINARY else 1)
        # the first operand counted back from the newest value (programs shrink towards chains), the others
        # from any value alike, so that values of different shapes meet and broadcast
        first = len(values) - 1 - draw(st.integers(0, len(values) - 1))
        others = range(len(values))
        if op not in ("matmul", "concatenate", "stack"):
            others = [i for i in others if _broadcasts(values[first].shape, values[i].shape)]
        args = (first, *(draw(st.sampled_from(others)) for _ in range(arity - 1)))
        x = values[args[0]]
        kwargs = {}
        if op in REDUCE:
            kwargs = draw(tgst.reduction_kwargs(x.ndim))
        elif op in SOFTMAX and x.ndim:
            kwargs = {"axis": draw(tgst.axes(x.ndim, allow_empty=False))}
        step, out = Step(op, args, kwargs), None
        try:
            if _valid(op, [values[i].numpy() for i in args], kwargs):
                out = step.run(values)
        except ValueError:  # operands whose shapes do not fit this op
            out = None
        if out is None or not _acceptable(out):
            step = Step("tanh", args[:1], {})
            out = step.run(values)
        steps.append(step)
        values.append(out)
    return Program(tuple(inputs), tuple(steps))
