"""See the tape in the browser: the explorer's pages of the docs' tour, and their screenshots.

    python examples/seeing_the_tape.py                 # writes the pages into a temporary folder, prints where
    python examples/seeing_the_tape.py --out pages     # ...into ./pages
    python examples/seeing_the_tape.py --update-docs   # rewrites the committed docs/explorer/ pages and screenshots

Three pages: the tutorial's first example (``x**2 + 3x + 1`` at 2: value 11, derivative 7), one training step
of the digits MLP (``examples/classify_digits.py``'s model, on a batch of 16 images, with the node-graph design's
memory curve as a toggle), and the quick start's compiled gradient step with its program beside the tape.

Screenshots (``--update-docs``) are taken by headless Chromium through selenium: ``apt-get install chromium
chromium-driver`` and ``pip install -e ".[browser]"``.
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import shutil
import tempfile

import numpy as np

import tapegrad as tg
from tapegrad import nn

HERE = pathlib.Path(__file__).resolve().parent
DOCS = HERE.parent / "docs" / "explorer"


def first_example(x):
    return x**2 + 3 * x + 1


def digits_step():
    """One step of the digits MLP: its model (weights named as the model names them), a batch, the loss."""
    spec = importlib.util.spec_from_file_location("classify_digits", HERE / "classify_digits.py")
    digits = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(digits)
    x_train, y_train, _, _ = digits.load_data(seed=0)
    model = digits.build_model(hidden=32, dropout=0.1, seed=0)
    for name, p in model.named_parameters():
        p.name = name

    def digits_loss(images, labels):
        return nn.cross_entropy(model(images), labels)

    return digits_loss, tg.Tensor(x_train[:16], name="images"), y_train[:16]


def linear_loss(params, X, y):
    return ((X @ params["W"] + params["b"] - y) ** 2).mean()


def compiled_step():
    rng = np.random.default_rng(0)
    params = {"W": np.zeros((3, 1)), "b": np.zeros(1)}
    X = rng.standard_normal((64, 3))
    y = X @ np.array([[2.0], [-1.0], [0.5]]) + 0.1 * rng.standard_normal((64, 1))
    return tg.compile(tg.value_and_grad(linear_loss)), params, X, y


def pages(out: pathlib.Path) -> dict:
    """Write the three pages into ``out``; returns name -> Explorer."""
    out.mkdir(parents=True, exist_ok=True)
    loss, images, labels = digits_step()
    step, params, X, y = compiled_step()
    return {
        "tutorial": tg.explore(first_example, 2.0, path=out / "tutorial.html"),
        "digits-mlp": tg.explore(loss, images, labels, path=out / "digits-mlp.html", nodegraph=True),
        "compiled": tg.explore(step, params, X, y, path=out / "compiled.html"),
    }


# What each screenshot shows: the step of the replay, and whether the node-graph curve is on.
SHOTS = {"tutorial": (6, False), "digits-mlp": (None, True), "compiled": (7, False)}


def open_browser(width: int = 1400, height: int = 1000):
    """Headless Chromium through selenium (the browser tests use it too); None where either is missing."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        return None
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


def screenshots(out: pathlib.Path) -> list:
    """Each page of ``out`` at the step SHOTS says, as a PNG beside it."""
    browser = open_browser(1400, 900)
    if browser is None:
        raise SystemExit(
            'screenshots need selenium and Chromium: pip install -e ".[browser]" and '
            "apt-get install chromium chromium-driver"
        )
    written = []
    try:
        for name, (step, nodegraph) in SHOTS.items():
            browser.get((out / f"{name}.html").as_uri())
            browser.execute_script("explorer.go(arguments[0])", step if step is not None else 10**6)
            if nodegraph:
                browser.find_element("id", "nodegraph-toggle").click()
            png = out / f"{name}.png"
            browser.save_screenshot(str(png))
            written.append(png)
    finally:
        browser.quit()
    return written


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--out", type=pathlib.Path, default=None, help="folder for the pages; None: a temporary one")
    parser.add_argument("--update-docs", action="store_true", help="rewrite docs/explorer/ (pages and screenshots)")
    args = parser.parse_args(argv)
    if args.out and args.update_docs:
        parser.error("--out and --update-docs both say where to write: pass one")
    out = DOCS if args.update_docs else (args.out or pathlib.Path(tempfile.mkdtemp(prefix="tapegrad-explorer-")))
    explorers = pages(out)
    for name, ex in explorers.items():
        print(f"{name}: {ex.path} ({len(ex.data['rows'])} entries)")
    if args.update_docs:
        for png in screenshots(out):
            print(f"screenshot: {png}")


if __name__ == "__main__":
    main()
