"""What a rule may call: :class:`RuleNamespace`, the namespace every rule gets as ``xp``.

A rule (``vjp(xp, g, ans, *inputs, **params)``, :mod:`tapegrad.registry`) computes with NumPy's function names
(``xp.exp``, ``xp.sum(g, axis=...)``, ``xp.linalg.solve``...), looked up by name in whatever library the replay
runs in, plus the few functions NumPy spells with syntax or methods, which this Protocol names. Every namespace
a replay can hand to a rule implements it:

- ``tapegrad.backend.numpy_rules`` (a plain replay of NumPy arrays),
- :class:`tapegrad.backend.NumpySpellings` (array API libraries) and :func:`tapegrad.backend.numpy_like_spellings`
  (libraries with NumPy's API, CuPy),
- :class:`tapegrad.backend.DaskSpellings` (``dask.array``),
- ``tapegrad.ops.tensor_rules`` (a recorded replay: each of them a differentiable op).

``tests/test_backends.py`` checks each of them against this Protocol, member by member and signature by
signature, so a namespace cannot lack what a rule calls.

>>> from tapegrad.backend.numpy_rules import numpy_rules
>>> isinstance(numpy_rules, RuleNamespace)
True
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["RuleNamespace", "RULE_EXTRAS"]


@runtime_checkable
class RuleNamespace(Protocol):
    """The functions rules call beyond NumPy's names (which every namespace finds by name, in its library)."""

    name: str  # the library's name, for error messages ("the dask backend has no ...")

    def masked(self, cond, g):
        """``where(cond, g, 0)``: the gradient where ``cond`` holds and exactly 0 elsewhere, even where ``g`` is
        infinite or NaN (a masked gradient is a select, never ``g * mask``)."""

    def scatter(self, g, index, shape):
        """Zeros of ``shape`` with ``g`` added at ``index`` (the adjoint of ``getitem``): repeats accumulate."""

    def getitem(self, x, index):
        """``x[index]``."""

    def astype(self, x, dtype):
        """``x`` cast to ``dtype`` (NumPy spells it as a method before 2.0)."""


RULE_EXTRAS = ("masked", "scatter", "getitem", "astype")  # RuleNamespace's functions, in the order written above
