"""The op table: one row per registered op, read by every op test (fixed cases here, properties elsewhere).

A row says how to call the op on tensors (``fn``), the NumPy reference (``ref``), how many inputs it takes,
the input domain it needs for finite differences to be meaningful, keyword arguments, and fixed example
shapes covering broadcasting and ``axis``/``keepdims``. ``tests/test_ops.py`` fails when a registered op has
no row, so a new op cannot slip in untested.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import tapegrad as tg


@dataclass(frozen=True)
class OpCase:
    name: str  # the registry name of the op under test
    fn: Callable  # fn(*tensors, **kwargs) -> Tensor
    ref: Callable  # ref(*arrays, **kwargs) -> array, NumPy's answer
    arity: int
    domain: str = "real"  # real | positive | nonzero | distinct (no near-ties) | unit (-0.9..0.9)
    examples: tuple = ()  # ((shape, shape, ...), kwargs) pairs for the fixed-input tests
    axis_kwargs: bool = False  # takes axis/keepdims: property tests draw them with valid_tuple_axes
    broadcasting: bool = False  # inputs broadcast against each other
    constant_inputs: tuple = ()  # positions used only as constants (where's condition): no gradient


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


def _binary(name, fn, ref, domain="real"):
    return OpCase(name, fn, ref, 2, domain, BINARY_SHAPES, broadcasting=True)


def _unary(name, fn, ref, domain="real"):
    return OpCase(name, fn, ref, 1, domain, UNARY_SHAPES)


def _reduce(name, fn, ref, domain="real"):
    return OpCase(name, fn, ref, 1, domain, REDUCE_SHAPES, axis_kwargs=True)


OPS = (
    _binary("add", lambda x, y: x + y, np.add),
    _binary("subtract", lambda x, y: x - y, np.subtract),
    _binary("multiply", lambda x, y: x * y, np.multiply),
    _binary("divide", lambda x, y: x / y, np.divide, domain="nonzero"),
    _binary("power", lambda x, y: x**y, np.power, domain="positive"),
    _binary("maximum", tg.maximum, np.maximum, domain="distinct"),
    _binary("minimum", tg.minimum, np.minimum, domain="distinct"),
    OpCase(
        "where",
        lambda c, x, y: tg.where(c > 0, x, y),
        lambda c, x, y: np.where(c > 0, x, y),
        3,
        examples=((((3, 4), (3, 4), (4,)), {}), (((2, 1), (1, 3), ()), {})),
        broadcasting=True,
        constant_inputs=(0,),
    ),
    _unary("negative", lambda x: -x, np.negative),
    _unary("absolute", abs, np.abs, domain="nonzero"),
    _unary("exp", tg.exp, np.exp),
    _unary("log", tg.log, np.log, domain="positive"),
    _unary("sqrt", tg.sqrt, np.sqrt, domain="positive"),
    _unary("sin", tg.sin, np.sin),
    _unary("cos", tg.cos, np.cos),
    _unary("tanh", tg.tanh, np.tanh),
    _unary("sigmoid", tg.sigmoid, _sigmoid),
    _unary("relu", tg.relu, lambda x: np.maximum(x, 0), domain="nonzero"),
    OpCase("clip", lambda x: tg.clip(x, -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5), 1, "distinct", UNARY_SHAPES),
    OpCase("astype", lambda x: tg.astype(x, dtype=x.dtype), lambda x: x, 1, "real", UNARY_SHAPES),
    _reduce("sum", tg.sum, np.sum),
    _reduce("mean", tg.mean, np.mean),
    OpCase(
        "var",
        lambda x, **k: tg.var(x, ddof=1, **k),
        lambda x, **k: np.var(x, ddof=1, **k),
        1,
        "real",
        ((((3, 4),), {"axis": 1}), (((2, 3, 4),), {"axis": (0, 2), "keepdims": True})),
        axis_kwargs=True,
    ),
    _reduce("max", tg.max, np.max, domain="distinct"),
    _reduce("min", tg.min, np.min, domain="distinct"),
    _reduce("logsumexp", tg.logsumexp, _lse),
    OpCase("softmax", tg.softmax, _softmax, 1, "real", ((((3, 4),), {}), (((2, 3, 4),), {"axis": 1}))),
    OpCase(
        "log_softmax",
        tg.log_softmax,
        lambda x, axis=-1: np.log(_softmax(x, axis)),
        1,
        "real",
        ((((3, 4),), {}), (((2, 3, 4),), {"axis": 0})),
    ),
    OpCase("reshape", lambda x: tg.reshape(x, (-1,)), lambda x: np.reshape(x, (-1,)), 1, "real", UNARY_SHAPES),
    OpCase(
        "transpose",
        tg.transpose,
        np.transpose,
        1,
        "real",
        ((((3, 4),), {}), (((2, 3, 4),), {"axes": (1, 2, 0)}), (((2, 3, 4),), {"axes": (-1, 0, 1)})),
    ),
    OpCase(
        "expand_dims",
        lambda x: tg.expand_dims(x, 1),
        lambda x: np.expand_dims(x, 1),
        1,
        "real",
        ((((3, 4),), {}), (((3,),), {})),
    ),
    OpCase("squeeze", tg.squeeze, np.squeeze, 1, "real", ((((3, 1, 4),), {}), (((1, 3, 1),), {"axis": 0}))),
    OpCase(
        "broadcast_to",
        lambda x: tg.broadcast_to(x, (2, 3, 4)),
        lambda x: np.broadcast_to(x, (2, 3, 4)),
        1,
        "real",
        ((((3, 4),), {}), (((1, 4),), {}), (((3, 1),), {}), (((),), {})),
    ),
    OpCase(
        "concatenate",
        lambda x, y, **k: tg.concatenate([x, y], **k),
        lambda x, y, **k: np.concatenate([x, y], **k),
        2,
        "real",
        ((((2, 3), (4, 3)), {}), (((2, 3), (2, 1)), {"axis": -1})),
    ),
    OpCase(
        "stack",
        lambda x, y, **k: tg.stack([x, y], **k),
        lambda x, y, **k: np.stack([x, y], **k),
        2,
        "real",
        ((((2, 3), (2, 3)), {}), (((2, 3), (2, 3)), {"axis": 2})),
    ),
    OpCase(
        "getitem",
        lambda x: x[1:, np.array([0, 2, 2])],
        lambda x: x[1:, np.array([0, 2, 2])],
        1,
        "real",
        ((((3, 4),), {}),),
    ),
    OpCase(
        "scatter",
        lambda g: tg.scatter(g, index=np.array([0, 2, 0]), shape=(4, 2)),
        lambda g: _scatter_ref(g, np.array([0, 2, 0]), (4, 2)),
        1,
        "real",
        ((((3, 2),), {}),),
    ),
    OpCase(
        "matmul",
        tg.matmul,
        np.matmul,
        2,
        "real",
        (
            (((3, 4), (4, 2)), {}),
            (((4,), (4, 2)), {}),
            (((3, 4), (4,)), {}),
            (((4,), (4,)), {}),
            (((2, 3, 4), (4, 5)), {}),
            (((2, 1, 3, 4), (5, 4, 2)), {}),
        ),
    ),
)


def _scatter_ref(g, index, shape):
    out = np.zeros(shape)
    np.add.at(out, index, g)
    return out


def draw_values(rng, shape, domain, dtype=np.float64):
    """Fixed-test inputs inside an op's domain, far from kinks and ties at the finite-difference scale."""
    if domain == "positive":
        a = rng.uniform(0.5, 2.0, shape)
    elif domain == "nonzero":
        a = rng.uniform(0.3, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    elif domain == "distinct":
        n = int(np.prod(shape, dtype=np.int64))
        a = (rng.permutation(n) * 0.37 - n * 0.18 + rng.uniform(0, 0.05, n)).reshape(shape) / max(n, 1)
    else:
        a = rng.standard_normal(shape)
    return np.asarray(a, dtype=dtype)
