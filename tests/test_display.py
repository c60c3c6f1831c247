"""Rich displays (``_repr_html_``, ``_repr_svg_``): well-formed markup, every text escaped, the figures the objects'
own, checked by parsing what they return; and a small notebook executed in a real kernel (nbclient)."""

from __future__ import annotations

import html.parser
import pathlib
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import viz

NOTEBOOK = pathlib.Path(__file__).parent / "notebooks" / "rich_display.ipynb"
VOID = {"br", "hr", "img", "meta", "input", "col", "wbr"}


class Checked(html.parser.HTMLParser):
    """Parses HTML, failing on a tag closed out of order or left open; keeps the text of every cell and the
    tags seen (a ``<script>`` among them would be a display that runs code)."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.stack, self.cells, self.tags, self.text = [], [], [], []
        self._cell = None
        self.feed(text)
        self.close()
        assert not self.stack, f"unclosed tags: {self.stack}"

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag not in VOID:
            self.stack.append(tag)
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()
        if tag in ("td", "th"):
            self.cells.append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def test_tensor_small_large_nonfinite_and_grad():
    t = tg.Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True, name="<w>")
    page = Checked(t._repr_html_())
    assert page.cells == [f"{v:g}" for v in range(6)]
    assert "script" not in page.tags and "name <w>" in "".join(page.text)  # escaped, read back as text
    assert "&lt;w&gt;" in t._repr_html_()
    big = tg.Tensor(np.linspace(-1.0, 3.0, 1000))
    big.data[7], big.data[8] = np.nan, np.inf
    text = "".join(Checked(big._repr_html_()).text)
    assert "shape (1000,)" in text and "1 NaN, 1 inf" in text and "max 3" in text and "min -1" in text
    with tg.record():
        loss = (t * t).sum()
    loss.backward()
    page = Checked(t._repr_html_())
    assert page.cells[6:] == [f"{2 * v:g}" for v in range(6)]  # the gradient, after the values
    assert "recorded" in "".join(Checked(loss._repr_html_()).text)


def test_tape_table_svg_and_escaping():
    x = tg.Tensor(np.ones(3), requires_grad=True, name="<script>x</script>")
    code = compile("with tg.record(track_source=True, persistent=True) as t:\n    y = tg.exp(x * 2).sum()\n",
                   "<string>", "exec")  # fmt: skip
    scope = {"tg": tg, "x": x}
    exec(code, scope)
    t = scope["t"]
    out = t._repr_html_()
    page = Checked(out)
    assert "script" not in page.tags
    assert "&lt;string&gt;:2" in out and "&lt;script&gt;x&lt;/script&gt;" in out
    rows = [page.cells[i : i + 6] for i in range(6, len(page.cells), 6)]
    assert [r[0] for r in rows] == ["0", "1", "2"] and len(rows) == len(t)
    assert rows[0][1] == "t0 = multiply(<script>x</script>, 2)" and rows[1][4] == "24 B"  # exp keeps its output
    assert f"saved {t.saved_bytes()} B" in "".join(page.text) and rows[2][4] == "-"
    svg = ET.fromstring(t._repr_svg_())  # well-formed XML
    ns = "{http://www.w3.org/2000/svg}"
    labels = [e.text for e in svg.iter(ns + "text")]
    assert labels == ["<script>x</script>", "t0 = multiply(<script>x</script>, 2)", "t1 = exp(t0)", "t2 = sum(t1)"]
    assert len([p for p in svg.iter(ns + "path") if p.get("marker-end")]) == 3  # x -> t0 -> t1 -> t2
    t.release()


def test_a_long_tape_shows_its_ends():
    x = tg.Tensor(np.ones(2), requires_grad=True)
    with tg.record() as t:
        h = x
        for _ in range(viz.ROWS + 10):
            h = tg.tanh(h)
    page = Checked(t._repr_html_())
    text = "".join(page.text)
    assert "10 entries not shown" in text and f"{viz.ROWS + 10} entries" in text
    assert f"t{viz.ROWS + 9} = tanh" in text and f"t{viz.ROWS // 2} = tanh" not in text
    ET.fromstring(t._repr_svg_())
    t.release()


def test_module_summary_counts_and_escapes():
    model = tg.nn.Sequential(
        tg.nn.Linear(4, 3, rng=0),
        tg.nn.ReLU(),
        tg.nn.ModuleDict({"<b>head</b>": tg.nn.Linear(3, 2, bias=False, rng=1)}),
    )
    model[0].bias.requires_grad = False  # frozen: no longer a parameter (tapegrad's rule)
    out = model._repr_html_()
    page = Checked(out)
    assert "b" not in page.tags[page.tags.index("table") :]  # the key's <b> is text, not markup
    rows = [page.cells[i : i + 4] for i in range(4, len(page.cells), 4)]
    assert [r[1] for r in rows] == ["Sequential", "Linear", "ReLU", "ModuleDict", "Linear"]
    assert rows[1][2] == "weight (3, 4)" and rows[1][3] == "12" and rows[4][3] == "6" and rows[2][2] == "-"
    assert rows[4][0].strip() == "2.<b>head</b>"  # the dotted path, indented by depth
    total = sum(p.size for p in model.parameters())
    text = "".join(page.text)
    assert total == 18 and f"Total params: {total}" in text and f"Params size: {total * 8} B" in text
    bn = "".join(Checked(tg.nn.BatchNorm1d(3)._repr_html_()).text)
    assert "Total params: 6" in bn and "Buffers: 7 values" in bn  # running mean, var (3 each), batches seen


def test_compiled_shows_its_program_escaped():
    def step(x):
        return tg.where(x < 0, -x, x * 2)

    f = tg.compile(step, fuse=False)  # the program of NumPy calls, whether numba is installed or not
    assert "call it once" in "".join(Checked(f._repr_html_()).text)
    f(np.ones(3))
    out = f._repr_html_()
    assert "".join(Checked(out).text).count(f.source) == 1
    assert "x0 &lt; 0" in out or "less(" in out


def test_a_notebook_shows_them(tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="the notebook test needs nbformat (test extra)")
    nbclient = pytest.importorskip("nbclient", reason="the notebook test needs nbclient and ipykernel (test extra)")
    pytest.importorskip("ipykernel", reason="the notebook test needs ipykernel (test extra)")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = {c.metadata.get("tags", ["?"])[0]: c.outputs for c in nb.cells if c.cell_type == "code"}

    def data(tag, mime):
        found = [o["data"][mime] for o in outputs[tag] if o.get("output_type") == "execute_result"]
        assert found, f"cell {tag!r} displayed no {mime}: {outputs[tag]}"
        return found[0]

    page = Checked(data("tensor", "text/html"))
    assert page.cells == ["1", "2", "3"]
    page = Checked(data("tape", "text/html"))
    assert "t1 = sum(t0)" in page.cells
    assert ET.fromstring(data("tape", "image/svg+xml")).tag.endswith("svg")
    assert "Total params: 11" in "".join(Checked(data("model", "text/html")).text)
    assert "v1 = exp(x0)" in "".join(Checked(data("compiled", "text/html")).text)
    printed = "".join(o.get("text", "") for o in outputs["profile"] if o.get("output_type") == "stream")
    assert printed.splitlines()[1].split()[:2] == ["Name", "Calls"] and "matmul" in printed


def test_a_tape_with_an_op_of_several_outputs():
    a = tg.Tensor([[2.0, 1.0], [1.0, 2.0]], requires_grad=True)
    with tg.record() as t:
        w, v = tg.linalg.eigh(a)
        loss = (w * w).sum() + v[0, 0] ** 2
    assert len(t) == 6 and loss.requires_grad  # the loss holds the entries alive
    page = Checked(t._repr_html_())
    assert page.cells[6:10] == ["0", "t0.eigenvalues, t0.eigenvectors = eigh(in0)", "(2,2) -> (2,), (2,2)",
                                "float64, float64"]  # fmt: skip
    svg = ET.fromstring(t._repr_svg_())
    labels = [e.text for e in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert labels[0] == "in0" and "t0.eigenvalues" not in labels  # the outputs are the entry's, not inputs
    t.release()
