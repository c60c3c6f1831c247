"""Op-table rows for tapegrad/ops/special.py: SciPy's special functions (tapegrad.scipy.special).

The forwards are SciPy's own functions, so the values are checked against definitions where Python's ``math``
has one (``lgamma``, ``gamma``, ``erf``) or closed forms (``logit``, ``xlogy``, ``entr``); the point of the rows
is the derivatives: finite differences of the values, first and second order, through every rule. Functions
of (0, 1) or (0, 2) (``logit``, ``ndtri``, ``erfcinv``) are called at ``0.5 + 0.45 x`` and ``1 + 0.9 x`` of the
``unit`` domain; the orders ``n`` and ``v`` are numbers. The rows need SciPy (the ``test`` extra has it).
"""

import math

import numpy as np
from op_table import OpCase

import tapegrad.ops.special as sp

_NOT_NUMPY = ("array_api_strict", "numpy_like", "cupy")  # SciPy runs on NumPy arrays only


def _scipy(name):
    import scipy.special  # noqa: PLC0415  (the suite's SciPy, imported when a row is first checked)

    return getattr(scipy.special, name)


def _vec(f):
    """A reference from Python's math, elementwise, in the input's dtype."""
    v = np.vectorize(f, otypes=[np.float64])
    return lambda x: np.asarray(v(np.asarray(x, np.float64))).astype(np.asarray(x).dtype)


def _ref(name, *before):
    return lambda *xs: _scipy(name)(*before, *xs)


def _row(name, ref, domain="real", **kwargs):
    return OpCase(name, ref=ref, domain=domain, unsupported=_NOT_NUMPY, **kwargs)


def _ndtr(x):
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _central(f, at, order):
    """The first or second derivative of ``f`` at ``at`` by central differences, in float64 (an oracle
    independent of the series and fractions that compute it), in ``at``'s dtype."""
    a = np.asarray(at, np.float64)
    h = 1e-5 * np.maximum(1.0, a) if order == 1 else 1e-4 * np.maximum(1.0, a)
    if order == 1:
        out = (f(a + h) - f(a - h)) / (2 * h)
    else:
        out = (f(a + h) - 2 * f(a) + f(a - h)) / (h * h)
    return np.asarray(out).astype(np.result_type(at, np.float32))


def _central_error(order, at):
    """``value_scale`` of a row whose oracle is ``_central``: what its error is relative to, element by element.

    The difference quotient loses about ``eps / h**order`` to rounding and ``h**2`` to truncation, so it is
    accurate to about 1e-10 (first order) and 1e-7 (second): the property tests allow a few ulps of
    ``10 / h**order``. The accurate check of these derivatives is against mpmath, in
    tests/test_scipy_incomplete.py (to 1e-10 over a grid)."""

    def scale(arrays, kwargs):
        a = np.asarray(arrays[at], np.float64)
        h = (1e-5 if order == 1 else 1e-4) * np.maximum(1.0, a)
        return np.broadcast_to(10.0 / h**order, np.broadcast_shapes(*(np.shape(x) for x in arrays)))

    return scale


def _same(f):
    return lambda *xs: np.asarray(f(*[np.asarray(x, np.float64) for x in xs])).astype(np.result_type(*xs))


ROWS = (
    _row("gammaln", _vec(math.lgamma), "positive"),
    _row("digamma", _ref("digamma"), "positive"),
    _row(
        "polygamma",
        _ref("polygamma", 1),
        "positive",
        fn=lambda x: sp.polygamma(1, x),
        arity=1,
        examples=((((3, 4),), {}), (((),), {})),
    ),
    _row(
        "polygamma",
        _ref("polygamma", 3),
        "positive",
        fn=lambda x: sp.polygamma(3, x),
        arity=1,
        examples=((((2, 3),), {}),),
    ),
    _row("gamma", _vec(math.gamma), "positive"),
    _row(
        "beta",
        _same(lambda a, b: np.exp(_scipy("gammaln")(a) + _scipy("gammaln")(b) - _scipy("gammaln")(a + b))),
        "positive",
    ),
    _row(
        "betaln", _same(lambda a, b: _scipy("gammaln")(a) + _scipy("gammaln")(b) - _scipy("gammaln")(a + b)), "positive"
    ),
    _row("erfinv", _ref("erfinv"), "unit"),
    _row(
        "erfcinv",
        lambda x: _scipy("erfcinv")(1 + 0.9 * x),
        "unit",
        fn=lambda x: sp.erfcinv(1 + 0.9 * x),
        examples=((((3, 4),), {}), (((),), {})),
    ),
    _row(
        "logit",
        _same(lambda x: np.log((0.5 + 0.45 * x) / (0.5 - 0.45 * x))),
        "unit",
        fn=lambda x: sp.logit(0.5 + 0.45 * x),
        examples=((((3, 4),), {}), (((),), {})),
    ),
    _row("xlogy", _same(lambda x, y: x * np.log(y)), "positive"),
    _row("xlog1py", _same(lambda x, y: x * np.log1p(y)), "positive"),
    _row("ndtr", _vec(_ndtr)),
    _row("log_ndtr", _vec(lambda x: math.log(_ndtr(x)))),
    _row(
        "log_ndtr",
        _vec(lambda x: math.log(_ndtr(x * 10.0 - 20.0))),
        "unit",
        fn=lambda x: sp.log_ndtr(x * 10.0 - 20.0),
        examples=((((3, 4),), {}),),
    ),
    _row(
        "ndtri",
        lambda x: _scipy("ndtri")(0.5 + 0.45 * x),
        "unit",
        fn=lambda x: sp.ndtri(0.5 + 0.45 * x),
        examples=((((3, 4),), {}), (((),), {})),
    ),
    _row("i1", _ref("i1")),
    _row(
        "iv", _ref("iv", 1.5), "positive", fn=lambda x: sp.iv(1.5, x), arity=1, examples=((((3, 4),), {}), (((),), {}))
    ),
    _row(
        "ive",
        _ref("ive", 1.5),
        "positive",
        fn=lambda x: sp.ive(1.5, x),
        arity=1,
        examples=((((3, 4),), {}), (((),), {})),
    ),
    _row("jv", _ref("jv", 2.0), fn=lambda x: sp.jv(2.0, x), arity=1, examples=((((3, 4),), {}), (((),), {}))),
    _row(
        "yv", _ref("yv", 1.0), "positive", fn=lambda x: sp.yv(1.0, x), arity=1, examples=((((3, 4),), {}), (((),), {}))
    ),
    _row("rgamma", _vec(lambda x: 1.0 / math.gamma(x)), "positive"),
    _row(
        "gammainc",
        _ref("gammainc", 2.5),
        "positive",
        fn=lambda x: sp.gammainc(2.5, x),
        arity=1,
        examples=((((3, 4),), {}), (((),), {})),
    ),
    _row(
        "gammaincc",
        _ref("gammaincc", 2.5),
        "positive",
        fn=lambda x: sp.gammaincc(2.5, x),
        arity=1,
        examples=((((3, 4),), {}),),
    ),
    _row(
        "betainc",
        lambda x: _scipy("betainc")(2.0, 3.0, 0.5 + 0.45 * x),
        "unit",
        fn=lambda x: sp.betainc(2.0, 3.0, 0.5 + 0.45 * x),
        arity=1,
        examples=((((3, 4),), {}), (((),), {})),
    ),
    # the parameters too: a in (0.5, 2) puts x of (0.5, 2) on both sides of x = a + 1 (series, fraction)
    _row("gammainc", _ref("gammainc"), "positive"),
    _row("gammaincc", _ref("gammaincc"), "positive", examples=((((3, 1), (1, 4)), {}),)),
    _row(
        "betainc",
        lambda a, b, x: _scipy("betainc")(a, b, x / 2.5),
        "positive",
        fn=lambda a, b, x: sp.betainc(a, b, x / 2.5),
        examples=((((3, 1), (4,), (3, 4)), {}), (((), (), (2,)), {})),
        costly=True,
    ),
    # their derivatives in the parameters, against central differences of SciPy's own values
    _row(
        "gammainc_da",
        lambda a, x: _central(lambda s: _scipy("gammainc")(s, x), a, 1),
        "positive",
        fn=lambda a, x: sp._gammainc_da(a, x, n=1),
        value_scale=_central_error(1, 0),
        examples=((((2, 3), (2, 3)), {}), (((2, 1), (3,)), {})),
        costly=True,
    ),
    _row(
        "gammainc_da",
        lambda a, x: _central(lambda s: _scipy("gammainc")(s, x * 4.0), a, 2),
        "positive",
        fn=lambda a, x: sp._gammainc_da(a, x * 4.0, n=2),
        value_scale=_central_error(2, 0),
        costly=True,
        examples=((((2, 3), (2, 3)), {}),),
    ),
    _row(
        "betainc_dab",
        lambda a, b, x: _central(lambda s: _scipy("betainc")(s, b, x / 2.5), a, 1),
        "positive",
        fn=lambda a, b, x: sp._betainc_dab(a, b, x / 2.5, na=1, nb=0),
        value_scale=_central_error(1, 0),
        examples=((((2, 3), (2, 3), (2, 3)), {}),),
        costly=True,
    ),
    _row(
        "betainc_dab",
        lambda a, b, x: _central(lambda s: _scipy("betainc")(a, s, x / 2.5), b, 2),
        "positive",
        fn=lambda a, b, x: sp._betainc_dab(a, b, x / 2.5, na=0, nb=2),
        value_scale=_central_error(2, 1),
        examples=((((2, 1), (3,), (2, 3)), {}),),
        costly=True,
    ),
    _row("entr", _same(lambda x: -x * np.log(x)), "positive"),
    _row("rel_entr", _same(lambda x, y: x * np.log(x / y)), "positive"),
)
