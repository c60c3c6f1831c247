"""Op rows for convolution and pooling (tapegrad/ops/conv.py, tapegrad/ops/pool.py).

The references are direct loops over output positions (PyTorch's definitions, with its divisor and
``ceil_mode`` rules written out as in its C++ kernels), computed in float64: nothing is shared with the
im2col code under test. The property tests draw 1-D and 2-D inputs with strides, padding (also ``"same"``),
dilation, groups and ``ceil_mode``, kept small so that finite differences stay cheap.
"""

import itertools
import math

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st
from op_table import OpCase

import tapegrad as tg


def _f64(f):
    return lambda *xs, **k: np.asarray(f(*[np.asarray(x, np.float64) for x in xs], **k)).astype(np.asarray(xs[0]).dtype)


def _tuple(v, d):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * d


def _same_pads(kernel, dilation):
    return [((dl * (k - 1)) // 2, dl * (k - 1) - (dl * (k - 1)) // 2) for k, dl in zip(kernel, dilation)]


def _conv_ref(x, w, stride=1, padding=0, dilation=1, groups=1):
    d = x.ndim - 2
    kernel, stride, dilation = w.shape[2:], _tuple(stride, d), _tuple(dilation, d)
    padding = 0 if padding == "valid" else padding
    pads = _same_pads(kernel, dilation) if padding == "same" else [(p, p) for p in _tuple(padding, d)]
    xp = np.pad(x, [(0, 0), (0, 0)] + pads)
    outs = [(n - dl * (k - 1) - 1) // s + 1 for n, k, s, dl in zip(xp.shape[2:], kernel, stride, dilation)]
    n, o = x.shape[0], w.shape[0]
    cg, og = w.shape[1], o // groups
    out = np.zeros((n, o, *outs))
    for b, oc in itertools.product(range(n), range(o)):
        g = oc // og
        for pos in itertools.product(*map(range, outs)):
            window = xp[
                (b, slice(g * cg, (g + 1) * cg))
                + tuple(
                    slice(p * s, p * s + dl * (k - 1) + 1, dl) for p, s, dl, k in zip(pos, stride, dilation, kernel)
                )
            ]
            out[(b, oc) + pos] = np.sum(window * w[oc])
    return out


def _conv_transpose_ref(x, w, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    d = x.ndim - 2
    kernel, stride, dilation = w.shape[2:], _tuple(stride, d), _tuple(dilation, d)
    padding, output_padding = _tuple(padding, d), _tuple(output_padding, d)
    n, c = x.shape[:2]
    cg, og = c // groups, w.shape[1]
    full = [
        (m - 1) * s + dl * (k - 1) + 1 + e
        for m, s, dl, k, e in zip(x.shape[2:], stride, dilation, kernel, output_padding)
    ]
    out = np.zeros((n, og * groups, *full))
    for b, ic in itertools.product(range(n), range(c)):
        g = ic // cg
        for pos in itertools.product(*map(range, x.shape[2:])):
            for off in itertools.product(*map(range, kernel)):
                at = tuple(p * s + o * dl for p, s, o, dl in zip(pos, stride, off, dilation))
                out[(b, slice(g * og, (g + 1) * og)) + at] += x[(b, ic) + pos] * w[(ic, slice(None)) + off]
    return out[(..., *(slice(p, m - p) for p, m in zip(padding, full)))]


def _unfold_ref(x, kernel_size, dilation=1, padding=0, stride=1):
    d = x.ndim - 2
    kernel, stride, dilation, padding = (_tuple(v, d) for v in (kernel_size, stride, dilation, padding))
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    outs = [(n - dl * (k - 1) - 1) // s + 1 for n, k, s, dl in zip(xp.shape[2:], kernel, stride, dilation)]
    cols = []
    for c in range(x.shape[1]):
        for off in itertools.product(*map(range, kernel)):
            rows = [
                xp[(slice(None), c) + tuple(p * s + o * dl for p, s, o, dl in zip(pos, stride, off, dilation))]
                for pos in itertools.product(*map(range, outs))
            ]
            cols.append(np.stack(rows, axis=-1))
    return np.stack(cols, axis=1)


def _fold_ref(cols, output_size, kernel_size, dilation=1, padding=0, stride=1):
    d = len(output_size)
    kernel, stride, dilation, padding = (_tuple(v, d) for v in (kernel_size, stride, dilation, padding))
    padded = [m + 2 * p for m, p in zip(output_size, padding)]
    outs = [(n - dl * (k - 1) - 1) // s + 1 for n, k, s, dl in zip(padded, kernel, stride, dilation)]
    n, k = cols.shape[0], math.prod(kernel)
    out = np.zeros((n, cols.shape[1] // k, *padded))
    for c in range(cols.shape[1] // k):
        for j, off in enumerate(itertools.product(*map(range, kernel))):
            for j2, pos in enumerate(itertools.product(*map(range, outs))):
                at = tuple(p * s + o * dl for p, s, o, dl in zip(pos, stride, off, dilation))
                out[(slice(None), c) + at] += cols[:, c * k + j, j2]
    return out[(..., *(slice(p, p + m) for p, m in zip(padding, output_size)))]


def _pool_sizes(n, k, s, p, dl, ceil_mode):
    # PyTorch's pooling_output_shape
    m = (n + 2 * p - dl * (k - 1) - 1 + ((s - 1) if ceil_mode else 0)) // s + 1
    if ceil_mode and (m - 1) * s >= n + p:
        m -= 1
    return m


def _pool_ref(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, count_include_pad=True, kind="max"):
    d = x.ndim - 2
    kernel = _tuple(kernel_size, d)
    stride = kernel if stride is None else _tuple(stride, d)
    padding, dilation = _tuple(padding, d), _tuple(dilation, d)
    outs = [_pool_sizes(*a, ceil_mode) for a in zip(x.shape[2:], kernel, stride, padding, dilation)]
    out = np.zeros(x.shape[:2] + tuple(outs))
    for pos in itertools.product(*map(range, outs)):
        if kind == "max":
            idx = [
                [p * s - pd + o * dl for o in range(k) if 0 <= p * s - pd + o * dl < n]
                for p, s, pd, dl, k, n in zip(pos, stride, padding, dilation, kernel, x.shape[2:])
            ]
            out[(...,) + pos] = (
                x[np.ix_(range(x.shape[0]), range(x.shape[1]), *idx)].reshape(x.shape[:2] + (-1,)).max(-1)
            )
        else:  # PyTorch's avg_pool kernel: the divisor counts padding (but not the ceil_mode overhang) if asked
            starts = [p * s - pd for p, s, pd in zip(pos, stride, padding)]
            ends = [min(a + k, n + pd) for a, k, n, pd in zip(starts, kernel, x.shape[2:], padding)]
            size = math.prod(e - a for a, e in zip(starts, ends))
            starts = [max(a, 0) for a in starts]
            ends = [min(e, n) for e, n in zip(ends, x.shape[2:])]
            window = x[(...,) + tuple(slice(a, e) for a, e in zip(starts, ends))]
            div = size if count_include_pad else math.prod(e - a for a, e in zip(starts, ends))
            out[(...,) + pos] = window.sum(axis=tuple(range(2, 2 + d))) / div
    return out


def _adaptive_ref(x, output_size):
    d = x.ndim - 2
    size = _tuple(output_size, d)
    out = np.zeros(x.shape[:2] + size)
    for pos in itertools.product(*map(range, size)):
        index = tuple(slice((i * n) // m, -(-(i + 1) * n // m)) for i, n, m in zip(pos, x.shape[2:], size))
        out[(...,) + pos] = x[(...,) + index].mean(axis=tuple(range(2, 2 + d)))
    return out


def _conv(x, w, **k):
    return (tg.conv1d if x.ndim == 3 else tg.conv2d)(x, w, **k)


def _conv_transpose(x, w, **k):
    return (tg.conv_transpose1d if x.ndim == 3 else tg.conv_transpose2d)(x, w, **k)


def _pool(kind):
    fns = {"max": (tg.max_pool1d, tg.max_pool2d), "avg": (tg.avg_pool1d, tg.avg_pool2d)}[kind]
    return lambda x, **k: fns[x.ndim - 3](x, **k)


def _adaptive(x, **k):
    return (tg.adaptive_avg_pool1d if x.ndim == 3 else tg.adaptive_avg_pool2d)(x, **k)


# -- hypothesis draws: small 1-D and 2-D problems whose outputs are never empty ------------------------------
@st.composite
def _conv_problem(draw, transpose=False):
    d = draw(st.sampled_from([1, 2]))
    groups = draw(st.sampled_from([1, 2]))
    cg, og = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(d))
    stride = tuple(draw(st.integers(1, 2)) for _ in range(d))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(d))
    n = draw(st.integers(1, 2))
    if transpose:
        sizes = tuple(draw(st.integers(1, 3)) for _ in range(d))
        padding = tuple(draw(st.integers(0, (dl * (k - 1)) // 2)) for k, dl in zip(kernel, dilation))
        extra = tuple(draw(st.integers(0, max(s, dl) - 1)) for s, dl in zip(stride, dilation))
        kwargs = dict(stride=stride, padding=padding, output_padding=extra, dilation=dilation, groups=groups)
        return ((n, cg * groups) + sizes, (cg * groups, og) + kernel), kwargs
    padding = draw(st.sampled_from(["same", "valid", 0, 1]) if stride == (1,) * d else st.sampled_from([0, 1]))
    spans = [dl * (k - 1) + 1 for k, dl in zip(kernel, dilation)]
    low = [max(1, s - (0 if padding in ("same", "valid", 0) else 2)) for s in spans]
    sizes = tuple(draw(st.integers(lo, lo + 3)) for lo in low)
    kwargs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    return ((n, cg * groups) + sizes, (og * groups, cg) + kernel), kwargs


@st.composite
def _unfold_problem(draw, fold=False):
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(2))
    stride, dilation = (
        tuple(draw(st.integers(1, 2)) for _ in range(2)),
        tuple(draw(st.integers(1, 2)) for _ in range(2)),
    )
    padding = draw(st.integers(0, 1))
    sizes = tuple(dl * (k - 1) + 1 + draw(st.integers(0, 2)) for k, dl in zip(kernel, dilation))
    kwargs = dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation)
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    if not fold:
        return ((n, c) + sizes,), kwargs
    outs = [(m + 2 * padding - dl * (k - 1) - 1) // s + 1 for m, k, s, dl in zip(sizes, kernel, stride, dilation)]
    return ((n, c * math.prod(kernel), math.prod(outs)),), dict(kwargs, output_size=sizes)


@st.composite
def _pool_problem(draw, kind):
    d = draw(st.sampled_from([1, 2]))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(d))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(d))
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)
    kwargs = dict(kernel_size=kernel, stride=stride, padding=padding, ceil_mode=draw(st.booleans()))
    if kind == "max":
        kwargs["dilation"] = tuple(draw(st.integers(1, 2)) for _ in range(d))
    else:
        kwargs["count_include_pad"] = draw(st.booleans())
    spans = [dl * (k - 1) + 1 for k, dl in zip(kernel, kwargs.get("dilation", (1,) * d))]
    sizes = tuple(draw(st.integers(max(1, s - 2 * p), max(1, s - 2 * p) + 3)) for s, p in zip(spans, padding))
    if kind == "max":  # a window over padding alone has no maximum (-inf): PyTorch allows it, the tests do not
        dilation = kwargs["dilation"]
        for n, k, s, p, dl in zip(sizes, kernel, stride, padding, dilation):
            for i in range(_pool_sizes(n, k, s, p, dl, kwargs["ceil_mode"])):
                if not any(0 <= i * s - p + o * dl < n for o in range(k)):
                    assume(False)
    return ((draw(st.integers(1, 2)), draw(st.integers(1, 2))) + sizes,), kwargs


@st.composite
def _adaptive_problem(draw):
    d = draw(st.sampled_from([1, 2]))
    sizes = tuple(draw(st.integers(1, 5)) for _ in range(d))
    size = tuple(draw(st.integers(1, 4)) for _ in range(d))
    return ((draw(st.integers(1, 2)), draw(st.integers(1, 2))) + sizes,), {"output_size": size if d == 2 else size[0]}


ROWS = (
    OpCase(
        "conv",
        _conv,
        _f64(_conv_ref),
        examples=(
            (((2, 3, 5, 4), (2, 3, 3, 2)), {}),
            (((1, 4, 6, 5), (4, 2, 3, 3)), {"stride": 2, "padding": 1, "groups": 2}),
            (((1, 2, 5, 5), (3, 2, 2, 3)), {"padding": "same", "dilation": (2, 1)}),
            (((2, 2, 7), (4, 1, 3)), {"stride": 2, "padding": 2, "dilation": 2, "groups": 2}),
        ),
        draw=_conv_problem,
    ),
    OpCase(
        "conv_transpose",
        _conv_transpose,
        _f64(_conv_transpose_ref),
        examples=(
            (((2, 3, 3, 2), (3, 2, 2, 3)), {}),
            (((1, 4, 3, 3), (4, 1, 3, 2)), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}),
            (((1, 2, 4), (2, 3, 3)), {"stride": 3, "padding": 1, "output_padding": 2, "dilation": 2}),
        ),
        draw=lambda: _conv_problem(transpose=True),
    ),
    OpCase(
        "unfold",
        lambda x, **k: tg.unfold(x, **k),
        _f64(_unfold_ref),
        examples=(
            (((2, 2, 4, 5),), {"kernel_size": 2}),
            (((1, 2, 5, 4),), {"kernel_size": (3, 2), "stride": 2, "padding": 1, "dilation": (1, 2)}),
        ),
        draw=_unfold_problem,
    ),
    OpCase(
        "fold",
        lambda c, **k: tg.fold(c, **k),
        _f64(_fold_ref),
        examples=(
            (((2, 8, 12),), {"output_size": (4, 5), "kernel_size": 2}),
            (((1, 6, 18),), {"output_size": (5, 4), "kernel_size": (3, 1), "stride": (2, 1), "padding": 1}),
        ),
        draw=lambda: _unfold_problem(fold=True),
    ),
    OpCase(
        "max_pool",
        _pool("max"),
        _f64(lambda x, **k: _pool_ref(x, kind="max", **k)),
        domain="distinct",
        examples=(
            (((2, 2, 4, 4),), {"kernel_size": 2}),
            (((1, 2, 5, 6),), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
            (((1, 2, 7),), {"kernel_size": 2, "stride": 1, "dilation": 2}),
        ),
        draw=lambda: _pool_problem("max"),
    ),
    OpCase(
        "avg_pool",
        _pool("avg"),
        _f64(lambda x, **k: _pool_ref(x, kind="avg", **k)),
        examples=(
            (((2, 2, 4, 4),), {"kernel_size": 2}),
            (((1, 2, 5, 6),), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
            (((1, 2, 5, 6),), {"kernel_size": (2, 3), "padding": 1, "count_include_pad": False}),
            (((1, 2, 7),), {"kernel_size": 3, "stride": 2}),
        ),
        draw=lambda: _pool_problem("avg"),
    ),
    OpCase(
        "adaptive_avg_pool",
        _adaptive,
        _f64(_adaptive_ref),
        examples=(
            (((2, 2, 4, 4),), {"output_size": 1}),
            (((1, 2, 5, 7),), {"output_size": (3, 4)}),
            (((1, 2, 5),), {"output_size": 3}),
        ),
        draw=_adaptive_problem,
    ),
)
