"""Drawing a tape: Graphviz DOT source with no dependency, and rendering through the optional ``graphviz`` package.

In the drawing, leaves that need a gradient are blue ellipses (constants grey), each entry is a box (its op,
its operands and what it saves) feeding the ellipse of the value it produced, and outputs (values no later
entry uses) are double octagons. Edges carry shapes. A box's size and redness grow with the bytes its entry
keeps for backward, so the memory hot spot stands out.

In a notebook a tape shows as :func:`tape_html` (its entries as a table: value, op, shapes, dtype, bytes
saved, source line) and as :func:`tape_svg` (a drawing that needs nothing installed).

``render`` needs the ``graphviz`` package (``pip install -e ".[viz]"`` in a tapegrad checkout, or
``pip install "<path to the tapegrad wheel>[viz]"``) and the Graphviz ``dot`` program (``apt-get install graphviz``,
``brew install graphviz``); without them it says so, and ``t.to_dot()`` still works.
"""

from __future__ import annotations

import pathlib

from ._html import STYLE, Raw, esc, svg_graph, table
from ._tensor import Tensor
from .core.node import SRCS, Node
from .debug.reading import _call, _signature, analyse, fmt_dtype, fmt_shape
from .errors import fmt_bytes

__all__ = ["to_dot", "render", "tape_html", "tape_svg", "ROWS"]

ROWS = 40  # entries a notebook display shows (the first and last halves of a longer tape)


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _heat(f: float) -> str:
    # White for nothing saved, to red for the entry that saves the most.
    lo, hi = (255, 255, 255), (222, 45, 38)
    return "#" + "".join(f"{round(a + (b - a) * f):02x}" for a, b in zip(lo, hi))


def to_dot(tape) -> str:
    """Graphviz DOT source for ``tape`` (``t.to_dot()``); see the module docstring for what it shows.

    >>> import tapegrad as tg
    >>> W = tg.Tensor([1.0, 2.0], requires_grad=True, name="W")
    >>> with tg.record() as t:
    ...     y = (W * W).sum()
    >>> dot = t.to_dot()
    >>> dot.splitlines()[0], '"W" -> "op0"' in dot, 'shape=doubleoctagon' in dot
    ('digraph tape {', True, True)
    """
    rows = analyse(tape)
    used = {src for r in rows for src in r.rec[SRCS] if src.__class__ is Node}
    top = max((r.bytes for r in rows), default=0) or 1
    lines = [
        "digraph tape {",
        '  graph [rankdir=TB, fontname="Helvetica", fontsize=11, labelloc=t];',
        '  node [fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=9, color="#555555"];',
    ]
    declared = set()
    for r in rows:
        for src, name in zip(r.rec[SRCS], r.args):
            if src is None or name in declared:
                continue
            declared.add(name)
            if isinstance(src, Tensor):
                kind, fill = ("leaf", "#cfe2ff") if src.requires_grad else ("constant", "#eeeeee")
                label = f"{name}\n{fmt_shape(src.shape)} {kind}"
                lines.append(f"  {_q(name)} [shape=ellipse, style=filled, fillcolor={_q(fill)}, label={_q(label)}];")
            elif name.startswith("ext"):
                label = f"{name}\n(other tape)"
                lines.append(f"  {_q(name)} [shape=ellipse, style=dashed, label={_q(label)}];")
        f = r.bytes / top
        saved = f"saved {fmt_bytes(r.bytes)}" if r.bytes else "saves nothing"
        label = f"{r.op}({', '.join(r.args)})\n{saved}"
        lines.append(
            f'  {_q(f"op{r.index}")} [shape=box, style="rounded,filled", fillcolor={_q(_heat(f))}, '
            f"fontsize={10 + round(6 * f)}, width={0.9 + 1.6 * f:.2f}, penwidth={1 + 2 * f:.1f}, label={_q(label)}];"
        )
        # its values: the one output, or each of several (an output that died draws as an inner value)
        values = [(r.name, r.entry(), r.shape)] if r.outputs is None else [o[:3] for o in r.outputs]
        for name, node, _ in values:
            declared.add(name)
            if node is not None and node not in used:
                vlabel = f"{name}\noutput"
                lines.append(
                    f'  {_q(name)} [shape=doubleoctagon, style=filled, fillcolor="#d9f2d9", label={_q(vlabel)}];'
                )
            else:
                lines.append(f"  {_q(name)} [shape=ellipse, label={_q(name)}];")
        for src, name, shape in zip(r.rec[SRCS], r.args, r.arg_shapes):
            if src is not None:
                lines.append(f"  {_q(name)} -> {_q(f'op{r.index}')} [label={_q(fmt_shape(shape))}];")
        for name, _, shape in values:
            lines.append(f"  {_q(f'op{r.index}')} -> {_q(name)} [label={_q(fmt_shape(shape))}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(tape, path, format: str | None = None) -> pathlib.Path:
    """Draw ``tape`` (or DOT source) into ``path``; the format is the suffix (``.svg``, ``.png``, ``.pdf``)
    unless ``format`` is given. Needs the ``graphviz`` package (the ``viz`` extra) and Graphviz's ``dot``."""
    source = tape if isinstance(tape, str) else to_dot(tape)
    path = pathlib.Path(path)
    fmt = format or path.suffix.lstrip(".") or "svg"
    try:
        import graphviz  # optional: the viz extra
    except ImportError:
        raise ImportError(
            "tapegrad.viz.render needs the graphviz Python package and the Graphviz `dot` program: "
            'pip install -e ".[viz]" in a tapegrad checkout (or pip install "<path to the tapegrad wheel>[viz]", or '
            "pip install graphviz), and install Graphviz (apt-get install graphviz, brew install graphviz). "
            "Without them, t.to_dot() gives the DOT source to save and open in any Graphviz viewer"
        ) from None
    try:
        data = graphviz.Source(source).pipe(format=fmt)
    except graphviz.ExecutableNotFound:
        raise RuntimeError(
            "tapegrad.viz.render: the Graphviz `dot` program is not on PATH; install Graphviz "
            "(apt-get install graphviz, brew install graphviz), or save t.to_dot() and render it elsewhere"
        ) from None
    path.write_bytes(data)
    return path


def _shown(rows):
    """The rows a display shows: all, or the first and last halves of :data:`ROWS`, and how many it leaves out."""
    if len(rows) <= ROWS:
        return rows, 0
    return rows[: ROWS // 2] + rows[-ROWS // 2 :], len(rows) - ROWS


def _dtypes(row) -> str:
    """The output's dtype, or each output's (an op with several), ``?`` where unknown."""
    dtypes = [o[3] for o in row.outputs] if row.outputs is not None else [row.dtype]
    return ", ".join("?" if d is None else fmt_dtype(d) for d in dtypes)


def tape_html(tape) -> str:
    """The tape as an HTML table (what a notebook shows for ``t``): value, op and operands, input and output
    shapes, dtype, bytes saved (an array counted where it is first kept), source line (``track_source=True``).

    >>> import tapegrad as tg
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True, name="x")
    >>> with tg.record() as t:
    ...     y = tg.exp(x).sum()
    >>> html = t._repr_html_()
    >>> '<td class="l">t0 = exp(x)</td>' in html, "16 B" in html
    (True, True)
    """
    rows = analyse(tape)
    total = sum(r.bytes for r in rows)
    head = f"<div><b>Tape</b> {esc(tape.state)}, {len(rows)} entries, saved {esc(fmt_bytes(total))}</div>"
    shown, cut = _shown(rows)
    body = [
        [
            r.index,
            _call(r),
            _signature(r),
            _dtypes(r),
            fmt_bytes(r.bytes) if r.bytes else ("-" if not r.saved else "kept already"),
            r.where,
        ]
        for r in shown
    ]
    if cut:
        body.insert(ROWS // 2, [Raw("&hellip;"), f"{cut} entries not shown", "", "", "", ""])
    cols = ["#", "entry", "shapes", "dtype", "saved", "source"]
    return STYLE + head + table(cols, body, left=(1, 2, 3, 5))


def tape_svg(tape) -> str:
    """A drawing of the tape as SVG (what a notebook can show for ``t``, needing nothing installed): inputs
    on the left, entries top to bottom, each output curving to where it is used.

    >>> import tapegrad as tg
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True, name="x")
    >>> with tg.record() as t:
    ...     y = tg.exp(x).sum()
    >>> svg = t._repr_svg_()
    >>> svg.count("<rect"), ">t0 = exp(x)<" in svg
    (3, True)
    """
    rows = analyse(tape)
    shown, cut = _shown(rows)
    nodes, edges, where = [], [], {}
    for r in shown:
        for src, name in zip(r.rec[SRCS], r.args):
            if src is not None and name not in where:
                where[name] = len(nodes)
                nodes.append((name, 0))
        k = len(nodes)
        nodes.append((_call(r), 1))
        edges += [(where[name], k) for src, name in zip(r.rec[SRCS], r.args) if src is not None]
        for name in [r.name] if r.outputs is None else [o[0] for o in r.outputs]:
            where[name] = k
    if cut:
        nodes.append((f"... {cut} entries not shown", 1))
    return svg_graph(nodes, edges)
