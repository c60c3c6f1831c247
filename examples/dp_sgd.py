"""Differentially private SGD (DP-SGD) on scikit-learn's 8x8 digits, with per-example gradients from ``tg.vmap``.

Each step of DP-SGD (Abadi et al., 2016) needs every example's own gradient: each is clipped to an L2 norm of at
most ``--clip`` (over all the parameters together), the clipped gradients are summed, Gaussian noise of standard
deviation ``--noise * --clip`` is added, and the sum is divided by the batch size. ``tg.vmap(tg.grad(loss))``
computes the 256 per-example gradients of a batch in one batched pass; the same MLP trained by plain SGD on the
batch gradient (no clipping, no noise) runs beside it as the privacy-free baseline. Then one DP step's
per-example gradients are timed three ways: vmap, a Python loop over the examples, and ``torch.func``'s
``vmap(grad(...))`` where PyTorch is installed.

    python examples/dp_sgd.py                     # 40 epochs of each, a few seconds
    python examples/dp_sgd.py --noise 0 --clip 1e9 # no clipping and no noise: DP-SGD is then plain SGD

The script writes nothing. It reports accuracy only: the privacy accounting (the epsilon these settings give)
is left to a library made for it.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import tapegrad as tg


def load_data(seed: int, test_fraction: float = 0.2):
    """Pixels scaled to [0, 1], one-hot targets, a seeded split: (x_train, y_train, x_test, labels_test)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x, labels = digits.data / 16.0, digits.target
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(round(test_fraction * len(x)))
    test, train = order[:n_test], order[n_test:]
    return x[train], np.eye(10)[labels[train]], x[test], labels[test]


def init_params(hidden: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "w1": rng.standard_normal((64, hidden)) * np.sqrt(2.0 / 64),
        "b1": np.zeros(hidden),
        "w2": rng.standard_normal((hidden, 10)) * np.sqrt(1.0 / hidden),
        "b2": np.zeros(10),
    }


def loss(params, x, y):
    """Cross-entropy of one example (``x`` of shape (64,)), or the sum over a batch."""
    h = tg.relu(x @ params["w1"] + params["b1"])
    return -(y * tg.log_softmax(h @ params["w2"] + params["b2"], axis=-1)).sum()


per_example_grads = tg.vmap(tg.grad(loss), in_axes=(None, 0, 0))  # every example's gradient, in one pass


def accuracy(params, x, labels) -> float:
    h = np.maximum(x @ params["w1"] + params["b1"], 0)
    return float(np.mean(np.argmax(h @ params["w2"] + params["b2"], axis=1) == labels))


def clipped_noisy_mean(grads: dict, clip: float, noise: float, rng) -> dict:
    """DP-SGD's gradient: each example's clipped to norm ``clip``, summed, noised, divided by the batch size."""
    n = next(iter(grads.values())).shape[0]
    norms = np.sqrt(sum(np.sum(g.reshape(n, -1) ** 2, axis=1) for g in grads.values()))
    scale = np.minimum(1.0, clip / np.maximum(norms, 1e-12))
    out = {}
    for k, g in grads.items():
        total = np.tensordot(scale, g, axes=1)
        out[k] = (total + rng.normal(0.0, noise * clip, size=total.shape)) / n
    return out


def train(x, y, x_test, labels_test, *, private: bool, epochs: int, batch_size: int, lr: float, clip: float,
          noise: float, hidden: int, seed: int, log) -> dict:  # fmt: skip
    params = init_params(hidden, seed)
    rng = np.random.default_rng(seed + 1)
    for epoch in range(epochs):
        order = rng.permutation(len(x))
        for start in range(0, len(x) - batch_size + 1, batch_size):
            idx = order[start : start + batch_size]
            if private:
                step = clipped_noisy_mean(per_example_grads(params, x[idx], y[idx]), clip, noise, rng)
            else:
                step = {k: g / batch_size for k, g in tg.grad(loss)(params, x[idx], y[idx]).items()}
            params = {k: params[k] - lr * step[k] for k in params}
        if epoch % 10 == 9 or epoch == epochs - 1:
            log(
                f"{'dp-sgd' if private else 'sgd':<7} epoch {epoch + 1:3d}  test accuracy {accuracy(params, x_test, labels_test):.3f}"
            )
    return params


def time_per_example_step(params, x, y, repeats: int = 3) -> dict:
    """Seconds to compute one batch's per-example gradients: vmap, a Python loop, and torch.func if installed."""
    out = {}
    t = time.perf_counter()
    for _ in range(repeats):
        per_example_grads(params, x, y)
    out["tg.vmap(tg.grad(loss))"] = (time.perf_counter() - t) / repeats
    grad = tg.grad(loss)
    t = time.perf_counter()
    [grad(params, xi, yi) for xi, yi in zip(x, y)]
    out["a Python loop of tg.grad"] = time.perf_counter() - t
    try:
        import torch
        from torch.func import grad as tgrad
        from torch.func import vmap as tvmap
    except ImportError:
        return out
    tp = {k: torch.tensor(v) for k, v in params.items()}
    tx, ty = torch.tensor(x), torch.tensor(y)

    def tloss(p, xi, yi):
        h = torch.relu(xi @ p["w1"] + p["b1"])
        return -(yi * torch.log_softmax(h @ p["w2"] + p["b2"], dim=-1)).sum()

    f = tvmap(tgrad(tloss), in_dims=(None, 0, 0))
    f(tp, tx, ty)
    t = time.perf_counter()
    for _ in range(repeats):
        f(tp, tx, ty)
    out["torch.func.vmap(grad(loss))"] = (time.perf_counter() - t) / repeats
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="DP-SGD on the digits with per-example gradients from tg.vmap, beside plain SGD.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--epochs", type=int, default=40, help="epochs of each training")
    parser.add_argument("--batch-size", type=int, default=256, help="examples per step")
    parser.add_argument("--lr", type=float, default=0.5, help="learning rate of both")
    parser.add_argument("--clip", type=float, default=1.0, help="each example's gradient is clipped to this norm")
    parser.add_argument("--noise", type=float, default=1.0, help="noise multiplier: its std is noise * clip")
    parser.add_argument("--hidden", type=int, default=32, help="hidden units of the MLP")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split, the weights and the noise")
    parser.add_argument("--no-timing", action="store_true", help="skip timing the per-example gradients")
    args = parser.parse_args(argv)
    x, y, x_test, labels_test = load_data(args.seed)
    common = dict(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, clip=args.clip, noise=args.noise,
                  hidden=args.hidden, seed=args.seed, log=print)  # fmt: skip
    base = train(x, y, x_test, labels_test, private=False, **common)
    dp = train(x, y, x_test, labels_test, private=True, **common)
    print(f"test accuracy: sgd {accuracy(base, x_test, labels_test):.3f}, dp-sgd {accuracy(dp, x_test, labels_test):.3f} "
          f"(clip {args.clip}, noise {args.noise})")  # fmt: skip
    if not args.no_timing:
        n = args.batch_size
        times = time_per_example_step(dp, x[:n], y[:n])
        print(f"per-example gradients of {n} examples:")
        for k, v in times.items():
            print(f"  {k:<30}{v * 1e3:9.2f} ms")


if __name__ == "__main__":
    main()
