"""Normalisation functions (``tapegrad.nn.functional`` re-exports them): layer, batch and group norm.

Each is one ``standardize`` op (which saves its input and weight only) with the axes and weight shape of its
kind. ``batch_norm`` in training mode also updates the running statistics in place, with PyTorch's unbiased
variance; in evaluation mode it applies them as ``x * scale + shift``.
"""

from __future__ import annotations

import numpy as np

import tapegrad.ops as ops

from .._state import is_traced
from .._tensor import Tensor
from ..errors import TracingError


def _shape(a):
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def _check(v, shape, what, name):
    if v is not None and _shape(v) != shape:
        raise ValueError(f"{name}: {what} must have shape {shape}, got {_shape(v)}")


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Standardise over the last ``len(normalized_shape)`` axes (which must equal ``normalized_shape``), then
    ``* weight + bias`` (each of that shape).

    >>> import tapegrad as tg
    >>> tg.nn.functional.layer_norm(tg.Tensor([[1.0, 3.0]]), (2,), eps=0.0)
    Tensor([[-1.,  1.]])
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or tuple(input.shape[-k:]) != shape or input.ndim < k:
        raise ValueError(f"layer_norm: input of shape {input.shape} does not end in normalized_shape {shape}")
    _check(weight, shape, "weight", "layer_norm")
    _check(bias, shape, "bias", "layer_norm")
    return ops.standardize(input, weight, bias, axis=tuple(range(input.ndim - k, input.ndim)), eps=eps)


def group_norm(input: Tensor, num_groups: int, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Standardise each of ``num_groups`` groups of channels of ``(N, C, *)`` over its channels and positions,
    then ``* weight + bias`` per channel (shape ``(C,)``).

    >>> import numpy as np, tapegrad as tg
    >>> tg.nn.functional.group_norm(tg.Tensor(np.arange(4.0).reshape(1, 4)), 2, eps=0.0)
    Tensor([[-1.,  1., -1.,  1.]])
    """
    if input.ndim < 2:
        raise ValueError(f"group_norm: input must be (N, C, *), got shape {input.shape}")
    n, c = input.shape[:2]
    if num_groups < 1 or c % num_groups:
        raise ValueError(f"group_norm: num_groups={num_groups} must divide the {c} channels")
    _check(weight, (c,), "weight", "group_norm")
    _check(bias, (c,), "bias", "group_norm")
    rest = input.shape[2:]
    grouped = (n, num_groups, c // num_groups) + rest
    per_channel = (num_groups, c // num_groups) + (1,) * len(rest)
    w = None if weight is None else ops.reshape(weight, per_channel)
    b = None if bias is None else ops.reshape(bias, per_channel)
    axes = tuple(range(2, len(grouped)))
    return ops.reshape(ops.standardize(ops.reshape(input, grouped), w, b, axis=axes, eps=eps), input.shape)


def _update(running, stat, momentum):
    if running is None:
        return
    if isinstance(stat, Tensor):  # inside tg.compile: the statistics are ops, the buffer gets a new value
        old = running if isinstance(running, Tensor) else Tensor(running)
        new = (1.0 - momentum) * old + momentum * ops.astype(stat, dtype=old.dtype)
        set_traced_data(running, new)
        return
    old = running.data if isinstance(running, Tensor) else running
    new = (1.0 - momentum) * old + momentum * stat.astype(old.dtype)
    if isinstance(running, Tensor):
        running.data = new
    else:
        running[...] = new


def set_traced_data(buffer, new) -> None:
    """Give a buffer a new value inside a function that tg.compile traces: the value is an op's output, which
    ``nn.functional_call(..., return_buffers=True)`` returns (a compiled program has no side effects)."""
    if not (isinstance(buffer, Tensor) and is_traced(buffer)):
        raise TracingError(
            "a running statistic (batch norm in training mode) is updated inside a function tg.compile traces, "
            "but it is a constant of the program, so its later updates would be lost: pass the model's buffers "
            "with its parameters, nn.functional_call(model, {**params, **buffers}, x, return_buffers=True), and "
            "return the new buffers (or call model.eval() to use the running statistics)"
        )
    buffer._data = new._data
    buffer._node = None


def batch_norm(
    input: Tensor,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel of ``(N, C, *)`` over the batch and positions: with the batch's statistics while
    ``training`` (and ``running = (1 - momentum) * running + momentum * batch``, the variance unbiased, in place),
    with ``running_mean``/``running_var`` otherwise; then ``* weight + bias`` per channel.

    >>> import numpy as np, tapegrad as tg
    >>> mean, var = np.zeros(1), np.ones(1)
    >>> tg.nn.functional.batch_norm(tg.Tensor([[1.0], [3.0]]), mean, var, training=True, eps=0.0)
    Tensor([[-1.],
            [ 1.]])
    >>> mean, var
    (array([0.2]), array([1.1]))
    """
    if input.ndim < 2:
        raise ValueError(f"batch_norm: input must be (N, C, *), got shape {input.shape}")
    c = input.shape[1]
    for what, v in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        _check(v, (c,), what, "batch_norm")
    per_channel = (c,) + (1,) * (input.ndim - 2)
    w = None if weight is None else ops.reshape(weight, per_channel)
    b = None if bias is None else ops.reshape(bias, per_channel)
    axes = (0,) + tuple(range(2, input.ndim))
    if training:
        if input.size // c < 2:
            raise ValueError(
                f"batch_norm: training needs more than 1 value per channel, got input of shape {input.shape}"
            )
        if is_traced(input):  # the statistics as ops (no gradient flows into the running buffers)
            x = input.detach()
            _update(running_mean, ops.mean(x, axis=axes), momentum)
            _update(running_var, ops.var(x, axis=axes, ddof=1), momentum)
        else:
            x = input.data
            _update(running_mean, x.mean(axis=axes), momentum)
            _update(running_var, x.var(axis=axes, ddof=1), momentum)
        return ops.standardize(input, w, b, axis=axes, eps=eps)
    if running_mean is None or running_var is None:
        raise ValueError("batch_norm: evaluation (training=False) needs running_mean and running_var")
    mean = np.asarray(running_mean.data if isinstance(running_mean, Tensor) else running_mean).reshape(per_channel)
    var = np.asarray(running_var.data if isinstance(running_var, Tensor) else running_var).reshape(per_channel)
    rstd = (1.0 / np.sqrt(var + eps)).astype(input.dtype)
    scale = rstd if w is None else w * rstd
    shift = -mean.astype(input.dtype) * scale
    return input * scale + (shift if b is None else shift + b)
