"""The speed benchmark's engines: each workload of :mod:`benchmarks.speed_workloads` written once per API
(tapegrad and the node-graph reference share one, HIPS autograd, PyTorch eager CPU; the hand-written NumPy
floor lives with the workloads), the table of engines, and the gradient check every engine passes before anything is timed.

Every engine starts from the same arrays, so :func:`check` compares each one's gradients with the hand-written
NumPy ones.

>>> from benchmarks.speed_engines import available_engines, check
>>> from benchmarks.speed_workloads import TINY
>>> engines, notes = available_engines(["numpy", "tapegrad"])
>>> check(engines, TINY)   # raises AssertionError naming the engine and the gradient that differs
['chain', 'fanout', 'mlp-float64', 'mlp-float32']
"""

from __future__ import annotations

import pathlib
import sys
from dataclasses import dataclass

if __name__ == "__main__" and not __package__:  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from benchmarks import speed_compiled  # noqa: E402
from benchmarks.speed_workloads import (  # noqa: E402
    FULL,
    TINY,
    WORKLOADS,
    Sizes,
    chain_data,
    fanout_data,
    mlp_data,
    numpy_chain,
    numpy_fanout,
    numpy_mlp,
    numpy_mlp_tight,
    op_count,
)

__all__ = [
    "Engine",
    "ENGINES",
    "available_engines",
    "workload",
    "check",
    "Sizes",
    "FULL",
    "TINY",
    "WORKLOADS",
    "op_count",
]


# -- tapegrad and the node-graph reference: the same model code on either tensor class ------------------------
def _tapegrad():
    import tapegrad as tg

    return tg.Tensor, tg.tanh, tg.relu, tg.record


_NATIVE = []  # this tree's tapegrad again, with its compiled hot path (imported once, on first use)


def _tapegrad_native():
    """This tree's ``tapegrad`` imported a second time, as ``tapegrad_native``, with ``TAPEGRAD_SPEEDUPS=1``
    (tapegrad/speedups.py): the same code with its hot path in C, timed beside the pure one in one process."""
    if not _NATIVE:
        import atexit
        import os
        import shutil
        import tempfile

        import tapegrad
        from benchmarks.overhead import import_renamed

        package = pathlib.Path(tapegrad.__file__).parent
        sources = {p.relative_to(package): p.read_bytes() for p in package.rglob("*.py")}
        binaries = {p.relative_to(package): p.read_bytes() for p in package.rglob("native*.so")}
        where = pathlib.Path(tempfile.mkdtemp(prefix="tapegrad-native-"))
        atexit.register(shutil.rmtree, where, True)
        asked = os.environ.get("TAPEGRAD_SPEEDUPS")
        os.environ["TAPEGRAD_SPEEDUPS"] = "1"
        try:
            tg = import_renamed(sources, where, "tapegrad_native", binaries)
        finally:
            if asked is None:
                del os.environ["TAPEGRAD_SPEEDUPS"]
            else:
                os.environ["TAPEGRAD_SPEEDUPS"] = asked
        assert tg.speedups.ENABLED, "tapegrad_native imported without its compiled hot path"
        _NATIVE.append(tg)
    tg = _NATIVE[0]
    return tg.Tensor, tg.tanh, tg.relu, tg.record


def _nodegraph():
    import contextlib

    from benchmarks import nodegraph as ng  # the memory benchmark's; it records always, so no block

    return ng.Tensor, ng.tanh, ng.relu, contextlib.nullcontext


def _tensor_chain(api):
    def build(s):
        Tensor, tanh, _, record = api()
        leaves = [Tensor(a, requires_grad=True) for a in chain_data(s)]
        x0, w, b, c = leaves
        cycles = s.chain_ops // 4

        def forward():
            for t in leaves:
                t.grad = None
            x = x0
            with record():
                for _ in range(cycles):
                    x = tanh(x * w + b) - c
                return x.sum()

        def backward(loss):
            loss.backward()
            return [t.grad for t in leaves]

        return forward, backward

    return build


def _tensor_fanout(api):
    def build(s):
        Tensor, tanh, _, record = api()
        x0, ks = fanout_data(s)
        x, ks = Tensor(x0, requires_grad=True), [Tensor(k) for k in ks]

        def forward():
            x.grad = None
            with record():
                h = tanh(x)
                y = h * ks[0]
                for k in ks[1:]:
                    y = y + h * k
                return y.sum()

        def backward(loss):
            loss.backward()
            return [x.grad]

        return forward, backward

    return build


def _tensor_mlp(api):
    def build(s, dtype):
        Tensor, _, relu, record = api()
        arrays, X, Y = mlp_data(s, dtype)
        params, X, Y, lr = [Tensor(p, requires_grad=True) for p in arrays], Tensor(X), Tensor(Y), s.lr

        def forward():
            for p in params:
                p.grad = None
            with record():
                a = X
                for i in range(0, len(params), 2):
                    a = a @ params[i] + params[i + 1]
                    if i + 2 < len(params):
                        a = relu(a)
                return ((a - Y) ** 2).mean()

        def backward(loss):
            loss.backward()
            for p in params:
                p.data -= lr * p.grad
            return [p.grad for p in params]

        return forward, backward

    return build


# -- HIPS autograd: functional, so forward is make_vjp and backward calls the vjp ----------------------------
def _autograd_chain(s):
    import autograd.numpy as anp
    from autograd import make_vjp

    params = tuple(chain_data(s))
    cycles = s.chain_ops // 4

    def loss(p):
        x, w, b, c = p
        for _ in range(cycles):
            x = anp.tanh(x * w + b) - c
        return anp.sum(x)

    def forward():
        return make_vjp(loss)(params)

    def backward(state):
        vjp, ans = state
        return list(vjp(anp.ones_like(ans)))

    return forward, backward


def _autograd_fanout(s):
    import autograd.numpy as anp
    from autograd import make_vjp

    x0, ks = fanout_data(s)

    def loss(x):
        h = anp.tanh(x)
        y = h * ks[0]
        for k in ks[1:]:
            y = y + h * k
        return anp.sum(y)

    def forward():
        return make_vjp(loss)(x0)

    def backward(state):
        vjp, ans = state
        return [vjp(anp.ones_like(ans))]

    return forward, backward


def _autograd_mlp(s, dtype):
    import autograd.numpy as anp
    from autograd import make_vjp

    params, X, Y = mlp_data(s, dtype)
    lr = s.lr

    def loss(ps):
        a = X
        for i in range(0, len(ps), 2):
            a = anp.dot(a, ps[i]) + ps[i + 1]
            if i + 2 < len(ps):
                a = anp.maximum(a, 0)
        return anp.mean((a - Y) ** 2)

    def forward():
        return make_vjp(loss)(params)

    def backward(state):
        vjp, ans = state
        grads = list(vjp(anp.ones_like(ans)))
        for p, g in zip(params, grads):
            p -= lr * g
        return grads

    return forward, backward


# -- PyTorch, eager on the CPU -------------------------------------------------------------------------------
def _torch_chain(s):
    import torch

    leaves = [torch.from_numpy(a).requires_grad_() for a in chain_data(s)]
    x0, w, b, c = leaves
    cycles = s.chain_ops // 4

    def forward():
        for t in leaves:
            t.grad = None
        x = x0
        for _ in range(cycles):
            x = torch.tanh(x * w + b) - c
        return x.sum()

    def backward(loss):
        loss.backward()
        return [t.grad.numpy() for t in leaves]

    return forward, backward


def _torch_fanout(s):
    import torch

    x0, ks = fanout_data(s)
    x, ks = torch.from_numpy(x0).requires_grad_(), [torch.from_numpy(k) for k in ks]

    def forward():
        x.grad = None
        h = torch.tanh(x)
        y = h * ks[0]
        for k in ks[1:]:
            y = y + h * k
        return y.sum()

    def backward(loss):
        loss.backward()
        return [x.grad.numpy()]

    return forward, backward


def _torch_mlp(s, dtype):
    import torch

    arrays, X, Y = mlp_data(s, dtype)
    params, X, Y, lr = (
        [torch.from_numpy(p).requires_grad_() for p in arrays],
        torch.from_numpy(X),
        torch.from_numpy(Y),
        s.lr,
    )

    def forward():
        for p in params:
            p.grad = None  # what optimizer.zero_grad() does by default
        a = X
        for i in range(0, len(params), 2):
            a = a @ params[i] + params[i + 1]
            if i + 2 < len(params):
                a = torch.relu(a)
        return ((a - Y) ** 2).mean()

    def backward(loss):
        loss.backward()
        with torch.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-lr)  # torch.optim.SGD's update
        return [p.grad.numpy() for p in params]

    return forward, backward


# -- the engine table ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Engine:
    """One engine: the module it needs (None: always there) and its three workload builders (None: the engine
    does not run that workload). ``check_mlp``, when given, is the MLP step the gradient check runs instead of
    the timed one (an engine whose timed step keeps its gradients inside)."""

    name: str
    needs: str | None
    chain: object
    fanout: object
    mlp: object
    missing: str = ""  # what to do when ``needs`` cannot be imported
    check_mlp: object = None

    def runs(self, workload_name: str) -> bool:
        kind = "mlp" if workload_name.startswith("mlp") else workload_name
        return getattr(self, kind) is not None


ENGINES = {
    "numpy": Engine("numpy", None, numpy_chain, numpy_fanout, numpy_mlp),
    "numpy-tight": Engine("numpy-tight", None, None, None, numpy_mlp_tight),
    "tapegrad": Engine(
        "tapegrad", "tapegrad", _tensor_chain(_tapegrad), _tensor_fanout(_tapegrad), _tensor_mlp(_tapegrad)
    ),
    "tapegrad-native": Engine(
        "tapegrad-native",
        "tapegrad.core.native",
        _tensor_chain(_tapegrad_native),
        _tensor_fanout(_tapegrad_native),
        _tensor_mlp(_tapegrad_native),
        "tapegrad's compiled hot path is not built: python -m pip install -e . with a C compiler present",
    ),
    "nodegraph": Engine(
        "nodegraph",
        "benchmarks.nodegraph",
        _tensor_chain(_nodegraph),
        _tensor_fanout(_nodegraph),
        _tensor_mlp(_nodegraph),
        "the node-graph reference (benchmarks/nodegraph.py) is not in this checkout",
    ),
    "autograd": Engine(
        "autograd", "autograd", _autograd_chain, _autograd_fanout, _autograd_mlp, 'pip install -e ".[bench]"'
    ),
    "torch": Engine("torch", "torch", _torch_chain, _torch_fanout, _torch_mlp, "pip install torch==2.13.0"),
    "compiled": Engine(
        "compiled",
        "tapegrad",
        speed_compiled.chain,
        speed_compiled.fanout,
        speed_compiled.mlp,
        check_mlp=speed_compiled.mlp_returning_grads,
    ),
}


def available_engines(names=None) -> tuple[list[Engine], list[str]]:
    """The engines among ``names`` (default: all) whose module imports, and one note per skipped engine."""
    import importlib

    engines, notes = [], []
    for name in names or ENGINES:
        engine = ENGINES[name]
        if engine.needs is not None:
            try:
                importlib.import_module(engine.needs)
            except ImportError as err:
                notes.append(f"{name}: skipped ({err}); {engine.missing}")
                continue
        engines.append(engine)
    if "nodegraph" in [e.name for e in engines]:
        # The node-graph reference sorts its graph by recursive DFS, one frame per node: a 1,000-op chain
        # needs more than Python's default limit of 1,000 frames.
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 20 * FULL.chain_ops))
    return engines, notes


def workload(engine: Engine, name: str, sizes: Sizes, checking: bool = False):
    """``(forward, backward)`` of ``engine`` for the workload ``name`` (one of ``WORKLOADS``); ``checking``: the
    variant the gradient check runs."""
    if name == "chain":
        return engine.chain(sizes)
    if name == "fanout":
        return engine.fanout(sizes)
    mlp = engine.check_mlp if checking and engine.check_mlp is not None else engine.mlp
    return mlp(sizes, np.float64 if name == "mlp-float64" else np.float32)


def check(engines: list[Engine], sizes: Sizes, names=WORKLOADS) -> list[str]:
    """Run one pass of every workload on every engine and compare its gradients with hand-written NumPy's.

    Raises AssertionError naming the engine, the workload and the gradient; returns the workloads checked.
    """
    for name in names:
        fwd, bwd = workload(ENGINES["numpy"], name, sizes)
        expected = [np.array(g) for g in bwd(fwd())]
        tol = dict(rtol=1e-4, atol=1e-6) if name == "mlp-float32" else dict(rtol=1e-9, atol=1e-12)
        for engine in engines:
            if engine.name == "numpy" or not engine.runs(name):
                continue
            if name.startswith("mlp") and engine.check_mlp is not None:
                _check_updated(engine, name, sizes, expected)
            fwd, bwd = workload(engine, name, sizes, checking=True)
            got = [np.array(g) for g in bwd(fwd())]
            assert len(got) == len(expected), f"{engine.name} {name}: {len(got)} gradients, expected {len(expected)}"
            for i, (g, e) in enumerate(zip(got, expected)):
                assert g.shape == e.shape and g.dtype == e.dtype, (
                    f"{engine.name} {name}: gradient {i} is {g.dtype}{g.shape}, expected {e.dtype}{e.shape}"
                )
                assert np.all(np.isfinite(g)), f"{engine.name} {name}: gradient {i} is not finite"
                np.testing.assert_allclose(g, e, **tol, err_msg=f"{engine.name} {name}: gradient {i}")
    return list(names)


def _check_updated(engine, name, sizes, grads) -> None:
    """The timed step of an engine that keeps its gradients inside: its updated parameters are NumPy's
    ``p - lr * g`` (to rounding: the update may be fused into the gradient's product)."""
    dtype = np.float64 if name == "mlp-float64" else np.float32
    params = mlp_data(sizes, dtype)[0]
    fwd, bwd = workload(engine, name, sizes)
    got = bwd(fwd())
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    for i, (p, g, new) in enumerate(zip(params, grads, got)):
        np.testing.assert_allclose(new, p - sizes.lr * g, **tol, err_msg=f"{engine.name} {name}: parameter {i}")


if __name__ == "__main__":  # a part of the benchmarks, not one: say which one to run
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
    from benchmarks import cli

    sys.exit(
        cli.library_main(__doc__, "benchmarks/speed_engines.py", "python -m benchmarks.speed (these are its engines)")
    )
