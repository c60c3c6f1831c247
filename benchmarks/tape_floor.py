"""The floor of a tape written in Python: how fast the speed benchmark's chain can be recorded and replayed by a
tape that does less and less than tapegrad, against tapegrad and the node-graph design, side by side.

The workload is the speed benchmark's chain (``benchmarks.speed``, ``x = tanh(x * w + b) - c``, 1,000 ops on
shape (4,), float64, every leaf needing a gradient), forward and backward. Each level is a complete tape (its
gradients are checked against hand-written NumPy's first) that adds one of the structures tapegrad has:

- ``list``: each op appends ``(rule, inputs, saved values, output)`` to a list; the replay pops it, last first,
  and calls one rule per input; the keys of the cotangents are the tensors themselves;
- ``weak``: each output gets a node, and its entry is a weak reference to that node whose callback drops the
  record when the output dies (what frees a dead branch's arrays before backward, as tapegrad's entries do);
- ``record``: tapegrad's record of an entry (op, sources, saved values, answer, broadcast shapes, parameters,
  epoch, the mask of inputs needing a gradient), tensors with ``grad`` and ``requires_grad``, and rules called as
  tapegrad's are, ``rule(xp, g, ans, *saved)`` through the op.

What tapegrad does beyond ``record`` is what the figures' last gap measures: the tapes of each thread and task
(a context variable read per op), inputs from other libraries, watched tensors, values of other tapes, save
declarations, in-place checks, monitors, hooks and observers, several outputs, unbroadcasting, and the hand-over
of ``.grad`` (dtype, layout, copies). The optional compiled path (``TAPEGRAD_SPEEDUPS=1``) does the same in C.

    python -m benchmarks.tape_floor --pin 1 --rounds 100
"""

from __future__ import annotations

import pathlib
import statistics
import sys
import time
import weakref

if __name__ == "__main__" and not __package__:  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks import hygiene  # noqa: E402

if __name__ == "__main__" and "--pin" in sys.argv[1:]:
    hygiene.cap_blas_threads_by_env()  # before NumPy's first import

import numpy as np  # noqa: E402

import tapegrad  # noqa: E402, F401  (imported before the environment is printed, which then names its commit)
from benchmarks import cli  # noqa: E402
from benchmarks.speed_engines import FULL, available_engines  # noqa: E402
from benchmarks.speed_workloads import chain_data, numpy_chain  # noqa: E402

__all__ = ["LEVELS", "level", "main"]


# -- the rules, in tapegrad's signature ------------------------------------------------------------------------
def _mul_x(xp, g, ans, x, y):
    return g * y


def _mul_y(xp, g, ans, x, y):
    return g * x


def _same(xp, g, ans, x, y):
    return g


def _negated(xp, g, ans, x, y):
    return -g


def _tanh_x(xp, g, ans, x):
    return g * (1 - ans * ans)


class _Op:
    __slots__ = ("forward", "vjps", "save", "save_ans")

    def __init__(self, forward, vjps, save, save_ans=False):
        self.forward, self.vjps, self.save, self.save_ans = forward, vjps, save, save_ans


MUL = _Op(np.multiply, (_mul_x, _mul_y), True)
ADD = _Op(np.add, (_same, _same), False)
SUB = _Op(np.subtract, (_same, _negated), False)
TANH = _Op(np.tanh, (_tanh_x,), False, save_ans=True)
_NONE2, _NONE1, _NO_PARAMS = (None, None), (None,), {}


class _Tensor:
    __slots__ = ("data", "grad", "requires_grad", "node", "__weakref__")


class _Node:
    __slots__ = ("__weakref__",)


class _Entry(weakref.ref):
    __slots__ = ("rec",)


def _died(entry):
    entry.rec = None


def _leaf(a):
    t = _Tensor()
    t.data, t.grad, t.requires_grad, t.node = a, None, True, None
    return t


# -- the levels: (record, replay) pairs, each builds on the one before. record(op, x, y=None) is written per arity,
# as tapegrad's fast path is (no argument lists built per op): the least each level can do. Each level's walk is
# written out in full, like the one before plus its step: a walk shared between levels would add calls per
# entry to the very thing measured.
def _list_level():
    tape = []

    def record(op, x, y=None):
        out = _Tensor()
        if y is None:
            out.data = op.forward(x.data)
            tape.append((op, (x,), (x.data,), out.data, out))
        else:
            out.data = op.forward(x.data, y.data)
            tape.append((op, (x, y), (x.data, y.data), out.data, out))
        return out

    def replay(root, leaves):
        grads = {root: np.ones_like(root.data)}
        pop, get = grads.pop, grads.get
        while tape:
            op, xs, vals, ans, out = tape.pop()
            g = pop(out, None)
            if g is None:
                continue
            args, i = (np, g, ans, *vals), 0
            for x in xs:
                gi = op.vjps[i](*args)
                old = get(x)
                grads[x] = gi if old is None else old + gi
                i += 1
        return [grads.get(t) for t in leaves]

    return record, replay


def _weak_level():
    tape = []

    def record(op, x, y=None):
        out = _Tensor()
        node = out.node = _Node()
        e = _Entry(node, _died)
        if y is None:
            out.data = op.forward(x.data)
            e.rec = (op, (x.node or x,), (x.data,), out.data)
        else:
            out.data = op.forward(x.data, y.data)
            e.rec = (op, (x.node or x, y.node or y), (x.data, y.data), out.data)
        tape.append(e)
        return out

    def replay(root, leaves):
        grads, kept = {root.node: np.ones_like(root.data)}, []
        pop, get, keep = grads.pop, grads.get, kept.append
        for idx in range(len(tape) - 1, -1, -1):
            e = tape[idx]
            rec = e.rec
            if rec is None:
                continue
            node = e()
            e.rec = None
            keep(node)  # the node dies after the walk: its callback must not find a freed entry
            g = pop(node, None)
            if g is None:
                continue
            op, srcs, vals, ans = rec
            args, i = (np, g, ans, *vals), 0
            for src in srcs:
                gi = op.vjps[i](*args)
                old = get(src)
                grads[src] = gi if old is None else old + gi
                i += 1
        tape.clear()
        return [grads.get(t) for t in leaves]

    return record, replay


def _record_level():
    tape = []

    def record(op, x, y=None):
        out = _Tensor()
        dx = x.data
        sx, bx = x.node or x, x.node is not None or x.requires_grad
        if y is None:
            ans = op.forward(dx)
            srcs, mask, shapes = (sx,), bx, None
            vals = (dx,) if op.save else _NONE1
        else:
            dy = y.data
            ans = op.forward(dx, dy)
            srcs, mask = (sx, y.node or y), bx | (y.node is not None or y.requires_grad) << 1
            shapes = (dx.shape, dy.shape) if dx.shape != ans.shape or dy.shape != ans.shape else None
            vals = (dx, dy) if op.save else _NONE2
        out.data, out.grad, out.requires_grad = ans, None, True
        node = out.node = _Node()
        e = _Entry(node, _died)
        e.rec = (op, srcs, vals, ans if op.save_ans else None, shapes, _NO_PARAMS, 0, mask)
        tape.append(e)
        return out

    def replay(root, leaves):
        grads, kept = {root.node: np.ones_like(root.data)}, []
        pop, get, keep = grads.pop, grads.get, kept.append
        for idx in range(len(tape) - 1, -1, -1):
            e = tape[idx]
            rec = e.rec
            if rec is None:
                continue
            node = e()
            e.rec = None
            keep(node)
            g = pop(node, None)
            if g is None:
                continue
            op, srcs, vals, ans, shapes, params, epoch, mask = rec
            vjps, args, i = op.vjps, (np, g, ans, *vals), 0
            for src in srcs:
                if (mask >> i) & 1:
                    gi = vjps[i](*args)
                    old = get(src)
                    grads[src] = gi if old is None else old + gi
                i += 1
        tape.clear()
        return [grads.get(t) for t in leaves]

    return record, replay


LEVELS = {"list": _list_level, "weak": _weak_level, "record": _record_level}


def level(name, s=FULL):
    """The chain on the tape of level ``name``: ``(forward, backward)`` as the speed benchmark's engines have them
    (``backward(forward())`` gives the gradients of ``x0, w, b, c``)."""
    record, replay = LEVELS[name]()
    arrays = chain_data(s)
    cycles = s.chain_ops // 4

    def forward():
        leaves = [_leaf(a) for a in arrays]
        x, w, b, c = leaves
        for _ in range(cycles):
            x = record(SUB, record(TANH, record(ADD, record(MUL, x, w), b)), c)
        return x, leaves

    def backward(state):
        root, leaves = state
        # the chain's output has shape (4,); its sum's rule hands it ones, as speed's engines seed it
        return replay(root, leaves)

    return forward, backward


def _timed(fwd, bwd, clock):
    t0 = clock()
    state = fwd()
    t1 = clock()
    bwd(state)
    return t1 - t0, clock() - t1


def check(s=FULL) -> None:
    """Every level's gradients are hand-written NumPy's: each is a tape, not a shortcut."""
    forward, backward = numpy_chain(s)
    expected = backward(forward())
    for name in LEVELS:
        f, b = level(name, s)
        got = b(f())
        for e, g in zip(expected, got):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12, err_msg=f"tape_floor level {name!r}")


def measure(rounds, s=FULL, clock=time.process_time):
    """``{engine: (forward, backward) per-op medians in seconds}`` and ``{engine: median per-round total /
    nodegraph's}``, every engine once per round, the order rotating."""
    engines = {name: level(name, s) for name in LEVELS}
    for engine in available_engines(["tapegrad", "tapegrad-native", "nodegraph"])[0]:  # native: where it is built
        engines[engine.name] = engine.chain(s)
    names = list(engines)
    for f, b in engines.values():  # warm up
        b(f())
    times = {n: [] for n in names}
    for r in range(rounds):
        k = r % len(names)
        for n in names[k:] + names[:k]:
            times[n].append(_timed(*engines[n], clock))
    per_op = {n: tuple(statistics.median(t[i] for t in ts) / s.chain_ops for i in (0, 1)) for n, ts in times.items()}
    ratio = {n: statistics.median(sum(a) / sum(z) for a, z in zip(ts, times["nodegraph"])) for n, ts in times.items()}
    return per_op, ratio


def main(argv=None) -> int:
    parser = cli.parser("python -m benchmarks.tape_floor", __doc__)
    parser.add_argument("--rounds", type=int, default=100, help="rounds, each running every engine once")
    parser.add_argument("--pin", nargs="?", const=-1, type=int, metavar="CPU", help="one core, one BLAS thread")
    args = parser.parse_args(argv)
    pinned = hygiene.pin_to_one_core(None if args.pin == -1 else args.pin) if args.pin is not None else "not pinned"
    check()
    print("\n".join(["```text", *hygiene.environment([pinned, "clock: cpu"]), "```", ""]))
    print("gradients of every level match hand-written NumPy on the chain\n")
    per_op, ratio = measure(args.rounds)
    print(f"**the chain on each tape: µs per op, median over {args.rounds} rounds**\n")
    print("| tape | forward | backward | fwd+bwd | × nodegraph |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for n, (f, b) in per_op.items():
        print(f"| {n} | {f * 1e6:.2f} | {b * 1e6:.2f} | {(f + b) * 1e6:.2f} | {ratio[n]:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
