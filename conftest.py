"""Every code block of the README and of the documentation (docs/) is a test, collected by sybil.

- ```` ```python ```` blocks run in order, each page in a namespace of its own: a page's blocks may use what its
  earlier blocks defined, never what another page did. A block that starts with ``>>>`` is a doctest: what it
  shows is what it must print (ELLIPSIS and NORMALIZE_WHITESPACE on).
- ```` ```console ```` blocks are shell sessions: each ``$ command`` runs in the repository root, and the lines
  under it are the output it must print (stdout, compared as a doctest compares; ``...`` skips a part; no
  lines shown: only its success is checked). A command shown failing ends its output with a line
  ``[exit status N]``: it must exit with N, and what it printed to stdout and then stderr must match.
- ```` ```bash ```` blocks run as one script that must succeed.
- ``<!-- skip: next "why" -->`` before a block keeps it from running (installs, benchmarks of minutes, a GPU);
  the reason is shown with the skipped test.
- ``<!-- tolerance: 0.5% "why" -->`` right before a console block compares its decimal numbers (``0.9916``,
  ``1.5221``, not integers) within that relative tolerance, for output that depends on the CPU: float32 matrix
  products take other BLAS kernels on another processor, and a training run's figures move with them. The
  page's text says so too; every other character still compares exactly.

Commands run with ``TMPDIR`` set to a folder of their page's own, so the examples' default outputs (under the
temporary directory) land there, with ``python`` meaning the interpreter that runs the tests, and with this
checkout first on ``PYTHONPATH`` (so that the pages describe this checkout's tapegrad, whatever is installed). Ops that a
page registers are removed from ``tapegrad.REGISTRY`` when its last block has run, so no page leaks into
another or into the rest of the suite.
"""

from __future__ import annotations

import doctest
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

# Two test processes share the cores (-n 2, setup.cfg's addopts): a BLAS that starts a thread per core in each
# oversubscribes them, and OpenBLAS's idle threads spin while they wait. One BLAS thread a process, set before
# NumPy loads (it reads these once), and inherited by the pages' commands: the suite took 353 s instead of
# 415 s on 2 cores. A value the caller set is kept.
for _variable in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
BLAS_LIMITED_BEFORE_NUMPY = "numpy" not in sys.modules  # tests/test_readme.py checks it

# The suite starts Python a few hundred times (the pages' commands, every script's --help and fast run), and each
# start imports tapegrad. Where the environment says not to write bytecode (PYTHONDONTWRITEBYTECODE), each one
# compiled tapegrad's source afresh, 0.45 s of its 0.5 s import. The suite's processes share one bytecode cache
# instead, in a temporary folder removed when the run ends: still nothing is written into the checkout, and the
# suite took 294 s instead of 353 s on 2 cores.
if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
    import atexit

    _pycache = tempfile.mkdtemp(prefix="tapegrad-pycache-")
    atexit.register(shutil.rmtree, _pycache, ignore_errors=True)
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = _pycache
    sys.dont_write_bytecode = False  # this process too (its later imports), into the same folder
    sys.pycache_prefix = _pycache

ROOT = pathlib.Path(__file__).resolve().parent
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
DOC_PATTERNS = ["README.md", "docs/*.md", "docs/*/*.md"]

try:
    import griffe  # noqa: F401  (the docs extra: the API reference's griffe extensions import it)
except ImportError:
    collect_ignore = ["docs/_ext"]

try:
    from sybil import Sybil
    from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser
except ImportError:  # the test extra installs sybil; without it the documentation is not collected
    Sybil = None


def run_command(command: str, namespace: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run one shell command of a page in the repository root, as a reader would type it."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["TMPDIR"] = namespace["_tmpdir"]
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])  # this checkout's tapegrad
    env.pop("PYTHONSTARTUP", None)
    return subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def parse_console(source: str) -> list[tuple[str, str]]:
    """``[(command, expected output), ...]`` from a console block: ``$ `` lines and the lines under them.

    >>> parse_console("$ echo hi\\nhi\\n$ true\\n")
    [('echo hi', 'hi\\n'), ('true', '')]
    """
    steps: list[tuple[str, list[str]]] = []
    for line in source.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"a console block starts with a '$ ' command, not {line!r}")
    return [(cmd, "".join(out + "\n" for out in lines)) for cmd, lines in steps]


def _failure(command: str, done: subprocess.CompletedProcess, why: str) -> str:
    return (
        f"$ {command}\n{why} (exit status {done.returncode})\n--- stdout ---\n{done.stdout}"
        f"--- stderr (last 3000 characters) ---\n{done.stderr[-3000:]}"
    )


def expected_status(want: str) -> tuple[str, int]:
    """The shown output without its ``[exit status N]`` line, and N (0 when there is none).

    >>> expected_status("no such file\\n[exit status 1]\\n")
    ('no such file\\n', 1)
    """
    lines = want.rstrip("\n").split("\n")
    last = lines[-1].strip()
    if last.startswith("[exit status ") and last.endswith("]"):
        return "".join(line + "\n" for line in lines[:-1]), int(last[len("[exit status ") : -1])
    return want, 0


_TOLERANCE = re.compile(r'<!-- tolerance: ([0-9.]+)% "[^"]+" -->\s*\Z')
_DECIMAL = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")


def tolerance_before(text: str) -> float | None:
    """The relative tolerance a ``<!-- tolerance: X% "why" -->`` comment right at the end of ``text`` states.

    >>> tolerance_before('intro\\n<!-- tolerance: 0.5% "BLAS kernels differ by CPU" -->\\n')
    0.005
    >>> tolerance_before("no comment here\\n") is None
    True
    """
    tail = text[-400:]
    found = _TOLERANCE.search(tail)
    if found is None:
        if "<!-- tolerance" in tail.rsplit("```", 1)[-1]:
            raise ValueError('a tolerance comment is written <!-- tolerance: 0.5% "why" --> right before its block')
        return None
    return float(found.group(1)) / 100


def numbers_differ(want: str, got: str, rel: float) -> list[str] | None:
    """Where ``got`` matches ``want`` but for its decimal numbers, the numbers outside ``rel`` (an empty list:
    all within it); None where the text around the numbers differs.

    >>> numbers_differ("loss 1.5221  accuracy 0.9916\\n", "loss 1.5230  accuracy 0.9944\\n", 0.005)
    []
    >>> numbers_differ("loss 1.5221\\n", "loss 1.6000\\n", 0.005)
    ['1.6000 for 1.5221']
    >>> numbers_differ("epoch 20 loss 1.5221\\n", "epoch 21 loss 1.5221\\n", 0.005) is None
    True
    """
    pattern, wanted = [], []
    for piece in re.split(r"(\.\.\.|" + _DECIMAL.pattern + ")", " ".join(want.split())):
        if piece == "...":
            pattern.append(r".*?")
        elif _DECIMAL.fullmatch(piece):
            pattern.append("(" + _DECIMAL.pattern + ")")
            wanted.append(float(piece))
        else:
            pattern.append(re.escape(piece))
    match = re.fullmatch("".join(pattern), " ".join(got.split()), re.DOTALL)
    if match is None:
        return None
    return [f"{shown} for {w}" for shown, w in zip(match.groups(), wanted) if abs(float(shown) - w) > rel * abs(w)]


def evaluate_console(example) -> str | None:
    checker = doctest.OutputChecker()
    rel = tolerance_before(example.document.text[: example.start])
    for command, shown in parse_console(example.parsed):
        want, status = expected_status(shown)
        done = run_command(command, example.namespace)
        if done.returncode != status:
            return _failure(command, done, f"exited with {done.returncode}, not {status} as the page shows")
        got = done.stdout if status == 0 else done.stdout + done.stderr
        if not want.strip() or checker.check_output(want, got, FLAGS):
            continue
        outside = numbers_differ(want, got, rel) if rel is not None else None
        if outside == []:
            continue
        diff = checker.output_difference(doctest.Example(command, want), got, FLAGS)
        if outside:
            diff = f"numbers outside the page's {100 * rel:g}% tolerance: {', '.join(outside)}\n" + diff
        return _failure(command, done, "printed something else than the page shows:\n" + diff)
    return None


def evaluate_bash(example) -> str | None:
    script = "set -euo pipefail\n" + example.parsed
    done = run_command(script, example.namespace)
    if done.returncode != 0:
        return _failure(shlex.quote(example.parsed.strip()), done, "failed")
    return None


def _setup(namespace: dict) -> None:
    import tapegrad

    namespace["_tmpdir"] = tempfile.mkdtemp(prefix="tapegrad-doc-")
    namespace["_registered"] = (set(tapegrad.REGISTRY), set(tapegrad.NONDIFF))


def _teardown(namespace: dict) -> None:
    import tapegrad

    ops, nondiff = namespace["_registered"]
    for name in set(tapegrad.REGISTRY) - ops:
        del tapegrad.REGISTRY[name]
    for name in set(tapegrad.NONDIFF) - nondiff:
        del tapegrad.NONDIFF[name]
    shutil.rmtree(namespace["_tmpdir"], ignore_errors=True)


def parsers() -> list:
    """The parsers of a page: what tests/test_docs.py also uses to check that no block goes unseen."""
    return [
        PythonCodeBlockParser(doctest_optionflags=FLAGS),
        CodeBlockParser("console", evaluate_console),
        CodeBlockParser("bash", evaluate_bash),
        SkipParser(),
    ]


if Sybil is not None:
    pytest_collect_file = Sybil(
        parsers=parsers(), patterns=DOC_PATTERNS, path=".", setup=_setup, teardown=_teardown, name="docs"
    ).pytest()
