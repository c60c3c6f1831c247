"""``tapegrad.numpy.fft``: NumPy's ``numpy.fft``, differentiable on tensors through :mod:`tapegrad.fft`.

Each name is NumPy's own function (which first stacks tensors found inside lists on the tape): on arrays it
runs NumPy, on tensors NumPy hands the call to tapegrad's (``Tensor.__array_function__``), which records it.

>>> import tapegrad as tg, tapegrad.numpy as np
>>> tg.grad(lambda x: np.abs(np.fft.rfft(x)).sum())(np.ones(4)).shape
(4,)
"""

import numpy.fft as _fft
from numpy.fft import *  # noqa: F403  (NumPy's functions; tensors dispatch to tapegrad.fft)

from ._namespace import wrapped
from ._table import FFT as _FFT

globals().update(wrapped(_fft, _fft.__all__, _FFT))  # tensors inside lists are recorded

__all__ = list(_fft.__all__)


def __getattr__(name):
    return getattr(_fft, name)
