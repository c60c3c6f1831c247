"""Tensor: a NumPy array with ``grad`` and ``requires_grad``, and operators that delegate to the registered ops.

A tensor holds its array, its gradient, whether it needs one, and (when a tape recorded it) a bare ``Node``
token used as its identity during replay. It never points at the tensors it was computed from: the tape
owns the recorded computation, so releasing the tape releases it, whatever tensors the user keeps.
"""

from __future__ import annotations

import operator

import numpy as np

from .backend import NUMPY, backend_of

__all__ = ["Tensor", "tensor"]


class Tensor:
    """An n-dimensional array that tapegrad can differentiate.

    ``data`` is the array: NumPy's by default, or CuPy's or any array API library's (``tapegrad.backend``),
    kept as given, so a tensor stays where its array lives. ``grad`` is None until a backward pass reaches
    the tensor, then an array of the same shape and dtype. ``requires_grad`` marks a leaf whose gradient
    backward should accumulate.

    >>> import tapegrad as tg
    >>> x = tg.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> with tg.tape.record():
    ...     y = (x ** 2).sum()
    >>> y.backward()
    >>> x.grad
    array([2., 4., 6.])
    """

    __slots__ = ("_data", "grad", "requires_grad", "_node", "_version", "_hooks", "_name", "__weakref__")

    # NumPy defers to our reflected operators: np.ones(3) + x returns a Tensor, never an object array.
    __array_ufunc__ = None
    __array_priority__ = 1000

    def __init__(self, data, requires_grad: bool = False, dtype=None, name: str | None = None):
        if isinstance(data, Tensor):
            data = data._data
        array = _as_array(data, dtype)
        if requires_grad and not _floating(array):
            raise TypeError(
                f"Tensor(requires_grad=True) needs floating-point data, got dtype {array.dtype}: "
                "integer and bool tensors have no gradient; pass dtype=np.float64 (or float32)"
            )
        self._data = array
        self.grad = None
        self.requires_grad = bool(requires_grad)
        self._node = None
        if name is not None:
            self._name = name

    @classmethod
    def _wrap(cls, data) -> Tensor:
        t = cls.__new__(cls)
        t._data = data
        t.grad = None
        t.requires_grad = False
        t._node = None
        return t

    @classmethod
    def _wrap_recorded(cls, data, node) -> Tensor:
        t = cls.__new__(cls)
        t._data = data
        t.grad = None
        t.requires_grad = True
        t._node = node
        return t

    # -- data and its version ---------------------------------------------------------------------------
    @property
    def data(self) -> np.ndarray:
        """The underlying array. Assigning to it (``x.data = a``, ``x.data -= lr * g``) bumps the version,
        so a tape that saved the old value refuses to replay with the new one."""
        return self._data

    @data.setter
    def data(self, value) -> None:
        value = value._data if isinstance(value, Tensor) else _as_array(value, None)
        self._data = value
        _bump_version(self)

    @property
    def version(self) -> int:
        """How many in-place changes tapegrad has seen (a clock value; 0 if never changed)."""
        return getattr(self, "_version", 0)

    @property
    def name(self) -> str | None:
        """An optional name, shown when a tape is printed."""
        return getattr(self, "_name", None)

    @name.setter
    def name(self, value: str | None) -> None:
        self._name = value

    @property
    def is_leaf(self) -> bool:
        """True for tensors no tape recorded (created by the user, not computed by an op)."""
        return self._node is None

    # -- array attributes -------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._data.shape

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        return self._data.size

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def T(self) -> Tensor:
        """The transpose (reverses all axes), differentiable."""
        return transpose(self)

    def item(self):
        """The value of a one-element tensor as a Python scalar."""
        data = self._data
        if hasattr(data, "item"):
            return data.item()
        xp = backend_of(data).xp  # the array API has no item(): convert by kind
        kind = bool if xp.isdtype(data.dtype, "bool") else (int if xp.isdtype(data.dtype, "integral") else float)
        return kind(xp.reshape(data, ()))

    def numpy(self) -> np.ndarray:
        """The underlying array (no copy). Gradients do not flow through what you do with it: inside
        ``record()`` on a tensor being recorded this warns once per call site (use ``.data`` to say so)."""
        if self._node is not None or self.requires_grad:
            _escape(self, "numpy()")
        return self._data

    def tolist(self):
        return self._data.tolist()

    def detach(self) -> Tensor:
        """A tensor sharing this data with no gradient history: gradient flow stops here.

        >>> import tapegrad as tg
        >>> x = tg.Tensor(2.0, requires_grad=True)
        >>> x.detach().requires_grad
        False
        """
        return Tensor._wrap(self._data)

    def astype(self, dtype) -> Tensor:
        """Cast to ``dtype`` (differentiable between floating dtypes)."""
        return astype(self, dtype=np.dtype(dtype) if self._data.__class__ is np.ndarray else dtype)

    def __array__(self, dtype=None, copy=None):
        if self._node is not None or self.requires_grad:
            _escape(self, "np.asarray()")
        if dtype is None:
            return self._data
        return self._data.astype(dtype)

    def __len__(self) -> int:
        return len(self._data)

    def __bool__(self) -> bool:
        return bool(self._data)

    def __float__(self) -> float:
        return float(self._data)

    def __int__(self) -> int:
        return int(self._data)

    def __iter__(self):
        for i in range(len(self._data)):
            yield self[i]

    def __repr__(self) -> str:
        extra = ", requires_grad=True" if self.requires_grad else ""
        if self._data.__class__ is not np.ndarray:  # another library: its own repr says where the data is
            return f"Tensor({self._data!r}{extra})"
        body = np.array2string(self._data, separator=", ", prefix="Tensor(")
        if self._data.dtype not in (np.float64, np.int64, np.bool_):
            extra = f", dtype={self._data.dtype}" + extra
        return f"Tensor({body}{extra})"

    __hash__ = object.__hash__  # identity: tensors are dict keys during replay; == is elementwise

    # -- backward -------------------------------------------------------------------------------------
    def backward(self, gradient=None, *, create_graph: bool = False, trace=False) -> None:
        """Replay the tape that recorded this tensor, accumulating ``.grad`` on every leaf it reaches.

        ``gradient`` is required when this tensor is not a scalar (the vector in the vector-Jacobian
        product). With ``create_graph=True`` the replay is itself recorded, so the gradients it writes are
        tensors that can be differentiated again; the tape is kept. ``trace=True`` (or a file to write to)
        prints each adjoint update in replay order (see :mod:`tapegrad.debug`).

        >>> import tapegrad as tg
        >>> x = tg.Tensor(2.0, requires_grad=True)
        >>> with tg.tape.record():
        ...     y = x ** 3
        >>> y.backward(create_graph=True)
        >>> dydx = x.grad; x.grad = None
        >>> dydx.backward(); float(x.grad)
        12.0
        """
        _backward(self, gradient, create_graph, trace)

    def register_hook(self, fn):
        """Call ``fn(grad)`` when replay reaches this tensor's gradient; a non-None return replaces it.

        Returns a handle whose ``remove()`` unregisters the hook.

        >>> import tapegrad as tg
        >>> x = tg.Tensor([1.0, -2.0], requires_grad=True)
        >>> h = x.register_hook(lambda g: g.clip(-0.5, 0.5))
        >>> with tg.tape.record():
        ...     y = (3 * x).sum()
        >>> y.backward(); x.grad
        array([0.5, 0.5])
        """
        return _register_hook(self, fn)

    # -- operators: each one line, delegating to the registered op ---------------------------------------
    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(other, self)

    def __sub__(self, other):
        return subtract(self, other)

    def __rsub__(self, other):
        return subtract(other, self)  # other - self

    def __mul__(self, other):
        return multiply(self, other)

    def __rmul__(self, other):
        return multiply(other, self)

    def __truediv__(self, other):
        return divide(self, other)

    def __rtruediv__(self, other):
        return divide(other, self)  # other / self

    def __pow__(self, other):
        return power(self, other)

    def __rpow__(self, other):
        return power(other, self)  # other ** self

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)  # other @ self

    def __neg__(self):
        return negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return absolute(self)

    def __getitem__(self, index):
        return getitem(self, index=_index_of(index))

    def __lt__(self, other):
        return less(self, other)

    def __le__(self, other):
        return less_equal(self, other)

    def __gt__(self, other):
        return greater(self, other)

    def __ge__(self, other):
        return greater_equal(self, other)

    def __eq__(self, other):
        return equal(self, other)

    def __ne__(self, other):
        return not_equal(self, other)

    # In-place operators change the data where it is (other references see it) and bump the version.
    # They are not differentiable: inside record() on a tensor that needs a gradient, write x = x + y.
    def __iadd__(self, other):
        return _inplace(self, other, np.add, operator.iadd, "+=")

    def __isub__(self, other):
        return _inplace(self, other, np.subtract, operator.isub, "-=")

    def __imul__(self, other):
        return _inplace(self, other, np.multiply, operator.imul, "*=")

    def __itruediv__(self, other):
        return _inplace(self, other, np.divide, operator.itruediv, "/=")

    # -- methods, each delegating to the function of the same name -----------------------------------
    def exp(self):
        return exp(self)

    def log(self):
        return log(self)

    def sqrt(self):
        return sqrt(self)

    def sin(self):
        return sin(self)

    def cos(self):
        return cos(self)

    def tanh(self):
        return tanh(self)

    def sigmoid(self):
        return sigmoid(self)

    def relu(self):
        return relu(self)

    def abs(self):
        return absolute(self)

    def clip(self, a_min=None, a_max=None):
        return clip(self, a_min, a_max)

    def sum(self, axis=None, keepdims=False):
        return sum(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        return mean(self, axis=axis, keepdims=keepdims)

    def var(self, axis=None, ddof=0, keepdims=False):
        return var(self, axis=axis, ddof=ddof, keepdims=keepdims)

    def max(self, axis=None, keepdims=False):
        return max(self, axis=axis, keepdims=keepdims)

    def min(self, axis=None, keepdims=False):
        return min(self, axis=axis, keepdims=keepdims)

    def logsumexp(self, axis=None, keepdims=False):
        return logsumexp(self, axis=axis, keepdims=keepdims)

    def softmax(self, axis=-1):
        return softmax(self, axis=axis)

    def log_softmax(self, axis=-1):
        return log_softmax(self, axis=axis)

    def reshape(self, *shape):
        return reshape(self, shape[0] if len(shape) == 1 else shape)

    def transpose(self, *axes):
        return transpose(self, axes[0] if len(axes) == 1 else (axes or None))

    def expand_dims(self, axis):
        return expand_dims(self, axis)

    def squeeze(self, axis=None):
        return squeeze(self, axis)

    def broadcast_to(self, shape):
        return broadcast_to(self, shape)

    def argmax(self, axis=None, keepdims=False):
        return argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis=None, keepdims=False):
        return argmin(self, axis=axis, keepdims=keepdims)


def tensor(data, requires_grad: bool = False, dtype=None, name: str | None = None) -> Tensor:
    """Shorthand for :class:`Tensor` (as ``torch.tensor``)."""
    return Tensor(data, requires_grad=requires_grad, dtype=dtype, name=name)


def _index_of(index):
    # Tensor indices (masks, integer arrays) index by their data; nothing is differentiated through them.
    if isinstance(index, Tensor):
        return index._data
    if isinstance(index, tuple):
        return tuple(i._data if isinstance(i, Tensor) else i for i in index)
    if isinstance(index, list):
        return np.asarray(index)
    return index


def _as_array(data, dtype):
    # NumPy unless data is another library's array, which stays in its library (and on its device).
    if data.__class__ is not np.ndarray:
        b = backend_of(data)
        if b is not None and b is not NUMPY:
            return b.asarray(data, dtype=dtype)
    return np.array(data, dtype=dtype) if dtype is not None else np.asarray(data)


def _floating(array) -> bool:
    if array.__class__ is np.ndarray:
        return array.dtype.kind in "fc"
    return (backend_of(array) or NUMPY).is_floating(array.dtype)


def _inplace(t, other, ufunc, inplace_operator, symbol):
    from .tape import is_recording

    if is_recording() and (t.requires_grad or t._node is not None):
        raise RuntimeError(
            f"in-place {symbol} on a tensor that needs a gradient, inside record(): it would change a value "
            f"the tape may need. Write x = x {symbol[0]} y, or update it outside the block"
        )
    other = other._data if isinstance(other, Tensor) else other
    if t._data.__class__ is np.ndarray:
        ufunc(t._data, other, out=t._data)
    else:  # other libraries update in place through their operators (where they can)
        t._data = inplace_operator(t._data, other)
    _bump_version(t)
    return t


from .debug import _escape  # noqa: E402
from .ops import (  # noqa: E402  (the ops need the Tensor class defined above)
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
from .tape import _backward, _register_hook  # noqa: E402
from .tape import bump_version as _bump_version  # noqa: E402
