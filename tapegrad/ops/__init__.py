"""The ops, by family; each family file is a table of derivatives registered in ``tapegrad.registry``.

``tensor_rules`` is the namespace rules compute with when a replay is itself recorded (``create_graph``):
the same names as ``numpy_rules``, implemented by tapegrad's differentiable ops.
"""

import numpy as np

from . import decompositions, fft, matrix_functions  # noqa: F401  (registers the linear-algebra and FFT ops)
from .compare import argmax, argmin, equal, greater, greater_equal, less, less_equal, not_equal, sign
from .complex_numbers import angle, conj, conjugate, imag, real
from .elementwise import (
    absolute,
    add,
    astype,
    clip,
    cos,
    divide,
    exp,
    log,
    maximum,
    minimum,
    multiply,
    negative,
    power,
    relu,
    sigmoid,
    sin,
    sqrt,
    subtract,
    tanh,
    where,
)
from .linalg import matmul
from .reductions import log_softmax, logsumexp, max, mean, min, softmax, sum, var
from .shape import (
    broadcast_to,
    concatenate,
    expand_dims,
    getitem,
    reshape,
    roll,
    scatter,
    squeeze,
    stack,
    swapaxes,
    transpose,
    tril,
    triu,
)

__all__ = [
    "absolute",
    "add",
    "angle",
    "argmax",
    "argmin",
    "astype",
    "broadcast_to",
    "clip",
    "concatenate",
    "conj",
    "conjugate",
    "cos",
    "divide",
    "equal",
    "exp",
    "expand_dims",
    "getitem",
    "greater",
    "greater_equal",
    "imag",
    "less",
    "less_equal",
    "log",
    "log_softmax",
    "logsumexp",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "multiply",
    "negative",
    "not_equal",
    "power",
    "real",
    "relu",
    "reshape",
    "roll",
    "scatter",
    "sigmoid",
    "sign",
    "sin",
    "softmax",
    "sqrt",
    "squeeze",
    "stack",
    "subtract",
    "sum",
    "swapaxes",
    "tanh",
    "transpose",
    "tril",
    "triu",
    "var",
    "where",
]


class _TensorRules:
    """NumPy's names, implemented by tapegrad's differentiable ops: what rules compute with on a recorded
    replay. Any public op of ``tapegrad.ops`` is found by its name; constructors (``zeros``, ``ones_like``...)
    give constant tensors; NumPy's constants and dtypes pass through."""

    name = "tapegrad"

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        f = globals().get(attr) if attr in __all__ else None
        if f is None and attr in _CONSTRUCTORS:
            f = _constant(getattr(np, attr))
        if f is None:
            value = getattr(np, attr, None)
            if value is None or (callable(value) and not isinstance(value, type)):
                raise AttributeError(
                    f"a rule computed xp.{attr} on a recorded replay (create_graph), but tapegrad has no "
                    f"differentiable op named {attr!r}: write the rule with ops tapegrad has, or define one with defop"
                )
            f = value  # a constant or a dtype
        setattr(self, attr, f)
        return f

    @staticmethod
    def masked(cond, g):
        return where(cond, g, 0)

    @staticmethod
    def astype(x, dtype):
        return astype(x, dtype=dtype)

    @staticmethod
    def getitem(x, index):
        return getitem(x, index=index)

    scatter = staticmethod(scatter)


def _constant(make):
    def fn(*args, **kwargs):
        from ..tensor import Tensor

        args = [a._data if isinstance(a, Tensor) else a for a in args]
        return Tensor._wrap(make(*args, **kwargs))

    return fn


_CONSTRUCTORS = frozenset(
    ("zeros", "ones", "full", "empty", "eye", "identity", "arange", "linspace", "zeros_like", "ones_like", "full_like")
)
tensor_rules = _TensorRules()
