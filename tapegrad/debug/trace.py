"""The backward pass as adjoint updates: ``loss.backward(trace=True)`` (or ``t.backward(loss, trace=True)``).

For each entry the replay reaches it prints the entry and the cotangent arriving at its output, then one line
per input, ``ḡa += ḡt5·∂t5/∂a`` (``=`` for the first contribution), with the gradient's shape; a gradient that
broadcasting made larger than its input is summed back to it as a step of its own, ``ḡb += sum_to(δ, (4,))``.
``trace`` may be True (standard output) or any object with ``write``.

The same observer checks each gradient for NaN and infinity when the tape detects anomalies. It wraps the
op's rules for the entry being replayed and runs only when asked: a plain replay never calls it.
"""

from __future__ import annotations

import sys

from .._tensor import Tensor
from ..core.node import MASK, OP, SHAPES, SRCS
from .anomaly import finite, gradient_error
from .reading import analyse, fmt_shape

__all__ = ["replay_observer"]


class _TracedOp:
    """What the replay loop reads of an op (``vjps``, ``joint``), with rules that report what they return."""

    __slots__ = ("name", "vjps", "joint")


def _shape(g):
    if g.__class__ is tuple:  # the cotangents of an op with several outputs (None: an output nobody used)
        return ", ".join("-" if gi is None else _shape(gi) for gi in g)
    return fmt_shape((g._data if isinstance(g, Tensor) else g).shape)


class _Observer:
    def __init__(self, tape, trace, anomaly):
        self.out = sys.stdout if trace is True else (trace or None)
        self.anomaly = anomaly
        rows = analyse(tape)
        self.rows = {r.pos: r for r in rows}
        self.names = {}
        for r in rows:
            for src, name in zip(r.rec[SRCS], r.args):
                self.names[src] = name
            node = r.entry()
            for label, p, _, _ in r.outputs or ():  # an op with several outputs: each output by its name
                self.names[p] = label
            if node is not None and r.outputs is None:
                self.names[node] = r.name
        self.leaves: dict = {}
        if self.out:
            self._write(f"backward through {len(rows)} entries, last first:")

    def _write(self, line):
        self.out.write(line + "\n")

    def __call__(self, idx, rec, node, g, grads):
        row = self.rows.get(idx)
        op, srcs, shapes, mask = rec[OP], rec[SRCS], rec[SHAPES], rec[MASK]
        name = row.name if row is not None else "?"
        index = row.index if row is not None else idx
        info = getattr(row.entry, "info", None) if row is not None else None
        if self.out:
            outs = name if row is None or row.outputs is None else ", ".join(o[0] for o in row.outputs)
            call = f"{outs} = {op.name}({', '.join(row.args)})" if row is not None else op.name
            self._write(f"  [{index}] {call}".ljust(40) + f"  ḡ{name} {_shape(g)}")
        if self.anomaly and not all(gi is None or finite(gi) for gi in (g if g.__class__ is tuple else (g,))):
            raise gradient_error(op.name, index, None, info, g, f"the gradient arriving at {name} = {op.name}(...)")

        def report(i, gi):
            if gi is None:
                return
            src = srcs[i]
            arg = self.names.get(src, "?")
            acc = "+=" if src in grads else "="
            if isinstance(src, Tensor):
                self.leaves[arg] = src
            broadcast = shapes is not None and shapes[i] is not None and tuple(gi.shape) != tuple(shapes[i])
            if self.out:
                term = f"ḡ{name}·∂{name}/∂{arg}"
                if broadcast:
                    self._write(f"      δ = {term}".ljust(40) + f"  {_shape(gi)}")
                    self._write(
                        f"      ḡ{arg} {acc} sum_to(δ, {fmt_shape(shapes[i])})".ljust(40)
                        + f"  {_shape(gi)} -> {fmt_shape(shapes[i])}"
                    )
                else:
                    self._write(f"      ḡ{arg} {acc} {term}".ljust(40) + f"  {_shape(gi)}")
            if self.anomaly and not finite(gi):
                raise gradient_error(op.name, index, arg, info, gi)

        traced = _TracedOp()
        traced.name, traced.joint = op.name, op.joint
        rules = op.vjps
        if op.joint:

            def joint(*args, **params):
                out = rules[0](*args, **params)
                for i, gi in enumerate(out):
                    if (mask >> i) & 1:
                        report(i, gi)
                return out

            traced.vjps = [joint]
        else:
            traced.vjps = [_reporting(rules[i], i, report) if (mask >> i) & 1 else None for i in range(len(srcs))]
        return traced

    def done(self):
        if self.out and self.leaves:
            self._write(
                "  leaves: " + ", ".join(f"{n}.grad += ḡ{n} {fmt_shape(t.shape)}" for n, t in self.leaves.items())
            )


def _reporting(rule, i, report):
    def traced(*args, **params):
        gi = rule(*args, **params)
        report(i, gi)
        return gi

    return traced


def replay_observer(tape, trace, anomaly):
    """What the replay calls for each entry it replays when tracing or checking for anomalies."""
    return _Observer(tape, trace, anomaly)
