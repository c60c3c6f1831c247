"""The memory workloads: one model code, run on each engine through a small adapter.

An adapter gives the model what differs between engines: how to make a tensor, ``relu``, ``log_softmax``,
the recording context (``tapegrad.record()``; nothing for the others), the SGD update and, for tapegrad,
``checkpoint``. Every workload calls ``meter.mark(label)`` at the points where live memory is read.

The compiled engine (``tg.compile``) runs the same model code inside a compiled function: its training step is
``value_and_grad`` and the SGD update in one program, with the parameters donated (updated in place), and
its one-step measurement runs that step; ``one_step_grads`` runs the compiled ``value_and_grad`` alone, which
returns the gradients as eager backward does. A program keeps its planned buffers between calls:
``kept_bytes`` says how many, and the memory benchmark adds them to the peak it measures.
"""

from __future__ import annotations

import contextlib

import numpy as np

DTYPE = np.float64


class TapegradAdapter:
    name = "tapegrad"

    def __init__(self):
        import tapegrad as tg

        self.tg = tg
        self.relu, self.log_softmax, self.checkpoint = tg.relu, tg.log_softmax, tg.checkpoint

    def tensor(self, a, requires_grad=False):
        return self.tg.Tensor(a, requires_grad=requires_grad)

    def record(self):
        return self.tg.record()

    def sgd(self, params, lr):
        for p in params:
            p.data -= lr * p.grad
            p.grad = None


class NodeGraphAdapter:
    name = "node-graph"
    checkpoint = None

    def __init__(self):
        from . import nodegraph

        self.ng = nodegraph
        self.relu, self.log_softmax = nodegraph.relu, nodegraph.log_softmax

    def tensor(self, a, requires_grad=False):
        return self.ng.Tensor(a, requires_grad=requires_grad)

    def record(self):
        return contextlib.nullcontext()

    def sgd(self, params, lr):
        for p in params:
            p.data -= lr * p.grad
            p.grad = None


class TorchAdapter:
    name = "pytorch-cpu"
    checkpoint = None

    def __init__(self):
        import torch

        self.torch = torch
        torch.set_num_threads(1)
        self.relu = torch.relu
        self.log_softmax = lambda t: torch.log_softmax(t, -1)

    def tensor(self, a, requires_grad=False):
        return self.torch.from_numpy(np.ascontiguousarray(a)).requires_grad_(requires_grad)

    def record(self):
        return contextlib.nullcontext()

    def sgd(self, params, lr):
        with self.torch.no_grad():
            for p in params:
                p -= lr * p.grad
                p.grad = None


class CompiledAdapter:
    """tapegrad through ``tg.compile``: arrays in, arrays out; one program per shape, kept by the adapter."""

    name = "compiled"
    checkpoint = None

    def __init__(self):
        import tapegrad as tg

        self.tg = tg
        self.relu, self.log_softmax = tg.relu, tg.log_softmax
        self._steps: dict = {}

    def tensor(self, a, requires_grad=False):
        return np.ascontiguousarray(a)

    def record(self):
        return contextlib.nullcontext()

    def step(self, lr, with_update: bool = True):
        """The compiled ``(params, x, y) -> (loss, new params)`` (or ``(loss, grads)`` without the update)."""
        key = (lr, with_update)
        if key not in self._steps:
            tg = self.tg
            value_and_grad = tg.value_and_grad(lambda ps, x, y: mlp_loss(self, ps, x, y))
            if with_update:

                def train(ps, x, y):
                    loss, grads = value_and_grad(ps, x, y)
                    return loss, [p - lr * g for p, g in zip(ps, grads)]

                self._steps[key] = tg.compile(train, donate_argnums=0)
            else:
                self._steps[key] = tg.compile(value_and_grad)
        return self._steps[key]


def adapters(with_torch: bool = True) -> list:
    """The engines to compare: tapegrad, tapegrad compiled, the node-graph reference, and PyTorch CPU when it
    is installed."""
    out = [TapegradAdapter(), CompiledAdapter(), NodeGraphAdapter()]
    if with_torch:
        try:
            out.append(TorchAdapter())
        except ImportError:
            pass
    return out


# -- the model: the same code for every engine ------------------------------------------------------------
def init_mlp(E, sizes, rng) -> list:
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        params.append(E.tensor(rng.standard_normal((n_in, n_out)) * np.sqrt(2.0 / n_in), requires_grad=True))
        params.append(E.tensor(np.zeros(n_out, dtype=DTYPE), requires_grad=True))
    return params


def mlp_loss(E, params, x, y, checkpoint_every: int = 0):
    """Mean cross-entropy of a ReLU MLP; ``checkpoint_every=k`` recomputes groups of k hidden layers."""
    layers = [(params[i], params[i + 1]) for i in range(0, len(params), 2)]
    hidden, (w_out, b_out) = layers[:-1], layers[-1]

    def run(h, group):
        for w, b in group:
            h = E.relu(h @ w + b)
        return h

    h = x
    if checkpoint_every:
        for k in range(0, len(hidden), checkpoint_every):
            h = E.checkpoint(lambda h, group=hidden[k : k + checkpoint_every]: run(h, group))(h)
    else:
        h = run(h, hidden)
    logits = h @ w_out + b_out
    return -(E.log_softmax(logits) * y).sum() * (1.0 / x.shape[0])


def batch(E, rng, n, n_in, n_out):
    x = E.tensor(rng.standard_normal((n, n_in)))
    y = E.tensor(np.eye(n_out, dtype=DTYPE)[rng.integers(0, n_out, n)])
    return x, y


def train_step(E, params, x, y, lr=0.01, checkpoint_every=0):
    if isinstance(E, CompiledAdapter):
        loss, params[:] = E.step(lr)(params, x, y)  # the same arrays: the program updates them in place
        return loss
    with E.record():
        loss = mlp_loss(E, params, x, y, checkpoint_every)
    loss.backward()
    E.sgd(params, lr)
    return loss


# -- workloads ------------------------------------------------------------------------------------------
def history_kept(E, meter, steps=200, sizes=(256, 256, 10), n=64, seed=0):
    """SGD steps whose loop appends the loss to a list; marks the live memory after every step."""
    rng = np.random.default_rng(seed)
    params = init_mlp(E, sizes, rng)
    history = []
    meter.mark(0)
    for step in range(1, steps + 1):
        x, y = batch(E, rng, n, sizes[0], sizes[-1])
        history.append(train_step(E, params, x, y))
        del x, y
        meter.mark(step)
    return {"activations": activation_bytes(sizes, n), "history": history, "params": params}


def long_run(E, meter, steps=2000, sizes=(256, 256, 10), n=64, seed=0, every=100):
    """SGD steps keeping nothing; marks the live memory after step 10 and every ``every`` steps."""
    rng = np.random.default_rng(seed)
    params = init_mlp(E, sizes, rng)
    meter.mark(0)
    for step in range(1, steps + 1):
        x, y = batch(E, rng, n, sizes[0], sizes[-1])
        loss = train_step(E, params, x, y)
        del x, y, loss
        if step == 10 or step % every == 0 or step == steps:
            meter.mark(step)
    return {"params": params}


def one_step(E, meter, sizes=(784, 512, 512, 10), n=256, seed=0, checkpoint_every=0, grads_only=False):
    """Forward and backward of one batch; the marks split it into forward and backward for the timeline. The
    compiled engine runs its training step (``grads_only``: its ``value_and_grad`` alone)."""
    rng = np.random.default_rng(seed)
    params = init_mlp(E, sizes, rng)
    x, y = batch(E, rng, n, sizes[0], sizes[-1])
    param_bytes = sum(int(np.prod(p.shape)) * 8 for p in params)
    floor = 2 * param_bytes + 8 * n * (sizes[0] + sizes[-1])
    meter.mark("start")
    if isinstance(E, CompiledAdapter):  # the whole SGD step is one program: forward and backward have no seam
        step = E.step(0.01, with_update=not grads_only)
        meter.mark("forward")
        loss = step(params, x, y)
        meter.mark("backward")
        return {"floor": floor, "activations": activation_bytes(sizes, n), "keep": (params, x, y, loss)}
    with E.record():
        loss = mlp_loss(E, params, x, y, checkpoint_every)
    meter.mark("forward")
    loss.backward()
    meter.mark("backward")
    return {"floor": floor, "activations": activation_bytes(sizes, n), "keep": (params, x, y, loss)}


def activation_bytes(sizes, n) -> int:
    """What a backward needs of the forward: each hidden layer's output and the log-probabilities."""
    return 8 * n * (sum(sizes[1:-1]) + sizes[-1])


if __name__ == "__main__":  # a part of the benchmarks, not one: say which one to run
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
    from benchmarks import cli

    sys.exit(
        cli.library_main(__doc__, "benchmarks/workloads.py", "python -m benchmarks.memory (these are its workloads)")
    )
