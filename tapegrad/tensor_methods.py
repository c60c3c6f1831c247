"""Tensor's operators and op methods, bound from one table: grep ``METHODS`` to find any of them.

Each row maps a method name to the function it runs; a function whose first parameter is the tensor (``exp``,
``sum``) is bound as it is, so ``x.sum(axis=0)`` is ``tg.sum(x, axis=0)``. Reflected operators swap their
arguments (``other - self``). The :class:`~tapegrad.Tensor` class itself imports nothing of the engine;
this module, above the ops, binds them in one loop when the package is imported.

A tensor reads as an ndarray (``ravel``, ``std``, ``cumsum``, ``swapaxes``, ``x.real``, ``x.mT``...), with the
few PyTorch spellings users reach for (``view``, ``permute``, ``unsqueeze``, ``flatten(start_dim, end_dim)``,
``dim()``) and JAX's indexed update ``x.at[i].set(v)``. Unlike NumPy's, ``x.sort()`` returns a sorted tensor
and leaves ``x`` as it is: a tape never sees a value change under it.

NumPy's dispatch protocols (``__array_ufunc__``, ``__array_function__``: ``np.exp(t)``, ``np.sum(t)``) are two
rows too; their implementations are built by :mod:`tapegrad.numpy` from its table of NumPy functions and put
in place with :func:`set_numpy_protocols` (the slot is this module's, the table the layer above's).

>>> import tapegrad as tg
>>> x = tg.Tensor([1.0, 2.0])
>>> (2 - x).numpy(), x.sum().item()
(array([1., 0.]), 3.0)
"""

from __future__ import annotations

import operator

import numpy as np

import tapegrad.ops as ops

from ._batched import Batched
from ._state import is_recording, is_traced, is_transform_argument
from ._tensor import Tensor, update_in_place
from .core import backward_of, register_hook
from .core.record import method_of
from .ops.indexing import At

__all__ = ["METHODS", "PROPERTIES", "set_numpy_protocols"]


def _index_of(index):
    # Tensor indices (masks, integer arrays) index by their data; nothing is differentiated through them. A
    # batched one (inside vmap) stays a tensor: its data holds every example's, which vmap's rules line up.
    if isinstance(index, Tensor):
        return index if index.__class__ is Batched else index._data
    if isinstance(index, tuple):
        return tuple(i._data if isinstance(i, Tensor) and i.__class__ is not Batched else i for i in index)
    if isinstance(index, list):
        return np.asarray(index)
    return index


def _astype(x, dtype):
    """Cast to ``dtype`` (differentiable between floating dtypes)."""
    return ops.astype(x, dtype=np.dtype(dtype) if x._data.__class__ is np.ndarray else dtype)


def _reshape(x, *shape, order="C"):
    """Give x a new shape: ``x.reshape(2, 3)`` or ``x.reshape((2, 3))``; ``order="F"`` reads and writes the
    elements first index fastest, as NumPy's.

    >>> import tapegrad as tg
    >>> tg.Tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).reshape((3, 2), order="F")
    Tensor([[1., 5.],
            [4., 3.],
            [2., 6.]])
    """
    return reshaped(x, shape[0] if len(shape) == 1 else shape, order)


def reshaped(x, shape, order="C"):
    """``x`` reshaped to ``shape`` in NumPy's ``order``: "C" (and "A", "K": tensors are C-ordered), or "F", which
    is the C reshape of the reversed axes, reversed back (so its gradient is the recorded ops')."""
    if order == "F":
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        return ops.transpose(ops.reshape(ops.transpose(x), shape[::-1]))
    if order not in ("C", "A", "K", None):
        raise ValueError(f"reshape: order must be 'C', 'F', 'A' or 'K', got {order!r}")
    return ops.reshape(x, shape)


def _transpose(x, *axes):
    """Permute the axes: ``x.transpose()``, ``x.transpose(1, 0)`` or ``x.transpose((1, 0))``."""
    return ops.transpose(x, axes[0] if len(axes) == 1 else (axes or None))


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


def _flatten(x, start_dim=0, end_dim=-1, *, order=None):
    """The axes ``start_dim`` to ``end_dim`` merged into one: all of them by default (``x.flatten()``, NumPy's
    and PyTorch's), or a range (PyTorch's ``x.flatten(1)``); NumPy's ``x.flatten("F")`` (or ``order="F"``) reads
    the elements first index fastest.

    >>> import tapegrad as tg
    >>> tg.zeros((2, 3, 4)).flatten(1).shape
    (2, 12)
    """
    if isinstance(start_dim, str) or order is not None:  # NumPy's flatten(order)
        return reshaped(x, -1, start_dim if isinstance(start_dim, str) else order)
    shape, n = x.shape, x.ndim
    if n == 0:
        return ops.reshape(x, (1,))
    start, end = start_dim % n, end_dim % n
    if start > end:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} for shape {shape}")
    merged = 1
    for d in shape[start : end + 1]:
        merged *= d
    return ops.reshape(x, shape[:start] + (merged,) + shape[end + 1 :])


def _view(x, *shape):
    """PyTorch's spelling of ``reshape``: ``x.view(2, 3)`` or ``x.view((2, 3))`` (tapegrad never aliases)."""
    return _reshape(x, *shape)


def _permute(x, *dims):
    """PyTorch's spelling of ``transpose(axes)``: ``x.permute(1, 0)`` or ``x.permute((1, 0))``."""
    return ops.transpose(x, dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims)


def _unsqueeze(x, dim):
    """PyTorch's spelling of ``expand_dims``: a new axis of length 1 at ``dim``."""
    return ops.expand_dims(x, axis=dim)


def _dim(x) -> int:
    """The number of axes, ``x.ndim`` (PyTorch's spelling)."""
    return x.ndim


def _mT(x):
    """The last two axes swapped (the transpose of each matrix in a stack), differentiable."""
    if x.ndim < 2:
        raise ValueError(f"x.mT needs at least 2 dimensions, got shape {x.shape}")
    return ops.swapaxes(x, -1, -2)


def _at(x):
    """JAX's indexed update: ``x.at[index].set(v)`` / ``.add(v)`` return a recorded copy of ``x`` (gradients to
    both ``x`` and ``v``; repeated indices accumulate for ``add``); ``x.at[index].get()`` is ``x[index]``.

    >>> import tapegrad as tg
    >>> tg.Tensor([1.0, 2.0, 3.0]).at[0].add(10.0)
    Tensor([11.,  2.,  3.])
    """
    return At(x)


def _setitem(x, index, value):
    """Tensors take no item assignment: a tape cannot record a write into memory; ``x.at[index].set(v)`` (or
    ``.add(v)``) is the recorded spelling. One case is NumPy's and passes: outside ``record()``, ``x[i] += v``
    with a basic index has already added into the view ``x[i]``, and Python then writes that view back onto itself.

    >>> import tapegrad as tg
    >>> x = tg.Tensor([1.0, 2.0, 3.0])
    >>> x[0:2] += 1.0
    >>> x
    Tensor([2., 3., 3.])
    """
    if isinstance(value, Tensor) and _is_view_of(value._data, x._data, index):
        return
    raise TypeError(
        f"x[index] = v on a tensor of shape {x.shape}: tensors take no item assignment (a tape cannot record a "
        "write into memory). Write x = x.at[index].set(v), or x = x.at[index].add(v) for x[index] += v"
    )


def _is_view_of(v, data, index) -> bool:
    """Whether ``v`` is exactly the memory ``data[index]`` refers to (the same address, shape and strides)."""
    if v.__class__ is not np.ndarray or data.__class__ is not np.ndarray or v.base is None:
        return False
    try:
        view = data[_index_of(index)]
    except (IndexError, TypeError, ValueError):
        return False
    if not isinstance(view, np.ndarray) or view.base is None:
        return False
    return (
        v.__array_interface__["data"][0] == view.__array_interface__["data"][0]
        and v.shape == view.shape
        and v.strides == view.strides
    )


def _sort(x, axis=-1, kind=None):
    """A sorted copy along ``axis`` (None: flattened); ``x`` is left as it is, unlike NumPy's in-place
    ``ndarray.sort``. The gradient follows the permutation."""
    return ops.sort(x, axis=axis, kind=kind)


def _compress(x, condition, axis=None):
    """The slices along ``axis`` (None: the flattened elements) where ``condition`` holds, as ndarray.compress."""
    return ops.compress(condition, x, axis=axis)


def _divmod(x, y):
    return ops.floor_divide(x, y), ops.remainder(x, y)


def _format(x, spec: str) -> str:
    """``f"{loss:.4f}"``: a 0-d tensor formats as its number; a format spec on a larger tensor raises, as on an
    ndarray (format its ``.item()`` or its values instead)."""
    if not spec:
        return str(x)
    if x.ndim != 0:
        raise TypeError(
            f"format spec {spec!r} on a tensor of shape {x.shape}: only a 0-d tensor formats as a number; "
            "format t.item() (one element) or np.array2string(t.data, ...) instead"
        )
    return format(x.item(), spec)


def _no_numpy(self, *args, **kwargs):
    raise TypeError("NumPy functions on tensors need tapegrad.numpy, which `import tapegrad` loads")


def set_numpy_protocols(array_ufunc, array_function) -> None:
    """Bind ``Tensor.__array_ufunc__`` (NEP 13) and ``Tensor.__array_function__`` (NEP 18): called once by
    :mod:`tapegrad.numpy`, which builds them from its table of NumPy functions; their rows in ``METHODS`` follow."""
    METHODS["__array_ufunc__"] = array_ufunc
    METHODS["__array_function__"] = array_function
    Tensor.__array_ufunc__ = array_ufunc
    Tensor.__array_function__ = array_function


def _reflected(f):
    """``other <op> self`` for the function ``f`` of ``self <op> other``: ``f(other, self)``."""

    def reflected(a, b):
        return f(b, a)

    reflected.reflects = f
    reflected.__doc__ = f"``f(b, a)`` for ``{getattr(f, '__name__', f)}``: Python's reflected operator."
    return reflected


# Operators: Python's syntax for an op. A reflected operator swaps its operands (``2 - x`` is ``x.__rsub__(2)``).
# fmt: off
OPERATORS = {
    "__add__": ops.add,
    "__radd__": _reflected(ops.add),                   # other + self
    "__sub__": ops.subtract,
    "__rsub__": _reflected(ops.subtract),              # other - self
    "__mul__": ops.multiply,
    "__rmul__": _reflected(ops.multiply),              # other * self
    "__truediv__": ops.divide,
    "__rtruediv__": _reflected(ops.divide),            # other / self
    "__pow__": ops.power,
    "__rpow__": _reflected(ops.power),                 # other ** self
    "__matmul__": ops.matmul,
    "__rmatmul__": _reflected(ops.matmul),             # other @ self
    "__floordiv__": ops.floor_divide,                  # no gradient (its derivative is 0)
    "__rfloordiv__": _reflected(ops.floor_divide),
    "__mod__": ops.remainder,
    "__rmod__": _reflected(ops.remainder),
    "__divmod__": _divmod,                             # (x // y, x % y)
    "__rdivmod__": _reflected(_divmod),
    "__neg__": ops.negative,
    "__pos__": ops.positive,                           # +x, a copy
    "__abs__": ops.absolute,
    # bitwise: logical on bool tensors, bits on integer ones (no gradient)
    "__and__": ops.bitwise_and,
    "__rand__": _reflected(ops.bitwise_and),
    "__or__": ops.bitwise_or,
    "__ror__": _reflected(ops.bitwise_or),
    "__xor__": ops.bitwise_xor,
    "__rxor__": _reflected(ops.bitwise_xor),
    "__invert__": ops.invert,
    "__getitem__": lambda a, index: ops.getitem(a, index=_index_of(index)),
    # comparisons: no gradient
    "__lt__": ops.less,
    "__le__": ops.less_equal,
    "__gt__": ops.greater,
    "__ge__": ops.greater_equal,
    "__eq__": ops.equal,
    "__ne__": ops.not_equal,
    "__format__": _format,
}

# Methods whose signature is not their function's (NumPy's ndarray methods take shapes as *args, and PyTorch's
# spellings), and the engine's
ADAPTED = {
    "reshape": _reshape,
    "transpose": _transpose,
    "astype": _astype,
    "flatten": _flatten,                               # NumPy's flatten(), PyTorch's flatten(start_dim, end_dim)
    "compress": _compress,                             # condition first, as ndarray.compress
    "sort": _sort,                                     # a sorted copy: NumPy's sorts in place
    "__setitem__": _setitem,                           # refused (x.at[i].set(v)), but for NumPy's x[i] += v
    # PyTorch's spellings
    "view": _view,
    "permute": _permute,
    "unsqueeze": _unsqueeze,
    "dim": _dim,
    # NumPy's dispatch protocols: set_numpy_protocols puts tapegrad.numpy's implementations here
    "__array_ufunc__": _no_numpy,
    "__array_function__": _no_numpy,
    # the engine
    "backward": _backward,
    "register_hook": _register_hook,
}

_EXTRA_PROPERTIES = {
    "T": ops.transpose,                                # the transpose (reverses all axes), differentiable
    "mT": _mT,                                         # the last two axes swapped
    "at": _at,                                         # JAX's x.at[i].set(v) / .add(v)
}
# fmt: on


# Augmented assignment, x <op>= y. Outside record() it writes into x's memory, as NumPy's does (other references
# see it; a tape that saved the array finds it changed). Inside record(), when x is an op's output or y is being
# recorded, it records x <op> y and rebinds the name, as autograd's and JAX's immutable arrays do (a tape cannot
# record a change of memory, and writing y's value into an unrecorded x would drop y's gradient). On a leaf
# that requires a gradient it is refused: the name would move off the parameter.
# fmt: off
AUGMENTED = {
    "__iadd__":       (ops.add,           "+="),
    "__isub__":       (ops.subtract,      "-="),
    "__imul__":       (ops.multiply,      "*="),
    "__itruediv__":   (ops.divide,        "/="),
    "__ifloordiv__":  (ops.floor_divide,  "//="),
    "__imod__":       (ops.remainder,     "%="),
    "__ipow__":       (ops.power,         "**="),
    "__imatmul__":    (ops.matmul,        "@="),
    "__iand__":       (ops.bitwise_and,   "&="),
    "__ior__":        (ops.bitwise_or,    "|="),
    "__ixor__":       (ops.bitwise_xor,   "^="),
}
# fmt: on


def _recorded(v) -> bool:
    if v.__class__ in (list, tuple):  # NumPy would read one holding a recorded tensor as a constant: the op refuses it
        return any(_recorded(o) for o in v)
    return isinstance(v, Tensor) and (v._node is not None or v.requires_grad)


def _augmented(name: str, f, symbol: str):
    in_place = getattr(operator, name)

    def augmented(x, y):
        # A traced y written into an untraced x would fold the trace's values into the program as a constant:
        # tg.compile's trace rebinds, as a recording does (and as jax.jit does)
        if (is_recording() and (x._node is not None or x.requires_grad or _recorded(y))) or is_traced(y):
            if x._node is None and x.requires_grad and not is_transform_argument(x):
                raise RuntimeError(
                    f"in-place {symbol} on a leaf that requires a gradient (shape {x.shape}), inside record(): the "
                    f"name would move off the parameter to a new value. Write z = x {symbol[:-1]} y, or update "
                    "x outside the block (an optimizer step)"
                )
            return f(x, y)  # out of place: the caller's name is rebound to the recorded value
        return update_in_place(x, y, f.op.numpy, in_place, symbol)

    augmented.__name__ = augmented.__qualname__ = name
    augmented.__doc__ = (
        f"``x {symbol} y``: in place outside ``record()``; inside it, ``x = x {symbol[:-1]} y`` recorded when a "
        "value is being recorded (refused on a leaf that requires a gradient, unless a transform made it of its "
        "function's argument)."
    )
    return augmented


def _op_methods() -> tuple[dict, dict]:
    """The methods and properties that are public functions of ``tapegrad.ops`` as they are, derived: each one
    named as a method (``x.sum``, ``x.round``) or an attribute (``x.real``) of NumPy's ndarray, and each op
    declared a method in its row (``method=True``: ``x.exp``; ``method="abs"``: ``x.abs``)."""
    methods, properties = {}, {}
    for name in ops.__all__:
        f = getattr(ops, name)
        op = getattr(f, "op", None)
        if op is not None and op.method and op.function is f:
            methods[name if op.method is True else op.method] = f
        kind = type(getattr(np.ndarray, name, None)).__name__
        if kind == "method_descriptor":
            methods[name] = f
        elif kind == "getset_descriptor":
            properties[name] = f
    return methods, properties


_METHODS, _PROPERTIES = _op_methods()
METHODS = {
    **_METHODS,
    **OPERATORS,
    **ADAPTED,
    **{name: _augmented(name, f, symbol) for name, (f, symbol) in AUGMENTED.items()},
}
PROPERTIES = {**_PROPERTIES, **_EXTRA_PROPERTIES}


def bind() -> None:
    """Put every row of the tables onto :class:`Tensor` (done once, when tapegrad is imported)."""
    for name, fn in METHODS.items():
        setattr(Tensor, name, method_of(fn, reflects=getattr(fn, "reflects", None)))
    for name, fn in PROPERTIES.items():
        setattr(Tensor, name, property(fn, doc=fn.__doc__))


bind()
