"""Memory, side by side: tapegrad, the node-graph reference and (when installed) PyTorch CPU, on one model.

    python -m benchmarks.memory            # full run: table, docs/memory.png, docs/memory.json
    python -m benchmarks.memory --quick    # smaller and shorter, for a smoke test
    python -m benchmarks.memory --flamegraph   # also memray's flamegraph HTML per design (one-step peak)

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

import argparse
import ctypes
import gc
import json
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from . import workloads as wl

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


# -- figures --------------------------------------------------------------------------------------------
def slope(points: dict) -> float:
    """Least-squares bytes per step of live memory over the integer-labelled marks."""
    steps = np.array([k for k in points if isinstance(k, int) and k >= 1], dtype=float)
    live = np.array([points[int(k)] for k in steps])
    return float(np.polyfit(steps, live, 1)[0])


def measure(args, engines, tmp: Path) -> dict:
    cfg = {
        "history_steps": 50 if args.quick else 200,
        "long_steps": 300 if args.quick else 2000,
        "deep": (256, *[256] * (8 if args.quick else 16), 10),
        "deep_n": 512 if args.quick else 1024,
    }
    cfg["deep_group"] = int(round(np.sqrt(len(cfg["deep"]) - 2)))  # sqrt(L) layers per group: the classic trade
    res = {"config": {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()}, "engines": {}}
    cross = [e for e in engines if e.name != "pytorch-cpu"]
    for E in engines:
        _warm_up(E, cfg)
        r = res["engines"][E.name] = {}
        print(f"  {E.name}: history kept", flush=True)
        h = MemrayMeter(tmp / f"{E.name}-history.bin").run(wl.history_kept, E, steps=cfg["history_steps"])
        r["history_slope"] = slope(h["points"])
        r["history_leaked"] = h["leaked"]
        r["history_points"] = h["points"]
        r["activations_small"] = h["activations"]
        print(f"  {E.name}: long run", flush=True)
        lr = MemrayMeter(tmp / f"{E.name}-long.bin").run(wl.long_run, E, steps=cfg["long_steps"])
        r["long_points"] = lr["points"]
        print(f"  {E.name}: one step", flush=True)
        one = MemrayMeter(tmp / f"{E.name}-step.bin").run(wl.one_step, E)
        r.update(
            peak=one["peak"],
            floor=one["floor"],
            activations=one["activations"],
            at_peak=one["at_peak"],
            timeline=[one["timeline"][0].tolist(), one["timeline"][1].tolist()],
            marks=one["marks"],
        )
        if E.checkpoint is not None or E.name == "node-graph":
            print(f"  {E.name}: deep MLP", flush=True)
            deep = dict(sizes=cfg["deep"], n=cfg["deep_n"])
            r["deep_peak"] = MemrayMeter(tmp / f"{E.name}-deep.bin").run(wl.one_step, E, **deep)["peak"]
            if E.checkpoint is not None:
                ck = MemrayMeter(tmp / f"{E.name}-deep-ckpt.bin").run(
                    wl.one_step, E, checkpoint_every=cfg["deep_group"], **deep
                )
                r["deep_ckpt_peak"] = ck["peak"]
                r["deep_floor"] = ck["floor"]
        if args.flamegraph:
            _flamegraph(tmp / f"{E.name}-step.bin", Path(args.out) / f"memory-flamegraph-{E.name}.html")
    for E in cross:
        print(f"  {E.name}: tracemalloc cross-check", flush=True)
        r = res["engines"][E.name]
        h = TracemallocMeter().run(wl.history_kept, E, steps=cfg["history_steps"])
        r["tm_history_slope"] = slope(h["points"])
        lr = TracemallocMeter().run(wl.long_run, E, steps=cfg["long_steps"])
        r["tm_long_points"] = lr["points"]
        r["tm_peak"] = TracemallocMeter().run(wl.one_step, E)["peak"]
    return res


class _NoMeter:
    def mark(self, label) -> None:
        pass


def _warm_up(E, cfg) -> None:
    """One untracked run of each shape: BLAS buffers, lazy imports and caches are not what a step retains."""
    wl.history_kept(E, _NoMeter(), steps=3)
    wl.one_step(E, _NoMeter())
    if E.checkpoint is not None:
        wl.one_step(E, _NoMeter(), sizes=cfg["deep"][:4], n=8, checkpoint_every=1)
    gc.collect()


def _flamegraph(capture: Path, html: Path) -> None:
    import subprocess

    html.unlink(missing_ok=True)
    subprocess.run([sys.executable, "-m", "memray", "flamegraph", "-f", "-o", str(html), str(capture)], check=True)


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
    row("one step 784-512-512-10 x256: peak (MB)", lambda r: f"{r['peak'] / 1e6:.2f}")
    row("  ... floor: params + grads + batch (MB)", lambda r: f"{r['floor'] / 1e6:.2f}")
    row("  ... peak / floor", lambda r: f"{r['peak'] / r['floor']:.3f}")
    row("  ... (peak - floor) / activations", lambda r: f"{(r['peak'] - r['floor']) / r['activations']:.2f}")
    row("  ... tracemalloc peak / floor", lambda r: f"{r['tm_peak'] / r['floor']:.3f}" if "tm_peak" in r else "-")
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    eng = res["engines"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), dpi=80)
    ax = axes[0]
    for name, r in eng.items():
        pts = {k: v for k, v in r["history_points"].items() if isinstance(k, int)}
        ax.plot(list(pts), [v / 1e6 for v in pts.values()], label=name)
    ax.set(title="history kept: live memory", xlabel="step", ylabel="MB", yscale="symlog")
    ax.legend(fontsize=8)
    ax = axes[1]
    for name, r in eng.items():
        pts = {k: v for k, v in r["long_points"].items() if isinstance(k, int)}
        ax.plot(list(pts), [v / 1e6 for v in pts.values()], marker=".", label=name)
    ax.set(title="no history: live memory", xlabel="step", ylabel="MB")
    ax.legend(fontsize=8)
    ax = axes[2]
    for name, r in eng.items():
        t, heap = r["timeline"]
        marks = dict(r["marks"])
        t0, t1 = marks["start"], marks["backward"] + 5
        sel = [(a - t0, b / 1e6) for a, b in zip(t, heap) if t0 <= a <= t1]
        line = ax.plot([a for a, _ in sel], [b for _, b in sel], label=name)[0]
        ax.axvline(marks["forward"] - t0, color=line.get_color(), ls=":", lw=1)
        ax.axhline(r["floor"] / 1e6, color="grey", ls="--", lw=0.8)
    ax.set(title="one step: forward | backward (dotted: backward starts)", xlabel="ms", ylabel="MB")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.memory", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer steps and a smaller deep MLP (a smoke test)")
    p.add_argument("--flamegraph", action="store_true", help="write memray's flamegraph HTML per design")
    p.add_argument("--no-torch", action="store_true", help="leave PyTorch out even when it is installed")
    p.add_argument("--out", default="docs", help="where the PNG, JSON (and HTML) go (default: docs)")
    args = p.parse_args(argv)
    note = pin_malloc()
    engines = wl.adapters(with_torch=not args.no_torch)
    print(note)
    print("engines:", ", ".join(e.name for e in engines), f"| numpy {np.__version__} | python {sys.version.split()[0]}")
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        res = measure(args, engines, Path(tmp))
    res["note"] = note
    print()
    print(table(res))
    for name, r in res["engines"].items():
        shown = ", ".join(f"{where} {size / 1e6:.2f} MB" for where, size in r["at_peak"][:3])
        print(f"alive at the one-step peak, {name}: {shown}")
    suffix = "-quick" if args.quick else ""
    plot(res, Path(args.out) / f"memory{suffix}.png")
    with open(Path(args.out) / f"memory{suffix}.json", "w") as f:
        json.dump(_jsonable(res), f, indent=1)
    print(f"\nwrote {args.out}/memory{suffix}.png and {args.out}/memory{suffix}.json")
    return 0


def _jsonable(res):
    out = json.loads(json.dumps(res, default=str))
    for r in out["engines"].values():
        r.pop("timeline", None)  # large; the PNG shows it
    return out


if __name__ == "__main__":
    sys.exit(main())
