"""Op-table rows for products, running totals and statistics (tapegrad/ops/cumulative.py, statistics.py,
quantiles.py).

``prod`` and ``cumprod`` draw from the "zeros" domain, so reductions with no zero, one zero and several zeros
all occur (exact zeros, where a rule dividing by x would fail). Order statistics (``median``, ``percentile``,
``quantile``), ``ptp`` and the NaN-ignoring extremes draw distinct values, so no tie moves within the
finite-difference step; ``std`` and ``nanstd`` too, so the variance is never 0 (where sqrt has no derivative).
"""

import numpy as np
from hypothesis import strategies as st
from op_table import OpCase

import tapegrad as tg
from tapegrad import strategies as tgst


def _count(shape, axis):
    axis = range(len(shape)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    return int(np.prod([shape[a] for a in axis], dtype=np.int64))


def _one_shape(kwargs_of, min_dims=0):
    return tgst.shapes(min_dims=min_dims).flatmap(lambda s: st.tuples(st.just((s,)), kwargs_of(s)))


def _two_or_more():  # at least two elements in every reduction (ddof=1, or a variance that can be nonzero)
    return _one_shape(lambda s: tgst.reduction_kwargs(len(s))).filter(lambda sk: _count(sk[0][0], sk[1]["axis"]) >= 2)


def _scan_draw():  # cumsum, cumprod: one axis (negative too) or None (the flattened input)
    axis = lambda s: st.none() | (st.integers(-len(s), len(s) - 1) if s else st.none())
    return _one_shape(lambda s: st.fixed_dictionaries({"axis": axis(s)}))


def _average_draw():  # weights of the input's shape, or 1-D along a single axis
    def pair(s):
        kw = tgst.reduction_kwargs(len(s))
        full = kw.map(lambda k: ((s, s), k))
        if not s:
            return full
        one = st.integers(-len(s), len(s) - 1).flatmap(
            lambda a: st.booleans().map(lambda keep: ((s, (s[a],)), {"axis": a, "keepdims": keep}))
        )
        return full | one

    return tgst.shapes().flatmap(pair)


def _quantile_draw():
    def kwargs(s):
        q = st.floats(0.0, 1.0, allow_nan=False) | st.lists(
            st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=3
        )
        method = st.sampled_from(["linear", "linear", "lower", "higher", "nearest", "midpoint"])
        return st.fixed_dictionaries({"q": q, "method": method}).flatmap(
            lambda k: tgst.reduction_kwargs(len(s)).map(lambda r: {**k, **r})
        )

    return _one_shape(kwargs)


_SCAN_EXAMPLES = (
    (((3, 4),), {"axis": None}),
    (((3, 4),), {"axis": 1}),
    (((2, 3, 4),), {"axis": -3}),
    (((7,),), {"axis": 0}),
    (((),), {"axis": None}),
)
_SPREAD_EXAMPLES = (
    (((3, 4),), {}),
    (((3, 4),), {"axis": 0}),
    (((2, 3, 4),), {"axis": (0, -1), "keepdims": True}),
    (((2, 3, 4),), {"axis": -2, "ddof": 1}),
)
_QUANTILE_EXAMPLES = (
    (((5,),), {"q": 0.3}),
    (((3, 4),), {"q": [0.0, 0.5, 1.0], "axis": 1}),
    (((2, 3, 4),), {"q": 0.75, "axis": (0, 2), "keepdims": True}),
    (((3, 4),), {"q": [0.2, 0.9], "axis": -2, "method": "midpoint"}),
    (((4, 3),), {"q": 0.4, "axis": 0, "method": "nearest", "keepdims": True}),
)


def _percentile(x, q, **k):
    return tg.percentile(x, np.multiply(q, 100), **k)


def _np_percentile(x, q, **k):
    return np.percentile(x, np.multiply(q, 100), **k)


def _average(a, w, **k):
    return tg.average(a, weights=w, **k)


def _np_average(a, w, **k):
    return np.average(a, weights=w, **k)


_SPREAD = {"examples": _SPREAD_EXAMPLES, "arity": 1, "axis_kwargs": True, "draw": _two_or_more}
_ORDER = {
    "domain": "distinct",
    "examples": _QUANTILE_EXAMPLES,
    "arity": 1,
    "draw": _quantile_draw,
    "unsupported": ("dask",),
}

ROWS = (
    OpCase("prod", ref=np.prod, domain="zeros", axis_kwargs=True),
    OpCase("cumsum", ref=np.cumsum, examples=_SCAN_EXAMPLES, draw=_scan_draw),
    OpCase("cumprod", ref=np.cumprod, domain="zeros", examples=_SCAN_EXAMPLES, draw=_scan_draw),
    OpCase("std", tg.std, np.std, domain="distinct", **_SPREAD),
    OpCase("nanstd", tg.nanstd, np.nanstd, domain="distinct", **_SPREAD),
    OpCase("nanvar", tg.nanvar, np.nanvar, **_SPREAD),
    OpCase("nansum", tg.nansum, np.nansum, arity=1, axis_kwargs=True),
    OpCase("nanmean", tg.nanmean, np.nanmean, arity=1, axis_kwargs=True),
    OpCase("nanprod", tg.nanprod, np.nanprod, domain="zeros", arity=1, axis_kwargs=True),
    OpCase("nanmax", tg.nanmax, np.nanmax, domain="distinct", arity=1, axis_kwargs=True),
    OpCase("nanmin", tg.nanmin, np.nanmin, domain="distinct", arity=1, axis_kwargs=True),
    OpCase("ptp", tg.ptp, np.ptp, domain="distinct", arity=1, axis_kwargs=True),
    # order statistics sort (argsort, which Dask refuses)
    OpCase("median", tg.median, np.median, domain="distinct", arity=1, axis_kwargs=True, unsupported=("dask",)),
    OpCase("quantile", tg.quantile, np.quantile, **_ORDER),
    OpCase("percentile", _percentile, _np_percentile, **_ORDER),
    OpCase(
        "average",
        _average,
        _np_average,
        domain="positive",  # weights that cannot sum to 0
        examples=(
            (((3, 4), (3, 4)), {}),
            (((3, 4), (4,)), {"axis": 1}),
            (((2, 3, 4), (2, 3, 4)), {"axis": (0, -1), "keepdims": True}),
            (((2, 3, 4), (3,)), {"axis": -2, "keepdims": True}),
        ),
        arity=2,
        draw=_average_draw,
    ),
)
