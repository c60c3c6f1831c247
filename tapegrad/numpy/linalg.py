"""``tapegrad.numpy.linalg``: NumPy's ``numpy.linalg``, differentiable on tensors through
:mod:`tapegrad.linalg`, with its additions (``solve_triangular``, ``cho_solve``, ``expm``, ``logm``).

Each of NumPy's names is NumPy's own function (which first stacks tensors found inside lists on the tape): on
arrays it runs NumPy, on tensors NumPy hands the call to tapegrad's (``Tensor.__array_function__``), which records it. ``cond`` is composed of singular values or norms;
``matrix_rank`` has no derivative.

>>> import tapegrad as tg, tapegrad.numpy as np
>>> a = tg.Tensor([[2.0, 0.0], [0.0, 4.0]], requires_grad=True)
>>> tg.grad(lambda a: np.linalg.slogdet(a)[1])(a)
array([[0.5 , 0.  ],
       [0.  , 0.25]])
"""

import numpy.linalg as _linalg
from numpy.linalg import *  # noqa: F403  (NumPy's functions; tensors dispatch to tapegrad.linalg)

from ..linalg import cho_solve, expm, logm, solve_triangular
from ._namespace import wrapped
from ._table import LINALG as _LINALG

globals().update(wrapped(_linalg, _linalg.__all__, _LINALG))  # tensors inside lists are recorded

__all__ = list(_linalg.__all__) + ["solve_triangular", "cho_solve", "expm", "logm"]


def __getattr__(name):
    return getattr(_linalg, name)
