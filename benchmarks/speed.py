"""Speed of tapegrad beside its peers, measured side by side in one process: ``python -m benchmarks.speed``.

Workloads (see :mod:`benchmarks.speed_engines`): a 1,000-op elementwise chain on a 4-vector (per-op overhead),
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
    python -m benchmarks.speed --pin              # the README's table (one core, CPU-time clock)
    python -m benchmarks.speed --profile chain    # cProfile of tapegrad alone on one workload
"""

from __future__ import annotations

import os
import sys

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")
if __name__ == "__main__" and "--pin" in sys.argv[1:]:
    # BLAS reads these once, when NumPy loads it: they work only if set before the first `import numpy`.
    _ENV_CAP = "numpy" not in sys.modules
    for _var in _THREAD_VARS:
        os.environ[_var] = "1"
else:
    _ENV_CAP = False

import argparse  # noqa: E402
import ctypes  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.speed_engines import FULL, WORKLOADS, Sizes, available_engines, check, op_count, workload  # noqa: E402

# A sample is the mean of a few passes; a figure is the median of the samples, one per round.
ROUNDS, QUICK_ROUNDS = 41, 9
PASSES = {"chain": 3, "fanout": 5, "mlp-float64": 1, "mlp-float32": 1}  # per sample: each about 20-50 ms
WARMUP = 2  # passes per engine and workload before the first timed round

# The targets: (workload, engine, reference engine, bound on engine / reference).
TARGETS = [
    ("chain", "tapegrad", "torch", 0.6),
    ("chain", "tapegrad", "nodegraph", 0.6),
    ("mlp-float64", "tapegrad", "numpy", 1.03),
    ("mlp-float32", "tapegrad", "numpy", 1.03),
]

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # from glibc's malloc.h
MMAP_THRESHOLD = 32 * 2**20  # glibc's maximum on 64-bit: every array of these workloads comes from the heap
TRIM_THRESHOLD = 256 * 2**20  # freed heap memory is kept for reuse instead of being returned at once


# -- hygiene --------------------------------------------------------------------------------------------------
def pin_allocator() -> str:
    """Fix glibc's mmap and trim thresholds (which glibc otherwise moves as the program runs); say what was done."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        ok = (
            libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
            and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
        )
    except (OSError, AttributeError):
        return "not glibc: allocator left as it is"
    if not ok:
        return "mallopt refused: allocator left as it is"
    return f"glibc mallopt M_MMAP_THRESHOLD={MMAP_THRESHOLD >> 20} MiB, M_TRIM_THRESHOLD={TRIM_THRESHOLD >> 20} MiB"


def pin_to_one_core(cpu: int | None) -> str:
    """Run on one core with one BLAS thread (and one PyTorch thread); say how the BLAS cap was applied."""
    allowed = sorted(os.sched_getaffinity(0))
    cpu = allowed[-1] if cpu is None else cpu
    os.sched_setaffinity(0, {cpu})
    how = []
    if _ENV_CAP:
        how.append(f"{'/'.join(_THREAD_VARS)}=1 set before NumPy was imported")
    try:
        from threadpoolctl import threadpool_limits

        pin_to_one_core.limits = threadpool_limits(limits=1)  # kept: the limit lasts as long as the object
        how.append("threadpoolctl.threadpool_limits(1)")
    except ImportError:
        pass
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
        how.append("torch.set_num_threads(1)")
    return f"pinned to CPU {cpu}; BLAS threads capped by: {', '.join(how) or 'nothing (NumPy was imported first)'}"


def environment(notes: list[str]) -> list[str]:
    """Lines describing what the figures were measured on."""
    lines = [
        f"Python {platform.python_version()} ({platform.python_implementation()}), {platform.platform()}",
        f"CPU: {_cpu_model()}; {os.cpu_count()} logical CPUs, this process may use {len(os.sched_getaffinity(0))}; "
        f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}",
        f"NumPy {np.__version__}; BLAS: {_blas()}",
    ]
    for name in ("tapegrad", "autograd", "torch"):
        mod = sys.modules.get(name)
        if mod is not None:
            extra = f", {mod.get_num_threads()} threads" if name == "torch" else ""
            extra += f", commit {_commit()}" if name == "tapegrad" else ""
            lines.append(f"{name} {_version(name)}{extra}")
    return lines + notes


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return getattr(sys.modules[dist], "__version__", "?")


def _commit() -> str:
    import subprocess

    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=os.path.dirname(os.path.abspath(__file__)),
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _blas() -> str:
    try:
        from threadpoolctl import threadpool_info

        found = [
            f"{i['internal_api']} {i.get('version')} (kernel {i.get('architecture')}, {i['num_threads']} threads, "
            f"{os.path.basename(i['filepath'])})"
            for i in threadpool_info()
            if i["user_api"] == "blas"
        ]
        if found:
            return "; ".join(found)
    except ImportError:
        pass
    try:  # without threadpoolctl: NumPy's build configuration names the library, not the kernel or threads
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version')} (install threadpoolctl to see its kernel and threads)"
    except Exception:  # noqa: BLE001 (older NumPy: no dict mode)
        return "unknown (install threadpoolctl)"


# -- timing ---------------------------------------------------------------------------------------------------
CLOCKS = {
    "wall": time.perf_counter,
    # CPU time of the whole process: not inflated while the scheduler runs someone else's work on our core, but it
    # adds up every thread's time, so it is meaningful with --pin (one BLAS thread), not with several threads.
    "cpu": time.process_time,
}


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


def measure(engines, names, sizes: Sizes, rounds: int, passes: dict, clock=time.perf_counter) -> dict:
    """``samples[workload][engine]``: the (forward, backward) seconds of each round.

    Every (workload, engine) pair runs once per round, in an order that rotates by one each round, so a burst
    of load from elsewhere falls on all of them alike and per-round ratios compare neighbours.
    """
    runs = {(name, e.name): workload(e, name, sizes) for name in names for e in engines}
    for fwd, bwd in runs.values():
        for _ in range(WARMUP):
            bwd(fwd())
    samples = {name: {e.name: [] for e in engines} for name in names}
    order = list(runs)
    for r in range(rounds):
        k = r % len(order)
        for name, engine in order[k:] + order[:k]:
            samples[name][engine].append(_timed_pass(*runs[name, engine], passes[name], clock))
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds: for iterating, not for the README")
    parser.add_argument(
        "--pin",
        nargs="?",
        const=-1,
        type=int,
        metavar="CPU",
        help="one core (default: the last allowed), one BLAS thread",
    )
    parser.add_argument(
        "--clock",
        choices=CLOCKS,
        help="wall: elapsed time; cpu: the process's CPU time, robust to a busy machine (default with --pin)",
    )
    parser.add_argument("--only", nargs="+", choices=WORKLOADS, default=list(WORKLOADS), help="workloads to run")
    parser.add_argument("--engines", nargs="+", default=None, help="engines to run (default: every one installed)")
    parser.add_argument("--rounds", type=int, help="rounds per workload (overrides the defaults)")
    parser.add_argument("--json", metavar="PATH", help="also write every sample to PATH")
    parser.add_argument("--profile", choices=WORKLOADS, help="profile tapegrad on one workload instead")
    args = parser.parse_args(argv)

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
    print("```text", *env, "```", sep="\n", end="\n\n", flush=True)  # pasted as is into the README

    checked = check(engines, FULL, args.only)
    print(f"gradients of {', '.join(e.name for e in engines)} match hand-written NumPy on {', '.join(checked)}\n")

    rounds = args.rounds or (QUICK_ROUNDS if args.quick else ROUNDS)
    measured = measure(engines, args.only, FULL, rounds, PASSES, CLOCKS[args.clock])
    results = {}
    for name, samples in measured.items():
        results[name] = {"samples": samples, "stats": summarise(samples, name, FULL)}
        print("\n".join(table(name, results[name]["stats"], samples)), flush=True)
    print("\n".join(targets(results)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": env, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
