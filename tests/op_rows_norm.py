"""Op row for ``standardize`` (tapegrad/ops/norm.py), the op behind layer, batch and group normalisation.

Inputs take the ``distinct`` domain: values at least 0.15 apart, so no reduction has a tiny variance (whose
large derivatives finite differences cannot follow).
"""

import numpy as np
from hypothesis import strategies as st
from op_table import OpCase

import tapegrad as tg
from tapegrad import strategies as tgst


def _standardize_ref(x, w, b, axis=-1, eps=1e-5):
    x, w, b = (np.asarray(a, np.float64) for a in (x, w, b))
    mean = x.mean(axis=axis, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axis, keepdims=True)
    return ((x - mean) / np.sqrt(var + eps) * w + b).astype(np.result_type(x.dtype, w.dtype))


def _standardize_scale(arrays, kwargs):
    """What standardize's rounding error is relative to, element by element: centring loses the digits of
    ``(|x| + |mean|) / std`` (half an ulp of the mean is that relative error in ``x - mean``), which the weight
    scales; then the bias is added."""
    x, w, b = (np.asarray(a, np.float64) for a in arrays)
    axis = kwargs.get("axis", -1)
    mean, std = x.mean(axis=axis, keepdims=True), x.std(axis=axis, keepdims=True)
    return np.abs(w) * (1 + (np.abs(x) + np.abs(mean)) / std) + np.abs(b)


def _standardize_gradient_scale(arrays, kwargs, cotangent):
    """What the rule's float32 error is relative to, per input: x's gradient subtracts means of ``g w`` and of
    ``g w x_hat`` (each carrying the centring's lost digits, divided by std once more); w's and b's sum ``g x_hat``
    and ``g`` over the positions their broadcast repeats them."""
    x, w, b = (np.asarray(a, np.float64) for a in arrays)
    axis = kwargs.get("axis", -1)
    mean, std = x.mean(axis=axis, keepdims=True), x.std(axis=axis, keepdims=True)
    lost = 1 + (np.abs(x) + np.abs(mean)) / std
    x_hat = (x - mean) / std
    g = float(np.max(np.abs(cotangent), initial=0.0))
    return (
        g * max(1.0, float(np.max(np.abs(w), initial=0.0))) * float(np.max(lost * (1 + x_hat**2) / std)),
        g * float(np.max(lost)) * x.size / max(w.size, 1),
        g * x.size / max(b.size, 1),
    )


def _count(shape, axis):
    return int(np.prod([shape[a] for a in axis], dtype=np.int64))


@st.composite
def _standardize_draw(draw):
    shape = draw(tgst.shapes(min_dims=1))
    axis = draw(tgst.axes(len(shape), allow_empty=False))
    axes = (
        range(len(shape)) if axis is None else [a % len(shape) for a in (axis if isinstance(axis, tuple) else (axis,))]
    )
    if _count(shape, tuple(axes)) < 2:  # a variance of one element is 0: standardize is flat there
        shape = tuple(max(n, 2) if i == min(axes) else n for i, n in enumerate(shape))
    w, b = draw(tgst.shapes_broadcasting_to(shape)), draw(tgst.shapes_broadcasting_to(shape))
    return (shape, w, b), {"axis": axis}


ROWS = (
    OpCase(
        "standardize",
        lambda x, w, b, **k: tg.standardize(x, w, b, **k),
        lambda x, w, b, **k: _standardize_ref(x, w, b, **k).astype(np.asarray(x).dtype),
        domain="distinct",
        examples=(
            (((3, 4), (4,), (4,)), {}),
            (((2, 3, 4), (3, 1), (3, 1)), {"axis": (0, 2)}),
            (((2, 2, 3), (2, 3), ()), {"axis": (1, 2)}),
        ),
        draw=_standardize_draw,
        value_scale=_standardize_scale,
        gradient_scale=_standardize_gradient_scale,
    ),
)
