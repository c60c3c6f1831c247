"""Layers: ``Linear``, ``Sequential``, the activations ``ReLU``, ``Tanh``, ``Sigmoid``, and ``Dropout``.

Layers that draw random numbers take ``rng``: a ``numpy.random.Generator``, or a seed for one (``None`` draws
fresh entropy). Pass the same generator or seed to get the same model every run.
"""

from __future__ import annotations

import math

import numpy as np

import tapegrad.nn.functional as F
import tapegrad.ops as ops

from .._tensor import Tensor
from .init import generator as _generator
from .module import Module

__all__ = ["Linear", "Sequential", "ReLU", "Tanh", "Sigmoid", "Dropout"]


class Linear(Module):
    """``y = x @ weight.T + bias``, with ``weight`` of shape ``(out_features, in_features)``.

    Initialisation (PyTorch's default): every weight and bias drawn independently from
    ``U(-1/sqrt(in_features), 1/sqrt(in_features))`` using ``rng`` (a Generator or a seed).

    >>> import numpy as np, tapegrad as tg
    >>> layer = tg.nn.Linear(4, 3, rng=0)
    >>> layer(tg.Tensor(np.ones((2, 4)))).shape
    (2, 3)
    >>> bool(np.abs(layer.weight.data).max() <= 0.5)   # 1 / sqrt(4)
    True
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, rng=None, dtype=np.float64):
        super().__init__()
        if in_features < 1 or out_features < 1:
            raise ValueError(f"Linear: in_features and out_features must be >= 1, got {in_features}, {out_features}")
        gen = _generator(rng)
        bound = 1.0 / math.sqrt(in_features)
        self.in_features, self.out_features = in_features, out_features
        self.weight = Tensor(gen.uniform(-bound, bound, (out_features, in_features)).astype(dtype), requires_grad=True)
        self.bias = Tensor(gen.uniform(-bound, bound, out_features).astype(dtype), requires_grad=True) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        if x.shape[-1] != self.in_features:
            raise ValueError(
                f"Linear({self.in_features}, {self.out_features}): input has {x.shape[-1]} features "
                f"(shape {x.shape}), expected {self.in_features} in the last axis"
            )
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, bias={self.bias is not None}"


class Sequential(Module):
    """Apply modules in order; they are named ``"0"``, ``"1"``, ... in ``named_parameters()``.

    >>> import numpy as np, tapegrad as tg
    >>> model = tg.nn.Sequential(tg.nn.Linear(2, 8, rng=0), tg.nn.Tanh(), tg.nn.Linear(8, 1, rng=1))
    >>> len(model), model(tg.Tensor(np.zeros((5, 2)))).shape
    (3, (5, 1))
    """

    def __init__(self, *modules: Module):
        super().__init__()
        for i, m in enumerate(modules):
            if not isinstance(m, Module):
                raise TypeError(f"Sequential: item {i} is a {type(m).__name__}, not a Module")
            setattr(self, str(i), m)
        self._n = len(modules)

    def forward(self, x):
        for m in self:
            x = m(x)
        return x

    def __len__(self) -> int:
        return self._n

    def __iter__(self):
        return (getattr(self, str(i)) for i in range(self._n))

    def __getitem__(self, i: int) -> Module:
        if not -self._n <= i < self._n:
            raise IndexError(f"Sequential index {i} out of range for {self._n} modules")
        return getattr(self, str(i % self._n))


class ReLU(Module):
    """``max(x, 0)`` elementwise.

    >>> import tapegrad as tg
    >>> tg.nn.ReLU()(tg.Tensor([-1.0, 2.0]))
    Tensor([0., 2.])
    """

    def forward(self, x: Tensor) -> Tensor:
        return ops.relu(x)


class Tanh(Module):
    """``tanh(x)`` elementwise.

    >>> import tapegrad as tg
    >>> tg.nn.Tanh()(tg.Tensor([0.0]))
    Tensor([0.])
    """

    def forward(self, x: Tensor) -> Tensor:
        return ops.tanh(x)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))`` elementwise.

    >>> import tapegrad as tg
    >>> tg.nn.Sigmoid()(tg.Tensor([0.0]))
    Tensor([0.5])
    """

    def forward(self, x: Tensor) -> Tensor:
        return ops.sigmoid(x)


class Dropout(Module):
    """Inverted dropout while training (zero with probability ``p``, scale by ``1/(1-p)``); identity in eval.

    The masks come from the layer's own generator ``rng`` (a Generator or a seed), whose state is saved in
    ``state_dict()`` (as ``"<name>._extra_state"``), so a resumed run draws the same masks.

    >>> import numpy as np, tapegrad as tg
    >>> drop = tg.nn.Dropout(0.5, rng=0)
    >>> x = tg.Tensor(np.ones(6))
    >>> drop(x).tolist()
    [2.0, 0.0, 0.0, 0.0, 2.0, 2.0]
    >>> drop.eval()(x).tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    """

    def __init__(self, p: float = 0.5, rng=None):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = p
        self.rng = _generator(rng)

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.rng, self.training)

    def get_extra_state(self) -> dict:
        return self.rng.bit_generator.state

    def set_extra_state(self, state: dict) -> None:
        self.rng.bit_generator.state = state

    def extra_repr(self) -> str:
        return f"p={self.p}"
