"""Fit y = X @ [2, -1, 0.5] + noise by gradient descent: the quick start's model.

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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    W, b, history = train(args.epochs, args.lr, args.seed)
    print("W =", np.round(W.data.ravel(), 3), " (true [2, -1, 0.5])")
    print("b =", np.round(b.data, 3), " (true [0])")
    return W, b, history


if __name__ == "__main__":
    main()
