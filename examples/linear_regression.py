"""Fit y = X @ [2, -1, 0.5] + noise by gradient descent: the quick start's model.

Writes nothing: it prints the loss every ``--log-every`` epochs and the fitted weights.

Each step records the loss on a fresh tape; backward() replays it in reverse and frees it, so keeping every
loss in ``history`` costs a few hundred bytes per step and never keeps a graph alive.

    python examples/linear_regression.py --epochs 100 --lr 0.1
"""

import argparse

import numpy as np

import tapegrad as tg
from tapegrad import tape


def train(epochs: int = 100, lr: float = 0.1, seed: int = 0, log_every: int = 10, quiet: bool = False):
    rng = np.random.default_rng(seed)
    X = tg.Tensor(rng.standard_normal((64, 3)))
    y = tg.Tensor(X.data @ np.array([[2.0], [-1.0], [0.5]]) + 0.1 * rng.standard_normal((64, 1)))
    W = tg.Tensor(np.zeros((3, 1)), requires_grad=True, name="W")
    b = tg.Tensor(np.zeros(1), requires_grad=True, name="b")

    history = []
    for epoch in range(epochs):
        with tape.record():
            loss = ((X @ W + b - y) ** 2).mean()
        loss.backward()  # replays the tape in reverse, then frees it
        for p in (W, b):
            p.data -= lr * p.grad
            p.grad = None
        history.append(loss)  # keeping the loss does not keep the graph alive
        if not quiet and (epoch % log_every == 0 or epoch == epochs - 1):
            print(f"epoch {epoch:4d}  loss {loss.item():.6f}")
    return W, b, history


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=100, help="gradient-descent steps on the whole data set")
    parser.add_argument("--lr", type=float, default=0.1, help="learning rate")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated data")
    parser.add_argument("--log-every", type=int, default=10, help="print the loss every this many epochs")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.epochs < 1:
        raise SystemExit(f"--epochs {args.epochs}: train for at least one epoch")
    W, b, history = train(args.epochs, args.lr, args.seed, max(1, args.log_every))
    print("W =", np.round(W.data.ravel(), 3), " (true [2, -1, 0.5])")
    print("b =", np.round(b.data, 3), " (true [0])")
    return W, b, history


if __name__ == "__main__":
    main()
