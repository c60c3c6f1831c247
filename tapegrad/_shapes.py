"""Shapes as the tape sees them: :class:`Shape` (what a rule gets of an input saved as ``"x.shape"``) and
:func:`unbroadcast`, the one place where broadcasting is undone.

>>> import numpy as np
>>> from tapegrad.backend.numpy_rules import numpy_rules
>>> unbroadcast(numpy_rules, np.ones((2, 3)), (3,))
array([2., 2., 2.])
"""

from __future__ import annotations

import numpy as np

__all__ = ["Shape", "ChunkedShape", "unbroadcast"]

_ndarray = np.ndarray


class ChunkedShape(tuple):
    """The shape of a chunked (Dask) array, which also says how it was chunked (``.chunks``): a gradient that
    a rule broadcasts back to it (``sum``'s, ``mean``'s) is then chunked the same way, rather than being one
    block the size of the data on one worker. Everywhere else it is the shape, a tuple.

    >>> s = ChunkedShape((4, 2), ((2, 2), (2,)))
    >>> s == (4, 2), s.chunks
    (True, ((2, 2), (2,)))
    """

    def __new__(cls, shape, chunks):
        self = super().__new__(cls, shape)
        self.chunks = chunks
        return self

    def __getnewargs__(self):
        return tuple(self), self.chunks


class Shape:
    """What a rule sees of an input saved as ``"x.shape"``: its shape, ndim and dtype, no data (for a chunked
    array, a :class:`ChunkedShape`)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, array):
        if not hasattr(array, "shape"):  # a Python number: the array NumPy makes of it
            array = np.asarray(array)
        shape = array.shape
        if array.__class__ is not _ndarray:
            chunks = getattr(array, "chunks", None)
            if isinstance(chunks, tuple) and len(chunks) == len(shape):
                shape = ChunkedShape(shape, chunks)
        self.shape = shape
        self.dtype = array.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"Shape({self.shape}, {self.dtype})"


_LEADING = tuple(tuple(range(n)) for n in range(8))  # the axes a sum over n new leading axes names


def unbroadcast(xp, g, shape):
    """Sum ``g`` down to ``shape``: the adjoint of broadcasting an array of ``shape`` to ``g.shape``.

    The replay applies it to every gradient of an op registered with ``broadcast=True`` whose input had
    another shape; rules never undo broadcasting themselves.
    """
    gshape = g.shape
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    if lead > 0 and gshape[lead:] == shape:  # new leading axes alone (a bias's gradient, each step): one sum
        return xp.sum(g, axis=_LEADING[lead] if lead < len(_LEADING) else tuple(range(lead)))
    stretched = tuple(lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1)
    if stretched:
        g = xp.sum(g, axis=stretched, keepdims=True)
    if lead:
        g = xp.sum(g, axis=tuple(range(lead)))  # a new array of the exact shape: the tape can hand it over
    return g if g.shape == shape else xp.reshape(g, shape)
