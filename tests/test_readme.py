"""The README's quick start is what CI runs (its code blocks are run by conftest.py, like every page's)."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _quick_start():
    block = re.search(r"## Quick start\s+(?:<!--.*?-->\s+)?```bash\n(.*?)```", README, re.S)
    assert block, "README has no Quick start block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_quick_start_is_two_commands_and_ci_runs_them_first_verbatim():
    commands = _quick_start()
    assert commands == [
        "python -m pip install -e . && python examples/linear_regression.py",
        'python -m pip install -e ".[test]" && python -m pytest',
    ]
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    ci = [line for line in ci if line not in ("set -euo pipefail", 'cd "$(dirname "$0")/.."')]
    ci = [line for line in ci if not line.startswith('if [ "$(id -u)" = 0 ] && command -v apt-get')]  # system packages
    assert ci[:2] == commands, "CI's first two commands are not the README's quick start"


def test_readme_links_into_the_docs_resolve():
    links = re.findall(r"\]\((docs/[^)#]+)", README)
    assert len(links) >= 10
    for link in links:
        assert (ROOT / link).exists(), f"README links to {link}, which does not exist"


def test_the_suite_runs_one_blas_thread_per_test_process(pytestconfig):
    # The README's test command runs two processes on two cores; conftest.py limits each one's BLAS threads,
    # which only works if it does so before NumPy loads.
    root = next(
        p for p in pytestconfig.pluginmanager.get_plugins() if getattr(p, "__file__", None) == str(ROOT / "conftest.py")
    )
    assert root.BLAS_LIMITED_BEFORE_NUMPY, "NumPy was imported before conftest.py limited the BLAS threads"
    threadpoolctl = pytest.importorskip("threadpoolctl")  # installed with scikit-learn, in the test extra
    blas = [pool for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas"]
    assert blas, "threadpoolctl finds no BLAS"
    for pool in blas:
        variable = "MKL_NUM_THREADS" if pool["internal_api"] == "mkl" else "OPENBLAS_NUM_THREADS"
        assert variable in os.environ, f"conftest.py sets no {variable}"
        assert pool["num_threads"] == int(os.environ[variable]), pool


def test_the_suites_commands_reuse_compiled_bytecode_and_write_none_into_the_checkout():
    # conftest.py: where PYTHONDONTWRITEBYTECODE is set, the commands the suite starts share one bytecode cache
    # in a temporary folder, rather than each compiling tapegrad's source again
    probe = "import sys; print(sys.dont_write_bytecode, sys.pycache_prefix)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    writes, prefix = done.stdout.split()
    assert writes == "False", "the suite's commands compile tapegrad afresh at every start"
    if prefix != "None":
        assert not pathlib.Path(prefix).resolve().is_relative_to(ROOT), prefix
