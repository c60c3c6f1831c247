"""``tapegrad.numpy.random``: NumPy's ``numpy.random``, as it is (``import tapegrad.numpy.random as npr``).

Random draws are constants to a tape; a seeded ``np.random.default_rng(seed)`` (or ``tg.randn(..., rng=)``)
makes a program repeatable.

>>> import tapegrad.numpy.random as npr
>>> npr.default_rng(0).standard_normal(2).shape
(2,)
"""

import numpy.random as _random
from numpy.random import *  # noqa: F403  (the whole of numpy.random)

__all__ = list(_random.__all__)


def __getattr__(name):
    return getattr(_random, name)
