"""Convolution as im2col and a matrix product, in PyTorch's layout and semantics (``N, C, *spatial``).

- ``unfold`` gathers every window into columns ``(N, C * K, L)`` (``K`` the kernel's size, ``L`` the number
  of windows), as ``torch.nn.functional.unfold``; ``fold`` adds columns back into an image. Each is the
  other's adjoint, so each one's rule is the other: derivatives of any order come for free.
- ``conv`` is ``unfold`` and one batched matrix product per group; it saves its input and weight (never the
  columns, ``K`` times larger) and its rules rebuild what they need: the input's gradient is ``fold`` of
  ``weight^T @ g``, the weight's is ``g @ unfold(x)^T`` summed over the batch.
- ``conv_transpose`` is the adjoint of ``conv`` in its input: ``fold`` of ``weight^T @ x``.

The rules call ``unfold``/``fold`` through ``_rules.call``, so on a recorded replay (``create_graph``) they are
recorded ops and second derivatives work. The public functions (``conv1d``, ``conv2d``, ``conv_transpose1d``,
``conv_transpose2d``, ``unfold``, ``fold``) take PyTorch's arguments and normalise them, so the ops see tuples
of ints and one ``(lo, hi)`` padding pair per spatial axis.
"""

from __future__ import annotations

import math

import numpy as np

import tapegrad.ops._windows as W

from ..registry import defop
from ._batching import conv_rule, first_axis_rule
from ._rules import call
from .shape import expand_dims, reshape, squeeze


def _unfold(x, kernel_size, stride, padding, dilation, *, xp=np):
    cols = W.windows(W.pad(x, padding, 0, xp), kernel_size, stride, dilation, xp)
    n, c, k = cols.shape[:3]
    return xp.reshape(cols, (n, c * k, math.prod(cols.shape[3:])))


def _fold(cols, output_size, kernel_size, stride, padding, dilation, *, xp=np):
    n, ck, _ = cols.shape
    k = math.prod(kernel_size)
    padded = tuple(m + lo + hi for m, (lo, hi) in zip(output_size, padding))
    outs = W.out_sizes(padded, kernel_size, stride, dilation)
    cols = xp.reshape(cols, (n, ck // k, k) + outs)
    return W.unpad(W.unwindows(cols, padded, kernel_size, stride, dilation, xp), padding, output_size, xp)


def _geometry(w, stride, padding, dilation):
    return dict(kernel_size=tuple(w.shape[2:]), stride=stride, padding=padding, dilation=dilation)


def _conv(x, w, stride, padding, dilation, groups, *, xp=np):
    k = tuple(w.shape[2:])
    cols = _unfold(x, k, stride, padding, dilation, xp=xp)  # (N, C*K, L)
    n, o, length = x.shape[0], w.shape[0], cols.shape[2]
    cols = xp.reshape(cols, (n, groups, cols.shape[1] // groups, length))
    out = xp.matmul(xp.reshape(w, (groups, o // groups, -1)), cols)  # (N, G, O/G, L)
    padded = tuple(m + lo + hi for m, (lo, hi) in zip(x.shape[2:], padding))
    return xp.reshape(out, (n, o) + W.out_sizes(padded, k, stride, dilation))


def _conv_vjp_x(xp, g, ans, x, w, stride, padding, dilation, groups):
    n, o = g.shape[:2]
    w2 = xp.reshape(w, (groups, o // groups, -1))
    gcols = xp.matmul(xp.swapaxes(w2, -1, -2), xp.reshape(g, (n, groups, o // groups, -1)))  # (N, G, C/G*K, L)
    gcols = xp.reshape(gcols, (n, -1, gcols.shape[-1]))
    geometry = _geometry(w, stride, padding, dilation)
    return call(xp, _fold_op, gcols, output_size=tuple(x.shape[2:]), **geometry)


def _conv_vjp_w(xp, g, ans, x, w, stride, padding, dilation, groups):
    n, o = g.shape[:2]
    cols = call(xp, _unfold_op, x, **_geometry(w, stride, padding, dilation))
    cols = xp.reshape(cols, (n, groups, cols.shape[1] // groups, cols.shape[2]))
    g2 = xp.reshape(g, (n, groups, o // groups, cols.shape[3]))
    gw = xp.sum(xp.matmul(g2, xp.swapaxes(cols, -1, -2)), axis=0)  # (G, O/G, C/G*K)
    return xp.reshape(gw, w.shape)


def _conv_transpose(x, w, output_size, stride, padding, dilation, groups, *, xp=np):
    n, c = x.shape[:2]
    w2 = xp.reshape(w, (groups, c // groups, -1))  # (G, C/G, O/G*K)
    cols = xp.matmul(xp.swapaxes(w2, -1, -2), xp.reshape(x, (n, groups, c // groups, -1)))  # (N, G, O/G*K, L)
    cols = xp.reshape(cols, (n, -1, cols.shape[-1]))
    return _fold(cols, output_size, tuple(w.shape[2:]), stride, padding, dilation, xp=xp)


def _conv_transpose_vjp_x(xp, g, ans, x, w, output_size, stride, padding, dilation, groups):
    n, c = x.shape[:2]
    gcols = call(xp, _unfold_op, g, **_geometry(w, stride, padding, dilation))
    gcols = xp.reshape(gcols, (n, groups, gcols.shape[1] // groups, gcols.shape[2]))
    gx = xp.matmul(xp.reshape(w, (groups, c // groups, -1)), gcols)  # (N, G, C/G, L)
    return xp.reshape(gx, x.shape)


def _conv_transpose_vjp_w(xp, g, ans, x, w, output_size, stride, padding, dilation, groups):
    n, c = x.shape[:2]
    gcols = call(xp, _unfold_op, g, **_geometry(w, stride, padding, dilation))
    gcols = xp.reshape(gcols, (n, groups, gcols.shape[1] // groups, gcols.shape[2]))
    x2 = xp.reshape(x, (n, groups, c // groups, gcols.shape[3]))
    gw = xp.sum(xp.matmul(x2, xp.swapaxes(gcols, -1, -2)), axis=0)  # (G, C/G, O/G*K)
    return xp.reshape(gw, w.shape)


# fmt: off
_unfold_op = defop("unfold", _unfold,
                   lambda xp, g, ans, x, **geometry: call(xp, _fold_op, g, output_size=tuple(x.shape[2:]), **geometry),
                   save="x.shape", linear=True, batch=first_axis_rule(_unfold, "unfold"))
_fold_op = defop("fold", _fold,
                 lambda xp, g, ans, cols, output_size, **geometry: call(xp, _unfold_op, g, **geometry), linear=True,
                 batch=first_axis_rule(_fold, "fold"))
_conv_op = defop("conv", _conv, _conv_vjp_x, _conv_vjp_w, save="x w", inputs=("x", "w"), linear="each",
                  batch=conv_rule(_conv, "conv"))
_conv_transpose_op = defop("conv_transpose", _conv_transpose, _conv_transpose_vjp_x, _conv_transpose_vjp_w,
                           save="x w", inputs=("x", "w"), linear="each", batch=conv_rule(_conv_transpose, "conv_transpose"))
# fmt: on


# -- public functions: PyTorch's arguments, normalised once ----------------------------------------------
def _shape(a):
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def _batched(x, d, op, what="input"):
    """(x with a batch axis, whether it had none): ops see (N, C, *spatial)."""
    ndim = len(_shape(x))
    if ndim == d + 1:
        return expand_dims(x, 0), True
    if ndim != d + 2:
        raise ValueError(
            f"{op}: {what} must have {d + 2} dimensions (N, C, {', '.join('LHW'[-d:] if d < 3 else 'DHW')}) or "
            f"{d + 1} without the batch axis, got shape {_shape(x)}"
        )
    return x, False


def _check_groups(groups, channels, out_channels, op):
    if not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")
    if channels % groups or out_channels % groups:
        raise ValueError(
            f"{op}: groups={groups} must divide both the input's {channels} and the output's {out_channels} channels"
        )


def _add_bias(out, bias, channels, d, op):
    if bias is None:
        return out
    if _shape(bias) != (channels,):
        raise ValueError(f"{op}: bias must have shape ({channels},), one per output channel, got {_shape(bias)}")
    return out + reshape(bias, (channels,) + (1,) * d)


def _convolve(x, w, bias, stride, padding, dilation, groups, d, op):
    x, unbatched = _batched(x, d, op)
    wshape, xshape = _shape(w), _shape(x)
    if len(wshape) != d + 2:
        raise ValueError(f"{op}: weight must have shape (out_channels, in_channels / groups, *kernel), got {wshape}")
    kernel = wshape[2:]
    stride, dilation = W.ntuple(stride, d, "stride", op), W.ntuple(dilation, d, "dilation", op)
    W.check_positive(stride + dilation, "stride and dilation", op)
    _check_groups(groups, xshape[1], wshape[0], op)
    if xshape[1] != wshape[1] * groups:
        raise ValueError(
            f"{op}: the input has {xshape[1]} channels but the weight of shape {wshape} expects "
            f"{wshape[1]} * groups ({groups}) = {wshape[1] * groups}"
        )
    pads = W.padding_pairs(padding, d, kernel, stride, dilation, op)
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(xshape[2:], pads))
    if any(n < dl * (k - 1) + 1 for n, k, dl in zip(padded, kernel, dilation)):
        raise ValueError(
            f"{op}: the input's spatial size {xshape[2:]} (padded: {padded}) is smaller than the kernel {kernel} "
            f"with dilation {dilation}"
        )
    out = _conv_op(x, w, stride=stride, padding=pads, dilation=dilation, groups=int(groups))
    out = _add_bias(out, bias, wshape[0], d, op)
    return squeeze(out, 0) if unbatched else out


def _convolve_transpose(x, w, bias, stride, padding, output_padding, groups, dilation, d, op):
    x, unbatched = _batched(x, d, op)
    wshape, xshape = _shape(w), _shape(x)
    if len(wshape) != d + 2:
        raise ValueError(f"{op}: weight must have shape (in_channels, out_channels / groups, *kernel), got {wshape}")
    kernel = wshape[2:]
    stride, dilation = W.ntuple(stride, d, "stride", op), W.ntuple(dilation, d, "dilation", op)
    W.check_positive(stride + dilation, "stride and dilation", op)
    pads, extra = W.ntuple(padding, d, "padding", op), W.ntuple(output_padding, d, "output_padding", op)
    if any(p < 0 for p in pads + extra):
        raise ValueError(f"{op}: padding and output_padding must be >= 0, got {pads} and {extra}")
    if any(e >= s and e >= dl for e, s, dl in zip(extra, stride, dilation)):
        raise ValueError(f"{op}: output_padding {extra} must be smaller than either the stride or the dilation")
    _check_groups(groups, xshape[1], wshape[1] * groups, op)
    if xshape[1] != wshape[0]:
        raise ValueError(
            f"{op}: the input has {xshape[1]} channels but the weight of shape {wshape} expects {wshape[0]}"
        )
    size = tuple(
        (n - 1) * s - 2 * p + dl * (k - 1) + e + 1
        for n, k, s, p, e, dl in zip(xshape[2:], kernel, stride, pads, extra, dilation)
    )
    if any(n < 1 for n in size):
        raise ValueError(f"{op}: the output would have spatial size {size}; reduce the padding {pads}")
    pairs = tuple((p, p - e) for p, e in zip(pads, extra))
    out = _conv_transpose_op(
        x, w, output_size=size, stride=stride, padding=pairs, dilation=dilation, groups=int(groups)
    )
    out = _add_bias(out, bias, wshape[1] * groups, d, op)
    return squeeze(out, 0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation, as PyTorch): ``input`` ``(N, C, L)``, ``weight`` ``(O, C / groups, k)``.

    ``padding`` is an int, ``"valid"`` (none) or ``"same"`` (output as long as the input; stride 1).

    >>> import numpy as np, tapegrad as tg
    >>> tg.conv1d(tg.Tensor(np.arange(5.0).reshape(1, 1, 5)), tg.Tensor(np.ones((1, 1, 2))))
    Tensor([[[1., 3., 5., 7.]]])
    """
    return _convolve(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation, as PyTorch): ``input`` ``(N, C, H, W)`` (or ``(C, H, W)``), ``weight``
    ``(O, C / groups, kh, kw)``, optional ``bias`` ``(O,)``; ``stride``, ``padding`` and ``dilation`` are ints or
    pairs, ``padding`` may be ``"valid"`` or ``"same"``. The tape keeps the input and weight only.

    >>> import numpy as np, tapegrad as tg
    >>> x = tg.Tensor(np.arange(16.0).reshape(1, 1, 4, 4))
    >>> tg.conv2d(x, tg.Tensor(np.ones((1, 1, 2, 2))), stride=2)
    Tensor([[[[10., 18.],
              [42., 50.]]]])
    """
    return _convolve(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The transposed 1-D convolution (PyTorch's arguments): ``weight`` ``(C, O / groups, k)``.

    >>> import numpy as np, tapegrad as tg
    >>> tg.conv_transpose1d(tg.Tensor([[[1.0, 2.0]]]), tg.Tensor(np.ones((1, 1, 2))), stride=2)
    Tensor([[[1., 1., 2., 2.]]])
    """
    return _convolve_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 1, "conv_transpose1d"
    )


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The transposed 2-D convolution, the adjoint of ``conv2d`` in its input (PyTorch's arguments): ``weight``
    ``(C, O / groups, kh, kw)``; the output is ``(H - 1) * stride - 2 * padding + dilation * (kh - 1) +
    output_padding + 1`` high (and as wide).

    >>> import numpy as np, tapegrad as tg
    >>> tg.conv_transpose2d(tg.Tensor(np.ones((1, 1, 2, 2))), tg.Tensor(np.ones((1, 1, 2, 2))), stride=2).shape
    (1, 1, 4, 4)
    """
    return _convolve_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 2, "conv_transpose2d"
    )


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Every window as a column (im2col, ``torch.nn.functional.unfold``): ``(N, C, *spatial)`` to
    ``(N, C * K, L)`` with ``K`` the kernel's size and ``L`` the number of windows.

    >>> import numpy as np, tapegrad as tg
    >>> tg.unfold(tg.Tensor(np.arange(9.0).reshape(1, 1, 3, 3)), 2).shape
    (1, 4, 4)
    """
    d = len(kernel_size) if isinstance(kernel_size, (tuple, list)) else 2
    x, unbatched = _batched(input, d, "unfold")
    kernel, stride = W.ntuple(kernel_size, d, "kernel_size", "unfold"), W.ntuple(stride, d, "stride", "unfold")
    dilation = W.ntuple(dilation, d, "dilation", "unfold")
    W.check_positive(kernel + stride + dilation, "kernel_size, stride and dilation", "unfold")
    pads = W.padding_pairs(padding, d, kernel, stride, dilation, "unfold")
    out = _unfold_op(x, kernel_size=kernel, stride=stride, padding=pads, dilation=dilation)
    return squeeze(out, 0) if unbatched else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Add columns ``(N, C * K, L)`` back into an image ``(N, C, *output_size)`` (col2im,
    ``torch.nn.functional.fold``): the adjoint of :func:`unfold`; overlapping windows add up.

    >>> import numpy as np, tapegrad as tg
    >>> tg.fold(tg.Tensor(np.ones((1, 4, 4))), (3, 3), 2)
    Tensor([[[[1., 2., 1.],
              [2., 4., 2.],
              [1., 2., 1.]]]])
    """
    d = len(output_size) if isinstance(output_size, (tuple, list)) else 2
    size = W.ntuple(output_size, d, "output_size", "fold")
    unbatched = len(_shape(input)) == 2
    x = expand_dims(input, 0) if unbatched else input
    kernel, stride = W.ntuple(kernel_size, d, "kernel_size", "fold"), W.ntuple(stride, d, "stride", "fold")
    dilation = W.ntuple(dilation, d, "dilation", "fold")
    W.check_positive(kernel + stride + dilation, "kernel_size, stride and dilation", "fold")
    pads = W.padding_pairs(padding, d, kernel, stride, dilation, "fold")
    shape, k = _shape(x), math.prod(kernel)
    blocks = W.out_sizes(tuple(n + lo + hi for n, (lo, hi) in zip(size, pads)), kernel, stride, dilation)
    if len(shape) != 3 or shape[1] % k or shape[2] != math.prod(blocks):
        raise ValueError(
            f"fold: input of shape {shape} must be (N, C * {k}, {math.prod(blocks)}) for output_size {size}, "
            f"kernel {kernel}, stride {stride}, padding {padding} and dilation {dilation}"
        )
    out = _fold_op(x, output_size=size, kernel_size=kernel, stride=stride, padding=pads, dilation=dilation)
    return squeeze(out, 0) if unbatched else out
