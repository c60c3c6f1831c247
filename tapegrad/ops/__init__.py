"""The ops, by family; each family file is a table of derivatives registered in ``tapegrad.registry``.

``tensor_rules`` is the namespace rules compute with when a replay is itself recorded (``create_graph``):
the same names as ``numpy_rules``, implemented by tapegrad's differentiable ops.
"""

import types

import numpy as np

from .compare import argmax, argmin, equal, greater, greater_equal, less, less_equal, not_equal, sign
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
    scatter,
    squeeze,
    stack,
    swapaxes,
    transpose,
)

__all__ = [
    "absolute",
    "add",
    "argmax",
    "argmin",
    "astype",
    "broadcast_to",
    "clip",
    "concatenate",
    "cos",
    "divide",
    "equal",
    "exp",
    "expand_dims",
    "getitem",
    "greater",
    "greater_equal",
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
    "relu",
    "reshape",
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
    "var",
    "where",
]


def _constant(make):
    def fn(shape, dtype=float):
        from ..tensor import Tensor

        return Tensor._wrap(make(shape, dtype=dtype))

    return fn


tensor_rules = types.SimpleNamespace(
    exp=exp,
    log=log,
    sqrt=sqrt,
    sin=sin,
    cos=cos,
    tanh=tanh,
    sign=sign,
    abs=absolute,
    where=where,
    sum=sum,
    mean=mean,
    reshape=reshape,
    broadcast_to=broadcast_to,
    expand_dims=expand_dims,
    squeeze=squeeze,
    transpose=transpose,
    swapaxes=swapaxes,
    matmul=matmul,
    zeros=_constant(np.zeros),
    ones=_constant(np.ones),
    maximum=maximum,
    minimum=minimum,
    concatenate=concatenate,
    stack=stack,
    masked=lambda cond, g: where(cond, g, 0),
    scatter=scatter,
    astype=lambda x, dtype: astype(x, dtype=dtype),
    getitem=lambda x, index: getitem(x, index=index),
    name="tapegrad",
)
