"""Fit y = X @ [2, -1, 0.5] + noise by gradient descent: the quick start's model.

Writes nothing: it prints the loss every ``--log-every`` epochs and the fitted weights.

Each step records the loss on a fresh tape; backward() replays it in reverse and frees it, so keeping every
loss in ``history`` costs a few hundred bytes per step and never keeps a graph alive. With ``--compile`` each
step (the loss, its gradient and the update) is one program that ``tg.compile`` generated from the same
``loss`` function, and ``--source`` prints that program.

    python examples/linear_regression.py --epochs 100 --lr 0.1
    python examples/linear_regression.py --compile --source
"""

import argparse

import numpy as np

import tapegrad as tg
from tapegrad import tape


def loss(params, X, y):
    """The mean squared error of the linear model ``X @ W + b``."""
    return ((X @ params["W"] + params["b"] - y) ** 2).mean()


def compiled_step(lr: float):
    """One gradient-descent step as a compiled program; the parameters are donated (updated in place)."""

    def step(params, X, y):
        value, grads = tg.value_and_grad(loss)(params, X, y)
        return value, {name: params[name] - lr * grads[name] for name in params}

    return tg.compile(step, donate_argnums=0)


def train(epochs: int = 100, lr: float = 0.1, seed: int = 0, log_every: int = 10, quiet: bool = False, compile=False):
    rng = np.random.default_rng(seed)
    X = tg.Tensor(rng.standard_normal((64, 3)))
    y = tg.Tensor(X.data @ np.array([[2.0], [-1.0], [0.5]]) + 0.1 * rng.standard_normal((64, 1)))
    W = tg.Tensor(np.zeros((3, 1)), requires_grad=True, name="W")
    b = tg.Tensor(np.zeros(1), requires_grad=True, name="b")

    step = compiled_step(lr) if compile else None
    params = {"W": W.data, "b": b.data}  # W's and b's own arrays, which the compiled step updates in place
    history = []
    for epoch in range(epochs):
        if step is not None:
            value, params = step(params, X.data, y.data)
            value = tg.Tensor(value)
        else:
            with tape.record():
                value = loss({"W": W, "b": b}, X, y)
            value.backward()  # replays the tape in reverse, then frees it
            for p in (W, b):
                p.data -= lr * p.grad
                p.grad = None
        history.append(value)  # keeping the loss does not keep the graph alive
        if not quiet and (epoch % log_every == 0 or epoch == epochs - 1):
            print(f"epoch {epoch:4d}  loss {value.item():.6f}")
    return W, b, history, step


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=100, help="gradient-descent steps on the whole data set")
    parser.add_argument("--lr", type=float, default=0.1, help="learning rate")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated data")
    parser.add_argument("--log-every", type=int, default=10, help="print the loss every this many epochs")
    parser.add_argument("--compile", action="store_true", help="run each step as one program compiled by tg.compile")
    parser.add_argument("--source", action="store_true", help="with --compile: print the generated program")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.epochs < 1:
        raise SystemExit(f"--epochs {args.epochs}: train for at least one epoch")
    if args.source and not args.compile:
        parser.error("--source prints the compiled program: pass --compile too")
    W, b, history, step = train(args.epochs, args.lr, args.seed, max(1, args.log_every), compile=args.compile)
    print("W =", np.round(W.data.ravel(), 3), " (true [2, -1, 0.5])")
    print("b =", np.round(b.data, 3), " (true [0])")
    if args.source:
        print(step.source, end="")
    return W, b, history


if __name__ == "__main__":
    main()
