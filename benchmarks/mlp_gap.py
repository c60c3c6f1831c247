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

Every variant's gradients are first checked against hand-written NumPy's (``benchmarks.speed_engines.check``).
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

from benchmarks import cli  # noqa: E402
from benchmarks.speed import measure, paired_ratio  # noqa: E402
from benchmarks.speed_engines import FULL, Engine, available_engines, check  # noqa: E402
from benchmarks.speed_workloads import TINY, mlp_data, numpy_mlp_tight  # noqa: E402
from tapegrad.backend.numpy_rules import masked  # noqa: E402

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


def main(argv=None) -> int:
    parser = cli.parser("python -m benchmarks.mlp_gap", __doc__)
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32", help="the step's dtype")
    parser.add_argument("--rounds", type=int, default=100, help="rounds, each running every variant once")
    parser.add_argument("--pin", nargs="?", const=-1, type=int, metavar="CPU", help="one core, one BLAS thread")
    parser.add_argument("--tiny", action="store_true", help="the test's sizes (TINY): checks, not figures")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
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
