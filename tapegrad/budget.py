"""Memory budgets for tapes: ``record(max_saved_bytes=...)`` refuses to grow past a limit.

A tape knows exactly what it keeps for backward (the arrays each op's rule declared in ``save=``), so it can
stop at the op that would cross a budget instead of growing until the process dies. The budget is a
monitor (``tape.add_monitor``), attached only to tapes given one: plain recording pays nothing.

Contract
--------
- The check runs after each recorded entry. The monitor raises :class:`~tapegrad.errors.TapeBudgetError` for
  the entry that makes the tape keep more than ``max_saved_bytes``; the core then takes that entry off every
  active tape that recorded it, so the tape is exactly as it was before that op: it can still be replayed
  (``backward`` on an earlier result) or released.
- Bytes are counted as ``Tape.saved_bytes`` counts them: each saved array once, whoever saved it, entries
  already dropped (replayed, or dead because their output became unreachable) not at all, in every backend.
- Cost: a running upper bound grows by each new entry's arrays; only when it would cross the budget is the
  exact figure recomputed (one pass over the live entries), so checking is O(1) per op until the tape is
  near its budget.
"""

from __future__ import annotations

import numpy as np

from .backend import is_array, nbytes
from .core.node import OP, kept_values
from .errors import TapeBudgetError

__all__ = ["TapeBudgetError", "install_budget"]


def _entry_bytes(rec) -> int:
    return sum(nbytes(a) for a in kept_values(rec) if is_array(a))


class Budget:
    """The monitor: a running upper bound on the saved bytes, made exact when it would cross the budget."""

    __slots__ = ("limit", "bound")

    def __init__(self, limit: int):
        self.limit = limit
        self.bound = 0

    def __call__(self, tape, entry, out) -> None:
        rec = entry.rec
        if rec is None:
            return
        self.bound += _entry_bytes(rec)
        if self.bound <= self.limit:
            return
        total = tape.saved_bytes()  # exact: each array once, dead entries not counted
        self.bound = total
        if total <= self.limit:
            return
        before = tape.saved_bytes(excluding=entry)
        self.bound = before
        raise _error(tape, entry, self.limit, before, total - before)


def _error(tape, entry, limit, saved, op_bytes) -> TapeBudgetError:
    op = entry.rec[OP].name
    sizes = sorted(((e.op, _entry_bytes(e.rec)) for e in tape.entries if e.entry is not entry), key=lambda x: -x[1])
    largest = sizes[:5]
    shown = ", ".join(f"{name} {n:,} B" for name, n in largest) or "none"
    message = (
        f"{op}: recording it would make the tape keep {saved + op_bytes:,} bytes for backward, over its budget "
        f"of {limit:,} (max_saved_bytes). The tape has {len(sizes)} entries keeping {saved:,} bytes; "
        f"largest: {shown}. Call backward() on a smaller piece, wrap blocks in tapegrad.checkpoint to "
        "recompute them during backward, compute what needs no gradient under tg.stop_recording(), "
        "or raise the budget"
    )
    return TapeBudgetError(
        message, op=op, budget=limit, saved_bytes=saved, op_bytes=op_bytes, entries=len(sizes), largest=largest
    )


def install_budget(tape, max_saved_bytes: int) -> None:
    """Make ``tape`` refuse any op that would take its saved bytes past ``max_saved_bytes`` (see the module)."""
    if not isinstance(max_saved_bytes, (int, np.integer)) or isinstance(max_saved_bytes, bool) or max_saved_bytes < 0:
        raise ValueError(f"record(): max_saved_bytes must be a non-negative int, got {max_saved_bytes!r}")
    tape.add_monitor(Budget(int(max_saved_bytes)))
