"""Memory budgets for tapes: ``record(max_saved_bytes=...)`` refuses to grow past a limit.

A tape knows exactly what it keeps for backward (the arrays each op's rule declared in ``save=``), so it can
stop at the op that would cross a budget instead of growing until the process dies. The budget is a
monitor (``Tape._monitors``), installed only on tapes given one: plain recording pays nothing.

Contract
--------
- The check runs after each recorded entry. The entry that makes the tape keep more than ``max_saved_bytes``
  is **removed** from every active tape that recorded it, then :class:`TapeBudgetError` is raised from the
  op. The tape is left exactly as it was before that op: it can still be replayed (``backward`` on an
  earlier result) or released.
- Bytes are counted as :meth:`Tape.saved_bytes` counts them: each saved array once, whoever saved it,
  entries already dropped (replayed, or dead because their output became unreachable) not at all.
- Cost: a running upper bound grows by each new entry's arrays; only when it would cross the budget is the
  exact figure recomputed (one pass over the live entries), so checking is O(1) per op until the tape is
  near its budget.
"""

from __future__ import annotations

import numpy as np

from .tape import TapeError, _state

__all__ = ["TapeBudgetError", "install_budget"]


class TapeBudgetError(TapeError):
    """Recording one more op would make the tape keep more than its ``max_saved_bytes``.

    Attributes: ``op`` (the op's name), ``budget``, ``saved_bytes`` (what the tape keeps without that op),
    ``op_bytes`` (what that op would have added), ``entries`` (live entries) and ``largest``
    (``(op name, bytes)`` of the biggest entries, largest first).

    >>> import numpy as np, tapegrad as tg
    >>> x = tg.Tensor(np.ones(1000), requires_grad=True)
    >>> with tg.record(max_saved_bytes=10_000) as t:
    ...     y = tg.exp(x)                # saves its output: 8,000 bytes
    ...     try:
    ...         z = tg.exp(y)            # 8,000 more would cross 10,000
    ...     except tg.TapeBudgetError as err:
    ...         print(err.op, err.saved_bytes, err.op_bytes, err.entries)
    exp 8000 8000 1
    >>> len(t)   # the op that crossed the budget was not recorded
    1
    """

    def __init__(self, message, *, op, budget, saved_bytes, op_bytes, entries, largest):
        super().__init__(message)
        self.op = op
        self.budget = budget
        self.saved_bytes = saved_bytes
        self.op_bytes = op_bytes
        self.entries = entries
        self.largest = largest


def _arrays(rec):
    return [a for a in (*rec[2], rec[3]) if isinstance(a, np.ndarray)]


class _Budget:
    """The monitor: a running upper bound on the saved bytes, made exact when it would cross the budget."""

    __slots__ = ("limit", "bound")

    def __init__(self, limit: int):
        self.limit = limit
        self.bound = 0

    def __call__(self, tape, entry, out) -> None:
        rec = entry.rec
        if rec is None:
            return
        self.bound += sum(a.nbytes for a in _arrays(rec))
        if self.bound <= self.limit:
            return
        total = tape.saved_bytes()  # exact: each array once, dead entries not counted
        self.bound = total
        if total <= self.limit:
            return
        _unrecord(entry)
        before = tape.saved_bytes()
        self.bound = before
        raise _error(tape, rec, self.limit, before, total - before)


def _unrecord(entry) -> None:
    """Remove the entry just recorded from every active tape that appended it (innermost tapes may not have)."""
    node = entry()
    for t in _state.active:
        entries = t._entries
        if entries and entries[-1]() is node and entries[-1].rec is entry.rec:
            entries.pop().rec = None
    entry.rec = None


def _error(tape, rec, limit, saved, op_bytes) -> TapeBudgetError:
    op = rec[0].name
    sizes = sorted(((r[0].name, sum(a.nbytes for a in _arrays(r))) for r in tape.entries), key=lambda x: -x[1])
    largest = sizes[:5]
    shown = ", ".join(f"{name} {nbytes:,} B" for name, nbytes in largest) or "none"
    message = (
        f"{op}: recording it would make the tape keep {saved + op_bytes:,} bytes for backward, over its budget "
        f"of {limit:,} (max_saved_bytes). The tape has {len(sizes)} entries keeping {saved:,} bytes; "
        f"largest: {shown}. Call backward() on a smaller piece, wrap blocks in tapegrad.checkpoint to "
        "recompute them during backward, compute what needs no gradient under tape.stop_recording(), "
        "or raise the budget"
    )
    return TapeBudgetError(
        message, op=op, budget=limit, saved_bytes=saved, op_bytes=op_bytes, entries=len(sizes), largest=largest
    )


def install_budget(tape, max_saved_bytes: int) -> None:
    """Make ``tape`` refuse any op that would take its saved bytes past ``max_saved_bytes`` (see the module)."""
    if not isinstance(max_saved_bytes, (int, np.integer)) or isinstance(max_saved_bytes, bool) or max_saved_bytes < 0:
        raise ValueError(f"record(): max_saved_bytes must be a non-negative int, got {max_saved_bytes!r}")
    tape._monitors.append(_Budget(int(max_saved_bytes)))
