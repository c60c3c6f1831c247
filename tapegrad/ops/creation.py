"""Constructors and constant-shaped results, each taking ``dtype=`` and ``requires_grad=``.

- ``zeros``, ``ones``, ``eye``, ``arange``, ``rand``, ``randn`` (``rng=``: a ``numpy.random.Generator``, a
  seed, or None for the process's generator): new NumPy tensors, leaves that ask for a gradient with
  ``requires_grad=True``. A draw from a generator is a ``tg.random`` op, so a compiled function draws anew on
  every call; a seed draws the same numbers on every call, compiled or not.
- ``zeros_like``, ``ones_like`` (no gradient), in the library of their input, so rules use them through ``xp``
  for constants on a recorded replay too.
- ``full``/``full_like``, whose fill value, when it is a tensor, gets the gradient (summed over the places it
  filled, as ``broadcast_to``), and ``linspace``, whose ``start`` and ``stop``, when they are tensors, get theirs.
"""

import numpy as np

from .._tensor import Tensor
from ..random import random as draw_uniform
from ..random import standard_normal as draw_normal
from ..registry import defnondiff
from .arrange import moveaxis
from .elementwise import add, astype, divide, multiply, subtract, where
from .shape import broadcast_to


def _shape(a):
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def _leaf(array, requires_grad, op):
    """A tensor of ``array``: a leaf asking for a gradient with ``requires_grad=True`` (floating dtypes only)."""
    if not requires_grad:
        return Tensor._wrap(array)
    if not np.issubdtype(array.dtype, np.inexact):
        raise TypeError(
            f"{op}(requires_grad=True) makes a {array.dtype} tensor, which has no gradient: pass dtype=np.float64 "
            "(or float32)"
        )
    return Tensor(array, requires_grad=True)


def _sizes(shape, op):
    # rand(2, 3) and rand((2, 3)), as PyTorch's constructors take them
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if not all(isinstance(n, (int, np.integer)) for n in shape):
        raise TypeError(f"{op}: the shape is integers, rand(2, 3) or rand((2, 3)); got {shape!r}")
    return tuple(int(n) for n in shape)


def zeros(shape, dtype=None, *, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros (float64 unless ``dtype``).

    >>> import tapegrad as tg
    >>> tg.zeros((2,), requires_grad=True)
    Tensor([0., 0.], requires_grad=True)
    """
    return _leaf(np.zeros(shape, dtype=dtype), requires_grad, "zeros")


def ones(shape, dtype=None, *, requires_grad: bool = False) -> Tensor:
    """A tensor of ones (float64 unless ``dtype``).

    >>> import tapegrad as tg
    >>> tg.ones(2, dtype="float32")
    Tensor([1., 1.], dtype=float32)
    """
    return _leaf(np.ones(shape, dtype=dtype), requires_grad, "ones")


def eye(N, M=None, k=0, dtype=None, *, requires_grad: bool = False) -> Tensor:
    """Ones on diagonal ``k`` of an ``N`` by ``M`` (default ``N``) tensor, zeros elsewhere.

    >>> import tapegrad as tg
    >>> tg.eye(2)
    Tensor([[1., 0.],
            [0., 1.]])
    """
    return _leaf(np.eye(N, M, k, dtype=dtype if dtype is not None else float), requires_grad, "eye")


def arange(start, stop=None, step=None, dtype=None, *, requires_grad: bool = False) -> Tensor:
    """Evenly spaced values in ``[start, stop)``, as ``np.arange`` (integers for integer arguments).

    >>> import tapegrad as tg
    >>> tg.arange(3.0, requires_grad=True)
    Tensor([0., 1., 2.], requires_grad=True)
    """
    args = (start,) if stop is None else ((start, stop) if step is None else (start, stop, step))
    return _leaf(np.arange(*args, dtype=dtype), requires_grad, "arange")


_PROCESS_RNG = np.random.default_rng()  # rng=None: one generator for the process, as torch.randn's default


def _draw(rng, draw_op, method, shape, dtype):
    """``shape`` numbers from ``rng``: through the ``tg.random`` op for a generator (drawn anew by every call of a
    compiled function), eagerly for a seed (the same numbers every call: a constant, compiled or not)."""
    if rng is None:
        rng = _PROCESS_RNG
    if isinstance(rng, np.random.Generator):
        return draw_op(rng, shape, dtype)._data
    return getattr(np.random.default_rng(rng), method)(shape, dtype=dtype)


def rand(*shape, rng=None, dtype=None, requires_grad: bool = False) -> Tensor:
    """Uniform samples in ``[0, 1)`` of ``shape`` from ``rng`` (a ``numpy.random.Generator``, a seed, or None for
    the process's generator), float64 unless ``dtype`` (float32).

    >>> import tapegrad as tg
    >>> bool((tg.rand(2, 3, rng=0) == tg.rand((2, 3), rng=0)).all())
    True
    """
    dtype = np.dtype(dtype if dtype is not None else np.float64)
    return _leaf(_draw(rng, draw_uniform, "random", _sizes(shape, "rand"), dtype), requires_grad, "rand")


def randn(*shape, rng=None, dtype=None, requires_grad: bool = False) -> Tensor:
    """Standard normal samples of ``shape`` from ``rng`` (a ``numpy.random.Generator``, a seed, or None for the
    process's generator), float64 unless ``dtype`` (float32).

    >>> import tapegrad as tg
    >>> tg.randn(3, rng=1, requires_grad=True).shape
    (3,)
    """
    dtype = np.dtype(dtype if dtype is not None else np.float64)
    draw = _draw(rng, draw_normal, "standard_normal", _sizes(shape, "randn"), dtype)
    return _leaf(draw, requires_grad, "randn")


_zeros_like = defnondiff("zeros_like", lambda a, dtype=None, *, xp=np: xp.zeros_like(a, dtype=dtype), batch="leading")
_ones_like = defnondiff("ones_like", lambda a, dtype=None, *, xp=np: xp.ones_like(a, dtype=dtype), batch="leading")
_full_like = defnondiff(
    "full_like", lambda a, fill_value, dtype=None, *, xp=np: xp.full_like(a, fill_value, dtype=dtype), batch="leading"
)


def _like_leaf(out, requires_grad, op):
    return out if not requires_grad else _leaf(out._data, True, op)


def zeros_like(a, dtype=None, *, requires_grad: bool = False) -> Tensor:
    """Zeros of ``a``'s shape, dtype and array library (no gradient flows to ``a``).

    >>> import tapegrad as tg
    >>> tg.zeros_like(tg.Tensor([1.0, 2.0]))
    Tensor([0., 0.])
    """
    return _like_leaf(_zeros_like(a, dtype=dtype) if dtype is not None else _zeros_like(a), requires_grad, "zeros_like")


def ones_like(a, dtype=None, *, requires_grad: bool = False) -> Tensor:
    """Ones of ``a``'s shape, dtype and array library (no gradient flows to ``a``).

    >>> import tapegrad as tg
    >>> tg.ones_like(tg.Tensor([1.0, 2.0]))
    Tensor([1., 1.])
    """
    return _like_leaf(_ones_like(a, dtype=dtype) if dtype is not None else _ones_like(a), requires_grad, "ones_like")


def _tensor_fill(fill_value, requires_grad, op):
    if requires_grad:
        raise ValueError(
            f"{op}: the fill value is a tensor, so the result is computed from it and its gradient flows back to "
            "the fill value; requires_grad=True (a new leaf) is for constant fill values"
        )


def full(shape, fill_value, dtype=None, *, requires_grad: bool = False) -> Tensor:
    """A tensor of ``shape`` filled with ``fill_value``; a tensor fill value gets the gradient (summed).

    >>> import tapegrad as tg
    >>> tg.full((2,), tg.Tensor(3.0))
    Tensor([3., 3.])
    """
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)
    if not isinstance(fill_value, Tensor):
        return _leaf(np.full(shape, fill_value, dtype=dtype), requires_grad, "full")
    _tensor_fill(fill_value, requires_grad, "full")
    out = broadcast_to(fill_value, shape)
    return out if dtype is None or out.dtype == dtype else astype(out, dtype=dtype)


def full_like(a, fill_value, dtype=None, *, requires_grad: bool = False) -> Tensor:
    """A tensor of ``a``'s shape and dtype (or ``dtype``) filled with ``fill_value``; a tensor fill value gets
    the gradient (summed).

    >>> import tapegrad as tg
    >>> tg.full_like(tg.Tensor([1.0, 2.0]), 0.5)
    Tensor([0.5, 0.5])
    """
    if not isinstance(fill_value, Tensor):
        return _like_leaf(_full_like(a, fill_value=fill_value, dtype=dtype), requires_grad, "full_like")
    _tensor_fill(fill_value, requires_grad, "full_like")
    out = broadcast_to(fill_value, _shape(a))
    dtype = dtype if dtype is not None else getattr(a, "dtype", None)
    return out if dtype is None or out.dtype == dtype else astype(out, dtype=dtype)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, requires_grad=False):
    """``num`` evenly spaced values from ``start`` to ``stop``, as ``np.linspace``; tensor ``start`` and ``stop``
    get their gradients (the values are ``start + i * (stop - start) / (num - endpoint)``).

    >>> import tapegrad as tg
    >>> a = tg.Tensor(0.0, requires_grad=True)
    >>> tg.grad(lambda a: tg.linspace(a, 1.0, 5).sum())(a)   # every value moves with start but the last
    array(2.5)
    """
    if not isinstance(start, Tensor) and not isinstance(stop, Tensor):
        out = np.linspace(start, stop, num, endpoint, retstep, dtype, axis)
        return (_leaf(out[0], requires_grad, "linspace"), out[1]) if retstep else _leaf(out, requires_grad, "linspace")
    _tensor_fill(start, requires_grad, "linspace")
    num = int(num)
    if num < 0:
        raise ValueError(f"linspace: the number of samples, {num}, must be non-negative")
    div = num - 1 if endpoint else num
    span = subtract(stop, start)
    ndim = max(len(_shape(start)), len(_shape(stop)))
    steps = np.arange(num, dtype=float).reshape((num,) + (1,) * ndim)  # broadcasts against start and stop
    step = divide(span, div) if div > 0 else multiply(span, np.nan)  # NumPy's step is NaN for one sample
    out = add(multiply(steps, step if div > 0 else span), start)
    if endpoint and num > 1:
        out = where((np.arange(num) == num - 1).reshape(steps.shape), stop, out)  # the last value is stop exactly
    if dtype is not None:
        out = astype(out, dtype=np.dtype(dtype))
    if axis != 0:
        out = moveaxis(out, 0, axis)
    return (out, step) if retstep else out


# tapegrad's constructors of new tensors from a shape: no array argument, so NumPy never hands them to tapegrad
CONSTRUCTORS = (zeros, ones, eye, arange, full, rand, randn)
