"""Sliding windows over the trailing ``d`` axes, in any array library: what convolution and pooling are made of.

Arrays have the layout ``(N, C, *spatial)``. Padding is one ``(lo, hi)`` pair per spatial axis; ``hi`` may be
negative, which crops instead (a transposed convolution's ``output_padding`` needs it). The windows of an array
are gathered with one strided slice per kernel offset, stacked into ``(N, C, K, *out)`` with ``K`` the kernel's
size: the same copy ``sliding_window_view`` plus a reshape makes, in basic indexing every library has (measured
as fast in NumPy: see ``benchmarks/conv.py``). Their adjoint adds each offset's slice back into place.

Also here: the argument normalisation the public functions share (ints or tuples, ``"same"``/``"valid"``,
``ceil_mode``), so the ops see tuples of ints and pairs only.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


# -- arrays ---------------------------------------------------------------------------------------------
def pad(x, pads, value, xp):
    """``x`` with ``pads[i] = (lo, hi)`` elements of ``value`` around spatial axis ``i`` (``hi < 0`` crops)."""
    d = len(pads)
    if all(lo == 0 and hi == 0 for lo, hi in pads):
        return x
    if any(hi < 0 for _, hi in pads):
        x = x[(...,) + tuple(slice(0, n + hi) if hi < 0 else slice(None) for n, (_, hi) in zip(x.shape[-d:], pads))]
        pads = tuple((lo, max(hi, 0)) for lo, hi in pads)
        if all(lo == 0 and hi == 0 for lo, hi in pads):
            return x
    shape = tuple(x.shape[:-d]) + tuple(n + lo + hi for n, (lo, hi) in zip(x.shape[-d:], pads))
    out = xp.full(shape, value, dtype=x.dtype)
    out[(...,) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape[-d:], pads))] = x
    return out


def unpad(x, pads, sizes, xp):
    """The adjoint of :func:`pad` (value 0): crop the padding, and zero-extend where ``hi`` cropped."""
    d = len(pads)
    x = x[(...,) + tuple(slice(lo, lo + min(n, m - lo)) for n, m, (lo, _) in zip(sizes, x.shape[-d:], pads))]
    if tuple(x.shape[-d:]) == tuple(sizes):
        return x
    return pad(x, tuple((0, n - m) for n, m in zip(sizes, x.shape[-d:])), 0, xp)


def out_sizes(sizes, kernel, stride, dilation):
    """The number of windows along each axis of a (padded) array of spatial ``sizes``."""
    return tuple((n - dl * (k - 1) - 1) // s + 1 for n, k, s, dl in zip(sizes, kernel, stride, dilation))


def _offsets(kernel, stride, dilation, outs):
    for offset in itertools.product(*(range(k) for k in kernel)):
        yield (...,) + tuple(
            slice(o * dl, o * dl + s * (m - 1) + 1, s) for o, s, dl, m in zip(offset, stride, dilation, outs)
        )


def windows(x, kernel, stride, dilation, xp):
    """The windows of the (already padded) ``x`` of shape ``(N, C, *sizes)``: an array ``(N, C, K, *out)``."""
    d = len(kernel)
    outs = out_sizes(x.shape[-d:], kernel, stride, dilation)
    return xp.stack([x[index] for index in _offsets(kernel, stride, dilation, outs)], axis=-d - 1)


def unwindows(cols, sizes, kernel, stride, dilation, xp):
    """The adjoint of :func:`windows`: ``cols`` ``(N, C, K, *out)`` added back into an array of ``sizes``."""
    d = len(kernel)
    outs = tuple(cols.shape[-d:])
    covered = tuple(s * (m - 1) + dl * (k - 1) + 1 for m, k, s, dl in zip(outs, kernel, stride, dilation))
    shape = tuple(cols.shape[: -d - 1]) + tuple(max(n, c) for n, c in zip(sizes, covered))
    out = xp.zeros(shape, dtype=cols.dtype)
    head = (slice(None),) * (cols.ndim - d - 1)
    for k, index in enumerate(_offsets(kernel, stride, dilation, outs)):
        out[index] += cols[head + (k, ...)]
    if tuple(shape[-d:]) != tuple(sizes):
        out = out[(...,) + tuple(slice(0, n) for n in sizes)]
    return out


# -- arguments ------------------------------------------------------------------------------------------
def ntuple(value, d, what, op):
    """An int or a sequence of ``d`` ints, as a tuple of ``d`` ints."""
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,) * d
    if len(items) != d or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items):
        raise ValueError(f"{op}: {what} must be an int or {d} ints, got {value!r}")
    return tuple(int(v) for v in items)


def padding_pairs(padding, d, kernel, stride, dilation, op):
    """``padding`` (an int, ``d`` ints, ``"valid"`` or ``"same"``) as one ``(lo, hi)`` pair per axis."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * d
        if padding != "same":
            raise ValueError(f"{op}: padding must be an int, a tuple of ints, 'same' or 'valid', got {padding!r}")
        if any(s != 1 for s in stride):
            raise ValueError(f"{op}: padding='same' needs stride 1 (got {stride}); pad explicitly for strides")
        total = tuple(dl * (k - 1) for k, dl in zip(kernel, dilation))
        return tuple((t // 2, t - t // 2) for t in total)  # PyTorch puts the odd one at the end
    pads = ntuple(padding, d, "padding", op)
    if any(p < 0 for p in pads):
        raise ValueError(f"{op}: padding must be >= 0, got {padding!r}")
    return tuple((p, p) for p in pads)


def check_positive(values, what, op):
    if any(v < 1 for v in values):
        raise ValueError(f"{op}: {what} must be >= 1, got {values}")


def pool_padding(sizes, kernel, stride, padding, dilation, ceil_mode, op):
    """(pairs, outs) for pooling: PyTorch's rule that every window starts inside the input or its left padding."""
    if any(2 * p > k for p, k in zip(padding, kernel)):
        raise ValueError(f"{op}: padding {padding} must be at most half the kernel size {kernel}")
    pairs, outs = [], []
    for n, k, s, p, dl in zip(sizes, kernel, stride, padding, dilation):
        span = n + 2 * p - dl * (k - 1) - 1
        if span < 0:
            raise ValueError(
                f"{op}: the input's spatial size {tuple(sizes)} is smaller than the kernel {kernel} "
                f"(dilation {dilation}) after padding {padding}"
            )
        m = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (m - 1) * s >= n + p:
            m -= 1
        pairs.append((p, p + max(0, (m - 1) * s + dl * (k - 1) + 1 - (n + 2 * p))))
        outs.append(m)
    return tuple(pairs), tuple(outs)


def kernel_size(kernel) -> int:
    return math.prod(kernel)
