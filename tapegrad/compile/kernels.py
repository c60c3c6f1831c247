"""How each step becomes one call in the generated source: a table of lowerings per backend, keyed by the op.

:func:`lower` finds the step's backend from its output's array type, then ``LOWERINGS[backend].get(op)``, a
function of the step that returns its :class:`Kernel`: the call (a callable and its arguments, as source),
whether its output is always a new array (``fresh``: the plan may give it a buffer or let it reuse a dying
input) or always a view of an input (``view``), whether it takes an output buffer (``out_style``: positional
or keyword), and whether it is elementwise (its output may be written over an input of the same shape and
dtype). An op without an entry takes its backend's default, derived from the op's facts
(:class:`~tapegrad.registry.Op`):

- **NumPy**: an op whose forward is a ufunc on NumPy arrays (``Op.numpy``) and that has no parameters calls
  the ufunc itself, with ``out=``; any other op calls its forward as the eager path does, fresh unless the op
  may return a view (``Op.view``). The table writes a few ops as the NumPy call their forward makes (``relu``
  is ``np.maximum(x, 0)``, ``sum`` is ``np.add.reduce``) or as a method or an index (``x.reshape(shape)``,
  ``x[index]``): the same arithmetic without the extra Python frame; and it lowers the compiler's own fused
  steps (``GEMM_UPDATE``, ``SCATTER_ADD``).
- **any other library**: the op's forward for that library (``Backend.forward``), with no buffers and no
  in-place writes.

Lowering happens when the source is generated, from the op, never at trace time: a code generator for
another backend (a fused kernel) is one more table here.
"""

from __future__ import annotations

import math

import numpy as np

import tapegrad.ops as ops

from .._scope import functional_input
from ..backend import backend_for
from ..backend.numpy_rules import masked  # the eager rule's select, which takes a buffer (out=)
from ..ops.reductions import mean_of
from ..registry import Op
from .graph import Const, Value

__all__ = ["Kernel", "lower", "scalar", "SIMD_UFUNCS", "LOWERINGS", "masked", "gemm_update", "has_blas", "scatter_add"]

_KEYWORD_OUT = frozenset((np.maximum, np.minimum, np.fmax, np.fmin))  # positional out is deprecated for these


_BLAS: dict = {}


def has_blas(dtype) -> bool:
    """Whether SciPy's BLAS (an optional dependency, imported on first use) has a GEMM for ``dtype``."""
    if "gemm" not in _BLAS:
        try:
            from scipy.linalg import blas  # noqa: PLC0415  (optional, and slow to import: only when fusing)

            _BLAS["gemm"] = {np.dtype(np.float64): blas.dgemm, np.dtype(np.float32): blas.sgemm}
        except ImportError:
            _BLAS["gemm"] = {}
    return np.dtype(dtype) in _BLAS["gemm"]


def _fortran(m):
    """``(array, trans)`` with ``op(array) == m`` and ``array`` Fortran-ordered, without a copy when possible."""
    if m.flags.f_contiguous:
        return m, 0
    if m.flags.c_contiguous:
        return m.T, 1
    return np.asfortranarray(m), 0


def gemm_update(c, a, b, alpha):
    """``c += alpha * (a @ b)`` in place, in one BLAS call (GEMM with beta = 1): an SGD update fused into the
    product that computes its gradient, which then never exists. ``c`` is C-contiguous."""
    gemm = _BLAS["gemm"][c.dtype]
    # C-ordered c is the Fortran-ordered c.T: c.T += alpha * b.T @ a.T
    fa, ta = _fortran(b.T)
    fb, tb = _fortran(a.T)
    res = gemm(alpha, fa, fb, 1.0, c.T, trans_a=ta, trans_b=tb, overwrite_c=1)
    if res.ctypes.data != c.ctypes.data:  # BLAS worked on a copy: put the result where it belongs
        np.copyto(c, res.T)
    return c


def scatter_add(x, g, index):
    """``x[index] += g`` in place (a basic index: no element twice): ``x + scatter(g, index, x.shape)`` without
    the zeros around ``g``."""
    x[index] += g
    return x


class Kernel:
    """One step's call: ``fn(*args, **kwargs)`` with ``out`` given as ``out_style`` ("pos", "kw" or None: a
    function given ``out`` writes its result there and returns it, since fused kernels may read the value from
    that buffer through the arena, :func:`.fuse.arena_slots`), or
    ``args[0].<method>(*args[1:])``, or (``form="getitem"``) ``args[0][args[1]]``. ``name``: what the source
    calls ``fn``; ``writes``: the position of an argument the call overwrites with its result (a fused update)."""

    __slots__ = (
        "fn",
        "args",
        "kwargs",
        "fresh",
        "view",
        "out_style",
        "elementwise",
        "method",
        "form",
        "writes",
        "name",
    )

    def __init__(
        self,
        fn,
        args,
        kwargs=None,
        fresh=False,
        out_style=None,
        elementwise=False,
        method=None,
        form=None,
        writes=None,
        name=None,
        view=False,
    ):
        self.fn = fn  # the callable (a global of the program), or None for a method or an index
        self.args = args  # tuple of argument objects (Values, Consts, literals)
        self.kwargs = kwargs or {}
        self.fresh = fresh  # the output is always a new array, sharing memory with nothing
        self.view = view  # the output is always a view of args[0]: it holds no memory of its own
        self.out_style = out_style
        self.elementwise = elementwise
        self.method = method
        self.form = form
        self.writes = writes
        self.name = name  # the callable's name in the source


# The compiler's own steps, made by its rewrites (passes.py): ops of no tape, lowered by the tables below.
GEMM_UPDATE = Op("gemm_update", gemm_update, doc="c += alpha * (a @ b), in place: an SGD update fused into its product")
SCATTER_ADD = Op("scatter_add", scatter_add, doc="x[index] += g, in place: a slice's gradient added into the whole's")


def output_of(outputs, index):
    """Output ``index`` of a step of an op with several outputs (the tuple its forward returned)."""
    return outputs[index]


OUTPUT = Op("output", output_of, view=True, doc="one output of an op with several (Op.outputs): a view of the step's")


def lower(step) -> Kernel:
    """The kernel of ``step``, from its backend's table or that backend's default (see the module docstring)."""
    if step.out.kind is not np.ndarray or not _numpy_args(step.args):
        backend = backend_for(step.out.kind)
        return Kernel(backend.forward(step.op), step.args, step.params, name=step.op.name)
    rule = LOWERINGS["numpy"].get(step.op)
    return rule(step) if rule is not None else _numpy_default(step)


def _numpy_args(args) -> bool:
    """Whether no argument is another library's value (the arguments of most steps: values, read directly)."""
    for a in args:
        if a.__class__ is Value:
            if a.kind is not np.ndarray:
                return False
        elif not getattr(a, "numpy", True):
            return False
    return True


def lowered(kernels, step) -> Kernel:
    """:func:`lower` of ``step``, kept in ``kernels`` (``id(step) -> Kernel``): each step is lowered once."""
    k = kernels.get(id(step))
    if k is None:
        k = kernels[id(step)] = lower(step)
    return k


def _numpy_default(step) -> Kernel:
    op = step.op
    ufunc = op.numpy
    if isinstance(ufunc, np.ufunc) and not step.params:
        style = "kw" if ufunc in _KEYWORD_OUT else "pos"
        return Kernel(
            ufunc, step.args, fresh=True, out_style=style, elementwise=ufunc.signature is None, name=ufunc.__name__
        )
    return Kernel(op.forward, step.args, step.params, fresh=op.fresh, name=op.name)


def _relu(step):
    return Kernel(np.maximum, (step.args[0], 0), fresh=True, out_style="kw", elementwise=True, name="maximum")


def _sum(step):
    if getattr(step.out.dtype, "kind", None) not in "fc":
        return _numpy_default(step)
    axis, keepdims = step.params.get("axis"), step.params.get("keepdims", False)
    args = (step.args[0], axis, None)
    return Kernel(np.add.reduce, args, {"keepdims": keepdims}, fresh=True, out_style="kw", name="add_reduce")


def _mean(step):
    x = step.args[0]
    if not (isinstance(x, Value) and x.numpy and x.dtype in (np.float32, np.float64, np.complex64, np.complex128)):
        return _numpy_default(step)  # float16 sums in float32, integers in float64: NumPy's own mean
    axis, keepdims = step.params.get("axis"), step.params.get("keepdims", False)
    count = math.prod(x.shape[a] for a in (range(len(x.shape)) if axis is None else axis))
    if not count:
        return _numpy_default(step)  # the mean of nothing: NumPy's NaN and its warning
    return Kernel(mean_of, (x, axis, keepdims, count), fresh=True, name="mean")


def _masked(step):
    same = getattr(step.args[1], "shape", None) == step.out.shape
    return Kernel(masked, step.args, fresh=True, out_style="kw", elementwise=same, name="masked")


def _transpose(step):
    axes = step.params.get("axes")
    return Kernel(None, (step.args[0],) if axes is None else (step.args[0], axes), method="transpose", view=True)


def _cast(step):
    return Kernel(None, (step.args[0], step.params["dtype"]), method="astype", fresh=True)


LOWERINGS = {
    "numpy": {
        ops.relu.op: _relu,
        ops.sum.op: _sum,
        ops.mean.op: _mean,
        ops.elementwise.masked.op: _masked,
        ops.transpose.op: _transpose,
        ops.reshape.op: lambda step: Kernel(None, (step.args[0], step.params["shape"]), method="reshape"),
        ops.getitem.op: lambda step: Kernel(None, (step.args[0], step.params["index"]), form="getitem"),
        functional_input.op: lambda step: Kernel(None, (step.args[0],), method="view", view=True),
        ops.astype.op: _cast,
        GEMM_UPDATE: lambda step: Kernel(gemm_update, step.args, fresh=True, writes=0, name="gemm_update"),
        OUTPUT: lambda step: Kernel(None, (step.args[0], step.params["index"]), form="getitem", view=True),
        SCATTER_ADD: lambda step: Kernel(
            scatter_add, step.args, {"index": step.params["index"]}, fresh=True, writes=0, name="scatter_add"
        ),
    },
}


# -- fused kernels: each elementwise step as one scalar expression of a generated loop (:mod:`.fuse`) -----------
# the ufuncs numba runs on scalars as NumPy does (the NaN of maximum, the sign of a zero), by object
_NUMBA_UFUNCS = frozenset(
    (np.add, np.subtract, np.multiply, np.true_divide, np.negative, np.positive, np.absolute, np.square, np.sqrt,
     np.exp, np.expm1, np.log, np.log1p, np.sin, np.cos, np.tan, np.tanh, np.sinh, np.cosh, np.arctan, np.arcsin,
     np.arccos, np.arctanh, np.arcsinh, np.maximum, np.minimum, np.greater, np.greater_equal, np.less,
     np.less_equal, np.equal, np.not_equal, np.logical_and, np.logical_or, np.logical_not, np.sign, np.reciprocal,
     np.power, np.floor, np.ceil, np.copysign, np.hypot, np.arctan2, np.exp2, np.log2, np.log10)
)  # fmt: skip
# NumPy's own SIMD loops, faster on large arrays than numba's scalar calls of libm (measured: 5 tanh of 10^6
# float64 elements cost a fused loop 3x NumPy's)
SIMD_UFUNCS = frozenset(
    (np.exp, np.expm1, np.log, np.log1p, np.sin, np.cos, np.tan, np.tanh, np.sinh, np.cosh, np.arctan, np.arcsinh,
     np.exp2, np.log2, np.log10)
)  # fmt: skip
_INFIX = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/", np.less: "<", np.greater: ">"}
_NUMBA_KINDS = frozenset("biuf")  # complex values stay NumPy calls


class Scalar:
    """One elementwise step inside a fused loop: ``expr(names)`` is its value from its arguments' scalar
    expressions (in the order of ``args``), computed in ``dtypes`` (the loop's, one per argument: each argument
    is cast to it first, as the ufunc's loop does). ``reduce`` ("sum" or "mean"): the step is instead the
    reduction over every element of ``args[0]`` that ends the run, the loop's accumulator."""

    __slots__ = ("args", "dtypes", "expr", "reduce")

    def __init__(self, args, dtypes, expr, reduce=None):
        self.args = args
        self.dtypes = dtypes
        self.expr = expr
        self.reduce = reduce


def _dtype_of(a):
    if isinstance(a, Value):
        return a.dtype
    if isinstance(a, Const):
        return getattr(a.value, "dtype", type(a.value))
    return type(a)


def _infix_expr(infix):
    return lambda xs: f"({xs[0]} {infix} {xs[1]})"


def _call_expr(name):
    return lambda xs: f"np.{name}({', '.join(xs)})"


# each ufunc's expression, made once (not a closure per step)
_EXPRS = {u: (_infix_expr(_INFIX[u]) if u in _INFIX else _call_expr(u.__name__)) for u in _NUMBA_UFUNCS}
_LOOPS: dict = {}  # (ufunc, argument dtypes) -> ufunc.resolve_dtypes of them, or None where it has no loop


def _loops(ufunc, dtypes):
    key = (ufunc, dtypes, tuple([d.__class__ for d in dtypes]))  # a dtype equals its type: np.float64, float
    try:
        return _LOOPS[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable dtype: resolved every time
        key = None
    try:
        loops = ufunc.resolve_dtypes(dtypes + (None,))
    except (TypeError, ValueError):
        loops = None
    if key is not None:
        _LOOPS[key] = loops
    return loops


def _ufunc_scalar(step, kernel):
    ufunc = kernel.fn
    if not (isinstance(ufunc, np.ufunc) and ufunc in _EXPRS and kernel.elementwise and not kernel.kwargs):
        return None
    loops = _loops(ufunc, tuple([_dtype_of(a) for a in kernel.args]))
    if loops is None or loops[-1] != step.out.dtype:
        return None
    return Scalar(kernel.args, loops[:-1], _EXPRS[ufunc])


def _masked_scalar(step, kernel):
    if not kernel.elementwise:
        return None
    return Scalar(kernel.args, (np.dtype(bool), step.out.dtype), lambda xs: f"{xs[1]} if {xs[0]} else 0")


def scalar(step, kernel):
    """The step as a :class:`Scalar` of a fused loop (``LOWERINGS["numba"]``, else the ufunc its NumPy kernel
    calls), or None where it cannot be one."""
    if getattr(step.out.dtype, "kind", None) not in _NUMBA_KINDS or step.random or kernel.writes is not None:
        return None
    rule = LOWERINGS["numba"].get(step.op)
    return rule(step, kernel) if rule is not None else _ufunc_scalar(step, kernel)


def _reduction_scalar(kind):
    """A ``sum`` or ``mean`` over every axis of a float array, summed in its own dtype (NumPy's too)."""

    def rule(step, kernel):
        x = step.args[0]
        same = getattr(x, "dtype", None) == step.out.dtype and step.out.dtype in (np.float32, np.float64)
        if not (isinstance(x, Value) and x.numpy and x.shape and 0 not in x.shape and same):  # mean of none warns
            return None
        axis, ndim = step.params.get("axis"), len(x.shape)
        if axis is not None and sorted(a % ndim for a in np.atleast_1d(axis).tolist()) != list(range(ndim)):
            return None
        return Scalar((x,), (x.dtype,), None, reduce=kind)

    return rule


LOWERINGS["numba"] = {
    ops.elementwise.masked.op: _masked_scalar,
    ops.sum.op: _reduction_scalar("sum"),
    ops.mean.op: _reduction_scalar("mean"),
}
