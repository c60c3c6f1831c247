"""Array backends: which library a tensor's array comes from, and the functions ops call for it.

A tensor's data may be a NumPy array (the default), a CuPy array (on the GPU), or an array of any library that
implements the Python array API standard (``array_api_strict``, ...). Each op runs with the library of its
inputs, and so do its backward rules: gradients of CuPy tensors stay on the device.

Contract
--------
- **NumPy pays one class check per input.** ``tape.apply`` checks each input's class against ``numpy.ndarray``
  in the pass it already makes and, when all are NumPy, calls the op's NumPy forward directly, as before.
  Only other arrays come here.
- **One library per op.** :func:`common_backend` finds the backend of every array input, cached per array
  type (a dict lookup after the first time); two libraries in one op are a ``TypeError`` naming the op and
  both libraries. Python scalars (and NumPy scalars) mix with any library, and NumPy arrays mix with a
  library that takes them as its own inputs (``Backend.takes_numpy``: Dask, whose operations accept NumPy
  arrays as one-chunk arrays): such an op runs in that library, so small NumPy parameters meet large Dask
  data and the result, and every gradient through it, is Dask's.
- **Lazy libraries.** ``Backend.lazy`` says that the library's functions build a graph and compute nothing
  (Dask): nothing in tapegrad asks such an array for a value unless the user does (``item()``,
  ``tg.compute``).
- **Forwards per backend, resolved once.** ``Backend.forward(op)`` is cached per op: a NumPy function
  (``np.exp``) is looked up by name in the backend's *NumPy spellings* (``fx``); a forward with a keyword-only
  ``xp`` parameter gets ``xp=fx``; any other forward (written with operators) runs as it is.
- **Rules per backend.** ``Backend.fx`` is also the namespace rules compute with on a plain replay: the names
  of ``backend.numpy_rules``, for this library. CuPy implements NumPy's API, so its ``fx`` is CuPy's namespace
  plus three helpers (:func:`tapegrad.backend.numpy_like_spellings`); other libraries get
  :class:`tapegrad.backend.NumpySpellings` (``power`` -> ``pow``, ``concatenate`` -> ``concat``, a
  scatter-add for indexing, ...). What a library cannot do raises ``NotImplementedError``
  naming the op and the library.
- **Finding the namespace.** ``array-api-compat`` (the ``backends`` extra) when installed, else the array's
  own ``__array_namespace__()``.

>>> import numpy as np
>>> backend_of(np.ones(2)).name
'numpy'
>>> backend_of(2.0) is None
True
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from .dask_array import dask_spellings
from .spellings import NumpySpellings, cupy_spellings

__all__ = ["Backend", "backend_of", "backend_for", "common_backend", "register", "NUMPY", "PLAIN"]

# The classes of inputs NumPy's forward takes as they are: when every input is one of these, the op calls its
# NumPy forward directly, with no backend looked up (core.record, and the tracer naming what an op ran).
PLAIN = frozenset((float, int, bool, np.ndarray, np.float64, np.float32, np.int64))


class Backend:
    """One array library: its ``name``, its namespace ``xp``, its NumPy spellings ``fx``, forwards per op;
    ``takes_numpy``: NumPy arrays mix with it (the op runs in this library); ``lazy``: it builds graphs."""

    __slots__ = ("name", "xp", "fx", "_forwards", "takes_numpy", "lazy")

    def __init__(self, name: str, xp, fx, *, takes_numpy: bool = False, lazy: bool = False):
        self.name = name
        self.xp = xp
        self.fx = fx
        self.takes_numpy = takes_numpy
        self.lazy = lazy
        self._forwards: dict = {}

    def forward(self, op):
        """The op's forward for this backend (resolved on first use, then cached): one that raises
        ``NotImplementedError`` with the reason where the op's row says this library cannot run it
        (``op.refuses``, keyed by the backend's name)."""
        f = self._forwards.get(op)
        if f is None:
            f = _resolve(op, self)
            refused = op.refuses.get(self.name)
            if refused is not None:
                f = _refused(op.name, self.name, *refused, f)
            self._forwards[op] = f
        return f

    def asarray(self, data, dtype=None):
        """``data`` (scalars, lists, this library's arrays) as an array of this library."""
        return self.xp.asarray(data, dtype=dtype) if dtype is not None else self.xp.asarray(data)

    def astype(self, a, dtype):
        """``a`` cast to ``dtype``."""
        return a.astype(dtype) if self is NUMPY else self.fx.astype(a, dtype)

    def copy(self, a):
        """A new buffer holding ``a``."""
        if self is NUMPY:
            return np.array(a)
        method = getattr(a, "copy", None)  # CuPy's asarray has no copy=; array API arrays have no copy()
        return method() if method is not None else self.xp.asarray(a, copy=True)

    def is_floating(self, dtype) -> bool:
        """Whether arrays of ``dtype`` can carry a gradient (real or complex floating point)."""
        kind = getattr(dtype, "kind", None)
        if isinstance(kind, str):  # NumPy dtypes, which CuPy uses too
            return kind in "fc"
        return bool(self.xp.isdtype(dtype, ("real floating", "complex floating")))

    def __repr__(self) -> str:
        return f"<backend {self.name}>"


def _resolve(op, backend):
    f = op.forward
    name = getattr(f, "__name__", "")
    if isinstance(f, np.ufunc) or (name and getattr(np, name, None) is f):
        g = getattr(backend.fx, name, None)
        if g is None:
            return _missing(op.name, backend.name, name)
        return g
    try:
        takes_xp = "xp" in inspect.signature(f).parameters
    except (TypeError, ValueError):  # builtins without a signature
        takes_xp = False
    return functools.partial(f, xp=backend.fx) if takes_xp else f


def _refused(op_name, backend_name, why, when, forward):
    def refuse(*args, **params):
        if when is None or when(params):
            raise NotImplementedError(
                f"{op_name}: the {backend_name} backend cannot run it ({why}); compute it on NumPy arrays "
                f"(x.compute() or tapegrad.backend.to_numpy(x))"
            )
        return forward(*args, **params)

    return refuse


def _missing(op_name, backend_name, what):
    def raise_(*args, **kwargs):
        raise NotImplementedError(f"{op_name}: the {backend_name} backend has no {what}; compute it in NumPy or CuPy")

    return raise_


# -- finding the backend of an array ----------------------------------------------------------------------
NUMPY = Backend("numpy", np, np)
_SCALARS = (int, float, complex, bool, np.generic)
_BY_TYPE: dict = {np.ndarray: NUMPY}  # array type -> Backend, or None for non-arrays (scalars, lists)
_BY_NAMESPACE: dict = {}  # id(namespace) -> Backend, so every array type of one library shares one backend


def backend_of(a) -> Backend | None:
    """The backend of array ``a``, or None when ``a`` is not an array (a scalar, a list).

    >>> import numpy as np
    >>> backend_of(np.float32(1.0)) is None   # NumPy scalars mix with any library, like Python scalars
    True
    """
    cls = a.__class__
    try:
        return _BY_TYPE[cls]
    except KeyError:
        pass
    b = _find(cls, a)
    _BY_TYPE[cls] = b
    return b


def backend_for(array_type: type) -> Backend:
    """The backend of arrays of ``array_type``, one :func:`backend_of` has met (the compiler lowers the values
    it traced by their array type alone).

    >>> import numpy as np
    >>> backend_for(np.ndarray).name
    'numpy'
    """
    b = _BY_TYPE.get(array_type)
    if b is None:
        raise LookupError(f"no backend has met arrays of type {array_type.__name__} yet")
    return b


def _find(cls, a):
    if issubclass(cls, _SCALARS) or isinstance(a, (list, tuple)):
        return None
    if issubclass(cls, np.ndarray):
        return NUMPY
    top = cls.__module__.split(".")[0]
    if top == "cupy":
        return _cupy()
    if top == "dask" and hasattr(a, "__dask_graph__"):
        return _dask()
    ns = _namespace(a)
    if ns is None:
        return None
    b = _BY_NAMESPACE.get(id(ns))
    if b is None:
        name = getattr(ns, "__name__", type(ns).__name__).replace("array_api_compat.", "")
        b = _BY_NAMESPACE[id(ns)] = Backend(name, ns, NumpySpellings(ns, name))
    return b


def _namespace(a):
    try:
        from array_api_compat import array_namespace, is_array_api_obj
    except ImportError:
        get = getattr(a, "__array_namespace__", None)
        return get() if get is not None else None
    return array_namespace(a) if is_array_api_obj(a) else None


@functools.cache
def _cupy():
    import cupy  # optional: only when a CuPy array is met

    return Backend("cupy", cupy, cupy_spellings(cupy))


@functools.cache
def _dask():
    import dask.array  # optional: only when a Dask array is met

    fx = dask_spellings(dask.array)
    return Backend("dask", fx, fx, takes_numpy=True, lazy=True)


def register(array_type: type, backend: Backend) -> None:
    """Use ``backend`` for arrays of ``array_type`` (a library that neither is CuPy nor has the array API).

    >>> import numpy as np
    >>> from tapegrad.backend import numpy_like_spellings
    >>> class Pinned(np.ndarray): pass
    >>> register(Pinned, Backend("pinned", np, numpy_like_spellings(np, "pinned", np.add.at)))
    >>> backend_of(np.ones(2).view(Pinned)).name
    'pinned'
    """
    _BY_TYPE[array_type] = backend


def common_backend(what: str, arrays) -> Backend:
    """The one backend of the arrays among ``arrays`` (NumPy when there are none). NumPy arrays mix with a
    backend that ``takes_numpy`` (Dask), which then runs the op.

    >>> import numpy as np
    >>> common_backend("add", [np.ones(2), 1.0]).name
    'numpy'
    """
    found = None
    for a in arrays:
        b = backend_of(a)
        if b is None or b is found:
            continue
        if found is not None:
            if b is NUMPY and found.takes_numpy:
                continue
            if found is NUMPY and b.takes_numpy:
                found = b
                continue
            raise TypeError(
                f"{what}: inputs come from two array libraries, {found.name} and {b.name}; an op runs in one "
                f"library, so convert one of them first (e.g. tg.Tensor(xp.asarray(a)) with the other's namespace)"
            )
        found = b
    return NUMPY if found is None else found
