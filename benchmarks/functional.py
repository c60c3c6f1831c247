"""What the functional transforms cost, side by side in one process.

    python benchmarks/functional.py            # or python -m benchmarks.functional; a few seconds

1. ``grad(f)(w)`` against the same loss written with ``record()`` and ``backward()``: the transform's overhead.
2. ``hvp`` against forming the Hessian and multiplying: two reverse passes against one replay per parameter.
3. ``jvp`` (forward mode, tangents beside the forward pass) against one ``vjp``.
4. ``jacobian`` of a tall function by rows (reverse) and by columns (forward, double VJP).

Each candidate's result is checked against the others' before it is timed. It prints and writes nothing else.
"""

import argparse
import sys
import timeit

import numpy as np

import tapegrad as tg
from tapegrad import tape

rng = np.random.default_rng(0)
X, Y = rng.standard_normal((256, 32)), rng.standard_normal((256, 1))
W1, W2 = rng.standard_normal((32, 64)) * 0.1, rng.standard_normal((64, 1)) * 0.1
n = 64
A = rng.standard_normal((n, n)) / np.sqrt(n)
x0, v = rng.standard_normal(n), rng.standard_normal(n)
c = rng.standard_normal(n)
B = rng.standard_normal((256, 8)) / np.sqrt(8)
x8 = rng.standard_normal(8)


def loss(w1, w2):
    return ((tg.tanh(X @ w1) @ w2 - Y) ** 2).mean()


def with_backward():
    w1, w2 = tg.Tensor(W1, requires_grad=True), tg.Tensor(W2, requires_grad=True)
    with tape.record():
        out = loss(w1, w2)
    out.backward()
    return w1.grad, w2.grad


ROUNDS = 7


def compare(title, number, **fns):
    """Best of ROUNDS rounds per candidate, the rounds interleaved so that load on the machine hits all alike."""
    times = {name: [] for name in fns}
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            times[name].append(timeit.timeit(fn, number=number) / number * 1e3)
    print(f"{title} (ms per call, best of {ROUNDS} interleaved rounds)")
    for name in fns:
        print(f"  {name:<26}{min(times[name]):7.3f}")


def smooth(x):
    return tg.logsumexp(A @ x) + 0.5 * (x * x).sum() + (tg.sin(x) ** 2).sum()


def vector(x):
    return tg.tanh(A @ x) * x


def tall(x):
    return tg.tanh(B @ x) * tg.exp(0.1 * (B @ x))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/functional.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="interleaved rounds; each figure is the best")
    return parser


def main(argv=None) -> int:
    global ROUNDS
    ROUNDS = build_parser().parse_args(argv).rounds
    grad_fn = tg.grad(loss, argnums=(0, 1))
    np.testing.assert_allclose(grad_fn(W1, W2)[0], with_backward()[0])
    compare(
        f"MLP loss 256x32 -> 64 -> 1, gradient of {W1.size + W2.size} parameters",
        100,
        **{"record() + backward()": with_backward, "tg.grad(loss)(w1, w2)": lambda: grad_fn(W1, W2)},
    )

    np.testing.assert_allclose(tg.hvp(smooth, x0, v), tg.hessian(smooth)(x0) @ v, rtol=1e-9, atol=1e-12)
    compare(
        f"Hessian-vector product, n = {n}",
        5,
        **{
            "tg.hvp(f, x, v)": lambda: tg.hvp(smooth, x0, v),
            "tg.hessian(f)(x) @ v": lambda: tg.hessian(smooth)(x0) @ v,
        },
    )

    compare(
        f"Jacobian products of x -> tanh(A x) * x, n = {n}",
        20,
        **{
            "tg.vjp(f, x)[1](c)": lambda: tg.vjp(vector, x0)[1](c),
            "tg.jvp(f, (x,), (t,))": lambda: tg.jvp(vector, (x0,), (v,)),
            "tg.jacobian(f)(x) @ t": lambda: tg.jacobian(vector)(x0) @ v,
        },
    )

    np.testing.assert_allclose(tg.jacobian(tall, mode="fwd")(x8), tg.jacobian(tall, mode="rev")(x8), rtol=1e-12)
    compare(
        "A tall Jacobian, 256 x 8",
        5,
        **{
            'jacobian(f, mode="rev")': lambda: tg.jacobian(tall, mode="rev")(x8),
            'jacobian(f, mode="fwd")': lambda: tg.jacobian(tall, mode="fwd")(x8),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
