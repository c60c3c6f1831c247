"""Seeing the tape: what it recorded, what it keeps, where a NaN came from, and what leaks.

- ``print(t)``: the tape as numbered SSA lines (:func:`format_tape`); ``t.memory_report()`` and ``t.stats()``:
  what each entry keeps for backward (:mod:`tapegrad.debug.reading`, :mod:`tapegrad.debug.memory`).
- ``loss.backward(trace=True)``: the replay as adjoint updates (:mod:`tapegrad.debug.trace`).
- ``record(detect_anomaly=True)``, :class:`detect_anomaly`, ``t.find_nonfinite()``: NaN provenance
  (:mod:`tapegrad.debug.anomaly`).
- ``record(check_saved=True)``: checksums of saved arrays, against writes tapegrad cannot see
  (:mod:`tapegrad.debug.checksums`).
- :class:`TapeLeakWarning`, :class:`TapeEscapeWarning`, :func:`live_tapes`: leak sentinels
  (:mod:`tapegrad.debug.sentinels`). Drawing is in :mod:`tapegrad.viz`.

>>> import tapegrad as tg
>>> x = tg.Tensor([1.0, 2.0], requires_grad=True, name="x")
>>> with tg.record() as t:
...     y = tg.exp(x).sum()
>>> print(str(t).splitlines()[1])
  0  t0 = exp(x)  (2,) -> (2,)  saved: t0 (16 B)
"""

from .anomaly import (
    AnomalyError,
    Nonfinite,
    SourceTracker,
    anomaly_enabled,
    detect_anomaly,
    find_nonfinite,
    instrument,
)
from .checksums import ChecksumObserver, SavedChecksums, checking_saved
from .memory import memory_report, stats
from .reading import format_tape
from .sentinels import LiveTape, TapeEscapeWarning, TapeLeakWarning, dropped_unreplayed, live_tapes, set_leak_threshold
from .trace import replay_observer

__all__ = [
    "format_tape",
    "memory_report",
    "stats",
    "AnomalyError",
    "detect_anomaly",
    "anomaly_enabled",
    "find_nonfinite",
    "Nonfinite",
    "instrument",
    "SourceTracker",
    "replay_observer",
    "SavedChecksums",
    "ChecksumObserver",
    "checking_saved",
    "dropped_unreplayed",
    "TapeLeakWarning",
    "TapeEscapeWarning",
    "live_tapes",
    "LiveTape",
    "set_leak_threshold",
]
