"""The tensors of a function's closure that a tape (or a tangent) outside differentiates, taken over as inputs.

A transform that runs ``f`` as one op of its own (a vmapped call under a tape, ``fixed_point``'s iteration) sees
``f``'s arguments only; a tensor of ``f``'s closure that the tapes outside record (a model's weight, in
``grad(lambda w: vmap(lambda x: loss(w, x))(X).sum())``) would reach ``f``'s ops as a constant of the op, its
gradient lost. While such a transform runs ``f``, every op's inputs pass through the open closures' ``take``
first (``core.record`` reads ``_state.CLOSED``; ``TRACING.n`` counts the open ones, so that every op takes the path
that reads it): on a first run (``finding``), such a tensor is recorded as found and replaced by a constant of its
value; the transform then makes ``f`` a function of those tensors too (``closing_over``), and each run of ``f``
(its forward, its VJPs, its batching) gets, where ``f`` uses the tensor, the value the transform passes for it.
"""

from __future__ import annotations

import contextlib

from ._batched import Batched
from ._state import ACTIVE, BATCH, CLOSED, FORWARD, TRACING, WATCHED
from ._tensor import Tensor
from .core import stop_recording
from .forward import has_tangent

__all__ = ["Closure", "ClosedOver", "taking", "finding", "closing_over", "closure_of"]


class ClosedOver(Exception):
    """Raised at the end of a first run that found tensors of f's closure (or at the first, ``stop``): the call
    is made again with them."""

    def __init__(self, closure):
        super().__init__()
        self.closure = closure


class Closure:
    """The tensors of one call's closure: ``stand_ins`` (id of the closure's tensor -> what f's ops get
    for it) and, on a first run, the tensors ``found`` that the tapes ``sealed`` differentiate."""

    __slots__ = ("stand_ins", "found", "tapes", "levels", "stop", "depth")

    def __init__(self, stand_ins, found=None, sealed=(), levels=(), stop=False):
        self.stand_ins = stand_ins
        self.found = found
        self.tapes = {id(t) for t in sealed}
        self.levels = levels  # the forward-mode levels open outside: a tangent of theirs is differentiated too
        self.stop = stop  # the first such tensor ends the run (the transform then makes the call one op)
        self.depth = len(BATCH.get())  # the levels opened from here on are the call's own

    def take(self, args, inner=()):
        """``args`` with this call's stand-ins; on a first run, the closure's tensors found (``inner``: the
        closures opened inside this call's run, which replace their own tensors: not this call's to find)."""
        new = None
        for i, a in enumerate(args):
            if not isinstance(a, Tensor) or a.__class__ is Batched:
                continue
            stand_in = self.stand_ins.get(id(a))
            if (
                stand_in is None
                and (self.found is not None or self.stop)
                and self._differentiated(a)
                and not any(id(a) in c.stand_ins for c in inner)
            ):
                if self.stop:
                    raise ClosedOver(self)
                self.found[id(a)] = a
                stand_in = self.stand_ins[id(a)] = Tensor._wrap(a._data)  # the first run: its value
            if stand_in is not None:
                new = list(args) if new is None else new
                new[i] = stand_in
        return args if new is None else tuple(new)

    def _differentiated(self, a) -> bool:
        if self.levels and has_tangent(a, self.levels):
            return True
        node = a._node
        if node is not None:
            return id(node.tape()) in self.tapes
        if not (a.requires_grad or id(a) in WATCHED.get()):
            return False
        return not any(id(a) in lv.own for lv in BATCH.get()[self.depth :])  # a transform's leaf inside f


@contextlib.contextmanager
def taking(*closures):
    """``closures`` open while the block runs: every op's inputs pass through them."""
    token = CLOSED.set(CLOSED.get() + closures)
    TRACING.add(1)
    try:
        yield
    finally:
        TRACING.add(-1)
        CLOSED.reset(token)


def finding(fn, closure):
    """``fn`` run the first time: the tensors of its closure that ``closure`` finds are collected; if any were,
    the run ends with ``ClosedOver``. Later runs (none found) are ``fn``'s."""
    first = [True]

    def run(*args):
        if not first[0]:
            return fn(*args)
        first[0] = False
        with taking(closure):
            out = fn(*args)
        if closure.found:
            raise ClosedOver(closure)
        return out

    return run


def closing_over(fn, closure):
    """``fn`` of its arguments and, last, one value per tensor of ``closure``, which ``fn``'s ops get for it."""
    n = len(closure)
    # a tensor found here may stand in for one of an enclosing call's closure (f inside f's vmap): its rules run
    # f again after that call's run, and f's ops must still get, for that tensor, what stands in for it here
    enclosing = tuple(c for c in CLOSED.get() if c.found is None and not c.stop)

    def run(*args):
        with taking(*enclosing, Closure({id(c): v for c, v in zip(closure, args[-n:])})):
            return fn(*args[:-n])

    run.closure = closure  # kept alive while the call's entry is: their ids key the stand-ins
    return run


def closure_of(call) -> tuple:
    """The tensors ``call()`` (one step of a transform's function, on plain values) reads that the tapes
    recording now, or a tangent of a level open now, differentiate: its closure's, run once to find them."""
    sealed, levels = ACTIVE.get(), FORWARD.get()
    if not (sealed or levels):
        return ()
    found: dict = {}
    with stop_recording(), taking(Closure({}, found, sealed, levels)):
        call()
    return tuple(found.values())
