"""``tapegrad.numpy``'s functions: NumPy's own, which first stack the tensors found inside lists on the tape.

NumPy hands a call to tapegrad only when it sees a tensor at the top of an argument: ``np.sum([t0, t1])``,
``np.exp([t0, t1])`` or ``np.dot([t0, t1], [t1, t2])`` would convert the tensors to arrays and give a constant.
Each array function and ufunc of ``tapegrad.numpy`` (and of its ``linalg`` and ``fft``) is NumPy's, wrapped:
where a list or tuple argument holds a tensor, it is stacked first (:mod:`tapegrad.numpy._nested`), and
NumPy's function then dispatches to tapegrad's as for any tensor (or raises, naming it, where tapegrad has no
rule). Everything else (arrays, numbers, lists of numbers) reaches NumPy's function as it is: arrays in,
arrays out, as NumPy gives them.

>>> import tapegrad as tg, tapegrad.numpy as np
>>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
>>> tg.grad(lambda x: np.sum([x[0], 3.0 * x[1]]))(x)
array([1., 3.])
>>> np.exp([0.0]), np.sum([1.0, 2.0])
(array([1.]), np.float64(3.0))
"""

from __future__ import annotations

import functools

import numpy as np

from .._tensor import Tensor
from ..errors import NestedTensorError
from ._dispatch import OP_UFUNCS
from ._nested import SEQUENCES, lift, nested

_METHODS = ("reduce", "accumulate", "outer", "reduceat", "at")
_ATTRIBUTES = ("identity", "nargs", "nin", "nout", "ntypes", "signature", "types", "resolve_dtypes")


def function(numpy_function, name: str):
    """``numpy_function`` (an array function NumPy dispatches), with tensors inside lists stacked first."""
    sequences = SEQUENCES.get(name, ())

    def f(*args, **kwargs):
        for a in args:  # inline: this runs on every call, arrays' too
            if a.__class__ is list or a.__class__ is tuple:
                break
        else:
            if not kwargs:
                return numpy_function(*args)
        if nested(args, kwargs):
            args, kwargs = lift(args, kwargs, sequences)
        return numpy_function(*args, **kwargs)

    functools.update_wrapper(f, numpy_function)
    f.numpy_function = numpy_function  # what it wraps (tnp.implementation reads it), as a ufunc's does
    return f


def _lifting(method):
    def f(*args, **kwargs):
        if nested(args, kwargs):
            args, kwargs = lift(args, kwargs, ())
        return method(*args, **kwargs)

    functools.update_wrapper(f, method)
    return f


def ufunc(numpy_ufunc, op=None):
    """One of NumPy's ufuncs, with tensors inside lists stacked first (its methods too: ``np.add.reduce``,
    ``np.multiply.outer``); its other attributes are the ufunc's (``nin``, ``identity``, ``types``). Given a
    tensor argument it calls ``op``, tapegrad's op for it, at once: what NumPy's dispatch would call.

    >>> import numpy, tapegrad.numpy as np
    >>> np.add.nin, np.add.reduce([1.0, 2.0]), np.add.numpy_function is numpy.add
    (2, np.float64(3.0), True)
    """

    def f(*args, **kwargs):
        if not kwargs:
            for a in args:  # one look at each argument: this runs on every call, arrays' too
                c = a.__class__
                if c is Tensor or c is list or c is tuple:
                    break
            else:  # arrays and numbers: NumPy's ufunc, as it is
                return numpy_ufunc(*args)
            if c is Tensor and op is not None:
                try:
                    return op(*args)
                except NestedTensorError:  # np.add(t, [t0, t1]): the list's tensors stacked on the tape, then again
                    return op(*lift(args, {}, ())[0])
        if nested(args, kwargs):
            args, kwargs = lift(args, kwargs, ())
        return numpy_ufunc(*args, **kwargs)

    functools.update_wrapper(f, numpy_ufunc)
    f.numpy_function = numpy_ufunc
    for name in _ATTRIBUTES:
        if hasattr(numpy_ufunc, name):
            setattr(f, name, getattr(numpy_ufunc, name))
    for name in _METHODS:
        setattr(f, name, _lifting(getattr(numpy_ufunc, name)))
    return f


def wrapped(module, names, implemented=()) -> dict:
    """``tapegrad.numpy``'s version of each of ``module``'s ``names`` that is an array function (NumPy's
    dispatchers, and the ``implemented`` names tapegrad has a function for: ``row_stack``, NumPy's Python alias
    of ``vstack``) or a ufunc."""
    out, made = {}, {}  # one wrapper per NumPy object: its aliases stay one object (np.acos is np.arccos)
    for name in names:
        obj = getattr(module, name, None)
        if id(obj) in made:
            out[name] = made[id(obj)]
        elif isinstance(obj, np.ufunc):
            out[name] = made[id(obj)] = ufunc(obj, OP_UFUNCS.get(obj))
        elif callable(obj) and not isinstance(obj, type) and (hasattr(obj, "_implementation") or name in implemented):
            out[name] = made[id(obj)] = function(obj, name)
    return out
