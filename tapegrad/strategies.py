"""Hypothesis strategies for testing ops and gradients, the ones tapegrad's own suite uses.

Shapes are small (0-d to 4-d, sides 1 to 3, size-1 axes on purpose) so that finite differences stay cheap;
values come from a named *domain* so that finite differences are meaningful for the op under test:

- ``"real"``: any value in [-2, 2].
- ``"positive"``: [0.25, 2] (log, sqrt, the base of a power).
- ``"nonzero"``: 0.25 <= |x| <= 2 (division, relu and abs away from their kink).
- ``"unit"``: [-0.9, 0.9].
- ``"zeros"``: as ``"real"``, with exact zeros among the values (about a third of them): for ops whose rules
  must handle zeros exactly, such as ``prod`` and ``cumprod``.
- ``"distinct"``: the values of all inputs together are at least 0.15 apart and at least 0.075 from 0 and
  ±0.5, so max/min/maximum/minimum/clip/relu/abs meet no tie or kink within the finite-difference step.

This module needs ``hypothesis`` (the ``test`` extra); ``import tapegrad`` never imports it.

>>> from hypothesis import find, given
>>> @given(broadcast_shapes(num_shapes=2).flatmap(lambda s: inputs(s, "positive")))
... def check(arrays):
...     x, y = arrays
...     assert (x > 0).all() and (y > 0).all() and np.broadcast(x, y).ndim <= 4
>>> check()
"""

from __future__ import annotations

import numpy as np
from hypothesis import find  # noqa: F401  (the docstring examples use it)
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

__all__ = [
    "DOMAINS",
    "FLOAT_DTYPES",
    "dtypes",
    "shapes",
    "broadcast_shapes",
    "shapes_broadcasting_to",
    "axes",
    "reduction_kwargs",
    "values",
    "inputs",
]

FLOAT_DTYPES = (np.float32, np.float64)
DOMAINS = ("real", "positive", "nonzero", "unit", "distinct", "zeros")
MAX_DIMS, MAX_SIDE = 4, 3

_FLOATS = dict(allow_nan=False, allow_infinity=False, allow_subnormal=False)
_ELEMENTS = {
    "real": st.floats(-2.0, 2.0, **_FLOATS),
    "positive": st.floats(0.25, 2.0, **_FLOATS),
    "nonzero": st.floats(0.25, 2.0, **_FLOATS) | st.floats(-2.0, -0.25, **_FLOATS),
    "unit": st.floats(-0.9, 0.9, **_FLOATS),
    "zeros": st.one_of(st.just(0.0), st.floats(-2.0, 2.0, **_FLOATS), st.floats(-2.0, 2.0, **_FLOATS)),
}
_GRID, _JITTER = 0.25, 0.05  # "distinct" values: a shuffled grid k * 0.25 + 0.125, each moved by at most 0.05


def dtypes() -> st.SearchStrategy:
    """float32 or float64.

    >>> find(dtypes(), lambda d: d == np.float64)
    <class 'numpy.float64'>
    """
    return st.sampled_from(FLOAT_DTYPES)


def shapes(min_dims: int = 0, max_dims: int = MAX_DIMS, max_side: int = MAX_SIDE) -> st.SearchStrategy:
    """One shape, ``min_dims``-d to ``max_dims``-d, every side from 1 to ``max_side``.

    >>> find(shapes(min_dims=2), lambda s: True)   # hypothesis shrinks towards size-1 axes
    (1, 1)
    """
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=max_side)


def broadcast_shapes(
    num_shapes: int = 2, min_dims: int = 0, max_dims: int = MAX_DIMS, max_side: int = MAX_SIDE
) -> st.SearchStrategy:
    """A tuple of ``num_shapes`` shapes that broadcast against each other (size-1 and missing axes included).

    >>> find(broadcast_shapes(2), lambda s: len(s[0]) == 2 and s[1] == (3,))
    ((1, 1), (3,))
    """
    return hnp.mutually_broadcastable_shapes(
        num_shapes=num_shapes, min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=max_side
    ).map(lambda b: b.input_shapes)


@st.composite
def shapes_broadcasting_to(draw, shape: tuple) -> tuple:
    """A shape that ``np.broadcast_to(x, shape)`` accepts: a suffix of ``shape`` with some sides set to 1.

    >>> find(shapes_broadcasting_to((2, 3, 4)), lambda s: len(s) == 2)
    (3, 4)
    """
    ndim = draw(st.integers(0, len(shape)))
    tail = shape[len(shape) - ndim :]
    ones = draw(st.lists(st.booleans(), min_size=ndim, max_size=ndim))
    return tuple(1 if one else n for n, one in zip(tail, ones))


def axes(ndim: int, *, allow_none: bool = True, allow_empty: bool = True) -> st.SearchStrategy:
    """An ``axis`` argument for an array of ``ndim`` dimensions: None, one int or a tuple, negatives included.

    >>> find(axes(3), lambda a: isinstance(a, tuple) and len(a) == 2)
    (0, 1)
    """
    options = [hnp.valid_tuple_axes(ndim, min_size=0 if allow_empty else 1)]
    if ndim:
        options.append(st.integers(-ndim, ndim - 1))
    if allow_none:
        options.append(st.none())
    return st.one_of(options)


def reduction_kwargs(ndim: int) -> st.SearchStrategy:
    """``{"axis": ..., "keepdims": ...}`` for a reduction of an ``ndim``-d array.

    >>> find(reduction_kwargs(2), lambda k: k["keepdims"])
    {'axis': None, 'keepdims': True}
    """
    return st.fixed_dictionaries({"axis": axes(ndim), "keepdims": st.booleans()})


def values(shape: tuple, domain: str = "real", dtype=np.float64) -> st.SearchStrategy:
    """One array of ``shape`` and ``dtype`` with its values in ``domain`` (see the module docstring).

    >>> a = find(values((2, 3), "positive", np.float32), lambda a: True)
    >>> a.shape, a.dtype, bool((a > 0).all())
    ((2, 3), dtype('float32'), True)
    """
    return inputs((shape,), domain, dtype).map(lambda arrays: arrays[0])


@st.composite
def inputs(draw, shapes: tuple, domain: str = "real", dtype=np.float64) -> tuple:
    """A tuple of arrays, one per shape, with values in ``domain``; ``"distinct"`` holds across all of them,
    so that ``maximum(x, y)`` meets no tie between x and y either.

    >>> find(inputs(((3,), (2, 1)), "distinct"), lambda a: True)
    (array([-0.375, -0.125,  0.125]), array([[0.375],
           [0.625]]))
    """
    if domain not in DOMAINS:
        raise ValueError(f"inputs: unknown domain {domain!r}; choose one of {DOMAINS}")
    if domain == "distinct":
        sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
        n = sum(sizes)
        order = np.array(draw(st.permutations(range(n))), dtype=np.float64)
        jitter = draw(hnp.arrays(np.float64, n, elements=st.floats(-_JITTER, _JITTER, **_FLOATS)))
        flat = (order - n // 2) * _GRID + _GRID / 2 + jitter
        bounds = np.cumsum([0] + sizes)
        arrays = [flat[a:b].reshape(s) for a, b, s in zip(bounds[:-1], bounds[1:], shapes)]
    else:
        arrays = [draw(hnp.arrays(np.float64, s, elements=_ELEMENTS[domain])) for s in shapes]
    return tuple(np.asarray(a, dtype=dtype) for a in arrays)
