"""Rich displays in notebooks: the HTML and SVG pieces that ``_repr_html_`` and ``_repr_svg_`` are built from.

Every text that reaches a page goes through :func:`esc` (names, file paths such as ``<string>``, dtypes), so a
display never runs or breaks markup; pieces already rendered are :class:`Raw`. Arrays show in full when small
(at most :data:`FULL` elements, one or two dimensions), else as their shape, statistics and NumPy's summary.

>>> import numpy as np
>>> print(table(["name", "value"], [["<x>", 1]]))
<table class="tapegrad"><thead><tr><th>name</th><th>value</th></tr></thead><tbody><tr><td>&lt;x&gt;</td><td>1</td></tr></tbody></table>
>>> "<table" in array_html(np.eye(2)), "min" in array_html(np.zeros(1000))
(True, True)
"""

from __future__ import annotations

import html

import numpy as np

from .errors import fmt_bytes

__all__ = ["esc", "Raw", "table", "array_html", "STYLE", "FULL", "svg_graph"]

FULL = 64  # arrays with at most this many elements (and at most 2 dimensions) show every value

# One small style block per display, scoped to the class, so that it reads in light and dark notebooks alike.
STYLE = (
    "<style>.tapegrad{border-collapse:collapse;font-family:monospace;font-size:12px}"
    ".tapegrad th,.tapegrad td{border:1px solid #8884;padding:2px 6px;text-align:right}"
    ".tapegrad th{background:#8881}.tapegrad td.l,.tapegrad th.l{text-align:left}"
    ".tapegrad .bad{color:#c00;font-weight:bold}</style>"
)


class Raw(str):
    """HTML already rendered (and escaped where it needed to be): :func:`table` puts it in as it is."""


def esc(x) -> str:
    """``x`` as text safe inside HTML or SVG (``<``, ``>``, ``&`` and quotes escaped); :class:`Raw` is kept.

    >>> esc("<string>:3"), esc(Raw("<b>x</b>"))
    ('&lt;string&gt;:3', '<b>x</b>')
    """
    return x if isinstance(x, Raw) else html.escape(str(x), quote=True)


def table(head, rows, *, left=(), cls="tapegrad") -> str:
    """An HTML table of ``head`` (column names) and ``rows`` (lists of cells, escaped unless :class:`Raw`);
    the columns whose positions are in ``left`` are left-aligned (text), the others right-aligned (numbers).
    ``head=None``: no header row."""

    def cell(tag, i, v):
        return f'<{tag} class="l">{esc(v)}</{tag}>' if i in left else f"<{tag}>{esc(v)}</{tag}>"

    out = [f'<table class="{esc(cls)}">']
    if head is not None:
        out += ["<thead><tr>", *(cell("th", i, h) for i, h in enumerate(head)), "</tr></thead>"]
    out.append("<tbody>")
    for r in rows:
        out.append("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _value(v) -> str:
    text = np.format_float_positional(v, precision=6, trim="-") if isinstance(v, np.floating) else str(v)
    bad = isinstance(v, (np.floating, np.complexfloating)) and not np.isfinite(v)
    return f'<span class="bad">{esc(text)}</span>' if bad else esc(text)


def array_html(a) -> str:
    """A NumPy array: every value in a table when small, else its statistics (NaN and inf counted, in red
    where there are any) and NumPy's summary of its values."""
    a = np.asarray(a)
    if a.size <= FULL and a.ndim <= 2:
        grid = np.atleast_2d(a) if a.ndim else a.reshape(1, 1)
        return table(None, [[Raw(_value(v)) for v in row] for row in grid])
    parts = [f"shape {esc(a.shape)}, {esc(fmt_bytes(a.nbytes))}"]
    if a.size and (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        finite = np.isfinite(a) if np.issubdtype(a.dtype, np.inexact) else np.ones(a.shape, bool)
        ok = a[finite]
        if ok.size and not np.iscomplexobj(a):
            parts.append(f"min {_value(ok.min())}, max {_value(ok.max())}, mean {_value(ok.mean())}")
        nan = int(np.isnan(a).sum()) if a.dtype.kind in "fc" else 0
        inf = int(np.isinf(a).sum()) if a.dtype.kind in "fc" else 0
        if nan or inf:
            parts.append(f'<span class="bad">{nan} NaN, {inf} inf</span>')
    summary = np.array2string(a, threshold=FULL, edgeitems=3, precision=4)
    return "<div>" + "; ".join(parts) + f"</div><pre>{esc(summary)}</pre>"


def svg_graph(nodes, edges) -> str:
    """A drawing of a small graph: ``nodes`` as ``(label, column)`` (column 0: inputs, 1: ops), drawn top to
    bottom in order; ``edges`` as ``(from, to)`` indices, an input's to the op's left side, an op's output
    curving along the ops' right side to where it is used.

    >>> svg = svg_graph([("x", 0), ("t0 = exp(x)", 1)], [(0, 1)])
    >>> svg.startswith("<svg") and svg.count("<rect") == 2 and svg.count("<path") == 2
    True
    """
    row, left_w, box_w, x0, x1 = 26, 120, 190, 10, 150
    bends = [30 + 4 * (b - a) for a, b in edges if nodes[a][1] == 1]
    width, height = x1 + box_w + max(bends, default=0) + 10, 20 + row * len(nodes)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" '
        'font-size="11"><defs><marker id="tg-arrow" viewBox="0 0 6 6" refX="6" refY="3" markerWidth="6" '
        'markerHeight="6" orient="auto"><path d="M0,0L6,3L0,6z" fill="#888"/></marker></defs>'
    ]
    for a, b in edges:
        ya, yb = 20 + row * a, 20 + row * b
        if nodes[a][1] == 0:  # an input: into the op's left side
            xa, xb, ca, cb = x0 + left_w, x1, x0 + left_w + 12, x1 - 12
        else:  # an op's output: along the right side
            xa = xb = x1 + box_w
            ca = cb = xa + 30 + 4 * (b - a)
        out.append(
            f'<path d="M{xa},{ya} C{ca},{ya} {cb},{yb} {xb},{yb}" fill="none" stroke="#888" '
            'marker-end="url(#tg-arrow)"/>'
        )
    for k, (label, col) in enumerate(nodes):
        x, w, fill = (x0, left_w, "#e8eefc") if col == 0 else (x1, box_w, "#fdf2e3")
        y = 10 + row * k
        out.append(f'<rect x="{x}" y="{y}" width="{w}" height="20" rx="4" fill="{fill}" stroke="#666"/>')
        out.append(f'<text x="{x + 5}" y="{y + 14}">{esc(label)}</text>')
    out.append("</svg>")
    return "".join(out)
