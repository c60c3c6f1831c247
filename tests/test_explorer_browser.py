"""The explorer's page in a real headless browser (Debian's chromium and chromium-driver, through selenium): it loads
from file:// with no console error, steps through a whole replay with the keyboard and the buttons, and the
numbers it shows are the tape's. Skipped, saying what is missing, where the browser or selenium is absent:
``apt-get install chromium chromium-driver`` and ``pip install -e ".[browser]"`` (.ci/run installs both)."""

import importlib.util
import pathlib
import shutil

import numpy as np
import pytest

import tapegrad as tg

webdriver = pytest.importorskip(
    "selenium.webdriver", reason='selenium is not installed: pip install -e ".[browser]" to test the explorer\'s page'
)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
DRIVER = shutil.which("chromedriver")
if CHROMIUM is None or DRIVER is None:
    pytest.skip(
        "chromium or chromedriver is not installed: apt-get install chromium chromium-driver to test the explorer's "
        "page in a browser",
        allow_module_level=True,
    )

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402


def _example():
    root = pathlib.Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("seeing_the_tape", root / "examples" / "seeing_the_tape.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def browser():
    driver = _example().open_browser()  # headless Chromium, as the docs' screenshots are taken
    yield driver
    driver.quit()


def _load(browser, ex, tmp_path, name="tape.html"):
    path = tmp_path / name
    ex.save(path)
    browser.get_log("browser")  # drop earlier pages' messages: what is logged from here on is this page's
    browser.get(path.as_uri())
    return path


def _errors(browser):
    return [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def _shown(browser, element_id):
    """The numbers an array box of the page shows (its code block's text, parsed)."""
    return _numbers(browser.find_element(By.CSS_SELECTOR, f"#{element_id} code").text)


def _numbers(text):
    return np.array([float(v) for v in text.replace("[", " ").replace("]", " ").replace(",", " ").split()])


def _f(x, w, b):
    return (tg.tanh(x @ w + b) * x.sum(axis=1, keepdims=True)).mean()


def test_the_page_steps_through_a_replay_and_shows_the_tapes_numbers(browser, tmp_path):
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((3, 2)), rng.standard_normal((2, 2)), rng.standard_normal(2)
    ex = tg.explore(_f, x, w, b, nodegraph=True)
    _load(browser, ex, tmp_path)
    assert _errors(browser) == []
    n, m = len(ex.data["rows"]), len(ex.data["steps"])
    assert browser.execute_script("return [explorer.forward, explorer.backward, explorer.last]") == [n, m, n + m]
    t0 = x @ w
    eager = [t0, t0 + b, np.tanh(t0 + b), x.sum(axis=1, keepdims=True)]
    eager += [eager[2] * eager[3], (eager[2] * eager[3]).mean()]
    body = browser.find_element(By.TAG_NAME, "body")
    for k in range(n):  # forward, entry by entry, with the keyboard
        body.send_keys(Keys.ARROW_RIGHT)
        assert browser.execute_script("return explorer.state()") == k + 1
        assert browser.find_element(By.ID, f"row-{k}").get_attribute("class").split().count("current") == 1
        assert "current" in browser.find_element(By.ID, f"node-{k}").get_attribute("class")
        np.testing.assert_allclose(_shown(browser, "value-now"), np.ravel(eager[k]), rtol=1e-5)
    grads = tg.grad(_f, argnums=(0, 1, 2))(x, w, b)
    for j in range(m):  # backward, entry by entry, with the button
        browser.find_element(By.ID, "btn-next").click()
        step = ex.data["steps"][j]
        assert browser.find_element(By.ID, "details-title").text.startswith(f"Backward: [{step['entry']}]")
        np.testing.assert_allclose(_shown(browser, "adjoint-now"), step["adjoint"]["values"], rtol=1e-5)
        assert "freed" in browser.find_element(By.ID, f"row-{n - 1}").get_attribute("class") or j == 0
    shown = browser.find_elements(By.CSS_SELECTOR, "#details code.leaf-grad")
    for code, g in zip(shown, grads):  # the leaves' gradients, at the end, are tg.grad's
        np.testing.assert_allclose(_numbers(code.text), np.ravel(g), rtol=1e-5)
    body.send_keys(Keys.HOME)
    assert browser.execute_script("return explorer.state()") == 0
    body.send_keys(Keys.END)
    assert browser.execute_script("return explorer.state()") == n + m
    lines = browser.find_elements(By.CSS_SELECTOR, "#memory polyline")
    browser.find_element(By.ID, "nodegraph-toggle").click()
    assert len(browser.find_elements(By.CSS_SELECTOR, "#memory polyline.nodegraph")) == 1
    assert len(browser.find_elements(By.CSS_SELECTOR, "#memory polyline")) == len(lines) + 1
    assert _errors(browser) == []


def test_clicking_the_graph_and_the_table_selects_the_entry(browser, tmp_path):
    ex = tg.explore(lambda x: (tg.exp(x) * x).sum(), np.array([0.5, 1.5]))
    _load(browser, ex, tmp_path)
    browser.find_element(By.ID, "node-1").click()
    assert browser.execute_script("return explorer.state()") == 2
    np.testing.assert_allclose(_shown(browser, "value-now"), np.exp([0.5, 1.5]) * [0.5, 1.5], rtol=1e-5)
    browser.find_element(By.ID, "row-0").click()
    assert "current" in browser.find_element(By.ID, "row-0").get_attribute("class")
    assert _errors(browser) == []


def test_nan_is_marked_at_the_entry_that_made_it(browser, tmp_path):
    with np.errstate(all="ignore"):
        ex = tg.explore(lambda x: (tg.log(x) * 2.0).sum(), np.array([1.0, -1.0]))
    _load(browser, ex, tmp_path)
    made = [r.get_attribute("id") for r in browser.find_elements(By.CSS_SELECTOR, "tr.entry") if "made NaN" in r.text]
    assert made == ["row-0"]  # log made it; the product and the sum only carried it
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.nonfinite")) == 3
    assert _errors(browser) == []


def test_a_compiled_programs_lines_follow_the_replay(browser, tmp_path):
    def loss(w, X):
        return (tg.tanh(X @ w) ** 2).sum()

    step = tg.compile(tg.grad(loss))
    ex = tg.explore(step, np.ones((2, 1)), np.arange(6.0).reshape(3, 2))
    _load(browser, ex, tmp_path)
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.ARROW_RIGHT)  # forward entry 0: the matmul's line of the program
    current = browser.find_elements(By.CSS_SELECTOR, "#program .line.current")
    assert [c.text.split("#")[1].split()[0] for c in current] == ["matmul"]
    body.send_keys(Keys.END)  # the last backward step: the rules of entry 0 (the matmul)
    current = browser.find_elements(By.CSS_SELECTOR, "#program .line.current")
    assert current and all("(grad of matmul)" in c.text for c in current)
    assert _errors(browser) == []


def test_the_inline_view_a_notebook_shows_runs_in_its_iframe(browser, tmp_path):
    ex = tg.explore(lambda x: x**2 + 3 * x + 1, 2.0)
    host = tmp_path / "notebook.html"
    host.write_text(f"<!doctype html><html><body><p>a notebook's output cell</p>{ex.iframe()}</body></html>")
    browser.get_log("browser")
    browser.get(host.as_uri())
    browser.switch_to.frame(browser.find_element(By.TAG_NAME, "iframe"))
    try:
        browser.find_element(By.ID, "btn-end").click()
        np.testing.assert_allclose(_numbers(browser.find_element(By.CSS_SELECTOR, "code.leaf-grad").text), [7.0])
    finally:
        browser.switch_to.default_content()
    assert _errors(browser) == []


def test_an_op_with_several_outputs_shows_each_one(browser, tmp_path):
    def loss(a):
        w, v = tg.linalg.eigh(a)
        return (w * w).sum() + (v[:, 0] ** 2).sum()

    a = np.array([[2.0, 0.5], [0.5, 1.0]])
    ex = tg.explore(loss, a)
    _load(browser, ex, tmp_path)
    assert browser.find_element(By.ID, "row-0").text.startswith("0 t0.eigenvalues, t0.eigenvectors = eigh(a)")
    browser.execute_script("explorer.go(explorer.last)")
    values = browser.find_elements(By.CSS_SELECTOR, "#details code.entry-value")
    np.testing.assert_allclose(_numbers(values[0].text), np.linalg.eigh(a)[0], rtol=1e-5)
    assert len(values) == 2
    np.testing.assert_allclose(_shown(browser, "adjoint-now"), 2 * np.linalg.eigh(a)[0], rtol=1e-5)
    assert _errors(browser) == []
