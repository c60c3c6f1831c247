"""Transcendental functions as arithmetic that LLVM vectorises, for fused loops over large arrays (:mod:`.fuse`).

numba calls the C library's scalar ``tanh`` (a call per element, no SIMD), and PyPI's
llvmlite has no vector library (SVML) to replace it. :func:`tanh` is written with ``+ - * /``, ``abs``,
``copysign`` and selects only, so a loop of it runs four or eight elements at a time (AVX2, AVX-512): within
``TANH_ULPS`` of the correctly rounded ``tanh`` (``tests/test_fusion.py`` checks it), NaN, infinities and signed
zeros as NumPy's. It is plain Python, the same numbers without numba.

>>> tanh(0.5) == 0.46211715726000974
True
"""

from __future__ import annotations

import math

__all__ = ["tanh", "TANH_ULPS"]

TANH_ULPS = 3  # measured 1.9 over every exponent, 2.3 on 300,000 normal values, against long double
_LN2_HI = 6.93147180369123816490e-01  # ln 2 in two parts: k * _LN2_HI is exact for k < 2^20
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00
_ROUND = 6755399441055744.0  # 1.5 * 2^52: (y + _ROUND) - _ROUND is y rounded to an integer


def tanh(x):
    """``tanh(x)`` for a float64 ``x`` as ``e / (e + 2)``, ``e = expm1(2|x|)``, the sign of ``x`` copied (so
    ``tanh(-0.0)`` is ``-0.0``); ``|x| > 20`` gives 1 (``tanh(20)`` rounds to 1)."""
    a = abs(x)
    z = 40.0 if a > 20.0 else a + a  # NaN stays NaN: the comparison is false
    k = (z * _INV_LN2 + _ROUND) - _ROUND  # z = k ln 2 + r, |r| <= ln 2 / 2
    r = (z - k * _LN2_HI) - k * _LN2_LO
    # expm1(r) = r + r^2 p(r), p Taylor's to r^11 (the error under 2^-60), in Estrin's scheme: a chain of
    # five operations instead of Horner's twelve, which the loop's speed waits on (the chain's latency)
    r2 = r * r
    r4 = r2 * r2
    q0 = (0.5 + r * (1.0 / 6.0)) + r2 * (1.0 / 24.0 + r * (1.0 / 120.0))
    q1 = (1.0 / 720.0 + r * (1.0 / 5040.0)) + r2 * (1.0 / 40320.0 + r * (1.0 / 362880.0))
    q2 = (1.0 / 3628800.0 + r * (1.0 / 39916800.0)) + r2 * (1.0 / 479001600.0 + r * (1.0 / 6227020800.0))
    p = q0 + r4 * (q1 + r4 * q2)
    em = r + r * (r * p)
    s = 1.0  # 2^k, k <= 58, from its bits: multiplications by exact powers of two
    s *= 4294967296.0 if k >= 32.0 else 1.0
    k -= 32.0 if k >= 32.0 else 0.0
    s *= 65536.0 if k >= 16.0 else 1.0
    k -= 16.0 if k >= 16.0 else 0.0
    s *= 256.0 if k >= 8.0 else 1.0
    k -= 8.0 if k >= 8.0 else 0.0
    s *= 16.0 if k >= 4.0 else 1.0
    k -= 4.0 if k >= 4.0 else 0.0
    s *= 4.0 if k >= 2.0 else 1.0
    k -= 2.0 if k >= 2.0 else 0.0
    s *= 2.0 if k >= 1.0 else 1.0
    e = s * em + (s - 1.0)  # expm1(z) = 2^k expm1(r) + (2^k - 1)
    return math.copysign(e / (e + 2.0), x)
