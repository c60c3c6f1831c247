"""Activation functions and the error function: a table of derivatives (rule signature in ``tapegrad.registry``).

PyTorch's definitions and keywords (``softplus(beta, threshold)``, ``leaky_relu(negative_slope)``,
``elu(alpha)``, ``gelu(approximate="none" | "tanh")``, ``hardtanh(min_val, max_val)``), with its gradients at the
kinks (the side PyTorch takes). Every forward and rule is stable for large ``|x|``: an exponential only ever
sees a non-positive argument or a value under a select, so ``x = ±1000`` gives finite values and gradients and
no overflow warning. Masks are selects (``where``), never products.

``erf`` and ``erfc`` take their values from ``scipy.special`` when SciPy is installed and the data is NumPy's
(SciPy is loaded on first use and is no dependency). Otherwise, on every array library, they are computed here:
for ``|x| < 1.5`` the series ``erf(x) = 2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (2n+1)!!`` (30 terms, all
positive, so no cancellation), and for ``|x| >= 1.5`` the continued fraction
``erfc(x) = exp(-x^2) / sqrt(pi) / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...))))`` (100 levels), with
``exp(-x^2)`` split as ``exp(-z^2) exp((z - x)(z + x))`` for ``z`` = x rounded to float32, so that ``z^2`` is
exact. In float64, checked against ``math.erf``/``math.erfc`` at 400,000 points: relative error below 2e-15
for ``erf`` everywhere and for ``erfc`` at ``x >= 1.5``, below 2e-14 for ``erfc`` at ``x < 1.5``, until erfc
underflows (``x > 26.5``). The derivatives are exact: ``d erf/dx = 2/sqrt(pi) exp(-x^2) = -d erfc/dx``.
"""

import math

import numpy as np

from ..backend.numpy_rules import numpy_rules
from ..registry import defop
from ._complex import is_complex
from ._rules import call
from .elementwise import _sigmoid, sigmoid

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_K = math.sqrt(2.0 / math.pi)
_TANH_C = 0.044715
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


# -- the error function ---------------------------------------------------------------------------------
_SCIPY = []  # [scipy.special] once looked up, [None] when SciPy is not installed


def _scipy_special():
    if not _SCIPY:
        try:
            import scipy.special as special  # optional, and slow to import: only when erf is first used
        except ImportError:
            special = None
        _SCIPY.append(special)
    return _SCIPY[0]


def _series_erf(a, xp):
    """erf(a) for 0 <= a < 1.5 by the positive series (30 terms reach float64's precision there)."""
    a2 = a * a
    term, total = a, a
    for n in range(1, 30):
        term = term * (2.0 * a2) / (2 * n + 1)
        total = total + term
    return _TWO_OVER_SQRT_PI * xp.exp(-a2) * total


def _fraction_erfc(a, xp):
    """erfc(a) for 1.5 <= a <= 30 by the continued fraction, evaluated from its 100th level up."""
    f = a
    for k in range(100, 0, -1):
        f = a + (0.5 * k) / f
    z = xp.astype(xp.astype(a, xp.float32), a.dtype)  # z * z is exact: exp(-a^2) loses no digits to rounding
    return xp.exp(-(z * z)) * xp.exp((z - a) * (z + a)) / (math.sqrt(math.pi) * f)


def _erf_parts(x, xp):
    """(erf(|x|), erfc(|x|)), each accurate on its own (no 1 - erf where erf is near 1)."""
    xp = numpy_rules if xp is np else xp  # NumPy spells astype as a method before 2.0
    a = xp.abs(x)
    small = a < 1.5
    s = _series_erf(xp.where(small, a, 0.0), xp)  # each branch sees only arguments inside its range
    c = _fraction_erfc(xp.where(small, 1.5, xp.minimum(a, 30.0)), xp)
    return xp.where(small, s, 1.0 - c), xp.where(small, 1.0 - s, c)


def _is_numpy(x, xp):
    return (xp is np or xp is numpy_rules) and isinstance(x, (np.ndarray, np.generic, float, int))


def _erf(x, *, xp=np):
    special = _scipy_special() if _is_numpy(x, xp) else None
    if special is not None:
        return special.erf(x)
    own = getattr(xp, "erf", None)  # a library's own (Dask's: SciPy's per chunk)
    if own is not None:
        return own(x)
    e, _ = _erf_parts(x, xp)
    return xp.where(x < 0, -e, e)


def _erfc(x, *, xp=np):
    special = _scipy_special() if _is_numpy(x, xp) else None
    if special is not None:
        return special.erfc(x)
    own = getattr(xp, "erfc", None)
    if own is not None:
        return own(x)
    _, c = _erf_parts(x, xp)
    return xp.where(x < 0, 2.0 - c, c)


def _gauss(xp, x):
    return _TWO_OVER_SQRT_PI * xp.exp(-(x * x))  # d erf / dx; exp(-x^2) underflows quietly to 0 for large |x|


# -- forwards and rules ---------------------------------------------------------------------------------
def _softplus(x, beta=1.0, threshold=20.0, *, xp=np):
    bx = x * beta
    return xp.where(bx > threshold, x, xp.logaddexp(0.0, bx) / beta)  # linear past the threshold, as PyTorch


def _softplus_vjp(xp, g, ans, x, beta=1.0, threshold=20.0):
    bx = x * beta
    return xp.where(bx > threshold, g, g * call(xp, sigmoid, bx))


def _negative_part(xp, x):
    return xp.where(x > 0, 0.0, x)  # min(x, 0): what an exponential of the negative branch may see


def _elu(x, alpha=1.0, *, xp=np):
    return xp.where(x > 0, x, alpha * xp.expm1(_negative_part(xp, x)))


def _elu_vjp(xp, g, ans, x, alpha=1.0):
    return xp.where(x > 0, g, g * (alpha * xp.exp(_negative_part(xp, x))))


def _silu_vjp(xp, g, ans, x):
    s = call(xp, sigmoid, x)
    return g * (s * (1.0 + x * (1.0 - s)))


def _gelu(x, approximate="none", *, xp=np):
    if approximate == "tanh":  # 0.5 * (1 + tanh(u)) is sigmoid(2u), which keeps its digits for negative u
        return x * _sigmoid(2.0 * _TANH_K * (x + _TANH_C * (x * x * x)), xp=xp)
    return 0.5 * x * _erfc(-x * _SQRT_HALF, xp=xp)  # x * Phi(x); erfc keeps Phi's digits for negative x


def _gelu_vjp(xp, g, ans, x, approximate="none"):
    if approximate == "tanh":
        s = call(xp, sigmoid, 2.0 * _TANH_K * (x + _TANH_C * (x * x * x)))
        du = (2.0 * _TANH_K) * (1.0 + (3.0 * _TANH_C) * (x * x))
        return g * (s + x * ((s * (1.0 - s)) * du))
    cdf = 0.5 * call(xp, erfc, -x * _SQRT_HALF)
    return g * (cdf + x * (_INV_SQRT_2PI * xp.exp(-0.5 * (x * x))))


def _hardtanh(x, min_val=-1.0, max_val=1.0, *, xp=np):
    return xp.clip(x, min_val, max_val)


def _hardtanh_vjp(xp, g, ans, x, min_val=-1.0, max_val=1.0):
    return xp.where(x <= min_val, 0.0, xp.where(x >= max_val, 0.0, g))  # PyTorch: no gradient at the edges


# fmt: off
erf = defop("erf", _erf, lambda xp, g, ans, x: g * _gauss(xp, x), save="x", elementwise=True,
            doc="The error function 2/sqrt(pi) * integral of exp(-t^2) from 0 to x (SciPy's values when installed).\n\n"
                ">>> import tapegrad as tg\n>>> round(tg.erf(tg.Tensor(1.0)).item(), 12)\n0.84270079295")
erfc = defop("erfc", _erfc, lambda xp, g, ans, x: -g * _gauss(xp, x), save="x", elementwise=True,
             doc="1 - erf(x), accurate where erf(x) is near 1 (large x).\n\n"
                 ">>> import tapegrad as tg\n>>> print(f'{float(tg.erfc(tg.Tensor(10.0))):.10e}')\n2.0884875838e-45")
_LOGADDEXP = "built on np.logaddexp, which has no complex loop"
_softplus_op = defop("softplus", _softplus, _softplus_vjp, save="x", elementwise=True, real_only=_LOGADDEXP)
log_sigmoid = defop("log_sigmoid", lambda x, *, xp=np: -xp.logaddexp(0.0, -x),
                    lambda xp, g, ans, x: g * call(xp, sigmoid, -x), save="x", elementwise=True, real_only=_LOGADDEXP,
                    doc="log(sigmoid(x)) = -softplus(-x), stable for large |x|.\n\n"
                        ">>> import tapegrad as tg\n>>> [round(v, 8) for v in tg.log_sigmoid(tg.Tensor([-1000.0, 0.0])).tolist()]\n[-1000.0, -0.69314718]")
_leaky_relu_op = defop("leaky_relu", lambda x, negative_slope=0.01, *, xp=np: xp.where(x > 0, x, x * negative_slope),
                       lambda xp, g, ans, x, negative_slope=0.01: xp.where(x > 0, g, g * negative_slope), save="x", elementwise=True)
_elu_op = defop("elu", _elu, _elu_vjp, save="x", elementwise=True)
selu = defop("selu", lambda x, *, xp=np: _SELU_SCALE * _elu(x, _SELU_ALPHA, xp=xp),
             lambda xp, g, ans, x: _SELU_SCALE * _elu_vjp(xp, g, ans, x, _SELU_ALPHA), save="x", elementwise=True,
             doc="scale * elu(x, alpha) with the self-normalising constants (alpha 1.6733, scale 1.0507).\n\n"
                 ">>> import tapegrad as tg\n>>> tg.selu(tg.Tensor([0.0, 1.0]))\nTensor([0.        , 1.05070099])")
silu = defop("silu", lambda x, *, xp=np: x * _sigmoid(x, xp=xp), _silu_vjp, save="x", elementwise=True,
             real_only=_LOGADDEXP,
             doc="x * sigmoid(x) (swish).\n\n>>> import tapegrad as tg\n>>> tg.silu(tg.Tensor([0.0, 1000.0]))\nTensor([   0., 1000.])")
_gelu_op = defop("gelu", _gelu, _gelu_vjp, save="x", elementwise=True, real_only="an activation of real inputs")
_hardtanh_op = defop("hardtanh", _hardtanh, _hardtanh_vjp, save="x", elementwise=True)
# fmt: on


def softplus(x, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold`` (PyTorch's definition).

    >>> import tapegrad as tg
    >>> tg.softplus(tg.Tensor([0.0, 1000.0]))
    Tensor([6.93147181e-01, 1.00000000e+03])
    """
    if beta == 0:
        raise ValueError("softplus: beta must be nonzero")
    return _softplus_op(x, beta=float(beta), threshold=float(threshold))


def leaky_relu(x, negative_slope=0.01):
    """``x`` where ``x > 0``, else ``negative_slope * x``.

    >>> import tapegrad as tg
    >>> tg.leaky_relu(tg.Tensor([-2.0, 3.0]), 0.1)
    Tensor([-0.2,  3. ])
    """
    return _leaky_relu_op(x, negative_slope=float(negative_slope))


def elu(x, alpha=1.0):
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``.

    >>> import tapegrad as tg
    >>> tg.elu(tg.Tensor([-1000.0, 2.0]))
    Tensor([-1.,  2.])
    """
    return _elu_op(x, alpha=float(alpha))


def gelu(x, approximate="none"):
    """``x * Phi(x)`` with ``Phi`` the standard normal CDF (``approximate="none"``), or PyTorch's tanh form.

    >>> import tapegrad as tg
    >>> tg.gelu(tg.Tensor([-1.0, 0.0, 1.0]))
    Tensor([-0.15865525,  0.        ,  0.84134475])
    >>> tg.gelu(tg.Tensor([1.0]), approximate="tanh")
    Tensor([0.84119199])
    """
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    if is_complex(x):
        raise TypeError("gelu: defined for real inputs (an activation); got a complex tensor")
    return _gelu_op(x, approximate=approximate)


def hardtanh(x, min_val=-1.0, max_val=1.0):
    """``x`` clipped to ``[min_val, max_val]``; the gradient is 0 at and beyond both edges (as PyTorch).

    >>> import tapegrad as tg
    >>> tg.hardtanh(tg.Tensor([-3.0, 0.5, 3.0]))
    Tensor([-1. ,  0.5,  1. ])
    """
    if not min_val < max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) must be below max_val ({max_val})")
    return _hardtanh_op(x, min_val=float(min_val), max_val=float(max_val))


def relu6(x):
    """``min(max(x, 0), 6)``: ``hardtanh(x, 0, 6)``.

    >>> import tapegrad as tg
    >>> tg.relu6(tg.Tensor([-1.0, 3.0, 9.0]))
    Tensor([0., 3., 6.])
    """
    return hardtanh(x, 0.0, 6.0)
