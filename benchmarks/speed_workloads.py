"""The speed benchmark's workloads: their sizes, their inputs (the same arrays for every engine), and the
hand-written NumPy forward and backward of each, the floor every engine is measured against.

- ``chain``: ``cycles`` of ``x*w``, ``x+b``, ``tanh``, ``x-c`` on a small vector, then ``sum``; gradients with
  respect to ``x, w, b, c`` (so ``w, b, c`` accumulate one cotangent per cycle, as a real model's weights do).
- ``fanout``: ``h = tanh(x)`` used by ``branches`` products ``h * k_i`` that are summed back; the gradient of
  ``x`` needs ``branches`` cotangents accumulated into ``h``'s.
- ``mlp``: one SGD step of a ReLU MLP with a mean-squared-error loss (zero grad, forward, backward, update).
  Hand-written twice: plainly (:func:`numpy_mlp`, every intermediate a new array) and tightly
  (:func:`numpy_mlp_tight`: the bias add and the ReLU in place, the mask applied in place, the update in place).

A workload, for any engine, is two callables: ``state = forward()`` and ``grads = backward(state)``, timed
separately; ``grads`` is the list of gradient arrays (for the MLP, after the update used them).

>>> from benchmarks.speed_workloads import TINY, numpy_chain
>>> forward, backward = numpy_chain(TINY)
>>> [g.shape for g in backward(forward())]
[(3,), (3,), (3,), (3,)]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "Sizes",
    "FULL",
    "TINY",
    "WORKLOADS",
    "op_count",
    "chain_data",
    "fanout_data",
    "mlp_data",
    "numpy_chain",
    "numpy_fanout",
    "numpy_mlp",
    "numpy_mlp_tight",
]


@dataclass(frozen=True)
class Sizes:
    """How big each workload is: the issue's sizes are :data:`FULL`; the test uses :data:`TINY`."""

    chain_ops: int = 1000  # a multiple of 4: one cycle is x*w, x+b, tanh, x-c
    width: int = 4
    branches: int = 100
    layers: tuple = (784, 512, 512, 10)
    batch: int = 256
    lr: float = 1e-3


FULL = Sizes()
TINY = Sizes(chain_ops=8, width=3, branches=5, layers=(6, 5, 4, 3), batch=7)
WORKLOADS = ("chain", "fanout", "mlp-float64", "mlp-float32")


def op_count(name: str, sizes: Sizes) -> int:
    """Ops the engines record for one pass (the denominator of "per op"): the final ``sum`` included."""
    if name == "chain":
        return sizes.chain_ops + 1
    if name == "fanout":
        return 1 + sizes.branches + (sizes.branches - 1) + 1  # tanh, the products, the adds, sum
    return 1  # the MLP is reported per step


# -- the inputs, identical for every engine ----------------------------------------------------------------
def chain_data(s: Sizes):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(s.width)
    # w near 1, b and c small: the cotangent shrinks slowly along the chain and never reaches subnormal
    # numbers, which would make the arithmetic itself slow and distort every engine's figure.
    w = 1.0 + 0.1 * rng.standard_normal(s.width)
    b, c = 0.1 * rng.standard_normal((2, s.width))
    return [x, w, b, c]


def fanout_data(s: Sizes):
    rng = np.random.default_rng(1)
    return rng.standard_normal(s.width), list(rng.standard_normal((s.branches, s.width)))


def mlp_data(s: Sizes, dtype):
    rng = np.random.default_rng(2)
    params = []
    for n_in, n_out in zip(s.layers[:-1], s.layers[1:]):
        params.append((rng.standard_normal((n_in, n_out)) * np.sqrt(2.0 / n_in)).astype(dtype))
        params.append((0.01 * rng.standard_normal(n_out)).astype(dtype))
    X = rng.standard_normal((s.batch, s.layers[0])).astype(dtype)
    Y = rng.standard_normal((s.batch, s.layers[-1])).astype(dtype)
    return params, X, Y


# -- hand-written NumPy: the floor ----------------------------------------------------------------------------
def numpy_chain(s):
    x0, w, b, c = chain_data(s)
    cycles = s.chain_ops // 4

    def forward():
        x, saved = x0, []
        for _ in range(cycles):
            t = np.tanh(x * w + b)
            saved.append((x, t))
            x = t - c
        return x.sum(), saved

    def backward(state):
        _, saved = state
        g = np.ones_like(x0)
        gw, gb, gc = np.zeros_like(w), np.zeros_like(b), np.zeros_like(c)
        for x, t in reversed(saved):
            gc -= g
            g = g * (1 - t * t)
            gb += g
            gw += g * x
            g = g * w
        return [g, gw, gb, gc]

    return forward, backward


def numpy_fanout(s):
    x, ks = fanout_data(s)

    def forward():
        h = np.tanh(x)
        y = h * ks[0]
        for k in ks[1:]:
            y = y + h * k
        return y.sum(), h

    def backward(state):
        _, h = state
        g = np.ones_like(h)
        gh = g * ks[0]
        for k in ks[1:]:
            gh = gh + g * k
        return [gh * (1 - h * h)]

    return forward, backward


def numpy_mlp(s, dtype):
    params, X, Y = mlp_data(s, dtype)
    lr = s.lr

    def forward():
        acts, a = [X], X
        for i in range(0, len(params), 2):
            a = a @ params[i] + params[i + 1]
            if i + 2 < len(params):
                a = np.maximum(a, 0)
            acts.append(a)
        diff = a - Y
        return (diff * diff).mean(), acts, diff

    def backward(state):
        _, acts, diff = state
        g = diff * (2 / diff.size)
        grads = [None] * len(params)
        for i in range(len(params) - 2, -1, -2):
            a_in = acts[i // 2]
            grads[i], grads[i + 1] = a_in.T @ g, g.sum(axis=0)
            if i:
                g = (g @ params[i].T) * (a_in > 0)
        for p, gp in zip(params, grads):
            p -= lr * gp
        return grads

    return forward, backward


def numpy_mlp_tight(s, dtype):
    """The MLP step as a careful NumPy programmer writes it: what can be in place is."""
    params, X, Y = mlp_data(s, dtype)
    lr = s.lr

    def forward():
        acts, a = [X], X
        for i in range(0, len(params), 2):
            a = a @ params[i]
            a += params[i + 1]
            if i + 2 < len(params):
                np.maximum(a, 0, out=a)
            acts.append(a)
        diff = a
        diff -= Y
        return (diff * diff).mean(), acts, diff

    def backward(state):
        _, acts, diff = state
        g = diff
        g *= 2 / diff.size
        grads = [None] * len(params)
        for i in range(len(params) - 2, -1, -2):
            a_in = acts[i // 2]
            grads[i], grads[i + 1] = a_in.T @ g, g.sum(axis=0)
            if i:
                g = g @ params[i].T
                g *= a_in > 0
        for p, gp in zip(params, grads):
            p -= lr * gp
        return grads

    return forward, backward


if __name__ == "__main__":  # a part of the benchmarks, not one: say which one to run
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
    from benchmarks import cli

    sys.exit(
        cli.library_main(
            __doc__, "benchmarks/speed_workloads.py", "python -m benchmarks.speed (these are its workloads)"
        )
    )
