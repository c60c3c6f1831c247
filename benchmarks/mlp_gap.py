"""Where the MLP step's gap to the tight hand-written step goes: ``python -m benchmarks.mlp_gap --pin``.

The tight step (``numpy-tight``, the reference of the MLP speed targets) writes its bias, ReLU and loss in
place and masks the ReLU's gradient with a product (``g *= a > 0``, which is NaN where ``g`` is infinite). A
tape cannot do the first (each op's output is a value later ops and rules read) and must not do the second (a
masked gradient is a select). Each variant here changes the tight step one thing at a time towards what a
tape computes, then all at once (``replica``: the arrays tapegrad computes, in the same order, without a tape),
and runs them interleaved with tapegrad, paired per round. So ``replica / tight`` is the price of a tape's
values and ``tapegrad / replica`` the engine's own (its Python beside the NumPy calls)::

    python -m benchmarks.mlp_gap --pin --rounds 200                  # float32, about 2 minutes
    python -m benchmarks.mlp_gap --pin --rounds 200 --dtype float64
    python -m benchmarks.mlp_gap --tiny --rounds 2                    # the test's run: every variant's gradients
    python -m benchmarks.mlp_gap --pin --cold-cache 4 --rounds 3000  # the engine's Python, with cold caches

Every variant's gradients are first checked against hand-written NumPy's (``benchmarks.speed_engines.check``).

``--cold-cache MiB`` asks why the engine costs more beside full-size arrays than its Python costs alone. It times
the MLP's forward on tiny arrays (``TINY``), written once in NumPy and once with tapegrad (the same ops), paired
per round: once as it is and once with MiB of memory written between every two ops, as a full-size op's arrays
would (the fill's time is in both and cancels). The difference of the two forwards is the engine's own time; with
the fill it is its Python running with cold caches. Then the same for the backward: the hand-written rules with
the fill after each of the tape's 11 entries, against tapegrad's replay with the fill called from a replay
observer before each entry (the observer's path is in both of its rounds, with the fill and without).
"""

from __future__ import annotations

import pathlib
import sys

if __name__ == "__main__" and not __package__:  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks import hygiene  # noqa: E402

if __name__ == "__main__" and "--pin" in sys.argv[1:]:
    hygiene.cap_blas_threads_by_env()  # before NumPy's first import, or BLAS has already started its threads

import numpy as np  # noqa: E402

import tapegrad as tg  # noqa: E402
from benchmarks import cli  # noqa: E402
from benchmarks.speed import measure, paired_ratio  # noqa: E402
from benchmarks.speed_engines import FULL, Engine, available_engines, check  # noqa: E402
from benchmarks.speed_workloads import TINY, mlp_data, numpy_mlp_tight  # noqa: E402
from tapegrad.backend.numpy_rules import masked  # noqa: E402
from tapegrad.core.node import OP  # noqa: E402

__all__ = ["VARIANTS", "variant", "main"]


def variant(*, bias=False, relu=False, nonzero=False, loss=False, select=False):
    """The tight MLP step (``benchmarks.speed_workloads.numpy_mlp_tight``, which ``variant()`` repeats with
    every switch off) with some of a tape's ways: ``bias``/``relu`` out of place; ``nonzero``: the ReLU's mask
    read from its output (``ans != 0``, as its rule does) rather than its input; ``loss``: the loss as separate
    ops with tapegrad's rules (subtract, power, mean); ``select``: the mask applied as the exact select
    (``numpy_rules.masked``) rather than a product."""

    def build(s, dtype):
        params, X, Y = mlp_data(s, dtype)
        lr = s.lr

        def forward():
            acts, a = [X], X
            for i in range(0, len(params), 2):
                a = a @ params[i]
                if bias:
                    a = a + params[i + 1]
                else:
                    a += params[i + 1]
                if i + 2 < len(params):
                    a = np.maximum(a, 0) if relu else np.maximum(a, 0, out=a)
                acts.append(a)
            if loss:
                diff = a - Y
                return (diff**2).mean(), acts, diff
            diff = a
            diff -= Y
            return (diff * diff).mean(), acts, diff

        def backward(state):
            _, acts, diff = state
            if loss:  # mean's rule broadcasts g / n; power's is g * 2 * x; subtract's passes g on
                g = np.broadcast_to(np.ones((), diff.dtype) / diff.size, diff.shape) * 2 * diff
            else:
                g = diff
                g *= 2 / diff.size
            grads = [None] * len(params)
            for i in range(len(params) - 2, -1, -2):
                a_in = acts[i // 2]
                grads[i], grads[i + 1] = a_in.T @ g, g.sum(axis=0)
                if i:
                    g = g @ params[i].T
                    cond = a_in != 0 if nonzero else a_in > 0
                    if select:
                        g = masked(cond, g)
                    else:
                        g *= cond
            for p, gp in zip(params, grads):
                p -= lr * gp
            return grads

        return forward, backward

    return build


# name, what it changes, its builder: each one thing, then all of them
VARIANTS = [
    ("tight", "the reference: bias, ReLU and loss in place, the mask a product", numpy_mlp_tight),
    ("bias", "the bias added out of place", variant(bias=True)),
    ("relu", "the ReLU out of place", variant(relu=True)),
    ("nonzero", "the mask from the ReLU's output (ans != 0)", variant(nonzero=True)),
    ("loss", "the loss as ops, with their rules", variant(loss=True)),
    ("select", "the mask as an exact select", variant(select=True)),
    (
        "replica",
        "all of the above: a tape's arrays, without a tape",
        variant(bias=1, relu=1, nonzero=1, loss=1, select=1),
    ),
]


def _mlp_forward(params, X, Y, relu, between, trace=None):
    """The MLP's loss, the same ops on NumPy's arrays and on tensors, calling ``between()`` after each op;
    ``trace``, a list, gets each layer's output, then the difference ``a - Y``."""
    a = X
    for i in range(0, len(params), 2):
        a = a @ params[i]
        between()
        a = a + params[i + 1]
        between()
        if i + 2 < len(params):
            a = relu(a)
            between()
        if trace is not None:
            trace.append(a)
    d = a - Y
    between()
    if trace is not None:
        trace.append(d)
    s = d**2
    between()
    return s.mean()


def _numpy_relu(a):
    return np.maximum(a, 0)


def _nothing():
    pass


def tiny_forwards(dtype, between):
    """The MLP's forward on TINY arrays, hand-written and with tapegrad, calling ``between()`` after each op."""
    arrays, X, Y = mlp_data(TINY, dtype)

    def numpy_forward():
        return _mlp_forward(arrays, X, Y, _numpy_relu, between)

    params = [tg.Tensor(p, requires_grad=True) for p in arrays]
    tX, tY = tg.Tensor(X), tg.Tensor(Y)

    def tapegrad_forward():
        with tg.record() as tape:
            loss = _mlp_forward(params, tX, tY, tg.relu, between)
        tape.release()  # what backward() would free: each round starts with nothing recorded
        return loss

    return numpy_forward, tapegrad_forward


class _Between:
    """A replay observer (``Tape.add_replay_observer``) that calls ``between()`` before each entry's rules."""

    def __init__(self, between):
        self.between = between

    def __call__(self, index, rec, node, g, grads):
        self.between()
        return rec[OP]

    def done(self):
        pass


def tiny_backwards(dtype, between, clock):
    """The MLP's backward on TINY arrays, hand-written and by tapegrad's replay, calling ``between()`` once per
    entry the tape holds (11): after each hand-written rule, and from a replay observer before each of the
    tape's (the observer's slower replay path runs with the fill and without it alike). Each function runs its
    forward untimed and returns ``(seconds, gradients)`` of its backward alone."""
    arrays, X, Y = mlp_data(TINY, dtype)
    params = [tg.Tensor(p, requires_grad=True) for p in arrays]
    tX, tY = tg.Tensor(X), tg.Tensor(Y)
    observer = _Between(between)

    def numpy_backward():
        acts = [X]
        _mlp_forward(arrays, X, Y, _numpy_relu, _nothing, acts)
        d = acts.pop()
        t0 = clock()
        g = np.broadcast_to(np.ones((), d.dtype) / d.size, d.shape)  # the rules of the tape's entries, last first
        between()  # mean
        g = g * 2 * d
        between()  # power
        between()  # subtract: passes g on
        grads = [None] * len(arrays)
        for i in range(len(arrays) - 2, -1, -2):
            a_in = acts[i // 2]
            grads[i + 1] = g.sum(axis=0)
            between()  # the bias add
            gx = g @ arrays[i].T if i else None  # the first layer's input is a constant
            grads[i] = a_in.T @ g
            between()  # the matrix product
            if i:
                g = masked(a_in != 0, gx)
                between()  # the ReLU
        return clock() - t0, grads

    def tapegrad_backward():
        for p in params:
            p.grad = None
        with tg.record() as tape:
            loss = _mlp_forward(params, tX, tY, tg.relu, _nothing)
        tape.add_replay_observer(lambda _: observer)
        t0 = clock()
        loss.backward()
        return clock() - t0, [p.grad for p in params]

    return numpy_backward, tapegrad_backward


def _timed_forwards(dtype, between, clock):
    # tiny_forwards timed as tiny_backwards are: (seconds, loss)
    def timed(f):
        def run():
            t0 = clock()
            loss = f()
            return clock() - t0, loss

        return run

    return tuple(timed(f) for f in tiny_forwards(dtype, between))


def cold_cache(dtype, mib: float, rounds: int, clock) -> list[str]:
    """Markdown rows: the tiny forwards' and backwards' medians, without and with ``mib`` MiB written between
    ops (between the tape's entries, for the backwards)."""
    fill = np.zeros(int(mib * 2**20) // 8)
    lines = []
    for phase, pairs, where in (("forward", _timed_forwards, "ops"), ("backward", tiny_backwards, "entries")):
        rows = []
        for label, between in (("nothing", lambda: None), (f"{mib:g} MiB", lambda: fill.fill(1.0))):
            runs = pairs(dtype, between, clock)
            for f in runs:  # warm up: the first calls import and build caches
                for _ in range(20):
                    f()
            times = np.zeros((rounds, 2))
            for r in range(rounds):
                for k in (0, 1) if r % 2 else (1, 0):  # alternate which runs first
                    times[r, k] = runs[k]()[0]
            numpy_us, tapegrad_us = np.median(times, axis=0) * 1e6
            extra = np.median(times[:, 1] - times[:, 0]) * 1e6
            rows.append((label, numpy_us, tapegrad_us, extra))
        base = rows[0][3]
        lines += [
            *([""] if lines else []),
            f"**the MLP's {phase} on TINY arrays ({np.dtype(dtype).name}): median µs over {rounds} paired rounds**",
            "",
            f"| written between {where} | NumPy | tapegrad | the engine's own | × without |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        lines += [f"| {lb} | {n:.1f} | {t:.1f} | {e:.1f} | {e / base:.2f} |" for lb, n, t, e in rows]
    return lines


def main(argv=None) -> int:
    parser = cli.parser("python -m benchmarks.mlp_gap", __doc__)
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32", help="the step's dtype")
    parser.add_argument("--rounds", type=int, default=100, help="rounds, each running every variant once")
    parser.add_argument("--pin", nargs="?", const=-1, type=int, metavar="CPU", help="one core, one BLAS thread")
    parser.add_argument("--tiny", action="store_true", help="the test's sizes (TINY): checks, not figures")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument(
        "--cold-cache",
        type=float,
        metavar="MIB",
        help="instead: the engine's Python on tiny arrays, with MIB MiB written between ops and without",
    )
    args = parser.parse_args(argv)

    allocator = hygiene.pin_allocator()
    pinned = hygiene.pin_to_one_core(None if args.pin == -1 else args.pin) if args.pin is not None else "not pinned"
    clock = "cpu" if args.pin is not None else "wall"
    name, sizes = f"mlp-{args.dtype}", TINY if args.tiny else FULL
    tapes, notes = available_engines(["tapegrad", "tapegrad-native"])
    engines = [Engine(key, None, None, None, build) for key, _, build in VARIANTS] + tapes
    print("\n".join(["```text", *hygiene.environment([f"allocator: {allocator}", pinned, f"clock: {clock}"]), "```"]))
    for note in notes:
        print(f"note: {note}")
    if args.cold_cache is not None:
        print("\n".join(["", *cold_cache(np.dtype(args.dtype), args.cold_cache, args.rounds, hygiene.CLOCKS[clock])]))
        return 0
    check(engines, sizes, [name])
    print(f"\ngradients of {', '.join(e.name for e in engines)} match hand-written NumPy on {name}\n")

    with cli.progress(args.rounds, "mlp_gap", "round", args.no_progress) as bar:
        samples = measure(engines, [name], sizes, args.rounds, {name: 1}, hygiene.CLOCKS[clock], bar)[name]
    about = dict((key, what) for key, what, _ in VARIANTS)
    about |= {"tapegrad": "the engine", "tapegrad-native": "the engine, its hot path in C"}
    print(f"**{name}: each variant / tight, median over {args.rounds} paired rounds [IQR]**\n")
    print("| variant | what it changes | × tight | × replica | forward ms | backward ms |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for e in engines:
        med, q1, q3 = paired_ratio(samples, e.name, "tight")
        vs_replica = paired_ratio(samples, e.name, "replica")[0]
        fwd, bwd = np.median(np.array(samples[e.name]), axis=0) * 1e3
        print(
            f"| {e.name} | {about[e.name]} | {med:.3f} [{q1:.3f}–{q3:.3f}] | {vs_replica:.3f} | {fwd:.3g} | {bwd:.3g} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
