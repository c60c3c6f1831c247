"""NumPy's dispatch protocols on tensors: ``np.exp(t)`` (NEP 13, ``__array_ufunc__``) and ``np.sum(t)``,
``np.linalg.solve(a, t)`` (NEP 18, ``__array_function__``) run tapegrad's function for the NumPy one, from the
one table (:mod:`tapegrad.numpy._table`), and return a tensor on the tape.

Tensors inside lists (``np.where(t > 0, t, [t0, t1])``, ``np.concatenate([t, [t0]])``) are stacked on the tape
first (:mod:`tapegrad.numpy._nested`). What has no rule raises a ``TypeError`` naming the function, never a
silent constant: a NumPy function or ufunc
tapegrad does not implement, the ufunc methods without a tapegrad meaning (``np.maximum.accumulate``, ``at``,
``reduceat``), and ``out=`` (a write into an existing array; for ``a += t`` with an array ``a``, write
``a = a + t``). ``np.asarray(t)`` (or ``t.data``) stays the way to use a tensor's value as a constant on purpose.

NumPy's reflected operators go through the same door: ``ndarray + tensor`` is ``np.add(ndarray, tensor)``, which
lands in ``__array_ufunc__`` and is recorded. tapegrad's own ops never pass through here: they unwrap tensors
before calling NumPy.

>>> import numpy as np, tapegrad as tg
>>> x = tg.Tensor([0.0, 1.0], requires_grad=True)
>>> with tg.record():
...     y = np.sum(np.exp(x) + np.ones(2))
>>> y.backward(); x.grad
array([1.        , 2.71828183])
"""

from __future__ import annotations

import sys

import numpy as np

import tapegrad.ops as ops

from .._tensor import Tensor
from ..errors import NestedTensorError
from ..ops.special import SPECIAL
from ..tensor_methods import set_numpy_protocols
from ._nested import SEQUENCES, lift, nested
from ._signatures import UnsupportedArgument, cast, unsupported
from ._table import ACCUMULATE, FFT, LINALG, LOGADDEXP_REDUCE, MAIN, REDUCE

UFUNCS: dict = {}  # np.exp -> tapegrad's exp
OP_UFUNCS: dict = {}  # those of them whose function is one op (the fast path of np.exp(t))
FUNCTIONS: dict = {}  # np.sum -> tapegrad's sum under NumPy's signature
ARGUMENTS: dict = {}  # np.concatenate -> its parameters that are sequences of arrays (see _nested.SEQUENCES)


def _build() -> None:
    for module, table in ((np, MAIN), (np.linalg, LINALG), (np.fft, FFT)):
        for name, f in table.items():
            obj = getattr(module, name)
            (UFUNCS if isinstance(obj, np.ufunc) else FUNCTIONS)[obj] = f
            if isinstance(obj, np.ufunc) and hasattr(f, "op"):
                OP_UFUNCS[obj] = f
            ARGUMENTS[obj] = SEQUENCES.get(name, ())


def implementation(numpy_function):
    """The tapegrad function that runs for ``numpy_function`` on tensors, or None where tapegrad has no rule.

    >>> import numpy as np, tapegrad as tg, tapegrad.numpy as tnp
    >>> tnp.implementation(np.exp) is tg.exp, tnp.implementation(tnp.exp) is tg.exp, tnp.implementation(np.ix_)
    (True, True, None)
    """
    # tapegrad.numpy's names are NumPy's functions and ufuncs, wrapped: the table is keyed by NumPy's own
    numpy_function = getattr(numpy_function, "numpy_function", numpy_function)
    return UFUNCS.get(numpy_function) if isinstance(numpy_function, np.ufunc) else FUNCTIONS.get(numpy_function)


def _scipy_ufunc(ufunc) -> str | None:
    """SciPy's name of ``ufunc`` (``scipy.special.erf``) when it is one of ``scipy.special``'s, else None."""
    special = sys.modules.get("scipy.special")  # a SciPy ufunc exists only once SciPy is imported
    if special is None or getattr(np, ufunc.__name__, None) is ufunc:
        return None
    return f"scipy.special.{ufunc.__name__}" if getattr(special, ufunc.__name__, None) is ufunc else None


def _special_rule(ufunc):
    """tapegrad's function for SciPy's ufunc (``scipy.special.erf`` -> ``tapegrad.scipy.special.erf``), found
    by SciPy's name in the one table of them (``tapegrad.ops.special.SPECIAL``) and then kept in ``UFUNCS``."""
    name = _scipy_ufunc(ufunc)
    f = SPECIAL.get(ufunc.__name__) if name is not None else None
    if f is not None:
        UFUNCS[ufunc] = f
    return f


def ufunc_name(ufunc) -> str:
    """How the user spelled ``ufunc``: ``np.exp``, or ``scipy.special.erf`` for one of SciPy's."""
    return _scipy_ufunc(ufunc) or f"np.{ufunc.__name__}"


def _numpy_name(f) -> str:
    module = getattr(f, "__module__", None) or "numpy"
    prefix = "np." + module[len("numpy.") :] + "." if module.startswith("numpy.") and "._" not in module else "np."
    return prefix + getattr(f, "__name__", repr(f))


def _describe(args) -> str:
    parts = []
    for a in args:
        if isinstance(a, Tensor):
            parts.append(f"a tensor of shape {a.shape}")
        elif isinstance(a, np.ndarray):
            parts.append(f"an array of shape {a.shape}")
        elif isinstance(a, (list, tuple)) and any(isinstance(o, Tensor) for o in a):
            parts.append(f"a {type(a).__name__} of {len(a)} holding tensors")
    return ", ".join(parts) or "tensors"


def no_rule(name: str, args, what: str = "") -> TypeError:
    """The error for a NumPy function (or ufunc method) called on tensors that tapegrad has no rule for."""
    return TypeError(
        f"{name} on {_describe(args)}: tapegrad has no rule for it{what}, and running it on the values would "
        "silently make a constant of the result. Write it with tapegrad's ops (tapegrad.numpy has NumPy's names "
        "for them) or define a differentiable op with tg.custom_op; to use the value as a constant on purpose, "
        f"call it on np.asarray(t) (or t.data)"
    )


def _out_error(name, inputs, out) -> TypeError:
    in_place = any(o is i for o in out for i in inputs)
    hint = (
        "For an in-place operator on a NumPy array (a += t), write a = a + t: a then becomes a tensor"
        if in_place
        else f"Write y = np.{name}(...) and use y"
    )
    return unsupported(name, "out=...", "it writes the result into an existing array, which a tape cannot record", hint)


_UFUNC_DEFAULTS = {"casting": ("same_kind", "unsafe", "safe", "equiv", "no"), "order": ("K", "C", "A"),
                   "subok": (True, False), "signature": (None,)}  # fmt: skip


def _call(ufunc, f, inputs, kwargs):
    name = ufunc.__name__
    out = kwargs.pop("out", None)
    if out is not None:
        raise _out_error(name, inputs, out if isinstance(out, tuple) else (out,))
    if f is None:
        raise no_rule(ufunc_name(ufunc), inputs)
    if kwargs.pop("where", True) is not True:
        raise unsupported(
            name, "where=...", "tapegrad has no rule for a masked ufunc", "Write np.where(mask, np.f(x), x)"
        )
    for key, allowed in _UFUNC_DEFAULTS.items():
        if key in kwargs and kwargs.pop(key) not in allowed:
            raise unsupported(name, f"{key}=...", "tapegrad runs ufuncs with NumPy's defaults only", "Leave it out")
    dtype = kwargs.pop("dtype", None)
    if dtype is not None:
        inputs = [cast(x, dtype) for x in inputs]
    if kwargs and not (ufunc is np.vecdot and set(kwargs) <= {"axis"}):
        raise unsupported(name, f"{', '.join(kwargs)}=...", "tapegrad's version takes no such argument", "Leave it out")
    return f(*inputs, **kwargs)


def _reduce(ufunc, inputs, kwargs):
    name = f"{ufunc_name(ufunc)}.reduce"
    (a,) = inputs
    kwargs.setdefault("axis", 0)  # ufunc.reduce's default, unlike np.sum's
    if ufunc is np.logaddexp:
        if set(kwargs) - {"axis", "keepdims", "dtype"} or kwargs.get("dtype") is not None:
            raise no_rule(name, inputs, " beyond axis= and keepdims=")
        return LOGADDEXP_REDUCE(a, axis=kwargs["axis"], keepdims=bool(kwargs.get("keepdims", False)))
    f = REDUCE.get(ufunc)
    if f is None:
        raise no_rule(name, inputs, " (reduce is mapped for add, multiply, maximum, minimum, fmax, fmin, logaddexp, "
                      "logical_and and logical_or)")  # fmt: skip
    if kwargs.get("dtype") is None:
        kwargs.pop("dtype", None)
    return f(a, **kwargs)


def _method(ufunc, method, inputs, kwargs):
    name = f"{ufunc_name(ufunc)}.{method}"
    if method == "reduce":
        return _reduce(ufunc, inputs, kwargs)
    if method == "accumulate":
        f = ACCUMULATE.get(ufunc)
        if f is None:
            raise no_rule(name, inputs, " (accumulate is mapped for add and multiply)")
        kwargs.setdefault("axis", 0)
        return f(inputs[0], **kwargs)
    if method == "outer":
        a, b = inputs
        nb = b.ndim if hasattr(b, "ndim") else np.ndim(b)
        a = ops.reshape(a, (a.shape if hasattr(a, "shape") else np.shape(a)) + (1,) * nb)
        return _call(ufunc, UFUNCS.get(ufunc), (a, b), kwargs)
    if method == "at":
        raise TypeError(
            f"{name} changes its first argument in place, which a tape cannot record: use x.at[index].add(v) "
            "(tg.index_add) or x.at[index].set(v) (tg.index_update), which make a recorded copy"
        )
    raise no_rule(name, inputs)


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """``Tensor.__array_ufunc__`` (NEP 13): ``np.exp(t)``, ``ndarray + t``, ``np.add.reduce(t)`` on the tape."""
    if method == "__call__" and not kwargs:
        f = OP_UFUNCS.get(ufunc)
        if f is not None:  # one op: it refuses a list holding tensors before it records anything
            try:
                return f(*inputs)
            except NestedTensorError:  # np.add(t, [t0, t1]): the list's tensors stacked on the tape, then again
                return f(*lift(inputs, {}, ())[0])
    if nested(inputs, None):  # np.add(t, [t0, t1]): the list's tensors are stacked on the tape
        inputs, _ = lift(inputs, {}, ())
    f = (UFUNCS.get(ufunc) or _special_rule(ufunc)) if method == "__call__" else None
    try:
        return _call(ufunc, f, inputs, kwargs) if method == "__call__" else _method(ufunc, method, inputs, kwargs)
    except UnsupportedArgument as err:
        raise err.on(_describe(inputs)) from None


def array_function(self, func, types, args, kwargs):
    """``Tensor.__array_function__`` (NEP 18): ``np.sum(t)``, ``np.linalg.solve(a, t)`` on the tape."""
    f = FUNCTIONS.get(func)
    if f is None:
        raise no_rule(_numpy_name(func), args)
    if nested(args, kwargs):  # np.where(t > 0, t, [t0, t1]): tensors inside lists are stacked on the tape
        args, kwargs = lift(args, kwargs, ARGUMENTS[func])
    try:
        return f(*args, **kwargs)
    except UnsupportedArgument as err:
        raise err.on(_describe(args)) from None


_build()
set_numpy_protocols(array_ufunc, array_function)
