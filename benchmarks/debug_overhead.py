"""Does recording pay for the debugging features? The overhead chain with and without them, in one process.

The chain of the speed benchmark: 1,000 elementwise ops (cycles of x*w, x+b, tanh, x-c) on shape (4,),
float64, then sum, then backward; and the same forward alone (recording only). The engine without the
features is imported from another checkout as ``tapegrad_base``; rounds alternate between the two::

    mkdir -p /tmp/tg-before && git archive "$(git merge-base HEAD main)" tapegrad | tar -x -C /tmp/tg-before
    python benchmarks/debug_overhead.py --baseline /tmp/tg-before --rounds 300

(on main after the merge, archive the commit before it instead of the merge base). It prints its figures and
writes nothing but a temporary copy of the baseline, removed at the end.
"""

import argparse
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np

if __name__ == "__main__" and not __package__:  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import tapegrad  # noqa: E402
from benchmarks.overhead import import_renamed  # noqa: E402


def chain(tg, backward):
    rng = np.random.default_rng(0)
    x0 = tg.Tensor(rng.standard_normal(4), requires_grad=True)
    w = tg.Tensor(rng.standard_normal(4) * 0.5, requires_grad=True)
    b = tg.Tensor(rng.standard_normal(4), requires_grad=True)
    c = tg.Tensor(rng.standard_normal(4))

    def run():
        with tg.tape.record() as t:
            x = x0
            for _ in range(250):
                x = tg.tanh(x * w + b) - c
            loss = x.sum()
        if backward:
            loss.backward()
            x0.grad = w.grad = b.grad = None
        else:
            t.release()

    return run


class Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown; the epilog's commands keep their lines."""


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python benchmarks/debug_overhead.py",
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
        formatter_class=Formatter,
    )
    parser.add_argument("--baseline", required=True, help="a checkout whose tapegrad/ lacks the features")
    parser.add_argument("--rounds", type=int, default=300, help="interleaved rounds per case")
    args = parser.parse_args(argv)
    if not (pathlib.Path(args.baseline) / "tapegrad" / "__init__.py").exists():
        parser.error(f"--baseline {args.baseline}: no tapegrad/ package there (see the commands above to make one)")
    if args.rounds < 2:
        parser.error("--rounds: at least 2, for the deciles")
    package = pathlib.Path(args.baseline) / "tapegrad"
    with tempfile.TemporaryDirectory() as tmp:
        sources = {p.relative_to(package): p.read_bytes() for p in package.rglob("*.py")}
        run(import_renamed(sources, pathlib.Path(tmp), "tapegrad_base"), args.rounds)


def run(tapegrad_base, rounds: int) -> None:
    args = argparse.Namespace(rounds=rounds)

    print(f"numpy {np.__version__}, python {sys.version.split()[0]}, {args.rounds} interleaved rounds")
    for backward in (True, False):
        runs = {"without": chain(tapegrad_base, backward), "with": chain(tapegrad, backward)}
        res = {k: [] for k in runs}
        for f in runs.values():
            for _ in range(5):
                f()
        items = list(runs.items())
        for r in range(args.rounds):
            for k, f in items if r % 2 else items[::-1]:
                t0 = time.perf_counter()
                f()
                res[k].append((time.perf_counter() - t0) / 1001 * 1e6)
        print("forward + backward" if backward else "forward only (recording)")
        for k, v in res.items():
            p10 = statistics.quantiles(v, n=10)[0]
            print(f"  {k:8s} min {min(v):.3f}  p10 {p10:.3f}  median {statistics.median(v):.3f}  us/op")
        ratio = {q: f(res["with"]) / f(res["without"]) for q, f in (("min", min), ("median", statistics.median))}
        print(f"  with / without: min {ratio['min']:.3f}, median {ratio['median']:.3f}")


if __name__ == "__main__":
    main()
