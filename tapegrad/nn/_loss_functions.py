"""Loss functions (``tapegrad.nn.functional`` re-exports them), PyTorch's definitions and arguments.

Every loss takes ``reduction``: ``"mean"`` (the default), ``"sum"`` or ``"none"`` (one value per element or
example); ``kl_div`` also ``"batchmean"``. Losses taking a class ``weight`` take it as their third positional
argument, as PyTorch does, and everything else by keyword. Class weights and indices are constants (no
gradient); inputs, probability targets and ``pos_weight`` are differentiated. Gradients come from the ops the
losses are written with, so they are exact and second derivatives work.
"""

from __future__ import annotations

import numpy as np

import tapegrad.ops as ops

from .._tensor import Tensor

_REDUCTIONS = ("mean", "sum", "none")


def _tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor(x)


def _reduce(loss: Tensor, reduction: str, name: str) -> Tensor:
    if reduction == "mean":
        return ops.mean(loss)
    if reduction == "sum":
        return ops.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{name}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def _check_reduction(reduction, name, allowed=_REDUCTIONS):
    if reduction not in allowed:
        raise ValueError(f"{name}: reduction must be one of {allowed}, got {reduction!r}")


def _same_shape(a: Tensor, b: Tensor, name: str, first="input", second="target") -> None:
    if a.shape != b.shape:
        raise ValueError(
            f"{name}: {first} shape {a.shape} and {second} shape {b.shape} differ; "
            "reshape one of them (broadcasting them silently is a common bug)"
        )


def _weight_array(weight, n_classes, name):
    if weight is None:
        return None
    if isinstance(weight, str):
        raise TypeError(
            f"{name}: the third positional argument is the class weight; pass reduction={weight!r} by keyword"
        )
    w = np.asarray(weight.data if isinstance(weight, Tensor) else weight)
    if w.shape != (n_classes,):
        raise ValueError(f"{name}: weight must have one entry per class, shape ({n_classes},), got {w.shape}")
    return w


def _divide(total: Tensor, count) -> Tensor:
    """``total / count``, the mean over what was counted. Where nothing was (a batch of padding only, every
    target ``ignore_index``) the mean is 0/0: NaN, as PyTorch gives, and a constant, so its gradient is 0 (a
    select), not NaN, as PyTorch's is: one such batch must not turn every parameter into NaN. ``count`` is a
    number, or a tensor of counts (a tensor target, whose values are known only when the program runs)."""
    if isinstance(count, Tensor):
        none = ops.equal(count, 0)
        return ops.where(none, np.nan, total / ops.where(none, 1.0, count))
    return ops.where(False, total, np.nan) if count == 0 else total / count


def mse_loss(input, target, reduction: str = "mean") -> Tensor:
    """Squared error ``(input - target) ** 2``, reduced; the shapes must match.

    >>> import tapegrad as tg
    >>> tg.nn.mse_loss(tg.Tensor([1.0, 2.0]), tg.Tensor([0.0, 4.0]))
    Tensor(2.5)
    """
    input, target = _tensor(input), _tensor(target)
    _same_shape(input, target, "mse_loss")
    diff = input - target
    return _reduce(diff * diff, reduction, "mse_loss")


def l1_loss(input, target, reduction: str = "mean") -> Tensor:
    """Absolute error ``|input - target|``, reduced (gradient 0 where they are equal).

    >>> import tapegrad as tg
    >>> tg.nn.functional.l1_loss(tg.Tensor([1.0, 2.0]), tg.Tensor([0.0, 4.0]))
    Tensor(1.5)
    """
    input, target = _tensor(input), _tensor(target)
    _same_shape(input, target, "l1_loss")
    return _reduce(ops.absolute(input - target), reduction, "l1_loss")


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``, with ``d = input - target``.

    >>> import tapegrad as tg
    >>> tg.nn.functional.huber_loss(tg.Tensor([0.5, 3.0]), tg.Tensor([0.0, 0.0]), reduction="none")
    Tensor([0.125, 2.5  ])
    """
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    input, target = _tensor(input), _tensor(target)
    _same_shape(input, target, "huber_loss")
    d = input - target
    a = ops.absolute(d)
    return _reduce(ops.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta)), reduction, "huber_loss")


def smooth_l1_loss(input, target, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``beta = 0``: the L1 loss).

    >>> import tapegrad as tg
    >>> tg.nn.functional.smooth_l1_loss(tg.Tensor([0.5, 3.0]), tg.Tensor([0.0, 0.0]), reduction="none")
    Tensor([0.125, 2.5  ])
    """
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    input, target = _tensor(input), _tensor(target)
    _same_shape(input, target, "smooth_l1_loss")
    d = input - target
    a = ops.absolute(d)
    if beta == 0:
        return _reduce(a, reduction, "smooth_l1_loss")
    return _reduce(ops.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta), reduction, "smooth_l1_loss")


def kl_div(input, target, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """Kullback-Leibler divergence with ``input`` a log-probability: ``target * (log(target) - input)``
    (``0`` where ``target`` is 0), or ``exp(target) * (target - input)`` with ``log_target``. ``reduction=
    "batchmean"`` divides the sum by the batch size (the divergence's definition); ``"mean"`` by every element.

    >>> import numpy as np, tapegrad as tg
    >>> p = np.array([[0.5, 0.5]])
    >>> tg.nn.functional.kl_div(tg.Tensor(np.log(p)), tg.Tensor(p), reduction="batchmean")
    Tensor(0.)
    """
    _check_reduction(reduction, "kl_div", _REDUCTIONS + ("batchmean",))
    input, target = _tensor(input), _tensor(target)
    _same_shape(input, target, "kl_div")
    if log_target:
        pointwise = ops.exp(target) * (target - input)
    else:
        positive = target > 0
        pointwise = ops.where(positive, target * (ops.log(ops.where(positive, target, 1.0)) - input), 0.0)
    if reduction == "batchmean":
        return ops.sum(pointwise) / (input.shape[0] if input.ndim else 1)
    return _reduce(pointwise, reduction, "kl_div")


def binary_cross_entropy(input, target, weight=None, reduction: str = "mean") -> Tensor:
    """Binary cross-entropy of probabilities ``input`` in [0, 1]: ``-w (t log x + (1 - t) log(1 - x))``, each log
    clamped at -100 as PyTorch does. Prefer ``binary_cross_entropy_with_logits`` on logits: it is stable.

    >>> import tapegrad as tg
    >>> tg.nn.functional.binary_cross_entropy(tg.Tensor([0.5, 1.0]), tg.Tensor([1.0, 1.0]), reduction="none")
    Tensor([0.69314718, 0.        ])
    """
    if isinstance(weight, str):
        raise TypeError(f"binary_cross_entropy: the third argument is the weight; pass reduction={weight!r} by keyword")
    input, target = _tensor(input), _tensor(target)
    _same_shape(input, target, "binary_cross_entropy")
    x = input.data
    if x.size and (np.min(x) < 0 or np.max(x) > 1):
        raise ValueError(
            f"binary_cross_entropy: input must hold probabilities in [0, 1], got values in [{np.min(x)}, {np.max(x)}];"
            " for logits use binary_cross_entropy_with_logits"
        )

    def clamped_log(p):
        positive = p > 0
        return ops.where(positive, ops.maximum(ops.log(ops.where(positive, p, 1.0)), -100.0), -100.0)

    loss = 0.0 - (target * clamped_log(input) + (1.0 - target) * clamped_log(1.0 - input))  # 0.0, not -0.0
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(input, target, weight=None, reduction: str = "mean", pos_weight=None) -> Tensor:
    """Binary cross-entropy of ``target`` in [0, 1] under ``sigmoid(input)``, in the stable form
    ``(1 - t) x - (1 + (pos_weight - 1) t) log_sigmoid(x)``: no overflow for large ``|x|``, and the gradient
    ``sigmoid(x) - t`` (without ``pos_weight``) exact everywhere. ``weight`` scales each element's loss;
    ``pos_weight`` (one per class, broadcast over the last axis) the positive term.

    >>> import tapegrad as tg
    >>> tg.nn.binary_cross_entropy_with_logits(tg.Tensor([0.0, 800.0]), tg.Tensor([1.0, 1.0]), reduction="none")
    Tensor([0.69314718, 0.        ])
    """
    if isinstance(weight, str):
        raise TypeError(
            f"binary_cross_entropy_with_logits: the third argument is the weight; pass reduction={weight!r} by keyword"
        )
    input, target = _tensor(input), _tensor(target)
    _same_shape(input, target, "binary_cross_entropy_with_logits", "logits")
    log_weight = 1.0 if pos_weight is None else 1.0 + (pos_weight - 1.0) * target
    loss = (1.0 - target) * input - log_weight * ops.log_sigmoid(input)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def _class_targets(input: Tensor, target, ignore_index, name):
    """The integer targets, checked against the classes: an array, or for a tensor target the tensor itself,
    whose values the losses then use through ops only (inside ``tg.compile`` they change from call to call;
    the values are checked here once, when the function is traced)."""
    is_tensor = isinstance(target, Tensor)
    labels = np.asarray(target._data if is_tensor else target)
    if labels.dtype.kind not in "iu":
        raise TypeError(
            f"{name}: target must hold integer class indices, got dtype {labels.dtype}; for class probabilities "
            "pass a floating target of the input's shape (cross_entropy), for 0/1 targets binary_cross_entropy"
        )
    if input.ndim == 0:
        raise ValueError(f"{name}: input must have a class axis, got a scalar")
    want = () if input.ndim == 1 else (input.shape[0],) + tuple(input.shape[2:])
    if labels.shape != want:
        raise ValueError(f"{name}: input of shape {input.shape} needs a target of shape {want}, got {labels.shape}")
    n_classes = input.shape[0 if input.ndim == 1 else 1]
    bad = (labels != ignore_index) & ((labels < 0) | (labels >= n_classes))
    if bad.any():
        raise ValueError(
            f"{name}: target classes must be in [0, {n_classes}) or equal ignore_index ({ignore_index}), "
            f"got {labels[bad].ravel()[:5].tolist()}"
        )
    return (target if is_tensor else labels), n_classes


def _picked(logp: Tensor, labels, safe) -> Tensor:
    """logp at each example's class: ``logp[n, labels[n, ...], ...]`` (class axis 1, or 0 for one example)."""
    if logp.ndim == 1:
        return logp[safe] if isinstance(safe, Tensor) else logp[int(safe)]
    grid = np.indices(labels.shape, sparse=True)
    return logp[(grid[0], safe) + tuple(grid[1:])]


def _ignored(labels, ignore_index, w, dtype):
    """``(ignored, safe, per)``: where the target is ignored, the targets with those set to 0, and each
    example's weight (0 where ignored); arrays, or ops of a tensor target."""
    if isinstance(labels, Tensor):
        ignored = ops.equal(labels, ignore_index)
        safe = ops.where(ignored, 0, labels)
        per = Tensor(np.ones(labels.shape)) if w is None else Tensor(w)[safe]
        return ignored, safe, ops.astype(ops.where(ignored, 0.0, per), dtype=dtype)
    ignored = labels == ignore_index
    safe = np.where(ignored, 0, labels)
    per = np.ones(labels.shape) if w is None else w[safe]
    return ignored, safe, np.where(ignored, 0.0, per).astype(dtype)


def nll_loss(input, target, weight=None, ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of integer classes under log-probabilities ``input``: ``-w[t] input[n, t]``.

    ``input`` is ``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)``; ``target`` ``(N,)``, ``(N, d1, ...)`` or a scalar.
    Targets equal to ``ignore_index`` count nowhere; ``"mean"`` divides by the summed weights of the others, and
    is NaN where there are none (a batch of padding only), as PyTorch's, with gradient 0, as PyTorch's.

    >>> import numpy as np, tapegrad as tg
    >>> logp = tg.Tensor(np.log([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]]))
    >>> float(tg.nn.functional.nll_loss(logp, np.array([0, -100])))
    0.6931471805599453
    """
    _check_reduction(reduction, "nll_loss")
    input = _tensor(input)
    labels, n_classes = _class_targets(input, target, ignore_index, "nll_loss")
    w = _weight_array(weight, n_classes, "nll_loss")
    ignored, safe, per = _ignored(labels, ignore_index, w, input.dtype)
    loss = 0.0 - _picked(input, labels, safe)  # 0 - x: a certain, correct prediction reads 0., not -0.
    traced = isinstance(labels, Tensor)  # the values may change from call to call: no shortcut on them
    if traced or w is not None or ignored.any():
        loss = loss * per
    if reduction == "none":
        return loss
    total = ops.sum(loss)
    if reduction == "sum":
        return total
    return _divide(total, ops.sum(per) if traced else per.sum())


def cross_entropy(
    input, target, weight=None, ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0
) -> Tensor:
    """Cross-entropy under ``softmax(input)`` along the class axis (1, or 0 for one example), stably.

    ``target`` holds integer classes (shape ``(N,)``, ``(N, d1, ...)`` or a scalar; ``ignore_index`` skips
    some; with every target ignored the mean is NaN with gradient 0, as in PyTorch) or class probabilities (a
    floating array of the input's shape). ``weight`` weighs each class; ``label_smoothing`` mixes the target
    with the uniform distribution, as PyTorch does.

    >>> import numpy as np, tapegrad as tg
    >>> logits = tg.Tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 1000.0]])
    >>> tg.nn.cross_entropy(logits, np.array([0, 2]), reduction="none")
    Tensor([0.23954477, 0.        ])
    """
    _check_reduction(reduction, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    input = _tensor(input)
    if input.ndim == 0:
        raise ValueError("cross_entropy: input must have a class axis, got a scalar")
    axis = 0 if input.ndim == 1 else 1
    n_classes = input.shape[axis]
    logp = ops.log_softmax(input, axis=axis)
    w = _weight_array(weight, n_classes, "cross_entropy")
    w_axis = None if w is None else w.reshape((n_classes,) + (1,) * (input.ndim - axis - 1)).astype(input.dtype)
    kind = (target.dtype if isinstance(target, Tensor) else np.asarray(target).dtype).kind
    if kind == "f":  # class probabilities
        target = _tensor(target)
        if target.shape != input.shape:
            raise ValueError(
                f"cross_entropy: a floating target holds class probabilities and needs the input's shape "
                f"{input.shape}, got {target.shape}; for class indices pass integers (target.astype(np.int64))"
            )
        if label_smoothing > 0:
            target = target * (1.0 - label_smoothing) + label_smoothing / n_classes
        terms = logp * target if w_axis is None else logp * target * w_axis
        if reduction == "mean":
            return _divide(0.0 - ops.sum(terms), input.size // n_classes)
        return _reduce(0.0 - ops.sum(terms, axis=axis), reduction, "cross_entropy")
    loss = nll_loss(logp, target, weight, ignore_index, reduction)
    if label_smoothing == 0:
        return loss
    labels, _ = _class_targets(input, target, ignore_index, "cross_entropy")
    smooth = 0.0 - ops.sum(logp if w_axis is None else logp * w_axis, axis=axis)
    if isinstance(labels, Tensor):  # a tensor target: its values only through ops (see _class_targets)
        ignored = ops.equal(labels, ignore_index)
        smooth = ops.where(ignored, 0.0, smooth)
        if reduction == "mean":
            kept = ops.where(ignored, 0.0, 1.0 if w is None else Tensor(w)[ops.where(ignored, 0, labels)])
            smooth = _divide(ops.sum(smooth), ops.sum(kept))
    else:
        ignored = labels == ignore_index
        smooth = ops.where(ignored, 0.0, smooth) if ignored.any() else smooth
    if reduction == "mean" and not isinstance(labels, Tensor):
        count = (~ignored).sum() if w is None else w[labels[~ignored]].sum()
        smooth = _divide(ops.sum(smooth), count)
    elif reduction == "sum":
        smooth = ops.sum(smooth)
    return (1.0 - label_smoothing) * loss + (label_smoothing / n_classes) * smooth


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where ``target`` is 1 and ``max(0, cos(x1, x2) - margin)`` where it is -1; inputs
    ``(N, D)`` (or ``(D,)``) and ``target`` ``(N,)``.

    >>> import tapegrad as tg
    >>> x = tg.Tensor([[1.0, 0.0], [1.0, 0.0]])
    >>> tg.nn.functional.cosine_embedding_loss(x, tg.Tensor([[2.0, 0.0], [0.0, 1.0]]), [1, -1], reduction="none")
    Tensor([0., 0.])
    """
    input1, input2 = _tensor(input1), _tensor(input2)
    _same_shape(input1, input2, "cosine_embedding_loss", "input1", "input2")
    t = np.asarray(target.data if isinstance(target, Tensor) else target)
    want = input1.shape[:-1]
    if t.shape != want or not np.isin(t, (1, -1)).all():
        raise ValueError(
            f"cosine_embedding_loss: target must be 1 or -1 of shape {want}, got {t.shape} {t.ravel()[:5]}"
        )
    eps = 1e-12  # as PyTorch: no division by zero for a zero vector
    dot = ops.sum(input1 * input2, axis=-1)
    cos = dot / ops.sqrt((ops.sum(input1 * input1, axis=-1) + eps) * (ops.sum(input2 * input2, axis=-1) + eps))
    loss = ops.where(t == 1, 1.0 - cos, ops.relu(cos - margin))
    return _reduce(loss, reduction, "cosine_embedding_loss")
