"""What a change costs the engine: this tree against a git ref, side by side in one process, round by round.

The package at ``--ref`` (default ``main``) is extracted from git into a temporary folder under another name,
so both versions run in the same interpreter; every round runs each workload once per version, in turn, and
the figure reported is the median over rounds of the per-round ratio (this tree / ref), which cancels most of
what a shared machine's load does to both. Times are this process's CPU time by default (``--clock cpu``).

Workloads (the README's speed benchmark's, smaller where it saves time):

- ``chain``: 1,000 elementwise ops (cycles of ``x*w``, ``x+b``, ``tanh``, ``x-c``) on shape (4,), then ``sum``
  and ``backward``: µs per op;
- ``fanout``: ``h = tanh(x)`` used by 100 branches ``h * k_i`` summed back: µs per op;
- ``mlp64`` / ``mlp32``: one SGD step of a 784-512-512-10 ReLU MLP, batch 256: ms per step;
- ``chain-after-hook``: the chain in this tree after a hook was registered and removed (against ref's plain
  chain): a removed hook must cost nothing;
- ``value_and_grad``: the chain through ``tg.value_and_grad``, against this tree's own eager chain (not the ref):
  what the transform adds per op.

    python -m benchmarks.overhead --ref main --rounds 201

``--breakdown`` adds where the time of one op of the speed benchmark's chain (``tanh(x * w + b) - c``, every
leaf requiring a gradient) goes, in both trees: NumPy's own forward, the op function without a tape, recording;
the hand-written backward's NumPy, the rules' calls (run on the saved values without the replay), and the rest of
the replay (its walk, the accumulation, the hand-over, the release).

It prints its figures and writes nothing.
"""

from __future__ import annotations

import contextlib
import importlib
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

if __name__ == "__main__" and not __package__:  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from benchmarks import cli  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORKLOADS = ("chain", "fanout", "mlp64", "mlp32", "chain-after-hook", "value_and_grad")


def load_ref(ref: str, where: pathlib.Path):
    """Import the ``tapegrad`` package of git ``ref`` as a module named ``tapegrad_<ref>``."""
    files = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", ref, "tapegrad"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    sources = {
        pathlib.Path(f).relative_to("tapegrad"): subprocess.run(
            ["git", "show", f"{ref}:{f}"], cwd=ROOT, capture_output=True, check=True
        ).stdout
        for f in files
        if f.endswith(".py")
    }
    return import_renamed(sources, where, "tapegrad_" + "".join(c if c.isalnum() else "_" for c in ref))


def import_renamed(sources: dict, where: pathlib.Path, name: str, binaries: dict | None = None):
    """Write a ``tapegrad`` package's modules (relative path -> source bytes) under ``where`` as package ``name``
    and import it, beside this tree's ``tapegrad``: its absolute imports of itself (``import tapegrad.ops as
    ops``) are rewritten to load its own modules, not this tree's. ``binaries``: files copied as they are (a
    compiled extension module, relative path -> bytes)."""
    for path, source in sources.items():
        target = where / name / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(re.sub(rb"^(\s*(?:import|from) )tapegrad\b", rb"\1" + name.encode(), source, flags=re.M))
    for path, data in (binaries or {}).items():
        (where / name / path).write_bytes(data)
    sys.path.insert(0, str(where))
    return importlib.import_module(name)


def _record(tg):
    return tg.record() if hasattr(tg, "record") else tg.tape.record()


def chain(tg, clock, n_ops=1000):
    """One forward + backward of the overhead chain; seconds per op."""
    x0 = tg.Tensor(np.linspace(-1.0, 1.0, 4), requires_grad=True)
    w, b, c = tg.Tensor(np.full(4, 0.9)), tg.Tensor(np.full(4, 0.1)), tg.Tensor(np.full(4, 0.05))
    start = clock()
    with _record(tg):
        x = x0
        for _ in range(n_ops // 4):
            x = x * w
            x = x + b
            x = tg.tanh(x)
            x = x - c
        loss = x.sum()
    loss.backward()
    return (clock() - start) / (n_ops + 1)


def chain_function(tg, n_ops=1000):
    w, b, c = tg.Tensor(np.full(4, 0.9)), tg.Tensor(np.full(4, 0.1)), tg.Tensor(np.full(4, 0.05))

    def f(x):
        for _ in range(n_ops // 4):
            x = x * w
            x = x + b
            x = tg.tanh(x)
            x = x - c
        return x.sum()

    return f


def value_and_grad_chain(tg, clock, n_ops=1000):
    f = tg.value_and_grad(chain_function(tg, n_ops))
    x0 = np.linspace(-1.0, 1.0, 4)
    start = clock()
    f(x0)
    return (clock() - start) / (n_ops + 1)


def fanout(tg, clock, branches=100):
    x = tg.Tensor(np.linspace(-1.0, 1.0, 4), requires_grad=True)
    ks = [tg.Tensor(np.full(4, 0.01 * (i + 1))) for i in range(branches)]
    start = clock()
    with _record(tg):
        h = tg.tanh(x)
        total = h * ks[0]
        for k in ks[1:]:
            total = total + h * k
        loss = total.sum()
    loss.backward()
    return (clock() - start) / (2 * branches + 1)


def make_mlp(tg, dtype):
    rng = np.random.default_rng(0)
    sizes = (784, 512, 512, 10)
    params = []
    for i, o in zip(sizes[:-1], sizes[1:]):
        params.append(tg.Tensor((rng.standard_normal((i, o)) / np.sqrt(i)).astype(dtype), requires_grad=True))
        params.append(tg.Tensor(np.zeros(o, dtype), requires_grad=True))
    x = tg.Tensor(rng.standard_normal((256, 784)).astype(dtype))
    y = tg.Tensor(rng.standard_normal((256, 10)).astype(dtype))

    def step(clock):
        start = clock()
        with _record(tg):
            h = x
            for k in range(0, len(params), 2):
                h = h @ params[k] + params[k + 1]
                if k + 2 < len(params):
                    h = tg.relu(h)
            loss = ((h - y) ** 2).mean()
        loss.backward()
        for p in params:
            p.data -= 1e-3 * p.grad
            p.grad = None
        return clock() - start

    return step


def _chain_arrays():
    return np.linspace(-1.0, 1.0, 4), np.full(4, 0.9), np.full(4, 0.1), np.full(4, 0.05)


def _numpy_chain(clock, n_ops):
    """The chain by hand, forward then backward: seconds per op of each."""
    x, w, b, c = _chain_arrays()
    saved = []
    start = clock()
    for _ in range(n_ops // 4):
        t = np.tanh(x * w + b)
        saved.append((x, t))
        x = t - c
    middle = clock()
    g, gw, gb, gc = np.ones(4), np.zeros(4), np.zeros(4), np.zeros(4)
    for x, t in reversed(saved):
        gc -= g
        g = g * (1 - t * t)
        gb += g
        gw += g * x
        g = g * w
    return (middle - start) / n_ops, (clock() - middle) / n_ops


def _tensor_chain(tg, clock, n_ops, recorded):
    """The chain on tensors: seconds per op of the forward (recorded or not) and of the backward."""
    x, w, b, c = (tg.Tensor(a, requires_grad=True) for a in _chain_arrays())
    start = clock()
    with _record(tg) if recorded else contextlib.nullcontext():
        for _ in range(n_ops // 4):
            x = tg.tanh(x * w + b) - c
        loss = x.sum()
    middle = clock()
    if recorded:
        loss.backward()
    return (middle - start) / n_ops, (clock() - middle) / n_ops


def _rules_chain(tg, clock, n_ops):
    """The rules of the chain's entries called on their saved values, last first, without the replay."""
    from tapegrad.backend.numpy_rules import numpy_rules
    from tapegrad.core.node import ANS, MASK, OP, SAVED, SRCS

    x, w, b, c = (tg.Tensor(a, requires_grad=True) for a in _chain_arrays())
    with tg.record(persistent=True) as tape:
        for _ in range(n_ops // 4):
            x = tg.tanh(x * w + b) - c
    recs = [e.rec for _, e in tape.live_entries()]
    g = np.ones(4)
    start = clock()
    for rec in reversed(recs):
        vjps, vals, ans, mask = rec[OP].vjps, rec[SAVED], rec[ANS], rec[MASK]
        for i in range(len(rec[SRCS])):
            if (mask >> i) & 1:
                vjps[i](numpy_rules, g, ans, *vals)
    seconds = (clock() - start) / n_ops
    tape.release()
    return seconds


def breakdown(engines, clock, rounds, n_ops=1000) -> list[str]:
    """Per op of the chain, median over interleaved rounds: the lines of the ``--breakdown`` table."""
    samples: dict = {}

    def add(key, value):
        samples.setdefault(key, []).append(value)

    for r in range(rounds):
        fwd, bwd = _numpy_chain(clock, n_ops)
        add("numpy fwd", fwd)
        add("numpy bwd", bwd)
        add("rules", _rules_chain(engines["here"], clock, n_ops))
        for k in sorted(engines, reverse=bool(r % 2)):
            add((k, "plain"), _tensor_chain(engines[k], clock, n_ops, False)[0])
            fwd, bwd = _tensor_chain(engines[k], clock, n_ops, True)
            add((k, "fwd"), fwd)
            add((k, "bwd"), bwd)
    m = {k: statistics.median(v) * 1e6 for k, v in samples.items()}
    lines = ["tree   NumPy fwd  op fn (no tape)  recording  | NumPy bwd  rules' calls  replay's rest  | µs/op, chain"]
    for k in engines:
        lines.append(
            f"{k:<6} {m['numpy fwd']:9.2f}  {m[(k, 'plain')] - m['numpy fwd']:+15.2f}  "
            f"{m[(k, 'fwd')] - m[(k, 'plain')]:+9.2f}  | {m['numpy bwd']:9.2f}  {m['rules'] - m['numpy bwd']:+12.2f}  "
            f"{m[(k, 'bwd')] - m['rules']:+13.2f}  | total {m[(k, 'fwd')] + m[(k, 'bwd')]:.2f}"
        )
    return lines


def resolve_ref(ref: str) -> str | None:
    """``ref`` if git knows it, else ``origin/<ref>`` (a fresh clone has no local ``main``), else None."""
    for candidate in (ref, f"origin/{ref}"):
        known = subprocess.run(["git", "rev-parse", "--verify", "--quiet", candidate], cwd=ROOT, capture_output=True)
        if known.returncode == 0:
            return candidate
    return None


def main(argv=None):
    parser = cli.parser("python -m benchmarks.overhead", __doc__)
    parser.add_argument("--ref", default="main", help="git ref to compare this tree against")
    parser.add_argument("--rounds", type=int, default=201, help="interleaved rounds (each runs every workload)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu", help="process CPU time or wall time")
    parser.add_argument("--only", nargs="*", choices=WORKLOADS, default=list(WORKLOADS), help="workloads to run")
    parser.add_argument("--mlp-every", type=int, default=4, help="run the MLP steps every k-th round (they are slow)")
    parser.add_argument(
        "--breakdown", action="store_true", help="also where one op of the chain spends its time, in both trees"
    )
    args = parser.parse_args(argv)
    if args.rounds < 2:
        parser.error("--rounds: at least 2, for quartiles")
    ref_name, args.ref = args.ref, resolve_ref(args.ref)
    if args.ref is None:
        parser.error(f"--ref {ref_name}: not a git ref of {ROOT}, nor is origin/{ref_name} (try --ref HEAD)")
    sys.path.insert(0, str(ROOT))
    import tapegrad as here

    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    try:  # one BLAS thread, as the speed benchmark pins it: the MLP steps compare the engines, not the threads
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:
        pass
    with tempfile.TemporaryDirectory() as tmp:
        ref = load_ref(args.ref, pathlib.Path(tmp))
        engines = {"ref": ref, "here": here}
        mlps = {k: {d: make_mlp(tg, d) for d in (np.float64, np.float32)} for k, tg in engines.items()}
        jobs = {
            "chain": lambda tg, k: chain(tg, clock),
            "fanout": lambda tg, k: fanout(tg, clock),
            "mlp64": lambda tg, k: mlps[k][np.float64](clock),
            "mlp32": lambda tg, k: mlps[k][np.float32](clock),
        }
        ratios = {w: [] for w in args.only}
        times = {w: {"ref": [], "here": []} for w in args.only}
        if "chain-after-hook" in args.only:  # from here on, this tree has seen a hook registered and removed
            probe = here.Tensor(1.0, requires_grad=True)
            probe.register_hook(lambda g: g).remove()
        for _ in range(3):  # warm-up
            for tg in engines.values():
                chain(tg, clock)
        with cli.progress(args.rounds, desc="rounds", unit="round") as bar:
            for r in range(args.rounds):
                bar.update()
                for w in args.only:
                    if w.startswith("mlp") and r % args.mlp_every:
                        continue
                    if w == "value_and_grad":
                        pair = {"ref": chain(here, clock), "here": value_and_grad_chain(here, clock)}
                    elif w == "chain-after-hook":
                        pair = {"ref": chain(ref, clock), "here": chain(here, clock)}
                    else:  # alternate who goes first (counting only the rounds this workload runs in)
                        turn = r // args.mlp_every if w.startswith("mlp") else r
                        order = ("ref", "here") if turn % 2 else ("here", "ref")
                        pair = {k: jobs[w](engines[k], k) for k in order}
                    for k, v in pair.items():
                        times[w][k].append(v)
                    ratios[w].append(pair["here"] / pair["ref"])
    print(
        f"numpy {np.__version__}, python {sys.version.split()[0]}, {args.rounds} interleaved rounds, {args.clock} time, "
        f"ref {args.ref}"
    )
    print("workload            unit    ref median   here median   ratio median [IQR] of per-round ratios")
    for w in args.only:
        unit, scale = ("ms/step", 1e3) if w.startswith("mlp") else ("µs/op", 1e6)
        base = "eager (here)" if w == "value_and_grad" else "ref"
        q1, med, q3 = statistics.quantiles(ratios[w], n=4)
        print(
            f"{w:<18}  {unit:<7} {statistics.median(times[w]['ref']) * scale:>10.3f}   "
            f"{statistics.median(times[w]['here']) * scale:>11.3f}   {med:.3f} [{q1:.3f}-{q3:.3f}]"
            + (f"  (against {base})" if w == "value_and_grad" else "")
        )
    if args.breakdown:
        print("\nwhere one op of the chain goes (medians; the rules are this tree's, run without the replay):")
        print("\n".join(breakdown(engines, clock, args.rounds)))


if __name__ == "__main__":
    main()
