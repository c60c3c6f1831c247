"""Reductions with ``axis`` (int, tuple, negative, None) and ``keepdims``; softmax and log_softmax.

Each rule first restores the reduced axes of ``g`` (``_kept``), then broadcasts against the input. Ties in
max/min share the gradient evenly; over a slice holding NaN the result is NaN and its NaN elements share it. logsumexp, softmax and log_softmax subtract the maximum first, so they are
stable for large inputs.
"""

import numpy as np

from ..registry import defop
from ._axes import count, kept_shape, normalize_axes, reduced_shape
from ._complex import is_complex, real_if_complex


def _kept(xp, g, shape, axis, keepdims):
    return g if keepdims else xp.reshape(g, kept_shape(shape, axis))


def _sum_vjp(xp, g, ans, x, axis=None, keepdims=False):
    if axis is None and not keepdims:  # a 0-d g broadcasts as it is: no reshape (one op fewer on tensors)
        return xp.broadcast_to(g, x.shape)
    return xp.broadcast_to(_kept(xp, g, x.shape, axis, keepdims), x.shape)


def _mean_vjp(xp, g, ans, x, axis=None, keepdims=False):
    if axis is None and not keepdims:  # a loss's mean: its 0-d g broadcasts as it is, as sum's does
        return xp.broadcast_to(g / count(x.shape, None), x.shape)
    return xp.broadcast_to(_kept(xp, g, x.shape, axis, keepdims) / count(x.shape, axis), x.shape)


def _var_vjp(xp, g, ans, x, axis=None, ddof=0, keepdims=False):
    centred = x - xp.mean(x, axis=axis, keepdims=True)
    g = _kept(xp, g, x.shape, axis, keepdims)
    if is_complex(x):  # mean(|z - mean z|^2) is real-valued: Re(g) * conj(z - mean z) in tapegrad's convention
        return real_if_complex(xp, g) * xp.conj(centred) * (2.0 / (count(x.shape, axis) - ddof))
    return g * centred * (2.0 / (count(x.shape, axis) - ddof))


def _extreme_vjp(xp, g, ans, x, axis=None, keepdims=False):
    # the elements equal to the result share its gradient; a slice holding NaN has the result NaN (NumPy's max
    # propagates it), equal to nothing, so there the NaN elements share it (as PyTorch's max)
    at_extreme = xp.logical_or(x == _kept(xp, ans, x.shape, axis, keepdims), x != x)
    ties = xp.sum(xp.astype(at_extreme, x.dtype), axis=axis, keepdims=True)
    return xp.where(at_extreme, _kept(xp, g, x.shape, axis, keepdims) / ties, 0)


def mean_of(x, axis, keepdims, count):
    """``np.mean(x, axis, keepdims=keepdims)`` of a float32, float64 or complex ``x``, as NumPy computes it (the
    sum, then a division by ``count``, NumPy's integer count of the elements), without its Python layers,
    which cost a loss's mean, eager or compiled, several times the sum itself (after a large GEMM, with cold
    caches).

    >>> x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    >>> bool(mean_of(x, None, False, 6) == np.mean(x)), mean_of(x, (0,), True, 2).tolist()
    (True, [[1.5, 2.5, 3.5]])
    """
    total = np.add.reduce(x, axis, None, None, keepdims)
    # an intp, as NumPy's count: a float32 sum is divided in float64, then rounded (a Python int would divide in
    # float32, where a count past 2**24 is not exact)
    count = np.intp(count)
    if total.__class__ is np.ndarray:
        return np.true_divide(total, count, out=total, casting="unsafe")
    return total.dtype.type(total / count)


def _mean_forward(x, axis=None, keepdims=False, *, xp=np):
    if xp is np and x.__class__ is np.ndarray and x.dtype.kind in "fc" and x.dtype.itemsize >= 4 and x.size:
        return mean_of(x, axis, keepdims, count(x.shape, axis))
    return xp.mean(x, axis=axis, keepdims=keepdims)


def _var(x, axis=None, ddof=0, keepdims=False, *, xp=np):
    if xp is not np and is_complex(x):  # the array API's var takes real input: mean(|x - mean x|^2)
        c = x - xp.mean(x, axis=axis, keepdims=True)
        return xp.sum(xp.real(c * xp.conj(c)), axis=axis, keepdims=keepdims) / (count(x.shape, axis) - ddof)
    return xp.var(x, axis=axis, ddof=ddof, keepdims=keepdims)


def _logsumexp(x, axis=None, keepdims=False, *, xp=np):
    if count(x.shape, axis) == 0:  # an empty sum, 0, its log -inf (SciPy's): max has no identity to shift by
        m = xp.zeros(kept_shape(x.shape, axis), dtype=x.dtype)
    else:
        m = xp.max(x, axis=axis, keepdims=True)
        m = xp.where(xp.isfinite(m), m, 0)  # all -inf (or inf) along an axis: leave it to log/exp
    with np.errstate(divide="ignore"):
        out = xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else xp.reshape(out, reduced_shape(x.shape, axis))


def _logsumexp_vjp(xp, g, ans, x, axis=None, keepdims=False):
    return _kept(xp, g, x.shape, axis, keepdims) * xp.exp(x - _kept(xp, ans, x.shape, axis, keepdims))


def _softmax(x, axis=-1, *, xp=np):
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _log_softmax(x, axis=-1, *, xp=np):
    return x - _logsumexp(x, axis=axis, keepdims=True, xp=xp)


def _var_jvp(xp, ts, ans, x, axis=None, ddof=0, keepdims=False):
    centred = x - xp.mean(x, axis=axis, keepdims=True)  # the tangent's mean drops out: sum(centred) is 0
    product = xp.real(xp.conj(centred) * ts[0]) if is_complex(x) else centred * ts[0]
    return xp.sum(product, axis=axis, keepdims=keepdims) * (2.0 / (count(x.shape, axis) - ddof))


def _extreme_jvp(xp, ts, ans, x, axis=None, keepdims=False):
    # the mean of the tangents at the elements equal to the result (the NaN ones where the result is NaN), the
    # transpose of _extreme_vjp
    at_extreme = xp.logical_or(x == _kept(xp, ans, x.shape, axis, keepdims), x != x)
    ties = xp.sum(xp.astype(at_extreme, x.dtype), axis=axis, keepdims=keepdims)
    return xp.sum(xp.where(at_extreme, ts[0], 0), axis=axis, keepdims=keepdims) / ties


def _logsumexp_jvp(xp, ts, ans, x, axis=None, keepdims=False):
    return xp.sum(xp.exp(x - _kept(xp, ans, x.shape, axis, keepdims)) * ts[0], axis=axis, keepdims=keepdims)


# fmt: off
_sum = defop("sum", lambda x, axis=None, keepdims=False, *, xp=np: xp.sum(x, axis=axis, keepdims=keepdims),
             _sum_vjp, save="x.shape", linear=True, batch="axis")
_mean = defop("mean", _mean_forward, _mean_vjp, save="x.shape", linear=True, batch="axis")
_var = defop("var", _var, _var_vjp, save="x", jvp=_var_jvp, batch="axis")
_max = defop("max", lambda x, axis=None, keepdims=False, *, xp=np: xp.max(x, axis=axis, keepdims=keepdims),
             _extreme_vjp, save="x ans", jvp=_extreme_jvp, batch="axis")
_min = defop("min", lambda x, axis=None, keepdims=False, *, xp=np: xp.min(x, axis=axis, keepdims=keepdims),
             _extreme_vjp, save="x ans", jvp=_extreme_jvp, batch="axis")
_lse = defop("logsumexp", _logsumexp, _logsumexp_vjp, save="x ans", method=True, jvp=_logsumexp_jvp, batch="axis")
_softmax_op = defop("softmax", _softmax,
                    lambda xp, g, ans, x, axis=-1: ans * (g - xp.sum(g * ans, axis=axis, keepdims=True)),
                    save="ans", method=True,
                    jvp=lambda xp, ts, ans, x, axis=-1: ans * (ts[0] - xp.sum(ans * ts[0], axis=axis, keepdims=True)), batch="axis")
_log_softmax_op = defop("log_softmax", _log_softmax,
                        lambda xp, g, ans, x, axis=-1: g - xp.exp(ans) * xp.sum(g, axis=axis, keepdims=True),
                        save="ans", method=True,
                        jvp=lambda xp, ts, ans, x, axis=-1: ts[0] - xp.sum(xp.exp(ans) * ts[0], axis=axis, keepdims=True), batch="axis")
# fmt: on


def sum(x, axis=None, keepdims=False):
    """Sum over ``axis`` (None: all).

    >>> import tapegrad as tg
    >>> tg.sum(tg.Tensor([[1.0, 2.0], [3.0, 4.0]]), axis=0)
    Tensor([4., 6.])
    """
    return _sum(x, axis=normalize_axes(x, axis, "sum"), keepdims=keepdims)


def mean(x, axis=None, keepdims=False):
    """Mean over ``axis`` (None: all).

    >>> import tapegrad as tg
    >>> tg.mean(tg.Tensor([1.0, 2.0, 6.0]))
    Tensor(3.)
    """
    return _mean(x, axis=normalize_axes(x, axis, "mean"), keepdims=keepdims)


def var(x, axis=None, ddof=0, keepdims=False):
    """Variance over ``axis`` with ``ddof`` delta degrees of freedom (NumPy's definition).

    >>> import tapegrad as tg
    >>> tg.var(tg.Tensor([1.0, 3.0]))
    Tensor(1.)
    """
    return _var(x, axis=normalize_axes(x, axis, "var"), ddof=ddof, keepdims=keepdims)


def max(x, axis=None, keepdims=False):
    """Maximum over ``axis``; tied maxima share the gradient evenly. A slice holding NaN has the maximum NaN
    (as NumPy's), and its gradient goes to the NaN elements (as PyTorch's).

    >>> import tapegrad as tg
    >>> tg.max(tg.Tensor([1.0, 3.0, 2.0]))
    Tensor(3.)
    """
    return _max(x, axis=normalize_axes(x, axis, "max"), keepdims=keepdims)


def min(x, axis=None, keepdims=False):
    """Minimum over ``axis``; tied minima share the gradient evenly (a slice holding NaN: see ``max``).

    >>> import tapegrad as tg
    >>> tg.min(tg.Tensor([1.0, 3.0, 2.0]))
    Tensor(1.)
    """
    return _min(x, axis=normalize_axes(x, axis, "min"), keepdims=keepdims)


def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) over ``axis``, computed stably.

    >>> import tapegrad as tg
    >>> tg.logsumexp(tg.Tensor([1000.0, 1000.0])).item() - 1000.0
    0.6931471805599...
    """
    return _lse(x, axis=normalize_axes(x, axis, "logsumexp"), keepdims=keepdims)


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along ``axis`` (default: last), computed stably.

    >>> import tapegrad as tg
    >>> tg.softmax(tg.Tensor([0.0, 0.0]))
    Tensor([0.5, 0.5])
    """
    return _softmax_op(x, axis=normalize_axes(x, axis, "softmax"))


def log_softmax(x, axis=-1):
    """x - logsumexp(x) along ``axis`` (default: last), computed stably.

    >>> import tapegrad as tg
    >>> tg.log_softmax(tg.Tensor([0.0, 0.0]))
    Tensor([-0.69314718, -0.69314718])
    """
    return _log_softmax_op(x, axis=normalize_axes(x, axis, "log_softmax"))
