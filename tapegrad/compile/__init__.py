"""Compiled tapes: ``tg.compile(fn)`` traces ``fn`` once per signature into a straight-line program of backend
calls over numbered slots (the forward and the backward pass, when ``fn`` computes gradients), with a memory
plan, and replays that program on later calls.

This package is itself what ``tg.compile`` is: calling it is :func:`tapegrad.compile.api.compile`, and its
submodules stay importable under their names (``tapegrad.compile.plan``). Read it in this order:
:mod:`.trace` (running the function and recording its ops), :mod:`.graph` (the program's vocabulary),
:mod:`.passes` (rewrites and the order of the calls), :mod:`.plan` (buffers, in-place writes, frees),
:mod:`.kernels` and :mod:`.codegen` (the source), :mod:`.api` (signatures, the cache, the contract).

>>> import numpy as np, tapegrad as tg
>>> def loss(w, x, y):
...     return ((x @ w - y) ** 2).mean()
>>> step = tg.compile(tg.value_and_grad(loss))
>>> value, grad = step(np.zeros(2), np.eye(2), np.ones(2))
>>> float(value), grad
(1.0, array([-1., -1.]))
"""

import sys
import types

from .._state import is_traced
from .api import CacheInfo, Compiled, compile
from .codegen import Program

__all__ = ["compile", "Compiled", "CacheInfo", "Program", "is_traced"]


class _CallableModule(types.ModuleType):
    """This package, callable as :func:`compile` (so that ``tg.compile(fn)`` and ``import tapegrad.compile.plan``
    both work: a function of that name would hide the package)."""

    def __call__(self, fn=None, **options):
        return compile(fn, **options)


sys.modules[__name__].__class__ = _CallableModule
