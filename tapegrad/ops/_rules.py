"""Calling tapegrad's own ops from inside a rule, on either kind of replay.

A rule runs on arrays during a plain replay (``xp`` is NumPy's namespace, or another library's) and on
tensors during a replay recorded for higher derivatives (``xp`` is ``tensor_rules``, tapegrad's ops). A rule
that needs an op NumPy has no name for (``fold``, ``erfc``, ``sigmoid``, a linear-algebra solve) calls it through
:func:`call` (or :func:`in_rule`): the
differentiable op itself on a recorded replay, so the rule is recorded too, and the op's forward on plain
arrays (at full speed, in their library) otherwise.
"""

from __future__ import annotations

import functools

from .._tensor import Tensor
from ..backend import NUMPY, backend_of


def recorded(xp) -> bool:
    """Whether a rule runs on a recorded replay (``xp`` is tapegrad's own namespace, its values tensors)."""
    return getattr(xp, "name", None) == "tapegrad"


def in_rule(xp, fn):
    """What a rule calls for op ``fn`` (a function made by ``defop``, whose forward takes ``xp=``): the op itself
    on a recorded replay, so that the rule is recorded too, else the op's forward in ``xp``'s library."""
    return fn if recorded(xp) else functools.partial(fn.op.forward, xp=xp)


def call(xp, fn, *args, **params):
    """``in_rule(xp, fn)(*args, **params)``: op ``fn`` called from inside a rule."""
    return in_rule(xp, fn)(*args, **params)


def constants(xp, like):
    """The namespace a rule builds constants with (masks, divisors): plain arrays of ``like``'s library."""
    if not recorded(xp):
        return xp
    return (backend_of(like._data) or NUMPY).fx


def data(value):
    """The array of a tensor (a recorded replay's value), or the value itself."""
    return value._data if isinstance(value, Tensor) else value
