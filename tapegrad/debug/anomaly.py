"""NaN provenance: which op, forward or backward, on which line of the user's code, made a NaN or infinity.

- ``tg.record(track_source=True)`` keeps, per entry, the file and line of the user's code that called the op
  and the output's shape and dtype (in ``entry.info``), through one of the tape's monitors: a plain tape
  pays nothing for it.
- ``tg.record(detect_anomaly=True)``, or any tape recorded or replayed inside ``with detect_anomaly():``,
  also checks each op's output as it is recorded and each gradient as the replay computes it, and raises
  :class:`AnomalyError` at the first value that is not finite, naming the op, the phase, the entry index (as
  ``print(t)`` numbers it) and the line.
- ``t.find_nonfinite()`` looks after the fact at what a tape saved (e.g. a persistent tape).

The ``where`` trap: ``where(x > 0, sqrt(x), 0)`` at ``x = 0`` has a finite value but a NaN gradient, because
the rule of ``sqrt`` runs on every element (``0 * inf``) before ``where`` masks it. Guard the input of the
unselected branch as well (the double ``where``)::

    safe = tg.where(x > 0, x, 1.0)          # any value where sqrt is smooth
    y = tg.where(x > 0, tg.sqrt(safe), 0.0)  # gradient 0 at x = 0, no NaN
"""

from __future__ import annotations

import linecache
import os
import sys
from contextvars import ContextVar

import numpy as np

from .._state import ACTIVE
from .._tensor import Tensor
from ..backend import all_finite, is_array, is_floating, to_numpy
from ..core.node import ANS, OP, SAVED, SRCS, Node, answers, entry_key
from ..errors import AnomalyError, user_frame
from .reading import _call, analyse

__all__ = [
    "AnomalyError",
    "detect_anomaly",
    "find_nonfinite",
    "Nonfinite",
    "instrument",
    "anomaly_enabled",
    "Info",
    "info_of",
]

ANOMALY: ContextVar[bool] = ContextVar("tapegrad_anomaly", default=False)  # inside detect_anomaly()


class Info:
    """What a tool noted about an entry beyond its record (``entry.info``): the user's file and line and its
    output's shape and dtype (source tracking), checksums of its saved arrays (``check_saved``)."""

    __slots__ = ("file", "line", "func", "shape", "dtype", "checksums")

    def __init__(self):
        self.file = self.func = self.shape = self.dtype = self.checksums = None
        self.line = 0


def info_of(entry) -> Info:
    """The entry's :class:`Info`, made on first use."""
    info = getattr(entry, "info", None)
    if info is None:
        info = entry.info = Info()
    return info

    def __repr__(self) -> str:
        return f"Info({os.path.basename(self.file)}:{self.line}, {self.shape}, {self.dtype})"


class SourceTracker:
    """The monitor of a tracked tape: it keeps each entry's source line, shape and dtype (``entry.info``) and,
    when ``anomaly`` is set (or inside :class:`detect_anomaly`), refuses an op whose output is not finite."""

    __slots__ = ("anomaly",)

    def __init__(self, anomaly: bool = False):
        self.anomaly = anomaly

    def __call__(self, tape, entry, out):
        f = user_frame(sys._getframe(1))
        info = info_of(entry)
        info.file, info.line, info.func = (f.f_code.co_filename, f.f_lineno, f.f_code.co_name) if f else ("?", 0, "?")
        if out.__class__ is tuple:  # an op with several outputs: each one's shape and dtype
            info.shape, info.dtype = tuple(tuple(o._data.shape) for o in out), tuple(o._data.dtype for o in out)
            data = next((o._data for o in out if is_floating(o._data) and not all_finite(o._data)), None)
        else:
            data = out._data
            info.shape, info.dtype = tuple(data.shape), data.dtype
        if (self.anomaly or ANOMALY.get()) and data is not None and is_floating(data) and not all_finite(data):
            index = len(tape) - 1
            op = entry.rec[OP].name
            raise AnomalyError(
                f"forward: {op} (entry {index} of the tape) produced {_what(data)} at {_at(info)}. "
                f"Check its inputs: e.g. log or sqrt of a negative number, a division by zero, exp overflowing",
                op,
                "forward",
                index,
                info.file,
                info.line,
            )


def _tracker(tape):
    return next((m for m in tape.monitors if isinstance(m, SourceTracker)), None)


def instrument(tape, anomaly: bool = False) -> None:
    """Make ``tape`` keep source lines and shapes, and with ``anomaly`` check every value (see ``record()``)."""
    tracker = _tracker(tape)
    if tracker is None:
        tape.add_monitor(SourceTracker(anomaly))
    elif anomaly:
        tracker.anomaly = True


def anomaly_enabled(tape) -> bool:
    """Whether a replay of ``tape`` checks its gradients: it was recorded with ``detect_anomaly=True``, or the
    replay runs inside :class:`detect_anomaly`."""
    if ANOMALY.get():
        return True
    tracker = _tracker(tape)
    return tracker is not None and tracker.anomaly


def _what(data) -> str:
    d = data if isinstance(data, np.ndarray) else to_numpy(data)
    nan = np.isnan(d).any()
    inf = np.isinf(d).any()
    return " and ".join(w for w, on in (("NaN", nan), ("infinity", inf)) if on) or "a non-finite value"


def _at(info) -> str:
    if info is None or info.file is None:
        return "an unknown line (record with track_source=True or detect_anomaly=True to know it)"
    code = linecache.getline(info.file, info.line).strip()
    return f"{info.file}:{info.line} in {info.func}()" + (f": `{code}`" if code else "")


def gradient_error(op, index, arg, info, g, target=None) -> AnomalyError:
    """The error for a gradient that is not finite, computed by ``op``'s rule for its input ``arg``."""
    where_hint = (
        " If a where() selects away this op's output there, its NaN gradient still flows: guard the input of "
        "the branch not taken too (the double where, see tapegrad.debug.anomaly)."
    )
    what = f"the gradient of {op} (entry {index}) with respect to {arg}" if target is None else target
    return AnomalyError(
        f"backward: {what} is {_what(g._data if isinstance(g, Tensor) else g)}; the op was called at {_at(info)}."
        f"{where_hint}",
        op,
        "backward",
        index,
        getattr(info, "file", None),
        getattr(info, "line", None),
    )


def finite(g) -> bool:
    """Whether a value (array or tensor) holds no NaN and no infinity."""
    d = g._data if isinstance(g, Tensor) else g
    return d is None or not hasattr(d, "dtype") or all_finite(d)


class detect_anomaly:
    """Check every recorded value and every gradient on this thread while the block is active.

    Tapes recorded inside the block behave as ``record(detect_anomaly=True)``; tapes already recording start
    checking the ops recorded from now on; every replay inside the block checks its gradients.

    >>> import numpy as np, tapegrad as tg
    >>> x = tg.Tensor([-1.0], requires_grad=True)
    >>> with np.errstate(invalid="ignore"), tg.detect_anomaly(), tg.record():
    ...     y = tg.log(x)
    Traceback (most recent call last):
    ...
    tapegrad.errors.AnomalyError: forward: log (entry 0 of the tape) produced NaN at ...
    """

    def __enter__(self):
        self._token = ANOMALY.set(True)
        for t in ACTIVE.get():
            instrument(t)  # the ops recorded from now on keep their lines, for the error to name them
        return self

    def __exit__(self, *exc):
        ANOMALY.reset(self._token)


class Nonfinite(tuple):
    """One finding of :func:`find_nonfinite`: ``(index, call, array, source)``."""

    __slots__ = ()

    def __new__(cls, index, call, array, source):
        return super().__new__(cls, (index, call, array, source))

    index = property(lambda self: self[0])
    call = property(lambda self: self[1])
    array = property(lambda self: self[2])
    source = property(lambda self: self[3])


def find_nonfinite(tape) -> list:
    """The entries of ``tape`` whose values hold NaN or infinity, as far as the tape kept them, earliest first.

    A value counts for the entry that produced it: an input saved by a later entry is traced to its producer.
    Only saved values can be inspected; ``detect_anomaly=True`` checks every value as it is made.

    >>> import numpy as np, tapegrad as tg
    >>> x = tg.Tensor([4.0, -1.0], requires_grad=True, name="x")
    >>> with np.errstate(invalid="ignore"), tg.record(persistent=True) as t:
    ...     y = (tg.sqrt(x) * 2).sum()
    >>> [(f.index, f.call) for f in t.find_nonfinite()]
    [(0, 't0 = sqrt(x)')]
    """
    rows = analyse(tape)
    by_node = {r.entry(): r for r in rows if r.entry() is not None}
    found = {}
    for r in rows:
        srcs = r.rec[SRCS]
        for i, v in enumerate(r.rec[SAVED]):
            if is_array(v) and not finite(v):
                producer = by_node.get(entry_key(srcs[i])) if srcs[i].__class__ is Node else None
                key = producer or r
                found.setdefault(key.index, (key, r.args[i] if producer is None else key.name))
        if any(not finite(a) for a in answers(r.rec[ANS])):
            found.setdefault(r.index, (r, r.name))
    return [Nonfinite(i, _call(row), array, row.where or None) for i, (row, array) in sorted(found.items())]
