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

from ..backend.numpy_rules import masked as _numpy_masked

__all__ = ["Kernel", "kernel_of", "masked"]

_KEYWORD_OUT = frozenset((np.maximum, np.minimum, np.fmax, np.fmin))  # positional out is deprecated for these
_SMALL = 4096  # as numpy_rules.masked: below this a select is as cheap as a product


def masked(cond, g, out=None):
    """``numpy_rules.masked`` (a select: g where cond, exactly 0 elsewhere), written into ``out`` when given.

    The product ``g * cond`` is the select wherever g is finite; where it is not, the product is not finite
    either and the select is computed instead, as the eager rule does.
    """
    if out is None or g.size < _SMALL:
        return _numpy_masked(cond, g)
    np.multiply(g, cond, out=out)
    if not np.isfinite(np.add.reduce(out, axis=None)):  # an inf or NaN somewhere (or a sum overflowing): exact
        return np.where(cond, g, 0)
    return out


class Kernel:
    """One node's call: ``fn_name(*args)`` with ``out`` given as ``out_style`` ("pos", "kw" or None)."""

    __slots__ = ("fn", "args", "kwargs", "fresh", "out_style", "elementwise", "method", "form")

    def __init__(self, fn, args, kwargs=None, fresh=False, out_style=None, elementwise=False, method=None, form=None):
        self.fn = fn  # the callable (a global of the program), or None for a method or an expression form
        self.args = args  # tuple of argument objects (Values, Consts, literals)
        self.kwargs = kwargs or {}
        self.fresh = fresh  # the output is always a new array, sharing memory with nothing
        self.out_style = out_style
        self.elementwise = elementwise
        self.method = method  # call args[0].<method>(*args[1:])
        self.form = form  # "getitem": args[0][args[1]]


def kernel_of(node) -> Kernel:
    """The kernel of ``node`` (see the module docstring)."""
    fn, args, params = node.fn, node.args, node.params
    if not node.out.numpy or not all(getattr(a, "numpy", True) for a in args):
        return Kernel(fn, args, params)
    name = node.name
    if isinstance(fn, np.ufunc) and not params:
        out_style = "kw" if fn in _KEYWORD_OUT else "pos"
        return Kernel(fn, args, fresh=True, out_style=out_style, elementwise=fn.signature is None)
    if name == "relu":
        return Kernel(np.maximum, (args[0], 0), fresh=True, out_style="kw", elementwise=True)
    if name == "sum" and _floating(node):
        axis, keepdims = params.get("axis"), params.get("keepdims", False)
        return Kernel(np.add.reduce, (args[0], axis, None), {"keepdims": keepdims}, fresh=True, out_style="kw")
    if name == "masked":
        return Kernel(masked, args, fresh=True, out_style="kw")
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
    return Kernel(fn, args, params)


def _floating(node) -> bool:
    return getattr(node.out.dtype, "kind", None) in "fc"
