"""The ops, by family; each family file is a table of derivatives registered in ``tapegrad.registry``.

``tapegrad.ops`` (and ``tapegrad``'s top level) is every public function of the families below: each
``defop`` row with a public name, each wrapper that gives an op NumPy's signature (``sum`` for the op
``sum``), each function composed of ops (``meshgrid``), and the aliases a family binds (``amax = max``).
Nothing lists them again: a function defined in a family file is here. A wrapper named as an op of its file is
that op's public function (``tg.sum.op is REGISTRY["sum"]``). The linear-algebra and FFT families
(``linalg``, ``decompositions``, ``matrix_functions``, ``fft``) are ``tapegrad.linalg``'s and
``tapegrad.fft``'s instead (but ``matmul``, a product), and SciPy's special functions (``special``) are
``tapegrad.scipy.special``'s.

``tensor_rules`` is the namespace rules compute with when a replay is itself recorded (``create_graph``):
NumPy's names, implemented by tapegrad's differentiable ops. Importing this package puts it into the
replay's slot for it (:func:`tapegrad.core.replay.set_differentiable_rules`).

>>> import tapegrad.ops as ops
>>> ops.exp.op.name, ops.sum.op is ops.sum.op.function.op, "meshgrid" in ops.__all__
('exp', True, True)
"""

import types

import numpy as np

from .._tensor import Tensor
from ..backend import NUMPY, backend_of
from ..core.replay import set_differentiable_rules
from ..registry import NONDIFF, REGISTRY
from . import (  # noqa: F401  (the linear-algebra and FFT families: registered here, public elsewhere)
    activations,
    arrange,
    compare,
    complex_numbers,
    conv,
    creation,
    cumulative,
    decompositions,
    determinants,
    elementwise,
    fft,
    indexing,
    joining,
    linalg,
    linear,
    math,
    matrix_functions,
    norm,
    pool,
    quantiles,
    reductions,
    selection,
    shape,
    special,
    statistics,
)

# the families whose public functions are tapegrad's top-level functions; the others' are tapegrad.linalg's
# and tapegrad.fft's
FAMILIES = (
    activations, arrange, compare, complex_numbers, conv, creation, cumulative, elementwise, indexing, joining,
    linear, math, norm, pool, quantiles, reductions, selection, shape, statistics,
)  # fmt: skip
_OTHERS = (decompositions, determinants, fft, linalg, matrix_functions, special)


def _public_functions(family) -> dict:
    """The functions ``family`` binds to a public name: its own, its ops', and those of other families it binds
    under another name (an alias); not its helpers (from ``_``-modules) nor unregistered ops (``masked``)."""
    out = {}
    for name, f in vars(family).items():
        if name.startswith("_") or not isinstance(f, types.FunctionType):
            continue
        home = f.__module__ or ""
        if not home.startswith(__name__ + ".") or home.rsplit(".", 1)[1].startswith("_"):
            continue  # imported from outside the ops' families (a helper, the registry)
        op = getattr(f, "op", None)
        if op is not None and REGISTRY.get(op.name) is not op and NONDIFF.get(op.name) is not op:
            continue
        out[name] = f
    return out


def _link(name, f) -> None:
    """A wrapper named as an op of its own file is that op's public function."""
    if getattr(f, "op", None) is not None:
        return
    op = REGISTRY.get(name) or NONDIFF.get(name)
    if op is not None and op.module == f.__module__:
        op.function, f.op = f, op


def _collect() -> list:
    names = {}
    for family in FAMILIES:
        for name, f in _public_functions(family).items():
            if names.setdefault(name, f) is not f:
                raise ImportError(f"tapegrad.ops: {name} is two functions, {names[name]} and {f}")
    for family in FAMILIES + _OTHERS:
        for name, f in _public_functions(family).items():
            _link(name, f)
    globals().update(names)
    return sorted(names)


__all__ = _collect()


class _TensorRules:
    """NumPy's names, implemented by tapegrad's differentiable ops: what rules compute with on a recorded
    replay. Any public op of ``tapegrad.ops`` is found by its name; the NumPy constructors tapegrad has no
    function for (``empty``, ``identity``) give constant tensors; NumPy's constants and dtypes pass through."""

    name = "tapegrad"

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        f = globals().get(attr) if attr in __all__ else None
        if f is None and attr in _NUMPY_CONSTRUCTORS:
            f = _constant(attr)
        if f is None:
            value = getattr(np, attr, None)
            if value is None or (callable(value) and not isinstance(value, type)):
                raise AttributeError(
                    f"a rule computed xp.{attr} on a recorded replay (create_graph), but tapegrad has no "
                    f"differentiable op named {attr!r}: write the rule with ops tapegrad has, or define one with defop"
                )
            f = value  # a constant or a dtype
        setattr(self, attr, f)
        return f

    @staticmethod
    def masked(cond, g):
        return elementwise.masked(cond, g)

    @staticmethod
    def astype(x, dtype):
        return elementwise.astype(x, dtype=dtype)

    @staticmethod
    def getitem(x, index):
        return shape.getitem(x, index=index)

    scatter = staticmethod(shape.scatter)


def _constant(name):
    """A constructor on a recorded replay: a constant tensor, made in the library of its array arguments."""

    def fn(*args, **kwargs):
        args = [a._data if isinstance(a, Tensor) else a for a in args]
        library = next((b for b in map(backend_of, args) if b is not None), NUMPY)
        return Tensor._wrap(getattr(library.fx, name)(*args, **kwargs))

    return fn


# NumPy's constructors that tapegrad has no function of the same name for (its own, such as ``zeros``, are ops)
_NUMPY_CONSTRUCTORS = frozenset(("empty", "identity"))
tensor_rules = _TensorRules()
set_differentiable_rules(tensor_rules)
