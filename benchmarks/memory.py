"""Memory, side by side: tapegrad, the node-graph reference and (when installed) PyTorch CPU, on one model.

    python -m benchmarks.memory                 # full run (~2 min): table, memory.png, memory.json in --out
    python -m benchmarks.memory --quick         # smaller and shorter (~40 s), for a smoke test
    python -m benchmarks.memory --flamegraph    # also memray's flamegraph HTML per design (one-step peak)
    python -m benchmarks.memory --update-docs   # the committed docs/memory.png, docs/memory.json and table
    python -m benchmarks.memory --replot docs/memory.json --out /tmp/plot   # redraw a run's plot only

Measured with memray's ``Tracker`` (Python allocators traced too, so small objects count), read back with
``memray.FileReader``: the high-water mark (``metadata.peak_memory``), the allocations still alive when
tracking stopped (``get_leaked_allocation_records``), the arrays alive at the peak
(``get_high_watermark_allocation_records``) and the heap over time (``get_memory_snapshots``, one per
millisecond). Live memory at a point of the loop is read from a snapshot taken while the loop idles there
for a few milliseconds. tracemalloc measures the NumPy-backed engines again, as a cross-check.

glibc's allocator thresholds are pinned with ``mallopt`` (M_MMAP_THRESHOLD and M_TRIM_THRESHOLD), so
whether big arrays are mapped or taken from the heap does not depend on what ran before.
"""

from __future__ import annotations

import os
import pathlib
import sys

if __name__ == "__main__" and not __package__:  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

# BLAS on one thread, as PyTorch is run (set_num_threads(1)): multi-threaded OpenBLAS mallocs a 512 KiB job
# buffer on every GEMM, which would show in every NumPy engine's peak; one thread also keeps a shared machine's
# load out of the figures. It only takes effect if NumPy is not imported yet.
BLAS_PINNED = "numpy" not in sys.modules
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import ctypes  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks import cli  # noqa: E402
from benchmarks import workloads as wl  # noqa: E402

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
PINNED = 128 * 1024


def pin_malloc() -> str:
    """Pin glibc's mmap and trim thresholds (turning off their dynamic adjustment); say what was done."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        ok = libc.mallopt(M_MMAP_THRESHOLD, PINNED) and libc.mallopt(M_TRIM_THRESHOLD, PINNED)
    except OSError:
        ok = False
    if ok:
        return f"glibc mallopt: M_MMAP_THRESHOLD = M_TRIM_THRESHOLD = {PINNED // 1024} KiB (pinned)"
    return "glibc mallopt not available: allocator thresholds left at their defaults"


# -- meters: the same marks, read by memray or by tracemalloc ---------------------------------------------
# _live: each mark first runs gc.collect(). None of the engines makes reference cycles, so it frees no object
# of theirs; what it does free is CPython's free lists (up to 2,000 spare tuples of each small size, and
# floats), which both profilers count as allocated: without it, a loop shows ~50 B/step of "growth" that
# stops after ~2,000 steps and that no engine holds.
class MemrayMeter:
    """Tracks one workload run; ``mark`` idles a few ms so that a heap snapshot lands at that point."""

    name = "memray"

    def __init__(self, path: Path, idle_ms: float = 5.0):
        self.path, self.idle, self.marks = Path(path), idle_ms / 1000, []

    def run(self, workload, engine, **kw):
        import memray

        if self.path.exists():
            self.path.unlink()
        gc.collect()
        with memray.Tracker(self.path, trace_python_allocators=True, memory_interval_ms=1):
            out = workload(engine, self, **kw)
            self.mark("end")
        return self._read(_figures(out))

    def mark(self, label) -> None:
        gc.collect()  # see _live
        t0 = time.time() * 1000
        time.sleep(self.idle)
        self.marks.append((label, t0, time.time() * 1000))

    def _read(self, out):
        import memray

        reader = memray.FileReader(self.path)
        snaps = list(reader.get_memory_snapshots())
        times = np.array([s.time for s in snaps], dtype=float)
        heap = np.array([s.heap for s in snaps], dtype=float)
        points = {}
        for label, t0, t1 in self.marks:
            inside = np.nonzero((times > t0) & (times < t1))[0]
            # While the loop idles the heap is constant; a snapshot stamped in the window but taken just before
            # it can only be higher (mid-step), so the smallest one is the idle value.
            sel = heap[inside] if len(inside) else heap[max(int(np.searchsorted(times, t1)) - 1, 0) :][:1]
            points[label] = float(sel.min())
        leaked = sum(r.size * r.n_allocations for r in reader.get_leaked_allocation_records(merge_threads=True))
        at_peak = sorted(
            reader.get_high_watermark_allocation_records(merge_threads=True), key=lambda r: -r.size * r.n_allocations
        )
        top = []
        for r in at_peak[:6]:
            frames = r.stack_trace(max_stacks=1)
            where = f"{frames[0][0]} ({Path(frames[0][1]).name}:{frames[0][2]})" if frames else "?"
            top.append((where, r.size))
        reader.close()
        return {
            "points": points,
            "peak": reader.metadata.peak_memory,
            "leaked": leaked,
            "at_peak": top,
            "timeline": (times - (times[0] if len(times) else 0), heap),
            "marks": [(label, t0 - (times[0] if len(times) else 0)) for label, t0, _ in self.marks],
            **out,
        }


class TracemallocMeter:
    """The cross-check: tracemalloc sees the allocations Python and NumPy make (not PyTorch's)."""

    name = "tracemalloc"

    def __init__(self):
        self.points = {}

    def run(self, workload, engine, **kw):
        gc.collect()
        tracemalloc.start()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        self.base = base
        out = workload(engine, self, **kw)
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        return {"points": self.points, "peak": peak, **_figures(out)}

    def mark(self, label) -> None:
        gc.collect()  # see _live
        self.points[label] = tracemalloc.get_traced_memory()[0] - self.base


def _figures(out: dict) -> dict:
    """A workload's numbers, without the tensors it kept alive until tracking stopped."""
    return {k: v for k, v in out.items() if k not in ("keep", "history", "params")}


class RssMeter:
    """No tracer at all: the process's resident memory (after gc.collect()), a check on both profilers."""

    name = "rss"

    def __init__(self):
        self.points = {}

    def run(self, workload, engine, **kw):
        gc.collect()
        out = workload(engine, self, **kw)
        return {"points": self.points, **_figures(out)}

    def mark(self, label) -> None:
        gc.collect()
        with open("/proc/self/statm") as f:
            self.points[label] = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# -- figures --------------------------------------------------------------------------------------------
def slope(points: dict) -> float:
    """Least-squares bytes per step of live memory over the integer-labelled marks."""
    steps = np.array([k for k in points if isinstance(k, int) and k >= 1], dtype=float)
    live = np.array([points[int(k)] for k in steps])
    return float(np.polyfit(steps, live, 1)[0])


def measure(args, engines, tmp: Path, bar=None) -> dict:
    bar = bar or cli._NoBar()
    started = []

    def stage(desc: str) -> None:  # the bar counts stages: 4 per engine, 1 per tracemalloc cross-check
        if started:
            bar.update()
        started.append(desc)
        bar.set_description(desc)

    cfg = {
        "history_steps": 50 if args.quick else 200,
        "long_steps": 300 if args.quick else 2000,
        "deep": (256, *[256] * (8 if args.quick else 16), 10),
        "deep_n": 512 if args.quick else 1024,
    }
    cfg["deep_group"] = int(round(np.sqrt(len(cfg["deep"]) - 2)))  # sqrt(L) layers per group: the classic trade
    res = {
        "config": {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()},
        "engines": {},
        "timelines": {},
    }
    cross = [e for e in engines if e.name != "pytorch-cpu"]
    for E in engines:
        _warm_up(E, cfg)
        r = res["engines"][E.name] = {}
        stage(f"{E.name}: history kept")
        h = MemrayMeter(tmp / f"{E.name}-history.bin").run(wl.history_kept, E, steps=cfg["history_steps"])
        r["history_slope"] = slope(h["points"])
        r["history_leaked"] = h["leaked"]
        r["history_points"] = h["points"]
        r["activations_small"] = h["activations"]
        stage(f"{E.name}: long run")
        lr = MemrayMeter(tmp / f"{E.name}-long.bin").run(wl.long_run, E, steps=cfg["long_steps"])
        r["long_points"] = lr["points"]
        if os.path.exists("/proc/self/statm"):
            r["rss_long_points"] = RssMeter().run(wl.long_run, E, steps=cfg["long_steps"])["points"]
        stage(f"{E.name}: one step")
        one = MemrayMeter(tmp / f"{E.name}-step.bin").run(wl.one_step, E)
        r.update(peak=one["peak"], floor=one["floor"], activations=one["activations"], at_peak=one["at_peak"])
        if isinstance(E, wl.CompiledAdapter):
            # The program's arena was made when it was traced (before tracking): what it keeps between calls
            # counts towards the step's peak, and is reported apart too.
            r["kept"] = E.step(0.01).program.kept_bytes
            r["peak_measured"], r["peak"] = one["peak"], one["peak"] + r["kept"]
            g = MemrayMeter(tmp / f"{E.name}-grads.bin").run(wl.one_step, E, grads_only=True)
            r["grads_kept"] = E.step(0.01, with_update=False).program.kept_bytes
            r["grads_peak"] = g["peak"] + r["grads_kept"]
        stage(f"{E.name}: deep MLP")
        deep = dict(sizes=cfg["deep"], n=cfg["deep_n"])
        d = MemrayMeter(tmp / f"{E.name}-deep.bin").run(wl.one_step, E, **deep)
        r["deep_peak"], r["deep_floor"] = d["peak"], d["floor"]
        if isinstance(E, wl.CompiledAdapter):
            r["deep_peak"] += E.step(0.01).program.kept_bytes
        res["timelines"][E.name] = _timeline(d)
        if E.checkpoint is not None:
            ck = MemrayMeter(tmp / f"{E.name}-deep-ckpt.bin").run(
                wl.one_step, E, checkpoint_every=cfg["deep_group"], **deep
            )
            r["deep_ckpt_peak"] = ck["peak"]
            res["timelines"][f"{E.name} + checkpoint"] = _timeline(ck)
        if args.flamegraph:
            _flamegraph(tmp / f"{E.name}-step.bin", Path(args.out) / f"memory-flamegraph-{E.name}.html")
    for E in cross:
        stage(f"{E.name}: tracemalloc cross-check")
        r = res["engines"][E.name]
        h = TracemallocMeter().run(wl.history_kept, E, steps=cfg["history_steps"])
        r["tm_history_slope"] = slope(h["points"])
        lr = TracemallocMeter().run(wl.long_run, E, steps=cfg["long_steps"])
        r["tm_long_points"] = lr["points"]
        r["tm_peak"] = TracemallocMeter().run(wl.one_step, E)["peak"]
    bar.update()
    return res


class _NoMeter:
    def mark(self, label) -> None:
        pass


def _warm_up(E, cfg) -> None:
    """One untracked run of each shape: BLAS buffers, lazy imports and caches are not what a step retains.

    The long run's shape runs 300 steps first, so that what its first steps fill once (NumPy's
    small-allocation caches among them) is not counted as growth.
    """
    wl.history_kept(E, _NoMeter(), steps=3)
    wl.long_run(E, _NoMeter(), steps=300, every=10**9)
    wl.one_step(E, _NoMeter())
    if isinstance(E, wl.CompiledAdapter):  # each shape traced and checked before anything is tracked
        for grads_only in (False, True, False, True):
            wl.one_step(E, _NoMeter(), grads_only=grads_only)
        for _ in range(2):
            wl.one_step(E, _NoMeter(), sizes=cfg["deep"], n=cfg["deep_n"])
    if E.checkpoint is not None:
        wl.one_step(E, _NoMeter(), sizes=cfg["deep"][:4], n=8, checkpoint_every=1)
    gc.collect()


def _flamegraph(capture: Path, html: Path) -> None:
    import subprocess

    html.unlink(missing_ok=True)
    subprocess.run([sys.executable, "-m", "memray", "flamegraph", "-f", "-o", str(html), str(capture)], check=True)


def _timeline(run) -> dict:
    """The heap over one step, in ms from the start of backward, from the start of forward to the end."""
    marks = dict(run["marks"])
    t, heap = run["timeline"]
    keep = (t >= marks["start"]) & (t <= marks["backward"] + 2)
    return {"ms": (t[keep] - marks["forward"]).tolist(), "heap": heap[keep].tolist()}


def _long_ratio(points, steps):
    return points[steps] / points[10] if points.get(10) else float("nan")


def table(res) -> str:
    cfg, eng = res["config"], res["engines"]
    names = list(eng)
    ref = eng.get("node-graph")
    steps = cfg["long_steps"]
    rows = [("", *names)]

    def row(label, fn):
        rows.append((label, *[fn(eng[n]) for n in names]))

    hs = cfg["history_steps"]
    row(f"history kept, retained B/step (memray, {hs} steps)", lambda r: f"{r['history_slope']:,.0f}")
    row("  ... tracemalloc cross-check", lambda r: f"{r['tm_history_slope']:,.0f}" if "tm_history_slope" in r else "-")
    row("  ... vs node-graph", lambda r: f"{ref['history_slope'] / max(r['history_slope'], 1):,.0f}x less")
    row("  ... per step / activations", lambda r: f"{r['history_slope'] / r['activations_small']:.4f}")
    row(
        f"long run, live after {steps:,} / after 10 steps",
        lambda r: f"{_long_ratio(r['long_points'], steps):.4f} ({r['long_points'][steps] / 1e3:,.1f} kB)",
    )
    row(
        "  ... tracemalloc cross-check",
        lambda r: f"{_long_ratio(r['tm_long_points'], steps):.4f}" if "tm_long_points" in r else "-",
    )
    row(
        "  ... untraced: RSS growth after step 10 (kB)",
        lambda r: (
            f"{(r['rss_long_points'][steps] - r['rss_long_points'][10]) / 1e3:+,.0f}" if "rss_long_points" in r else "-"
        ),
    )
    row("one step 784-512-512-10 x256: peak (MB)", lambda r: f"{r['peak'] / 1e6:.2f}")
    row("  ... floor: params + grads + batch (MB)", lambda r: f"{r['floor'] / 1e6:.2f}")
    row("  ... peak / floor", lambda r: f"{r['peak'] / r['floor']:.3f}")
    row("  ... (peak - floor) / activations", lambda r: f"{(r['peak'] - r['floor']) / r['activations']:.2f}")
    row("  ... tracemalloc peak / floor", lambda r: f"{r['tm_peak'] / r['floor']:.3f}" if "tm_peak" in r else "-")
    if any("kept" in r for r in eng.values()):  # a compiled engine ran: what its program keeps, and its grads
        row(
            "  ... of it kept by the program between calls (MB)",
            lambda r: f"{r['kept'] / 1e6:.2f}" if "kept" in r else "-",
        )
        row(
            "  ... value_and_grad alone (no update): peak / floor",
            lambda r: f"{r['grads_peak'] / r['floor']:.3f}" if "grads_peak" in r else "-",
        )
    deep = "x".join(str(s) for s in (cfg["deep"][0], len(cfg["deep"]) - 2, cfg["deep"][1])) + f" x{cfg['deep_n']}"
    row(f"deep MLP {deep}: peak (MB)", lambda r: f"{r['deep_peak'] / 1e6:.1f}" if "deep_peak" in r else "-")
    row(
        f"  ... checkpointed every {cfg['deep_group']} layers (MB)",
        lambda r: (
            f"{r['deep_ckpt_peak'] / 1e6:.1f} ({r['deep_ckpt_peak'] / r['deep_peak']:.2f}x)"
            if "deep_ckpt_peak" in r
            else "-"
        ),
    )
    widths = [max(len(str(c)) for c in col) for col in zip(*rows)]
    lines = ["| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def plot(res, path: Path) -> None:
    """Three views, each engine in a panel of its own where their lines would lie on top of each other.

    Left: live memory with the losses kept (log scale: the engines differ by orders of magnitude). Middle: live
    memory with nothing kept, one panel per engine, each labelled with its growth. Right: the heap over one
    step of the deep MLP, one panel per engine on a shared scale (tapegrad with and without checkpoints).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    eng, timelines = res["engines"], res.get("timelines", {})
    names = list(eng)
    colors = dict(zip(["tapegrad", "node-graph", "pytorch-cpu", "compiled"], ["C0", "C1", "C2", "C3"]))
    fig = plt.figure(figsize=(15, 2.2 + 2.0 * len(names)), dpi=100, layout="constrained")
    grid = fig.add_gridspec(len(names), 3, width_ratios=[1.1, 1, 1.2])

    ax = fig.add_subplot(grid[:, 0])
    for name, r in eng.items():
        pts = _steps(r["history_points"])
        ax.plot(list(pts), [v / 1e6 for v in pts.values()], label=name, color=colors.get(name), lw=2)
        last = list(pts)[-1]
        ax.annotate(
            f"{r['history_slope']:,.0f} B/step",
            (last, pts[last] / 1e6),
            xytext=(-4, 6),
            textcoords="offset points",
            ha="right",
            color=colors.get(name),
            fontsize=9,
        )
    ax.set(
        title=f"losses kept in a list: live memory\n(256-256-10 MLP, batch 64, {res['config']['history_steps']} steps)",
        xlabel="step",
        ylabel="MB (log scale)",
        yscale="log",
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="center right")

    steps = res["config"]["long_steps"]
    for i, name in enumerate(names):
        ax = fig.add_subplot(grid[i, 1])
        pts = _steps(eng[name]["long_points"])
        kb = np.array(list(pts.values())) / 1e3
        ax.plot(list(pts), kb, marker=".", color=colors.get(name), lw=1.5)
        base = pts.get(10, kb[0] * 1e3) / 1e3
        ax.set_ylim(base * 0.9, base * 1.1)  # +-10% around step 10: flat means flat, growth would show
        growth = kb[-1] - base
        ax.text(
            0.98,
            0.08,
            f"{base:,.0f} kB at step 10; {growth:+,.1f} kB ({growth / base:+.1%}) at step {steps:,}",
            transform=ax.transAxes,
            ha="right",
            fontsize=9,
            color=colors.get(name),
        )
        ax.set_ylabel(f"{name}\nkB")
        ax.grid(alpha=0.3)
        if i == 0:
            ax.set_title("nothing kept: live memory, one engine per panel\n(each y axis: step 10's value ±10%)")
        if i == len(names) - 1:
            ax.set_xlabel("step")
        else:
            ax.tick_params(labelbottom=False)

    deep = res["config"]["deep"]
    top = max((max(tl["heap"]) for tl in timelines.values()), default=1) / 1e6 * 1.08
    first = None
    for i, name in enumerate(names):
        ax = fig.add_subplot(grid[i, 2], sharex=first, sharey=first)
        first = first or ax
        for label, tl in timelines.items():
            if label == name or label.startswith(name + " +"):
                dashed = "checkpoint" in label
                peak = max(tl["heap"]) / 1e6
                ax.plot(
                    tl["ms"],
                    [h / 1e6 for h in tl["heap"]],
                    color=colors.get(name),
                    ls="--" if dashed else "-",
                    lw=1.3 if dashed else 2,
                    label=f"{label}: peak {peak:.1f} MB",
                )
        ax.axvline(0, color="grey", ls=":", lw=1)
        ax.set_ylim(0, top)
        ax.set_ylabel(f"{name}\nMB")
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", fontsize=9)
        if i == 0:
            ax.set_title(
                f"one step of a {len(deep) - 2}x{deep[1]} MLP, batch {res['config']['deep_n']}: the heap\n"
                "(backward starts at 0 ms)"
            )
        if i == len(names) - 1:
            ax.set_xlabel("ms from the start of backward")
        else:
            ax.tick_params(labelbottom=False)
    fig.savefig(path)
    plt.close(fig)


def _steps(points: dict) -> dict:
    """The step-labelled marks of a run (``{step: bytes}``), whether read from a run or from its JSON."""
    out = {}
    for k, v in points.items():
        if isinstance(k, int) or (isinstance(k, str) and k.isdigit()):
            out[int(k)] = v
    return dict(sorted(out.items()))


def from_json(res: dict) -> dict:
    """A run read back from its JSON, with the step labels (JSON's string keys) as integers again."""
    for r in res["engines"].values():
        for key, value in r.items():
            if key.endswith("_points"):
                r[key] = {**{k: v for k, v in value.items() if not k.isdigit()}, **_steps(value)}
    return res


def build_parser():
    p = cli.parser("python -m benchmarks.memory", __doc__)
    p.add_argument("--quick", action="store_true", help="fewer steps and a smaller deep MLP (a smoke test)")
    p.add_argument("--flamegraph", action="store_true", help="write memray's flamegraph HTML per design to --out")
    p.add_argument("--no-torch", action="store_true", help="leave PyTorch out even when it is installed")
    p.add_argument("--replot", metavar="JSON", help="redraw the plot of a run's JSON (measures nothing)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    cli.add_output_flags(p, "memory", "docs/memory.png, docs/memory.json and the table of docs/benchmarks/memory.md")
    return p


def main(argv=None) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    if args.update_docs and args.quick:
        p.error("--update-docs publishes a full run: drop --quick")
    out = cli.DOCS if args.update_docs else Path(args.out)
    suffix = "-quick" if args.quick else ""
    os.makedirs(out, exist_ok=True)
    if args.replot:
        with open(args.replot) as f:
            res = from_json(json.load(f))
        plot(res, out / f"memory{suffix}.png")
        print(f"wrote {out / f'memory{suffix}.png'}")
        return 0
    os.makedirs(args.out, exist_ok=True)
    note = pin_malloc() + (
        "; BLAS threads: 1 (OPENBLAS/OMP/MKL_NUM_THREADS)" if BLAS_PINNED else "; BLAS threads not pinned"
    )
    engines = wl.adapters(with_torch=not args.no_torch)
    print(note)
    print("engines:", ", ".join(e.name for e in engines), f"| numpy {np.__version__} | python {sys.version.split()[0]}")
    stages = 4 * len(engines) + sum(e.name != "pytorch-cpu" for e in engines)
    with tempfile.TemporaryDirectory() as tmp, cli.progress(stages, "memory", "stage", args.no_progress) as bar:
        res = measure(args, engines, Path(tmp), bar)
    res["note"] = note
    print()
    print(table(res))
    for name, r in res["engines"].items():
        shown = ", ".join(f"{where} {size / 1e6:.2f} MB" for where, size in r["at_peak"][:3])
        print(f"alive at the one-step peak, {name}: {shown}")
    plot(res, out / f"memory{suffix}.png")
    with open(out / f"memory{suffix}.json", "w") as f:
        json.dump(_jsonable(res), f, indent=1)
    print(f"\nwrote {out / f'memory{suffix}.png'} and {out / f'memory{suffix}.json'}")
    if args.update_docs:
        cli.replace_between_markers(cli.DOCS / "benchmarks" / "memory.md", "memory-table", table(res))
        print(f"and the table in {cli.DOCS / 'benchmarks' / 'memory.md'}")
    return 0


def _jsonable(res):
    """The run as JSON; the heap timelines rounded (0.1 ms, whole bytes) to keep the file small."""
    out = json.loads(json.dumps(res, default=str))
    for tl in out.get("timelines", {}).values():
        tl["ms"] = [round(t, 1) for t in tl["ms"]]
        tl["heap"] = [int(h) for h in tl["heap"]]
    return out


if __name__ == "__main__":
    sys.exit(main())
