"""The ops, by family; each family file is a table of derivatives registered in ``tapegrad.registry``.

``tensor_rules`` is the namespace rules compute with when a replay is itself recorded (``create_graph``):
NumPy's names, implemented by tapegrad's differentiable ops. Importing this package puts it into the
replay's slot for it (:func:`tapegrad.core.replay.set_differentiable_rules`).
"""

import numpy as np

from .._tensor import Tensor
from ..backend import NUMPY, backend_of
from ..core.replay import set_differentiable_rules
from . import decompositions, determinants, fft, matrix_functions  # noqa: F401  (the linear-algebra and FFT ops)
from .activations import elu, erf, erfc, gelu, hardtanh, leaky_relu, log_sigmoid, relu6, selu, silu, softplus
from .arrange import (
    flatten,
    flip,
    fliplr,
    flipud,
    moveaxis,
    pad,
    ravel,
    repeat,
    roll,
    rollaxis,
    rot90,
    tile,
)
from .compare import (
    argmax,
    argmin,
    equal,
    greater,
    greater_equal,
    less,
    less_equal,
    nonzero,
    not_equal,
)
from .complex_numbers import angle, conj, conjugate, imag, real, sign
from .conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d, fold, unfold
from .creation import (
    arange,
    eye,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    randn,
    zeros,
    zeros_like,
)
from .cumulative import cumprod, cumsum, prod
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
from .elementwise import masked as _masked
from .indexing import (
    argpartition,
    argsort,
    index_add,
    index_update,
    partition,
    scatter_along_axis,
    sort,
    take,
    take_along_axis,
)
from .joining import (
    append,
    array_split,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_arrays,
    column_stack,
    dsplit,
    dstack,
    hsplit,
    hstack,
    meshgrid,
    row_stack,
    split,
    vsplit,
    vstack,
)
from .linalg import matmul
from .linear import (
    convolve,
    correlate,
    diag,
    diagflat,
    diagonal,
    dot,
    einsum,
    inner,
    kron,
    matvec,
    outer,
    tensordot,
    trace,
    tril,
    triu,
    vdot,
    vecdot,
    vecmat,
)
from .math import (
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    around,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    cbrt,
    ceil,
    copysign,
    cosh,
    deg2rad,
    degrees,
    exp2,
    expm1,
    fabs,
    fix,
    float_power,
    floor,
    floor_divide,
    fmax,
    fmin,
    fmod,
    heaviside,
    hypot,
    invert,
    isfinite,
    isinf,
    isnan,
    log1p,
    log2,
    log10,
    logaddexp,
    logaddexp2,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    mod,
    nan_to_num,
    positive,
    rad2deg,
    radians,
    reciprocal,
    remainder,
    rint,
    round,
    signbit,
    sinc,
    sinh,
    square,
    tan,
    trunc,
)
from .norm import standardize
from .pool import adaptive_avg_pool1d, adaptive_avg_pool2d, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d
from .quantiles import median, percentile, quantile
from .reductions import log_softmax, logsumexp, max, mean, min, softmax, sum, var
from .selection import (
    compress,
    delete,
    extract,
    insert,
    select,
)
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
from .statistics import (
    all,
    amax,
    amin,
    any,
    average,
    count_nonzero,
    nanmax,
    nanmean,
    nanmin,
    nanprod,
    nanstd,
    nansum,
    nanvar,
    ptp,
    std,
)

__all__ = [
    "absolute",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "add",
    "all",
    "amax",
    "amin",
    "angle",
    "any",
    "append",
    "arange",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "argmax",
    "argmin",
    "argpartition",
    "argsort",
    "around",
    "array_split",
    "astype",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "average",
    "avg_pool1d",
    "avg_pool2d",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "broadcast_arrays",
    "broadcast_to",
    "cbrt",
    "ceil",
    "clip",
    "column_stack",
    "compress",
    "concatenate",
    "conj",
    "conjugate",
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "convolve",
    "copysign",
    "correlate",
    "cos",
    "cosh",
    "count_nonzero",
    "cumprod",
    "cumsum",
    "deg2rad",
    "degrees",
    "delete",
    "diag",
    "diagflat",
    "diagonal",
    "divide",
    "dot",
    "dsplit",
    "dstack",
    "einsum",
    "elu",
    "equal",
    "erf",
    "erfc",
    "exp",
    "exp2",
    "expand_dims",
    "expm1",
    "extract",
    "eye",
    "fabs",
    "fix",
    "flatten",
    "flip",
    "fliplr",
    "flipud",
    "float_power",
    "floor",
    "floor_divide",
    "fmax",
    "fmin",
    "fmod",
    "fold",
    "full",
    "full_like",
    "gelu",
    "getitem",
    "greater",
    "greater_equal",
    "hardtanh",
    "heaviside",
    "hsplit",
    "hstack",
    "hypot",
    "imag",
    "index_add",
    "index_update",
    "inner",
    "insert",
    "invert",
    "isfinite",
    "isinf",
    "isnan",
    "kron",
    "leaky_relu",
    "less",
    "less_equal",
    "linspace",
    "log",
    "log10",
    "log1p",
    "log2",
    "log_sigmoid",
    "log_softmax",
    "logaddexp",
    "logaddexp2",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logsumexp",
    "matmul",
    "matvec",
    "max",
    "max_pool1d",
    "max_pool2d",
    "maximum",
    "mean",
    "median",
    "meshgrid",
    "min",
    "minimum",
    "mod",
    "moveaxis",
    "multiply",
    "nan_to_num",
    "nanmax",
    "nanmean",
    "nanmin",
    "nanprod",
    "nanstd",
    "nansum",
    "nanvar",
    "negative",
    "nonzero",
    "not_equal",
    "ones",
    "ones_like",
    "outer",
    "pad",
    "partition",
    "percentile",
    "positive",
    "power",
    "prod",
    "ptp",
    "quantile",
    "rad2deg",
    "radians",
    "rand",
    "randn",
    "ravel",
    "real",
    "reciprocal",
    "relu",
    "relu6",
    "remainder",
    "repeat",
    "reshape",
    "rint",
    "roll",
    "rollaxis",
    "rot90",
    "round",
    "row_stack",
    "scatter",
    "scatter_along_axis",
    "select",
    "selu",
    "sigmoid",
    "sign",
    "signbit",
    "silu",
    "sin",
    "sinc",
    "sinh",
    "softmax",
    "softplus",
    "sort",
    "split",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "standardize",
    "std",
    "subtract",
    "sum",
    "swapaxes",
    "take",
    "take_along_axis",
    "tan",
    "tanh",
    "tensordot",
    "tile",
    "trace",
    "transpose",
    "tril",
    "triu",
    "trunc",
    "unfold",
    "var",
    "vdot",
    "vecdot",
    "vecmat",
    "vsplit",
    "vstack",
    "where",
    "zeros",
    "zeros_like",
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
            f = _constant(attr)
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
        return _masked(cond, g)

    @staticmethod
    def astype(x, dtype):
        return astype(x, dtype=dtype)

    @staticmethod
    def getitem(x, index):
        return getitem(x, index=index)

    scatter = staticmethod(scatter)


def _constant(name):
    """A constructor on a recorded replay: a constant tensor, made in the library of its array arguments."""

    def fn(*args, **kwargs):
        args = [a._data if isinstance(a, Tensor) else a for a in args]
        library = next((b for b in map(backend_of, args) if b is not None), NUMPY)
        return Tensor._wrap(getattr(library.fx, name)(*args, **kwargs))

    return fn


_CONSTRUCTORS = frozenset(
    ("zeros", "ones", "full", "empty", "eye", "identity", "arange", "linspace", "zeros_like", "ones_like", "full_like")
)
tensor_rules = _TensorRules()
set_differentiable_rules(tensor_rules)
