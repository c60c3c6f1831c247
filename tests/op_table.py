"""The op table: one row per registered op, read by every op test (fixed cases here, properties elsewhere).

A row says what the op's own row cannot: the oracle (``ref``, NumPy's answer), the input domain it needs for
finite differences to be meaningful, keyword arguments, fixed example shapes beyond the defaults (unary,
broadcasting pairs, ``axis``/``keepdims``), and (``draw``) how the property tests draw its shapes and keyword
arguments. How to call it (``fn``, by default the op's public function), how many inputs it takes, whether
they broadcast, which get no gradient and which libraries refuse it are the op's facts
(``tapegrad.registry.Op``), read from ``tg.REGISTRY``; a row repeats one only where its ``fn`` is not the op
itself. ``tests/test_ops.py`` fails when a registered op has no row, so a new op cannot slip in untested:

    OpCase("exp", ref=np.exp)
    OpCase("log", ref=np.log, domain="positive")
"""

from __future__ import annotations

import importlib
import pathlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tapegrad as tg
from tapegrad import strategies as tgst


@dataclass(frozen=True)
class OpCase:
    """One row. What the op's ``defop`` row already says is read from the op (``tapegrad.registry.Op``), and a
    row states it only where its ``fn`` differs from the op (complex inputs as pairs of parts, say)."""

    name: str  # the registry name of the op under test (or of a function composed of ops)
    fn: Callable | None = None  # fn(*tensors, **kwargs) -> Tensor; None: the op's public function (tg.exp)
    ref: Callable | None = None  # ref(*arrays, **kwargs) -> array, the oracle (NumPy's answer)
    domain: str = "real"  # real | positive | nonzero | distinct (no near-ties) | unit (-0.9..0.9) | zeros
    examples: tuple = ()  # ((shape, shape, ...), kwargs) pairs; (): by the arity, broadcasting and axis_kwargs
    arity: int | None = None  # how many inputs fn takes; None: the op's
    axis_kwargs: bool = False  # takes axis/keepdims: property tests draw them with valid_tuple_axes
    broadcasting: bool | None = None  # inputs broadcast against each other; None: as the op's
    constant_inputs: tuple | None = None  # positions that get no gradient; None: the op's inputs without a rule
    draw: Callable | None = None  # () -> strategy of (shapes, kwargs); None: derived from the flags above
    # array libraries that lack a function the op needs (e.g. "array_api_strict" for np.einsum): there the
    # backend tests check that the op raises NotImplementedError naming itself, instead of computing. The
    # libraries the op's row refuses (``refuses=``) are added.
    unsupported: tuple = ()
    # (arrays, kwargs) -> what the value's rounding error is relative to, element by element, where the op cancels
    # digits (standardize subtracts the mean: its error is a few ulps of |w| (|x| + |mean|) / std, not of the
    # output); the property tests then allow 4 ulps of it beside their tolerance. None: the output's magnitude.
    value_scale: Callable | None = None
    # (arrays, kwargs, cotangent) -> one number per input: what float32's rounding error in that input's gradient
    # is relative to, where the rule cancels digits; the float32-against-float64 check allows 4 ulps of it.
    gradient_scale: Callable | None = None
    # the op takes milliseconds a call (a continued fraction carrying derivatives): the property suite's finite
    # differences draw a few examples of it (test_properties.COSTLY); its fixed examples in test_ops run in full
    costly: bool = False

    def __post_init__(self):
        op = op_of(self)
        if op is None:  # a function composed of ops: the row says everything
            derived = {"broadcasting": False, "constant_inputs": ()}
        else:
            derived = {
                "fn": op.function,
                "arity": None if op.variadic else op.arity,
                "broadcasting": op.broadcast,
                "constant_inputs": tuple(i for i, d in enumerate(op.differentiable) if not d),
                "unsupported": self.unsupported + tuple(b for b in op.refuses if b not in self.unsupported),
            }
        for field, value in derived.items():
            if field == "unsupported" or getattr(self, field) is None:
                object.__setattr__(self, field, value)
        if self.arity is None or self.fn is None or self.ref is None:
            raise ValueError(f"op table: the row of {self.name} needs fn, ref and arity (no registered op says them)")
        if not self.examples:
            default = REDUCE_SHAPES if self.axis_kwargs else (BINARY_SHAPES if self.broadcasting else UNARY_SHAPES)
            if self.axis_kwargs or self.arity == (2 if self.broadcasting else 1):
                object.__setattr__(self, "examples", default)


def op_of(case):
    """The registered op a row tests, or None for a function composed of ops (``sort``, ``median``)."""
    return tg.REGISTRY.get(case.name) or tg.NONDIFF.get(case.name)


def shapes_and_kwargs(case: OpCase) -> st.SearchStrategy:
    """The property tests' inputs for a row: a strategy of (input shapes, keyword arguments)."""
    if case.draw is not None:
        return case.draw()
    if case.broadcasting:
        return st.tuples(tgst.broadcast_shapes(case.arity), st.just({}))
    if case.axis_kwargs:
        return tgst.shapes().flatmap(lambda s: st.tuples(st.just((s,)), tgst.reduction_kwargs(len(s))))
    return st.tuples(st.tuples(*[tgst.shapes()] * case.arity), st.just({}))


def _lse(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


BINARY_SHAPES = (
    (((3, 4), (3, 4)), {}),
    (((3, 4), (4,)), {}),
    (((2, 1, 3), (4, 1)), {}),
    (((), (2, 3)), {}),
    (((1, 3), (2, 1)), {}),
)
UNARY_SHAPES = ((((3, 4),), {}), (((),), {}), (((2, 1, 3),), {}))
REDUCE_SHAPES = (
    (((3, 4),), {}),
    (((3, 4),), {"axis": 0}),
    (((2, 3, 4),), {"axis": (0, -1), "keepdims": True}),
    (((2, 3, 4),), {"axis": -2}),
    (((5,),), {"axis": 0, "keepdims": True}),
)


# -- how the property tests draw shapes and keyword arguments for ops whose flags do not say enough ----------
def _count(shape, axis):
    axis = range(len(shape)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    return int(np.prod([shape[a] for a in axis], dtype=np.int64))


def _one_shape(kwargs_of, min_dims=0):
    """One input shape, then keyword arguments that depend on it."""
    return tgst.shapes(min_dims=min_dims).flatmap(lambda s: st.tuples(st.just((s,)), kwargs_of(s)))


def _either_sign(axes, ndim):
    # the same axes, each written as i or i - ndim at random
    return st.tuples(*[st.sampled_from([a, a - ndim]) for a in axes])


def _var_draw():  # ddof=1 needs at least two elements in every reduction
    return _one_shape(lambda s: tgst.reduction_kwargs(len(s))).filter(lambda sk: _count(sk[0][0], sk[1]["axis"]) >= 2)


def _softmax_draw():
    return _one_shape(lambda s: st.fixed_dictionaries({"axis": tgst.axes(len(s), allow_empty=False)}), min_dims=1)


def _reshape_draw():
    targets = lambda s: st.sampled_from([(-1,), s[::-1], (1, *s), (*s, 1)])
    return _one_shape(lambda s: targets(s).map(lambda t: {"shape": t}))


def _transpose_draw():
    perms = lambda s: st.permutations(range(len(s))).flatmap(lambda p: _either_sign(p, len(s)))
    return _one_shape(lambda s: st.just({}) | perms(s).map(lambda p: {"axes": p}))


def _expand_dims_draw():
    return _one_shape(lambda s: st.integers(-len(s) - 1, len(s)).map(lambda a: {"axis": a}))


def _squeeze_draw():
    def kwargs(s):
        ones = [i for i, n in enumerate(s) if n == 1]
        some = st.lists(st.sampled_from(ones), unique=True) if ones else st.just([])
        return st.just({}) | some.flatmap(lambda ax: _either_sign(ax, len(s))).map(lambda ax: {"axis": ax})

    return _one_shape(kwargs)


def _broadcast_to_draw():
    return tgst.shapes().flatmap(
        lambda target: st.tuples(st.tuples(tgst.shapes_broadcasting_to(target)), st.just({"shape": target}))
    )


@st.composite
def _concatenate_draw(draw):
    s = draw(tgst.shapes(min_dims=1))
    axis = draw(st.integers(-len(s), len(s) - 1))
    other = list(s)
    other[axis] = draw(st.integers(1, 3))
    return (s, tuple(other)), {"axis": axis}


@st.composite
def _stack_draw(draw):
    s = draw(tgst.shapes(max_dims=3))
    return (s, s), {"axis": draw(st.integers(-len(s) - 1, len(s)))}


@st.composite
def _getitem_draw(draw):
    s = draw(tgst.shapes(min_dims=1))
    index = draw(hnp.basic_indices(s, allow_newaxis=True) | hnp.integer_array_indices(s) | hnp.arrays(bool, s))
    return (s,), {"index": index}


@st.composite
def _scatter_draw(draw):
    s = draw(tgst.shapes(min_dims=1))
    index = draw(hnp.basic_indices(s) | hnp.integer_array_indices(s))
    return (np.zeros(s)[index].shape,), {"index": index, "shape": s}


def _matmul_draw():
    shapes = hnp.mutually_broadcastable_shapes(signature=np.matmul.signature, max_dims=2, min_side=1, max_side=3)
    return st.tuples(shapes.map(lambda b: b.input_shapes), st.just({}))


OPS = (
    OpCase("add", lambda x, y: x + y, np.add),
    OpCase("subtract", lambda x, y: x - y, np.subtract),
    OpCase("multiply", lambda x, y: x * y, np.multiply),
    OpCase("divide", lambda x, y: x / y, np.divide, domain="nonzero"),
    OpCase("power", lambda x, y: x**y, np.power, domain="positive"),
    OpCase("maximum", ref=np.maximum, domain="distinct"),
    OpCase("minimum", ref=np.minimum, domain="distinct"),
    OpCase(
        "where",
        lambda c, x, y: tg.where(c > 0, x, y),
        lambda c, x, y: np.where(c > 0, x, y),
        domain="nonzero",  # the condition c > 0 must not flip within the finite-difference step
        examples=((((3, 4), (3, 4), (4,)), {}), (((2, 1), (1, 3), ()), {})),
    ),
    OpCase("negative", lambda x: -x, np.negative),
    OpCase("absolute", abs, np.abs, domain="nonzero"),
    OpCase("exp", ref=np.exp),
    OpCase("log", ref=np.log, domain="positive"),
    OpCase("sqrt", ref=np.sqrt, domain="positive"),
    OpCase("sin", ref=np.sin),
    OpCase("cos", ref=np.cos),
    OpCase("tanh", ref=np.tanh),
    OpCase("sigmoid", ref=_sigmoid),
    OpCase("relu", ref=lambda x: np.maximum(x, 0), domain="nonzero"),
    OpCase("clip", lambda x: tg.clip(x, -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5), domain="distinct"),
    OpCase("astype", lambda x: tg.astype(x, dtype=x.dtype), lambda x: x),
    OpCase("sum", ref=np.sum, axis_kwargs=True),
    OpCase("mean", ref=np.mean, axis_kwargs=True),
    OpCase(
        "var",
        lambda x, **k: tg.var(x, ddof=1, **k),
        lambda x, **k: np.var(x, ddof=1, **k),
        examples=((((3, 4),), {"axis": 1}), (((2, 3, 4),), {"axis": (0, 2), "keepdims": True})),
        axis_kwargs=True,
        draw=_var_draw,
    ),
    OpCase("max", ref=np.max, domain="distinct", axis_kwargs=True),
    OpCase("min", ref=np.min, domain="distinct", axis_kwargs=True),
    OpCase("logsumexp", ref=_lse, axis_kwargs=True),
    OpCase("softmax", ref=_softmax, examples=((((3, 4),), {}), (((2, 3, 4),), {"axis": 1})), draw=_softmax_draw),
    OpCase(
        "log_softmax",
        ref=lambda x, axis=-1: np.log(_softmax(x, axis)),
        examples=((((3, 4),), {}), (((2, 3, 4),), {"axis": 0})),
        draw=_softmax_draw,
    ),
    OpCase(
        "reshape",
        lambda x, shape=(-1,): tg.reshape(x, shape),
        lambda x, shape=(-1,): np.reshape(x, shape),
        draw=_reshape_draw,
    ),
    OpCase(
        "transpose",
        ref=np.transpose,
        examples=((((3, 4),), {}), (((2, 3, 4),), {"axes": (1, 2, 0)}), (((2, 3, 4),), {"axes": (-1, 0, 1)})),
        draw=_transpose_draw,
    ),
    OpCase(
        "expand_dims",
        lambda x, axis=1: tg.expand_dims(x, axis),
        lambda x, axis=1: np.expand_dims(x, axis),
        examples=((((3, 4),), {}), (((3,),), {})),
        draw=_expand_dims_draw,
    ),
    OpCase("squeeze", ref=np.squeeze, examples=((((3, 1, 4),), {}), (((1, 3, 1),), {"axis": 0})), draw=_squeeze_draw),
    OpCase(
        "broadcast_to",
        lambda x, shape=(2, 3, 4): tg.broadcast_to(x, shape),
        lambda x, shape=(2, 3, 4): np.broadcast_to(x, shape),
        examples=((((3, 4),), {}), (((1, 4),), {}), (((3, 1),), {}), (((),), {})),
        draw=_broadcast_to_draw,
    ),
    OpCase(
        "concatenate",
        lambda x, y, **k: tg.concatenate([x, y], **k),
        lambda x, y, **k: np.concatenate([x, y], **k),
        examples=((((2, 3), (4, 3)), {}), (((2, 3), (2, 1)), {"axis": -1})),
        arity=2,
        draw=_concatenate_draw,
    ),
    OpCase(
        "stack",
        lambda x, y, **k: tg.stack([x, y], **k),
        lambda x, y, **k: np.stack([x, y], **k),
        examples=((((2, 3), (2, 3)), {}), (((2, 3), (2, 3)), {"axis": 2})),
        arity=2,
        draw=_stack_draw,
    ),
    OpCase(
        "getitem",
        lambda x, index=(slice(1, None), np.array([0, 2, 2])): x[index],
        lambda x, index=(slice(1, None), np.array([0, 2, 2])): x[index],
        examples=((((3, 4),), {}),),
        draw=_getitem_draw,
    ),
    OpCase(
        "scatter",
        lambda g, index=np.array([0, 2, 0]), shape=(4, 2): tg.ops.scatter(g, index=index, shape=shape),
        lambda g, index=np.array([0, 2, 0]), shape=(4, 2): _scatter_ref(g, index, shape),
        examples=((((3, 2),), {}),),
        draw=_scatter_draw,
    ),
    OpCase(
        "matmul",
        ref=np.matmul,
        examples=(
            (((3, 4), (4, 2)), {}),
            (((4,), (4, 2)), {}),
            (((3, 4), (4,)), {}),
            (((4,), (4,)), {}),
            (((2, 3, 4), (4, 5)), {}),
            (((2, 1, 3, 4), (5, 4, 2)), {}),
        ),
        draw=_matmul_draw,
    ),
)


def _scatter_ref(g, index, shape):
    out = np.zeros(shape, dtype=g.dtype)
    np.add.at(out, index, g)
    return out


def draw_values(rng, shape, domain, dtype=np.float64):
    """Fixed-test inputs inside an op's domain, far from kinks and ties at the finite-difference scale."""
    if domain == "positive":
        a = rng.uniform(0.5, 2.0, shape)
    elif domain == "nonzero":
        a = rng.uniform(0.3, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    elif domain == "unit":
        a = rng.uniform(-0.9, 0.9, shape)
    elif domain == "zeros":  # about a third exact zeros, for rules that must handle them exactly
        a = np.where(rng.uniform(0, 1, shape) < 1 / 3, 0.0, rng.standard_normal(shape))
    elif domain == "distinct":
        n = int(np.prod(shape, dtype=np.int64))
        a = (rng.permutation(n) * 0.37 - n * 0.18 + rng.uniform(0, 0.05, n)).reshape(shape) / max(n, 1)
    else:
        a = rng.standard_normal(shape)
    return np.asarray(a, dtype=dtype)


# Families beside the core rows: each ``tests/op_rows_<family>.py`` defines ``ROWS``, a tuple of OpCase built
# with the helpers above (``from op_table import OpCase, ...``); every one of them joins OPS here.
for _path in sorted(pathlib.Path(__file__).parent.glob("op_rows_*.py")):
    OPS = OPS + tuple(importlib.import_module(_path.stem).ROWS)
