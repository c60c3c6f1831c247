"""Activation layers, each a module around the function of the same name in ``tapegrad.nn.functional``:
``GELU``, ``SiLU``, ``LeakyReLU``, ``ELU``, ``SELU``, ``Softplus``, ``Hardtanh``, ``ReLU6``, ``LogSigmoid``,
``Softmax``, ``LogSoftmax`` (``ReLU``, ``Tanh`` and ``Sigmoid`` are in ``tapegrad.nn.layers``)."""

from __future__ import annotations

import tapegrad.nn.functional as F

from .._tensor import Tensor
from .module import Module

__all__ = [
    "GELU",
    "SiLU",
    "LeakyReLU",
    "ELU",
    "SELU",
    "Softplus",
    "Hardtanh",
    "ReLU6",
    "LogSigmoid",
    "Softmax",
    "LogSoftmax",
]


class GELU(Module):
    """``x * Phi(x)`` (``approximate="none"``) or its tanh form (``"tanh"``).

    >>> import tapegrad as tg
    >>> tg.nn.GELU()(tg.Tensor([1.0]))
    Tensor([0.84134475])
    """

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """``x * sigmoid(x)``.

    >>> import tapegrad as tg
    >>> tg.nn.SiLU()(tg.Tensor([0.0]))
    Tensor([0.])
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.silu(x)


class LeakyReLU(Module):
    """``x`` where positive, else ``negative_slope * x``.

    >>> import tapegrad as tg
    >>> tg.nn.LeakyReLU(0.1)(tg.Tensor([-1.0]))
    Tensor([-0.1])
    """

    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: Tensor) -> Tensor:
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class ELU(Module):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``.

    >>> import tapegrad as tg
    >>> tg.nn.ELU()(tg.Tensor([-1000.0]))
    Tensor([-1.])
    """

    def __init__(self, alpha: float = 1.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: Tensor) -> Tensor:
        return F.elu(x, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class SELU(Module):
    """The self-normalising ``scale * elu(x, alpha)``.

    >>> import tapegrad as tg
    >>> tg.nn.SELU()(tg.Tensor([0.0]))
    Tensor([0.])
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.selu(x)


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``, linear past ``threshold``.

    >>> import tapegrad as tg
    >>> tg.nn.Softplus()(tg.Tensor([0.0]))
    Tensor([0.69314718])
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x: Tensor) -> Tensor:
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """``x`` clipped to ``[min_val, max_val]``.

    >>> import tapegrad as tg
    >>> tg.nn.Hardtanh()(tg.Tensor([-3.0, 0.5]))
    Tensor([-1. ,  0.5])
    """

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0):
        super().__init__()
        self.min_val, self.max_val = min_val, max_val

    def forward(self, x: Tensor) -> Tensor:
        return F.hardtanh(x, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class ReLU6(Module):
    """``min(max(x, 0), 6)``.

    >>> import tapegrad as tg
    >>> tg.nn.ReLU6()(tg.Tensor([7.0]))
    Tensor([6.])
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.relu6(x)


class LogSigmoid(Module):
    """``log(sigmoid(x))``, stable for large ``|x|``.

    >>> import tapegrad as tg
    >>> tg.nn.LogSigmoid()(tg.Tensor([-1000.0]))
    Tensor([-1000.])
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.logsigmoid(x)


class Softmax(Module):
    """``softmax`` along ``dim``.

    >>> import tapegrad as tg
    >>> tg.nn.Softmax(dim=-1)(tg.Tensor([0.0, 0.0]))
    Tensor([0.5, 0.5])
    """

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """``log_softmax`` along ``dim``.

    >>> import tapegrad as tg
    >>> tg.nn.LogSoftmax(dim=-1)(tg.Tensor([0.0, 0.0]))
    Tensor([-0.69314718, -0.69314718])
    """

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
