"""NumPy's spelling of a function, or the array API standard's where a library has only that one.

Forwards and rules are written with NumPy's names. A few functions the standard has under another name
(``asin`` for ``arcsin``, ``cumulative_sum`` for ``cumsum``), or not at all but as a one-line composition
(``exp2`` as ``2 ** x``), would otherwise be missing on a strict array API library: :func:`spelled` finds
either name, and :func:`forward` makes an op's forward that does so (on NumPy it calls NumPy directly).

>>> import numpy as np
>>> spelled(np, "arcsin", "asin") is np.arcsin
True
"""

import numpy as np


def spelled(xp, numpy_name: str, standard_name: str):
    """``xp``'s function by NumPy's name, else by the standard's (``xp`` may be any rule namespace)."""
    f = getattr(xp, numpy_name, None)  # a namespace without the name raises AttributeError
    return f if f is not None else getattr(xp, standard_name)


def has(xp, name: str) -> bool:
    """Whether namespace ``xp`` has a function called ``name``."""
    return getattr(xp, name, None) is not None


def forward(numpy_f, standard):
    """An op forward: ``numpy_f`` on NumPy and wherever the library has it by NumPy's name; elsewhere the
    standard's name (a string) or ``standard(xp, *xs)``, a composition of functions the standard has."""
    name = numpy_f.__name__

    def fn(*xs, xp=np):
        if xp is np:
            return numpy_f(*xs)
        f = getattr(xp, name, None)
        if f is not None:
            return f(*xs)
        return getattr(xp, standard)(*xs) if isinstance(standard, str) else standard(xp, *xs)

    fn.__name__ = fn.__qualname__ = f"{name}_forward"
    fn.numpy = numpy_f  # what the op computes on NumPy arrays (tapegrad.registry.Op.numpy)
    return fn
