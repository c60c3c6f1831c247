"""The README's quick start is what CI runs, and its code blocks run."""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _quick_start():
    block = re.search(r"## Quick start\s+```bash\n(.*?)```", README, re.S)
    assert block, "README has no Quick start block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_quick_start_is_two_commands_and_ci_runs_them_verbatim():
    commands = _quick_start()
    assert len(commands) == 2
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in commands:
        assert command in ci, f"CI does not run the README's command: {command}"


def test_readme_python_blocks_run_in_order():
    # In a fresh interpreter: the blocks register ops, which must not leak into this test session.
    code = "\n".join(re.findall(r"```python\n(.*?)```", README, re.S))
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
