"""Array backends: which library a tensor's array comes from, the functions ops call for it, and one helper per
fact about arrays (bytes, dtypes, memory, indexing) that every part of tapegrad uses.

- :mod:`tapegrad.backend.core`: :class:`Backend`, :data:`NUMPY`, :func:`backend_of`, :func:`common_backend`,
  :func:`register` (the contract of backends is in its docstring).
- :mod:`tapegrad.backend.spellings`: NumPy's names over array API libraries (:class:`NumpySpellings`) and over
  libraries with NumPy's API (:func:`numpy_like_spellings`, CuPy).
- :mod:`tapegrad.backend.numpy_rules`: what rules compute with on a plain NumPy replay;
  :mod:`tapegrad.backend.namespace`: :class:`RuleNamespace`, what every such namespace provides beyond NumPy's names.
- :mod:`tapegrad.backend.facts`: :func:`is_array`, :func:`nbytes`, :func:`itemsize`, :func:`is_floating`, :func:`is_complex`,
  :func:`all_finite`, :func:`is_lazy`, :func:`memory_root`, :func:`to_numpy`.
- :mod:`tapegrad.backend.dask_array`: NumPy's names over ``dask.array`` (lazy graphs, NumPy arrays mixing in).

>>> import numpy as np
>>> from tapegrad import backend
>>> backend.backend_of(np.ones(2)).name, backend.nbytes(np.ones(2))
('numpy', 16)
"""

from ._index import is_basic_index
from .core import NUMPY, PLAIN, Backend, backend_for, backend_of, common_backend, register
from .dask_array import DaskSpellings, dask_spellings
from .facts import all_finite, is_array, is_complex, is_floating, is_lazy, itemsize, memory_root, nbytes, to_numpy
from .namespace import RuleNamespace
from .spellings import MissingFunction, NumpySpellings, cupy_spellings, numpy_like_spellings

__all__ = [
    "Backend",
    "NUMPY",
    "PLAIN",
    "backend_of",
    "backend_for",
    "common_backend",
    "register",
    "to_numpy",
    "is_array",
    "is_lazy",
    "nbytes",
    "itemsize",
    "is_floating",
    "is_complex",
    "all_finite",
    "memory_root",
    "is_basic_index",
    "NumpySpellings",
    "numpy_like_spellings",
    "cupy_spellings",
    "MissingFunction",
    "DaskSpellings",
    "dask_spellings",
    "RuleNamespace",
]
