"""Reading a tape: its entries as numbered SSA lines.

``analyse(tape)`` turns the live entries into rows (name, op, operands, shapes, saved arrays, source line);
``format_tape`` prints them; :mod:`tapegrad.debug.memory` adds up their bytes. Names are stable per tape:
the value of the k-th live entry is ``tk``, a leaf is shown by its ``name`` (``in0``, ``in1``... when it has
none), a constant by its value when the tape kept it. A tape recorded with ``track_source=True`` (or
``detect_anomaly=True``) knows every output's shape and dtype and the line that called each op; otherwise
shapes come from what the tape holds (leaves, saved values, broadcasting) and the others show as ``?``.
"""

from __future__ import annotations

import os

import numpy as np

from .._shapes import Shape
from .._tensor import Tensor
from ..backend import is_array, nbytes
from ..core.node import ANS, MASK, OP, SAVED, SHAPES, SRCS, Node, Outputs, answers, outputs_of
from ..errors import fmt_bytes

__all__ = ["analyse", "format_tape", "fmt_shape", "fmt_dtype", "fmt_bytes"]


class Row:
    """One live entry as the views show it."""

    __slots__ = (
        "index", "pos", "entry", "rec", "name", "op", "args", "arg_shapes", "shape", "dtype", "saved", "outputs",
    )  # fmt: skip
    # outputs: for an op with several outputs, per output (its name, its node or None, its shape, its dtype)

    @property
    def where(self) -> str:
        info = getattr(self.entry, "info", None)
        return f"{os.path.basename(info.file)}:{info.line}" if info is not None and info.file is not None else ""

    @property
    def bytes(self) -> int:
        return sum(n for _, _, n, new in self.saved if new)


def fmt_shape(shape) -> str:
    """``(3,4)``, ``(4,)``, ``()``, or ``?`` when unknown.

    >>> fmt_shape((3, 4)), fmt_shape((4,)), fmt_shape(None)
    ('(3,4)', '(4,)', '?')
    """
    if shape is None:
        return "?"
    return "(" + ",".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def fmt_dtype(dtype) -> str:
    """A dtype by its name, whatever the library: ``float64``, not ``array_api_strict.float64``.

    >>> import numpy as np
    >>> fmt_dtype(np.dtype(np.float32))
    'float32'
    """
    return str(dtype).rsplit(".", 1)[-1]


def _value_shape(v):
    if isinstance(v, (int, float, np.number)):
        return (), np.asarray(v).dtype
    if is_array(v):
        return tuple(v.shape), v.dtype
    if isinstance(v, Shape):
        return v.shape, v.dtype
    return None


def analyse(tape) -> list[Row]:
    """The live entries of ``tape`` as rows, in execution order (see the module docstring)."""
    live = [(pos, e, e.rec) for pos, e in tape.live_entries()]
    names: dict = {}
    known: dict = {}  # node or leaf -> (shape, dtype)
    for k, (_, e, rec) in enumerate(live):
        node = e()
        if node.__class__ is Outputs:
            _name_outputs(k, e, rec, node, names, known)
            node = None
        if node is not None:
            names[node] = f"t{k}"
        info = getattr(e, "info", None)
        if info is not None and info.shape is not None and node is not None:
            known[node] = (info.shape, info.dtype)
        elif rec[ANS] is not None and node is not None:
            known[node] = (tuple(rec[ANS].shape), rec[ANS].dtype)
        for i, (src, v) in enumerate(zip(rec[SRCS], rec[SAVED])):  # a consumer tells its inputs' shapes
            if src.__class__ is Node and src not in known:
                if _value_shape(v):
                    known[src] = _value_shape(v)
                elif rec[SHAPES] is not None and rec[SHAPES][i] is not None:
                    known[src] = (rec[SHAPES][i], None)
    leaves = others = 0
    rows = []
    for k, (pos, e, rec) in enumerate(live):
        op, srcs, vals, ans, shapes, mask = rec[OP], rec[SRCS], rec[SAVED], rec[ANS], rec[SHAPES], rec[MASK]
        row = Row()
        row.index, row.pos, row.entry, row.rec, row.name, row.op = k, pos, e, rec, f"t{k}", op.name
        args, arg_shapes = [], []
        for i, src in enumerate(srcs):
            v = vals[i] if i < len(vals) else None
            if src is None:
                if isinstance(v, (int, float, np.number)) or (isinstance(v, np.ndarray) and v.size == 1):
                    args.append(f"{np.asarray(v).real.item():g}")
                else:
                    args.append("const")
            elif src.__class__ is Node:
                if src not in names:
                    names[src] = f"ext{others}"
                    others += 1
                args.append(names[src])
            else:
                if src not in names:
                    names[src] = src.name or f"in{leaves}"
                    leaves += src.name is None
                    known[src] = (tuple(src.shape), src.dtype)
                args.append(names[src])
            sd = known.get(src) if src is not None else None
            sd = sd or _value_shape(v)
            if sd is None and shapes is not None and shapes[i] is not None:
                sd = (shapes[i], None)
            arg_shapes.append(sd[0] if sd else None)
        row.args, row.arg_shapes = args, arg_shapes
        node = e()
        row.outputs = None
        if node.__class__ is Outputs:
            row.outputs = [
                (f"{row.name}.{label}", p, *known.get(p, (None, None)))
                for label, p in zip(op.outputs, outputs_of(node))
            ]
            node = None
        out = known.get(node) if node is not None else None
        if row.outputs is not None and all(shape is not None for _, _, shape, _ in row.outputs):
            out = (tuple(o[2] for o in row.outputs), tuple(o[3] for o in row.outputs))
        if out is None and op.broadcast:
            out = _broadcast_out(srcs, mask, shapes, arg_shapes, known)
        row.shape, row.dtype = out if out else (None, None)
        if node is not None and out:
            known[node] = out
        row.saved = []
        for i, v in enumerate(vals):
            if is_array(v):
                row.saved.append([args[i], v, nbytes(v), True])
        if ans.__class__ is tuple:
            for (label, _, _, _), a in zip(row.outputs, ans):
                row.saved.append([label, a, nbytes(a), True])
        elif ans is not None:
            row.saved.append([row.name, ans, nbytes(ans), True])
        rows.append(row)
    seen = set()
    for row in rows:  # an array kept by several entries counts once, where it is first kept
        for item in row.saved:
            item[3] = id(item[1]) not in seen
            seen.add(id(item[1]))
    return rows


def _name_outputs(k, e, rec, group, names, known) -> None:
    """The names (``t3.eigenvalues``) and shapes of the outputs of an entry with several outputs."""
    info = getattr(e, "info", None)
    kept = answers(rec[ANS])
    for i, (label, p) in enumerate(zip(rec[OP].outputs, outputs_of(group))):
        if p is None:
            continue
        names[p] = f"t{k}.{label}"
        if info is not None and info.shape is not None:
            known[p] = (info.shape[i], info.dtype[i])
        elif kept:
            known[p] = (tuple(kept[i].shape), kept[i].dtype)


def _broadcast_out(srcs, mask, shapes, arg_shapes, known):
    try:
        if shapes is None:  # no recorded input broadcast: each has the output's shape
            for i, src in enumerate(srcs):
                if (mask >> i) & 1 and known.get(src):
                    return known[src]
            return None
        out = np.broadcast_shapes(*[s for s in shapes if s is not None])
        dtypes = [known[s][1] for i, s in enumerate(srcs) if (mask >> i) & 1 and known.get(s)]
        return out, (dtypes[0] if dtypes else None)
    except ValueError:
        return None


def _call(row) -> str:
    name = row.name if row.outputs is None else ", ".join(o[0] for o in row.outputs)
    return f"{name} = {row.op}({', '.join(row.args)})"


def _signature(row) -> str:
    if row.outputs is not None:
        out = ", ".join(fmt_shape(o[2]) for o in row.outputs)
    else:
        out = fmt_shape(row.shape)
    return ", ".join(fmt_shape(s) for s in row.arg_shapes) + " -> " + out


def _saved(row) -> str:
    if not row.saved:
        return "saved: -"
    size = fmt_bytes(row.bytes) if row.bytes else "kept already"
    return "saved: " + ", ".join(label for label, _, _, _ in row.saved) + f" ({size})"


def _columns(lines) -> list[str]:
    widths = [max(len(cells[i]) for cells in lines) for i in range(len(lines[0]))] if lines else []
    return ["  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in lines]


def format_tape(tape, limit: int | None = 40) -> str:
    """The tape as numbered SSA lines, then totals; tapes longer than ``limit`` show their head, tail and
    a count per op (``limit=None`` shows every line). ``print(t)`` and ``str(t)`` call this.

    >>> import tapegrad as tg
    >>> W = tg.Tensor([1.0, 2.0], requires_grad=True, name="W")
    >>> with tg.record() as t:
    ...     y = (W * W).sum()
    >>> print(t)  # doctest: +NORMALIZE_WHITESPACE
    Tape (recording, 2 entries)
      0  t0 = multiply(W, W)  (2,), (2,) -> (2,)  saved: W, W (16 B)
      1  t1 = sum(t0)         (2,) -> ?           saved: -
    2 entries, 1 leaf (W), saved 16 B in 1 array
    shapes marked ? are not kept by a plain tape: record(track_source=True) keeps them
    """
    rows = analyse(tape)
    head = f"Tape ({tape.state}, {len(rows)} entries{', persistent' if tape.persistent else ''})"
    if not rows:
        return head
    shown = rows if limit is None or len(rows) <= limit else rows[: limit * 2 // 3] + rows[-(limit // 3) :]
    cells = [[f"{r.index:>3}", _call(r), _signature(r), _saved(r), r.where] for r in shown]
    lines = _columns(cells)
    if len(shown) < len(rows):
        cut = limit * 2 // 3
        lines.insert(cut, f"     ... {len(rows) - len(shown)} entries not shown (format_tape(t, limit=None)) ...")
    lines.insert(0, head)
    lines.append(_totals(rows))
    if len(shown) < len(rows):
        counts: dict = {}
        for r in rows:
            counts[r.op] = counts.get(r.op, 0) + 1
        lines.append("ops: " + ", ".join(f"{op} x{n}" for op, n in sorted(counts.items(), key=lambda kv: -kv[1])))
    if any(r.shape is None for r in rows):
        lines.append("shapes marked ? are not kept by a plain tape: record(track_source=True) keeps them")
    return "\n".join(lines)


def _leaf_names(rows):
    out = []
    for r in rows:
        for src, name in zip(r.rec[SRCS], r.args):
            if isinstance(src, Tensor) and name not in out:
                out.append(name)
    return out


def _totals(rows) -> str:
    leaves = _leaf_names(rows)
    arrays = sum(1 for r in rows for item in r.saved if item[3])
    total = sum(r.bytes for r in rows)
    leaf = f"{len(leaves)} lea{'f' if len(leaves) == 1 else 'ves'} ({', '.join(leaves)})"
    return f"{len(rows)} entries, {leaf}, saved {fmt_bytes(total)} in {arrays} array{'s' * (arrays != 1)}"
