"""Losses and stateless layer functions on tensors, built from tapegrad's differentiable ops.

Every loss takes ``reduction``: ``"mean"`` (the default, averaged over the batch), ``"sum"``, or ``"none"``
(one value per example). Gradients come from the ops they are written with, so they are exact and
second derivatives work too.
"""

from __future__ import annotations

import numpy as np

from ..ops import (
    log_softmax,
    logsumexp,
    matmul,
    mean,
    reshape,
    stack,
    sum,
    transpose,
)
from ..tensor import Tensor

__all__ = ["mse_loss", "cross_entropy", "binary_cross_entropy_with_logits", "linear", "dropout"]

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(loss: Tensor, reduction: str, name: str) -> Tensor:
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{name}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def _tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor(x)


def mse_loss(input: Tensor, target, reduction: str = "mean") -> Tensor:
    """Squared error ``(input - target) ** 2``, reduced; the shapes must match.

    >>> import tapegrad as tg
    >>> tg.nn.mse_loss(tg.Tensor([1.0, 2.0]), tg.Tensor([0.0, 4.0]))
    Tensor(2.5)
    """
    input, target = _tensor(input), _tensor(target)
    if input.shape != target.shape:
        raise ValueError(
            f"mse_loss: input shape {input.shape} and target shape {target.shape} differ; "
            "reshape one of them (broadcasting them silently is a common bug)"
        )
    diff = input - target
    return _reduce(diff * diff, reduction, "mse_loss")


def cross_entropy(logits: Tensor, target, reduction: str = "mean") -> Tensor:
    """Cross-entropy of integer class labels under ``softmax(logits)``: ``-log_softmax(logits)[i, target[i]]``.

    ``logits`` has shape ``(N, C)`` (or ``(C,)`` for one example) and ``target`` integer classes in
    ``[0, C)`` of shape ``(N,)`` (or a scalar). The log-softmax subtracts the row maximum first, so large
    logits do not overflow.

    >>> import numpy as np, tapegrad as tg
    >>> logits = tg.Tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 1000.0]])
    >>> tg.nn.cross_entropy(logits, np.array([0, 2]), reduction="none")
    Tensor([0.23954477, 0.        ])
    """
    logits = _tensor(logits)
    labels = np.asarray(target.data if isinstance(target, Tensor) else target)
    if labels.dtype.kind not in "iu":
        raise TypeError(
            f"cross_entropy: target must hold integer class indices, got dtype {labels.dtype}; "
            "for probabilities or 0/1 targets use binary_cross_entropy_with_logits"
        )
    single = logits.ndim == 1
    if single:
        logits = reshape(logits, (1, -1))
        labels = labels.reshape(1)
    if logits.ndim != 2 or labels.shape != (logits.shape[0],):
        raise ValueError(
            f"cross_entropy: logits of shape {logits.shape} need targets of shape ({logits.shape[0]},), "
            f"got {labels.shape}"
        )
    n_classes = logits.shape[1]
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        raise ValueError(
            f"cross_entropy: target classes must be in [0, {n_classes}), got values in [{labels.min()}, {labels.max()}]"
        )
    picked = log_softmax(logits, axis=-1)[np.arange(len(labels)), labels]
    loss = 0.0 - picked  # rather than -picked: a certain, correct prediction reads 0., not -0.
    if single:
        loss = reshape(loss, ())
    return _reduce(loss, reduction, "cross_entropy")


def binary_cross_entropy_with_logits(logits: Tensor, target, reduction: str = "mean") -> Tensor:
    """Binary cross-entropy of ``target`` in [0, 1] under ``sigmoid(logits)``, in the stable form.

    ``-t log sigmoid(x) - (1 - t) log(1 - sigmoid(x))`` equals ``log(1 + exp(x)) - t x``, computed as
    ``logsumexp([0, x]) - t x``: no overflow for large ``|x|``, and the gradient ``sigmoid(x) - t`` is exact
    everywhere (also at ``x = 0``).

    >>> import tapegrad as tg
    >>> tg.nn.binary_cross_entropy_with_logits(tg.Tensor([0.0, 800.0]), tg.Tensor([1.0, 1.0]), reduction="none")
    Tensor([0.69314718, 0.        ])
    """
    logits, target = _tensor(logits), _tensor(target)
    if logits.shape != target.shape:
        raise ValueError(
            f"binary_cross_entropy_with_logits: logits shape {logits.shape} and target shape {target.shape} differ"
        )
    zeros = Tensor(np.zeros(logits.shape, dtype=logits.dtype))
    softplus = logsumexp(stack([zeros, logits], axis=0), axis=0)  # log(1 + exp(x)), stably
    return _reduce(softplus - target * logits, reduction, "binary_cross_entropy_with_logits")


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias``, with ``weight`` of shape ``(out_features, in_features)``.

    >>> import tapegrad as tg
    >>> tg.nn.functional.linear(tg.Tensor([[1.0, 2.0]]), tg.Tensor([[1.0, 1.0]]), tg.Tensor([0.5]))
    Tensor([[3.5]])
    """
    out = matmul(x, transpose(weight))
    return out if bias is None else out + bias


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
    mask = (rng.random(x.shape) >= p).astype(x.dtype) / x.dtype.type(1 - p)
    return x * mask
