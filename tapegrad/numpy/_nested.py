"""Tensors inside lists and tuples: NumPy's dispatch sees a tensor only at the top of an argument (or one level
into a sequence of arrays), so ``np.sum([t0, t1])`` or ``np.where(c, [t0, t1], 0)`` would make a constant of
them. Here they are found and stacked on the tape before tapegrad's function runs.

- An **array-like** argument (a list or tuple holding tensors, at any depth) becomes one tensor, stacked with
  tapegrad's ``stack`` as ``np.array`` would build it (``[x, 2 * x]`` of shape ``(2,) + x.shape``).
- A **sequence of arrays** (``concatenate``'s ``arrays``, ``select``'s two lists, ``choose``'s ``choices``...,
  listed in :data:`SEQUENCES`) keeps its length: each of its elements is stacked on its own.
- ``block``'s nested lists are its structure, never stacked; tapegrad's ``block`` reads them.

>>> import tapegrad as tg
>>> x = tg.Tensor(2.0, requires_grad=True)
>>> args, kwargs = lift(([x, 3.0], 1), {}, ())
>>> args[0], args[1]
(Tensor([2., 3.]), 1)
"""

from __future__ import annotations

import numpy as np

import tapegrad.ops as ops

from .._tree import holds_tensor

_SEQUENCE_TYPES = (list, tuple)

# NumPy's name -> the parameters (position, keyword) that are sequences of arrays; None: leave every argument
SEQUENCES = {
    **{
        name: ((0, "arrays"),) for name in ("concatenate", "concat", "stack", "hstack", "vstack", "row_stack", "dstack")
    },
    "column_stack": ((0, "tup"),),
    "select": ((0, "condlist"), (1, "choicelist")),
    "choose": ((1, "choices"),),
    "piecewise": ((1, "condlist"), (2, "funclist")),
    "multi_dot": ((0, "arrays"),),
    "block": None,
}


def stacked(obj):
    """Nested lists holding tensors, stacked on the tape (anything else as it is)."""
    if isinstance(obj, _SEQUENCE_TYPES):
        return ops.stack([stacked(o) for o in obj]) if obj else np.array(obj)
    return obj


def nested(args, kwargs) -> bool:
    """Whether a list or tuple argument holds a tensor: the one check on every call (a class test per argument
    that is not a list)."""
    for a in args:
        if a.__class__ in _SEQUENCE_TYPES and holds_tensor(a):
            return True
    if kwargs:
        for a in kwargs.values():
            if a.__class__ in _SEQUENCE_TYPES and holds_tensor(a):
                return True
    return False


def _lifted(a):
    return stacked(a) if a.__class__ in _SEQUENCE_TYPES and holds_tensor(a) else a


def _each(seq):
    return type(seq)(_lifted(e) for e in seq) if isinstance(seq, _SEQUENCE_TYPES) else _lifted(seq)


def lift(args, kwargs, sequences):
    """``(args, kwargs)`` with the tensors inside lists stacked on the tape; ``sequences`` as in
    :data:`SEQUENCES` (the sequences of arrays keep their length, each element stacked)."""
    if sequences is None:
        return args, kwargs
    positions = {p for p, _ in sequences}
    keywords = {k for _, k in sequences}
    args = tuple(_each(a) if i in positions else _lifted(a) for i, a in enumerate(args))
    kwargs = {k: (_each(v) if k in keywords else _lifted(v)) for k, v in kwargs.items()}
    return args, kwargs
