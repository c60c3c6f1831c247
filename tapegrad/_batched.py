"""The tensors ``tg.vmap`` hands to ``f``: a :class:`Batched` tensor holds every example of the batch (the vmap
levels' axes first, in their order), and shows ``f`` one example's shape. Ops on it go to
:mod:`tapegrad.batching`'s rules (the core's batching slot); Python may not read its values.
"""

from __future__ import annotations

from ._tensor import Tensor
from .errors import BatchedValueError

__all__ = ["Batched"]


class Batched(Tensor):
    """A tensor batched by ``vmap``: ``_data`` has one leading axis per level of ``_levels`` (outermost first)
    before the example's own axes; ``shape``, ``ndim``, ``size`` and ``len`` are one example's."""

    __slots__ = ("_levels",)

    @classmethod
    def make(cls, data, levels) -> Batched:
        t = cls._wrap(data)
        t._levels = levels
        return t

    @property
    def shape(self) -> tuple:
        return self._data.shape[len(self._levels) :]

    @property
    def ndim(self) -> int:
        return self._data.ndim - len(self._levels)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor (one example of vmap's batch)")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def detach(self) -> Batched:
        """The same batch with no gradient history (a plain tensor of ``_data`` would be every example at once)."""
        return Batched.make(self._data, self._levels)

    def _refuse(self, what):
        raise BatchedValueError(
            f"vmap: f reads the value of a batched tensor ({what}); inside vmap a value is every example's at "
            "once: compute with tapegrad's ops (tg.where for a choice, not if), or move the read outside f",
            what,
        )

    def item(self):
        self._refuse("t.item()")

    def numpy(self):
        self._refuse("t.numpy()")

    def tolist(self):
        self._refuse("t.tolist()")

    def __array__(self, dtype=None, copy=None):
        self._refuse("np.asarray(t)")

    def __bool__(self):
        self._refuse("bool(t)")

    def __float__(self):
        self._refuse("float(t)")

    def __int__(self):
        self._refuse("int(t)")

    def __complex__(self):
        self._refuse("complex(t)")

    @property
    def data(self):
        self._refuse("t.data")

    def __repr__(self) -> str:
        sizes = "x".join(str(s) for s in self._data.shape[: len(self._levels)])
        return f"Batched(shape={self.shape}, dtype={self.dtype}, batch={sizes})"
