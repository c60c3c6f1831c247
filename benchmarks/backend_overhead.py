"""What array backends cost the NumPy path: the per-op overhead chain, this tree against a git ref, in one process.

The chain is the one of the speed benchmark's *overhead* case: 1,000 elementwise ops (cycles of ``x*w``,
``x+b``, ``tanh``, ``x-c``) on a float64 tensor of shape (4,), then ``sum``, then ``backward``. The package at
``--ref`` (default ``main``) is extracted from git into a temporary folder under another name, so both versions
run in the same interpreter, round by round, and their medians are compared. Times are this process's CPU
time by default (``--clock cpu``), so other work on a shared machine does not count; ``--clock wall`` for
wall-clock time::

    python benchmarks/backend_overhead.py --ref main --rounds 201

It prints its figures and writes nothing (``benchmarks/results/backend_overhead.txt`` holds a pasted run).
"""

from __future__ import annotations

import argparse
import importlib
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load_ref(ref: str, where: pathlib.Path):
    """Import the ``tapegrad`` package of git ``ref`` as a module named ``tapegrad_<ref>``."""
    name = "tapegrad_" + "".join(c if c.isalnum() else "_" for c in ref)
    files = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", ref, "tapegrad"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    for f in files:
        if not f.endswith(".py"):
            continue
        target = where / name / pathlib.Path(f).relative_to("tapegrad")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(
            subprocess.run(["git", "show", f"{ref}:{f}"], cwd=ROOT, capture_output=True, check=True).stdout
        )
    sys.path.insert(0, str(where))
    return importlib.import_module(name)


def chain(tg, n_ops: int = 1000, clock=time.process_time):
    """One forward + backward of the overhead chain; returns seconds per op."""
    x0 = tg.Tensor(np.linspace(-1.0, 1.0, 4), requires_grad=True)
    w, b, c = tg.Tensor(np.full(4, 0.9)), tg.Tensor(np.full(4, 0.1)), tg.Tensor(np.full(4, 0.05))
    start = clock()
    with tg.tape.record():
        x = x0
        for _ in range(n_ops // 4):
            x = x * w
            x = x + b
            x = tg.tanh(x)
            x = x - c
        loss = x.sum()
    loss.backward()
    return (clock() - start) / (n_ops + 1)


def resolve_ref(ref: str) -> str | None:
    """``ref`` if git knows it, else ``origin/<ref>`` (a fresh clone has no local ``main``), else None."""
    for candidate in (ref, f"origin/{ref}"):
        known = subprocess.run(["git", "rev-parse", "--verify", "--quiet", candidate], cwd=ROOT, capture_output=True)
        if known.returncode == 0:
            return candidate
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python benchmarks/backend_overhead.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--ref", default="main", help="git ref to compare this tree against")
    parser.add_argument("--rounds", type=int, default=201, help="interleaved rounds (each runs both versions once)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu", help="the process's CPU time or elapsed")
    args = parser.parse_args(argv)
    if args.rounds < 2:
        parser.error("--rounds: at least 2, for quartiles")
    ref_name, args.ref = args.ref, resolve_ref(args.ref)
    if args.ref is None:
        parser.error(f"--ref {ref_name}: not a git ref of {ROOT}, nor is origin/{ref_name} (try --ref HEAD)")
    sys.path.insert(0, str(ROOT))
    import tapegrad as here

    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    with tempfile.TemporaryDirectory() as tmp:
        ref = load_ref(args.ref, pathlib.Path(tmp))
        engines = {args.ref: ref, "this tree": here}
        for tg in engines.values():  # warm-up, and both compute the same gradient
            chain(tg)
        times = {k: [] for k in engines}
        for _ in range(args.rounds):
            for k, tg in engines.items():
                times[k].append(chain(tg, clock=clock) * 1e6)
    print(
        f"numpy {np.__version__}, python {sys.version.split()[0]}, {args.rounds} interleaved rounds, {args.clock} time"
    )
    print("overhead chain (1,000 elementwise ops on shape (4,), forward + backward), microseconds per op:")
    base = statistics.median(times[args.ref])
    for k, ts in times.items():
        med = statistics.median(ts)
        q1, _, q3 = statistics.quantiles(ts, n=4)
        print(
            f"  {k:>10}: median {med:.3f}  (quartiles {q1:.3f} .. {q3:.3f}, best {min(ts):.3f})  "
            f"ratio {med / base:.3f}, best {min(ts) / min(times[args.ref]):.3f}"
        )


if __name__ == "__main__":
    main()
