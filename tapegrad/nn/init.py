"""Parameter initialisation, PyTorch's ``torch.nn.init`` with a seeded generator (``rng=``).

Each function fills a tensor's array in place (through ``data``, so its version is bumped) and returns the
tensor. ``rng`` is a ``numpy.random.Generator`` or a seed for one (``None``: fresh entropy), as the layers take
it. Fans follow PyTorch: for a weight of shape ``(out, in, *kernel)``, ``fan_in = in * prod(kernel)`` and
``fan_out = out * prod(kernel)``.

>>> import numpy as np, tapegrad as tg
>>> w = tg.Tensor(np.empty((64, 32)), requires_grad=True)
>>> _ = tg.nn.init.kaiming_uniform_(w, nonlinearity="relu", rng=0)
>>> bool(np.abs(w.data).max() <= np.sqrt(6 / 32))
True
"""

from __future__ import annotations

import math

import numpy as np

from .._tensor import Tensor

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "constant_",
    "zeros_",
    "ones_",
    "eye_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
    "trunc_normal_",
]


def generator(rng) -> np.random.Generator:
    """``rng`` as a Generator: a Generator itself, or a seed (None: fresh entropy)."""
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def _fill(tensor: Tensor, values) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init: expected a Tensor, got {type(tensor).__name__}")
    data = tensor.data
    data[...] = np.asarray(values, dtype=tensor.dtype).reshape(tensor.shape)  # in place, as PyTorch's init_
    tensor.data = data  # the same array handed back: its memory is marked changed, so stale tapes refuse
    return tensor


def _fans(tensor: Tensor, what: str) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError(f"{what}: fan in and fan out need a tensor of at least 2 dimensions, got shape {tensor.shape}")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for ``nonlinearity`` (PyTorch's table).

    >>> round(calculate_gain("tanh"), 4), round(calculate_gain("leaky_relu", 0.2), 4)
    (1.6667, 1.3868)
    """
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"calculate_gain: negative_slope {slope!r} is not a number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, rng=None) -> Tensor:
    """Fill with draws from ``U(a, b)``."""
    return _fill(tensor, generator(rng).uniform(a, b, tensor.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, rng=None) -> Tensor:
    """Fill with draws from ``N(mean, std^2)``."""
    return _fill(tensor, generator(rng).normal(mean, std, tensor.shape))


def trunc_normal_(tensor: Tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, rng=None) -> Tensor:
    """Fill with ``N(mean, std^2)`` draws kept inside ``[a, b]`` (redrawn until they are)."""
    gen, out = generator(rng), np.empty(tensor.shape).ravel()
    todo = np.arange(out.size)
    while todo.size:
        out[todo] = gen.normal(mean, std, todo.size)
        todo = todo[(out[todo] < a) | (out[todo] > b)]
    return _fill(tensor, out)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    return _fill(tensor, np.full(tensor.shape, val))


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros."""
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones."""
    return constant_(tensor, 1.0)


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (a 2-D tensor)."""
    if tensor.ndim != 2:
        raise ValueError(f"eye_: needs a 2-D tensor, got shape {tensor.shape}")
    return _fill(tensor, np.eye(*tensor.shape))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, rng=None) -> Tensor:
    """Glorot uniform: ``U(-a, a)`` with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans(tensor, "xavier_uniform_")
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -a, a, rng)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, rng=None) -> Tensor:
    """Glorot normal: ``N(0, std^2)`` with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans(tensor, "xavier_normal_")
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), rng)


def _kaiming_std(tensor, a, mode, nonlinearity, what):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"{what}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(tensor, what)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", rng=None) -> Tensor:
    """He uniform: ``U(-b, b)`` with ``b = gain * sqrt(3 / fan)``; ``a`` is the leaky ReLU's negative slope
    (``a = sqrt(5)`` gives PyTorch's default for linear and convolution weights, ``b = 1 / sqrt(fan_in)``)."""
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_uniform_")
    return uniform_(tensor, -bound, bound, rng)


def kaiming_normal_(tensor: Tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", rng=None) -> Tensor:
    """He normal: ``N(0, std^2)`` with ``std = gain / sqrt(fan)``."""
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_normal_"), rng)


def orthogonal_(tensor: Tensor, gain: float = 1.0, rng=None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR decomposition of a Gaussian one (PyTorch's method): rows or
    columns orthonormal, times ``gain``; tensors of more dimensions are flattened to ``(shape[0], -1)``.

    >>> import numpy as np, tapegrad as tg
    >>> q = tg.nn.init.orthogonal_(tg.Tensor(np.empty((3, 5))), rng=0).data
    >>> bool(np.allclose(q @ q.T, np.eye(3)))
    True
    """
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: needs a tensor of at least 2 dimensions, got shape {tensor.shape}")
    rows = tensor.shape[0]
    cols = tensor.size // rows
    flat = generator(rng).normal(0.0, 1.0, (rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))  # a unique decomposition: the distribution is uniform over orthogonal matrices
    if rows < cols:
        q = q.T
    return _fill(tensor, gain * q)
