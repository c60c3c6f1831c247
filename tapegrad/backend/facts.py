"""One helper per fact about an array, for every backend: what the engine and its tools ask of any array.

- :func:`is_array`: an array of some library (not a scalar, a list or a :class:`~tapegrad._shapes.Shape`).
- :func:`nbytes`: its size in bytes (the array API has no ``nbytes``: counted from the dtype's bits);
  :func:`itemsize`: the bytes per element of a dtype.
- :func:`is_floating` / :func:`is_complex`: whether its dtype can carry a gradient / is complex.
- :func:`all_finite`: no NaN and no infinity (non-floating arrays are finite).
- :func:`is_lazy`: its library builds a graph and computes only when asked (Dask).
- :func:`memory_root`: the object that owns its memory, followed through views, so that an in-place change of
  any view is seen as a change of every other view of the same memory.

>>> import numpy as np
>>> a = np.zeros((2, 3))
>>> nbytes(a), is_floating(a), memory_root(a.T[1:]) is a
(48, True, True)
"""

from __future__ import annotations

import math

import numpy as np

from .core import NUMPY, backend_of

__all__ = [
    "is_array",
    "is_lazy",
    "nbytes",
    "itemsize",
    "is_floating",
    "is_complex",
    "all_finite",
    "memory_root",
    "to_numpy",
]

_ndarray = np.ndarray


def is_array(v) -> bool:
    """Whether ``v`` is an array of some backend (NumPy scalars, Python numbers and shapes are not).

    >>> is_array(np.ones(2)), is_array(1.0), is_array(np.float64(1.0))
    (True, False, False)
    """
    if v.__class__ is _ndarray:
        return True
    return v is not None and not isinstance(v, (int, float, complex, np.generic)) and backend_of(v) is not None


def is_lazy(a) -> bool:
    """Whether ``a`` is an array of a lazy library (Dask): its values exist only once computed.

    >>> is_lazy(np.ones(2)), is_lazy(1.0)
    (False, False)
    """
    if a.__class__ is _ndarray:
        return False
    b = backend_of(a) if a is not None else None
    return b is not None and b.lazy


def nbytes(a) -> int:
    """Bytes of array ``a``'s elements, for any backend.

    >>> nbytes(np.ones(4, np.float32))
    16
    """
    n = getattr(a, "nbytes", None)
    if n is not None:
        return int(n)
    xp = backend_of(a).xp  # the array API has no nbytes: count from the dtype's bits
    if xp.isdtype(a.dtype, "bool"):
        bits = 8
    elif xp.isdtype(a.dtype, "integral"):
        bits = xp.iinfo(a.dtype).bits
    else:
        bits = xp.finfo(a.dtype).bits * (2 if xp.isdtype(a.dtype, "complex floating") else 1)
    return math.prod(a.shape) * bits // 8


def itemsize(dtype) -> int:
    """Bytes per element of ``dtype``, for NumPy's dtypes and any array API library's.

    >>> itemsize(np.dtype(np.float32))
    4
    """
    size = getattr(dtype, "itemsize", None)
    if isinstance(size, int):
        return size
    return np.dtype(str(dtype).rsplit(".", 1)[-1]).itemsize  # array API dtypes are named as NumPy's


def _dtype_and_backend(a, like):
    if isinstance(a, np.dtype):  # before the array test: NumPy dtypes have a shape too
        return a, NUMPY
    if isinstance(a, (type, str)):  # np.float64, "float32"
        return np.dtype(a), NUMPY
    if hasattr(a, "shape"):  # an array (or a tensor, a saved shape)
        return a.dtype, backend_of(a) or (
            backend_of(getattr(a, "_data", None)) if hasattr(a, "_data") else None
        ) or NUMPY
    return a, (backend_of(like) if like is not None else None) or NUMPY  # another library's dtype object


def is_floating(a, like=None) -> bool:
    """Whether array ``a``, or dtype ``a`` (of the library of array ``like``), is real or complex floating
    point: whether it can carry a gradient.

    >>> is_floating(np.ones(2)), is_floating(np.arange(2)), is_floating(np.complex64), is_floating("int8")
    (True, False, True, False)
    """
    dtype, backend = _dtype_and_backend(a, like)
    return backend.is_floating(dtype)


def is_complex(a, like=None) -> bool:
    """Whether ``a`` is complex: an array, anything with a ``dtype`` (a tensor, a saved shape), a number, or a
    dtype (of the library of array ``like``).

    >>> is_complex(np.ones(2, complex)), is_complex(np.ones(2)), is_complex(1j), is_complex(np.float32)
    (True, False, True, False)
    """
    if a.__class__ is np.ndarray:  # the common case, asked by rules and seeds on every replay
        return a.dtype.kind == "c"
    if isinstance(a, (bool, int, float, complex)):
        return isinstance(a, complex)
    dtype, backend = _dtype_and_backend(a, like)
    kind = getattr(dtype, "kind", None)
    if isinstance(kind, str):  # NumPy's dtypes, which CuPy uses too
        return kind == "c"
    if backend is not NUMPY:
        return bool(backend.xp.isdtype(dtype, "complex floating"))
    return "complex" in str(dtype)  # another library's dtype met without its array: known by its name


def all_finite(a) -> bool:
    """Whether array ``a`` holds no NaN and no infinity (integer and bool arrays always do).

    >>> all_finite(np.array([1.0, np.inf])), all_finite(np.arange(3))
    (False, True)
    """
    if a.__class__ is _ndarray:
        return a.dtype.kind not in "fc" or bool(np.isfinite(a).all())
    if not is_floating(a):
        return True
    xp = backend_of(a).xp
    return bool(xp.all(xp.isfinite(a)))


def memory_root(a):
    """The object that owns ``a``'s memory: ``a`` itself, or the base it is a view of (views of views
    followed to the end). Two arrays with the same root may share memory; different roots never do.

    >>> a = np.arange(6.0)
    >>> memory_root(a.reshape(2, 3).T) is a, memory_root(a.copy()) is a
    (True, False)
    """
    if a.__class__ is not _ndarray:
        inner = getattr(a, "_array", None)  # array_api_strict wraps a NumPy array
        if inner.__class__ is _ndarray:
            a = inner
    base = getattr(a, "base", None)
    while base is not None:
        a = base
        base = getattr(a, "base", None)
    return a


def to_numpy(a) -> np.ndarray:
    """A NumPy copy (or view) of an array of any backend: an explicit transfer, e.g. from the GPU.

    >>> to_numpy(np.ones(2))
    array([1., 1.])
    """
    if a.__class__ is _ndarray:
        return a
    get = getattr(a, "get", None)  # CuPy: device to host
    if get is not None and backend_of(a) is not None and backend_of(a).name == "cupy":
        return get()
    try:
        return np.from_dlpack(a)
    except (TypeError, AttributeError, RuntimeError, BufferError):
        return np.asarray(a)
