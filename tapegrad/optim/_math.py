"""The few array functions the updates call, for arrays (eager steps) and for tensors (a functional update
traced by ``tg.compile``, where parameters, gradients, states and step counts are tensors).

On arrays and Python numbers each is the NumPy or ``math`` function it replaces, so eager steps compute what
they always did. On tensors each is the tapegrad op, and :func:`like` gives a scalar tensor (a step count's
bias correction, a learning rate passed in) the parameter's dtype, as NumPy does with a Python number: a
float32 parameter stays float32.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

import tapegrad.ops as ops

from .._tensor import Tensor
from ..registry import defnondiff

# ``base ** exponent`` for a Python number ``base`` and a step count held in a 0-d array: Python's own power, as
# the eager step computes it with an int (NumPy's power of an integral exponent rounds differently at times).
_scalar_power = defnondiff("scalar_power", lambda exponent, *, base: np.asarray(base ** exponent.item()))

__all__ = ["sqrt", "maximum", "absolute", "copy", "like", "power", "any_tensor"]


def any_tensor(*xs) -> bool:
    return any(isinstance(x, Tensor) for x in xs)


def sqrt(x):
    if isinstance(x, Tensor):
        return ops.sqrt(x)
    if isinstance(x, numbers.Real) and not isinstance(x, np.generic):
        return math.sqrt(x)
    return np.sqrt(x)


def maximum(a, b):
    return ops.maximum(a, b) if any_tensor(a, b) else np.maximum(a, b)


def absolute(x):
    return ops.absolute(x) if isinstance(x, Tensor) else np.abs(x)


def copy(x):
    """A private copy of an array; a tensor as it is (nothing changes a value of a functional update)."""
    return x if isinstance(x, Tensor) else x.copy()


def power(base, exponent):
    """``base ** exponent`` with a step count (or a number computed from one) as the exponent."""
    if isinstance(exponent, Tensor):
        return _scalar_power(exponent, base=base)
    return base**exponent


def like(x, p):
    """A scalar ``x`` as it meets the parameter ``p``: a 0-d tensor in ``p``'s dtype, anything else as it is."""
    if isinstance(x, Tensor) and x.ndim == 0 and x.dtype != p.dtype:
        return ops.astype(x, dtype=p.dtype)
    return x
