"""Recomputation (gradient checkpointing): trade a second forward pass for the memory of a block's internals.

``checkpoint(fn)(*args)`` records ``fn`` as **one** tape entry that saves only its inputs. During replay that
entry re-runs ``fn`` on a fresh nested tape and replays it, so ``fn``'s intermediates exist only while its
own gradient is computed, never between forward and backward.

Contract
--------
- Gradients are the ones the plain computation gives (the same ops, in the same order), for the arguments
  and for tensors ``fn`` uses from its closure (weights): those are found by running the forward once on a
  probe tape that keeps no arrays, and become inputs of the entry.
- ``fn`` takes tensors (and any constants) and returns one tensor. It must be deterministic: the recomputed
  values are the ones differentiated (draw random masks outside ``fn`` and pass them in).
- A tensor recorded earlier on the outer tape and used inside ``fn`` must be passed as an argument (a clear
  error says so): its gradient can only flow through the entry's inputs.
- Higher order works: when the replay is itself recorded (``create_graph=True``), the recomputation and its
  replay are recorded too, so the gradients can be differentiated again.
- Outside ``record()`` it is simply ``fn(*args)``, and so it is inside ``vmap`` and forward mode (``jvp``,
  ``jacfwd``, ``hvp``): their derivatives are exact, without the memory saving (a recomputation would have to
  batch, or carry tangents through, the block's own tape).
"""

from __future__ import annotations

import functools

from ._state import ACTIVE, BATCH, FORWARD, WATCHED, is_recording
from ._tensor import Tensor
from .backend.numpy_rules import numpy_rules
from .core import BaseTape, Node, keep_pending, stop_recording
from .core.node import SRCS
from .registry import defop

__all__ = ["checkpoint"]


def _forward(*datas, fn, needs, box):
    return box.pop()  # computed by the probe run; never kept by the entry


def _rule(xp, g, ans, *vals, fn, needs, box):
    n = len(needs)
    with keep_pending():  # the nested tape below must not displace the tape the context keeps
        if xp is numpy_rules:
            with stop_recording():  # a plain replay: the recomputation is recorded on its own tape only
                args = [Tensor(v, requires_grad=k == 2) if k else v for v, k in zip(vals[:n], needs)]
                return _recompute(fn, args, g, needs, box)
        # A recorded replay: the recomputation is recorded on the replayed tape too. Its gradients are values of
        # that tape, which outlives the nested tape below: they must find it when differentiated again.
        home = ACTIVE.get()[-1]
        grads = _recompute(fn, list(vals[:n]), g, needs, box)
        for gi in grads:
            if isinstance(gi, Tensor) and gi._node is not None:
                gi._node.tape = home._ref
        return grads


def _recompute(fn, args, g, needs, extras):
    # needs[i]: 2 the argument needs a gradient, 1 a constant tensor, 0 not a tensor.
    # extras: the closure tensors, which checkpoint() put in the box once the forward had popped the value.
    with BaseTape() as t:
        out = fn(*args)
    sources, seen = [], set()
    for a, k in zip(args, needs):
        key = id(a._node if a._node is not None else a) if k == 2 else None
        sources.append(a if k == 2 and key not in seen else None)  # a repeated argument gets its gradient once
        seen.add(key)
    wanted = [s for s in sources if s is not None] + list(extras)
    found = t.gradient(out, wanted, output_gradients=g) if wanted else []
    it = iter(found)
    return [next(it) if s is not None else None for s in sources] + [next(it) for _ in extras]


_op = defop("checkpoint", _forward, _rule, inputs="*", save="*", joint=True, register=False)


class _Probe:
    """A monitor that notes which tensors from outside ``fn`` its ops use, and drops every entry at once."""

    def __init__(self, tape, args):
        self.tape = tape
        self.arg_ids = {id(a._node if a._node is not None else a) for a in args if isinstance(a, Tensor)}
        self.leaves: dict[int, Tensor] = {}
        self.foreign = None

    def __call__(self, tape, entry, out):
        for s in entry.rec[SRCS]:
            if s is None or id(s) in self.arg_ids:
                continue
            if s.__class__ is Node:
                if s.tape() is not self.tape and self.foreign is None:
                    self.foreign = s
            elif s.requires_grad:
                self.leaves.setdefault(id(s), s)
        entry.rec = None  # keep nothing: this run only finds the inputs


def checkpoint(fn):
    """Wrap ``fn`` so that, when recorded, it saves only its inputs and is recomputed during backward.

    >>> import numpy as np, tapegrad as tg
    >>> w = tg.Tensor(np.full((3, 3), 0.5), requires_grad=True)
    >>> block = tg.checkpoint(lambda h: tg.relu(h @ w) * 2.0)
    >>> x = tg.Tensor(np.ones((2, 3)), requires_grad=True)
    >>> with tg.record() as t:
    ...     y = block(block(x)).sum()
    >>> len(t)   # one entry per block, plus the sum
    3
    >>> y.backward(); w.grad[0]
    array([24., 24., 24.])
    """

    @functools.wraps(fn)
    def run(*args):
        if not is_recording() or BATCH.get() or FORWARD.get():
            return fn(*args)
        # The probe records under the tapes recording now (values they recorded are nested use, not carried over).
        active = ACTIVE.get()
        with stop_recording():
            probe_tape = BaseTape()
            probe_tape.nest_in(active)
            probe = _Probe(probe_tape, args)
            probe_tape.add_monitor(probe)
            with probe_tape:
                out = fn(*args)
        if not isinstance(out, Tensor):
            raise TypeError(f"checkpoint: {_name(fn)} must return one Tensor, got {type(out).__name__}")
        if probe.foreign is not None:
            raise ValueError(
                f"checkpoint: {_name(fn)} uses a tensor recorded before it on the tape without taking it as an "
                "argument, so its gradient could not flow; pass that tensor to the checkpointed function"
            )
        extras = list(probe.leaves.values())
        watched = WATCHED.get()
        needs = tuple(
            (2 if a._node is not None or a.requires_grad or id(a) in watched else 1) if isinstance(a, Tensor) else 0
            for a in args
        )
        box = [out._data]  # the forward pops the value; the rule then finds the closure tensors here
        result = _op([*args, *extras], fn=fn, needs=needs, box=box)
        box.extend(extras)
        return result

    return run


def _name(fn):
    return getattr(fn, "__qualname__", None) or repr(fn)
