"""What ``tg.profile()`` costs while it runs: the same step, plain and profiled, side by side in one process.

Every round runs each workload once plain and once inside ``with tg.profile():`` (in turn, who goes first
alternating); the figures are medians over rounds, and the ratio the median of the per-round ratios, which
cancels most of what a shared machine's load does to both. The process's CPU time (less disturbed than
the wall clock by other processes on a shared machine).

- ``chain``: 1,000 elementwise ops on shape (4,) (cycles of ``x*w``, ``x+b``, ``tanh``, ``x-c``), ``sum``,
  ``backward``: µs per op, where the profiler's own cost shows most;
- ``mlp``: one step of a 784-256-10 ReLU MLP on a batch of 128 (float32): ms per step.

What profiling costs nothing outside the block is measured against the tree without the profiler:
``python -m benchmarks.overhead --ref <ref>``.

    python -m benchmarks.profiler_overhead --rounds 21
"""

from __future__ import annotations

import pathlib
import statistics
import sys
import time

import numpy as np

if __name__ == "__main__" and not __package__:  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import tapegrad as tg  # noqa: E402
from benchmarks import cli  # noqa: E402


def chain(n_ops=1000):
    rng = np.random.default_rng(0)
    x, w, b, c = (tg.Tensor(rng.standard_normal(4), requires_grad=True) for _ in range(4))

    def run():
        with tg.record():
            h = x
            for _ in range(n_ops // 4):
                h = tg.tanh(h * w + b) - c
            loss = h.sum()
        loss.backward()

    return run, n_ops + 1, 1e6, "us/op"


def mlp():
    f32 = np.float32
    model = tg.nn.Sequential(
        tg.nn.Linear(784, 256, rng=0, dtype=f32), tg.nn.ReLU(), tg.nn.Linear(256, 10, rng=1, dtype=f32)
    )
    rng = np.random.default_rng(0)
    X = tg.Tensor(rng.standard_normal((128, 784)).astype(np.float32))
    y = rng.integers(0, 10, 128)

    def run():
        with tg.record():
            loss = tg.nn.functional.cross_entropy(model(X), y)
        loss.backward()
        model.zero_grad()

    return run, 1, 1e3, "ms/step"


WORKLOADS = {"chain": chain, "mlp": mlp}


def measure(rounds: int, names=tuple(WORKLOADS)) -> dict:
    """``name -> (plain median, profiled median, median ratio, unit)`` over ``rounds`` interleaved rounds."""
    out = {}
    for name in names:
        run, per, scale, unit = WORKLOADS[name]()

        def plain(run=run):
            t0 = time.process_time()
            run()
            return time.process_time() - t0

        def profiled(run=run):
            t0 = time.process_time()
            with tg.profile():
                run()
            return time.process_time() - t0

        plain(), profiled()  # warm up
        a, b = [], []
        for r in range(rounds):
            first, second = (plain, profiled) if r % 2 == 0 else (profiled, plain)
            x, y = first(), second()
            pa, pb = (x, y) if r % 2 == 0 else (y, x)
            a.append(pa)
            b.append(pb)
        ratio = statistics.median(q / p for p, q in zip(a, b))
        out[name] = (statistics.median(a) / per * scale, statistics.median(b) / per * scale, ratio, unit)
    return out


def main(argv=None):
    parser = cli.parser("python -m benchmarks.profiler_overhead", __doc__)
    parser.add_argument("--rounds", type=int, default=21, help="interleaved rounds")
    parser.add_argument("--only", nargs="*", choices=list(WORKLOADS), default=list(WORKLOADS), help="workloads to run")
    args = parser.parse_args(argv)
    print("workload  unit      plain   profiled   ratio (median of per-round ratios)")
    for name, (p, q, ratio, unit) in measure(args.rounds, args.only).items():
        print(f"{name:<9} {unit:<8} {p:7.2f}   {q:8.2f}   {ratio:.2f}x")


if __name__ == "__main__":
    main()
