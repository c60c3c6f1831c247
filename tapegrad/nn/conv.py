"""Convolution and pooling layers in PyTorch's layout ``(N, C, *spatial)``, names, arguments and initialisation:
``Conv1d``, ``Conv2d``, ``ConvTranspose1d``, ``ConvTranspose2d``, ``MaxPool1d``/``2d``, ``AvgPool1d``/``2d``,
``AdaptiveAvgPool1d``/``2d``. They call the convolution and pooling ops (``tapegrad.ops.conv``, ``.pool``),
which save only the input and weight.

Weights are ``(out_channels, in_channels / groups, *kernel)`` (transposed: ``(in_channels, out_channels /
groups, *kernel)``), weight and bias drawn from ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with ``fan_in`` the
weight's ``shape[1] * prod(kernel)``, as PyTorch's default (``kaiming_uniform_`` with ``a = sqrt(5)``) does.
"""

from __future__ import annotations

import math

import numpy as np

import tapegrad.nn.functional as F

from .._tensor import Tensor
from .init import generator
from .module import Module

__all__ = [
    "Conv1d",
    "Conv2d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "MaxPool1d",
    "MaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(value, d: int, what: str, name: str) -> tuple:
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,) * d
    if len(items) != d or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items):
        raise ValueError(f"{name}: {what} must be an int or {d} ints, got {value!r}")
    return tuple(int(v) for v in items)


def _padding_pairs(padding, kernel, stride, dilation, name) -> tuple:
    """The (before, after) padding of each spatial axis, checked as PyTorch checks it when a layer is built."""
    if padding == "valid":
        return tuple((0, 0) for _ in kernel)
    if padding == "same":
        if any(s != 1 for s in stride):
            raise ValueError(f"{name}: padding='same' needs stride 1 (got {stride}); pad explicitly for strides")
        total = [dl * (k - 1) for k, dl in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in total)  # the odd one at the end, as PyTorch
    if isinstance(padding, str) or any(p < 0 for p in padding):
        raise ValueError(f"{name}: padding must be ints >= 0, 'same' or 'valid', got {padding!r}")
    return tuple((p, p) for p in padding)


class _ConvNd(Module):
    _d = 0
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                 padding_mode, rng, dtype, output_padding=0):  # fmt: skip
        super().__init__()
        name, d = type(self).__name__, self._d
        if in_channels < 1 or out_channels < 1 or groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(
                f"{name}: groups={groups} must divide in_channels={in_channels} and out_channels={out_channels}"
            )
        if padding_mode not in _PADDING_MODES or (self._transposed and padding_mode != "zeros"):
            allowed = ("zeros",) if self._transposed else _PADDING_MODES
            raise ValueError(f"{name}: padding_mode must be one of {allowed}, got {padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _ntuple(kernel_size, d, "kernel_size", name)
        self.stride, self.dilation = _ntuple(stride, d, "stride", name), _ntuple(dilation, d, "dilation", name)
        if min(self.kernel_size + self.stride + self.dilation) < 1:
            raise ValueError(f"{name}: kernel_size, stride and dilation must be >= 1")
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, d, "padding", name)
        self._pairs = _padding_pairs(self.padding, self.kernel_size, self.stride, self.dilation, name)
        self.padding_mode = padding_mode
        self.output_padding = _ntuple(output_padding, d, "output_padding", name)
        shape = (in_channels, out_channels // groups) if self._transposed else (out_channels, in_channels // groups)
        shape += self.kernel_size
        bound = 1.0 / math.sqrt(shape[1] * math.prod(self.kernel_size))
        gen = generator(rng)
        self.weight = Tensor(gen.uniform(-bound, bound, shape).astype(dtype), requires_grad=True)
        self.bias = Tensor(gen.uniform(-bound, bound, out_channels).astype(dtype), requires_grad=True) if bias else None

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._d:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._d:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode!r}"
        return s


class _Conv(_ConvNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", rng=None, dtype=np.float64):  # fmt: skip
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, rng, dtype)  # fmt: skip

    def forward(self, x: Tensor) -> Tensor:
        conv = F.conv1d if self._d == 1 else F.conv2d
        if self.padding_mode == "zeros":
            return conv(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        widths = tuple(w for lo_hi in reversed(self._pairs) for w in lo_hi)  # F.pad wants the last axis first
        x = F.pad(x, widths, mode=self.padding_mode)
        return conv(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


class Conv1d(_Conv):
    """1-D convolution over ``(N, C_in, L)`` (or ``(C_in, L)``): PyTorch's ``Conv1d``.

    >>> import numpy as np, tapegrad as tg
    >>> conv = tg.nn.Conv1d(2, 4, 3, padding="same", rng=0)
    >>> conv.weight.shape, conv(tg.Tensor(np.ones((5, 2, 7)))).shape
    ((4, 2, 3), (5, 4, 7))
    """

    _d = 1


class Conv2d(_Conv):
    """2-D convolution over ``(N, C_in, H, W)`` (or ``(C_in, H, W)``): PyTorch's ``Conv2d`` (``stride``,
    ``padding`` as ints, pairs, ``"same"`` or ``"valid"``, ``dilation``, ``groups``, ``bias``, ``padding_mode``).

    >>> import numpy as np, tapegrad as tg
    >>> conv = tg.nn.Conv2d(1, 6, 5, padding=2, rng=0)
    >>> conv(tg.Tensor(np.ones((8, 1, 28, 28)))).shape
    (8, 6, 28, 28)
    """

    _d = 2


class _ConvTranspose(_ConvNd):
    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", rng=None,
                 dtype=np.float64):  # fmt: skip
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple of ints, got {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, rng, dtype, output_padding)  # fmt: skip

    def forward(self, x: Tensor, output_size=None) -> Tensor:
        extra = self.output_padding if output_size is None else self._output_padding(x, output_size)
        conv = F.conv_transpose1d if self._d == 1 else F.conv_transpose2d
        return conv(x, self.weight, self.bias, self.stride, self.padding, extra, self.groups, self.dilation)

    def _output_padding(self, x, output_size):
        d, name = self._d, type(self).__name__
        size = tuple(output_size)[-d:]
        if len(size) != d:
            raise ValueError(f"{name}: output_size must give the {d} spatial sizes, got {output_size!r}")
        extra = []
        for n, want, k, s, p, dl in zip(x.shape[-d:], size, self.kernel_size, self.stride, self.padding,
                                         self.dilation):  # fmt: skip
            low = (n - 1) * s - 2 * p + dl * (k - 1) + 1
            if not low <= want < low + s:
                raise ValueError(f"{name}: output_size {size} is not in the reachable range [{low}, {low + s - 1}]")
            extra.append(want - low)
        return tuple(extra)


class ConvTranspose1d(_ConvTranspose):
    """The transposed 1-D convolution: PyTorch's ``ConvTranspose1d``.

    >>> import numpy as np, tapegrad as tg
    >>> tg.nn.ConvTranspose1d(2, 3, 4, stride=2, padding=1, rng=0)(tg.Tensor(np.ones((1, 2, 5)))).shape
    (1, 3, 10)
    """

    _d = 1


class ConvTranspose2d(_ConvTranspose):
    """The transposed 2-D convolution (an upsampling learned layer): PyTorch's ``ConvTranspose2d``; ``forward``
    takes ``output_size`` to pick the ``output_padding``.

    >>> import numpy as np, tapegrad as tg
    >>> up = tg.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, rng=0)
    >>> up(tg.Tensor(np.ones((1, 4, 5, 5))), output_size=(10, 10)).shape
    (1, 2, 10, 10)
    """

    _d = 2


class _MaxPool(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        if return_indices:
            raise NotImplementedError(f"{type(self).__name__}: return_indices=True is not supported")
        self.kernel_size, self.stride, self.padding = kernel_size, kernel_size if stride is None else stride, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        pool = F.max_pool1d if self._d == 1 else F.max_pool2d
        return pool(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPool):
    """The maximum of each window along ``L`` of ``(N, C, L)``.

    >>> import tapegrad as tg
    >>> tg.nn.MaxPool1d(2)(tg.Tensor([[[1.0, 3.0, 2.0, 0.0]]]))
    Tensor([[[3., 2.]]])
    """

    _d = 1


class MaxPool2d(_MaxPool):
    """The maximum of each window of ``(N, C, H, W)`` (``stride`` defaults to the kernel size).

    >>> import numpy as np, tapegrad as tg
    >>> tg.nn.MaxPool2d(2)(tg.Tensor(np.ones((1, 6, 28, 28)))).shape
    (1, 6, 14, 14)
    """

    _d = 2


class _AvgPool(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):  # fmt: skip
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, kernel_size if stride is None else stride, padding
        self.ceil_mode, self.count_include_pad, self.divisor_override = ceil_mode, count_include_pad, divisor_override

    def forward(self, x: Tensor) -> Tensor:
        if self._d == 1:
            return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                            self.divisor_override)  # fmt: skip

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPool):
    """The mean of each window along ``L`` of ``(N, C, L)``.

    >>> import tapegrad as tg
    >>> tg.nn.AvgPool1d(2)(tg.Tensor([[[1.0, 3.0, 2.0, 0.0]]]))
    Tensor([[[2., 1.]]])
    """

    _d = 1

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)


class AvgPool2d(_AvgPool):
    """The mean of each window of ``(N, C, H, W)``, with PyTorch's divisors.

    >>> import numpy as np, tapegrad as tg
    >>> tg.nn.AvgPool2d(2)(tg.Tensor(np.ones((1, 1, 4, 4)))).shape
    (1, 1, 2, 2)
    """

    _d = 2


class _AdaptiveAvgPool(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        pool = F.adaptive_avg_pool1d if self._d == 1 else F.adaptive_avg_pool2d
        return pool(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPool):
    """Average ``(N, C, L)`` down to ``(N, C, output_size)``.

    >>> import numpy as np, tapegrad as tg
    >>> tg.nn.AdaptiveAvgPool1d(3)(tg.Tensor(np.ones((1, 2, 7)))).shape
    (1, 2, 3)
    """

    _d = 1


class AdaptiveAvgPool2d(_AdaptiveAvgPool):
    """Average ``(N, C, H, W)`` down to ``output_size`` (``1``: global average pooling).

    >>> import numpy as np, tapegrad as tg
    >>> tg.nn.AdaptiveAvgPool2d((1, 1))(tg.Tensor(np.ones((2, 8, 5, 5)))).shape
    (2, 8, 1, 1)
    """

    _d = 2
