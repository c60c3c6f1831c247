"""The one test of whether an index is basic (ints, slices, ``...``, ``None``): such an index never repeats an
element, so its adjoint is a plain assignment rather than a scatter-add."""

from __future__ import annotations

import numpy as np


def is_basic_item(item) -> bool:
    """Whether one item of an index is basic: an int, a slice, ``...`` or ``None`` (not an array).

    >>> is_basic_item(slice(1, None)), is_basic_item(np.array([0]))
    (True, False)
    """
    return item is None or item is Ellipsis or isinstance(item, (int, slice, np.integer))


def is_basic_index(index) -> bool:
    """Whether every item of ``index`` is basic (see :func:`is_basic_item`).

    >>> is_basic_index((slice(None), 0)), is_basic_index(np.array([0, 0]))
    (True, False)
    """
    items = index if isinstance(index, tuple) else (index,)
    return all(is_basic_item(i) for i in items)
