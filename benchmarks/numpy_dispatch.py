"""What NumPy's dispatch protocols cost: ``np.exp(t)`` against ``tg.exp(t)``, and ``np.ones(3) + t`` (NumPy's
operator on the left, which goes through ``np.add`` to ``Tensor.__array_ufunc__``) against this tree's ``t +
np.ones(3)`` and against the same expression at a git ref (default ``main``), where it went through the
reflected operator. Side by side in one process, round by round, as ``benchmarks.overhead``; each figure is a
median of per-round medians, in µs per call, recorded on a tape.

    python -m benchmarks.numpy_dispatch --ref main --rounds 51

It prints its figures and writes nothing.
"""

from __future__ import annotations

import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np

if __name__ == "__main__" and not __package__:  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from benchmarks import cli  # noqa: E402
from benchmarks.overhead import load_ref, resolve_ref  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent


def per_call(tg, fn, calls, clock):
    """µs per call of ``fn(x)`` on a tensor being recorded (the tape released after each batch)."""
    x = tg.Tensor(np.linspace(0.1, 0.9, 3), requires_grad=True)
    record = tg.record() if hasattr(tg, "record") else tg.tape.record()
    with record as tape:
        start = clock()
        for _ in range(calls):
            fn(x)
        elapsed = clock() - start
    tape.release() if hasattr(tape, "release") else None
    return elapsed / calls * 1e6


def main(argv=None) -> int:
    parser = cli.parser("python -m benchmarks.numpy_dispatch", __doc__)
    parser.add_argument("--ref", default="main", help="git ref whose ndarray + tensor to compare against")
    parser.add_argument("--rounds", type=int, default=51, help="interleaved rounds")
    parser.add_argument("--calls", type=int, default=2000, help="calls per workload and round")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu", help="process CPU time or wall time")
    args = parser.parse_args(argv)
    ref_name, args.ref = args.ref, resolve_ref(args.ref)
    if args.ref is None:
        parser.error(f"--ref {ref_name}: not a git ref of {ROOT} (try --ref HEAD)")
    sys.path.insert(0, str(ROOT))
    import tapegrad as here

    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    ones = np.ones(3)
    with tempfile.TemporaryDirectory() as tmp:
        ref = load_ref(args.ref, pathlib.Path(tmp))
        try:
            np.exp(ref.Tensor(1.0))
            ref_has_np_exp = True
        except TypeError:
            ref_has_np_exp = False
        jobs = {
            "tg.exp(t)": (here, lambda x: here.exp(x)),
            "np.exp(t)": (here, lambda x: np.exp(x)),
            "t + ndarray": (here, lambda x: x + ones),
            "ndarray + t": (here, lambda x: ones + x),
            f"ndarray + t at {ref_name}": (ref, lambda x: ones + x),
        }
        if ref_has_np_exp:
            jobs[f"np.exp(t) at {ref_name}"] = (ref, lambda x: np.exp(x))
        times = {k: [] for k in jobs}
        for _ in range(3):  # warm-up
            for tg, fn in jobs.values():
                per_call(tg, fn, args.calls, clock)
        with cli.progress(args.rounds, desc="rounds", unit="round") as bar:
            for r in range(args.rounds):
                bar.update()
                names = list(jobs) if r % 2 else list(jobs)[::-1]
                for k in names:
                    times[k].append(per_call(*jobs[k], args.calls, clock))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(
        f"numpy {np.__version__}, {args.rounds} interleaved rounds of {args.calls} calls, {args.clock} time, ref {args.ref}"
    )
    for k, v in med.items():
        print(f"{k:<24} {v:7.3f} µs per call")
    print(f"np.exp(t) / tg.exp(t)          = {med['np.exp(t)'] / med['tg.exp(t)']:.3f}")
    print(f"ndarray + t / t + ndarray      = {med['ndarray + t'] / med['t + ndarray']:.3f}")
    print(f"ndarray + t, here / {ref_name:<10} = {med['ndarray + t'] / med[f'ndarray + t at {ref_name}']:.3f}")
    if not ref_has_np_exp:
        print(f"np.exp(t) at {ref_name}: raises TypeError (no __array_ufunc__ there)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
