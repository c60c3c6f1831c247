"""How each node becomes one backend call in the generated source, and what the memory plan may do with it.

A :class:`Kernel` says, for one node: the call (a callable's name and its arguments, as source), whether its
output is always a new array (``fresh``: the plan may give it a buffer or let it reuse a dying input), whether
it takes an output buffer (``out``: positional or keyword), and whether it is elementwise (its output may be
written over an input of the same shape and dtype). NumPy nodes whose forward is a ufunc (``np.add``,
``np.matmul``...) call it directly; a few ops whose forwards are small functions are written as the NumPy
call they make (``relu`` is ``np.maximum(x, 0)``, ``sum`` is ``np.add.reduce``), the same arithmetic without
the extra Python frame; everything else calls the op's forward as the eager path does. Other libraries
always take the generic path (no buffers, no in-place writes).
"""

from __future__ import annotations

import numpy as np

from ..backend.numpy_rules import masked  # the eager rule's select, which takes a buffer (out=)

__all__ = ["Kernel", "kernel_of", "masked", "gemm_update", "has_blas", "scatter_add"]

_KEYWORD_OUT = frozenset((np.maximum, np.minimum, np.fmax, np.fmin))  # positional out is deprecated for these
# Ops whose forward always returns a new array on NumPy inputs (never a view of an input). Any other op may
# return a view (reshape, indexing, diagonal, real of a real array...), so the plan keeps it with its inputs.
FRESH = frozenset(
    """
    sum mean var max min logsumexp softmax log_softmax sigmoid clip masked where astype astype_constant
    elu erf erfc gelu hardtanh leaky_relu log_sigmoid selu silu softplus relu6 standardize
    conv conv_transpose fold unfold max_pool avg_pool adaptive_avg_pool
    cumsum cumprod prod concatenate stack tensordot trace tril triu pad roll flip_copy
    cholesky det inv pinv slogdet solve solve_triangular vector_norm expm logm
    exp2 expm1 cbrt float_power nan_to_num sinc square reciprocal logaddexp logaddexp2
    """.split()
)


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
    """One node's call: ``fn_name(*args)`` with ``out`` given as ``out_style`` ("pos", "kw" or None).
    ``writes``: the position of an argument the call overwrites with its result (a fused update)."""

    __slots__ = ("fn", "args", "kwargs", "fresh", "out_style", "elementwise", "method", "form", "writes")

    def __init__(
        self, fn, args, kwargs=None, fresh=False, out_style=None, elementwise=False, method=None, form=None, writes=None
    ):
        self.fn = fn  # the callable (a global of the program), or None for a method or an expression form
        self.args = args  # tuple of argument objects (Values, Consts, literals)
        self.kwargs = kwargs or {}
        self.fresh = fresh  # the output is always a new array, sharing memory with nothing
        self.out_style = out_style
        self.elementwise = elementwise
        self.method = method  # call args[0].<method>(*args[1:])
        self.form = form  # "getitem": args[0][args[1]]
        self.writes = writes


def kernel_of(node) -> Kernel:
    """The kernel of ``node`` (see the module docstring)."""
    fn, args, params = node.fn, node.args, node.params
    if not node.out.numpy or not all(getattr(a, "numpy", True) for a in args):
        return Kernel(fn, args, params)
    name = node.name
    if name == "gemm_update":
        return Kernel(gemm_update, args, fresh=True, writes=0)
    if name == "scatter_add":
        return Kernel(scatter_add, args, {"index": params["index"]}, fresh=True, writes=0)
    if isinstance(fn, np.ufunc) and not params:
        out_style = "kw" if fn in _KEYWORD_OUT else "pos"
        return Kernel(fn, args, fresh=True, out_style=out_style, elementwise=fn.signature is None)
    if name == "relu":
        return Kernel(np.maximum, (args[0], 0), fresh=True, out_style="kw", elementwise=True)
    if name == "sum" and _floating(node):
        axis, keepdims = params.get("axis"), params.get("keepdims", False)
        return Kernel(np.add.reduce, (args[0], axis, None), {"keepdims": keepdims}, fresh=True, out_style="kw")
    if name == "masked":
        return Kernel(masked, args, fresh=True, out_style="kw", elementwise=_same_shape(args[1], node.out))
    if name == "transpose":
        axes = params.get("axes")
        return Kernel(None, (args[0],) if axes is None else (args[0], axes), method="transpose")
    if name == "reshape":
        return Kernel(None, (args[0], params["shape"]), method="reshape")
    if name == "getitem":
        return Kernel(None, (args[0], params["index"]), form="getitem")
    if name == "functional_input":
        return Kernel(None, (args[0],), method="view")
    if name == "where":
        return Kernel(np.where, args, fresh=True)
    if name in ("astype", "astype_constant"):
        return Kernel(None, (args[0], params["dtype"]), method="astype", fresh=True)
    return Kernel(fn, args, params, fresh=name in FRESH)


def _same_shape(a, out) -> bool:
    return getattr(a, "shape", None) == out.shape


def _floating(node) -> bool:
    return getattr(node.out.dtype, "kind", None) in "fc"
