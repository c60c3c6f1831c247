"""The array backends the suite runs on, and the ``backend`` fixture that runs a test once per backend.

A test that takes the ``backend`` fixture (registered in ``tests/conftest.py``) runs on every selected
backend and is marked ``backend`` (``pytest -m backend`` runs only those). It builds its inputs with
``backend.asarray(numpy_array)``, reads results back with ``backend.to_numpy(array)`` and checks with
``backend.is_native(array)`` that nothing was silently converted to NumPy. Property tests can take the
fixture too (it is session-scoped, so ``@given`` accepts it) or draw from :func:`available`.

Which backends: ``TAPEGRAD_BACKENDS`` (comma separated), by default ``numpy,array_api_strict,numpy_like,dask``.
A backend that is not installed (or, for ``cupy``, has no GPU) is skipped with the reason. By default Dask runs
a subset of the op table (:func:`subset`: values and gradient shapes, no finite differences);
``TAPEGRAD_BACKENDS=dask`` runs all of it.
``benchmarks/gpu_check.py`` runs the marked tests with ``TAPEGRAD_BACKENDS=cupy``.

``numpy_like`` stands in for CuPy on machines without a GPU: NumPy arrays under another type (``StandIn``),
registered as a library with NumPy's API, so the code path CuPy takes (``numpy_like_spellings``, forwards by
name, scatter-add, gradients that must stay in their library) runs in every CI run.

    def test_exp_gradient(backend):
        x = tg.Tensor(backend.asarray(np.ones(3)), requires_grad=True)
        ...
"""

from __future__ import annotations

import importlib
import os
import types
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from tapegrad.backend import Backend, numpy_like_spellings, register, to_numpy


@dataclass(frozen=True)
class ArrayBackend:
    name: str
    asarray: Callable  # a NumPy array -> the same values and dtype as this library's array
    to_numpy: Callable  # this library's array -> a NumPy array (an explicit copy from a device)
    array_type: type
    # x -= y changes the array in place (NumPy, CuPy, array_api_strict); Dask arrays are immutable, so the
    # tensor is rebound to a new array and what a tape saved stays as it was
    mutable: bool = True
    # several arrays -> NumPy arrays at once (Dask computes their graphs together); None: one by one
    to_numpy_many: Callable | None = None

    def is_native(self, a) -> bool:
        return isinstance(a, self.array_type)

    def to_numpy_all(self, arrays) -> list:
        """The arrays as NumPy arrays, computed together where the library is lazy."""
        if self.to_numpy_many is not None:
            return self.to_numpy_many(arrays)
        return [self.to_numpy(a) for a in arrays]

    def dtype(self, np_dtype):
        """This library's dtype for a NumPy dtype."""
        return self.asarray(np.zeros(0, dtype=np_dtype)).dtype


def _numpy():
    return ArrayBackend("numpy", np.asarray, np.asarray, np.ndarray)


def _array_api_strict():
    xp = importlib.import_module("array_api_strict")
    return ArrayBackend("array_api_strict", xp.asarray, to_numpy, type(xp.asarray(0.0)))


def _cupy():
    cupy = importlib.import_module("cupy")
    if cupy.cuda.runtime.getDeviceCount() < 1:
        raise ImportError("cupy is installed but sees no GPU")
    return ArrayBackend("cupy", cupy.asarray, cupy.asnumpy, cupy.ndarray)


class StandIn(np.ndarray):
    """A NumPy array under another type: a library with NumPy's API that is not NumPy (as CuPy is)."""


def _stand_in(f):
    def call(*args, **kwargs):
        out = f(*args, **kwargs)
        if isinstance(out, (np.ndarray, np.generic)):  # CuPy returns 0-d arrays where NumPy gives scalars
            return np.asarray(out).view(StandIn)
        return out

    return call


def _numpy_like():
    ns = types.SimpleNamespace(
        **{k: v if isinstance(v, type) or not callable(v) else _stand_in(v) for k, v in vars(np).items() if k[0] != "_"}
    )
    register(StandIn, Backend("numpy_like", ns, numpy_like_spellings(ns, "numpy_like", np.add.at, np.asarray)))
    return ArrayBackend("numpy_like", lambda a: np.array(a).view(StandIn), lambda a: np.array(a), StandIn)


def _dask():
    da = importlib.import_module("dask.array")

    def asarray(a):
        a = np.array(a)  # two chunks along every axis of two or more elements: rules meet chunk boundaries
        return da.from_array(a, chunks=tuple(max(1, -(-n // 2)) for n in a.shape))

    # the synchronous scheduler: these graphs are a few tiny chunks, for which threads cost more than they save
    # (tests/test_dask.py runs the threaded scheduler and a cluster)
    def to_numpy(a):
        return np.asarray(a.compute(scheduler="synchronous") if hasattr(a, "compute") else a)

    def to_numpy_many(arrays):
        return [np.asarray(a) for a in importlib.import_module("dask").compute(*arrays, scheduler="synchronous")]

    return ArrayBackend("dask", asarray, to_numpy, da.Array, mutable=False, to_numpy_many=to_numpy_many)


_MAKERS = {
    "numpy": _numpy,
    "array_api_strict": _array_api_strict,
    "numpy_like": _numpy_like,
    "cupy": _cupy,
    "dask": _dask,
}


DEFAULT = "numpy,array_api_strict,numpy_like,dask"


def subset(name: str) -> bool:
    """Whether ``name`` runs the op table's subset only: Dask, unless TAPEGRAD_BACKENDS names it. Each Dask op
    builds a graph and computes it, so the finite-difference checks (hundreds of evaluations per row) cost
    minutes; by default Dask runs the float64 value and gradient-shape checks of every row (and every other backend
    test), and ``TAPEGRAD_BACKENDS=dask`` runs the whole table on it."""
    return name == "dask" and "TAPEGRAD_BACKENDS" not in os.environ


def selected() -> list[str]:
    names = [n.strip() for n in os.environ.get("TAPEGRAD_BACKENDS", DEFAULT).split(",") if n.strip()]
    unknown = set(names) - set(_MAKERS)
    if unknown:
        raise ValueError(f"TAPEGRAD_BACKENDS: unknown backends {sorted(unknown)}; known: {sorted(_MAKERS)}")
    return names


def load(name: str) -> ArrayBackend | str:
    """The backend, or why it cannot run here."""
    try:
        return _MAKERS[name]()
    except Exception as err:  # ImportError, or a CUDA runtime error without a GPU
        return f"{name} is not usable here ({type(err).__name__}: {err})"


def _params(but=None):
    params = []
    for name in (n for n in selected() if n != but):
        b = load(name)
        marks = [pytest.mark.skip(reason=b)] if isinstance(b, str) else []
        params.append(pytest.param(b if not isinstance(b, str) else None, id=name, marks=marks))
    return params


def available() -> list[ArrayBackend]:
    """The selected backends that can run here (for ``st.sampled_from`` in property tests)."""
    return [b for b in map(load, selected()) if not isinstance(b, str)]


# Session scope: the backend is immutable, and hypothesis's @given refuses function-scoped fixtures.
@pytest.fixture(scope="session", params=_params())
def backend(request) -> ArrayBackend:
    """Runs the test once per selected array backend."""
    return request.param


@pytest.fixture(scope="session", params=_params(but="numpy"))
def other_backend(request) -> ArrayBackend:
    """Runs the test once per selected array backend but NumPy (for tests that compare a backend with NumPy)."""
    return request.param
