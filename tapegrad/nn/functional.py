"""Stateless layer functions and losses on tensors, PyTorch's ``torch.nn.functional`` by name and arguments.

- activations: ``relu``, ``tanh``, ``sigmoid``, ``gelu``, ``silu``, ``leaky_relu``, ``elu``, ``selu``,
  ``softplus``, ``logsigmoid``, ``hardtanh``, ``relu6``, ``softmax``, ``log_softmax``;
- linear maps and lookups: ``linear``, ``embedding``, ``one_hot``, ``dropout``, ``pad``;
- convolution and pooling (tapegrad's ops, re-exported): ``conv1d``, ``conv2d``, ``conv_transpose1d``,
  ``conv_transpose2d``, ``unfold``, ``fold``, ``max_pool1d``/``2d``, ``avg_pool1d``/``2d``,
  ``adaptive_avg_pool1d``/``2d``;
- normalisation: ``layer_norm``, ``batch_norm``, ``group_norm``;
- attention: ``scaled_dot_product_attention``;
- losses: ``cross_entropy``, ``nll_loss``, ``binary_cross_entropy``, ``binary_cross_entropy_with_logits``,
  ``mse_loss``, ``l1_loss``, ``huber_loss``, ``smooth_l1_loss``, ``kl_div``, ``cosine_embedding_loss``.

Everything is written with tapegrad's public ops, so gradients are exact and second derivatives work. Functions
that draw random numbers (``dropout``) take a ``numpy.random.Generator``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import tapegrad.ops as ops
import tapegrad.random as _random

from .._tensor import Tensor
from ..ops import (  # noqa: F401  (re-exported)
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    avg_pool1d,
    avg_pool2d,
    conv1d,
    conv2d,
    conv_transpose1d,
    conv_transpose2d,
    elu,
    fold,
    gelu,
    hardtanh,
    leaky_relu,
    max_pool1d,
    max_pool2d,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softplus,
    tanh,
    unfold,
)
from ..ops import log_sigmoid as logsigmoid
from ._attention_functions import scaled_dot_product_attention  # noqa: F401
from ._indices import in_range
from ._linear_op import linear as _linear_op
from ._loss_functions import (  # noqa: F401
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from ._norm_functions import batch_norm, group_norm, layer_norm  # noqa: F401

__all__ = [
    "relu",
    "tanh",
    "sigmoid",
    "gelu",
    "silu",
    "leaky_relu",
    "elu",
    "selu",
    "softplus",
    "logsigmoid",
    "hardtanh",
    "relu6",
    "softmax",
    "log_softmax",
    "linear",
    "embedding",
    "one_hot",
    "dropout",
    "pad",
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "unfold",
    "fold",
    "max_pool1d",
    "max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "layer_norm",
    "batch_norm",
    "group_norm",
    "scaled_dot_product_attention",
    "cross_entropy",
    "nll_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "mse_loss",
    "l1_loss",
    "huber_loss",
    "smooth_l1_loss",
    "kl_div",
    "cosine_embedding_loss",
]


def _softmax_dim(x, dim, name):
    if dim is None:  # PyTorch's deprecated implicit choice
        dim = 0 if x.ndim in (0, 1, 3) else 1
        warnings.warn(f"{name}: implicit dimension choice is deprecated; pass dim={dim}", UserWarning, stacklevel=3)
    return dim


def softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``, computed stably (``dtype``: cast first).

    >>> import tapegrad as tg
    >>> tg.nn.functional.softmax(tg.Tensor([[0.0, 0.0]]), dim=1)
    Tensor([[0.5, 0.5]])
    """
    x = input if dtype is None else ops.astype(input, dtype=np.dtype(dtype))
    return ops.softmax(x, axis=_softmax_dim(x, dim, "softmax"))


def log_softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """``x - logsumexp(x)`` along ``dim``, computed stably (``dtype``: cast first).

    >>> import tapegrad as tg
    >>> tg.nn.functional.log_softmax(tg.Tensor([0.0, 0.0]), dim=0)
    Tensor([-0.69314718, -0.69314718])
    """
    x = input if dtype is None else ops.astype(input, dtype=np.dtype(dtype))
    return ops.log_softmax(x, axis=_softmax_dim(x, dim, "log_softmax"))


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias``, with ``weight`` of shape ``(out_features, in_features)``: with a bias of shape
    ``(out_features,)`` one op (one entry of the tape, the bias added into the product's own buffer, as
    PyTorch's ``addmm``), else the product and the sum.

    >>> import tapegrad as tg
    >>> tg.nn.functional.linear(tg.Tensor([[1.0, 2.0]]), tg.Tensor([[1.0, 1.0]]), tg.Tensor([0.5]))
    Tensor([[3.5]])
    """
    if (
        bias is not None
        and weight.ndim == 2
        and getattr(bias, "shape", None) == (weight.shape[0],)
        and getattr(x, "ndim", 0) >= 1
    ):
        return _linear_op(x, weight, bias)  # one entry, the bias added into the product's own buffer
    # any other bias (one that broadcasts, (1,) say) is summed back to its shape by the sum's rule
    if x.ndim > 2:  # (..., in) as one (rows, in) matrix: one product each way, no batch of small ones to sum
        rows = ops.reshape(x, (math.prod(x.shape[:-1]), x.shape[-1]))  # counted: -1 is ambiguous with no features
        out = ops.reshape(ops.matmul(rows, ops.transpose(weight)), x.shape[:-1] + (weight.shape[0],))
    else:
        out = ops.matmul(x, ops.transpose(weight))
    return out if bias is None else out + bias


def _indices(x, what) -> np.ndarray:
    idx = np.asarray(x._data if isinstance(x, Tensor) else x)  # read to check it (inside tg.compile: when traced)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"{what}: indices must be integers, got dtype {idx.dtype}")
    return idx


def embedding(input, weight: Tensor, padding_idx: int | None = None, max_norm=None) -> Tensor:
    """Rows of ``weight`` ``(num_embeddings, dim)`` at the integer indices ``input``: shape ``input.shape +
    (dim,)``. Rows at ``padding_idx`` are looked up but get no gradient.

    >>> import numpy as np, tapegrad as tg
    >>> tg.nn.functional.embedding(np.array([[0, 2]]), tg.Tensor(np.arange(6.0).reshape(3, 2)))
    Tensor([[[0., 1.],
             [4., 5.]]])
    """
    if max_norm is not None:
        raise NotImplementedError("embedding: max_norm (renormalising rows in place) is not supported")
    idx = _indices(input, "embedding")
    n = weight.shape[0]
    # a negative index is refused, as PyTorch does, never a row counted from the end
    if isinstance(input, Tensor):  # its values only through ops: inside tg.compile they change from call to call
        input = in_range(input, n, "embedding: indices")
        rows = weight[input]
        if padding_idx is not None:
            padded = ops.expand_dims(ops.equal(input, padding_idx % n), -1)
            rows = ops.where(padded, rows.detach(), rows)
        return rows
    rows = weight[in_range(idx, n, "embedding: indices")]
    if padding_idx is not None:
        padded = (idx == padding_idx % n)[..., None]
        if padded.any():
            rows = ops.where(padded, rows.detach(), rows)  # a select: the padding row's gradient is exactly 0
    return rows


def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """Integer classes to one-hot rows (int64, no gradient): shape ``tensor.shape + (num_classes,)``.

    >>> import numpy as np, tapegrad as tg
    >>> tg.nn.functional.one_hot(np.array([0, 2]), 3)
    Tensor([[1, 0, 0],
            [0, 0, 1]])
    """
    idx = _indices(tensor, "one_hot")
    if num_classes < 0:
        num_classes = int(idx.max()) + 1 if idx.size else 0
    if idx.size and (idx.min() < 0 or idx.max() >= num_classes):
        raise ValueError(f"one_hot: classes must be in [0, {num_classes}), got [{idx.min()}, {idx.max()}]")
    return Tensor((idx[..., None] == np.arange(num_classes)).astype(np.int64))


def dropout(x: Tensor, p: float, rng: np.random.Generator, training: bool = True) -> Tensor:
    """Inverted dropout: zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    The expected value is unchanged, so evaluation (``training=False``) is the identity.

    >>> import numpy as np, tapegrad as tg
    >>> y = tg.nn.functional.dropout(tg.Tensor(np.ones(8)), 0.5, np.random.default_rng(0))
    >>> sorted(set(y.tolist()))
    [0.0, 2.0]
    """
    if not 0 <= p <= 1:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0:
        return x
    if p == 1:
        return x * np.zeros(x.shape, dtype=x.dtype)
    return x * _keep_mask(rng, x.shape, p, x.dtype)


def _keep_mask(rng, shape, p, dtype):
    """``(rng.random(shape) >= p) / (1 - p)`` in ``dtype``, drawn with an op (``tg.random``) so that a compiled
    program draws a new mask on every call."""
    return ops.astype(ops.greater_equal(_random.random(rng, shape), p), dtype=dtype) / dtype.type(1 - p)


_PAD_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def pad(input: Tensor, pad, mode: str = "constant", value: float = 0.0) -> Tensor:
    """Pad the last ``len(pad) // 2`` axes, PyTorch's way: ``pad = (left, right)`` for the last axis, then
    ``(top, bottom)`` for the one before, ...; ``mode`` is ``"constant"`` (negative widths crop),
    ``"reflect"``, ``"replicate"`` or ``"circular"``.

    >>> import tapegrad as tg
    >>> tg.nn.functional.pad(tg.Tensor([[1.0, 2.0, 3.0]]), (2, 1), mode="reflect")
    Tensor([[3., 2., 1., 2., 3., 2.]])
    """
    widths = tuple(int(p) for p in pad)
    if len(widths) % 2 or len(widths) // 2 > input.ndim:
        raise ValueError(f"pad: needs pairs for at most {input.ndim} axes, got {pad!r}")
    if mode != "constant" and mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}")
    x = input
    for k in range(len(widths) // 2):
        axis, (lo, hi) = x.ndim - 1 - k, widths[2 * k : 2 * k + 2]
        n = x.shape[axis]
        head = (slice(None),) * axis
        if mode == "constant":
            x = x[head + (slice(max(-lo, 0), n - max(-hi, 0)),)] if lo < 0 or hi < 0 else x
            parts = []
            for width in (max(lo, 0), max(hi, 0)):
                shape = x.shape[:axis] + (width,) + x.shape[axis + 1 :]
                parts.append(Tensor(np.full(shape, value, dtype=x.dtype)))
            x = ops.concatenate([parts[0], x, parts[1]], axis=axis) if lo > 0 or hi > 0 else x
        else:
            if min(lo, hi) < 0 or (mode == "reflect" and max(lo, hi) >= n) or (mode == "circular" and max(lo, hi) > n):
                raise ValueError(f"pad: {mode} padding {(lo, hi)} is too wide (or negative) for an axis of {n}")
            x = x[head + (np.pad(np.arange(n), (lo, hi), mode=_PAD_MODES[mode]),)]
    return x
