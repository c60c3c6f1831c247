"""NumPy's elementwise math beyond the basics: a table of derivatives, one ``defop`` per function.

Trigonometric and hyperbolic functions and their inverses, logarithms and exponentials in other bases,
``hypot``, ``logaddexp``, ``sinc``, ``copysign``, ``float_power``, ``fmax``/``fmin``, the remainders, and
``nan_to_num``. Binary ops broadcast as NumPy does (``broadcast=True``: rules return the output's shape).

Zero gradients. ``floor``, ``ceil``, ``round``, ``rint``, ``trunc``, ``fix`` and ``floor_divide`` are
piecewise constant: their derivative is 0 wherever it exists, so their result is a constant (``defnondiff``,
as ``sign``): a program using them gets exactly the gradient it would with a zero rule, nothing is recorded
or saved for them, and ``tg.grad`` of a function of them alone is 0 (no input is connected). ``heaviside(x1, x2)`` is an op: its
derivative in ``x1`` is 0, in ``x2`` (the value at ``x1 == 0``) it is 1 where ``x1 == 0``. The same goes for
``copysign``'s second input. A zero gradient arrives as ``None`` (no gradient), never as a product with 0.

Predicates (``isnan``, ``isfinite``, ``isinf``, ``signbit``, ``logical_and``...) and the bitwise ops
(``bitwise_and``, ``bitwise_or``, ``bitwise_xor``, ``invert``: Python's ``&``, ``|``, ``^``, ``~``) have no gradient; rules use
them through ``xp`` for masks.
"""

import math

import numpy as np

from ..registry import defnondiff, defop
from ._names import forward
from .elementwise import _absolute_vjp

LN2, LN10 = math.log(2.0), math.log(10.0)
_DEG = math.pi / 180.0


def _ex(call, result, text):
    return f"{text}\n\n>>> import tapegrad as tg\n>>> {call}\n{result}"


def _isnan(v):
    return v != v  # NaN is the one value unequal to itself; works on numbers, arrays and tensors


def _select(xp, cond, a, b):
    # where(cond, a, b) where cond may be a plain bool (an input that is a number)
    if isinstance(cond, (bool, np.bool_)):
        return a if cond else b
    return xp.where(cond, a, b)


def _sinc_vjp(xp, g, ans, x):
    # sinc'(x) = (cos(pi x) - sinc(x)) / x, which cancels near 0: there its Taylor series (exact to rounding
    # for |x| < 0.01, and with the right second derivative at 0)
    near = xp.absolute(x) < 0.01
    safe = xp.where(near, 1.0, x)
    u = (math.pi * x) ** 2
    series = (math.pi**2) * x * (-1 / 3 + u * (1 / 30 - u * (1 / 840 - u / 45360)))
    return g * xp.where(near, series, (xp.cos(math.pi * safe) - ans) / safe)


def _sinc(x, *, xp=np):
    y = math.pi * xp.where(x == 0, 1.0e-20, x)  # NumPy's own definition, on any library
    return xp.sin(y) / y


def _fmax_x(xp, g, x, y, greater):
    # the gradient of fmax (greater=True) or fmin in its first input: where it picked x; a tie shares
    wins = (x > y) if greater else (x < y)
    picked = xp.where(wins, g, xp.where(x == y, g * 0.5, 0))
    return _select(xp, _isnan(y), g, picked)  # a NaN y: fmax returns x


def _fmax_y(xp, g, x, y, greater):
    return _select(xp, _isnan(y), 0, _fmax_x(xp, g, y, x, greater))  # both NaN: x was returned


def _float_power_vjp_y(xp, g, ans, x, y):
    return g * ans * xp.log(xp.where(x == 0, 1, x))  # 0 ** y has d/dy = 0 for y > 0 (its limit)


def _nan_to_num(x, nan=0.0, posinf=None, neginf=None, *, xp=np):
    return xp.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _heaviside_x2(xp, g, ans, x1, x2):
    return xp.where(x1 == 0, g, 0)


_BESSEL_SPLIT = 20.0  # below: the power series (40 positive terms); above: Hankel's expansion (20 terms)


def _bessel(xp, x, order):
    """The modified Bessel function I_order(x), order 0 or 1, to float64's precision (relative 2e-15)."""
    z = xp.absolute(x)
    small = z < _BESSEL_SPLIT
    t = xp.where(small, x, 0.0) * 0.5  # each branch sees only arguments inside its range
    term = t if order else xp.ones_like(t)
    series = term
    for k in range(1, 40):
        term = term * (t * t) * (1.0 / (k * (k + order)))
        series = series + term
    big = xp.where(small, _BESSEL_SPLIT, z)
    term = xp.ones_like(big)
    expansion = term
    for k in range(1, 20):
        term = term * ((2 * k - 1) ** 2 - 4 * order * order) / (8.0 * k) / big
        expansion = expansion + term
    large = xp.exp(big) / xp.sqrt(2.0 * math.pi * big) * expansion
    return xp.where(small, series, large if order == 0 else xp.sign(x) * large)


# fmt: off
# -- unary -----------------------------------------------------------------------------------------------
tan = defop("tan", np.tan, lambda xp, g, ans, x: g * (1 + ans * ans), save="ans",
            doc=_ex("tg.tan(tg.Tensor([0.0]))", "Tensor([0.])", "Tangent."))
arcsin = defop("arcsin", forward(np.arcsin, "asin"), lambda xp, g, ans, x: g / xp.sqrt(1 - x * x), save="x",
               doc=_ex("tg.arcsin(tg.Tensor([0.0]))", "Tensor([0.])", "Inverse sine, on [-1, 1]."))
arccos = defop("arccos", forward(np.arccos, "acos"), lambda xp, g, ans, x: -g / xp.sqrt(1 - x * x), save="x",
               doc=_ex("tg.arccos(tg.Tensor([1.0]))", "Tensor([0.])", "Inverse cosine, on [-1, 1]."))
arctan = defop("arctan", forward(np.arctan, "atan"), lambda xp, g, ans, x: g / (1 + x * x), save="x",
               doc=_ex("tg.arctan(tg.Tensor([0.0]))", "Tensor([0.])", "Inverse tangent."))
sinh = defop("sinh", np.sinh, lambda xp, g, ans, x: g * xp.cosh(x), save="x",
             doc=_ex("tg.sinh(tg.Tensor([0.0]))", "Tensor([0.])", "Hyperbolic sine."))
cosh = defop("cosh", np.cosh, lambda xp, g, ans, x: g * xp.sinh(x), save="x",
             doc=_ex("tg.cosh(tg.Tensor([0.0]))", "Tensor([1.])", "Hyperbolic cosine."))
arcsinh = defop("arcsinh", forward(np.arcsinh, "asinh"), lambda xp, g, ans, x: g / xp.sqrt(x * x + 1), save="x",
                doc=_ex("tg.arcsinh(tg.Tensor([0.0]))", "Tensor([0.])", "Inverse hyperbolic sine."))
arccosh = defop("arccosh", forward(np.arccosh, "acosh"), lambda xp, g, ans, x: g / xp.sqrt(x * x - 1), save="x",
                doc=_ex("tg.arccosh(tg.Tensor([1.0]))", "Tensor([0.])", "Inverse hyperbolic cosine, for x >= 1."))
arctanh = defop("arctanh", forward(np.arctanh, "atanh"), lambda xp, g, ans, x: g / (1 - x * x), save="x",
                doc=_ex("tg.arctanh(tg.Tensor([0.0]))", "Tensor([0.])", "Inverse hyperbolic tangent, on (-1, 1)."))
log1p = defop("log1p", np.log1p, lambda xp, g, ans, x: g / (1 + x), save="x",
              doc=_ex("tg.log1p(tg.Tensor([0.0]))", "Tensor([0.])", "log(1 + x), accurate for small x."))
expm1 = defop("expm1", np.expm1, lambda xp, g, ans, x: g * (ans + 1), save="ans",
              doc=_ex("tg.expm1(tg.Tensor([0.0]))", "Tensor([0.])", "exp(x) - 1, accurate for small x."))
log2 = defop("log2", np.log2, lambda xp, g, ans, x: g / (x * LN2), save="x",
             doc=_ex("tg.log2(tg.Tensor([8.0]))", "Tensor([3.])", "Base-2 logarithm."))
log10 = defop("log10", np.log10, lambda xp, g, ans, x: g / (x * LN10), save="x",
              doc=_ex("tg.log10(tg.Tensor([100.0]))", "Tensor([2.])", "Base-10 logarithm."))
exp2 = defop("exp2", forward(np.exp2, lambda xp, x: xp.power(2.0, x)), lambda xp, g, ans, x: g * ans * LN2,
             save="ans", doc=_ex("tg.exp2(tg.Tensor([3.0]))", "Tensor([8.])", "2 ** x."))
square = defop("square", np.square, lambda xp, g, ans, x: g * 2 * x, save="x",
               doc=_ex("tg.square(tg.Tensor([3.0]))", "Tensor([9.])", "x * x."))
reciprocal = defop("reciprocal", np.reciprocal, lambda xp, g, ans, x: -g * ans * ans, save="ans",
                   doc=_ex("tg.reciprocal(tg.Tensor([4.0]))", "Tensor([0.25])", "1 / x."))
cbrt = defop("cbrt", forward(np.cbrt, lambda xp, x: xp.sign(x) * xp.absolute(x) ** (1 / 3)),
             lambda xp, g, ans, x: g / (3 * ans * ans), save="ans",
             doc=_ex("tg.cbrt(tg.Tensor([-8.0]))", "Tensor([-2.])", "Cube root, negative for negative x."))
i0 = defop("i0", forward(np.i0, lambda xp, x: _bessel(xp, x, 0)), lambda xp, g, ans, x: g * _bessel(xp, x, 1), save="x",
            elementwise=True, real_only="NumPy's i0 takes real input", doc=_ex("tg.i0(tg.Tensor([0.0, 1.0]))", "Tensor([1.        , 1.26606588])",
                                      "The modified Bessel function of the first kind, order 0; its derivative is I1."))
sinc = defop("sinc", _sinc, _sinc_vjp, save="x ans", elementwise=True,
             doc=_ex("tg.sinc(tg.Tensor([0.0, 0.5]))", "Tensor([1.        , 0.63661977])",
                     "sin(pi x) / (pi x), 1 at 0 (NumPy's normalised sinc)."))
deg2rad = defop("deg2rad", forward(np.deg2rad, lambda xp, x: x * _DEG), lambda xp, g, ans, x: g * _DEG,
                doc=_ex("tg.deg2rad(tg.Tensor([180.0]))", "Tensor([3.14159265])", "Degrees to radians."))
rad2deg = defop("rad2deg", forward(np.rad2deg, lambda xp, x: x / _DEG), lambda xp, g, ans, x: g / _DEG,
                doc=_ex("tg.rad2deg(tg.Tensor([3.141592653589793]))", "Tensor([180.])", "Radians to degrees."))
fabs = defop("fabs", forward(np.fabs, "abs"), _absolute_vjp, save="x",
             doc=_ex("tg.fabs(tg.Tensor([-2.0]))", "Tensor([2.])", "|x| for real x (gradient 0 at 0)."))
positive = defop("positive", np.positive, lambda xp, g, ans, x: g,
                 doc=_ex("tg.positive(tg.Tensor([-2.0]))", "Tensor([-2.])", "+x, a copy."))
_nan_to_num_op = defop("nan_to_num", _nan_to_num, lambda xp, g, ans, x, **kw: xp.where(xp.isfinite(x), g, 0),
                       save="x", elementwise=True, refuses={"dask": "dask.array's nan_to_num takes no posinf/neginf arrays"})

# -- binary, broadcasting ---------------------------------------------------------------------------------
arctan2 = defop("arctan2", forward(np.arctan2, "atan2"),
                lambda xp, g, ans, x, y: g * y / (x * x + y * y),
                lambda xp, g, ans, x, y: -g * x / (x * x + y * y),
                save="x y", broadcast=True,
                doc=_ex("tg.arctan2(tg.Tensor([1.0]), tg.Tensor([1.0]))", "Tensor([0.78539816])",
                        "The angle of the point (x2, x1): arctan(x1 / x2) in the right quadrant."))
hypot = defop("hypot", np.hypot,
              lambda xp, g, ans, x, y: g * x / ans,
              lambda xp, g, ans, x, y: g * y / ans,
              save="x y ans", broadcast=True,
              doc=_ex("tg.hypot(tg.Tensor([3.0]), 4.0)", "Tensor([5.])", "sqrt(x1 ** 2 + x2 ** 2), without overflow."))
logaddexp = defop("logaddexp", np.logaddexp,
                  lambda xp, g, ans, x, y: g * xp.exp(x - ans),
                  lambda xp, g, ans, x, y: g * xp.exp(y - ans),
                  save="x y ans", broadcast=True,
                  doc=_ex("tg.logaddexp(tg.Tensor([0.0]), 0.0)", "Tensor([0.69314718])", "log(exp(x1) + exp(x2)), stably."))
logaddexp2 = defop("logaddexp2", forward(np.logaddexp2, lambda xp, x, y: xp.logaddexp(x * LN2, y * LN2) / LN2),
                   lambda xp, g, ans, x, y: g * xp.exp((x - ans) * LN2),
                   lambda xp, g, ans, x, y: g * xp.exp((y - ans) * LN2),
                   save="x y ans", broadcast=True,
                   doc=_ex("tg.logaddexp2(tg.Tensor([1.0]), 1.0)", "Tensor([2.])", "log2(2 ** x1 + 2 ** x2), stably."))
copysign = defop("copysign", np.copysign,
                 lambda xp, g, ans, x, y: xp.where(xp.signbit(x) == xp.signbit(ans), g, -g),
                 None,  # the sign of x2 is piecewise constant: no gradient
                 save="x ans", broadcast=True,
                 doc=_ex("tg.copysign(tg.Tensor([2.0]), -1.0)", "Tensor([-2.])",
                         "|x1| with the sign of x2; x2 gets no gradient (its derivative is 0)."))
float_power = defop("float_power", np.float_power,
                    lambda xp, g, ans, x, y: g * y * xp.float_power(x, y - 1),
                    _float_power_vjp_y,
                    save="x y ans", broadcast=True,
                    doc=_ex("tg.float_power(tg.Tensor([2.0]), 3)", "Tensor([8.])",
                            "x1 ** x2 computed in float64 (or complex128), as NumPy does."))
fmax = defop("fmax", np.fmax,
             lambda xp, g, ans, x, y: _fmax_x(xp, g, x, y, True),
             lambda xp, g, ans, x, y: _fmax_y(xp, g, x, y, True),
             save="x y", broadcast=True,
             doc=_ex("tg.fmax(tg.Tensor([1.0, float('nan')]), 0.5)", "Tensor([1. , 0.5])",
                     "Elementwise maximum ignoring NaN (NaN only where both are); the gradient goes to the input\n"
                     "returned, a tie shares it evenly."))
fmin = defop("fmin", np.fmin,
             lambda xp, g, ans, x, y: _fmax_x(xp, g, x, y, False),
             lambda xp, g, ans, x, y: _fmax_y(xp, g, x, y, False),
             save="x y", broadcast=True,
             doc=_ex("tg.fmin(tg.Tensor([1.0, float('nan')]), 0.5)", "Tensor([0.5, 0.5])",
                     "Elementwise minimum ignoring NaN (NaN only where both are); the gradient goes to the input\n"
                     "returned, a tie shares it evenly."))
remainder = defop("remainder", np.remainder,
                  lambda xp, g, ans, x, y: g,
                  lambda xp, g, ans, x, y: -g * xp.floor(x / y),
                  save="x y", broadcast=True,
                  doc=_ex("tg.remainder(tg.Tensor([5.0, -1.0]), 3.0)", "Tensor([2., 2.])",
                          "x1 - floor(x1 / x2) * x2, the sign of x2 (Python's %); d/dx2 = -floor(x1 / x2)."))
fmod = defop("fmod", np.fmod,
             lambda xp, g, ans, x, y: g,
             lambda xp, g, ans, x, y: -g * xp.trunc(x / y),
             save="x y", broadcast=True,
             doc=_ex("tg.fmod(tg.Tensor([5.0, -1.0]), 3.0)", "Tensor([ 2., -1.])",
                     "x1 - trunc(x1 / x2) * x2, the sign of x1 (C's fmod); d/dx2 = -trunc(x1 / x2)."))
heaviside = defop("heaviside", np.heaviside, None, _heaviside_x2,  # x1: its derivative is 0 almost everywhere
                  save="x", broadcast=True, refuses={"dask": "dask.array has no heaviside"},
                  doc=_ex("tg.heaviside(tg.Tensor([-1.0, 0.0, 2.0]), 0.5)", "Tensor([0. , 0.5, 1. ])",
                          "0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0. x1 gets no gradient (its derivative is\n"
                          "0 almost everywhere); x2 gets the gradient where x1 == 0."))

# -- no gradient: piecewise constant functions and predicates ---------------------------------------------
floor = defnondiff("floor", np.floor, doc=_ex("tg.floor(tg.Tensor([1.5, -1.5]))", "Tensor([ 1., -2.])",
                                              "The largest integer <= x (no gradient: its derivative is 0)."))
ceil = defnondiff("ceil", np.ceil, doc=_ex("tg.ceil(tg.Tensor([1.5, -1.5]))", "Tensor([ 2., -1.])",
                                           "The smallest integer >= x (no gradient: its derivative is 0)."))
trunc = defnondiff("trunc", np.trunc, doc=_ex("tg.trunc(tg.Tensor([1.5, -1.5]))", "Tensor([ 1., -1.])",
                                              "x rounded towards 0 (no gradient: its derivative is 0)."))
rint = defnondiff("rint", forward(np.rint, "round"), doc=_ex("tg.rint(tg.Tensor([0.5, 1.5]))", "Tensor([0., 2.])",
                                                             "x rounded to the nearest integer, halves to even (no gradient)."))
fix = defnondiff("fix", forward(np.fix, "trunc"), elementwise=True, doc=_ex("tg.fix(tg.Tensor([1.5, -1.5]))", "Tensor([ 1., -1.])",
                                                          "x rounded towards 0, as trunc (no gradient)."))
floor_divide = defnondiff("floor_divide", np.floor_divide,
                          doc=_ex("tg.floor_divide(tg.Tensor([7.0, -7.0]), 2.0)", "Tensor([ 3., -4.])",
                                  "floor(x1 / x2), Python's // (no gradient: its derivative is 0)."))
_round = defnondiff("round", lambda x, decimals=0, *, xp=np: xp.round(x) if decimals == 0 else xp.round(x, decimals=decimals),
                    elementwise=True)
isnan = defnondiff("isnan", np.isnan, doc=_ex("tg.isnan(tg.Tensor([float('nan'), 1.0]))", "Tensor([ True, False])",
                                              "Where x is NaN (no gradient)."))
isinf = defnondiff("isinf", np.isinf, doc=_ex("tg.isinf(tg.Tensor([float('inf'), 1.0]))", "Tensor([ True, False])",
                                              "Where x is infinite (no gradient)."))
isfinite = defnondiff("isfinite", np.isfinite, doc=_ex("tg.isfinite(tg.Tensor([float('inf'), 1.0]))",
                                                       "Tensor([False,  True])", "Where x is finite (no gradient)."))
signbit = defnondiff("signbit", np.signbit, doc=_ex("tg.signbit(tg.Tensor([-0.0, 1.0]))", "Tensor([ True, False])",
                                                    "Where the sign bit is set, -0.0 included (no gradient)."))
logical_and = defnondiff("logical_and", np.logical_and,
                         doc=_ex("tg.logical_and(tg.Tensor([1.0, 0.0]), True)", "Tensor([ True, False])",
                                 "x1 and x2, elementwise (no gradient)."))
logical_or = defnondiff("logical_or", np.logical_or,
                        doc=_ex("tg.logical_or(tg.Tensor([1.0, 0.0]), False)", "Tensor([ True, False])",
                                "x1 or x2, elementwise (no gradient)."))
logical_xor = defnondiff("logical_xor", np.logical_xor,
                         doc=_ex("tg.logical_xor(tg.Tensor([1.0, 0.0]), True)", "Tensor([False,  True])",
                                 "x1 xor x2, elementwise (no gradient)."))
logical_not = defnondiff("logical_not", np.logical_not,
                         doc=_ex("tg.logical_not(tg.Tensor([1.0, 0.0]))", "Tensor([False,  True])",
                                 "not x, elementwise (no gradient)."))
bitwise_and = defnondiff("bitwise_and", np.bitwise_and,
                         doc=_ex("tg.bitwise_and(tg.Tensor([True, False]), True)", "Tensor([ True, False])",
                                 "x1 & x2, elementwise, of booleans or integers (no gradient)."))
bitwise_or = defnondiff("bitwise_or", np.bitwise_or,
                        doc=_ex("tg.bitwise_or(tg.Tensor([True, False]), False)", "Tensor([ True, False])",
                                "x1 | x2, elementwise, of booleans or integers (no gradient)."))
bitwise_xor = defnondiff("bitwise_xor", np.bitwise_xor,
                         doc=_ex("tg.bitwise_xor(tg.Tensor([True, False]), True)", "Tensor([False,  True])",
                                 "x1 ^ x2, elementwise, of booleans or integers (no gradient)."))
invert = defnondiff("invert", forward(np.invert, "bitwise_invert"),
                    doc=_ex("tg.invert(tg.Tensor([True, False]))", "Tensor([False,  True])",
                            "~x, elementwise: not of booleans, the bits flipped of integers (no gradient)."))
# fmt: on


def round(x, decimals=0):
    """x rounded to ``decimals`` places, halves to even, as ``np.round`` (no gradient: its derivative is 0).

    >>> import tapegrad as tg
    >>> tg.round(tg.Tensor([0.5, 1.5, 2.675]), 1)
    Tensor([0.5, 1.5, 2.7])
    """
    return _round(x, decimals=int(decimals))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """x with NaN replaced by ``nan`` and infinities by ``posinf``/``neginf`` (default: the largest finite
    numbers of the dtype), as ``np.nan_to_num``; the gradient passes where x is finite and is 0 elsewhere.

    >>> import tapegrad as tg
    >>> tg.nan_to_num(tg.Tensor([float("nan"), 1.0]))
    Tensor([0., 1.])
    """
    return _nan_to_num_op(x, nan=nan, posinf=posinf, neginf=neginf)


around = round
radians = deg2rad
degrees = rad2deg
mod = remainder
