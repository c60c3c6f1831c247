"""How long ``tg.compile`` takes as the program grows: seconds per 1,000 ops at each size, this tree beside a git ref.

The program is the compile guide's chain, ``tg.compile(tg.value_and_grad(chain))`` with ``chain`` a loop of
``x = tanh(x * w + 0.1)`` on (4,) float64 arrays: its size is the number of ops traced (the forward and the
backward pass; a cycle of 3 forward ops traces 7). The time is the first call's, in this process's CPU time (a shared
machine's load counts less): tracing, the passes, the plan, the source and Python's ``compile`` of it (the
first run of the program included). Linear passes show a
constant number of seconds per 1,000 ops; quadratic ones a number that grows with the size.

    python -m benchmarks.compile_time                    # this tree, 10^2 to 3*10^4 ops
    python -m benchmarks.compile_time --ref main         # and main beside it (sizes past --limit skipped)

With ``--ref`` the package at that git ref is imported under another name in the same process (as
:mod:`benchmarks.overhead` does), and the two run in turn at each size. A version whose compile of one size
took longer than ``--limit`` seconds skips the larger sizes.

>>> from benchmarks.compile_time import compile_seconds
>>> import tapegrad
>>> ops, seconds = compile_seconds(tapegrad, 10)
>>> ops
71
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

if __name__ == "__main__" and not __package__:  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

__all__ = ["compile_seconds", "SIZES", "main"]

SIZES = (100, 300, 1_000, 3_000, 10_000, 30_000)  # ops traced (forward and backward)
OPS_PER_CYCLE = 7  # x * w, + 0.1, tanh; and their gradients: 1 - t*t (2 ops), times g, times w


def compile_seconds(tg, cycles: int) -> tuple:
    """(ops traced, seconds) of compiling the chain of ``cycles`` cycles with the package ``tg``."""
    import numpy as np

    def chain(x, w):
        for _ in range(cycles):
            x = tg.tanh(x * w + 0.1)
        return x.sum()

    try:  # the passes alone: no fused kernels (a tree that has them would build their source too)
        step = tg.compile(tg.value_and_grad(chain), fuse=False)
    except TypeError:  # a tree from before fused kernels
        step = tg.compile(tg.value_and_grad(chain))
    x, w = np.linspace(0.1, 0.4, 4), np.full(4, 0.9)
    t0 = time.process_time()
    step(x, w)
    seconds = time.process_time() - t0
    return step.program.info["traced_ops"], seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", default=None, help="a git ref to compare this tree against (main)")
    parser.add_argument("--limit", type=float, default=60.0, help="skip larger sizes once one took this long (s)")
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES), help="ops traced, roughly")
    args = parser.parse_args(argv)
    import tapegrad

    engines = [("this tree", tapegrad)]
    with tempfile.TemporaryDirectory() as tmp:
        if args.ref:
            from benchmarks.overhead import load_ref, resolve_ref

            ref = resolve_ref(args.ref)
            if ref is None:
                parser.error(f"--ref {args.ref}: not a git ref")
            engines.append((args.ref, load_ref(ref, pathlib.Path(tmp))))
        stopped = set()
        header = "| ops traced | " + " | ".join(f"{name}: s per 1,000 ops (total s)" for name, _ in engines) + " |"
        print(header)
        print("|" + "---|" * (len(engines) + 1))
        for size in args.sizes:
            cycles = max(1, round((size - 1) / OPS_PER_CYCLE))
            cells, ops = [], None
            for name, tg in engines:
                if name in stopped:
                    cells.append("skipped")
                    continue
                ops, seconds = compile_seconds(tg, cycles)
                cells.append(f"{1000 * seconds / ops:.3f} ({seconds:.2f})")
                if seconds > args.limit:
                    stopped.add(name)
            print(f"| {ops:,} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
