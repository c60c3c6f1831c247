"""Pooling in PyTorch's layout and semantics (``N, C, *spatial``): max, average and adaptive average.

- ``max_pool`` saves its input only; its rule finds each window's first maximum again (PyTorch's choice at a
  tie) and sends the gradient there with ``fold``, so overlapping windows add up.
- ``avg_pool`` saves nothing but shapes: its gradient is ``g / divisor`` spread over each window by ``fold``.
  The divisor is the kernel's size, or (``count_include_pad=False``, ``ceil_mode``) how many input or padding
  positions each window covers, as PyTorch counts them.
- ``adaptive_avg_pool`` averages the windows ``[floor(i * n / m), ceil((i + 1) * n / m))`` along each axis,
  as one averaging matrix per axis; it saves nothing but shapes and its rule applies the transposed matrices.

Padding for max pooling is ``-inf``, so a padded position never wins; ``ceil_mode`` adds the positions its
last window needs at the end (PyTorch's rule: every window starts inside the input or its left padding).
"""

from __future__ import annotations

import math

import numpy as np

import tapegrad.ops._windows as W

from ..registry import defop
from ._batching import first_axis_rule
from ._rules import call, constants, data, recorded
from .conv import _batched, _fold_op, _shape
from .shape import squeeze


def _columns(g, kernel_size, outs, xp):
    n, c = g.shape[:2]
    return xp.reshape(g, (n, c * math.prod(kernel_size), math.prod(outs)))


def _max_pool(x, kernel_size, stride, padding, dilation, *, xp=np):
    cols = W.windows(W.pad(x, padding, -math.inf, xp), kernel_size, stride, dilation, xp)
    return xp.max(cols, axis=2)


def _max_pool_vjp(xp, g, ans, x, kernel_size, stride, padding, dilation):
    ns, d = constants(xp, x), len(kernel_size)
    if recorded(xp):  # on tensors, through ops (no gradient flows through argmax), so that tg.compile sees them
        cols = W.windows(_pad_joined(x, padding, -math.inf, xp, ns), kernel_size, stride, dilation, xp)
    else:
        cols = W.windows(W.pad(data(x), padding, -math.inf, ns), kernel_size, stride, dilation, ns)
    first = xp.expand_dims(xp.argmax(cols, axis=2), 2)  # each window's first maximum, as PyTorch picks at a tie
    hit = first == ns.reshape(ns.arange(math.prod(kernel_size)), (-1,) + (1,) * d)  # the tensor first: it broadcasts
    gcols = _columns(xp.where(hit, xp.expand_dims(g, 2), 0), kernel_size, g.shape[2:], xp)
    geometry = dict(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)
    return call(xp, _fold_op, gcols, output_size=tuple(x.shape[2:]), **geometry)


def _pad_joined(x, padding, value, xp, ns):
    """``W.pad`` as ops on a tensor: blocks of ``value`` joined on (every library has concatenate, not pad)."""
    for k, (lo, hi) in enumerate(padding):
        axis = x.ndim - len(padding) + k
        parts = [x]
        for first, width in ((True, lo), (False, hi)):
            if width:
                shape = tuple(x.shape[:axis]) + (width,) + tuple(x.shape[axis + 1 :])
                block = ns.full(shape, value, dtype=x.dtype)
                parts = [block, *parts] if first else [*parts, block]
        x = xp.concatenate(parts, axis=axis) if len(parts) > 1 else x
    return x


def _divisor(sizes, dtype, kernel_size, stride, padding, counted, divisor_override, ns):
    """How many positions each window averages: a number, or an array (1, 1, *out) where it varies."""
    if divisor_override is not None:
        return float(divisor_override)
    if counted == padding:
        return float(math.prod(kernel_size))
    rest = tuple((lo - clo, hi - chi) for (lo, hi), (clo, chi) in zip(padding, counted))
    mask = W.pad(W.pad(ns.ones((1, 1) + tuple(sizes), dtype=dtype), counted, 1, ns), rest, 0, ns)
    return ns.sum(W.windows(mask, kernel_size, stride, (1,) * len(sizes), ns), axis=2)


def _avg_pool(x, kernel_size, stride, padding, counted, divisor_override, *, xp=np):
    d = len(kernel_size)
    div = _divisor(x.shape[2:], x.dtype, kernel_size, stride, padding, counted, divisor_override, xp)
    return xp.sum(W.windows(W.pad(x, padding, 0, xp), kernel_size, stride, (1,) * d, xp), axis=2) / div


def _avg_pool_vjp(xp, g, ans, x, kernel_size, stride, padding, counted, divisor_override):
    d, ns = len(kernel_size), constants(xp, g)
    div = _divisor(x.shape[2:], x.dtype, kernel_size, stride, padding, counted, divisor_override, ns)
    spread = xp.broadcast_to(xp.expand_dims(g / div, 2), g.shape[:2] + (math.prod(kernel_size),) + g.shape[2:])
    geometry = dict(kernel_size=kernel_size, stride=stride, padding=padding, dilation=(1,) * d)
    return call(xp, _fold_op, _columns(spread, kernel_size, g.shape[2:], xp), output_size=x.shape[2:], **geometry)


def _averaging(n, m, dtype, ns):
    """The (m, n) matrix averaging the adaptive windows of an axis of n into m."""
    a = np.zeros((m, n))
    for i in range(m):
        start, stop = (i * n) // m, -(-(i + 1) * n // m)
        a[i, start:stop] = 1.0 / (stop - start)
    return ns.asarray(a, dtype=dtype)


def _along(x, axis, a, xp):
    """Contract ``x``'s ``axis`` with the columns of ``a``: the axis of size a.shape[1] becomes a.shape[0]."""
    last = x.ndim - 1
    if axis != last:
        x = xp.swapaxes(x, axis, last)
    x = xp.matmul(x, xp.transpose(a))
    return x if axis == last else xp.swapaxes(x, axis, last)


def _adaptive_avg_pool(x, output_size, *, xp=np):
    d = len(output_size)
    for j, m in enumerate(output_size):
        axis = x.ndim - d + j
        x = _along(x, axis, _averaging(x.shape[axis], m, x.dtype, xp), xp)
    return x


def _adaptive_avg_pool_vjp(xp, g, ans, x, output_size):
    d, ns = len(output_size), constants(xp, g)
    for j, m in enumerate(output_size):
        axis = len(x.shape) - d + j
        g = _along(g, axis, xp.transpose(_averaging(x.shape[axis], m, x.dtype, ns)), xp)
    return g


# fmt: off
_max_pool_op = defop("max_pool", _max_pool, _max_pool_vjp, save="x", jvp="transpose", batch=first_axis_rule(_max_pool, "max_pool"))
_avg_pool_op = defop("avg_pool", _avg_pool, _avg_pool_vjp, save="x.shape", linear=True, batch=first_axis_rule(_avg_pool, "avg_pool"))
_adaptive_avg_pool_op = defop("adaptive_avg_pool", _adaptive_avg_pool, _adaptive_avg_pool_vjp, save="x.shape", linear=True, batch="leading")  # on the last axes
# fmt: on


def _pool_arguments(x, kernel_size, stride, padding, dilation, ceil_mode, d, op):
    x, unbatched = _batched(x, d, op)
    kernel = W.ntuple(kernel_size, d, "kernel_size", op)
    stride = kernel if stride is None or stride == () else W.ntuple(stride, d, "stride", op)
    dilation = W.ntuple(dilation, d, "dilation", op)
    W.check_positive(kernel + stride + dilation, "kernel_size, stride and dilation", op)
    pads = W.ntuple(padding, d, "padding", op)
    if any(p < 0 for p in pads):
        raise ValueError(f"{op}: padding must be >= 0, got {padding!r}")
    pairs, _ = W.pool_padding(_shape(x)[2:], kernel, stride, pads, dilation, bool(ceil_mode), op)
    return x, unbatched, dict(kernel_size=kernel, stride=stride, padding=pairs), pads


def _max_pool_nd(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices, d, op):
    if return_indices:
        raise NotImplementedError(f"{op}: return_indices=True is not supported (there is no max_unpool)")
    x, unbatched, args, _ = _pool_arguments(x, kernel_size, stride, padding, dilation, ceil_mode, d, op)
    out = _max_pool_op(x, dilation=W.ntuple(dilation, d, "dilation", op), **args)
    return squeeze(out, 0) if unbatched else out


def _avg_pool_nd(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, d, op):
    x, unbatched, args, pads = _pool_arguments(x, kernel_size, stride, padding, 1, ceil_mode, d, op)
    if divisor_override is not None and (not isinstance(divisor_override, (int, np.integer)) or divisor_override < 1):
        raise ValueError(f"{op}: divisor_override must be a positive int, got {divisor_override!r}")
    counted = tuple((p, p) for p in pads) if count_include_pad else ((0, 0),) * d
    out = _avg_pool_op(x, counted=counted, divisor_override=divisor_override, **args)
    return squeeze(out, 0) if unbatched else out


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The maximum of each window along the last axis of ``(N, C, L)``; ``stride`` defaults to the kernel size.

    >>> import tapegrad as tg
    >>> tg.max_pool1d(tg.Tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]]), 2)
    Tensor([[[3., 5.]]])
    """
    return _max_pool_nd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The maximum of each window of ``(N, C, H, W)`` (PyTorch's arguments; ``stride`` defaults to the kernel).
    At a tie the first maximum in the window gets the gradient, as in PyTorch.

    >>> import numpy as np, tapegrad as tg
    >>> tg.max_pool2d(tg.Tensor(np.arange(16.0).reshape(1, 1, 4, 4)), 2)
    Tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    """
    return _max_pool_nd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d")


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """The mean of each window along the last axis of ``(N, C, L)`` (PyTorch's arguments).

    >>> import tapegrad as tg
    >>> tg.avg_pool1d(tg.Tensor([[[1.0, 3.0, 2.0, 6.0]]]), 2)
    Tensor([[[2., 4.]]])
    """
    return _avg_pool_nd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d")


def avg_pool2d(
    input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None
):
    """The mean of each window of ``(N, C, H, W)`` (PyTorch's arguments and divisors).

    >>> import numpy as np, tapegrad as tg
    >>> tg.avg_pool2d(tg.Tensor(np.arange(16.0).reshape(1, 1, 4, 4)), 2)
    Tensor([[[[ 2.5,  4.5],
              [10.5, 12.5]]]])
    """
    return _avg_pool_nd(
        input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2, "avg_pool2d"
    )


def _adaptive_nd(x, output_size, d, op):
    x, unbatched = _batched(x, d, op)
    sizes = _shape(x)[2:]
    items = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * d
    if len(items) != d:
        raise ValueError(f"{op}: output_size must be an int or {d} ints (None keeps a size), got {output_size!r}")
    size = tuple(n if m is None else m for n, m in zip(sizes, items))
    if not all(isinstance(m, (int, np.integer)) and m >= 1 for m in size):
        raise ValueError(f"{op}: output_size must hold positive ints (or None), got {output_size!r}")
    out = _adaptive_avg_pool_op(x, output_size=tuple(int(m) for m in size))
    return squeeze(out, 0) if unbatched else out


def adaptive_avg_pool1d(input, output_size):
    """Average ``(N, C, L)`` down to ``(N, C, output_size)`` with PyTorch's adaptive windows.

    >>> import tapegrad as tg
    >>> tg.adaptive_avg_pool1d(tg.Tensor([[[1.0, 2.0, 3.0, 4.0, 5.0]]]), 2)
    Tensor([[[2., 4.]]])
    """
    return _adaptive_nd(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    """Average ``(N, C, H, W)`` down to ``output_size`` (an int, a pair, None keeping a size), with PyTorch's
    windows ``[floor(i * H / h), ceil((i + 1) * H / h))``; ``1`` is global average pooling.

    >>> import numpy as np, tapegrad as tg
    >>> tg.adaptive_avg_pool2d(tg.Tensor(np.arange(16.0).reshape(1, 1, 4, 4)), 1)
    Tensor([[[[7.5]]]])
    """
    return _adaptive_nd(input, output_size, 2, "adaptive_avg_pool2d")
