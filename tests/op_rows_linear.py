"""Op-table rows for tapegrad/ops/linear.py: contractions, convolutions, diagonals, and the functions composed
of them (``dot``, ``vdot``, ``inner``, ``outer``, ``kron``, ``diag``, ``matvec``, ``vecmat``, ``vecdot``); and
nn.Linear's op, ``linear`` (tapegrad/nn/_linear_op.py).

``einsum`` examples cover one to three operands, repeated indices (``ii->i``, ``ii``, ``iij->ij``), ``...``
with broadcasting, implicit output and ``optimize=``; its property draws subscripts from the same templates
with random sizes.
"""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from op_table import OpCase

import tapegrad as tg
from tapegrad import strategies as tgst

_NO_STANDARD = ("array_api_strict",)

# (subscripts, operand subscripts with "." for one ellipsis axis of the shared size); sizes drawn per letter
_EINSUM = (
    ("ij,jk->ik", ("ij", "jk")),
    ("ij,jk,kl->il", ("ij", "jk", "kl")),
    ("ii->i", ("ii",)),
    ("ii", ("ii",)),
    ("iij->ij", ("iij",)),
    ("ij->", ("ij",)),
    ("ij->ji", ("ij",)),
    ("ij", ("ij",)),
    ("ji", ("ij",)),
    ("i,i", ("i", "i")),
    ("i,j->ij", ("i", "j")),
    ("bij,bjk->bik", ("bij", "bjk")),
    ("...j,j->...", (".j", "j")),
    ("...i,...i->...", ("..i", ".i")),
    ("ij,ij->j", ("ij", "ij")),
    ("ijk,jl->kl", ("ijk", "jl")),
)


def _einsum(*xs, subscripts, optimize=False):
    return tg.einsum(subscripts, *xs, optimize=optimize)


def _np_einsum(*xs, subscripts, optimize=False):
    return np.einsum(subscripts, *xs)


@st.composite
def _einsum_draw(draw):
    subscripts, terms = draw(st.sampled_from(_EINSUM))
    size = {c: draw(st.integers(1, 3)) for c in "".join(terms) + "."}
    shapes = tuple(tuple(size[c] for c in t) for t in terms)
    return shapes, {"subscripts": subscripts, "optimize": draw(st.sampled_from([False, True, "greedy"]))}


@st.composite
def _tensordot_draw(draw):
    a = draw(tgst.shapes(max_dims=3))
    n = draw(st.integers(0, len(a)))
    contracted = draw(st.permutations(range(len(a))))[:n]
    rest = draw(tgst.shapes(max_dims=2))
    order = draw(st.permutations(range(n + len(rest))))
    dims = [a[i] for i in contracted] + list(rest)
    b = tuple(dims[i] for i in order)
    b_axes = [order.index(i) for i in range(n)]
    if draw(st.booleans()) and contracted == list(range(len(a) - n, len(a))) and b_axes == list(range(n)):
        return (a, b), {"axes": n}
    return (a, b), {"axes": (list(contracted), b_axes)}


@st.composite
def _convolve_draw(draw):
    m, n = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    return ((m,), (n,)), {"mode": draw(st.sampled_from(["full", "same", "valid"]))}


@st.composite
def _diagonal_draw(draw):
    s = draw(tgst.shapes(min_dims=2))
    axis1, axis2 = draw(st.permutations(range(len(s))))[:2]
    axis1 -= draw(st.sampled_from([0, len(s)]))  # sometimes negative
    return (s,), {"offset": draw(st.integers(-2, 2)), "axis1": axis1, "axis2": axis2}


@st.composite
def _triangle_draw(draw):
    return (draw(tgst.shapes(min_dims=2)),), {"k": draw(st.integers(-2, 2))}


@st.composite
def _diagflat_draw(draw):
    return (draw(tgst.shapes(min_dims=1, max_dims=2)),), {"k": draw(st.integers(-2, 2))}


@st.composite
def _diag_draw(draw):
    return (draw(tgst.shapes(min_dims=1, max_dims=2)),), {"k": draw(st.integers(-2, 2))}


def _pair(signature):
    shapes = hnp.mutually_broadcastable_shapes(signature=signature, max_dims=2, min_side=1, max_side=3)
    return lambda: st.tuples(shapes.map(lambda b: b.input_shapes), st.just({}))


@st.composite
def _dot_draw(draw):
    a = draw(tgst.shapes(max_dims=3))
    b = draw(tgst.shapes(max_dims=3))
    if a and b:
        b = b[:-2] + (a[-1],) + b[-1:] if len(b) >= 2 else (a[-1],)
    return (a, b), {}


@st.composite
def _inner_draw(draw):
    a, b = draw(tgst.shapes(max_dims=3)), draw(tgst.shapes(max_dims=3))
    if a and b:
        b = b[:-1] + (a[-1],)
    return (a, b), {}


@st.composite
def _vecdot_draw(draw):
    a, b = draw(tgst.broadcast_shapes(2, min_dims=1))
    n = draw(st.integers(1, 3))
    return (a[:-1] + (n,), b[:-1] + (n,)), {}


@st.composite
def _vdot_draw(draw):  # any two shapes with the same number of elements
    a = draw(tgst.shapes(max_dims=3))
    size = int(np.prod(a, dtype=np.int64))
    return (a, draw(st.sampled_from([a, (size,), a[::-1], (size, 1)]))), {}


def _any_two():
    return st.tuples(st.tuples(tgst.shapes(max_dims=3), tgst.shapes(max_dims=3)), st.just({}))


@st.composite
def _linear_draw(draw):
    # nn.Linear's shapes: x (..., in) with up to two leading axes, weight (out, in), bias (out,)
    n_in, n_out = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    lead = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    return (lead + (n_in,), (n_out, n_in), (n_out,)), {}


ROWS = (
    OpCase(
        "linear",
        ref=lambda x, w, b: x @ w.T + b,
        examples=(
            (((5, 4), (3, 4), (3,)), {}),
            (((2, 5, 4), (3, 4), (3,)), {}),
            (((4,), (3, 4), (3,)), {}),
        ),
        draw=_linear_draw,
    ),
    OpCase(
        "tensordot",
        ref=np.tensordot,
        examples=(
            (((3, 4), (4, 2)), {"axes": 1}),
            (((2, 3, 4), (3, 4, 2)), {"axes": 2}),
            (((3, 4), (4, 3)), {"axes": ([1, 0], [0, 1])}),
            (((2, 3), (4,)), {"axes": 0}),
            (((2, 3, 4), (4, 5, 2)), {"axes": ([-1, 0], [0, 2])}),
        ),
        draw=_tensordot_draw,
    ),
    OpCase(
        "einsum",
        _einsum,
        _np_einsum,
        examples=(
            (((3, 4), (4, 2)), {"subscripts": "ij,jk->ik"}),
            (((2, 3), (3, 4), (4, 2)), {"subscripts": "ij,jk,kl->il", "optimize": True}),
            (((3, 3),), {"subscripts": "ii->i"}),
            (((3, 3),), {"subscripts": "ii"}),
            (((2, 2, 3),), {"subscripts": "iij->ij"}),
            (((3,), (3,)), {"subscripts": "i,i"}),
            (((2, 3, 4), (4,)), {"subscripts": "...j,j->..."}),
            (((2, 1, 3), (4, 3)), {"subscripts": "...i,...i->..."}),
            (((2, 3, 4), (2, 4, 1)), {"subscripts": "bij,bjk->bik", "optimize": "greedy"}),
            (((3, 4),), {"subscripts": "ji"}),
        ),
        arity=2,
        draw=_einsum_draw,
        unsupported=_NO_STANDARD,
    ),
    OpCase(
        "convolve",
        ref=np.convolve,
        examples=((((5,), (3,)), {}), (((3,), (5,)), {"mode": "same"}), (((4,), (4,)), {"mode": "valid"})),
        draw=_convolve_draw,
        unsupported=_NO_STANDARD,
    ),
    OpCase(
        "correlate",
        ref=np.correlate,
        examples=((((5,), (3,)), {}), (((2,), (5,)), {"mode": "same"}), (((4,), (6,)), {"mode": "full"})),
        draw=_convolve_draw,
        unsupported=_NO_STANDARD,
    ),
    OpCase(
        "diagonal",
        ref=np.diagonal,
        examples=((((3, 4),), {}), (((3, 4),), {"offset": 1}), (((2, 3, 4),), {"offset": -1, "axis1": 2, "axis2": 0})),
        draw=_diagonal_draw,
        unsupported=_NO_STANDARD,
    ),
    OpCase(
        "trace",
        ref=np.trace,
        examples=((((3, 4),), {}), (((3, 4),), {"offset": -2}), (((2, 3, 4),), {"offset": 1, "axis1": -1, "axis2": 1})),
        draw=_diagonal_draw,
        unsupported=_NO_STANDARD,
    ),
    OpCase(
        "diagflat",
        ref=np.diagflat,
        examples=((((3,),), {}), (((2, 2),), {"k": -1})),
        draw=_diagflat_draw,
        unsupported=_NO_STANDARD,
    ),
    OpCase("tril", ref=np.tril, examples=((((3, 4),), {}), (((2, 3, 4),), {"k": 1})), draw=_triangle_draw),
    OpCase("triu", ref=np.triu, examples=((((3, 4),), {}), (((2, 3, 4),), {"k": -1})), draw=_triangle_draw),
    # composed of the ops above
    OpCase(
        "dot",
        tg.dot,
        np.dot,
        examples=(
            (((3, 4), (4, 2)), {}),
            (((4,), (4,)), {}),
            (((2, 3, 4), (4,)), {}),
            (((2, 3), (4, 3, 2)), {}),
            (((), (3,)), {}),
        ),
        arity=2,
        draw=_dot_draw,
    ),
    OpCase(
        "vdot", tg.vdot, np.vdot, examples=((((3, 4), (12,)), {}), (((2, 2), (4, 1)), {})), arity=2, draw=_vdot_draw
    ),
    OpCase(
        "inner",
        tg.inner,
        np.inner,
        examples=((((3, 4), (2, 4)), {}), (((4,), (4,)), {}), (((), (2, 3)), {})),
        arity=2,
        draw=_inner_draw,
    ),
    OpCase("outer", tg.outer, np.outer, examples=((((3,), (4,)), {}), (((2, 2), ()), {})), arity=2, draw=_any_two),
    OpCase("kron", tg.kron, np.kron, examples=((((2, 3), (2, 2)), {}), (((3,), (2, 2)), {})), arity=2, draw=_any_two),
    OpCase(
        "diag",
        tg.diag,
        np.diag,
        examples=((((3,),), {}), (((3, 4),), {"k": 1}), (((3,),), {"k": -2})),
        arity=1,
        draw=_diag_draw,
        unsupported=(*_NO_STANDARD, "dask"),
    ),
    OpCase(
        "matvec",
        tg.matvec,
        np.matvec,
        examples=((((3, 4), (4,)), {}), (((2, 3, 4), (1, 4)), {})),
        arity=2,
        draw=_pair("(m,n),(n)->(m)"),
    ),
    OpCase(
        "vecmat",
        tg.vecmat,
        np.vecmat,
        examples=((((4,), (4, 3)), {}), (((2, 1, 4), (3, 4, 2)), {})),
        arity=2,
        draw=_pair("(n),(n,m)->(m)"),
    ),
    OpCase(
        "vecdot",
        tg.vecdot,
        np.vecdot,
        examples=((((3, 4), (4,)), {}), (((2, 1, 3), (4, 3)), {})),
        arity=2,
        draw=_vecdot_draw,
    ),
)
