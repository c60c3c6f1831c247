"""The ops, by family; each family file is a table of derivatives registered in ``tapegrad.registry``.

``tensor_rules`` is the namespace rules compute with when a replay is itself recorded (``create_graph``):
the same names as ``numpy_rules``, implemented by tapegrad's differentiable ops.
"""

import numpy as np

from .activations import elu, erf, erfc, gelu, hardtanh, leaky_relu, log_sigmoid, relu6, selu, silu, softplus
from .compare import argmax, argmin, equal, greater, greater_equal, less, less_equal, not_equal, sign
from .conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d, fold, unfold
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
from .norm import standardize
from .pool import adaptive_avg_pool1d, adaptive_avg_pool2d, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d
from .reductions import log_softmax, logsumexp, max, mean, min, softmax, sum, var
from .shape import (
    broadcast_to,
    concatenate,
    expand_dims,
    getitem,
    reshape,
    scatter,
    squeeze,
    stack,
    swapaxes,
    transpose,
)

__all__ = [
    "absolute",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "add",
    "argmax",
    "argmin",
    "astype",
    "avg_pool1d",
    "avg_pool2d",
    "broadcast_to",
    "clip",
    "concatenate",
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "cos",
    "divide",
    "elu",
    "equal",
    "erf",
    "erfc",
    "exp",
    "expand_dims",
    "fold",
    "gelu",
    "getitem",
    "greater",
    "greater_equal",
    "hardtanh",
    "leaky_relu",
    "less",
    "less_equal",
    "log",
    "log_sigmoid",
    "log_softmax",
    "logsumexp",
    "matmul",
    "max",
    "max_pool1d",
    "max_pool2d",
    "maximum",
    "mean",
    "min",
    "minimum",
    "multiply",
    "negative",
    "not_equal",
    "power",
    "relu",
    "relu6",
    "reshape",
    "scatter",
    "selu",
    "sigmoid",
    "sign",
    "silu",
    "sin",
    "softmax",
    "softplus",
    "sqrt",
    "squeeze",
    "stack",
    "standardize",
    "subtract",
    "sum",
    "swapaxes",
    "tanh",
    "transpose",
    "unfold",
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
