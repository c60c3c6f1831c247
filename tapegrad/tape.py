"""Tapes as users meet them: :func:`record` (``tg.record``), :class:`Tape` and its readable views.

The life cycle and the contract of a tape are in :mod:`tapegrad.core.tape`; this module puts the tools on top
of it through the core's extension interface: budgets and source tracking as monitors, tracing and anomaly
checks as the replay's observer, the printed and drawn views, the dropped-tape warning.

``tg.record`` is the canonical spelling; ``tapegrad.tape.record`` is the same function.
"""

from __future__ import annotations

import sys

from ._state import PROBE, current, is_recording
from .budget import install_budget
from .core import BaseTape, stop_recording
from .core.node import OP
from .debug import (
    ChecksumObserver,
    SavedChecksums,
    anomaly_enabled,
    checking_saved,
    dropped_unreplayed,
    find_nonfinite,
    format_tape,
    instrument,
    memory_report,
    replay_observer,
    stats,
)
from .debug.anomaly import ANOMALY
from .errors import InPlaceModificationError, TapeError
from .profiler import profile_observer
from .viz import tape_html, tape_svg, to_dot

__all__ = [
    "Tape",
    "record",
    "stop_recording",
    "current",
    "is_recording",
    "TapeError",
    "InPlaceModificationError",
]


class Tape(BaseTape):
    """A Wengert list of recorded ops, with its readable views. Make one with :func:`record`.

    >>> import tapegrad as tg
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> with tg.record() as t:
    ...     y = (x * x).sum()
    >>> len(t)
    2
    >>> y.backward(); x.grad
    array([2., 4.])
    >>> len(t)   # replayed and released
    0
    """

    def __init__(self, persistent: bool = False, max_saved_bytes: int | None = None):
        super().__init__(persistent)
        self._replay_observers: list = []  # factories tools add (add_replay_observer): tape -> observer
        if max_saved_bytes is not None:
            install_budget(self, max_saved_bytes)

    # The readable views live in tapegrad.debug and tapegrad.viz.
    def __str__(self) -> str:
        return format_tape(self)

    def memory_report(self) -> str:
        """Per entry: op, source line, output shape and dtype, saved arrays and bytes; then totals (tapegrad.debug)."""
        return memory_report(self)

    def stats(self) -> dict:
        """The figures of :meth:`memory_report` as a dict."""
        return stats(self)

    def to_dot(self) -> str:
        """Graphviz DOT source drawing this tape (tapegrad.viz)."""
        return to_dot(self)

    def _repr_html_(self) -> str:
        return tape_html(self)

    def _repr_svg_(self) -> str:
        return tape_svg(self)

    def find_nonfinite(self) -> list:
        """The entries whose saved values hold NaN or infinity, earliest first (tapegrad.debug)."""
        return find_nonfinite(self)

    # The extension interface: tracing and anomaly checks observe the replay; a forgotten backward warns.
    def add_replay_observer(self, make) -> None:
        """Observe every later replay of this tape: ``make(tape)`` is called as a replay starts, for an object
        the replay calls per entry, ``observer(index, rec, node, g, grads)``, which returns the op ``rec[OP]``
        unchanged, and ``done()`` at the end (the tape explorer's capture), or None for a replay it does not
        observe (a tool that observes one replay only). It runs before tracing and anomaly checks, which may still
        wrap the rules.

        >>> import tapegrad as tg
        >>> class Seen:
        ...     def __init__(self): self.ops = []
        ...     def __call__(self, index, rec, node, g, grads):
        ...         self.ops.append(rec[0].name); return rec[0]
        ...     def done(self): pass
        >>> seen = Seen()
        >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
        >>> with tg.record() as t:
        ...     y = tg.exp(x).sum()
        >>> t.add_replay_observer(lambda tape: seen)
        >>> y.backward(); seen.ops
        ['sum', 'exp']
        """
        self._replay_observers.append(make)

    def observer(self, trace):
        # Checked once per replay: a plain replay never pays for them.
        if not (trace or self._replay_observers or self._monitors or ANOMALY.get() or PROBE.get() is not None):
            return None  # no tool attached: what every training step asks, in one test
        anomaly = anomaly_enabled(self)
        observers = [o for o in (make(self) for make in self._replay_observers) if o is not None]
        if checking_saved(self):
            observers.append(ChecksumObserver(self))
        profiling = profile_observer(self)
        if profiling is not None:  # before tracing: its rules wrap the timed ones, whose time is the rules' own
            observers.append(profiling)
        if trace or anomaly:
            observers.append(replay_observer(self, trace, anomaly))  # last: it wraps the rules the replay runs
        return observers[0] if len(observers) == 1 else (_Observers(observers) if observers else None)

    def on_drop(self) -> None:
        dropped_unreplayed(self)


class _Observers:
    """Several observers of one replay, in order; each sees the op the one before returned (so each may wrap
    the rules the one before wrapped), and the last one's op is the one the replay runs."""

    def __init__(self, observers):
        self.observers = observers

    def __call__(self, idx, rec, node, g, grads):
        for observer in self.observers:
            op = observer(idx, rec, node, g, grads)
            if op is not rec[OP]:
                rec = (op, *rec[OP + 1 :])
        return op

    def done(self) -> None:
        for observer in self.observers:
            observer.done()


def record(
    *,
    persistent: bool = False,
    detect_anomaly: bool = False,
    track_source: bool = False,
    max_saved_bytes: int | None = None,
    check_saved: bool = False,
) -> Tape:
    """Start recording on a new tape: ``with tg.record() as t: ...``.

    ``persistent=True`` keeps the tape for several replays until ``t.release()``. ``track_source=True`` keeps,
    per entry, the file and line that called the op and its output's shape and dtype (printing and memory
    reports show them); ``detect_anomaly=True`` also raises at the first NaN or infinity, forward or backward,
    naming the op and that line (see :mod:`tapegrad.debug`). ``max_saved_bytes`` caps what the tape may keep
    for backward: the op that would cross it raises :class:`~tapegrad.errors.TapeBudgetError` and is not
    recorded (see :mod:`tapegrad.budget`). ``check_saved=True`` (on with ``detect_anomaly`` too) keeps a checksum
    of every saved array and verifies it at replay, catching writes tapegrad cannot see, such as
    ``x.data[0] = 1`` (see :mod:`tapegrad.debug.checksums`).

    >>> import tapegrad as tg
    >>> w = tg.Tensor([1.0, -1.0], requires_grad=True)
    >>> with tg.record():
    ...     loss = (w * w).sum()
    >>> loss.backward(); w.grad
    array([ 2., -2.])
    """
    t = Tape(persistent=persistent, max_saved_bytes=max_saved_bytes)
    f = sys._getframe(1)
    t.site = (f.f_code.co_filename, f.f_lineno)
    anomaly = detect_anomaly or ANOMALY.get()
    if anomaly or track_source:
        instrument(t, anomaly=anomaly)
    if anomaly or check_saved:
        t.add_monitor(SavedChecksums())
    return t
