"""tapegrad's ops under NumPy's signatures: what ``np.sum(t, axis=0, dtype=...)`` runs once NumPy hands it over.

NumPy passes a function's arguments on as the user wrote them, positionally or by name, so each function here
takes NumPy's parameters in NumPy's order. What a tape cannot record raises a ``TypeError`` naming the function
and the parameter: ``out=`` (a write into an existing array), ``where=`` masks of reductions, ``order=`` other
than C. ``dtype=`` casts the input first (differentiably between floating dtypes), as NumPy computes in it.

>>> import numpy as np, tapegrad as tg
>>> x = tg.Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
>>> tg.grad(lambda x: np.sum(x, axis=0, dtype=np.float64).sum())(x)
array([[1., 1.],
       [1., 1.]])
"""

from __future__ import annotations

import numpy as np

import tapegrad.ops as ops
from tapegrad.ops.linear import einsum_subscripts

from .._tensor import Tensor
from ..tensor_methods import reshaped

NO = np._NoValue  # NumPy's own marker of a parameter not given


class UnsupportedArgument(TypeError):
    """A NumPy parameter tapegrad cannot honour on tensors; NumPy's dispatch names the arguments' shapes in it."""

    def __init__(self, name, parameter, why, instead, where="tensors"):
        super().__init__(f"np.{name}(..., {parameter}) on {where}: {why}. {instead}")
        self.parts = (name, parameter, why, instead)

    def on(self, where: str) -> UnsupportedArgument:
        """The same error, naming what it was called on (``a tensor of shape (3,)``)."""
        return UnsupportedArgument(*self.parts, where=where)


def unsupported(name: str, parameter: str, why: str, instead: str) -> TypeError:
    """The error for a NumPy parameter tapegrad cannot honour on tensors."""
    return UnsupportedArgument(name, parameter, why, instead)


def check_out(name: str, out) -> None:
    if out is not None:
        raise unsupported(
            name,
            "out=...",
            "it writes the result into an existing array, which a tape cannot record",
            f"Write y = np.{name}(...) and use y",
        )


def check_where(name: str, where) -> None:
    if where is not NO and where is not True:
        raise unsupported(
            name,
            "where=...",
            "tapegrad has no rule for masked reductions",
            "Mask the input first: np.where(mask, x, 0)",
        )


def check_order(name: str, order, allowed=("C", "K", "A", None)) -> None:
    if order not in allowed:
        raise unsupported(
            name, f"order={order!r}", "tensors are laid out in C order only", "Transpose explicitly instead"
        )


def cast(a, dtype):
    """``a`` in ``dtype`` (differentiable between floating dtypes), or ``a`` itself when dtype is None."""
    if dtype is None:
        return a
    dtype = np.dtype(dtype)
    if isinstance(a, Tensor):
        return a if a.dtype == dtype else ops.astype(a, dtype=dtype)
    return np.asarray(a, dtype=dtype)


def _keep(keepdims):
    return False if keepdims is NO else bool(keepdims)


def _named(f, name, op):
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"NumPy's ``np.{name}`` on tensors: tapegrad's ``{op.__name__}`` under NumPy's signature."
    return f


def sum_like(name, op, combine):
    """sum, prod, nansum, nanprod: ``(a, axis, dtype, out, keepdims, initial, where)``."""

    def f(a, axis=None, dtype=None, out=None, keepdims=NO, initial=NO, where=NO):
        check_out(name, out)
        check_where(name, where)
        r = op(cast(a, dtype), axis=axis, keepdims=_keep(keepdims))
        return r if initial is NO else combine(r, initial)

    return _named(f, name, op)


def max_like(name, op, combine):
    """max, min, amax, amin, nanmax, nanmin: ``(a, axis, out, keepdims, initial, where)``."""

    def f(a, axis=None, out=None, keepdims=NO, initial=NO, where=NO):
        check_out(name, out)
        check_where(name, where)
        r = op(a, axis=axis, keepdims=_keep(keepdims))
        return r if initial is NO else combine(r, initial)

    return _named(f, name, op)


def mean_like(name, op):
    """mean, nanmean: ``(a, axis, dtype, out, keepdims, *, where)``."""

    def f(a, axis=None, dtype=None, out=None, keepdims=NO, *, where=NO):
        check_out(name, out)
        check_where(name, where)
        return op(cast(a, dtype), axis=axis, keepdims=_keep(keepdims))

    return _named(f, name, op)


def var_like(name, op):
    """var, std, nanvar, nanstd: ``(a, axis, dtype, out, ddof, keepdims, *, where, mean, correction)``."""

    def f(a, axis=None, dtype=None, out=None, ddof=0, keepdims=NO, *, where=NO, mean=NO, correction=NO):
        check_out(name, out)
        check_where(name, where)
        if mean is not NO:
            raise unsupported(name, "mean=...", "a precomputed mean is not differentiated", "Leave mean= out")
        if correction is not NO:
            if ddof != 0:
                raise TypeError(f"np.{name}: ddof and correction are the same parameter; pass one of them")
            ddof = correction
        return op(cast(a, dtype), axis=axis, ddof=ddof, keepdims=_keep(keepdims))

    return _named(f, name, op)


def logical_reduction(name, op):
    """all, any: ``(a, axis, out, keepdims, *, where)``."""

    def f(a, axis=None, out=None, keepdims=NO, *, where=NO):
        check_out(name, out)
        check_where(name, where)
        return op(a, axis=axis, keepdims=_keep(keepdims))

    return _named(f, name, op)


def arg_reduction(name, op):
    """argmax, argmin: ``(a, axis, out, *, keepdims)``."""

    def f(a, axis=None, out=None, *, keepdims=NO):
        check_out(name, out)
        return op(a, axis=axis, keepdims=_keep(keepdims))

    return _named(f, name, op)


def scan(name, op):
    """cumsum, cumprod: ``(a, axis, dtype, out)``."""

    def f(a, axis=None, dtype=None, out=None):
        check_out(name, out)
        return op(a, axis=axis, dtype=dtype)

    return _named(f, name, op)


def ptp(a, axis=None, out=None, keepdims=NO):
    """NumPy's ``np.ptp`` on tensors: the range, max - min (tapegrad's ``ptp``)."""
    check_out("ptp", out)
    return ops.ptp(a, axis=axis, keepdims=_keep(keepdims))


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """NumPy's ``np.median`` on tensors (tapegrad's ``median``; ``overwrite_input`` is ignored: nothing is
    overwritten)."""
    check_out("median", out)
    return ops.median(a, axis=axis, keepdims=keepdims)


def _quantile_like(name, op):
    def f(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None):
        check_out(name, out)
        if weights is not None:
            raise unsupported(name, "weights=...", "tapegrad has no rule for weighted quantiles", "Leave weights out")
        return op(a, q, axis=axis, keepdims=keepdims, method=method)

    return _named(f, name, op)


percentile = _quantile_like("percentile", ops.percentile)
quantile = _quantile_like("quantile", ops.quantile)


def dot(a, b, out=None):
    """NumPy's ``np.dot`` on tensors (tapegrad's ``dot``)."""
    check_out("dot", out)
    return ops.dot(a, b)


def outer(a, b, out=None):
    """NumPy's ``np.outer`` on tensors (tapegrad's ``outer``)."""
    check_out("outer", out)
    return ops.outer(a, b)


def round(a, decimals=0, out=None):
    """NumPy's ``np.round`` on tensors (tapegrad's ``round``: no gradient)."""
    check_out("round", out)
    return ops.round(a, decimals)


def fix(x, out=None):
    """NumPy's ``np.fix`` on tensors (tapegrad's ``fix``: no gradient)."""
    check_out("fix", out)
    return ops.fix(x)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """NumPy's ``np.trace`` on tensors (tapegrad's ``trace``)."""
    check_out("trace", out)
    return ops.trace(cast(a, dtype), offset=offset, axis1=axis1, axis2=axis2)


def take(a, indices, axis=None, out=None, mode="raise"):
    """NumPy's ``np.take`` on tensors (tapegrad's ``take``)."""
    check_out("take", out)
    return ops.take(a, _plain(indices), axis=axis, mode=mode)


def compress(condition, a, axis=None, out=None):
    """NumPy's ``np.compress`` on tensors (tapegrad's ``compress``)."""
    check_out("compress", out)
    return ops.compress(_plain(condition), a, axis=axis)


def clip(a, a_min=NO, a_max=NO, out=None, *, min=NO, max=NO, **kwargs):
    """NumPy's ``np.clip`` on tensors (tapegrad's ``clip``); ``min``/``max`` are the array API's names."""
    check_out("clip", out)
    if kwargs:
        raise unsupported(
            "clip", f"{', '.join(kwargs)}=...", "tapegrad's clip takes no ufunc options", "Leave them out"
        )
    lo = min if a_min is NO else a_min
    hi = max if a_max is NO else a_max
    return ops.clip(a, None if lo is NO else lo, None if hi is NO else hi)


def einsum(*operands, out=None, optimize=False, **kwargs):
    """NumPy's ``np.einsum`` on tensors (tapegrad's ``einsum``), subscripts as a string or as sublists."""
    check_out("einsum", out)
    dtype = kwargs.pop("dtype", None)
    if kwargs.pop("casting", "safe") not in ("safe", "same_kind", "unsafe", "equiv", "no"):
        raise TypeError("np.einsum: casting must be one of NumPy's casting rules")
    check_order("einsum", kwargs.pop("order", "K"))
    if kwargs:
        raise TypeError(f"np.einsum() got unexpected keyword arguments {sorted(kwargs)}")
    if not operands:
        raise ValueError("np.einsum: needs the subscripts and at least one operand")
    if isinstance(operands[0], str):
        subscripts, *arrays = operands
    else:  # the sublist form: einsum(a, [0, 1], b, [1, 2], [0, 2])
        subscripts, arrays = einsum_subscripts(operands)
    return ops.einsum(subscripts, *[cast(a, dtype) for a in arrays], optimize=optimize)


def _joined(name, op, *, axis_first=True):
    def f(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
        check_out(name, out)
        arrays = [cast(a, dtype) for a in arrays]
        if axis is None:  # NumPy flattens every input first
            arrays, axis = [ops.ravel(a) for a in arrays], 0
        return op(arrays, axis=axis)

    return _named(f, name, op)


concatenate = _joined("concatenate", ops.concatenate)
concat = _joined("concat", ops.concatenate)


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """NumPy's ``np.stack`` on tensors (tapegrad's ``stack``)."""
    check_out("stack", out)
    return ops.stack([cast(a, dtype) for a in arrays], axis=axis)


def _stacking(name, op):
    def f(tup, *, dtype=None, casting="same_kind"):
        return op([cast(a, dtype) for a in tup])

    return _named(f, name, op)


hstack = _stacking("hstack", ops.hstack)
vstack = _stacking("vstack", ops.vstack)


def reshape(a, /, shape=None, order="C", *, newshape=None, copy=None):
    """NumPy's ``np.reshape`` on tensors (tapegrad's ``reshape``; ``order="F"`` as transposes around it)."""
    check_order("reshape", order, ("C", "A", "F"))
    if shape is None:
        shape = newshape
    if shape is None:
        raise TypeError("np.reshape() missing the new shape")
    return reshaped(a, shape, order)


def ravel(a, order="C"):
    """NumPy's ``np.ravel`` on tensors (tapegrad's ``ravel``; ``order="F"``: of the transpose)."""
    check_order("ravel", order, ("C", "K", "A", "F", None))
    return reshaped(a, -1, order) if order == "F" else ops.ravel(a)


def _sorting(name, op):
    def f(a, axis=-1, kind=None, order=None, *, stable=None):
        if order is not None:
            raise unsupported(name, "order=...", "tensors have no structured fields", "Leave order out")
        return op(a, axis=axis, kind="stable" if stable else kind)

    return _named(f, name, op)


sort = _sorting("sort", ops.sort)
argsort = _sorting("argsort", ops.argsort)


def _partitioning(name, op):
    def f(a, kth, axis=-1, kind="introselect", order=None):
        if order is not None:
            raise unsupported(name, "order=...", "tensors have no structured fields", "Leave order out")
        return op(a, kth, axis=axis)

    return _named(f, name, op)


partition = _partitioning("partition", ops.partition)
argpartition = _partitioning("argpartition", ops.argpartition)


def broadcast_to(array, shape, subok=False):
    """NumPy's ``np.broadcast_to`` on tensors (tapegrad's ``broadcast_to``)."""
    return ops.broadcast_to(array, shape)


def broadcast_arrays(*args, subok=False):
    """NumPy's ``np.broadcast_arrays`` on tensors (tapegrad's ``broadcast_arrays``)."""
    return ops.broadcast_arrays(*args)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """NumPy's ``np.meshgrid`` on tensors (tapegrad's ``meshgrid``)."""
    return ops.meshgrid(*xi, indexing=indexing, sparse=sparse)


def where(condition, x=NO, y=NO, /):
    """NumPy's ``np.where`` on tensors: a select (tapegrad's ``where``), or with the condition alone, ``nonzero``."""
    if x is NO and y is NO:
        return ops.nonzero(condition)
    if x is NO or y is NO:
        raise ValueError("np.where: either both x and y or neither")
    return ops.where(condition, x, y)


def astype(x, dtype, /, *, copy=True, device=None):
    """NumPy's ``np.astype`` on tensors (tapegrad's ``astype``)."""
    return ops.astype(x, dtype=dtype)


def _like(name, op):
    def f(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
        check_order(name, order)
        if shape is not None:
            raise unsupported(
                name, "shape=...", "the result keeps a's shape", f"Reshape a first, or use np.{name[:-5]}"
            )
        return op(a, dtype)

    return _named(f, name, op)


zeros_like = _like("zeros_like", ops.zeros_like)
ones_like = _like("ones_like", ops.ones_like)
empty_like = _like("empty_like", ops.zeros_like)  # any values will do: zeros


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """NumPy's ``np.full_like`` on tensors (tapegrad's ``full_like``: a tensor fill value gets the gradient)."""
    check_order("full_like", order)
    if shape is not None:
        raise unsupported("full_like", "shape=...", "the result keeps a's shape", "Reshape a first, or use np.full")
    return ops.full_like(a, fill_value, dtype)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """NumPy's ``np.linspace`` on tensors (tapegrad's ``linspace``: ``start`` and ``stop`` get gradients)."""
    return ops.linspace(start, stop, num, endpoint, retstep, dtype, axis)


def _plain(a):
    """Indices and masks: the data of a tensor (nothing is differentiated through them)."""
    return a._data if isinstance(a, Tensor) else a
