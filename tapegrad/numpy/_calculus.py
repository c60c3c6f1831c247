"""NumPy's numerical functions that tapegrad composes from its ops: differences, integrals, interpolation,
covariance, spaced sequences, scans that skip NaN, and the ufuncs with two outputs.

Each is written with tapegrad's ops only, so every derivative order works and each takes tensors, arrays and
numbers alike. Where a part of the result is piecewise constant in the input (``unwrap``'s added multiples of
the period, ``frexp``'s exponent, ``nextafter``'s step), that part is computed from the values and added as a
constant: its derivative is zero wherever it exists.

>>> import numpy as np, tapegrad as tg
>>> tg.grad(lambda y: np.trapezoid(y, dx=0.5))(np.ones(4))
array([0.25, 0.5 , 0.5 , 0.25])
"""

from __future__ import annotations

import math

import numpy as np

import tapegrad.ops as ops

from .._tensor import Tensor
from ._signatures import NO, cast, check_out, unsupported


def data(a):
    """The values of ``a`` (a tensor's array, without the escape warning: nothing is differentiated through it)."""
    return a._data if isinstance(a, Tensor) else np.asarray(a)


def shape(a) -> tuple:
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def requires_grad(a) -> bool:
    return isinstance(a, Tensor) and (a.requires_grad or a._node is not None)


def constant_only(name: str, what: str, value) -> None:
    """Refuse a tensor that needs a gradient where tapegrad only reads the values."""
    if requires_grad(value):
        raise unsupported(
            name,
            f"{what}=<a tensor being differentiated>",
            f"tapegrad reads {what} as constant values only",
            f"Pass {what}.detach() (its gradient is then not computed), or write the computation with tapegrad ops",
        )


def _along(ndim, axis, index):
    out = [slice(None)] * ndim
    out[axis] = index
    return tuple(out)


def _axis(a, axis, name):
    ndim = len(shape(a))
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(f"np.{name}: axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim


def diff(a, n=1, axis=-1, prepend=NO, append=NO):
    """NumPy's ``np.diff`` on tensors: ``n``-th differences along ``axis``, composed of slices."""
    if n < 0:
        raise ValueError(f"np.diff: order n={n} must be non-negative")
    if n == 0:
        return a
    ndim = len(shape(a))
    if ndim == 0:
        raise ValueError("np.diff requires input that is at least one dimensional")
    axis = _axis(a, axis, "diff")
    parts = []
    for value, where in ((prepend, 0), (append, 1)):
        if value is NO:
            continue
        if len(shape(value)) == 0:
            target = list(shape(a))
            target[axis] = 1
            value = ops.broadcast_to(value, tuple(target))
        parts.append((where, value))
    if parts:
        a = ops.concatenate([v for w, v in parts if w == 0] + [a] + [v for w, v in parts if w == 1], axis=axis)
    for _ in range(n):
        a = ops.subtract(
            ops.getitem(a, index=_along(ndim, axis, slice(1, None))),
            ops.getitem(a, index=_along(ndim, axis, slice(None, -1))),
        )
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    """NumPy's ``np.ediff1d`` on tensors: differences of the flattened input, with optional ends."""
    d = diff(ops.ravel(ary))
    parts = [ops.ravel(to_begin)] if to_begin is not None else []
    parts.append(d)
    if to_end is not None:
        parts.append(ops.ravel(to_end))
    return ops.concatenate(parts) if len(parts) > 1 else d


def _edges(f, axis, ndim, dx, edge_order):
    """NumPy's second-order accurate differences on a (possibly uneven) grid, one axis."""
    at = lambda i: ops.getitem(f, index=_along(ndim, axis, i))
    n = shape(f)[axis]
    if n < edge_order + 1:
        raise ValueError(
            f"np.gradient: shape {shape(f)} has {n} points along axis {axis}; edge_order={edge_order} needs "
            f"{edge_order + 1}"
        )
    uniform = np.ndim(dx) == 0
    h = np.full(n - 1, float(dx)) if uniform else np.diff(np.asarray(dx, dtype=float))
    view = (1,) * axis + (-1,) + (1,) * (ndim - axis - 1)
    if uniform:
        inner = ops.divide(ops.subtract(at(slice(2, None)), at(slice(None, -2))), 2.0 * float(dx))
    else:
        h1, h2 = h[:-1], h[1:]
        a, b, c = -h2 / (h1 * (h1 + h2)), (h2 - h1) / (h1 * h2), h1 / (h2 * (h1 + h2))
        inner = ops.add(
            ops.add(
                ops.multiply(a.reshape(view), at(slice(None, -2))), ops.multiply(b.reshape(view), at(slice(1, -1)))
            ),
            ops.multiply(c.reshape(view), at(slice(2, None))),
        )
    if edge_order == 1:
        first = ops.divide(ops.subtract(at(slice(1, 2)), at(slice(0, 1))), h[0])
        last = ops.divide(ops.subtract(at(slice(-1, None)), at(slice(-2, -1))), h[-1])
    else:
        h1, h2 = h[0], h[1]
        a, b, c = -(2 * h1 + h2) / (h1 * (h1 + h2)), (h1 + h2) / (h1 * h2), -h1 / (h2 * (h1 + h2))
        first = ops.add(
            ops.add(ops.multiply(a, at(slice(0, 1))), ops.multiply(b, at(slice(1, 2)))),
            ops.multiply(c, at(slice(2, 3))),
        )
        h1, h2 = h[-2], h[-1]
        a, b, c = h2 / (h1 * (h1 + h2)), -(h2 + h1) / (h1 * h2), (2 * h2 + h1) / (h2 * (h1 + h2))
        last = ops.add(
            ops.add(ops.multiply(a, at(slice(-3, -2))), ops.multiply(b, at(slice(-2, -1)))),
            ops.multiply(c, at(slice(-1, None))),
        )
    return ops.concatenate([first, inner, last], axis=axis)


def gradient(f, *varargs, axis=None, edge_order=1):
    """NumPy's ``np.gradient`` on tensors: central differences inside, one-sided at the edges (the spacings are
    constants)."""
    ndim = len(shape(f))
    axes = tuple(range(ndim)) if axis is None else tuple(a % ndim for a in np.atleast_1d(axis).tolist())
    for v in varargs:
        constant_only("gradient", "varargs", v)
    spacing = [data(v) for v in varargs]
    if not spacing:
        spacing = [1.0] * len(axes)
    elif len(spacing) == 1 and np.ndim(spacing[0]) == 0:
        spacing = spacing * len(axes)
    elif len(spacing) != len(axes):
        raise TypeError(f"np.gradient: {len(spacing)} spacings for {len(axes)} axes; give one per axis")
    if edge_order not in (1, 2):
        raise ValueError("np.gradient: edge_order must be 1 or 2")
    out = tuple(_edges(f, a, ndim, dx, edge_order) for a, dx in zip(axes, spacing))
    return out[0] if len(out) == 1 else out


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """NumPy's ``np.trapezoid`` on tensors: the trapezoidal rule along ``axis``."""
    ndim = len(shape(y))
    axis = _axis(y, axis, "trapezoid")
    if x is None:
        d = dx
    elif len(shape(x)) == 1:
        d = ops.reshape(diff(x), (1,) * axis + (-1,) + (1,) * (ndim - axis - 1))
    else:
        d = diff(x, axis=axis)
    at = lambda i: ops.getitem(y, index=_along(ndim, axis, i))
    return ops.sum(ops.multiply(d, ops.add(at(slice(1, None)), at(slice(None, -1)))), axis=axis) / 2.0


def interp(x, xp, fp, left=None, right=None, period=None):
    """NumPy's ``np.interp`` on tensors: piecewise-linear interpolation, differentiable in ``x``, ``xp`` and
    ``fp`` (the interval each point falls in is read from the values)."""
    if len(shape(xp)) != 1 or len(shape(fp)) != 1 or shape(xp) != shape(fp):
        raise ValueError(f"np.interp: xp and fp must be 1-D of the same length, got {shape(xp)} and {shape(fp)}")
    if period is not None:
        if period == 0:
            raise ValueError("np.interp: period must be a non-zero value")
        period = abs(period)
        x, xp = ops.remainder(x, period), ops.remainder(xp, period)
        order = np.argsort(data(xp), kind="stable")
        xp, fp = ops.take(xp, order), ops.take(fp, order)
        xp = ops.concatenate(
            [
                ops.subtract(ops.getitem(xp, index=slice(-1, None)), period),
                xp,
                ops.add(ops.getitem(xp, index=slice(0, 1)), period),
            ]
        )
        fp = ops.concatenate([ops.getitem(fp, index=slice(-1, None)), fp, ops.getitem(fp, index=slice(0, 1))])
        left = right = None
    xd, xpd = data(x), data(xp)
    n = len(xpd)
    if n == 0:
        raise ValueError("np.interp: array of sample points is empty")
    if n == 1:
        return ops.add(ops.zeros_like(x, dtype=np.result_type(data(fp).dtype, float)), ops.getitem(fp, index=0))
    i = np.clip(np.searchsorted(xpd, xd, side="right") - 1, 0, n - 2)
    x0, x1, f0, f1 = ops.take(xp, i), ops.take(xp, i + 1), ops.take(fp, i), ops.take(fp, i + 1)
    out = ops.add(f0, ops.multiply(ops.divide(ops.subtract(x, x0), ops.subtract(x1, x0)), ops.subtract(f1, f0)))
    if period is None:
        low = ops.getitem(fp, index=0) if left is None else left
        high = ops.getitem(fp, index=-1) if right is None else right
        out = ops.where(xd < xpd[0], low, ops.where(xd > xpd[-1], high, out))
    return out


def unwrap(p, discont=None, axis=-1, *, period=2 * math.pi):
    """NumPy's ``np.unwrap`` on tensors: ``p`` plus the multiples of ``period`` NumPy adds (a constant)."""
    d = data(p)
    return ops.add(p, np.unwrap(d, discont=discont, axis=axis, period=period) - d)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """NumPy's ``np.cov`` on tensors (NumPy's algorithm with tapegrad's ops; the weights are constants)."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("np.cov: ddof must be an integer")
    for name, w in (("fweights", fweights), ("aweights", aweights)):
        constant_only("cov", name, w)
    X = ops.atleast_2d(cast(m, dtype if dtype is not None else np.result_type(data(m).dtype, np.float64)))
    if not rowvar and shape(X)[0] != 1:
        X = ops.transpose(X)
    if y is not None:
        Y = ops.atleast_2d(cast(y, dtype))
        if not rowvar and shape(Y)[0] != 1:
            Y = ops.transpose(Y)
        X = ops.concatenate([X, Y], axis=0)
    ddof = (0 if bias else 1) if ddof is None else ddof
    w = None
    if fweights is not None:
        w = np.asarray(data(fweights), dtype=float)
    if aweights is not None:
        a = np.asarray(data(aweights), dtype=float)
        w = a if w is None else w * a
    n = shape(X)[1]
    if w is None:
        fact = n - ddof
        avg = ops.mean(X, axis=1)
    else:
        w_sum = w.sum()
        avg = ops.average(X, axis=1, weights=w)
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * (w * np.asarray(data(aweights), dtype=float)).sum() / w_sum
    X = ops.subtract(X, ops.expand_dims(avg, axis=1))
    XT = ops.transpose(X if w is None else ops.multiply(X, w))
    c = ops.divide(ops.matmul(X, ops.conj(XT)), float(max(fact, 0)))
    return ops.squeeze(c)


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """NumPy's ``np.corrcoef`` on tensors: the covariance scaled by the standard deviations, clipped to [-1, 1]."""
    c = cov(x, y, rowvar, dtype=dtype)
    if len(shape(c)) == 0:
        return ops.divide(c, c)
    std = ops.sqrt(ops.real(ops.diagonal(c)))
    c = ops.divide(ops.divide(c, ops.expand_dims(std, axis=1)), ops.expand_dims(std, axis=0))
    return ops.clip(c, -1.0, 1.0) if not np.iscomplexobj(data(c)) else c


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """NumPy's ``np.logspace`` on tensors: ``base ** linspace(start, stop)``."""
    y = ops.linspace(start, stop, num, endpoint, axis=axis)
    if len(shape(base)) > 0:
        base = ops.expand_dims(base, axis=axis)
    out = ops.power(base, y)
    return cast(out, dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """NumPy's ``np.geomspace`` on tensors: a geometric sequence from ``start`` to ``stop`` (of one sign)."""
    s0, s1 = np.sign(data(start)), np.sign(data(stop))
    if np.any(s0 == 0) or np.any(s1 == 0):
        raise ValueError("np.geomspace: geometric sequence cannot include zero")
    if np.any(s0 != s1) or np.iscomplexobj(data(start)) or np.iscomplexobj(data(stop)):
        raise unsupported(
            "geomspace",
            "start and stop of different signs",
            "the sequence is complex",
            "Take the logarithms yourself and use np.exp(np.linspace(...))",
        )
    sign = s0
    out = ops.exp(ops.linspace(ops.log(ops.multiply(start, sign)), ops.log(ops.multiply(stop, sign)), num, endpoint))
    out = ops.multiply(out, sign)
    if num > 0:  # the ends exactly, as NumPy sets them
        index = np.arange(num).reshape((num,) + (1,) * (out.ndim - 1))
        out = ops.where(index == 0, start, out)
        if endpoint and num > 1:
            out = ops.where(index == num - 1, stop, out)
    if axis != 0:
        out = ops.moveaxis(out, 0, axis)
    return cast(out, dtype)


def _with_initial(scan, x, axis, dtype, include_initial, fill, name):
    if axis is None:
        if len(shape(x)) > 1:
            raise ValueError(f"np.{name}: axis must be given for an input of more than one dimension")
        axis = 0
    out = scan(x, axis=axis, dtype=dtype)
    if include_initial:
        target = list(shape(out))
        target[axis % len(target)] = 1
        out = ops.concatenate([np.full(target, fill, dtype=out.dtype), out], axis=axis)
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """NumPy's ``np.cumulative_sum`` on tensors (tapegrad's ``cumsum``, with an optional leading 0)."""
    check_out("cumulative_sum", out)
    return _with_initial(ops.cumsum, x, axis, dtype, include_initial, 0, "cumulative_sum")


def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """NumPy's ``np.cumulative_prod`` on tensors (tapegrad's ``cumprod``, with an optional leading 1)."""
    check_out("cumulative_prod", out)
    return _with_initial(ops.cumprod, x, axis, dtype, include_initial, 1, "cumulative_prod")


def nancumsum(a, axis=None, dtype=None, out=None):
    """NumPy's ``np.nancumsum`` on tensors: ``cumsum`` with NaN counted as 0."""
    check_out("nancumsum", out)
    return ops.cumsum(ops.where(ops.isnan(a), 0, a), axis=axis, dtype=dtype)


def nancumprod(a, axis=None, dtype=None, out=None):
    """NumPy's ``np.nancumprod`` on tensors: ``cumprod`` with NaN counted as 1."""
    check_out("nancumprod", out)
    return ops.cumprod(ops.where(ops.isnan(a), 1, a), axis=axis, dtype=dtype)


def divmod(x1, x2, /):
    """NumPy's ``np.divmod`` on tensors: ``(floor_divide, remainder)``."""
    return ops.floor_divide(x1, x2), ops.remainder(x1, x2)


def modf(x, /):
    """NumPy's ``np.modf`` on tensors: the fractional part (gradient 1) and the integral part (no gradient)."""
    whole = ops.trunc(x)
    return ops.subtract(x, whole), whole


def frexp(x, /):
    """NumPy's ``np.frexp`` on tensors: the mantissa ``x * 2 ** -e`` (differentiable) and the exponent ``e``."""
    _, e = np.frexp(data(x))
    return ops.multiply(x, np.ldexp(np.ones_like(data(x)), -e)), Tensor._wrap(e)


def ldexp(x1, x2, /):
    """NumPy's ``np.ldexp`` on tensors: ``x1 * 2 ** x2`` for integer ``x2``, differentiable in ``x1``."""
    constant_only("ldexp", "x2", x2)
    scale = np.ldexp(np.ones((), dtype=np.result_type(data(x1).dtype, np.float16)), data(x2))
    return ops.multiply(x1, scale)


def nextafter(x1, x2, /):
    """NumPy's ``np.nextafter`` on tensors: ``x1`` plus a constant step (gradient 1 to ``x1``, 0 to ``x2``)."""
    d1 = data(x1)
    return ops.add(x1, np.nextafter(d1, data(x2)) - d1)


def real_if_close(a, tol=100):
    """NumPy's ``np.real_if_close`` on tensors: the real part when every imaginary part is within ``tol``
    machine epsilons of 0, else ``a``."""
    d = data(a)
    if not np.iscomplexobj(d):
        return a
    if tol > 1:  # NumPy's rule: a tolerance above 1 counts machine epsilons
        tol = np.finfo(d.dtype).eps * tol
    return ops.real(a) if np.all(np.abs(d.imag) < tol) else a
