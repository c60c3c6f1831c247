"""Tensor: an array with ``grad`` and ``requires_grad``. The data class only: no engine, no operators.

A tensor holds its array, its gradient, whether it needs one, and (when a tape recorded it) a bare ``Node``
token used as its identity during replay. It never points at the tensors it was computed from: the tape
owns the recorded computation, so releasing the tape releases it, whatever tensors the user keeps.

Operators (``+``, ``@``, ``x[i]``), methods that are ops (``x.sum()``, ``x.T``), ``backward`` and
``register_hook`` are bound onto the class from one table in :mod:`tapegrad.tensor_methods`, above the ops;
this module imports nothing of the engine.
"""

from __future__ import annotations

import sys

import numpy as np

from ._html import STYLE, array_html, esc
from ._state import FORWARD, TRACING, concrete, mark_modified, numpy_conversion, version_of, warn_escape
from .backend import NUMPY, backend_of, is_floating

__all__ = ["Tensor", "tensor"]


class Tensor:
    """An n-dimensional array that tapegrad can differentiate.

    ``data`` is the array: NumPy's by default, or CuPy's or any array API library's (``tapegrad.backend``),
    kept as given, so a tensor stays where its array lives. ``grad`` is None until a backward pass reaches
    the tensor, then an array of the same shape and dtype. ``requires_grad`` marks a leaf whose gradient
    backward should accumulate.

    >>> import tapegrad as tg
    >>> x = tg.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> with tg.record():
    ...     y = (x ** 2).sum()
    >>> y.backward()
    >>> x.grad
    array([2., 4., 6.])
    """

    __module__ = "tapegrad"  # its public name: pickles, reprs and docs say tapegrad.Tensor

    __slots__ = ("_data", "grad", "requires_grad", "_node", "_hooks", "_name", "_tangents", "__weakref__")

    # NumPy's protocols (__array_ufunc__, __array_function__) are rows of tensor_methods' table, implemented by
    # tapegrad.numpy: np.exp(x) and np.ones(3) + x are recorded. Until then NumPy defers to the reflected operators.
    __array_ufunc__ = None
    __array_priority__ = 1000

    def __init__(self, data, requires_grad: bool = False, dtype=None, name: str | None = None):
        if isinstance(data, Tensor):
            if _differentiated(data):
                _warn_new_leaf(data)
            data = data._data
        array = _as_array(data, dtype)
        if requires_grad and not is_floating(array):
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
        """The underlying array. ``x.data -= lr * g`` changes it in place and marks its memory changed, so a
        tape that saved it (or any view of it) refuses to replay; ``x.data = a`` rebinds the tensor to another
        array and leaves what tapes saved untouched."""
        if TRACING.n:  # inside tg.compile: Python may not compute with a traced value's data
            concrete(self._data, "t.data")
        return self._data

    @data.setter
    def data(self, value) -> None:
        if value is self._data and not TRACING.n:  # `x.data -= y`, every parameter every step: nothing to check
            mark_modified(value)
            return
        value = value._data if isinstance(value, Tensor) else value
        if TRACING.n:
            concrete(self._data, "assigning t.data")
            concrete(value, "assigning a traced value to t.data")
        if value is self._data:  # `x.data -= y`: Python changed the array in place, then assigns it back
            mark_modified(value)
            return
        node = self._node
        if node is not None and node.tape() is not None and node.tape.state == "recording":
            raise RuntimeError(
                "cannot assign the data of a tensor a live tape recorded as an op's output: the tape's record of "
                "that op would no longer match the value later ops use. Compute a new tensor instead "
                "(y = y + delta), or assign to y.detach() after backward()"
            )
        self._data = _as_array(value, None)

    @property
    def version(self) -> int:
        """The clock tick of the last in-place change tapegrad saw to this tensor's memory (0 if never)."""
        return version_of(self._data)

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

    def item(self):
        """The value of a one-element tensor as a Python scalar (off the tape: inside ``record()``, on a tensor
        being recorded, it warns once per line, as ``float(t)`` does)."""
        data = self._data
        _read(self, "t.item()")
        if hasattr(data, "item"):
            return data.item()
        xp = backend_of(data).xp  # the array API has no item(): convert by kind
        kind = bool if xp.isdtype(data.dtype, "bool") else (int if xp.isdtype(data.dtype, "integral") else float)
        return kind(xp.reshape(data, ()))

    def numpy(self) -> np.ndarray:
        """The underlying array (no copy). Gradients do not flow through what you do with it: inside
        ``record()`` on a tensor being recorded this warns once per call site (use ``.data`` to say so)."""
        if TRACING.n:
            concrete(self._data, "t.numpy()")
        if _differentiated(self):
            warn_escape("numpy()", tangent=_carries_tangent(self))
        return self._data

    def tolist(self):
        """The values as nested Python lists (off the tape, as :meth:`item`)."""
        _read(self, "t.tolist()")
        return self._data.tolist()

    def detach(self) -> Tensor:
        """A tensor sharing this data with no gradient history: gradient flow stops here.

        >>> import tapegrad as tg
        >>> x = tg.Tensor(2.0, requires_grad=True)
        >>> x.detach().requires_grad
        False
        """
        return Tensor._wrap(self._data)

    def __array__(self, dtype=None, copy=None):
        if TRACING.n:
            concrete(self._data, "np.asarray(t)")
        if _differentiated(self):
            # raises inside NumPy's own code (np.r_[t, t]) and inside a transform's function, else warns
            numpy_conversion(sys._getframe(1), tangent=_carries_tangent(self))
        if dtype is None:
            return self._data
        return self._data.astype(dtype)

    def __len__(self) -> int:
        return len(self._data)

    def __bool__(self) -> bool:
        # control flow (`if loss > best:`) reads a value without computing from it: no escape warning
        if TRACING.n:
            concrete(self._data, "bool(t)")
        return bool(self._data)

    def __float__(self) -> float:
        _read(self, "float(t)")  # np.float64(t) and math.exp(t) come here too
        return float(self._data)

    def __int__(self) -> int:
        _read(self, "int(t)")
        return int(self._data)

    def __complex__(self) -> complex:
        _read(self, "complex(t)")
        return complex(self._data)

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

    def _repr_html_(self) -> str:
        """What a notebook shows: shape, dtype, whether it needs a gradient or was recorded, its values (every
        one when small, else statistics and a summary) and its gradient's, in HTML.

        >>> import tapegrad as tg
        >>> html = tg.Tensor([1.0, float("nan")], requires_grad=True)._repr_html_()
        >>> "requires_grad" in html, '<span class="bad">nan</span>' in html
        (True, True)
        """
        if TRACING.n:
            concrete(self._data, "displaying t")
        d = self._data
        flags = [f for f, on in (("requires_grad", self.requires_grad), ("recorded", self._node is not None)) if on]
        head = f"<b>Tensor</b> {esc(tuple(d.shape))} {esc(str(d.dtype).rsplit('.', 1)[-1])}"
        head += "".join(f" &middot; {f}" for f in flags) + (f" &middot; name {esc(self.name)}" if self.name else "")
        if d.__class__ is not np.ndarray:  # another library: its own repr says where the data is
            return f"{STYLE}<div>{head}</div><pre>{esc(repr(d))}</pre>"
        out = f"{STYLE}<div>{head}</div>{array_html(d)}"
        if self.grad is not None and self.grad.__class__ is np.ndarray:
            out += f"<div>grad</div>{array_html(self.grad)}"
        return out

    __hash__ = object.__hash__  # identity: tensors are dict keys during replay; == is elementwise

    # Augmented assignment (x += y) is a row of tensor_methods' table: in place, or out of place inside record().


def tensor(data, requires_grad: bool = False, dtype=None, name: str | None = None) -> Tensor:
    """Shorthand for :class:`Tensor` (as ``torch.tensor``).

    >>> import tapegrad as tg
    >>> tg.tensor([1.0, 2.0]).shape
    (2,)
    """
    return Tensor(data, requires_grad=requires_grad, dtype=dtype, name=name)


def _read(t, what) -> None:
    """Python reads ``t``'s value as a number (``float(t)``, ``t.item()``): refused for a traced value inside
    ``tg.compile``; inside ``record()``, on a tensor being recorded, a warning at the user's line that the
    gradient stops there."""
    if TRACING.n:
        concrete(t._data, what)
    if _differentiated(t):
        warn_escape(what, sys._getframe(2), tangent=_carries_tangent(t))


def _differentiated(t) -> bool:
    """Whether ``t``'s value is being differentiated: recorded (or a leaf that needs a gradient), or carrying a
    tangent of a forward-mode level open now (``tg.jvp``, ``tg.jacfwd``)."""
    return t._node is not None or t.requires_grad or (bool(FORWARD.get()) and _carries_tangent(t))


def _carries_tangent(t) -> bool:
    # forward mode keeps a tangent on the tensor's node where it has one (tapegrad.forward._tangents)
    holder = t._node or t
    per_level = getattr(holder, "_tangents", None)
    if per_level is None:
        group = getattr(holder, "group", None)  # an output of an op with several keeps them on its group too
        per_level = getattr(group, "_tangents", None) if group is not None else None
    levels = FORWARD.get()
    return bool(per_level) and any(lv in per_level for lv in levels)


def _warn_new_leaf(t):
    f = sys._getframe(2)
    if f.f_code is tensor.__code__:  # tg.tensor(t): the user's line is one further out
        f = f.f_back
    warn_escape(
        "Tensor(t)",
        f,
        "Tensor(t) of a tensor being recorded makes a new leaf: gradients do not flow back through it into t. "
        "Use t itself to stay on the tape, or t.detach() to cut the gradient on purpose",
        tangent=_carries_tangent(t),
    )


def _as_array(data, dtype):
    # NumPy unless data is another library's array, which stays in its library (and on its device).
    if data.__class__ is not np.ndarray:
        b = backend_of(data)
        if b is not None and b is not NUMPY:
            return b.asarray(data, dtype=dtype)
    try:
        array = np.array(data, dtype=dtype) if dtype is not None else np.asarray(data)
    except ValueError as err:  # a ragged list, a string that is no number under dtype=
        raise ValueError(f"Tensor: cannot make an array of this {type(data).__name__}: {err}") from None
    if array.dtype.kind not in "biufc":  # None, dicts, strings, mixed objects: NumPy would keep them as objects
        what = (
            f"dtype={dtype!r}" if dtype is not None else f"{_what(data)} (NumPy makes an array of dtype {array.dtype})"
        )
        raise TypeError(
            f"Tensor: cannot hold {what}. A tensor holds numbers (bool, integer, floating-point or complex): pass "
            "an array, a number or nested lists of numbers"
        )
    return array


def _what(data) -> str:
    if isinstance(data, (list, tuple)):
        kinds = sorted({type(v).__name__ for v in np.asarray(data, dtype=object).ravel()})
        return f"a {type(data).__name__} of {', '.join(kinds)}"
    return "None" if data is None else f"an object of type {type(data).__name__}"


def update_in_place(t, other, ufunc, inplace_operator, symbol):
    """``t <symbol> other`` written into ``t``'s memory (other references see it), marked changed so that a tape
    that saved the array finds out. ``tensor_methods`` decides when an augmented assignment is this and when
    it records a new value instead."""
    if TRACING.n:
        concrete(t._data, f"in-place {symbol}")
        if getattr(t._node or t, "_tangents", None) or (
            isinstance(other, Tensor) and getattr(other._node or other, "_tangents", None)
        ):
            raise RuntimeError(
                f"in-place {symbol} on a tensor with a tangent (inside jvp, jacfwd, hvp or linearize): its tangent "
                f"would not follow. Write x = x {symbol[0]} y"
            )
        if hasattr(t, "_levels") or hasattr(other, "_levels"):  # vmap's Batched: the batch would not line up
            raise RuntimeError(f"in-place {symbol} on a batched tensor inside vmap: write x = x {symbol[0]} y")
    other = other._data if isinstance(other, Tensor) else other
    data = t._data
    if data.__class__ is np.ndarray:
        ufunc(data, other, out=data)
        mark_modified(data)
        return t
    new = inplace_operator(data, other)  # other libraries update in place through their operators, where they can
    if new is data:
        mark_modified(data)
    else:
        t._data = new
    return t
