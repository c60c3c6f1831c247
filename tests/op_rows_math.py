"""Op-table rows for tapegrad/ops/math.py: NumPy's elementwise math (one row per op).

Domains keep finite differences meaningful: away from poles (tan on (-0.9, 0.9)), from the edges of a
domain (arcsin, arctanh on (-0.9, 0.9); arccosh shifted to x > 1.5), from kinks (fabs, copysign, cbrt at 0) and
from ties (fmax/fmin on distinct values). The remainders are checked at a first argument ``y * q(x)`` whose
quotient ``q`` stays within 0.1 of no integer (1.6..1.9 for x > 0, -1.9..-1.6 for x < 0), so no discontinuity
lies within the finite-difference step and both signs of the quotient (floor 1 and -2, trunc 1 and -1) occur.
"""

import numpy as np
from op_table import BINARY_SHAPES, UNARY_SHAPES, OpCase, binary, unary

import tapegrad as tg

_NO_STANDARD = ("array_api_strict",)  # NumPy functions the array API standard lacks


def _quotient(x, xp):  # 1.5 sign(x) + 0.4 tanh(x): far from integers for |x| >= 0.25
    return 1.5 * xp.sign(x) + 0.4 * xp.tanh(x)


def _remainder_row(name, fn, ref, unsupported=()):
    return OpCase(
        name,
        lambda x, y: fn(y * _quotient(x, tg), y),
        lambda x, y: ref(y * _quotient(x, np), y),
        2,
        "nonzero",
        BINARY_SHAPES,
        broadcasting=True,
        unsupported=unsupported,
    )


def _float_power(x, y):  # float_power computes in float64: cast back so the row keeps its input's dtype
    return tg.astype(tg.float_power(x, y), dtype=x.dtype)


ROWS = (
    unary("tan", tg.tan, np.tan, domain="unit"),
    unary("arcsin", tg.arcsin, np.arcsin, domain="unit"),
    unary("arccos", tg.arccos, np.arccos, domain="unit"),
    unary("arctan", tg.arctan, np.arctan),
    unary("sinh", tg.sinh, np.sinh),
    unary("cosh", tg.cosh, np.cosh),
    unary("arcsinh", tg.arcsinh, np.arcsinh),
    unary("arccosh", lambda x: tg.arccosh(x + 1.25), lambda x: np.arccosh(x + 1.25), domain="positive"),
    unary("arctanh", tg.arctanh, np.arctanh, domain="unit"),
    unary("log1p", tg.log1p, np.log1p, domain="unit"),
    unary("expm1", tg.expm1, np.expm1),
    unary("log2", tg.log2, np.log2, domain="positive"),
    unary("log10", tg.log10, np.log10, domain="positive"),
    unary("exp2", tg.exp2, np.exp2),
    unary("square", tg.square, np.square),
    unary("reciprocal", tg.reciprocal, np.reciprocal, domain="nonzero"),
    unary("cbrt", tg.cbrt, np.cbrt, domain="nonzero"),
    unary("sinc", tg.sinc, np.sinc),  # the real domain draws 0, where the rule switches to its series
    unary("deg2rad", tg.deg2rad, np.deg2rad),
    unary("rad2deg", tg.rad2deg, np.rad2deg),
    unary("fabs", tg.fabs, np.fabs, domain="nonzero"),
    unary("positive", tg.positive, np.positive),
    OpCase("nan_to_num", tg.nan_to_num, np.nan_to_num, 1, "real", UNARY_SHAPES, unsupported=_NO_STANDARD),
    binary("arctan2", tg.arctan2, np.arctan2, domain="nonzero"),
    binary("hypot", tg.hypot, np.hypot, domain="nonzero"),
    binary("logaddexp", tg.logaddexp, np.logaddexp),
    binary("logaddexp2", tg.logaddexp2, np.logaddexp2),
    OpCase(
        "copysign",
        tg.copysign,
        np.copysign,
        2,
        "nonzero",
        BINARY_SHAPES,
        broadcasting=True,
        constant_inputs=(1,),  # the sign source gets no gradient (its derivative is 0)
    ),
    OpCase(
        "float_power",
        _float_power,
        lambda x, y: np.float_power(x, y).astype(x.dtype),
        2,
        "positive",
        BINARY_SHAPES,
        broadcasting=True,
        unsupported=_NO_STANDARD,
    ),
    OpCase("fmax", tg.fmax, np.fmax, 2, "distinct", BINARY_SHAPES, broadcasting=True, unsupported=_NO_STANDARD),
    OpCase("fmin", tg.fmin, np.fmin, 2, "distinct", BINARY_SHAPES, broadcasting=True, unsupported=_NO_STANDARD),
    _remainder_row("remainder", tg.remainder, np.remainder),
    _remainder_row("fmod", tg.fmod, np.fmod, unsupported=_NO_STANDARD),
    OpCase(
        "heaviside",
        tg.heaviside,
        np.heaviside,
        2,
        "nonzero",
        BINARY_SHAPES,
        broadcasting=True,
        constant_inputs=(0,),  # x1 gets no gradient; x2 gets it where x1 == 0 (tests/test_numpy_ops.py)
        unsupported=_NO_STANDARD,
    ),
)
