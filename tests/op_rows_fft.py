"""Op-table rows for ``tapegrad.fft`` (the ops fftn, ifftn, rfft, irfft, through every public function that
uses them) and for roll. Complex results are checked as their stacked real and imaginary
parts, complex inputs are built from two real ones (``op_rows_complex``), so the op table's real-valued
checks cover both real directions; ``n`` / ``s`` truncate and pad, every ``norm`` is drawn.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from op_rows_complex import complex_of, parts
from op_table import OpCase

import tapegrad as tg
from tapegrad import fft

NORMS = (None, "backward", "ortho", "forward")


@st.composite
def _one_axis(draw, arity=1):
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    kwargs = {"axis": axis, "norm": draw(st.sampled_from(NORMS))}
    n = draw(st.none() | st.integers(1, 5))
    if n is not None:
        kwargs["n"] = n
    return (shape,) * arity, kwargs


@st.composite
def _some_axes(draw, arity=1):
    shape = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple))
    ndim = len(shape)
    axes = draw(st.permutations(range(ndim)).flatmap(lambda p: st.integers(1, ndim).map(lambda k: tuple(p[:k]))))
    kwargs = {"axes": axes, "norm": draw(st.sampled_from(NORMS))}
    if draw(st.booleans()):
        kwargs["s"] = tuple(draw(st.integers(1, 4)) for _ in axes)
    return (shape,) * arity, kwargs


def _irfft_one_axis():
    # at least two values along the axis, so the default length 2 (m - 1) is positive
    return _one_axis(arity=2).filter(lambda sk: sk[0][0][sk[1]["axis"]] > 1 or "n" in sk[1])


def _irfftn_axes():
    return _some_axes(arity=2).filter(lambda sk: "s" in sk[1] or sk[0][0][sk[1]["axes"][-1]] > 1)


def _c2c(name, fn, ref, draw, examples, complex_input=False):
    if complex_input:
        return OpCase(
            name,
            lambda x, y, **k: parts(fn(complex_of(x, y), **k)),
            lambda x, y, **k: parts(ref(complex_of(x, y), **k)),
            arity=2,
            examples=tuple(((s[0], s[0]), k) for s, k in examples),
            draw=lambda: draw(arity=2),
        )
    return OpCase(
        name,
        lambda x, **k: parts(fn(x, **k)),
        lambda x, **k: parts(ref(x, **k)),
        arity=1,
        examples=examples,
        draw=lambda: draw(),
    )


_ONE = ((((4,),), {}), (((3, 4),), {"n": 6, "axis": 0, "norm": "ortho"}), (((2, 5),), {"n": 3, "norm": "forward"}))
_MANY = ((((3, 4),), {}), (((2, 3, 4),), {"axes": (0, 2), "s": (3, 2)}), (((2, 3),), {"axes": (1,), "norm": "ortho"}))


@st.composite
def _roll_draw(draw):
    shape = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple))
    ndim = len(shape)
    if draw(st.booleans()):
        return (shape,), {"shift": draw(st.integers(-4, 4)), "axis": None}
    axes = draw(st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim))
    return (shape,), {"shift": tuple(draw(st.integers(-4, 4)) for _ in axes), "axis": tuple(axes)}


@st.composite
def _shift_draw(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
    axes = draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    return (shape,), {"axes": axes}


ROWS = (
    _c2c("fftn", fft.fft, np.fft.fft, _one_axis, _ONE),
    _c2c("fftn", fft.fft, np.fft.fft, _one_axis, _ONE[1:], complex_input=True),
    _c2c("fftn", fft.fftn, np.fft.fftn, _some_axes, _MANY),
    _c2c(
        "fftn",
        fft.fft2,
        np.fft.fft2,
        lambda arity=1: st.just((((2, 3, 4),) * arity, {"norm": "ortho"})),
        ((((2, 3, 4),), {}),),
    ),
    _c2c("ifftn", fft.ifft, np.fft.ifft, _one_axis, _ONE),
    _c2c("ifftn", fft.ifftn, np.fft.ifftn, _some_axes, _MANY, complex_input=True),
    _c2c(
        "ifftn",
        fft.ifft2,
        np.fft.ifft2,
        lambda arity=1: st.just((((3, 2),) * arity, {"s": (2, 4)})),
        ((((3, 4),), {}),),
        complex_input=True,
    ),
    _c2c("rfft", fft.rfft, np.fft.rfft, _one_axis, _ONE),
    _c2c("rfft", fft.rfftn, np.fft.rfftn, _some_axes, _MANY),
    _c2c("rfft", fft.ihfft, np.fft.ihfft, _one_axis, _ONE),
    OpCase(
        "irfft",
        lambda x, y, **k: fft.irfft(complex_of(x, y), **k),
        lambda x, y, **k: np.fft.irfft(complex_of(x, y), **k),
        examples=(
            (((3,), (3,)), {}),
            (((3, 4), (3, 4)), {"n": 5, "axis": 0, "norm": "ortho"}),
            (((2, 3), (2, 3)), {"n": 6}),
        ),
        arity=2,
        draw=_irfft_one_axis,
    ),
    OpCase(
        "irfft",
        lambda x, y, **k: fft.hfft(complex_of(x, y), **k),
        lambda x, y, **k: np.fft.hfft(complex_of(x, y), **k),
        examples=((((3,), (3,)), {}), (((2, 4), (2, 4)), {"n": 5, "norm": "forward"})),
        arity=2,
        draw=_irfft_one_axis,
    ),
    OpCase(
        "irfft",
        lambda x, y, **k: fft.irfftn(complex_of(x, y), **k),
        lambda x, y, **k: np.fft.irfftn(complex_of(x, y), **k),
        examples=((((3, 3), (3, 3)), {}), (((2, 3, 4), (2, 3, 4)), {"axes": (2, 0), "s": (3, 4)})),
        arity=2,
        draw=_irfftn_axes,
    ),
    OpCase(
        "roll",
        lambda x, shift=1, axis=None: tg.roll(x, shift, axis),
        lambda x, shift=1, axis=None: np.roll(x, shift, axis),
        examples=(
            (((3, 4),), {}),
            (((2, 3, 4),), {"shift": (1, -2), "axis": (0, -1)}),
            (((3,),), {"shift": 5, "axis": 0}),
        ),
        draw=_roll_draw,
    ),
    OpCase(
        "roll", fft.fftshift, np.fft.fftshift, examples=((((3, 4),), {}), (((5, 2),), {"axes": 0})), draw=_shift_draw
    ),
    OpCase(
        "roll", fft.ifftshift, np.fft.ifftshift, examples=((((3, 4),), {}), (((5, 3),), {"axes": -1})), draw=_shift_draw
    ),
)
