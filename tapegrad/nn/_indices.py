"""Integer indices checked against their range on every call: rows of an embedding, classes of a target.

An index out of ``[0, n)`` raises, naming the bad values and the range; a negative index never counts from
the end (PyTorch's rule, and what the messages promise). On an array the check runs at once. On a tensor it
is an op (no gradient) whose output the lookup then uses, so that a program of ``tg.compile``, whose index
values change from call to call, checks each call's values instead of only the traced ones.

>>> import numpy as np
>>> in_range(np.array([0, 2]), 3, "embedding: indices").tolist()
[0, 2]
>>> in_range(np.array([0, -1]), 3, "embedding: indices")
Traceback (most recent call last):
  ...
IndexError: embedding: indices must be in [0, 3), got [-1]
"""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ..registry import defnondiff


def _check(idx, n, what, ignore, error) -> None:
    bad = (idx < 0) | (idx >= n)
    if ignore is not None:
        bad &= idx != ignore
    if bad.any():
        extra = "" if ignore is None else f" or equal ignore_index ({ignore})"
        raise error(f"{what} must be in [0, {n}){extra}, got {idx[bad].ravel()[:5].tolist()}")


def _checked_forward(idx, *, n, what, ignore, error):
    _check(idx, n, what, ignore, error)
    return idx.copy()  # a new array: the program keeps the check as an op of its own


_checked = defnondiff("checked_indices", _checked_forward)


def in_range(index, n: int, what: str, ignore=None, error=IndexError):
    """``index`` (integer array or tensor) checked against ``[0, n)`` (``ignore`` allowed too): the array
    itself, or for a tensor the output of the checking op, which the caller indexes with."""
    if isinstance(index, Tensor):
        return _checked(index, n=n, what=what, ignore=ignore, error=error)
    _check(np.asarray(index), n, what, ignore, error)
    return index
