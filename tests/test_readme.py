"""The README's quick start is what CI runs (its code blocks are run by conftest.py, like every page's)."""

import pathlib
import re

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
