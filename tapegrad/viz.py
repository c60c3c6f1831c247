"""Drawing a tape: Graphviz DOT source with no dependency, and rendering through the optional ``graphviz`` package.

In the drawing, leaves that need a gradient are blue ellipses (constants grey), each entry is a box (its op,
its operands and what it saves) feeding the ellipse of the value it produced, and outputs (values no later
entry uses) are double octagons. Edges carry shapes. A box's size and redness grow with the bytes its entry
keeps for backward, so the memory hot spot stands out.

``render`` needs the ``graphviz`` package (``pip install -e ".[viz]"`` in a tapegrad checkout, or
``pip install "<path to the tapegrad wheel>[viz]"``) and the Graphviz ``dot`` program (``apt-get install graphviz``,
``brew install graphviz``); without them it says so, and ``t.to_dot()`` still works.
"""

from __future__ import annotations

import pathlib

from ._tensor import Tensor
from .core.node import SRCS, Node
from .debug.reading import analyse, fmt_shape
from .errors import fmt_bytes

__all__ = ["to_dot", "render"]


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
        if r.outputs is not None:  # an op with several outputs: one value per output
            for label, p, shape, _ in r.outputs:
                declared.add(label)
                style = 'shape=doubleoctagon, style=filled, fillcolor="#d9f2d9"' if p not in used else "shape=ellipse"
                lines.append(f"  {_q(label)} [{style}, label={_q(label)}];")
                lines.append(f"  {_q(f'op{r.index}')} -> {_q(label)} [label={_q(fmt_shape(shape))}];")
            for src, name, shape in zip(r.rec[SRCS], r.args, r.arg_shapes):
                if src is not None:
                    lines.append(f"  {_q(name)} -> {_q(f'op{r.index}')} [label={_q(fmt_shape(shape))}];")
            continue
        node = r.entry()
        out = node is not None and node not in used
        declared.add(r.name)
        if out:
            vlabel = f"{r.name}\noutput"
            lines.append(
                f'  {_q(r.name)} [shape=doubleoctagon, style=filled, fillcolor="#d9f2d9", label={_q(vlabel)}];'
            )
        else:
            lines.append(f"  {_q(r.name)} [shape=ellipse, label={_q(r.name)}];")
        for src, name, shape in zip(r.rec[SRCS], r.args, r.arg_shapes):
            if src is not None:
                lines.append(f"  {_q(name)} -> {_q(f'op{r.index}')} [label={_q(fmt_shape(shape))}];")
        lines.append(f"  {_q(f'op{r.index}')} -> {_q(r.name)} [label={_q(fmt_shape(r.shape))}];")
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
