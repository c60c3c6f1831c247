"""Speed of tapegrad beside its peers, measured side by side in one process: ``python -m benchmarks.speed``.

Workloads (see :mod:`benchmarks.speed_workloads`): a 1,000-op elementwise chain on a 4-vector (per-op overhead),
one input fanned out to 100 branches and summed back (gradient accumulation), and one SGD step of a
784-512-512-10 ReLU MLP on a batch of 256 (float64 and float32). Engines: hand-written NumPy (the floor),
tapegrad, the node-graph reference, HIPS autograd and PyTorch eager CPU when installed.

Hygiene, because the machine is shared: every engine's gradients are checked against the hand-written ones
before anything is timed; each workload is warmed up; engines are interleaved round by round (the order
rotates each round) so a burst of load hits all of them; the cyclic garbage collector is off inside a timed
pass (as ``timeit`` does); figures are medians with the interquartile range, and each target ratio is the
median of the per-round ratios (the two engines ran next to each other). glibc's allocator thresholds are
fixed (``mallopt``), so that large arrays come from the heap whatever ran before instead of depending on
glibc's sliding mmap threshold. ``--pin`` runs on one core with one BLAS thread and times with the process's
CPU time (``--clock cpu``), which, unlike elapsed time, does not grow while other work holds the core.

Usage::

    python -m benchmarks.speed --quick            # a minute or less: for iterating
    python -m benchmarks.speed --pin              # the documented table (one core, CPU-time clock), ~4 minutes
    python -m benchmarks.speed --pin --update-docs   # the same, written into docs/benchmarks/speed.md
    python -m benchmarks.speed --profile chain    # cProfile of tapegrad alone on one workload
    python -m benchmarks.speed --fused            # the compiler's targets: fused kernels beside JAX's jit

It prints its report (Markdown) and writes nothing unless asked: ``--json PATH`` for every sample,
``--update-docs`` for the table between the markers of docs/benchmarks/speed.md.
"""

from __future__ import annotations

import pathlib
import sys

if __name__ == "__main__" and not __package__:  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks import hygiene  # noqa: E402

if __name__ == "__main__" and ("--pin" in sys.argv[1:] or "--fused" in sys.argv[1:]):
    hygiene.cap_blas_threads_by_env()  # before NumPy's first import, or BLAS has already started its threads

import gc  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks import cli  # noqa: E402
from benchmarks.hygiene import CLOCKS, environment, pin_allocator, pin_to_one_core  # noqa: E402
from benchmarks.speed_compiled import compile_costs, time_by_call  # noqa: E402
from benchmarks.speed_engines import FULL, WORKLOADS, Sizes, available_engines, check, op_count, workload  # noqa: E402

# A sample is the mean of a few passes; a figure is the median of the samples, one per round.
ROUNDS, QUICK_ROUNDS = 41, 9
PASSES = {"chain": 3, "fanout": 5, "mlp-float64": 1, "mlp-float32": 1}  # per sample: each about 20-50 ms
WARMUP = 2  # passes per engine and workload before the first timed round

# The targets: (workload, engine, reference engine, bound on engine / reference).
TARGETS = [
    ("chain", "tapegrad", "torch", 0.6),
    ("chain", "tapegrad", "nodegraph", 0.6),
    ("mlp-float64", "tapegrad", "numpy-tight", 1.03),
    ("mlp-float32", "tapegrad", "numpy-tight", 1.03),
    ("chain", "tapegrad-native", "torch", 0.6),
    ("chain", "tapegrad-native", "nodegraph", 0.6),
    ("mlp-float64", "tapegrad-native", "numpy-tight", 1.03),
    ("mlp-float32", "tapegrad-native", "numpy-tight", 1.03),
    ("chain", "compiled", "numpy", 1.5),
    ("mlp-float64", "compiled", "numpy-tight", 0.97),
    ("mlp-float32", "compiled", "numpy-tight", 0.97),
    ("mlp-float32", "compiled", "torch", 1.0),
]


# -- hygiene --------------------------------------------------------------------------------------------------
# -- timing ---------------------------------------------------------------------------------------------------
def _timed_pass(forward, backward, passes, clock=time.perf_counter):
    """Mean (forward, backward) seconds over ``passes`` passes, the garbage collector off while they run."""
    f = b = 0.0
    gc.collect()
    gc.disable()
    try:
        for _ in range(passes):
            t0 = clock()
            state = forward()
            t1 = clock()
            backward(state)
            t2 = clock()
            f += t1 - t0
            b += t2 - t1
            state = None  # the graph of engines that keep one goes now, outside the timed span
    finally:
        gc.enable()
    return f / passes, b / passes


def measure(engines, names, sizes: Sizes, rounds: int, passes: dict, clock=time.perf_counter, bar=None) -> dict:
    """``samples[workload][engine]``: the (forward, backward) seconds of each round.

    Every (workload, engine) pair runs once per round, in an order that rotates by one each round, so a burst
    of load from elsewhere falls on all of them alike and per-round ratios compare neighbours.
    """
    runs = {(name, e.name): workload(e, name, sizes) for name in names for e in engines if e.runs(name)}
    for fwd, bwd in runs.values():
        for _ in range(WARMUP):
            bwd(fwd())
    samples = {name: {e.name: [] for e in engines if e.runs(name)} for name in names}
    order = list(runs)
    for r in range(rounds):
        k = r % len(order)
        for name, engine in order[k:] + order[:k]:
            samples[name][engine].append(_timed_pass(*runs[name, engine], passes[name], clock))
        if bar is not None:
            bar.update()
    return samples


def summarise(samples: dict, name: str, sizes: Sizes) -> dict:
    """Medians and quartiles per engine, in µs per op (chain, fan-out) or ms per step (MLP)."""
    scale = 1e6 / op_count(name, sizes) if name in ("chain", "fanout") else 1e3
    out = {}
    for engine, rows in samples.items():
        a = np.array(rows) * scale
        total = a.sum(axis=1)
        q1, med, q3 = np.percentile(total, [25, 50, 75])
        out[engine] = {
            "total": med,
            "q1": q1,
            "q3": q3,
            "forward": float(np.median(a[:, 0])),
            "backward": float(np.median(a[:, 1])),
        }
    return out


def paired_ratio(samples: dict, engine: str, reference: str) -> tuple[float, float, float]:
    """Median and quartiles of engine/reference over rounds (fwd+bwd), each ratio taken within one round."""
    a = np.array(samples[engine]).sum(axis=1) / np.array(samples[reference]).sum(axis=1)
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return float(med), float(q1), float(q3)


# -- report ---------------------------------------------------------------------------------------------------
TITLES = {
    "chain": "overhead: 1,000-op elementwise chain on shape (4,), float64 (µs per op)",
    "fanout": "fan-out/fan-in: one input, 100 branches summed back, shape (4,), float64 (µs per op)",
    "mlp-float64": "mlp: one SGD step, 784-512-512-10, batch 256, float64 (ms per step)",
    "mlp-float32": "mlp: one SGD step, 784-512-512-10, batch 256, float32 (ms per step)",
}


def table(name: str, stats: dict, samples: dict) -> list[str]:
    """A Markdown table for one workload: fwd+bwd median and IQR, forward, backward, × hand-written NumPy."""
    lines = [
        f"**{TITLES[name]}**",
        "",
        "| engine | fwd+bwd | IQR | forward | backward | × NumPy |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for engine, s in sorted(stats.items(), key=lambda kv: kv[1]["total"]):
        ratio = f"{paired_ratio(samples, engine, 'numpy')[0]:.2f}" if "numpy" in stats else "-"
        lines.append(
            f"| {engine} | {s['total']:.3g} | {s['q1']:.3g}–{s['q3']:.3g} | {s['forward']:.3g} | "
            f"{s['backward']:.3g} | {ratio} |"
        )
    return lines + [""]


def targets(results: dict) -> list[str]:
    """The issue's targets beside the measured paired ratios."""
    lines = ["**targets** (ratio of fwd+bwd times, median over rounds [IQR])", ""]
    for w, e, r, bound in TARGETS:
        samples = results.get(w, {}).get("samples", {})
        if w not in results:
            lines.append(f"- {w}: {e} / {r}: not measured ({w} not run)")
        elif e in samples and r in samples:
            med, q1, q3 = paired_ratio(samples, e, r)
            verdict = "met" if med <= bound else "missed"
            lines.append(f"- {w}: {e} / {r} = {med:.2f} [{q1:.2f}–{q3:.2f}], target ≤ {bound} ({verdict})")
        else:
            lines.append(f"- {w}: {e} / {r}: not measured ({r if r not in samples else e} was skipped)")
    if "tapegrad" in results.get("chain", {}).get("samples", {}) and "fanout" in results:
        per_op = {
            w: np.array(results[w]["samples"]["tapegrad"]).sum(axis=1) / op_count(w, FULL) for w in ("chain", "fanout")
        }
        q1, med, q3 = np.percentile(per_op["fanout"] / per_op["chain"], [25, 50, 75])
        verdict = "met" if med <= 1 else "missed"
        lines.append(
            f"- fan-out per op / chain per op, tapegrad = {med:.2f} [{q1:.2f}–{q3:.2f}], target ≤ 1 ({verdict})"
        )
    return lines + [""]


def profile(name: str, sizes: Sizes, passes: int, top: int) -> None:
    """cProfile tapegrad alone on one workload (forward and backward), sorted by own time."""
    import cProfile
    import pstats

    engines, _ = available_engines(["tapegrad"])
    fwd, bwd = workload(engines[0], name, sizes)
    for _ in range(WARMUP):
        bwd(fwd())
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(passes):
        bwd(fwd())
    prof.disable()
    print(f"cProfile, tapegrad, {name}, {passes} passes (cProfile inflates per-call costs: compare rows)\n")
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def build_parser():
    parser = cli.parser("python -m benchmarks.speed", __doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds: for iterating, not for the docs")
    parser.add_argument(
        "--pin",
        nargs="?",
        const=-1,
        type=int,
        metavar="CPU",
        help="one core (without a number: the last one allowed), one BLAS thread",
    )
    parser.add_argument(
        "--clock",
        choices=CLOCKS,
        help="wall: elapsed time; cpu: the process's CPU time, robust to a busy machine (None: cpu with --pin)",
    )
    parser.add_argument("--only", nargs="+", choices=WORKLOADS, default=list(WORKLOADS), help="workloads to run")
    parser.add_argument("--engines", nargs="+", default=None, help="engines to run (None: every one installed)")
    parser.add_argument(
        "--rounds", type=int, help=f"rounds per workload (None: {ROUNDS}, or {QUICK_ROUNDS} with --quick)"
    )
    parser.add_argument("--json", metavar="PATH", help="also write every sample to PATH")
    parser.add_argument("--profile", choices=WORKLOADS, help="profile tapegrad on one workload instead")
    parser.add_argument(
        "--fused", action="store_true", help="the compiler's targets instead: fused kernels beside JAX's jit"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument(
        "--update-docs",
        action="store_true",
        help="write the report between the speed-table markers of docs/benchmarks/speed.md (needs --pin)",
    )
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.fused:
        from benchmarks.speed_fused import main as fused  # noqa: PLC0415  (JAX and numba only for this table)

        return fused([])
    if args.update_docs and (args.pin is None or args.quick or args.rounds or args.engines or len(args.only) < 4):
        parser.error(
            "--update-docs publishes the full pinned run: pass --pin, without --quick, --rounds, --engines, --only"
        )

    allocator = pin_allocator()
    if args.profile:
        profile(args.profile, FULL, passes=20 if args.profile in ("chain", "fanout") else 5, top=30)
        return 0
    names = args.engines or None
    if names is not None:
        names = list(dict.fromkeys(["numpy", *names]))  # the floor always runs: ratios and checks need it
    engines, notes = available_engines(names)
    pinned = pin_to_one_core(None if args.pin == -1 else args.pin) if args.pin is not None else "not pinned (--pin)"
    args.clock = args.clock or ("cpu" if args.pin is not None else "wall")
    if args.clock == "cpu" and args.pin is None:
        notes.append("--clock cpu without --pin adds up the time of every BLAS thread: the MLP figures overstate")
    clock = f"clock: {args.clock} ({CLOCKS[args.clock].__name__})"
    env = environment([f"allocator: {allocator}", pinned, clock] + [f"note: {n}" for n in notes])
    report = []

    def say(text: str) -> None:
        print(text, flush=True)
        report.append(text)

    say("\n".join(["```text", *env, "```", ""]))  # the report is Markdown, pasted as is into the docs

    checked = check(engines, FULL, args.only)
    say(f"gradients of {', '.join(e.name for e in engines)} match hand-written NumPy on {', '.join(checked)}\n")

    rounds = args.rounds or (QUICK_ROUNDS if args.quick else ROUNDS)
    with cli.progress(rounds, "speed", "round", args.no_progress) as bar:
        measured = measure(engines, args.only, FULL, rounds, PASSES, CLOCKS[args.clock], bar)
    results = {}
    for name, samples in measured.items():
        results[name] = {"samples": samples, "stats": summarise(samples, name, FULL)}
        say("\n".join(table(name, results[name]["stats"], samples)))
    say("\n".join(targets(results)))
    if any(e.name == "compiled" for e in engines):
        say("\n".join(compile_costs(FULL, CLOCKS[args.clock])))
        if any(name.startswith("mlp") for name in args.only):
            say("\n".join(time_by_call(FULL, CLOCKS[args.clock])))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": env, "results": results}, f, indent=1)
    if args.update_docs:
        page = cli.DOCS / "benchmarks" / "speed.md"
        cli.replace_between_markers(page, "speed-table", "\n".join(report))
        print(f"wrote the report into {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
