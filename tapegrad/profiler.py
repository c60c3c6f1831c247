"""Where a step's time and memory go: ``with tg.profile() as prof:``, per op and per line of your code.

Inside the block, every op this context runs is timed (wall clock and the process's CPU time, BLAS threads
included), forward and, when a tape recorded inside or outside the block is replayed inside it, backward (the
entry's rules); each recorded op notes the bytes its entry added to what the tapes hold (an array that an earlier
entry already keeps is not counted again) and, at a replay that frees it, the bytes it gave back. Each event
carries the line of your code that ran the op. An entry dropped without a replay (a tape released, the first
pass of a ``tg.checkpoint`` block) shows bytes saved that no replay frees; the counter of what the tapes hold is
counted again from the tapes after each ``backward()`` and when the block ends.

- ``prof.table(sort_by="wall", row_limit=20, group_by="op")``: a summary, one row per op (or per source line,
  ``group_by="source"``), as ``torch.profiler``'s ``key_averages().table()`` prints it;
- ``prof.key_averages(group_by=...)``: the same rows as objects (:class:`Row`);
- ``prof.events``: every event (:class:`Event`), in the order they began (once the block has ended);
- ``prof.export_chrome_trace(path)``: the Chrome trace event format (``chrome://tracing``, Perfetto,
  TensorBoard): one duration event per op and per replayed entry, and a counter of the bytes the tapes hold.

The profiler attaches through the core's extension interface: a probe the core calls around each op
(``tapegrad._state.PROBE``) and the replay's observer (:meth:`tapegrad.tape.Tape.observer`). Outside a
``profile()`` block an op pays the one attribute read it pays for tracing; inside, a few microseconds per op
(``python -m benchmarks.profiler_overhead``). Blocks in one context do not nest.

>>> import tapegrad as tg
>>> w = tg.Tensor([1.0, 2.0], requires_grad=True)
>>> with tg.profile() as prof:
...     with tg.record():
...         loss = (w * w).sum()
...     loss.backward()
>>> [(r.name, r.calls, r.backward_calls) for r in prof.key_averages()]
[('multiply', 1, 1), ('sum', 1, 1)]
>>> sum(r.saved for r in prof.key_averages()) == sum(r.freed for r in prof.key_averages()) == 16
True
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import weakref

import numpy as np

from ._state import ACTIVE, PROBE, TRACING
from ._tensor import Tensor
from .backend import is_array, nbytes
from .core.node import MASK, OP, SRCS, kept_values
from .core.record import saved_values
from .errors import fmt_bytes, user_frame

__all__ = ["profile", "Event", "Row", "profile_observer", "SORT_KEYS"]

_ndarray = np.ndarray
_wall = time.perf_counter_ns
_cpu = time.process_time_ns

# The columns table() can sort by: Row attribute, largest first (name: alphabetical).
SORT_KEYS = (
    "wall",
    "cpu",
    "forward_wall",
    "forward_cpu",
    "backward_wall",
    "backward_cpu",
    "saved",
    "freed",
    "calls",
    "name",
)


class Event:
    """One timed op (``phase="forward"``) or one replayed entry (``phase="backward"``).

    ``start``: ns since the profile began (wall clock); ``wall``, ``cpu``: ns; ``saved``: bytes the entry added to
    the tapes (forward), ``freed``: bytes its replay gave back (backward); ``source``: ``(file, line, function)``
    of your code, or None; ``shapes``: the inputs' shapes (forward); ``tid``: the thread.
    """

    __slots__ = ("phase", "name", "source", "start", "wall", "cpu", "saved", "freed", "shapes", "tid")

    def __init__(self, phase, name, source, start, wall, cpu, saved=0, freed=0, shapes=(), tid=0):
        self.phase, self.name, self.source, self.start, self.wall, self.cpu = phase, name, source, start, wall, cpu
        self.saved, self.freed, self.shapes, self.tid = saved, freed, shapes, tid

    def __repr__(self) -> str:
        return f"<{self.phase} {self.name} {self.wall / 1e3:.1f}us>"


class Row:
    """One row of :meth:`profile.key_averages`: the events of one op (or one source line) summed.

    Times in ns: ``forward_wall``, ``forward_cpu``, ``backward_wall``, ``backward_cpu``; ``wall`` and ``cpu``
    are forward plus backward. ``calls``/``backward_calls``: how many; ``saved``/``freed``: bytes;
    ``ops``: the op names (a source row), ``sources``: the lines (an op row).
    """

    __slots__ = (
        "name",
        "calls",
        "backward_calls",
        "forward_wall",
        "forward_cpu",
        "backward_wall",
        "backward_cpu",
        "saved",
        "freed",
        "ops",
        "sources",
    )

    def __init__(self, name):
        self.name = name
        self.calls = self.backward_calls = 0
        self.forward_wall = self.forward_cpu = self.backward_wall = self.backward_cpu = 0
        self.saved = self.freed = 0
        self.ops: dict = {}
        self.sources: dict = {}

    wall = property(lambda self: self.forward_wall + self.backward_wall)
    cpu = property(lambda self: self.forward_cpu + self.backward_cpu)

    def add(self, ev: Event) -> None:
        if ev.phase == "forward":
            self.calls += 1
            self.forward_wall += ev.wall
            self.forward_cpu += ev.cpu
        else:
            self.backward_calls += 1
            self.backward_wall += ev.wall
            self.backward_cpu += ev.cpu
        self.saved += ev.saved
        self.freed += ev.freed
        self.ops[ev.name] = None
        self.sources[_where(ev.source)] = None

    def __repr__(self) -> str:
        return f"<Row {self.name}: {self.calls} calls, {self.wall / 1e3:.1f}us>"


def _where(source) -> str:
    return "?" if source is None else f"{os.path.basename(source[0])}:{source[1]}"


def _source(frame):
    """``(file, line, function)`` of the first frame of your code outward from ``frame``."""
    user = user_frame(frame)
    return None if user is None else (user.f_code.co_filename, user.f_lineno, user.f_code.co_name)


class _Held:
    """The arrays the recorded entries keep, each counted once: ``id -> [weak reference, bytes, entries]``."""

    __slots__ = ("arrays", "total")

    def __init__(self):
        self.arrays: dict = {}
        self.total = 0

    def keep(self, a) -> int:
        """One more entry keeps ``a``: the bytes that adds (0 when an entry already keeps it)."""
        key = id(a)
        slot = self.arrays.get(key)
        if slot is not None and (slot[0] is None or slot[0]() is a):
            slot[2] += 1
            return 0
        try:
            ref = weakref.ref(a)
        except TypeError:  # an array type without weak references: matched by id alone
            ref = None
        n = nbytes(a)
        if slot is not None:  # a dead array's id, reused
            self.total -= slot[1]
        self.arrays[key] = [ref, n, 1]
        self.total += n
        return n

    def drop(self, a) -> int:
        """One entry fewer keeps ``a``: the bytes that frees (0 while another entry keeps it)."""
        slot = self.arrays.get(id(a))
        if slot is None or (slot[0] is not None and slot[0]() is not a):
            return 0
        slot[2] -= 1
        if slot[2] > 0:
            return 0
        del self.arrays[id(a)]
        self.total -= slot[1]
        return slot[1]


def _arrays(values):
    """The distinct arrays among ``values`` (an entry's saved values and output, or outputs: a tuple)."""
    seen = {}
    for v in values:
        for a in v if v.__class__ is tuple else (v,):
            if a is not None and (a.__class__ is _ndarray or is_array(a)):
                seen[id(a)] = a
    return seen.values()


def _recorded(g) -> bool:
    """Whether a replay's cotangent (or an op's tuple of them) is a tensor: a recorded replay, which frees nothing."""
    return isinstance(g, Tensor) or (g.__class__ is tuple and any(isinstance(x, Tensor) for x in g))


class profile:
    """Profile every op this context runs in the block, forward and backward: see the module docstring.

    >>> import tapegrad as tg
    >>> x = tg.Tensor([0.5, 1.0], requires_grad=True)
    >>> with tg.profile() as prof:
    ...     with tg.record():
    ...         y = tg.tanh(x).sum()
    ...     y.backward()
    >>> print(prof.table(row_limit=1).splitlines()[1].split()[:2])
    ['Name', 'Calls']
    """

    def __init__(self):
        self.events: list[Event] = []
        self.counters: list[tuple[int, int]] = []  # (ns since the start, bytes the tapes hold)
        self._stack: list = []
        self._held = _Held()
        self._tapes: dict = {}  # id -> weak reference: the tapes that recorded the ops profiled here
        self._node_sources = weakref.WeakKeyDictionary()  # a recorded output's node -> the line that made it
        self._last_top = None  # a weak reference to the innermost tape of the last recorded op
        # Per replay running (replays nest: a checkpoint's rule replays its block), the entry whose rules run:
        # id(observer) -> (name, source, freed, times)
        self._open: dict = {}
        self._token = None
        self._t0 = 0
        self.wall = self.cpu = 0  # the block's own wall and CPU time, ns

    # -- the block ---------------------------------------------------------------------------------------
    def __enter__(self):
        if PROBE.get() is not None:
            raise RuntimeError(
                "profile(): a profile is already running in this context; profile blocks do not nest. "
                "Use the outer profile's figures (prof.table(group_by='source') splits them by line)"
            )
        if self._token is not None or self._t0:
            raise RuntimeError("profile(): this profile was already used; make a new one with tg.profile()")
        self._t0 = _wall()
        self._cpu0 = _cpu()
        self._token = PROBE.set(self)
        TRACING.add(1)
        return self

    def __exit__(self, *exc):
        TRACING.add(-1)
        PROBE.reset(self._token)
        self.wall, self.cpu = _wall() - self._t0, _cpu() - self._cpu0
        self._flush()
        self._recount()
        self.events.sort(key=lambda ev: ev.start)  # a replay's event is complete after it began
        self._stack = []
        self._tapes = {}
        self._last_top = None

    # -- the probe: what the core calls around each op --------------------------------------------------
    def start(self, op) -> None:
        self._stack.append((op, _wall(), _cpu()))

    def stop(self, op, datas, params, out) -> None:
        cpu, wall = _cpu(), _wall()
        stack = self._stack
        while stack and stack[-1][0] is not op:  # an op that raised before it reached stop()
            stack.pop()
        if not stack:
            return
        _, w0, c0 = stack.pop()
        source = _source(sys._getframe(2))
        several = out.__class__ is tuple  # an op with several outputs: one entry, keyed by their group
        node = out[0]._node if several else out._node
        saved = 0
        if node is not None:
            saved = self._saved(op, datas, [t._data for t in out] if several else [out._data])
            self._node_sources[node.group if several else node] = source
        shapes = tuple(tuple(getattr(d, "shape", ())) for d in datas)
        self.events.append(
            Event(
                "forward", op.name, source, w0 - self._t0, wall - w0, cpu - c0, saved, 0, shapes, threading.get_ident()
            )
        )
        if saved:
            self.counters.append((wall - self._t0, self._held.total))

    def _saved(self, op, datas, outs) -> int:
        active = ACTIVE.get()
        last = self._last_top
        if last is None or last() is not active[-1]:  # weakly: a profile keeps no tape alive
            self._last_top = weakref.ref(active[-1])
            for t in active:
                ref = self._tapes.get(id(t))
                if ref is None or ref() is not t:  # new, or a dead tape's id reused
                    self._tapes[id(t)] = weakref.ref(t)
        values = saved_values(op, datas)
        if op.save_ans:
            values = (*values, *outs)
        return sum(self._held.keep(a) for a in _arrays(values))

    # -- the replay ------------------------------------------------------------------------------------------
    def _pending(self, replay, rec, node, frees, times) -> None:
        """The replay ``replay`` (its observer) reached an entry, whose rules run next: the bytes its replay
        frees now; its backward event once its rules ran (``times`` then holds their end)."""
        self._flush(replay)
        freed = sum(self._held.drop(a) for a in _arrays(kept_values(rec))) if frees else 0
        self._open[id(replay)] = (rec[OP].name, self._node_sources.get(node), freed, times)

    def _flush(self, replay=None) -> None:
        """The backward event of the entry that ``replay`` (every replay: None) reached last, if any."""
        for key in [id(replay)] if replay is not None else list(self._open):
            entry = self._open.pop(key, None)
            if entry is None:
                continue
            name, source, freed, (w0, c0, w1, c1) = entry
            if not w1:  # no rule ran (none of its inputs needed a gradient)
                w1 = w0
            if not c1:
                c1 = c0
            self.events.append(
                Event("backward", name, source, w0 - self._t0, w1 - w0, c1 - c0, 0, freed, (), threading.get_ident())
            )
            if freed:
                self.counters.append((w1 - self._t0, self._held.total))

    def _recount(self) -> None:
        """Count again what the tapes this profile saw still hold (after a replay, which frees entries it does
        not report: those no cotangent reached)."""
        before = self._held.total
        held = _Held()
        for key, ref in list(self._tapes.items()):
            tape = ref()
            if tape is None or tape.state != "recording":
                del self._tapes[key]
                continue
            for _, entry in tape.live_entries():
                rec = entry.rec
                for a in _arrays(kept_values(rec)):
                    held.keep(a)
        self._held = held
        if held.total != before:
            self.counters.append((_wall() - self._t0, held.total))

    # -- reading ---------------------------------------------------------------------------------------------
    def key_averages(self, group_by: str = "op") -> list[Row]:
        """The events summed per op (``group_by="op"``) or per line of your code (``"source"``), in the order
        they first ran."""
        if group_by not in ("op", "source"):
            raise ValueError(f"profile.key_averages(): group_by must be 'op' or 'source', got {group_by!r}")
        self._flush()
        rows: dict = {}
        for ev in self.events:
            key = ev.name if group_by == "op" else _where(ev.source)
            row = rows.get(key)
            if row is None:
                row = rows[key] = Row(key)
            row.add(ev)
        return list(rows.values())

    def table(self, sort_by: str = "wall", row_limit: int = 20, group_by: str = "op") -> str:
        """A summary, one row per op or source line, largest ``sort_by`` first (one of :data:`SORT_KEYS`),
        at most ``row_limit`` rows (all of them: ``row_limit=-1``)."""
        if sort_by not in SORT_KEYS:
            raise ValueError(f"profile.table(): sort_by must be one of {', '.join(SORT_KEYS)}; got {sort_by!r}")
        rows = self.key_averages(group_by)
        rows.sort(key=(lambda r: r.name) if sort_by == "name" else (lambda r: -getattr(r, sort_by)))
        return _format(rows if row_limit is None or row_limit < 0 else rows[:row_limit], rows, group_by)

    def export_chrome_trace(self, path) -> None:
        """Write the events as the Chrome trace event format (JSON): a duration event (``"ph": "X"``) per op
        and per replayed entry, a counter event (``"ph": "C"``) of the bytes the tapes hold at each change.
        Open it in ``chrome://tracing`` or https://ui.perfetto.dev."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.chrome_trace(), f)

    def chrome_trace(self) -> dict:
        """What :meth:`export_chrome_trace` writes, as a dict."""
        pid = os.getpid()
        events = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "tapegrad"}}]
        for ev in self.events:
            args = {"source": _where(ev.source), "cpu_us": ev.cpu / 1e3}
            if ev.phase == "forward":
                args["input_shapes"] = [list(s) for s in ev.shapes]
                args["saved_bytes"] = ev.saved
            else:
                args["freed_bytes"] = ev.freed
            events.append(
                {
                    "name": ev.name,
                    "cat": ev.phase,
                    "ph": "X",
                    "ts": ev.start / 1e3,
                    "dur": ev.wall / 1e3,
                    "pid": pid,
                    "tid": ev.tid,
                    "args": args,
                }
            )
        for ts, held in self.counters:
            events.append({"name": "tape", "ph": "C", "ts": ts / 1e3, "pid": pid, "tid": 0, "args": {"bytes": held}})
        return {"traceEvents": events, "displayTimeUnit": "ms"}

    def __repr__(self) -> str:
        return f"<profile: {len(self.events)} events>"


def _format(rows, every, group_by) -> str:
    """The table of ``rows`` (percentages of the totals over ``every`` row), as torch.profiler prints one."""
    total = sum(r.wall for r in every) or 1
    head = [
        "Name" if group_by == "op" else "Source",
        "Calls",
        "Fwd CPU",
        "Fwd wall",
        "Bwd calls",
        "Bwd CPU",
        "Bwd wall",
        "Wall %",
        "Saved",
        "Freed",
        "Source" if group_by == "op" else "Ops",
    ]
    body = []
    for r in rows:
        where = list(r.sources if group_by == "op" else r.ops)
        body.append(
            [
                r.name,
                str(r.calls),
                _ms(r.forward_cpu),
                _ms(r.forward_wall),
                str(r.backward_calls),
                _ms(r.backward_cpu),
                _ms(r.backward_wall),
                f"{100 * r.wall / total:.1f}%",
                fmt_bytes(r.saved),
                fmt_bytes(r.freed),
                ", ".join(where[:2]) + (f" (+{len(where) - 2})" if len(where) > 2 else ""),
            ]
        )
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    rule = "  ".join("-" * w for w in widths)

    def line(cells):
        return "  ".join(
            c.ljust(w) if i in (0, len(cells) - 1) else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ).rstrip()

    fwd, fwd_cpu = sum(r.forward_wall for r in every), sum(r.forward_cpu for r in every)
    bwd, bwd_cpu = sum(r.backward_wall for r in every), sum(r.backward_cpu for r in every)
    return "\n".join(
        [
            rule,
            line(head),
            rule,
            *(line(b) for b in body),
            rule,
            f"Forward: CPU {_ms(fwd_cpu)}, wall {_ms(fwd)}; backward: CPU {_ms(bwd_cpu)}, wall {_ms(bwd)}; "
            f"saved {fmt_bytes(sum(r.saved for r in every))}, freed {fmt_bytes(sum(r.freed for r in every))}",
        ]
    )


def _ms(ns: int) -> str:
    """A duration as torch.profiler writes one: us below a millisecond, ms below a second, else s."""
    if ns < 1_000_000:
        return f"{ns / 1e3:.3f}us"
    if ns < 1_000_000_000:
        return f"{ns / 1e6:.3f}ms"
    return f"{ns / 1e9:.3f}s"


class _TimedOp:
    """What the replay loop reads of an op (``name``, ``vjps``, ``joint``), with rules that are timed."""

    __slots__ = ("name", "vjps", "joint")


class _Observer:
    """The replay's observer while a profile runs: times each entry's rules and reports them to the profile."""

    def __init__(self, prof, tape):
        self.prof = prof
        self.persistent = tape.persistent

    def __call__(self, idx, rec, node, g, grads):
        op, mask = rec[OP], rec[MASK]
        prof = self.prof
        # A plain replay of a tape not kept frees the entry; a recorded one (tensor cotangents) keeps it.
        frees = not self.persistent and not _recorded(g)
        start = [_wall(), _cpu(), 0, 0]  # wall, CPU at the first rule; at the end of the last one

        def timed(rule, last):
            # The CPU clock is a system call (about 1.5 us): read once per entry, after its last rule.
            def run(*args, **params):
                try:
                    return rule(*args, **params)
                finally:
                    start[2] = _wall()
                    if last:
                        start[3] = _cpu()

            return run

        timed_op = _TimedOp()
        timed_op.name, timed_op.joint = op.name, op.joint
        if op.joint:
            timed_op.vjps = [timed(op.vjps[0], True)]
        else:
            rules = op.vjps  # indexed per input (a variadic op's rules repeat without end)
            last = mask.bit_length() - 1
            timed_op.vjps = [timed(rules[i], i == last) if (mask >> i) & 1 else None for i in range(len(rec[SRCS]))]
        prof._pending(self, rec, node, frees, start)
        return timed_op

    def done(self) -> None:
        self.prof._flush(self)
        self.prof._recount()


def profile_observer(tape):
    """The replay observer of the profile running in this context, or None (what :class:`~tapegrad.tape.Tape`
    adds to its observers)."""
    prof = PROBE.get()
    return _Observer(prof, tape) if isinstance(prof, profile) else None
