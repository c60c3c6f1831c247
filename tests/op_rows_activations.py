"""Op rows for the activations and the error function (tapegrad/ops/activations.py).

References are written from the definitions with NumPy and ``math.erf``, not from tapegrad's code. Ops with
a kink or a switch take the ``distinct`` domain (no value within 0.075 of 0 or ±0.5), and their keyword
examples put the kink there: ``hardtanh(-0.5, 0.5)``, ``softplus(beta=2, threshold=1)`` (switching at 0.5).
"""

import math

import numpy as np
from op_table import UNARY_SHAPES, OpCase

import tapegrad as tg

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _same(f):
    """A reference computed in float64 and returned in its input's dtype (as the op does)."""
    return lambda x, **k: np.asarray(f(np.asarray(x, np.float64), **k)).astype(np.asarray(x).dtype)


def _softplus(x, beta=1.0, threshold=20.0):
    return np.where(beta * x > threshold, x, np.log1p(np.exp(np.minimum(beta * x, threshold))) / beta)


def _elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * (np.exp(np.minimum(x, 0)) - 1))


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + _erf(x / np.sqrt(2)))


def _with_kwargs(kwargs):
    return tuple((shapes, k) for shapes, _ in UNARY_SHAPES for k in kwargs)


ROWS = (
    OpCase("erf", ref=_same(_erf)),
    OpCase("erfc", ref=_same(_erfc)),
    OpCase(
        "softplus",
        ref=_same(_softplus),
        domain="distinct",
        examples=_with_kwargs([{}, {"beta": 2.0, "threshold": 1.0}]),
    ),
    OpCase("log_sigmoid", ref=_same(lambda x: -np.log1p(np.exp(-x)))),
    OpCase(
        "leaky_relu",
        ref=_same(lambda x, negative_slope=0.01: np.where(x > 0, x, negative_slope * x)),
        domain="nonzero",
        examples=_with_kwargs([{}, {"negative_slope": 0.2}]),
    ),
    OpCase("elu", ref=_same(_elu), domain="nonzero", examples=_with_kwargs([{}, {"alpha": 0.5}])),
    OpCase("selu", ref=_same(lambda x: 1.0507009873554805 * _elu(x, 1.6732632423543772)), domain="nonzero"),
    OpCase("silu", ref=_same(lambda x: x / (1 + np.exp(-x)))),
    OpCase("gelu", ref=_same(_gelu), examples=_with_kwargs([{}, {"approximate": "tanh"}])),
    OpCase(
        "hardtanh", lambda x, **k: tg.hardtanh(x, -0.5, 0.5), lambda x, **k: np.clip(x, -0.5, 0.5), domain="distinct"
    ),
)
