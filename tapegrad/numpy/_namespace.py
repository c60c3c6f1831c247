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

from ._nested import SEQUENCES, lift, nested

_METHODS = frozenset(("reduce", "accumulate", "outer", "reduceat", "at"))


def function(numpy_function, name: str):
    """``numpy_function`` (an array function NumPy dispatches), with tensors inside lists stacked first."""
    sequences = SEQUENCES.get(name, ())

    def f(*args, **kwargs):
        if nested(args, kwargs):
            args, kwargs = lift(args, kwargs, sequences)
        return numpy_function(*args, **kwargs)

    functools.update_wrapper(f, numpy_function)
    f.numpy_function = numpy_function  # what it wraps (tnp.implementation reads it), as ufunc's
    return f


class ufunc:  # noqa: N801  (NumPy's name for what it stands for)
    """One of NumPy's ufuncs, with tensors inside lists stacked first (its methods too: ``np.add.reduce``,
    ``np.multiply.outer``); every other attribute is the ufunc's own (``nin``, ``identity``, ``types``).

    >>> import numpy, tapegrad.numpy as np
    >>> np.add.nin, np.add.reduce([1.0, 2.0]), np.add.numpy_function is numpy.add
    (2, np.float64(3.0), True)
    """

    def __init__(self, numpy_ufunc):
        self.numpy_function = numpy_ufunc
        self.__doc__ = numpy_ufunc.__doc__

    def __call__(self, *args, **kwargs):
        if nested(args, kwargs):
            args, kwargs = lift(args, kwargs, ())
        return self.numpy_function(*args, **kwargs)

    def __getattr__(self, name):
        attribute = getattr(self.numpy_function, name)
        if name not in _METHODS:
            return attribute

        def method(*args, **kwargs):
            if nested(args, kwargs):
                args, kwargs = lift(args, kwargs, ())
            return attribute(*args, **kwargs)

        return method

    def __repr__(self) -> str:
        return f"<ufunc {self.numpy_function.__name__!r} (tapegrad.numpy)>"


def wrapped(module, names, implemented=()) -> dict:
    """``tapegrad.numpy``'s version of each of ``module``'s ``names`` that is an array function (NumPy's
    dispatchers, and the ``implemented`` names tapegrad has a function for: ``row_stack``, NumPy's Python alias
    of ``vstack``) or a ufunc."""
    out = {}
    for name in names:
        obj = getattr(module, name, None)
        if isinstance(obj, np.ufunc):
            out[name] = ufunc(obj)
        elif callable(obj) and not isinstance(obj, type) and (hasattr(obj, "_implementation") or name in implemented):
            out[name] = function(obj, name)
    return out
