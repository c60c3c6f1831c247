"""The documentation's machinery: no code block goes unrun by mistake, every public name has its API entry,
and the figures quoted in prose are those of the committed runs.

conftest.py (at the repository root) runs the code blocks themselves; this file checks what it cannot see:
a block in a language it does not run, a public name missing from the API reference, a figure in a sentence.
With ``TAPEGRAD_SITE`` set to a built site (``.ci/run`` sets it after ``mkdocs build --strict``), or with mkdocs
installed, the built API pages are checked for an entry per public name too.
"""

import doctest
import importlib
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUN = {"python", "console", "bash"}  # the languages conftest.py runs
SHOWN = {"text"}  # shown, never run: diagrams and illustrations only
API = {  # every module of the API reference and its page
    "tapegrad": "tapegrad.md",
    "tapegrad.tape": "tape.md",
    "tapegrad.compile": "compile.md",
    "tapegrad.random": "random.md",
    "tapegrad.nn": "nn.md",
    "tapegrad.nn.functional": "nn.md",
    "tapegrad.optim": "optim.md",
    "tapegrad.debug": "debug.md",
    "tapegrad.viz": "viz.md",
    "tapegrad.explorer": "explorer.md",
    "tapegrad.testing": "testing.md",
    "tapegrad.strategies": "strategies.md",
    "tapegrad.backend": "backend.md",
    "tapegrad.ops": "ops.md",
    "tapegrad.linalg": "linalg.md",
    "tapegrad.fft": "fft.md",
    "tapegrad.numpy": "numpy.md",
    "tapegrad.scipy": "scipy.md",
    "tapegrad.scipy.special": "scipy.md",
    "tapegrad.scipy.stats": "scipy.md",
    "tapegrad.scipy.linalg": "scipy.md",
    "tapegrad.scipy.signal": "scipy.md",
    "tapegrad.scipy.integrate": "scipy.md",
    "tapegrad.scipy.misc": "scipy.md",
    "tapegrad.data": "data.md",
}


def _fences(text: str) -> list[tuple[int, int, str]]:
    """(first line, last line, language) of every fenced code block."""
    out, start, language = [], None, ""
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            if start is None:
                start, language = number, line.lstrip()[3:].strip().split(" ")[0]
            else:
                out.append((start, number, language))
                start = None
    return out


def _doc_conftest():
    """The repository root's conftest.py (which runs the pages' code blocks), as a module of its own name."""
    spec = importlib.util.spec_from_file_location("docs_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_doc_runner_reads_console_blocks_as_documented():
    pytest.importorskip("sybil")
    runner = _doc_conftest()
    assert doctest.testmod(runner).attempted >= 2 and doctest.testmod(runner).failed == 0
    with pytest.raises(ValueError, match="starts with a '\\$ ' command"):
        runner.parse_console("output before any command\n$ true\n")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_code_block_is_run_or_only_shown(page):
    sybil = pytest.importorskip("sybil")
    conftest = _doc_conftest()

    fences = _fences(page.read_text())
    for first, _, language in fences:
        assert language in RUN | SHOWN, (
            f"{page.name}:{first}: a ```{language or '(no language)'} block is neither run nor an illustration: "
            "write python, console or bash (run), or text for a diagram"
        )
    document = sybil.Document.parse(str(page), *conftest.parsers())
    starts = [example.line for example in document]
    # a code block's region starts at its fence, a doctest's examples inside it
    missed = [first for first, last, lang in fences if lang in RUN and not any(first <= s <= last for s in starts)]
    assert not missed, f"{page.name}: the code blocks at lines {missed} are not collected by conftest.py"


def test_every_text_block_is_an_illustration_not_an_output():
    # An output shown as text would never be checked: outputs belong in doctests or console blocks. The pages
    # named here hold drawings (the tape's life, the layers), a formula and a pasted benchmark run, as text on purpose.
    for page in PAGES:
        for first, _, language in _fences(page.read_text()):
            if language == "text":
                assert page.name in ("the-tape.md", "speed.md", "architecture.md", "complex.md"), (
                    f"{page.name}:{first}: show outputs checked"
                )


def _public(module_name: str) -> list[str]:
    module = importlib.import_module(module_name)
    return [n for n in getattr(module, "__all__", ()) if not n.startswith("_")]


def test_every_public_name_of_tapegrad_has_its_entry_in_the_api_reference():
    top = (ROOT / "docs" / "api" / "tapegrad.md").read_text()
    ops = set(_public("tapegrad.ops"))  # every op is on the ops page (tapegrad.ops), checked below
    for name in _public("tapegrad"):
        if name in ops:
            continue
        if f"tapegrad.{name}" in API:
            page = ROOT / "docs" / "api" / API[f"tapegrad.{name}"]
            assert f"::: tapegrad.{name}" in page.read_text(), f"{page.name} has no ::: tapegrad.{name} block"
        else:
            assert f"::: tapegrad.{name}\n" in top, (
                f"tapegrad.{name} is public (tapegrad.__all__) but docs/api/tapegrad.md has no "
                f"'::: tapegrad.{name}' block: add one under the right heading"
            )
    for module, page in API.items():
        if module == "tapegrad":
            continue  # its names have a block each, checked above
        assert f"::: {module}\n" in (ROOT / "docs" / "api" / page).read_text(), f"{page}: no ::: {module}"


def _site():
    if os.environ.get("TAPEGRAD_SITE"):
        return pathlib.Path(os.environ["TAPEGRAD_SITE"])
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    return None


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    built = _site()
    if built is None:
        built = tmp_path_factory.mktemp("site")
        done = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(built)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        )
        assert done.returncode == 0, done.stderr[-5000:]
    return built


@pytest.mark.parametrize("module", sorted(set(API) - {"tapegrad"}))
def test_the_built_api_pages_have_an_entry_per_public_name(site, module):
    html = (site / "api" / API[module].removesuffix(".md") / "index.html").read_text()
    missing = [n for n in _public(module) if f'id="{module}.{n}"' not in html]
    assert not missing, f"the API page of {module} has no entry for {missing}"


def test_the_built_top_level_page_has_an_entry_per_public_name(site):
    html = (site / "api" / "tapegrad" / "index.html").read_text()
    ops = set(_public("tapegrad.ops"))
    missing = [
        n
        for n in _public("tapegrad")
        if f"tapegrad.{n}" not in API and n not in ops and f'id="tapegrad.{n}"' not in html
    ]
    assert not missing, f"docs/api/tapegrad.md renders no entry for {missing}"


@pytest.mark.parametrize("name", ["tutorial", "digits-mlp", "compiled"])
def test_the_built_site_serves_the_explorer_pages_the_guide_embeds(site, name):
    served = site / "explorer" / f"{name}.html"
    assert served.read_text() == (ROOT / "docs" / "explorer" / f"{name}.html").read_text()
    guide = site / "guide" / "seeing-the-tape"
    embed = f'src="../../explorer/{name}.html"'
    assert embed in (guide / "index.html").read_text()
    assert (guide / "../../explorer" / f"{name}.html").resolve() == served.resolve()


# -- figures quoted in prose ----------------------------------------------------------------------------------
def _memory_figures() -> dict:
    """The figures the README and the memory page quote, computed from the committed run (docs/memory.json)."""
    run = json.loads((ROOT / "docs" / "memory.json").read_text())["engines"]
    tg, ng, pt = run["tapegrad"], run["node-graph"], run["pytorch-cpu"]
    rss = {name: r["rss_long_points"] for name, r in run.items()}
    growth = {name: (p[str(max(map(int, p)))] - p["10"]) / 1e3 for name, p in rss.items()}
    return {
        "bytes per kept loss": f"**{tg['history_slope']:,.0f} B**",
        "against the node graph": f"**{ng['history_slope'] / tg['history_slope']:,.0f}x less**",
        "tapegrad's peak": f"**{tg['peak'] / tg['floor']:.2f}x**",
        "the node graph's peak": f"**{ng['peak'] / ng['floor']:.2f}x**",
        "the node graph keeps, in activations": f"**{ng['history_slope'] / ng['activations_small']:.1f} times**",
        "PyTorch keeps per step": f"**{pt['history_slope'] / 1e3:.1f} kB**",
        "checkpointed peak": f"**{tg['deep_ckpt_peak'] / tg['deep_peak']:.2f}x**",
        "RSS growth": f"**{max(growth.values()):+.0f} kB**",
    }


@pytest.mark.parametrize("key", list(_memory_figures()))
def test_the_memory_page_quotes_the_committed_run(key):
    figure = _memory_figures()[key]
    assert figure in (ROOT / "docs" / "benchmarks" / "memory.md").read_text(), f"{key}: the run says {figure}"


def test_the_memory_table_is_the_committed_runs():
    sys.path.insert(0, str(ROOT))
    memory = importlib.import_module("benchmarks.memory")
    run = memory.from_json(json.loads((ROOT / "docs" / "memory.json").read_text()))
    assert memory.table(run) in (ROOT / "docs" / "benchmarks" / "memory.md").read_text()


def test_the_readme_quotes_the_committed_memory_run():
    readme = (ROOT / "README.md").read_text()
    figures = _memory_figures()
    for key in ("bytes per kept loss", "against the node graph", "tapegrad's peak", "the node graph's peak"):
        assert figures[key] in readme, f"README: {key} is {figures[key]} in docs/memory.json"


def test_the_readme_quotes_the_committed_speed_run():
    speed = (ROOT / "docs" / "benchmarks" / "speed.md").read_text()
    readme = (ROOT / "README.md").read_text()
    for workload, engine, reference, label in (
        ("mlp-float64", "tapegrad", "numpy-tight", "the tight hand-written NumPy step"),
        ("chain", "tapegrad", "torch", "PyTorch"),
        ("chain", "tapegrad-native", "torch", "PyTorch with its optional compiled hot path"),
    ):
        ratio = re.search(rf"- {workload}: {engine} / {reference} = ([0-9.]+)", speed).group(1)
        assert f"**{ratio}x** {label}" in readme, f"README: {workload}, {engine} / {reference} = {ratio} (speed.md)"


def test_the_digits_figures_in_prose_are_the_run_the_example_page_checks():
    page = (ROOT / "docs" / "examples" / "classify-digits.md").read_text()
    # the run, checked by conftest (its time per step, on the next line, varies)
    shown = re.search(r"test accuracy 0\.(\d\d)(\d\d) \((\d+)/(\d+)\)\n(?:.* per training step .*\n)?```", page)
    assert shown, "the digits page shows no final test accuracy"
    percent, right, total = f"{shown.group(1)}.{shown.group(2)}%", shown.group(3), shown.group(4)
    assert f"**{percent}** test accuracy ({right}/{total})" in (ROOT / "README.md").read_text()
    assert f"**{percent} test accuracy** ({right} of the {total} held-out images)" in page


def test_the_training_figures_in_the_readme_are_the_runs_the_example_pages_check():
    readme = (ROOT / "README.md").read_text()
    cnn = (ROOT / "docs" / "examples" / "cnn-digits.md").read_text()
    # the default run's last epoch, which the page's console block (run by the doc tests) shows
    accuracy = float(re.search(r"epoch +(\d+)/\1 +loss [0-9.]+ +test accuracy (0\.\d+)\n", cnn).group(2))
    total = int(re.search(r"(\d+) test images", cnn).group(1))
    right = round(accuracy * total)
    # a float32 run: stated as "about", to one decimal, beside the count on the page's machine
    assert f"about **{100 * accuracy:.1f}%** test accuracy ({right} of {total} images" in readme
    assert f"about **{100 * accuracy:.1f}% test accuracy** ({right} of the\n{total}" in cnn
    lm = (ROOT / "docs" / "examples" / "char-lm.md").read_text()
    held_out = float(
        re.search(
            r"```console\n\$ python examples/char_lm.py --steps 200\n(?:.*\n)*?step +200 .* held out ([0-9.]+)", lm
        ).group(1)
    )
    assert f"**{held_out:.2f} bits per character**" in readme
    assert f"**{held_out:.2f} bits per\ncharacter**" in lm or f"**{held_out:.2f} bits per character**" in lm
