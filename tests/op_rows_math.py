"""Op-table rows for tapegrad/ops/math.py: NumPy's elementwise math (one row per op).

Domains keep finite differences meaningful: away from poles (tan on (-0.9, 0.9)), from the edges of a
domain (arcsin, arctanh on (-0.9, 0.9); arccosh shifted to x > 1.5), from kinks (fabs, copysign, cbrt at 0) and
from ties (fmax/fmin on distinct values). The remainders are checked at a first argument ``y * q(x)`` whose
quotient ``q`` stays within 0.1 of no integer (1.6..1.9 for x > 0, -1.9..-1.6 for x < 0), so no discontinuity
lies within the finite-difference step and both signs of the quotient (floor 1 and -2, trunc 1 and -1) occur.
"""

import numpy as np
from op_table import OpCase

import tapegrad as tg

_NO_STANDARD = ("array_api_strict",)  # NumPy functions the array API standard lacks


def _quotient(x, xp):  # 1.5 sign(x) + 0.4 tanh(x): far from integers for |x| >= 0.25
    return 1.5 * xp.sign(x) + 0.4 * xp.tanh(x)


def _remainder_row(name, fn, ref, unsupported=()):
    return OpCase(
        name,
        lambda x, y: fn(y * _quotient(x, tg), y),
        lambda x, y: ref(y * _quotient(x, np), y),
        domain="nonzero",
        unsupported=unsupported,
    )


def _float_power(x, y):  # float_power computes in float64: cast back so the row keeps its input's dtype
    return tg.astype(tg.float_power(x, y), dtype=x.dtype)


ROWS = (
    OpCase("tan", ref=np.tan, domain="unit"),
    OpCase("arcsin", ref=np.arcsin, domain="unit"),
    OpCase("arccos", ref=np.arccos, domain="unit"),
    OpCase("arctan", ref=np.arctan),
    OpCase("sinh", ref=np.sinh),
    OpCase("cosh", ref=np.cosh),
    OpCase("arcsinh", ref=np.arcsinh),
    OpCase("arccosh", lambda x: tg.arccosh(x + 1.25), lambda x: np.arccosh(x + 1.25), domain="positive"),
    OpCase("arctanh", ref=np.arctanh, domain="unit"),
    OpCase("log1p", ref=np.log1p, domain="unit"),
    OpCase("expm1", ref=np.expm1),
    OpCase("log2", ref=np.log2, domain="positive"),
    OpCase("log10", ref=np.log10, domain="positive"),
    OpCase("exp2", ref=np.exp2),
    OpCase("square", ref=np.square),
    OpCase("reciprocal", ref=np.reciprocal, domain="nonzero"),
    OpCase("cbrt", ref=np.cbrt, domain="nonzero"),
    OpCase("i0", ref=np.i0),
    OpCase("i0", lambda x: tg.i0(x + 24.0), lambda x: np.i0(x + 24.0), domain="unit"),  # past 20: Hankel's expansion
    OpCase("sinc", ref=np.sinc),  # the real domain draws 0, where the rule switches to its series
    OpCase("deg2rad", ref=np.deg2rad),
    OpCase("rad2deg", ref=np.rad2deg),
    OpCase("fabs", ref=np.fabs, domain="nonzero"),
    OpCase("positive", ref=np.positive),
    OpCase("nan_to_num", ref=np.nan_to_num, unsupported=_NO_STANDARD),
    OpCase("arctan2", ref=np.arctan2, domain="nonzero"),
    OpCase("hypot", ref=np.hypot, domain="nonzero"),
    OpCase("logaddexp", ref=np.logaddexp),
    OpCase("logaddexp2", ref=np.logaddexp2),
    OpCase("copysign", ref=np.copysign, domain="nonzero"),
    OpCase(
        "float_power",
        _float_power,
        lambda x, y: np.float_power(x, y).astype(x.dtype),
        domain="positive",
        unsupported=_NO_STANDARD,
    ),
    OpCase("fmax", ref=np.fmax, domain="distinct", unsupported=_NO_STANDARD),
    OpCase("fmin", ref=np.fmin, domain="distinct", unsupported=_NO_STANDARD),
    _remainder_row("remainder", tg.remainder, np.remainder),
    _remainder_row("fmod", tg.fmod, np.fmod, unsupported=_NO_STANDARD),
    OpCase("heaviside", ref=np.heaviside, domain="nonzero", unsupported=_NO_STANDARD),
)
