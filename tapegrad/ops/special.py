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
=================  =====================================================

``SPECIAL`` is ``tapegrad.scipy.special``'s table: SciPy's names, SciPy's signatures (``polygamma(n, x)``,
``iv(v, x)``, ``softmax(x, axis=None)``, ``logsumexp(a, axis, b, keepdims, return_sign)``), and tapegrad's
existing ops where SciPy's function is one of them (``erf``, ``erfc``, ``expit`` = ``sigmoid``, ``i0``).
SciPy's own ufuncs on tensors (``scipy.special.erf(t)``) dispatch to it (``tapegrad.numpy._dispatch``).
"""

import math

import numpy as np

from .._tensor import Tensor
from ..backend.numpy_rules import numpy_rules
from ..registry import defop
from ._rules import call
from .activations import _scipy_special, erf, erfc
from .elementwise import absolute, exp, log, sigmoid
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


def _scipy(name, cast=False):
    """The forward of op ``name``: SciPy's function of that name, on NumPy arrays only (``cast``: in the
    input's floating dtype, for the SciPy functions that compute float64 whatever they are given)."""

    def fn(*xs, xp=np, **params):
        if xp is not np and xp is not numpy_rules:
            raise NotImplementedError(
                f"{name}: the {getattr(xp, 'name', xp)} backend cannot run it (SciPy's special functions run on "
                "NumPy arrays); compute it on NumPy arrays (tapegrad.backend.to_numpy(x))"
            )
        if any(np.iscomplexobj(x) for x in xs):
            raise TypeError(f"{name} takes real input here (tapegrad has no complex rule for it); got a complex array")
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
    """``log(sum(b * exp(a)))`` over ``axis``, stably, with SciPy's signature; with ``return_sign=True``, the
    log of the absolute value and its sign (a constant).

    >>> import tapegrad as tg, tapegrad.ops.special as sp
    >>> sp.logsumexp(tg.Tensor([0.0, 0.0]), b=tg.Tensor([1.0, 3.0]))
    Tensor(1.38629436)
    """
    if b is None and not return_sign:
        return _logsumexp(a, axis=axis, keepdims=keepdims)
    a = a if isinstance(a, Tensor) else Tensor(a)
    m = _max(a, axis=axis, keepdims=True).detach()  # a constant shift: the result does not depend on it
    m = Tensor(np.where(np.isfinite(m.data), m.data, 0.0))
    s = _sum(exp(a - m) if b is None else exp(a - m) * b, axis=axis, keepdims=True)
    out = log(absolute(s)) + m
    sgn = Tensor(np.sign(s.data))
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
}  # fmt: skip
