"""Leak sentinels: warnings for the patterns that keep memory or silently stop gradients.

- **A value carried over from an earlier tape** (``total_loss = total_loss + loss`` inside the block, a tensor
  from the previous step reused): the op is recorded on the current tape but the gradient never flows back
  into the earlier one. :class:`TapeLeakWarning`, once per call site; write ``loss.item()`` to keep a number,
  or ``x.detach()`` to use the value as a constant. The check on the recording path is one identity
  comparison per recorded input; everything else runs only on a mismatch.
- **A tape dropped without a replay** while it still held more than :func:`set_leak_threshold` bytes (64 MiB
  unless changed) of saved values, because its outputs were still alive: e.g. losses kept in a list with no
  ``backward()``, or a model's outputs recorded for evaluation and kept. Everything was held until the drop
  for nothing. :class:`TapeLeakWarning`, once per ``record()`` site. Persistent tapes are never reported; a
  tape whose outputs all died first holds nothing by then (its entries were freed as they died).
- **An escape**: ``np.asarray(x)`` or ``x.numpy()`` on a tensor being recorded, inside ``record()``, silently
  stops the gradient there. :class:`TapeEscapeWarning`, once per call site; ``x.data`` says it on purpose.
- :func:`live_tapes` lists the tapes still alive, with their sizes.
"""

from __future__ import annotations

import weakref
from typing import NamedTuple

from .._state import live_tapes as _live_tapes
from ..errors import TapeEscapeWarning, TapeLeakWarning, fmt_bytes, warn_once

__all__ = [
    "TapeLeakWarning",
    "TapeEscapeWarning",
    "live_tapes",
    "set_leak_threshold",
    "LiveTape",
    "dropped_unreplayed",
]

_threshold = 64 * 2**20


def set_leak_threshold(nbytes: int | None) -> int | None:
    """Warn when a tape dropped unreplayed held more than ``nbytes`` (None: never); returns the previous value.

    >>> from tapegrad.debug import set_leak_threshold
    >>> old = set_leak_threshold(1024); set_leak_threshold(old)
    1024
    """
    global _threshold
    old, _threshold = _threshold, nbytes
    return old


def dropped_unreplayed(tape) -> None:
    """A tape was collected holding entries it never replayed: warn at its ``record()`` line if it held much."""
    if _threshold is None or tape.site is None:
        return
    nbytes = tape.saved_bytes()
    if nbytes <= _threshold:
        return
    filename, lineno = tape.site
    warn_once(
        f"a tape recorded here was dropped without backward() or gradient() while it held {fmt_bytes(nbytes)} "
        "of saved values. Call backward() on the loss, or compute values you do not differentiate outside "
        "record() (or inside tg.stop_recording()); tapegrad.debug.set_leak_threshold() changes this limit",
        TapeLeakWarning,
        filename=filename,
        lineno=lineno,
    )


class LiveTape(NamedTuple):
    """One tape still alive: a weak reference to it, its state, live entries, saved bytes and record() site."""

    ref: weakref.ref
    state: str
    entries: int
    saved_bytes: int
    site: tuple | None


def live_tapes() -> list:
    """The tapes not yet collected, largest first (weak references: listing them keeps none alive).

    >>> import tapegrad as tg
    >>> from tapegrad.debug import live_tapes
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> with tg.record() as t:
    ...     y = (x * x).sum()
    >>> [(lt.entries, lt.saved_bytes) for lt in live_tapes() if lt.ref() is t]
    [(2, 16)]
    """
    tapes = list(_live_tapes)
    out = [LiveTape(weakref.ref(t), t.state, len(t), t.saved_bytes(), getattr(t, "site", None)) for t in tapes]
    return sorted(out, key=lambda lt: -lt.saved_bytes)
