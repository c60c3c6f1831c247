"""SciPy's special functions: a table of derivatives (rule signature in ``tapegrad.registry``).

Each forward is ``scipy.special``'s own function, on NumPy arrays (SciPy is loaded on first use and is no
dependency: without it the ops raise ``ImportError`` naming the ``tapegrad[scipy]`` extra; other array
libraries raise ``NotImplementedError`` naming the op). The rules call the table's own ops, so every
derivative is differentiable again (``gammaln -> digamma -> polygamma(1) -> polygamma(2) ...``):

=================  =====================================================
``gammaln``        ``digamma(x)``
``digamma``        ``polygamma(1, x)``
``polygamma(n)``   ``polygamma(n + 1, x)`` (``n`` an integer, no gradient)
``gamma``          ``gamma(x) digamma(x)``
``beta(a, b)``     ``beta(a, b) (digamma(a) - digamma(a + b))``, and in b
``betaln(a, b)``   ``digamma(a) - digamma(a + b)``, and in b
``erfinv``         ``sqrt(pi) / 2 exp(erfinv(x)^2)``
``erfcinv``        ``-sqrt(pi) / 2 exp(erfcinv(x)^2)``
``logit``          ``1 / (x (1 - x))``
``xlogy(x, y)``    ``log(y)``, ``x / y``
``xlog1py(x, y)``  ``log1p(y)``, ``x / (1 + y)``
``ndtr``           ``exp(-x^2 / 2) / sqrt(2 pi)``
``log_ndtr``       ``exp(-x^2 / 2 - log_ndtr(x)) / sqrt(2 pi)`` (no overflow far in the tail)
``ndtri``          ``sqrt(2 pi) exp(ndtri(x)^2 / 2)``
``i1``             ``(i0(x) + iv(2, x)) / 2``
``iv(v)``          ``(iv(v - 1, x) + iv(v + 1, x)) / 2`` (the order ``v`` a number, no gradient)
``entr``           ``-(1 + log(x))``
``rel_entr(x, y)`` ``log(x / y) + 1``, ``-x / y``
``ive(v)``         ``(ive(v - 1, x) + ive(v + 1, x)) / 2 - sign(x) ive(v, x)``
``jv(v)``          ``(jv(v - 1, x) - jv(v + 1, x)) / 2`` (``j0``, ``j1``, ``jn`` are jv's orders)
``yv(v)``          ``(yv(v - 1, x) - yv(v + 1, x)) / 2`` (``y0``, ``y1``, ``yn`` likewise)
``rgamma``         ``-rgamma(x) digamma(x)``
``gammainc``       ``x^(a - 1) exp(-x) / Gamma(a)`` in x; ``gammainc_da(a, x, n=1)`` in a; ``gammaincc``: minus
``betainc``        ``x^(a - 1) (1 - x)^(b - 1) / B(a, b)`` in x; ``betainc_dab(.., na, nb)`` in a and b
``gammainc_da(n)`` ``gammainc_da(n + 1)`` in a; the n-th a-derivative of x^(a - 1) exp(-x) / Gamma(a) in x
``betainc_dab``    ``betainc_dab`` one order higher in a or b; in x, that derivative of the beta density
=================  =====================================================

``gammasgn`` (the sign of Gamma) is piecewise constant: no gradient (``defnondiff``). ``multigammaln`` is
composed of ``gammaln``. The regularised incomplete functions' derivatives in their parameters have no closed
form and SciPy computes none: ``gammainc_da`` and ``betainc_dab`` compute them (``tapegrad.ops._incomplete``:
Taylor series in the parameters carried through the power series and continued fractions), any order.

``SPECIAL`` is ``tapegrad.scipy.special``'s table: SciPy's names, SciPy's signatures (``polygamma(n, x)``,
``iv(v, x)``, ``softmax(x, axis=None)``, ``logsumexp(a, axis, b, keepdims, return_sign)``), and tapegrad's
existing ops where SciPy's function is one of them (``erf``, ``erfc``, ``expit`` = ``sigmoid``, ``i0``).
SciPy's own ufuncs on tensors (``scipy.special.erf(t)``) dispatch to it (``tapegrad.numpy._dispatch``).
"""

import math

import numpy as np

from .._tensor import Tensor
from ..backend.numpy_rules import numpy_rules
from ..registry import defnondiff, defop
from ._axes import count, kept_shape, normalize_axes
from ._incomplete import Jet, betainc_dab, gammainc_da, log_gamma_jet
from ._rules import call
from .activations import _scipy_special, erf, erfc
from .elementwise import absolute, exp, log, sigmoid, where
from .math import i0
from .reductions import log_softmax as _log_softmax
from .reductions import logsumexp as _logsumexp
from .reductions import max as _max
from .reductions import softmax as _softmax
from .reductions import sum as _sum
from .shape import squeeze

_SQRT_PI_2 = math.sqrt(math.pi) / 2.0
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_INV_SQRT_2PI = 1.0 / _SQRT_2PI
_DASK = {"dask": "SciPy's special functions run on NumPy arrays"}
_REAL = "SciPy's special functions take real input here"


def _special(name):
    """``scipy.special.<name>``, or an ``ImportError`` naming the extra that installs SciPy."""
    special = _scipy_special()
    if special is None:
        raise ImportError(f"{name} needs SciPy: install tapegrad with its extra, pip install 'tapegrad[scipy]'")
    return getattr(special, name)


def _real_numpy_inputs(name, xp, xs, why):
    """Refuse another array library (``why`` it cannot run ``name``) and complex input: a NumPy-only forward."""
    if xp is not np and xp is not numpy_rules:
        raise NotImplementedError(
            f"{name}: the {getattr(xp, 'name', xp)} backend cannot run it ({why}); compute it on NumPy arrays "
            "(tapegrad.backend.to_numpy(x))"
        )
    if any(np.iscomplexobj(x) for x in xs):
        raise TypeError(f"{name} takes real input here (tapegrad has no complex rule for it); got a complex array")


def _scipy(name, cast=False):
    """The forward of op ``name``: SciPy's function of that name, on NumPy arrays only (``cast``: in the
    input's floating dtype, for the SciPy functions that compute float64 whatever they are given)."""

    def fn(*xs, xp=np, **params):
        _real_numpy_inputs(name, xp, xs, "SciPy's special functions run on NumPy arrays")
        out = _special(name)(*params.values(), *xs) if params else _special(name)(*xs)
        if cast:
            dtype = np.result_type(*xs)
            out = np.asarray(out, dtype=dtype if dtype.kind == "f" else np.float64)
        return out

    fn.__name__ = fn.__qualname__ = f"{name}_forward"
    return fn


def _ex(call_, result, text):
    return f"{text}\n\n>>> import tapegrad as tg, tapegrad.ops.special as sp\n>>> {call_}\n{result}"


def _psi_diff(xp, x, y):
    return call(xp, digamma, x) - call(xp, digamma, x + y)


def _i1_vjp(xp, g, ans, x):
    return g * ((call(xp, i0, x) + call(xp, _iv, x, v=2.0)) * 0.5)


def _ive_vjp(xp, g, ans, x, v):
    return g * ((call(xp, _ive, x, v=v - 1.0) + call(xp, _ive, x, v=v + 1.0)) * 0.5 - xp.sign(x) * ans)


def _bessel_vjp(op):
    def rule(xp, g, ans, x, v):
        return g * ((call(xp, op(), x, v=v - 1.0) - call(xp, op(), x, v=v + 1.0)) * 0.5)

    return rule


def _psi_rule(xp, k, z):
    """The polygamma function of order k (digamma for 0), a recorded op on a recorded replay."""
    return call(xp, digamma, z) if k == 0 else call(xp, _polygamma, z, n=k)


def _gammainc_x(xp, a, x, n=0):
    # d/dx d^n/da^n P(a, x) = d^n/da^n [x^(a - 1) exp(-x) / Gamma(a)]: the jet in a of that density's logarithm
    # (a log x - gammaln(a) + ..., its derivatives polygammas), exponentiated; recorded ops on a recorded replay
    log_density = call(xp, xlogy, a - 1.0, x) - x - call(xp, gammaln, a)
    if n == 0:
        return xp.exp(log_density)
    coeffs = log_gamma_jet(log_density, lambda k, z: _psi_rule(xp, k, z), a, n, sign=-1.0)
    coeffs[1] = coeffs[1] + xp.log(x)
    return Jet([[c] for c in coeffs]).exp(xp.exp).derivative(n, 0)


def _betainc_x(xp, a, b, x, na=0, nb=0):
    # d/dx of d^(na + nb)/da^na db^nb I_x(a, b): the same derivative of x^(a - 1) (1 - x)^(b - 1) / B(a, b)
    log_density = call(xp, xlogy, a - 1.0, x) + call(xp, xlog1py, b - 1.0, -x) - call(xp, betaln, a, b)
    if na + nb == 0:
        return xp.exp(log_density)
    c = [[None] * (nb + 1) for _ in range(na + 1)]
    c[0][0] = log_density
    for i in range(na + 1):
        for j in range(nb + 1):
            if (i, j) == (0, 0):
                continue
            value = _psi_rule(xp, i + j - 1, a + b) * (1.0 / (math.factorial(i) * math.factorial(j)))
            if j == 0:
                value = value - _psi_rule(xp, i - 1, a) * (1.0 / math.factorial(i))
                value = value + xp.log(x) if i == 1 else value
            if i == 0:
                value = value - _psi_rule(xp, j - 1, b) * (1.0 / math.factorial(j))
                value = value + xp.log1p(-x) if j == 1 else value
            c[i][j] = value
    return Jet(c).exp(xp.exp).derivative(na, nb)


def _numpy_only(name, fn):
    """A forward computed here in NumPy (``tapegrad.ops._incomplete``), refused on other array libraries."""

    def forward(*xs, xp=np, **params):
        _real_numpy_inputs(name, xp, xs, "tapegrad computes it with NumPy")
        dtype = np.result_type(*xs)
        return np.asarray(fn(*xs, **params), dtype=dtype if dtype.kind == "f" else np.float64)

    forward.__name__ = forward.__qualname__ = f"{name}_forward"
    return forward


def _gammainc_a(sign):
    def rule(xp, g, ans, a, x):
        return g * call(xp, _gammainc_da, a, x, n=1) * sign

    return rule


def _gammainc_xrule(sign):
    def rule(xp, g, ans, a, x):
        return g * _gammainc_x(xp, a, x) * sign

    return rule


def _gammainc_da_a(xp, g, ans, a, x, n):
    return g * call(xp, _gammainc_da, a, x, n=n + 1)


def _gammainc_da_x(xp, g, ans, a, x, n):
    return g * _gammainc_x(xp, a, x, n)


def _betainc_dab_rule(da, db):
    def rule(xp, g, ans, a, b, x, na=0, nb=0):
        return g * call(xp, _betainc_dab, a, b, x, na=na + da, nb=nb + db)

    return rule


def _betainc_dab_x(xp, g, ans, a, b, x, na=0, nb=0):
    return g * _betainc_x(xp, a, b, x, na, nb)


def _iv_vjp(xp, g, ans, x, v):
    return g * ((call(xp, _iv, x, v=v - 1.0) + call(xp, _iv, x, v=v + 1.0)) * 0.5)


_ROW = {"elementwise": True, "real_only": _REAL, "refuses": _DASK}

# fmt: off
gammaln = defop("gammaln", _scipy("gammaln"), lambda xp, g, ans, x: g * call(xp, digamma, x), save="x", **_ROW,
                doc=_ex("sp.gammaln(tg.Tensor([1.0, 4.0]))", "Tensor([0.        , 1.79175947])",
                        "log|Gamma(x)|; its derivative is digamma."))
digamma = defop("digamma", _scipy("digamma"), lambda xp, g, ans, x: g * call(xp, _polygamma, x, n=1), save="x",
                **_ROW, doc=_ex("sp.digamma(tg.Tensor([1.0]))", "Tensor([-0.57721566])",
                                "The logarithmic derivative of Gamma, psi(x); its derivative is polygamma(1, x)."))
_polygamma = defop("polygamma", _scipy("polygamma", cast=True),
                   lambda xp, g, ans, x, n: g * call(xp, _polygamma, x, n=n + 1), save="x", **_ROW)
gamma = defop("gamma", _scipy("gamma"), lambda xp, g, ans, x: g * ans * call(xp, digamma, x), save="x ans", **_ROW,
              doc=_ex("sp.gamma(tg.Tensor([5.0]))", "Tensor([24.])", "The Gamma function; d/dx = Gamma(x) psi(x)."))
beta = defop("beta", _scipy("beta"),
             lambda xp, g, ans, x, y: g * ans * _psi_diff(xp, x, y),
             lambda xp, g, ans, x, y: g * ans * _psi_diff(xp, y, x),
             save="x y ans", broadcast=True, **_ROW,
             doc=_ex("sp.beta(tg.Tensor([2.0]), 3.0)", "Tensor([0.08333333])", "The Beta function B(a, b)."))
betaln = defop("betaln", _scipy("betaln"),
               lambda xp, g, ans, x, y: g * _psi_diff(xp, x, y),
               lambda xp, g, ans, x, y: g * _psi_diff(xp, y, x),
               save="x y", broadcast=True, **_ROW,
               doc=_ex("sp.betaln(tg.Tensor([2.0]), 3.0)", "Tensor([-2.48490665])", "log|B(a, b)|."))
erfinv = defop("erfinv", _scipy("erfinv"), lambda xp, g, ans, x: g * (_SQRT_PI_2 * xp.exp(ans * ans)), save="ans",
               **_ROW, doc=_ex("sp.erfinv(tg.Tensor([0.0, 0.5]))", "Tensor([0.        , 0.47693628])",
                               "The inverse of erf, on (-1, 1)."))
erfcinv = defop("erfcinv", _scipy("erfcinv"), lambda xp, g, ans, x: g * (-_SQRT_PI_2 * xp.exp(ans * ans)),
                save="ans", **_ROW, doc=_ex("sp.erfcinv(tg.Tensor([1.0]))", "Tensor([0.])",
                                            "The inverse of erfc, on (0, 2)."))
logit = defop("logit", _scipy("logit"), lambda xp, g, ans, x: g / (x * (1.0 - x)), save="x", **_ROW,
              doc=_ex("sp.logit(tg.Tensor([0.5]))", "Tensor([0.])", "log(x / (1 - x)), the inverse of expit."))
xlogy = defop("xlogy", _scipy("xlogy"),
              lambda xp, g, ans, x, y: g * xp.log(y),
              lambda xp, g, ans, x, y: g * x / y,
              save="x y", broadcast=True, **_ROW,
              doc=_ex("sp.xlogy(tg.Tensor([0.0, 2.0]), 1.0)", "Tensor([0., 0.])", "x log(y), 0 where x is 0."))
xlog1py = defop("xlog1py", _scipy("xlog1py"),
                lambda xp, g, ans, x, y: g * xp.log1p(y),
                lambda xp, g, ans, x, y: g * x / (1.0 + y),
                save="x y", broadcast=True, **_ROW,
                doc=_ex("sp.xlog1py(tg.Tensor([0.0, 2.0]), 0.0)", "Tensor([0., 0.])", "x log1p(y), 0 where x is 0."))
ndtr = defop("ndtr", _scipy("ndtr"), lambda xp, g, ans, x: g * (_INV_SQRT_2PI * xp.exp(-0.5 * x * x)), save="x",
             **_ROW, doc=_ex("sp.ndtr(tg.Tensor([0.0]))", "Tensor([0.5])", "The standard normal CDF."))
log_ndtr = defop("log_ndtr", _scipy("log_ndtr"),
                 lambda xp, g, ans, x: g * (_INV_SQRT_2PI * xp.exp(-0.5 * x * x - ans)), save="x ans", **_ROW,
                 doc=_ex("sp.log_ndtr(tg.Tensor([0.0]))", "Tensor([-0.69314718])",
                         "log of the standard normal CDF, accurate far into the lower tail."))
ndtri = defop("ndtri", _scipy("ndtri"), lambda xp, g, ans, x: g * (_SQRT_2PI * xp.exp(0.5 * ans * ans)), save="ans",
              **_ROW, doc=_ex("sp.ndtri(tg.Tensor([0.5]))", "Tensor([0.])", "The inverse of ndtr, on (0, 1)."))
i1 = defop("i1", _scipy("i1"), _i1_vjp, save="x", **_ROW,
           doc=_ex("sp.i1(tg.Tensor([0.0]))", "Tensor([0.])", "The modified Bessel function of order 1."))
def _iv_forward(x, *, v, xp=np):
    out = _scipy("iv")(x, v=v, xp=xp)
    # SciPy's iv is NaN at |x| below ~1e-300; there the series' first term is exact to rounding
    tiny = np.abs(x) < 1e-150
    if np.any(tiny):
        with np.errstate(all="ignore"):
            first = np.power(np.asarray(x) * 0.5, v) / math.gamma(v + 1.0) if v >= 0 else np.nan
        out = np.where(tiny, first, out).astype(np.asarray(out).dtype)
    return out


_iv = defop("iv", _iv_forward, _iv_vjp, save="x", **_ROW)
_ive = defop("ive", _scipy("ive"), _ive_vjp, save="x ans", **_ROW)
_jv = defop("jv", _scipy("jv"), _bessel_vjp(lambda: _jv), save="x", **_ROW)
_yv = defop("yv", _scipy("yv"), _bessel_vjp(lambda: _yv), save="x", **_ROW)
rgamma = defop("rgamma", _scipy("rgamma"), lambda xp, g, ans, x: -g * ans * call(xp, digamma, x), save="x ans",
               **_ROW, doc=_ex("sp.rgamma(tg.Tensor([4.0]))", "Tensor([0.16666667])", "1 / Gamma(x), 0 at the poles."))
gammasgn = defnondiff("gammasgn", _scipy("gammasgn"), elementwise=True, refuses=_DASK,
                      doc=_ex("sp.gammasgn(tg.Tensor([-0.5, 2.0]))", "Tensor([-1.,  1.])",
                              "The sign of Gamma(x) (no gradient: piecewise constant)."))
_gammainc = defop("gammainc", _scipy("gammainc", cast=True), _gammainc_a(1.0), _gammainc_xrule(1.0),
                  save="x y", broadcast=True, **_ROW)
_gammaincc = defop("gammaincc", _scipy("gammaincc", cast=True), _gammainc_a(-1.0), _gammainc_xrule(-1.0),
                   save="x y", broadcast=True, **_ROW)
_gammainc_da = defop("gammainc_da", _numpy_only("gammainc_da", gammainc_da), _gammainc_da_a,
                     _gammainc_da_x, save="x y", broadcast=True, **_ROW)
_betainc = defop("betainc", _scipy("betainc", cast=True), _betainc_dab_rule(1, 0), _betainc_dab_rule(0, 1),
                 _betainc_dab_x, save="x y z", broadcast=True, **_ROW)
_betainc_dab = defop("betainc_dab", _numpy_only("betainc_dab", betainc_dab), _betainc_dab_rule(1, 0),
                     _betainc_dab_rule(0, 1), _betainc_dab_x, save="x y z", broadcast=True, **_ROW)
entr = defop("entr", _scipy("entr"), lambda xp, g, ans, x: -g * (1.0 + xp.log(x)), save="x", **_ROW,
             doc=_ex("sp.entr(tg.Tensor([0.5]))", "Tensor([0.34657359])", "-x log(x), 0 at 0."))
rel_entr = defop("rel_entr", _scipy("rel_entr"),
                 lambda xp, g, ans, x, y: g * (xp.log(x / y) + 1.0),
                 lambda xp, g, ans, x, y: -g * x / y,
                 save="x y", broadcast=True, **_ROW,
                 doc=_ex("sp.rel_entr(tg.Tensor([1.0]), 0.5)", "Tensor([0.69314718])", "x log(x / y), 0 at x = 0."))
# fmt: on


def _constant_number(value, what, name):
    """A parameter that takes no gradient (polygamma's n, iv's v): a number, never a tensor needing one."""
    if isinstance(value, Tensor):
        if value.requires_grad:
            raise TypeError(
                f"scipy.special.{name}: tapegrad has no gradient in {what}; pass it as a number (or t.detach())"
            )
        value = value.data
    if np.ndim(value) != 0:
        raise TypeError(f"scipy.special.{name}: {what} must be one number here, got shape {np.shape(value)}")
    return value


def polygamma(n, x):
    """The n-th derivative of digamma, SciPy's signature (``n`` an integer, without gradient).

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.polygamma(1, tg.Tensor([1.0]))  # pi^2 / 6
    Tensor([1.64493407])
    """
    n = _constant_number(n, "the order n", "polygamma")
    if int(n) != n or n < 0:
        raise ValueError(f"scipy.special.polygamma: n must be a non-negative integer, got {n!r}")
    return _polygamma(x, n=int(n))


def iv(v, x):
    """The modified Bessel function of the first kind of real order ``v`` (a number, without gradient), in x.

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.iv(1.0, tg.Tensor([0.0, 1.0]))
    Tensor([0.       , 0.5651591])
    """
    return _iv(x, v=float(_constant_number(v, "the order v", "iv")))


def ive(v, x):
    """``iv(v, x) * exp(-|x|)``, the exponentially scaled modified Bessel function (``v`` a number).

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.ive(0.0, tg.Tensor([0.0]))
    Tensor([1.])
    """
    return _ive(x, v=float(_constant_number(v, "the order v", "ive")))


def jv(v, x):
    """The Bessel function of the first kind of real order ``v`` (a number, without gradient).

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.jv(0.0, tg.Tensor([0.0]))
    Tensor([1.])
    """
    return _jv(x, v=float(_constant_number(v, "the order v", "jv")))


def yv(v, x):
    """The Bessel function of the second kind of real order ``v`` (a number, without gradient), for x > 0.

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.yv(0.0, tg.Tensor([1.0]))
    Tensor([0.08825696])
    """
    return _yv(x, v=float(_constant_number(v, "the order v", "yv")))


def j0(x):
    """``jv(0, x)``.

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.j0(tg.Tensor([0.0]))
    Tensor([1.])
    """
    return _jv(x, v=0.0)


def j1(x):
    """``jv(1, x)``.

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.j1(tg.Tensor([0.0]))
    Tensor([0.])
    """
    return _jv(x, v=1.0)


def y0(x):
    """``yv(0, x)``.

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.y0(tg.Tensor([1.0]))
    Tensor([0.08825696])
    """
    return _yv(x, v=0.0)


def y1(x):
    """``yv(1, x)``.

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.y1(tg.Tensor([1.0]))
    Tensor([-0.78121282])
    """
    return _yv(x, v=1.0)


def _integer_order(n, name):
    n = _constant_number(n, "the order n", name)
    if int(n) != n:
        raise ValueError(f"scipy.special.{name}: n must be an integer, got {n!r}")
    return float(n)


def jn(n, x):
    """``jv`` of an integer order ``n``.

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.jn(2, tg.Tensor([0.0]))
    Tensor([0.])
    """
    return _jv(x, v=_integer_order(n, "jn"))


def yn(n, x):
    """``yv`` of an integer order ``n``.

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.yn(0, tg.Tensor([1.0]))
    Tensor([0.08825696])
    """
    return _yv(x, v=_integer_order(n, "yn"))


def gammainc(a, x):
    """The regularised lower incomplete gamma function P(a, x), differentiable in a and x (any order: the
    derivatives in a are computed by ``tapegrad.ops._incomplete``).

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.gammainc(1.0, tg.Tensor([1.0]))  # 1 - exp(-1)
    Tensor([0.63212056])
    >>> round(float(tg.grad(lambda a: sp.gammainc(a, 1.0))(1.0)), 6)  # d/da P(a, 1) at a = 1
    -0.43173
    """
    return _gammainc(a, x)


def gammaincc(a, x):
    """The regularised upper incomplete gamma function Q(a, x) = 1 - P(a, x), differentiable in a and x.

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.gammaincc(1.0, tg.Tensor([1.0]))  # exp(-1)
    Tensor([0.36787944])
    """
    return _gammaincc(a, x)


def betainc(a, b, x):
    """The regularised incomplete beta function I_x(a, b), differentiable in a, b and x (any order).

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.betainc(1.0, 1.0, tg.Tensor([0.25]))
    Tensor([0.25])
    >>> round(float(tg.grad(lambda a: sp.betainc(a, 1.0, 0.5))(1.0)), 6)  # d/da 0.5^a = -log(2) / 2
    -0.346574
    """
    return _betainc(a, b, x)


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension ``d``: ``d (d - 1) / 4 log(pi) +
    sum_j gammaln(a + (1 - j) / 2)``, as SciPy's (``a`` a tensor, each element > (d - 1) / 2).

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.multigammaln(tg.Tensor(2.0), 1)  # gammaln(2)
    Tensor(0.)
    """
    d = int(d)
    total = d * (d - 1) / 4.0 * math.log(math.pi)
    for j in range(1, d + 1):
        total = gammaln(a + (1 - j) / 2.0) + total
    return total


def _all_axes(x, axis):
    return tuple(range(np.ndim(x))) if axis is None else axis


def softmax(x, axis=None):
    """``exp(x) / sum(exp(x))`` over ``axis`` (SciPy's default: every axis).

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.softmax(tg.Tensor([0.0, 0.0]))
    Tensor([0.5, 0.5])
    """
    return _softmax(x, axis=_all_axes(x, axis))


def log_softmax(x, axis=None):
    """``x - logsumexp(x)`` over ``axis`` (SciPy's default: every axis).

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.log_softmax(tg.Tensor([0.0, 0.0]))
    Tensor([-0.69314718, -0.69314718])
    """
    return _log_softmax(x, axis=_all_axes(x, axis))


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """``log(sum(b * exp(a)))`` over ``axis``, stably, with SciPy's signature: NaN where the sum is negative, as
    SciPy's; with ``return_sign=True``, the log of the absolute value and its sign (a constant). An empty sum is 0,
    its log ``-inf``.

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.logsumexp(tg.Tensor([0.0, 0.0]), b=tg.Tensor([1.0, 3.0]))
    Tensor(1.38629436)
    """
    a = a if isinstance(a, Tensor) else Tensor(a)  # a number too
    if b is None and not return_sign:
        return _logsumexp(a, axis=axis, keepdims=keepdims)
    axes = normalize_axes(a, axis, "logsumexp")
    if count(a.shape, axes) == 0:  # an empty sum: no maximum to shift by
        m = Tensor(np.zeros(kept_shape(a.shape, axes)))
    else:
        m = _max(a, axis=axis, keepdims=True).detach()  # a constant shift: the result does not depend on it
        m = Tensor(np.where(np.isfinite(m.data), m.data, 0.0))
    s = _sum(exp(a - m) if b is None else exp(a - m) * b, axis=axis, keepdims=True)
    sgn = Tensor(np.sign(s.data))
    with np.errstate(divide="ignore"):  # a zero sum: log 0 is -inf, SciPy's, without a warning
        out = log(absolute(s)) + m
    if not return_sign:  # the log of a negative sum, NaN as SciPy's (not the log of its absolute value)
        out = where(sgn.data < 0, np.nan, out)
    if not keepdims:
        out, sgn = squeeze(out, axis=_all_axes(a, axis)), squeeze(sgn, axis=_all_axes(a, axis))
    if return_sign:
        return out, sgn
    return out


expit = sigmoid
psi = digamma

# SciPy's names -> tapegrad's functions (tapegrad.scipy.special; SciPy's ufuncs on tensors, by the dispatch)
SPECIAL = {
    "gammaln": gammaln, "digamma": digamma, "psi": digamma, "polygamma": polygamma, "gamma": gamma,
    "beta": beta, "betaln": betaln, "erf": erf, "erfc": erfc, "erfinv": erfinv, "erfcinv": erfcinv,
    "expit": sigmoid, "logit": logit, "logsumexp": logsumexp, "xlogy": xlogy, "xlog1py": xlog1py,
    "ndtr": ndtr, "log_ndtr": log_ndtr, "ndtri": ndtri, "i0": i0, "i1": i1, "iv": iv,
    "softmax": softmax, "log_softmax": log_softmax, "entr": entr, "rel_entr": rel_entr,
    "ive": ive, "jv": jv, "jn": jn, "j0": j0, "j1": j1, "yv": yv, "yn": yn, "y0": y0, "y1": y1,
    "rgamma": rgamma, "gammasgn": gammasgn, "gammainc": gammainc, "gammaincc": gammaincc, "betainc": betainc,
    "multigammaln": multigammaln,
}  # fmt: skip
