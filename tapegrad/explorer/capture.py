"""What the explorer shows, taken from a real recording and a real replay of the user's tape.

- :class:`ValueCapture`, a monitor of the tape (``tape.add_monitor``): the value each entry computed, as a summary
  made at once (small arrays in full; large ones as shape, statistics and a histogram), so that nothing it keeps
  holds an array alive.
- :class:`ReplayCapture`, an observer of the replay (``tape.add_replay_observer``): at each entry the replay
  reaches, the adjoint arriving at its output, the bytes the tape still holds (the entry's saved values are freed
  as its rule runs) and the bytes of the gradients in flight.
- :func:`summary`: one array as the page shows it; :func:`table`: the tape's rows (:func:`tapegrad.debug.reading.analyse`)
  as plain data.
"""

from __future__ import annotations

import linecache

import numpy as np

from .._tensor import Tensor
from ..backend import is_array, nbytes, to_numpy
from ..core.node import ANS, OP, SAVED, SRCS, Node, answers
from ..debug.reading import analyse, fmt_dtype

__all__ = ["summary", "ValueCapture", "ReplayCapture", "table", "FULL"]

FULL = 16  # arrays of at most this many elements are shown in full
BINS = 16  # bars of a large array's histogram


def _number(v):
    """A JSON-ready number: a float (NaN and infinities kept: the page's data is a JavaScript literal)."""
    return float(v)


def summary(a) -> dict:
    """An array (or number) as the page shows it: ``shape``, ``dtype``, ``nan``/``inf`` counts, ``values`` in full
    when small (complex numbers as ``[re, im]``), else ``min``, ``max``, ``mean``, ``std`` of the finite values
    and a histogram (``hist``: counts, ``edges``).

    >>> s = summary(np.array([1.0, np.nan, 3.0]))
    >>> s["shape"], s["values"][0], s["nan"]
    ([3], 1.0, 1)
    >>> big = summary(np.arange(1000.0))
    >>> big["min"], big["max"], sum(big["hist"])
    (0.0, 999.0, 1000)
    """
    a = to_numpy(a._data if isinstance(a, Tensor) else a) if not isinstance(a, np.ndarray) else a
    a = np.asarray(a)
    out = {"shape": list(a.shape), "dtype": fmt_dtype(a.dtype), "size": int(a.size)}
    if a.dtype.kind not in "biufc":
        return out
    flat = a.reshape(-1)
    if a.dtype.kind == "c":
        mag = np.abs(flat)
        out["nan"], out["inf"] = int(np.isnan(flat).sum()), int(np.isinf(flat).sum())
        if a.size <= FULL:
            out["values"] = [[_number(z.real), _number(z.imag)] for z in flat]
        flat = mag
    else:
        flat = flat.astype(np.float64)
        out["nan"], out["inf"] = int(np.isnan(flat).sum()), int(np.isinf(flat).sum())
        if a.size <= FULL:
            out["values"] = [_number(v) for v in flat]
    finite = flat[np.isfinite(flat)]
    if a.size > FULL and finite.size:
        counts, edges = np.histogram(finite, bins=BINS)
        out.update(
            min=_number(finite.min()),
            max=_number(finite.max()),
            mean=_number(finite.mean()),
            std=_number(finite.std()),
            hist=[int(c) for c in counts],
            edges=[_number(e) for e in edges],
        )
    return out


class ValueCapture:
    """The tape's monitor: each entry's output, summarized as it is recorded (keyed by the entry's id)."""

    def __init__(self):
        self.values: dict = {}

    def __call__(self, tape, entry, out) -> None:
        # An op with several outputs (eigh, svd, ...) records one entry for a tuple of them: one summary each.
        self.values[id(entry)] = [summary(o._data) for o in out] if out.__class__ is tuple else summary(out._data)


class ReplayCapture:
    """The replay's observer: per entry reached, its position, the adjoint of its output, the bytes the tape holds
    (measured on the tape, its saved values freed entry by entry) and the bytes of the gradients in flight."""

    def __init__(self, tape, measure: bool = True):
        self.tape = tape
        self.measure = measure
        self.steps: list = []

    def __call__(self, idx, rec, node, g, grads):
        held = self.tape.saved_bytes() if self.measure else None
        several = g.__class__ is tuple  # an entry with several outputs: a cotangent each (None: nobody used it)
        arriving = [v for v in (g if several else (g,)) if is_array(v)]
        flying = sum(nbytes(v) for v in arriving) + sum(nbytes(v) for v in grads.values() if is_array(v))
        step = {"pos": idx, "adjoint": None if several else summary(g), "held": held, "inflight": flying}
        if several:
            step["adjoints"] = [summary(v) if is_array(v) else None for v in g]
        self.steps.append(step)
        return rec[OP]

    def done(self) -> None:
        self.tape = None


def _where(row):
    """The entry's line (``file.py:12``, as the tape's views name it) and its code, or None (no line kept)."""
    if not row.where:
        return None, None
    info = row.entry.info
    return row.where, linecache.getline(info.file, info.line).strip()


def _input(src, name, shape, known):
    if src is None:
        return {"name": name, "kind": "constant", "shape": None if shape is None else list(shape)}
    if src.__class__ is Node:
        at = known.get(src)  # an entry's index, or (index, output) for one output of several
        out = {"name": name, "kind": "entry" if at is not None else "other tape", "entry": at}
        if isinstance(at, tuple):
            out["entry"], out["output"] = at
        return out
    return {"name": name, "kind": "leaf", "shape": list(src.shape), "dtype": fmt_dtype(src.dtype)}


def _value(row, values, saved):
    """The entry's output: as the monitor saw it, or as the tape saved it (the entry itself, or an entry that uses
    it: a plain tape keeps some), or None."""
    if id(row.entry) in values:
        return values[id(row.entry)]
    ans = row.rec[ANS]
    if not is_array(ans):
        ans = saved.get(row.entry())
    return dict(summary(ans), kept=True) if is_array(ans) else None


def _outputs(row, values, saved):
    """For an entry with several outputs: per output its name, shape, dtype and value (as :func:`_value` finds it)."""
    captured = values.get(id(row.entry))
    kept = answers(row.rec[ANS])
    out = []
    for i, (label, node, shape, dtype) in enumerate(row.outputs):
        if captured is not None:
            value = captured[i]
        else:
            a = kept[i] if kept else saved.get(node)
            value = dict(summary(a), kept=True) if is_array(a) else None
        out.append(
            {
                "name": label,
                "shape": None if shape is None else list(shape),
                "dtype": None if dtype is None else fmt_dtype(dtype),
                "value": value,
            }
        )
    return out


def _saved_inputs(rows) -> dict:
    """Node -> the array an entry using it saved (a rule that reads an input keeps that input's array)."""
    saved = {}
    for r in rows:
        for src, v in zip(r.rec[SRCS], r.rec[SAVED]):
            if src.__class__ is Node and is_array(v):
                saved.setdefault(src, v)
    return saved


def table(tape, values: dict) -> tuple[list, dict]:
    """The tape's live entries as rows of plain data, and its leaves (name -> tensor), before any replay."""
    rows, leaves, known = [], {}, {}
    analysed = analyse(tape)
    saved = _saved_inputs(analysed)
    for r in analysed:
        several = r.outputs is not None
        if several:
            for i, (_, part, _, _) in enumerate(r.outputs):
                if part is not None:
                    known[part] = (r.index, i)
        elif r.entry() is not None:
            known[r.entry()] = r.index
        where, code = _where(r)
        inputs = []
        for src, name, shape in zip(r.rec[SRCS], r.args, r.arg_shapes):
            inputs.append(_input(src, name, shape, known))
            if isinstance(src, Tensor):
                inputs[-1]["shape"] = list(src.shape)
                leaves.setdefault(name, src)
        rows.append(
            {
                "index": r.index,
                "pos": r.pos,
                "name": r.name,
                "op": r.op,
                "inputs": inputs,
                "shape": None if r.shape is None or several else list(r.shape),
                "dtype": None if r.dtype is None or several else fmt_dtype(r.dtype),
                "saved": [{"name": n, "shape": list(a.shape), "bytes": b, "new": new} for n, a, b, new in r.saved],
                "bytes": r.bytes,
                "where": where,
                "code": code,
                "value": None if several else _value(r, values, saved),
                "outputs": _outputs(r, values, saved) if several else None,
            }
        )
    return rows, leaves
