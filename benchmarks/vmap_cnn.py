"""Per-example gradients of a small CNN: ``vmap(grad(loss))`` against a Python loop of gradients and against one
batched gradient, in one process, interleaved.

    taskset -c 1 env OPENBLAS_NUM_THREADS=1 python -m benchmarks.vmap_cnn              # 64 examples, 15 rounds
    python -m benchmarks.vmap_cnn --batch 16 --rounds 3

The model is conv 3x3 (1 -> 8 channels, padding 1), relu, 2x2 max pooling, global average pooling and a linear
layer to 10 classes, on 12x12 images. ``loss`` is written for one image ``(1, 12, 12)``, the batched gradient's
loss for ``(N, 1, 12, 12)``. The per-example gradients are checked against the loop's before timing; each figure
is the median (and interquartile range) of this process's CPU time over the rounds.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import tapegrad as tg


def _features(w1, x, n):
    h = tg.max_pool2d(tg.relu(tg.conv2d(x, w1, padding=1)), 2)
    return tg.reshape(tg.adaptive_avg_pool2d(h, 1), n)


def loss(w1, w2, x, y):
    """Cross-entropy of one image ``x`` (1, 12, 12) with one-hot label ``y``."""
    return -(tg.log_softmax(_features(w1, x, (8,)) @ w2) * y).sum()


def batch_loss(w1, w2, xs, ys):
    """The sum of ``loss`` over a batch, written with the batch axis N."""
    return -(tg.log_softmax(_features(w1, xs, (len(xs), 8)) @ w2, axis=-1) * ys).sum()


def candidates(batch):
    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((8, 1, 3, 3)), rng.standard_normal((8, 10))
    xs, ys = rng.standard_normal((batch, 1, 12, 12)), np.eye(10)[rng.integers(0, 10, batch)]
    per = tg.vmap(tg.grad(loss, argnums=(0, 1)), in_axes=(None, None, 0, 0))
    one = tg.grad(loss, argnums=(0, 1))
    got, want = per(w1, w2, xs, ys), [one(w1, w2, xs[j], ys[j]) for j in range(batch)]
    for i in range(2):
        np.testing.assert_allclose(got[i], np.stack([w[i] for w in want]), rtol=1e-10, atol=1e-12)
    return {
        "vmap(grad)": lambda: per(w1, w2, xs, ys),
        "loop of grads": lambda: [one(w1, w2, xs[j], ys[j]) for j in range(batch)],
        "one batched grad": lambda: tg.grad(batch_loss, argnums=(0, 1))(w1, w2, xs, ys),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    runs = candidates(args.batch)
    times = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, fn in runs.items():  # interleaved: a slow moment of the machine falls on every candidate
            start = time.process_time()
            fn()
            times[name].append((time.process_time() - start) * 1e3)
    base = float(np.median(times["one batched grad"]))
    print(f"per-example gradients of a small CNN, {args.batch} examples (CPU ms: median, IQR; x one batched grad)")
    for name, ts in times.items():
        q1, med, q3 = np.percentile(ts, [25, 50, 75])
        print(f"  {name:18s} {med:8.2f}  ({q1:.2f}-{q3:.2f})  {med / base:5.1f}x")


if __name__ == "__main__":
    main()
