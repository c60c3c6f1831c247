"""Catching writes tapegrad cannot see: ``record(check_saved=True)`` (also on with ``detect_anomaly=True``).

The version clock sees every in-place change made through tapegrad (``x.data -= ...``, ``x += y``, optimizer
steps), but not a write straight into an array's memory: ``x.data[0] = 1``, ``x.numpy()[1] = 0``,
``np.multiply(a, b, out=x.data)``. Such a write into a value the tape saved would make the replay compute a
wrong gradient. With ``check_saved=True`` a monitor notes a checksum (CRC-32) of every array an entry saves,
and the replay's observer recomputes it just before the entry's rule runs: a changed array raises
:class:`~tapegrad.errors.InPlaceModificationError` naming the op and the input. It costs a pass over every
saved array at record time and at replay, so it is opt-in.

>>> import numpy as np, tapegrad as tg
>>> w = tg.Tensor([1.0, 2.0], requires_grad=True)
>>> with tg.record(check_saved=True):
...     loss = (w * w).sum()
>>> w.data[0] = 5.0                      # a direct NumPy write: no version change
>>> try:
...     loss.backward()
... except tg.InPlaceModificationError as err:
...     print(str(err).split(",")[0])
multiply: input 0 (shape (2
"""

from __future__ import annotations

import zlib

import numpy as np

from ..backend import is_array, to_numpy
from ..core.node import OP, SAVED, kept_values
from ..errors import InPlaceModificationError
from .anomaly import info_of

__all__ = ["SavedChecksums", "ChecksumObserver", "checking_saved"]


def _checksum(a) -> int:
    data = a if a.__class__ is np.ndarray else to_numpy(a)
    return zlib.crc32(np.ascontiguousarray(data).view(np.uint8).reshape(-1))


def _sums(rec) -> tuple:
    values = kept_values(rec)
    return tuple(_checksum(v) if is_array(v) else None for v in values)


class SavedChecksums:
    """The monitor: the checksums of what each entry saved, kept on the entry (``entry.info.checksums``)."""

    __slots__ = ()

    def __call__(self, tape, entry, out) -> None:
        if entry.rec is not None:
            info_of(entry).checksums = _sums(entry.rec)


def checking_saved(tape) -> bool:
    """Whether ``tape`` checks its saved arrays at replay."""
    return any(isinstance(m, SavedChecksums) for m in tape.monitors)


class ChecksumObserver:
    """The replay's side: before an entry's rule runs, its saved arrays must still have their checksums."""

    def __init__(self, tape):
        self.entries = dict(tape.live_entries())

    def __call__(self, idx, rec, node, g, grads):
        entry = self.entries.get(idx)
        sums = getattr(getattr(entry, "info", None), "checksums", None)
        if sums is not None and _sums(rec) != sums:
            values = kept_values(rec)
            i = next(k for k, (now, then) in enumerate(zip(_sums(rec), sums)) if now != then)
            # kept_values: the saved inputs, then the outputs kept (none when the rules read only inputs)
            n_saved = len(rec[SAVED])
            what = (
                f"input {i}"
                if i < n_saved
                else ("its output" if len(values) == n_saved + 1 else f"output {i - n_saved}")
            )
            raise InPlaceModificationError(
                f"{rec[OP].name}: {what} (shape {tuple(values[i].shape)}), which the tape saved for backward, was "
                "changed after it was recorded by a write tapegrad could not see (x.data[i] = ..., "
                "x.numpy()[i] = ..., an out= argument): its checksum differs. Write through tapegrad, e.g. "
                "x.data = new_array, or only after backward()"
            )
        return rec[OP]

    def done(self) -> None:
        pass
