"""What a tape keeps alive: per entry the arrays saved for backward and their bytes, the running total, the
peak while replaying, the largest arrays (``t.memory_report()``, ``t.stats()``).

Each array counts once, for the first entry that keeps it (``x * x`` saves ``x`` once; an output saved by
its op and again by the next one is shared). The peak is an estimate from shapes: saved values still held
plus the gradients in flight at the worst step of a replay from the last entry.
"""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ..backend import itemsize, nbytes
from ..core.node import MASK, SRCS
from ..errors import fmt_bytes
from .reading import _call, _columns, analyse, fmt_dtype, fmt_shape

__all__ = ["stats", "memory_report"]


def _nbytes(shape_dtype):
    if not shape_dtype or shape_dtype[0] is None or shape_dtype[1] is None:
        return 0
    shape, dtype = shape_dtype
    return int(np.prod(shape, dtype=np.int64)) * itemsize(dtype)


def _backward_peak(rows) -> int:
    """Saved bytes still held plus gradients in flight, at the worst step of a replay from the last entry."""
    free_at: dict = {}  # row index at which each saved array is released (its first holder, replayed last)
    for r in rows:
        for _, _, n, new in r.saved:
            if new:
                free_at[r.index] = free_at.get(r.index, 0) + n
    held = sum(free_at.values())
    sizes: dict = {}
    for r in rows:
        node = r.entry()
        for _, p, shape, dtype in r.outputs or ():  # an op with several outputs: each output's cotangent
            if p is not None:
                sizes[p] = _nbytes((shape, dtype))
        if node is not None and r.outputs is None:
            sizes[node] = _nbytes((r.shape, r.dtype))
        for src in r.rec[SRCS]:
            if isinstance(src, Tensor):
                sizes[src] = nbytes(src._data)
    if not rows:
        return 0
    last = rows[-1].entry()
    if rows[-1].outputs is not None:  # the replay starts at the outputs of an op with several
        inflight = {p: sizes.get(p, 0) for _, p, _, _ in rows[-1].outputs if p is not None}
    else:
        inflight = {last: sizes.get(last, 0)} if last is not None else {}
    flying = sum(inflight.values())
    peak = held + flying
    for r in reversed(rows):
        node = r.entry()
        if r.outputs is not None:
            arrived = [inflight.pop(p, None) for _, p, _, _ in r.outputs if p is not None]
            g = sum(x for x in arrived if x is not None) if any(x is not None for x in arrived) else None
        else:
            g = inflight.pop(node, None) if node is not None else None
        if g is not None:
            mask = r.rec[MASK]
            for i, src in enumerate(r.rec[SRCS]):
                if (mask >> i) & 1 and src not in inflight:
                    inflight[src] = sizes.get(src, 0)
                    flying += inflight[src]
            peak = max(peak, held + flying)  # the rule ran: its output's gradient is still alive
            flying -= g
        held -= free_at.get(r.index, 0)
    return peak


def stats(tape) -> dict:
    """The figures of :func:`memory_report` as a dict: ``entries``, ``saved_bytes``, ``saved_arrays``,
    ``peak_bytes`` (saved values plus gradients in flight at the worst step of the replay, an estimate),
    ``largest`` (the five largest saved arrays), ``per_op`` (count and bytes) and ``rows`` (one per entry).

    >>> import tapegrad as tg
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> with tg.record() as t:
    ...     y = tg.exp(x).sum()
    >>> s = t.stats(); s["entries"], s["saved_bytes"], s["per_op"]["exp"]
    (2, 16, {'count': 1, 'saved_bytes': 16})
    """
    rows = analyse(tape)
    out_rows, running, per_op, arrays = [], 0, {}, []
    for r in rows:
        running += r.bytes
        saved = [
            {"array": label, "shape": tuple(arr.shape), "dtype": fmt_dtype(arr.dtype), "bytes": n, "shared": not new}
            for label, arr, n, new in r.saved
        ]
        out_rows.append(
            {
                "index": r.index,
                "name": r.name,
                "op": r.op,
                "source": r.where or None,
                "shape": r.shape,
                "dtype": None if r.dtype is None else fmt_dtype(r.dtype),
                "saved": saved,
                "bytes": r.bytes,
                "running": running,
            }
        )
        d = per_op.setdefault(r.op, {"count": 0, "saved_bytes": 0})
        d["count"] += 1
        d["saved_bytes"] += r.bytes
        arrays += [dict(s, entry=r.index, op=r.op) for s in saved if not s["shared"]]
    arrays.sort(key=lambda a: -a["bytes"])
    return {
        "entries": len(rows),
        "saved_bytes": running,
        "saved_arrays": len(arrays),
        "peak_bytes": _backward_peak(rows),
        "largest": arrays[:5],
        "per_op": per_op,
        "rows": out_rows,
    }


def memory_report(tape) -> str:
    """A table of what each entry keeps for backward, with a running total, then the total, the peak and the
    largest saved arrays (``t.memory_report()``; the same figures as :func:`stats`).

    >>> import tapegrad as tg
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True, name="x")
    >>> with tg.record(track_source=True) as t:
    ...     y = tg.exp(x).sum()
    >>> print(t.memory_report())  # doctest: +ELLIPSIS
      #  op   output        source  saved      bytes  total
      0  exp  (2,) float64  ...     t0 (2,)    16 B   16 B
      1  sum  () float64    ...     -          0 B    16 B
    saved: 16 B in 1 array over 2 entries; peak while replaying (saved + gradients in flight): 48 B
    largest saved arrays:
      t0  kept by t0 = exp(x)  (2,) float64  16 B
    """
    s = stats(tape)
    rows = analyse(tape)
    cells = [["  #", "op", "output", "source", "saved", "bytes", "total"]]
    for r, d in zip(rows, s["rows"]):
        output = fmt_shape(r.shape) + (f" {fmt_dtype(r.dtype)}" if r.dtype is not None else "")
        saved = ", ".join(
            f"{a['array']} {fmt_shape(a['shape'])}" + (" (shared)" if a["shared"] else "") for a in d["saved"]
        )
        cells.append(
            [f"{r.index:>3}", r.op, output, r.where, saved or "-", fmt_bytes(d["bytes"]), fmt_bytes(d["running"])]
        )
    lines = _columns(cells)
    n = s["saved_arrays"]
    lines.append(
        f"saved: {fmt_bytes(s['saved_bytes'])} in {n} array{'s' * (n != 1)} over {s['entries']} entries; "
        f"peak while replaying (saved + gradients in flight): {fmt_bytes(s['peak_bytes'])}"
    )
    if s["largest"]:
        lines.append("largest saved arrays:")
        big = [
            [
                f"  {a['array']}  kept by {_call(rows[a['entry']])}",
                f"{fmt_shape(a['shape'])} {a['dtype']}",
                fmt_bytes(a["bytes"]),
            ]
            for a in s["largest"]
        ]
        lines += _columns(big)
    return "\n".join(lines)
