"""Shape and lookup layers: ``Identity``, ``Flatten``, ``Unflatten`` and ``Embedding`` (PyTorch's arguments).

``Embedding`` draws its table from ``N(0, 1)`` with ``rng`` (a Generator or a seed); the ``padding_idx`` row
starts at 0 and gets no gradient. A frozen table (``from_pretrained(..., freeze=True)``) is a buffer: in the
state dict, out of the optimizer's reach.
"""

from __future__ import annotations

import math

import numpy as np

import tapegrad.nn.functional as F
import tapegrad.ops as ops

from .._tensor import Tensor
from .init import generator as _generator
from .module import Module

__all__ = ["Identity", "Flatten", "Unflatten", "Embedding"]


class Identity(Module):
    """Returns its input; takes (and ignores) any arguments, as PyTorch's does.

    >>> import tapegrad as tg
    >>> tg.nn.Identity(54, unused="x")(tg.Tensor([1.0]))
    Tensor([1.])
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


def _axis(dim: int, ndim: int, what: str) -> int:
    if not -ndim <= dim < ndim:
        raise ValueError(f"{what}: dim {dim} is out of range for an input of {ndim} dimensions")
    return dim % ndim


class Flatten(Module):
    """Merge axes ``start_dim`` to ``end_dim`` (inclusive) into one: ``(N, C, H, W) -> (N, C * H * W)`` by default.

    >>> import numpy as np, tapegrad as tg
    >>> tg.nn.Flatten()(tg.Tensor(np.zeros((2, 3, 4, 5)))).shape
    (2, 60)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim == 0:
            return ops.reshape(x, (1,))
        start, end = _axis(self.start_dim, x.ndim, "Flatten"), _axis(self.end_dim, x.ndim, "Flatten")
        if start > end:
            raise ValueError(f"Flatten: start_dim {self.start_dim} comes after end_dim {self.end_dim}")
        return ops.reshape(x, x.shape[:start] + (math.prod(x.shape[start : end + 1]),) + x.shape[end + 1 :])

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split axis ``dim`` into ``unflattened_size`` (one entry may be -1).

    >>> import numpy as np, tapegrad as tg
    >>> tg.nn.Unflatten(1, (3, 4))(tg.Tensor(np.zeros((2, 12)))).shape
    (2, 3, 4)
    """

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, x: Tensor) -> Tensor:
        axis = _axis(self.dim, x.ndim, "Unflatten")
        size = self.unflattened_size
        known = math.prod(n for n in size if n != -1)
        if size.count(-1) > 1 or (-1 not in size and known != x.shape[axis]) or (known and x.shape[axis] % known):
            raise ValueError(f"Unflatten: cannot split axis {self.dim} of size {x.shape[axis]} into {size}")
        return ops.reshape(x, x.shape[:axis] + size + x.shape[axis + 1 :])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Embedding(Module):
    """A table of ``num_embeddings`` vectors of size ``embedding_dim``, looked up by integer index.

    ``weight`` starts as ``N(0, 1)`` draws (PyTorch's default) with the ``padding_idx`` row, if any, set to 0; that
    row gets no gradient.

    >>> import numpy as np, tapegrad as tg
    >>> emb = tg.nn.Embedding(10, 3, padding_idx=0, rng=0)
    >>> emb(np.array([[0, 4, 4]])).shape, emb.weight.data[0].tolist()
    ((1, 3, 3), [0.0, 0.0, 0.0])
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm=None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight=None,
        _freeze: bool = False,
        rng=None,
        dtype=np.float64,
    ):
        super().__init__()
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise NotImplementedError("Embedding: max_norm, scale_grad_by_freq and sparse are not supported")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} is out of range for {num_embeddings} rows")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        if _weight is None:
            weight = _generator(rng).normal(0.0, 1.0, (num_embeddings, embedding_dim)).astype(dtype)
            if padding_idx is not None:
                weight[padding_idx] = 0.0
        else:
            weight = np.array(_weight.data if isinstance(_weight, Tensor) else _weight)
            if weight.shape != (num_embeddings, embedding_dim):
                raise ValueError(
                    f"Embedding: _weight has shape {weight.shape}, expected {(num_embeddings, embedding_dim)}"
                )
        if _freeze:  # in the state dict, out of the optimizer's reach
            self.register_buffer("weight", Tensor(weight))
        else:
            self.weight = Tensor(weight, requires_grad=True)

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx: int | None = None) -> Embedding:
        """An Embedding holding a copy of ``embeddings`` ``(num, dim)``; ``freeze`` keeps it out of training."""
        data = np.asarray(embeddings.data if isinstance(embeddings, Tensor) else embeddings)
        if data.ndim != 2:
            raise ValueError(f"Embedding.from_pretrained: embeddings must be 2-D, got shape {data.shape}")
        return cls(*data.shape, padding_idx=padding_idx, _weight=data, _freeze=freeze)

    def forward(self, indices) -> Tensor:
        return F.embedding(indices, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"
