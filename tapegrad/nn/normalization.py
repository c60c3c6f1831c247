"""Normalisation layers: ``LayerNorm``, ``BatchNorm1d``, ``BatchNorm2d``, ``GroupNorm`` (PyTorch's arguments,
initialisation and buffers). Each calls one ``standardize`` op, which saves the input and weight only.

Batch norm keeps ``running_mean``, ``running_var`` and ``num_batches_tracked`` as buffers (in ``state_dict``,
so checkpoints carry them). In training mode it normalises with the batch's statistics and updates the running
ones (``momentum``, or a cumulative average when ``momentum=None``); in evaluation mode it uses the running ones
(or the batch's, with ``track_running_stats=False``).
"""

from __future__ import annotations

import numpy as np

import tapegrad.nn.functional as F

from .._state import is_traced
from .._tensor import Tensor
from ._norm_functions import set_traced_data
from .module import Module

__all__ = ["LayerNorm", "BatchNorm1d", "BatchNorm2d", "GroupNorm"]


def _affine(shape, dtype, weight: bool, bias: bool):
    w = Tensor(np.ones(shape, dtype=dtype), requires_grad=True) if weight else None
    b = Tensor(np.zeros(shape, dtype=dtype), requires_grad=True) if bias else None
    return w, b


class LayerNorm(Module):
    """Standardise over the trailing ``normalized_shape`` axes, then ``* weight + bias`` (ones and zeros at first).

    >>> import numpy as np, tapegrad as tg
    >>> ln = tg.nn.LayerNorm(4)
    >>> y = ln(tg.Tensor(np.arange(8.0).reshape(2, 4)))
    >>> np.round(y.data.mean(axis=1), 12).tolist(), ln.weight.shape
    ([0.0, 0.0], (4,))
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 dtype=np.float64):  # fmt: skip
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = shape, eps, elementwise_affine
        self.weight, self.bias = _affine(shape, dtype, elementwise_affine, elementwise_affine and bias)

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    """Standardise each of ``num_groups`` groups of channels, then ``* weight + bias`` per channel.

    >>> import numpy as np, tapegrad as tg
    >>> tg.nn.GroupNorm(2, 6)(tg.Tensor(np.ones((3, 6, 4, 4)))).shape
    (3, 6, 4, 4)
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, dtype=np.float64):
        super().__init__()
        if num_groups < 1 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_groups={num_groups} must divide num_channels={num_channels}")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.weight, self.bias = _affine((num_channels,), dtype, affine, affine)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm: expected input (N, {self.num_channels}, *), got shape {x.shape}")
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class _BatchNorm(Module):
    _dims: tuple = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, dtype=np.float64):  # fmt: skip
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight, self.bias = _affine((num_features,), dtype, affine, affine)
        if track_running_stats:
            self.register_buffer("running_mean", Tensor(np.zeros(num_features, dtype=dtype)))
            self.register_buffer("running_var", Tensor(np.ones(num_features, dtype=dtype)))
            self.register_buffer("num_batches_tracked", Tensor(np.array(0, dtype=np.int64)))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def reset_running_stats(self) -> None:
        """Running mean 0, variance 1, no batch seen."""
        if self.track_running_stats:
            self.running_mean.data = np.zeros_like(self.running_mean.data)
            self.running_var.data = np.ones_like(self.running_var.data)
            self.num_batches_tracked.data = np.zeros_like(self.num_batches_tracked.data)

    def forward(self, x: Tensor) -> Tensor:
        name = type(self).__name__
        if x.ndim not in self._dims or x.shape[1] != self.num_features:
            dims = " or ".join(f"{n}-D" for n in self._dims)
            raise ValueError(f"{name}: expected a {dims} input with {self.num_features} channels, got shape {x.shape}")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            if is_traced(x):  # inside tg.compile: a new value, returned by nn.functional_call(return_buffers=True)
                set_traced_data(self.num_batches_tracked, self.num_batches_tracked + 1)
            else:
                self.num_batches_tracked.data = self.num_batches_tracked.data + 1
            if self.momentum is None:  # a cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.data)
        batch_stats = self.training or not self.track_running_stats
        running = (self.running_mean, self.running_var) if not batch_stats or self.training else (None, None)
        return F.batch_norm(x, *running, self.weight, self.bias, batch_stats, factor, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over ``(N, C)`` or ``(N, C, L)``: each channel standardised over the batch (and ``L``).

    >>> import numpy as np, tapegrad as tg
    >>> bn = tg.nn.BatchNorm1d(3)
    >>> _ = bn(tg.Tensor(np.random.default_rng(0).normal(2.0, 1.0, (16, 3))))
    >>> int(bn.num_batches_tracked.item()), bool((bn.running_mean.data > 0.1).all())
    (1, True)
    """

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over ``(N, C, H, W)``: each channel standardised over the batch and positions.

    >>> import numpy as np, tapegrad as tg
    >>> tg.nn.BatchNorm2d(6).eval()(tg.Tensor(np.zeros((2, 6, 4, 4)))).shape
    (2, 6, 4, 4)
    """

    _dims = (4,)
