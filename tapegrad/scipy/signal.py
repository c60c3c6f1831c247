"""``scipy.signal.convolve`` on tensors: N-dimensional convolution, ``mode`` "full", "valid" or "same", as
SciPy's, composed of ops (the smaller input is the kernel: one shifted product per kernel element, so it is
meant for the small kernels of autograd-style programs; its gradients are exact to any order).

>>> import numpy as np
>>> from tapegrad.scipy import signal
>>> signal.convolve(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]))
array([0. , 1. , 2.5, 4. , 1.5])
"""

from __future__ import annotations

import numpy as np

import tapegrad.ops as ops

from .._tensor import Tensor
from ._types import like_scipy

__all__ = ["convolve"]


def _t(x):
    return x if isinstance(x, Tensor) else Tensor(x)


@like_scipy
def convolve(in1, in2, mode="full", method="auto"):
    """The convolution of ``in1`` and ``in2`` (same number of dimensions), SciPy's ``mode``; ``method`` is
    accepted for SciPy's signature (the result is the direct sum either way).

    >>> import numpy as np, tapegrad as tg
    >>> from tapegrad.scipy import signal
    >>> tg.grad(lambda k: signal.convolve(np.ones(4), k, mode="valid").sum())(np.ones(2))
    array([3., 3.])
    """
    a, v = _t(in1), _t(in2)
    if a.ndim != v.ndim:
        raise ValueError(
            f"convolve: in1 and in2 must have the same number of dimensions, got shapes {a.shape} and {v.shape}"
        )
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"convolve: mode must be 'full', 'valid' or 'same', got {mode!r}")
    shape1, shape2 = a.shape, v.shape
    if mode == "valid" and not (
        all(n >= m for n, m in zip(shape1, shape2)) or all(m >= n for n, m in zip(shape1, shape2))
    ):
        raise ValueError(
            f"convolve: for 'valid' mode one input must be at least as large as the other in every dimension, got {shape1} and {shape2}"
        )
    big, small = (a, v) if a.size >= v.size else (v, a)
    full = tuple(n + m - 1 for n, m in zip(shape1, shape2))
    out = None
    for idx in np.ndindex(*small.shape):
        pad = [(i, m - 1 - i) for i, m in zip(idx, small.shape)]
        term = small[idx] * ops.pad(big, pad)
        out = term if out is None else out + term
    if out is None:  # an empty input
        return ops.zeros(full)
    if mode == "full":
        return out
    if mode == "valid":
        size = tuple(abs(n - m) + 1 for n, m in zip(shape1, shape2))
    else:
        size = shape1
    start = tuple((f - s) // 2 if mode == "same" else min(n, m) - 1 for f, s, n, m in zip(full, size, shape1, shape2))
    return out[tuple(slice(b, b + s) for b, s in zip(start, size))]
