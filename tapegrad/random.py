"""Random draws as ops: ``tg.random.random(rng, shape)`` and friends, from a ``numpy.random.Generator``.

A draw is an op (with no gradient) rather than a call on the generator, so that a compiled program
(:func:`tapegrad.compile`) draws again on every call, from the same generator, exactly as the Python function
would: a dropout mask is never frozen at the values of the call that was traced. Eagerly each op is the
generator's method of the same name, so the numbers are the generator's own.

>>> import numpy as np, tapegrad as tg
>>> rng = np.random.default_rng(0)
>>> tg.random.random(rng, (2,)).numpy() == np.random.default_rng(0).random((2,))
array([ True,  True])
"""

from __future__ import annotations

import numpy as np

from .registry import defnondiff

__all__ = ["random", "standard_normal", "normal", "uniform", "RANDOM_OPS"]


def _generator(rng, what):
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"tg.random.{what}: rng must be a numpy.random.Generator (np.random.default_rng(seed)), got "
            f"{type(rng).__name__}: a seed would start the same sequence again on every call"
        )
    return rng


def _shape(shape):
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)


_random = defnondiff("random_random", lambda *, rng, shape, dtype: rng.random(shape, dtype=dtype))
_standard_normal = defnondiff(
    "random_standard_normal", lambda *, rng, shape, dtype: rng.standard_normal(shape, dtype=dtype)
)
_normal = defnondiff(
    "random_normal", lambda *, rng, shape, loc, scale, dtype: rng.normal(loc, scale, shape).astype(dtype, copy=False)
)
_uniform = defnondiff(
    "random_uniform", lambda *, rng, shape, low, high, dtype: rng.uniform(low, high, shape).astype(dtype, copy=False)
)
RANDOM_OPS = frozenset(
    (_random.op, _standard_normal.op, _normal.op, _uniform.op)
)  # what a compiled program must draw on every call


def random(rng: np.random.Generator, shape, dtype=np.float64):
    """Uniform numbers in [0, 1): ``rng.random(shape, dtype)`` as an op.

    >>> import numpy as np, tapegrad as tg
    >>> tg.random.random(np.random.default_rng(0), 3).shape
    (3,)
    """
    return _random(rng=_generator(rng, "random"), shape=_shape(shape), dtype=np.dtype(dtype))


def standard_normal(rng: np.random.Generator, shape, dtype=np.float64):
    """Standard normal numbers: ``rng.standard_normal(shape, dtype)`` as an op (float64 or float32).

    >>> import numpy as np, tapegrad as tg
    >>> bool((tg.random.standard_normal(np.random.default_rng(0), 2).numpy()
    ...       == np.random.default_rng(0).standard_normal(2)).all())
    True
    """
    return _standard_normal(rng=_generator(rng, "standard_normal"), shape=_shape(shape), dtype=np.dtype(dtype))


def normal(rng: np.random.Generator, shape, loc: float = 0.0, scale: float = 1.0, dtype=np.float64):
    """Normal numbers: ``rng.normal(loc, scale, shape)`` as an op, in ``dtype``.

    >>> import numpy as np, tapegrad as tg
    >>> tg.random.normal(np.random.default_rng(0), (2, 2)).shape
    (2, 2)
    """
    return _normal(rng=_generator(rng, "normal"), shape=_shape(shape), loc=loc, scale=scale, dtype=np.dtype(dtype))


def uniform(rng: np.random.Generator, shape, low: float = 0.0, high: float = 1.0, dtype=np.float64):
    """Uniform numbers in [low, high): ``rng.uniform(low, high, shape)`` as an op, in ``dtype``.

    >>> import numpy as np, tapegrad as tg
    >>> bool((tg.random.uniform(np.random.default_rng(0), 5, 2.0, 3.0).numpy() >= 2.0).all())
    True
    """
    return _uniform(rng=_generator(rng, "uniform"), shape=_shape(shape), low=low, high=high, dtype=np.dtype(dtype))
