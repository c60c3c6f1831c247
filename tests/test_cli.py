"""Every example and benchmark has an honest command line: ``--help`` shows each flag's default and runs
nothing, impossible requests stop with a message saying what to do, and runs with the default output
location leave the checkout as it was."""

import doctest
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPTS = sorted(
    p.relative_to(ROOT).as_posix()
    for p in [*(ROOT / "examples").glob("*.py"), *(ROOT / "benchmarks").glob("*.py")]
    if p.name != "__init__.py"
)
MODULES = [f"benchmarks.{pathlib.Path(s).stem}" for s in SCRIPTS if s.startswith("benchmarks/")]


def _run(args, tmp_path, cwd=ROOT, timeout=120):
    path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])  # this checkout's tapegrad
    env = {**os.environ, "TMPDIR": str(tmp_path), "COLUMNS": "120", "PYTHONPATH": path}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _options(help_text: str) -> list[str]:
    """Each option's help block (from its '  -x, --flag' line to the next), the --help line left out."""
    lines = help_text.split("options:", 1)[1].splitlines()
    blocks = []
    for line in lines:
        if line.startswith("  -"):
            blocks.append(line)
        elif blocks and line.startswith("   "):
            blocks[-1] += " " + line.strip()
        elif line.strip() and not line.startswith(" "):
            break  # the epilog
    return [b for b in blocks if not b.lstrip().startswith("-h, --help")]


@pytest.mark.parametrize("how", ["script", "module"])
@pytest.mark.parametrize("script", SCRIPTS)
def test_help_shows_every_default_and_runs_nothing(script, how, tmp_path):
    if how == "module":
        if not script.startswith("benchmarks/"):
            pytest.skip("examples run as scripts")
        args = ["-m", script.removesuffix(".py").replace("/", "."), "--help"]
    else:
        args = [script, "--help"]
    done = _run(args, tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:"), done.stdout[:300]
    for block in _options(done.stdout):
        assert "(default:" in block, f"{script}: no default shown for {block!r}"
        words = re.sub(r"\{[^}]*\}|\[[^]]*\]|--?[\w-]+|\b[A-Z_]+\b|,", " ", block.split("(default:")[0])
        assert re.search(r"[a-z]{2,}", words), f"{script}: no help text in {block!r}"
    assert not any(tmp_path.iterdir()), f"{script} --help wrote {list(tmp_path.iterdir())}"


def test_the_help_of_every_runnable_script_documents_its_flags(tmp_path):
    # The scripts with flags beyond --help: a regression that drops the formatter shows here as no defaults.
    for script in ("examples/classify_digits.py", "examples/newton.py", "benchmarks/memory.py", "benchmarks/speed.py"):
        help_text = _run([script, "--help"], tmp_path, timeout=60).stdout
        assert len(_options(help_text)) >= 5, script


def _porcelain() -> str:
    done = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all", "--ignored=no"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip("not a git checkout")
    return done.stdout


# Each example and benchmark in a fast mode, with no flag saying where to write: the default location.
FAST_RUNS = [
    ["examples/linear_regression.py", "--epochs", "5"],
    ["examples/newton.py", "--n", "200", "--d", "5", "--gd-steps", "5"],
    ["examples/reading_the_tape.py"],
    ["examples/bayesian_neural_net.py", "--steps", "20", "--no-plot", "--quiet"],
    ["examples/classify_digits.py", "--epochs", "1", "--no-progress"],
    ["examples/classify_digits.py", "--epochs", "1", "--no-progress", "--compile"],
    ["examples/cnn_digits.py", "--epochs", "1", "--width", "4", "--quiet"],
    ["examples/char_lm.py", "--steps", "4", "--eval-every", "2", "--width", "16", "--seq-len", "12", "--quiet"],
    ["examples/gaussian_process.py", "--n", "10", "--maxiter", "5", "--quiet"],
    [
        "examples/dask_logistic.py",
        "--rows",
        "4000",
        "--features",
        "4",
        "--chunk-rows",
        "1000",
        "--lbfgs-iters",
        "2",
        "--adam-steps",
        "2",
        "--subsample-rows",
        "1000",
        "--scheduler",
        "threads",
        "--no-throughput",
        "--quiet",
    ],
    ["benchmarks/conv.py", "--batch", "2", "--rounds", "1", "--dtype", "float64"],
    ["-m", "benchmarks.coverage"],
    ["-m", "benchmarks.speed", "--rounds", "1", "--only", "chain", "--engines", "compiled"],
    ["benchmarks/functional.py", "--rounds", "1"],
    ["-m", "benchmarks.mlp_gap", "--tiny", "--rounds", "1"],
    ["-m", "benchmarks.mlp_gap", "--cold-cache", "1", "--rounds", "2"],
    ["-m", "benchmarks.tape_floor", "--rounds", "2"],
    ["-m", "benchmarks.speed", "--rounds", "1", "--only", "chain", "--engines", "tapegrad"],
    ["-m", "benchmarks.memory", "--replot", "docs/memory.json"],
    ["benchmarks/gpu_check.py"],
    ["benchmarks/overhead.py", "--ref", "HEAD", "--rounds", "2", "--only", "chain"],
    ["-m", "benchmarks.numpy_dispatch", "--ref", "HEAD", "--rounds", "2", "--calls", "50"],
    ["benchmarks/debug_overhead.py", "--baseline", ".", "--rounds", "2"],
]


# What a run needs beyond NumPy (the examples' and the benchmarks' extras): skipped, never failed, without it.
NEEDS = {
    "classify_digits": ["sklearn"],
    "cnn_digits": ["sklearn", "tqdm"],
    "char_lm": ["tqdm"],
    "gaussian_process": ["scipy"],
    "dask_logistic": ["dask", "distributed"],
    "benchmarks.coverage": ["autograd"],
    "benchmarks/conv.py": ["torch"],  # a comparison with PyTorch: without it, it says so (the test below)
}


@pytest.mark.parametrize("cwd", ["root", "examples"])
@pytest.mark.parametrize("args", FAST_RUNS, ids=lambda a: " ".join(a[:2]))
def test_default_outputs_leave_the_checkout_unchanged(args, cwd, tmp_path):
    for script, modules in NEEDS.items():
        if any(script in a for a in args[:2]):
            for module in modules:
                pytest.importorskip(module)
    if cwd == "examples" and not args[0].startswith("examples/"):
        pytest.skip("the benchmarks run from the repository root (python -m benchmarks.*, as their pages say)")
    where = ROOT if cwd == "root" else ROOT / "examples"
    args = [str(ROOT / a) if a.endswith(".py") else a for a in args]
    if cwd == "examples":
        args = [a if a != "." else str(ROOT) for a in args]
    before = _porcelain()
    done = _run(args, tmp_path, cwd=where)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _porcelain() == before, f"{' '.join(args)} changed the checkout:\n{_porcelain()}"


def test_a_benchmark_against_pytorch_says_what_to_install_where_pytorch_is_missing():
    hide_torch = (  # torch may be installed here: None in sys.modules makes both import and find_spec miss it
        "import runpy, sys; sys.modules['torch'] = None; "
        f"sys.argv = ['conv.py', '--rounds', '1']; runpy.run_path({str(ROOT / 'benchmarks' / 'conv.py')!r}, "
        "run_name='__main__')"
    )
    done = subprocess.run([sys.executable, "-c", hide_torch], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "pip install torch==2.13.0" in done.stderr and "Traceback" not in done.stderr


def test_the_examples_that_write_do_so_under_the_temporary_directory(tmp_path):
    pytest.importorskip("sklearn")
    done = _run(["examples/classify_digits.py", "--epochs", "1", "--no-progress"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "tapegrad" / "digits" / "checkpoint.npz").exists()
    assert (tmp_path / "tapegrad" / "digits" / "curve.png").exists()
    done = _run(["-m", "benchmarks.memory", "--replot", "docs/memory.json"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "tapegrad" / "memory" / "memory.png").read_bytes().startswith(b"\x89PNG")


def test_resume_without_a_checkpoint_says_what_is_missing_and_how_to_make_one(tmp_path):
    pytest.importorskip("sklearn")
    done = _run(["examples/classify_digits.py", "--resume", "--out", str(tmp_path / "none")], tmp_path)
    assert done.returncode == 1
    assert f"no checkpoint at {tmp_path / 'none' / 'checkpoint.npz'}" in done.stderr
    assert "run without --resume" in done.stderr and "Traceback" not in done.stderr


def test_resume_past_the_last_epoch_stops_and_says_so(tmp_path):
    pytest.importorskip("sklearn")
    out = str(tmp_path / "run")
    assert (
        _run(
            ["examples/classify_digits.py", "--epochs", "2", "--out", out, "--quiet", "--no-plot"], tmp_path
        ).returncode
        == 0
    )
    for epochs in ("1", "2"):
        done = _run(["examples/classify_digits.py", "--resume", "--epochs", epochs, "--out", out], tmp_path)
        assert done.returncode == 1, done.stdout
        assert f"already trained 2 epochs, so --epochs {epochs} leaves nothing to train" in done.stderr
        assert "pass --epochs 12" in done.stderr and "Traceback" not in done.stderr


def test_update_docs_refuses_what_it_would_not_publish(tmp_path):
    done = _run(["-m", "benchmarks.memory", "--quick", "--update-docs"], tmp_path)
    assert done.returncode == 2 and "drop --quick" in done.stderr
    done = _run(["-m", "benchmarks.speed", "--quick", "--update-docs"], tmp_path)
    assert done.returncode == 2 and "--pin" in done.stderr


def test_the_benchmark_cli_helpers(tmp_path):
    sys.path.insert(0, str(ROOT))
    from benchmarks import cli

    assert doctest.testmod(cli).failed == 0
    page = tmp_path / "page.md"
    page.write_text("a\n<!-- t: written by x -->\nold\n<!-- end t -->\nb\n")
    cli.replace_between_markers(page, "t", "new\n")
    assert page.read_text() == "a\n<!-- t: written by x -->\nnew\n<!-- end t -->\nb\n"
    with pytest.raises(SystemExit, match="no <!-- u -->"):
        cli.replace_between_markers(page, "u", "x")
