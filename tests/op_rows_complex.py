"""Op-table rows for complex numbers: real, imag, conj, angle and sign, and the complex form of the elementwise ops
and matmul. The op table hands rows real arrays and expects a real result in their dtype, so each row builds
``z = x + iy`` from two real inputs (through ``astype``, whose rule gives a real input the real part of its
cotangent) and returns the real and imaginary parts of a complex result stacked: the gradient with respect to
x and y checks both real directions of tapegrad's convention (docs/guide/complex.md) against finite differences,
float32 (complex64) against float64, on every backend.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from op_table import BINARY_SHAPES, UNARY_SHAPES, OpCase

import tapegrad as tg
from tapegrad import strategies as tgst
from tapegrad.backend import NUMPY, backend_of
from tapegrad.ops._complex import complex_dtype


def complex_of(x, y):
    """x + iy from two real tensors (or arrays), in their library and precision."""
    if not isinstance(x, tg.Tensor):
        c = np.result_type(x.dtype, np.complex64)
        return x.astype(c) + 1j * y.astype(c)
    xp = (backend_of(x._data) or NUMPY).xp  # the library only (x may be vmap's batch, whose values are not read)
    c = complex_dtype(xp, x.dtype)
    return tg.astype(x, dtype=c) + tg.astype(y, dtype=c) * 1j


def parts(z):
    """A complex result as its real and imaginary parts, stacked first: a real output for the op table."""
    if isinstance(z, tg.Tensor):
        return tg.stack([tg.real(z), tg.imag(z)])
    return np.stack([np.real(z), np.imag(z)])


def _unary(name, fn, ref, real_result=False, domain="real", examples=UNARY_SHAPES):
    """A row for fn(z) on z = x + iy: arity 2, the same shape for x and y."""
    out = (lambda r: r) if real_result else parts
    return OpCase(
        name,
        lambda x, y: out(fn(complex_of(x, y))),
        lambda x, y: out(ref(complex_of(x, y))),
        domain=domain,
        examples=tuple(((s[0], s[0]), k) for s, k in examples),
        arity=2,
        draw=lambda: tgst.shapes().map(lambda s: ((s, s), {})),
    )


def _binary(name, fn, ref, domain="real"):
    """A row for fn(z, w) with z = x + iy, w = u + iv; z and w broadcast."""
    return OpCase(
        name,
        lambda x, y, u, v: parts(fn(complex_of(x, y), complex_of(u, v))),
        lambda x, y, u, v: parts(ref(complex_of(x, y), complex_of(u, v))),
        domain=domain,
        examples=tuple(((a, a, b, b), k) for (a, b), k in BINARY_SHAPES[:3]),
        arity=4,
        draw=lambda: tgst.broadcast_shapes(2).map(lambda s: ((s[0], s[0], s[1], s[1]), {})),
    )


@st.composite
def _matmul_shapes(draw):
    n, k, m = (draw(st.integers(1, 3)) for _ in range(3))
    batch = draw(st.sampled_from([(), (2,)]))
    return (batch + (n, k),) * 2 + ((k, m),) * 2, {}


ROWS = (
    _unary("real", tg.real, np.real, real_result=True),
    _unary("imag", tg.imag, np.imag, real_result=True),
    _unary("conj", tg.conj, np.conj),
    _unary("angle", tg.angle, np.angle, real_result=True, domain="nonzero"),
    _unary("absolute", tg.absolute, np.absolute, real_result=True, domain="nonzero"),
    _unary("sign_complex", tg.sign, np.sign, domain="nonzero"),  # z / |z|: a gradient, unlike real sign's
    _unary("exp", tg.exp, np.exp),
    _unary("log", tg.log, np.log, domain="nonzero"),
    _unary("sqrt", tg.sqrt, np.sqrt, domain="positive"),
    _unary("sin", tg.sin, np.sin),
    _unary("cos", tg.cos, np.cos),
    _unary("tanh", tg.tanh, np.tanh),
    OpCase(
        "var",
        lambda x, y, **k: tg.var(complex_of(x, y), **k),
        lambda x, y, **k: np.var(complex_of(x, y), **k),
        examples=((((3, 4), (3, 4)), {"axis": 1}), (((2, 3), (2, 3)), {})),
        arity=2,
        draw=lambda: tgst.shapes(min_dims=1).map(lambda s: ((s, s), {"axis": 0})).filter(lambda sk: sk[0][0][0] > 1),
    ),
    _binary("multiply", lambda z, w: z * w, np.multiply),
    _binary("divide", lambda z, w: z / w, np.divide, domain="nonzero"),
    _binary("power", lambda z, w: z**w, np.power, domain="positive"),
    OpCase(
        "matmul",
        lambda x, y, u, v: parts(complex_of(x, y) @ complex_of(u, v)),
        lambda x, y, u, v: parts(complex_of(x, y) @ complex_of(u, v)),
        examples=((((2, 3), (2, 3), (3, 2), (3, 2)), {}), (((2, 2, 3), (2, 2, 3), (3, 1), (3, 1)), {})),
        arity=4,
        draw=lambda: _matmul_shapes(),
    ),
)
