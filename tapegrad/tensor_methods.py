"""Tensor's operators and op methods, bound from one table: grep ``METHODS`` to find any of them.

Each row maps a method name to the function it runs; a function whose first parameter is the tensor (``exp``,
``sum``) is bound as it is, so ``x.sum(axis=0)`` is ``tg.sum(x, axis=0)``. Reflected operators swap their
arguments (``other - self``). The :class:`~tapegrad.tensor.Tensor` class itself imports nothing of the engine;
this module, above the ops, binds them in one loop when the package is imported.

>>> import tapegrad as tg
>>> x = tg.Tensor([1.0, 2.0])
>>> (2 - x).numpy(), x.sum().item()
(array([1., 0.]), 3.0)
"""

from __future__ import annotations

import numpy as np

from .core import backward_of, register_hook
from .ops import (
    absolute,
    add,
    argmax,
    argmin,
    astype,
    broadcast_to,
    clip,
    cos,
    divide,
    equal,
    exp,
    expand_dims,
    getitem,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    log_softmax,
    logsumexp,
    matmul,
    max,
    mean,
    min,
    multiply,
    negative,
    not_equal,
    power,
    relu,
    reshape,
    sigmoid,
    sin,
    softmax,
    sqrt,
    squeeze,
    subtract,
    sum,
    tanh,
    transpose,
    var,
)
from .tensor import Tensor

__all__ = ["METHODS", "PROPERTIES"]


def _index_of(index):
    # Tensor indices (masks, integer arrays) index by their data; nothing is differentiated through them.
    if isinstance(index, Tensor):
        return index._data
    if isinstance(index, tuple):
        return tuple(i._data if isinstance(i, Tensor) else i for i in index)
    if isinstance(index, list):
        return np.asarray(index)
    return index


def _astype(x, dtype):
    """Cast to ``dtype`` (differentiable between floating dtypes)."""
    return astype(x, dtype=np.dtype(dtype) if x._data.__class__ is np.ndarray else dtype)


def _reshape(x, *shape):
    """Give x a new shape: ``x.reshape(2, 3)`` or ``x.reshape((2, 3))``."""
    return reshape(x, shape[0] if len(shape) == 1 else shape)


def _transpose(x, *axes):
    """Permute the axes: ``x.transpose()``, ``x.transpose(1, 0)`` or ``x.transpose((1, 0))``."""
    return transpose(x, axes[0] if len(axes) == 1 else (axes or None))


def _backward(x, gradient=None, *, create_graph: bool = False, trace=False) -> None:
    """Replay the tape that recorded this tensor, accumulating ``.grad`` on every leaf it reaches.

    ``gradient`` is required when this tensor is not a scalar (the vector in the vector-Jacobian
    product). With ``create_graph=True`` the replay is itself recorded, so the gradients it writes are
    tensors that can be differentiated again; the tape is kept. ``trace=True`` (or a file to write to)
    prints each adjoint update in replay order (see :mod:`tapegrad.debug`).

    >>> import tapegrad as tg
    >>> x = tg.Tensor(2.0, requires_grad=True)
    >>> with tg.record():
    ...     y = x ** 3
    >>> y.backward(create_graph=True)
    >>> dydx = x.grad; x.grad = None
    >>> dydx.backward(); float(x.grad)
    12.0
    """
    backward_of(x, gradient, create_graph, trace)


def _register_hook(x, fn):
    """Call ``fn(grad)`` when replay reaches this tensor's gradient; a non-None return replaces it.

    Returns a handle whose ``remove()`` unregisters the hook.

    >>> import tapegrad as tg
    >>> x = tg.Tensor([1.0, -2.0], requires_grad=True)
    >>> h = x.register_hook(lambda g: g.clip(-0.5, 0.5))
    >>> with tg.record():
    ...     y = (3 * x).sum()
    >>> y.backward(); x.grad
    array([0.5, 0.5])
    """
    return register_hook(x, fn)


# fmt: off
METHODS = {
    # arithmetic, reflected operators swap their operands
    "__add__": add,
    "__radd__": lambda a, b: add(b, a),            # other + self
    "__sub__": subtract,
    "__rsub__": lambda a, b: subtract(b, a),       # other - self
    "__mul__": multiply,
    "__rmul__": lambda a, b: multiply(b, a),       # other * self
    "__truediv__": divide,
    "__rtruediv__": lambda a, b: divide(b, a),     # other / self
    "__pow__": power,
    "__rpow__": lambda a, b: power(b, a),          # other ** self
    "__matmul__": matmul,
    "__rmatmul__": lambda a, b: matmul(b, a),      # other @ self
    "__neg__": negative,
    "__pos__": lambda a: a,
    "__abs__": absolute,
    "__getitem__": lambda a, index: getitem(a, index=_index_of(index)),
    # comparisons: no gradient
    "__lt__": less,
    "__le__": less_equal,
    "__gt__": greater,
    "__ge__": greater_equal,
    "__eq__": equal,
    "__ne__": not_equal,
    # methods that are ops, by NumPy's names
    "exp": exp,
    "log": log,
    "sqrt": sqrt,
    "sin": sin,
    "cos": cos,
    "tanh": tanh,
    "sigmoid": sigmoid,
    "relu": relu,
    "abs": absolute,
    "clip": clip,
    "sum": sum,
    "mean": mean,
    "var": var,
    "max": max,
    "min": min,
    "logsumexp": logsumexp,
    "softmax": softmax,
    "log_softmax": log_softmax,
    "reshape": _reshape,
    "transpose": _transpose,
    "expand_dims": expand_dims,
    "squeeze": squeeze,
    "broadcast_to": broadcast_to,
    "argmax": argmax,
    "argmin": argmin,
    "astype": _astype,
    # the engine
    "backward": _backward,
    "register_hook": _register_hook,
}

PROPERTIES = {
    "T": transpose,                                 # the transpose (reverses all axes), differentiable
}
# fmt: on


def bind() -> None:
    """Put every row of the tables onto :class:`Tensor` (done once, when tapegrad is imported)."""
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)
    for name, fn in PROPERTIES.items():
        setattr(Tensor, name, property(fn, doc=fn.__doc__))


bind()
