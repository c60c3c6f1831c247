"""Gradient clipping, as PyTorch spells it (``torch.nn.utils``): rescale all gradients to a maximum total
norm, or clamp each element. Also reachable as ``tapegrad.nn.utils.clip_grad_norm_`` and friends.

All work on ``p.grad`` of the given parameters (skipping those whose grad is None). The total norm is taken
as PyTorch takes it: the ``norm_type``-norm of the per-gradient norms, in the gradients' dtype. Clipping
replaces each gradient with a new array of the same dtype instead of writing into it (PyTorch writes in
place), so an array the user kept from before is not changed behind their back. ``foreach`` is accepted for
PyTorch's signatures and ignored. ``clip_grad_norm`` and ``clip_grad_value`` are the older names.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

import tapegrad.ops as ops

from .._tensor import Tensor

__all__ = [
    "clip_by_total_norm",
    "clip_grad_norm_",
    "clip_grad_value_",
    "get_total_norm",
    "clip_grads_with_norm_",
    "clip_grad_norm",
    "clip_grad_value",
]


def _as_list(params) -> list:
    return [params] if isinstance(params, (Tensor, np.ndarray)) else list(params)


def _grads(params) -> list:
    return [p for p in _as_list(params) if p.grad is not None]


def _array(g) -> np.ndarray:
    return np.asarray(g.data if isinstance(g, Tensor) else g)


def _vector_norm(a: np.ndarray, ord: float):
    a = np.abs(a.ravel())
    if ord == math.inf:
        return a.max(initial=a.dtype.type(0))
    if ord == -math.inf:
        return a.min(initial=a.dtype.type(math.inf))
    if ord == 0:
        return a.dtype.type(np.count_nonzero(a))
    if ord == 2:
        return np.sqrt(np.dot(a, a))
    return np.sum(a**ord) ** (1.0 / ord)


def get_total_norm(
    tensors: Iterable | Tensor | np.ndarray, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None
) -> Tensor:
    """The ``norm_type``-norm of several arrays (or tensors) taken together as one vector, as a 0-d Tensor.

    ``norm_type`` may be ``float("inf")`` or ``"inf"`` (the largest magnitude). With ``error_if_nonfinite``,
    a NaN or infinite norm raises ``RuntimeError``.

    >>> import numpy as np, tapegrad as tg
    >>> float(tg.optim.get_total_norm([np.array([3.0, 0.0]), np.array([4.0])]))
    5.0
    """
    arrays = [_array(t) for t in _as_list(tensors)]
    norm_type = float(norm_type)
    if not arrays:
        return Tensor(np.array(0.0))
    dtype = np.result_type(*[a.dtype for a in arrays])
    norms = np.array([_vector_norm(a, norm_type) for a in arrays], dtype=dtype)
    total = np.asarray(_vector_norm(norms, norm_type), dtype=dtype)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be "
            "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`"
        )
    return Tensor(total)


def clip_by_total_norm(grads, max_norm: float):
    """Functional clipping, for ``tg.compile``: ``(clipped, total)``, the gradients (a list, or a dict in its
    order; arrays or tensors) scaled together to a total 2-norm of at most ``max_norm``, with the numbers
    ``clip_grad_norm_`` gives, and their total norm before clipping. Nothing is changed in place.

    >>> import numpy as np, tapegrad as tg
    >>> clipped, total = tg.optim.clip_by_total_norm([np.array([30.0]), np.array([40.0])], 5.0)
    >>> float(total), [g.round(6) for g in clipped]
    (50.0, [array([3.]), array([4.])])
    """
    keys = list(grads) if isinstance(grads, dict) else None
    gs = list(grads.values()) if keys is not None else list(grads)
    max_norm = float(max_norm)
    if not max_norm >= 0:
        raise ValueError(f"clip_by_total_norm: max_norm must be >= 0, got {max_norm}")
    if not gs:
        return grads, np.array(0.0)
    if not any(isinstance(g, Tensor) for g in gs):  # arrays: the eager function's own arithmetic
        total = get_total_norm(gs).data
        dtype = total.dtype if total.dtype.kind == "f" else np.dtype(np.float64)
        coef = np.minimum(dtype.type(max_norm) / (total.astype(dtype) + dtype.type(1e-6)), dtype.type(1.0))
        clipped = [g * g.dtype.type(coef) for g in gs]
    else:  # tensors (traced): the same arithmetic as ops, and always the product (by 1.0 when not clipping)
        dtype = np.result_type(*[g.dtype for g in gs])
        norms = []
        for g in gs:
            a = ops.absolute(ops.reshape(g, (-1,)))
            norms.append(ops.astype(ops.sqrt(ops.dot(a, a)), dtype=dtype))
        stacked = ops.stack(norms)
        total = ops.sqrt(ops.dot(stacked, stacked))
        dtype = np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype(np.float64)
        coef = ops.minimum(dtype.type(max_norm) / (ops.astype(total, dtype=dtype) + dtype.type(1e-6)), dtype.type(1.0))
        clipped = [g * ops.astype(coef, dtype=g.dtype) for g in gs]
    return (dict(zip(keys, clipped)) if keys is not None else clipped), total


def clip_grads_with_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float, total_norm, foreach=None) -> None:
    """Scale every gradient by ``min(max_norm / (total_norm + 1e-6), 1)``, given a total norm already measured.

    >>> import numpy as np, tapegrad as tg
    >>> w = tg.Tensor([0.0, 0.0], requires_grad=True); w.grad = np.array([3.0, 4.0])
    >>> tg.optim.clip_grads_with_norm_([w], 1.0, total_norm=10.0); w.grad.round(6)
    array([0.3, 0.4])
    """
    max_norm = float(max_norm)
    if not max_norm >= 0:
        raise ValueError(f"clip_grad_norm_: max_norm must be >= 0, got {max_norm}")
    params = _grads(parameters)
    if not params:
        return
    total = np.asarray(_array(total_norm))
    dtype = total.dtype if total.dtype.kind == "f" else np.dtype(np.float64)
    coef = np.minimum(dtype.type(max_norm) / (total.astype(dtype) + dtype.type(1e-6)), dtype.type(1.0))
    if coef == 1.0:
        return  # multiplying by one changes nothing
    with np.errstate(invalid="ignore"):  # an infinite gradient times a zero coefficient is NaN, as in PyTorch
        for p in params:
            g = _array(p.grad)
            p.grad = g * g.dtype.type(coef)


def clip_grad_norm_(
    parameters: Iterable[Tensor] | Tensor,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach=None,
) -> Tensor:
    """Scale the gradients together so that their total ``norm_type``-norm is at most ``max_norm``.

    The total norm is taken over all gradients as if they were one vector; every gradient is multiplied by
    ``min(max_norm / (total + 1e-6), 1)`` (PyTorch's rule). Returns the total norm measured before clipping,
    as a 0-d Tensor, so a training loop can log it. ``norm_type`` may be ``float("inf")`` (the largest
    element). A NaN or infinite total makes every gradient NaN, as in PyTorch, unless ``error_if_nonfinite``
    asks for a ``RuntimeError`` instead.

    >>> import numpy as np, tapegrad as tg, tapegrad.nn.utils
    >>> a, b = tg.Tensor([0.0, 0.0], requires_grad=True), tg.Tensor([0.0], requires_grad=True)
    >>> a.grad, b.grad = np.array([3.0, 0.0]), np.array([4.0])
    >>> float(tg.nn.utils.clip_grad_norm_([a, b], max_norm=1.0))
    5.0
    >>> a.grad.round(6), b.grad.round(6)
    (array([0.6, 0. ]), array([0.8]))
    """
    params = _as_list(parameters)
    total = get_total_norm([p.grad for p in _grads(params)], norm_type, error_if_nonfinite)
    clip_grads_with_norm_(params, max_norm, total)
    return total


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float, foreach=None) -> None:
    """Clamp every gradient element into ``[-clip_value, clip_value]``.

    >>> import numpy as np, tapegrad as tg, tapegrad.nn.utils
    >>> w = tg.Tensor([0.0, 0.0, 0.0], requires_grad=True)
    >>> w.grad = np.array([-3.0, 0.5, 2.0])
    >>> tg.nn.utils.clip_grad_value_([w], 1.0); w.grad
    array([-1. ,  0.5,  1. ])
    """
    clip_value = float(clip_value)
    if not clip_value >= 0:
        raise ValueError(f"clip_grad_value_: clip_value must be >= 0, got {clip_value}")
    for p in _grads(parameters):
        g = _array(p.grad)
        p.grad = np.clip(g, g.dtype.type(-clip_value), g.dtype.type(clip_value))


def clip_grad_norm(
    params: Iterable[Tensor] | Tensor, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False
) -> float:
    """``clip_grad_norm_`` under its older name, returning the total norm as a Python float.

    >>> import numpy as np, tapegrad as tg
    >>> a, b = tg.Tensor([0.0, 0.0], requires_grad=True), tg.Tensor([0.0], requires_grad=True)
    >>> a.grad, b.grad = np.array([3.0, 0.0]), np.array([4.0])
    >>> tg.optim.clip_grad_norm([a, b], max_norm=1.0)
    5.0
    """
    return float(clip_grad_norm_(params, max_norm, norm_type, error_if_nonfinite))


clip_grad_value = clip_grad_value_
