"""Products and running totals: ``prod``, ``cumsum``, ``cumprod``.

No rule divides by the input, so zeros are exact (one zero or several, and at any derivative order):

- ``prod``: the gradient of each element is the product of the others in its reduction, computed as the
  product of the elements before it times the product of those after it (two exclusive ``cumprod``\\ s).
- ``cumprod``: the gradient of element k is ``prod(x[:k]) * S[k]`` with ``S[k] = sum over i >= k of g[i] *
  prod(x[k+1 : i+1])``, a reverse linear recurrence computed by doubling in ``ceil(log2 n)`` steps of shifted
  products and sums (no division, O(n log n) work).
- ``cumsum``: the gradient is the reverse running total of ``g``.

``axis=None`` flattens first, as NumPy does. The array API spells the scans ``cumulative_sum`` and
``cumulative_prod``; forwards and rules find either name.
"""

import numpy as np

from ..registry import defop
from ._axes import count, kept_shape, normalize_axes
from ._names import spelled
from .elementwise import astype
from .shape import reshape


def _cumsum(xp, x, axis):
    return spelled(xp, "cumsum", "cumulative_sum")(x, axis=axis)


def _cumprod(xp, x, axis):
    return spelled(xp, "cumprod", "cumulative_prod")(x, axis=axis)


def _shift_left(xp, v, d):
    """v[..., d:] followed by d zeros, along the last axis."""
    return xp.concatenate([v[..., d:], xp.zeros_like(v[..., :d])], axis=-1)


def _shift_right_ones(xp, v):
    """1 followed by v[..., :-1], along the last axis: an inclusive scan made exclusive."""
    return xp.concatenate([xp.ones_like(v[..., :1]), v[..., :-1]], axis=-1)


def _inverse(perm):
    return tuple(int(i) for i in np.argsort(perm))


def _product_of_others(xp, x, axis):
    """For each element, the product of the other elements of its reduction group (no division)."""
    ndim = x.ndim
    axes = tuple(range(ndim)) if axis is None else axis
    rest = tuple(i for i in range(ndim) if i not in axes)
    perm = rest + axes
    moved = xp.transpose(x, perm) if perm != tuple(range(ndim)) else x
    flat = xp.reshape(moved, moved.shape[: len(rest)] + (count(x.shape, axes),))
    before = _cumprod(xp, _shift_right_ones(xp, flat), -1)
    after = xp.flip(_cumprod(xp, _shift_right_ones(xp, xp.flip(flat, axis=-1)), -1), axis=-1)
    others = xp.reshape(before * after, moved.shape)
    return xp.transpose(others, _inverse(perm)) if perm != tuple(range(ndim)) else others


def _prod_vjp(xp, g, ans, x, axis=None, keepdims=False):
    kept = g if keepdims else xp.reshape(g, kept_shape(x.shape, axis))
    return kept * _product_of_others(xp, x, axis)


def _cumsum_vjp(xp, g, ans, x, axis):
    return xp.flip(_cumsum(xp, xp.flip(g, axis=axis), axis), axis=axis)


def _cumprod_vjp(xp, g, ans, x, axis):
    g, x, ans = xp.moveaxis(g, axis, -1), xp.moveaxis(x, axis, -1), xp.moveaxis(ans, axis, -1)
    n = x.shape[-1]
    # s[k] = sum_{i >= k} g[i] * prod(x[k+1 : i+1]) by doubling: after the step with offset d, s[k] sums the
    # terms i < k + 2d, and a[k] = prod(x[k+1 : k+2d+1]).
    s, a, d = g, _shift_left(xp, x, 1), 1
    while d < n:
        s = s + a * _shift_left(xp, s, d)
        if 2 * d < n:
            a = a * _shift_left(xp, a, d)
        d *= 2
    return xp.moveaxis(_shift_right_ones(xp, ans) * s, -1, axis)


# fmt: off
_prod = defop("prod", lambda x, axis=None, keepdims=False, *, xp=np: xp.prod(x, axis=axis, keepdims=keepdims),
              _prod_vjp, save="x", jvp="transpose", batch="axis")
_cumsum_op = defop("cumsum", lambda x, axis, *, xp=np: _cumsum(xp, x, axis), _cumsum_vjp, linear=True, batch="axis")
_cumprod_op = defop("cumprod", lambda x, axis, *, xp=np: _cumprod(xp, x, axis), _cumprod_vjp, save="x ans", jvp="transpose", batch="axis")
# fmt: on


def prod(x, axis=None, keepdims=False):
    """The product over ``axis`` (None: all), exact at zeros: one zero sends the product of the others to it.

    >>> import tapegrad as tg
    >>> x = tg.Tensor([2.0, 0.0, 3.0], requires_grad=True)
    >>> tg.grad(lambda x: tg.prod(x))(x)
    array([0., 6., 0.])
    """
    return _prod(x, axis=normalize_axes(x, axis, "prod"), keepdims=keepdims)


def _scan(op, name, x, axis, dtype):
    if dtype is not None:
        x = astype(x, dtype=dtype)
    if axis is None:
        return op(reshape(x, (-1,)), axis=0)
    (axis,) = normalize_axes(x, axis, name)
    return op(x, axis=axis)


def cumsum(x, axis=None, dtype=None):
    """Running totals along ``axis`` (None: of the flattened input).

    >>> import tapegrad as tg
    >>> tg.cumsum(tg.Tensor([1.0, 2.0, 3.0]))
    Tensor([1., 3., 6.])
    """
    return _scan(_cumsum_op, "cumsum", x, axis, dtype)


def cumprod(x, axis=None, dtype=None):
    """Running products along ``axis`` (None: of the flattened input), exact at zeros.

    >>> import tapegrad as tg
    >>> tg.cumprod(tg.Tensor([1.0, 2.0, 3.0]))
    Tensor([1., 2., 6.])
    """
    return _scan(_cumprod_op, "cumprod", x, axis, dtype)
