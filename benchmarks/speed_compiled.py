"""The speed benchmark's compiled engine: each workload written once with tapegrad and compiled with
``tg.compile`` (:mod:`tapegrad.compile`), beside the hand-written NumPy floor.

- ``chain`` and ``fanout``: ``tg.compile(tg.value_and_grad(loss))``; one call is the forward and the backward
  pass, so the table's forward column holds both.
- ``mlp``: the whole SGD step compiled, ``value_and_grad`` and the update together, with the parameters donated
  (``donate_argnums=0``): the program writes the new parameters over the old ones, as the tight hand-written
  step does. Its gradients never leave the program, so it returns the loss and the parameters; the benchmark's
  gradient check runs the same step compiled to return the gradients as well (:func:`mlp_returning_grads`),
  and checks the timed step's updated parameters against NumPy's.

>>> from benchmarks.speed_compiled import chain
>>> from benchmarks.speed_workloads import TINY
>>> forward, backward = chain(TINY)
>>> [g.shape for g in backward(forward())]
[(3,), (3,), (3,), (3,)]
"""

from __future__ import annotations

import pathlib
import sys

if __name__ == "__main__" and not __package__:  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from benchmarks.speed_workloads import chain_data, fanout_data, mlp_data  # noqa: E402

__all__ = ["chain", "fanout", "mlp", "mlp_returning_grads", "mlp_step", "compile_costs", "time_by_call"]


def chain(s):
    import tapegrad as tg

    cycles = s.chain_ops // 4

    def loss(x, w, b, c):
        for _ in range(cycles):
            x = tg.tanh(x * w + b) - c
        return x.sum()

    step = tg.compile(tg.value_and_grad(loss, argnums=(0, 1, 2, 3)))
    leaves = chain_data(s)

    def forward():
        return step(*leaves)

    def backward(state):
        return list(state[1])

    return forward, backward


def fanout(s):
    import tapegrad as tg

    x0, ks = fanout_data(s)

    def loss(x):
        h = tg.tanh(x)
        y = h * ks[0]
        for k in ks[1:]:
            y = y + h * k
        return y.sum()

    step = tg.compile(tg.value_and_grad(loss))

    def forward():
        return step(x0)

    def backward(state):
        return [state[1]]

    return forward, backward


def mlp_step(lr, with_grads: bool = False):
    """The compiled SGD step ``(params, X, Y) -> (loss, new params[, grads])``, parameters donated."""
    import tapegrad as tg

    def loss(ps, X, Y):
        a = X
        for i in range(0, len(ps), 2):
            a = a @ ps[i] + ps[i + 1]
            if i + 2 < len(ps):
                a = tg.relu(a)
        return ((a - Y) ** 2).mean()

    def train_step(ps, X, Y):
        value, grads = tg.value_and_grad(loss)(ps, X, Y)
        new = [p - lr * g for p, g in zip(ps, grads)]
        return (value, new, grads) if with_grads else (value, new)

    return tg.compile(train_step, donate_argnums=0)


def mlp(s, dtype):
    params, X, Y = mlp_data(s, dtype)
    step = mlp_step(s.lr)
    state = {"params": params}

    def forward():
        value, state["params"] = step(state["params"], X, Y)
        return value

    def backward(value):
        return state["params"]  # the updated parameters (the gradients stay inside the program)

    return forward, backward


def mlp_returning_grads(s, dtype):
    """The same step, also returning its gradients: what the benchmark's gradient check compares."""
    params, X, Y = mlp_data(s, dtype)
    step = mlp_step(s.lr, with_grads=True)

    def forward():
        return step(params, X, Y)

    def backward(state):
        return list(state[2])

    return forward, backward


def compile_costs(s, clock, repeats: int = 7) -> list[str]:
    """What compiling costs, as report lines: the MLP step's first call (trace, then plan and generate) per
    dtype, the median of ``repeats`` fresh compilations; and a cache hit, per call, beyond the program's
    own run, for a one-array function and for the MLP step's eight arrays."""
    import numpy as np

    import tapegrad as tg

    lines = ["**compiling** (medians)", ""]
    for dtype in (np.float64, np.float32):
        trace_s, build_s, first_s = [], [], []
        for _ in range(repeats):
            params, X, Y = mlp_data(s, dtype)
            step = mlp_step(s.lr)
            t0 = clock()
            step(params, X, Y)
            first_s.append(clock() - t0)
            info = step.programs[0].info
            trace_s.append(info["trace_s"])
            build_s.append(info["build_s"])
        info = step.programs[0].info
        lines.append(
            f"- MLP step, {np.dtype(dtype).name}: first call {np.median(first_s) * 1e3:.1f} ms = trace "
            f"{np.median(trace_s) * 1e3:.1f} ms (the step run once, recorded: {info['traced_ops']} ops) + plan and "
            f"generate {np.median(build_s) * 1e3:.1f} ms ({len(step.programs[0].graph.steps)} calls)"
        )

    def per_call(f, n=20000):
        best = float("inf")
        for _ in range(repeats):
            t0 = clock()
            for _ in range(n):
                f()
            best = min(best, (clock() - t0) / n)
        return best

    x = np.ones(4)
    tiny = tg.compile(lambda x: x + 1.0)
    tiny(x), tiny(x)
    program = tiny.programs[0]
    call, run, plain = per_call(lambda: tiny(x)), per_call(lambda: program([x])), per_call(lambda: np.add(x, 1.0))
    lines.append(
        f"- cache hit, `x + 1.0` on shape (4,): {call * 1e6:.2f} µs per call = the program {run * 1e6:.2f} µs "
        f"+ {(call - run) * 1e6:.2f} µs to find it (flatten, signature, lookup, rebuild); NumPy alone "
        f"{plain * 1e6:.2f} µs"
    )
    params, X, Y = mlp_data(s, np.float64)
    small = tg.compile(lambda ps, X, Y: ps[-1] + 0.0)
    small(params, X, Y), small(params, X, Y)
    program, arrays = small.programs[0], [*params, X, Y]
    call, run = per_call(lambda: small(params, X, Y), 5000), per_call(lambda: program(arrays), 5000)
    lines.append(
        f"- cache hit with the MLP step's arguments (8 arrays): {(call - run) * 1e6:.2f} µs to find the program"
    )
    return lines + [""]


def time_by_call(s, clock, steps: int = 30) -> list[str]:
    """Where the compiled MLP step's time goes, as report lines: each function the generated program calls
    (``matmul``, ``add_reduce``, ``multiply``, ...) is wrapped in a timer, so the step's time splits into its
    calls and the rest (the program's own Python: unpacking, views, returning). Per step, over ``steps`` steps."""
    import collections
    import functools

    import numpy as np

    lines = ["**where the compiled MLP step's time goes** (each call of the generated program timed, per step)", ""]
    for dtype in (np.float64, np.float32):
        params, X, Y = mlp_data(s, dtype)
        step = mlp_step(s.lr)
        params = step(params, X, Y)[1]
        program = step.programs[0]
        spent, calls = collections.Counter(), collections.Counter()
        namespace = program._fn.__globals__
        originals = {k: v for k, v in namespace.items() if callable(v) and not isinstance(v, type) and k != "program"}

        def timed(name, f, spent=spent, calls=calls):
            @functools.wraps(f)
            def call(*args, **kwargs):
                t0 = clock()
                try:
                    return f(*args, **kwargs)
                finally:
                    spent[name] += clock() - t0
                    calls[name] += 1

            return call

        namespace.update({k: timed(k, v) for k, v in originals.items()})
        try:
            t0 = clock()
            for _ in range(steps):
                params = step(params, X, Y)[1]
            total = (clock() - t0) / steps
        finally:
            namespace.update(originals)
        parts = [f"{k} {v / steps * 1e3:.2f} ms ({calls[k] // steps})" for k, v in spent.most_common()]
        rest = total - sum(spent.values()) / steps
        lines.append(
            f"- {np.dtype(dtype).name}: {total * 1e3:.2f} ms = {', '.join(parts)}, and {rest * 1e3:.2f} ms besides "
            "the calls (the program's Python, finding it in the cache, the timers)"
        )
    return lines + [""]


if __name__ == "__main__":  # a part of the benchmarks, not one: say which one to run
    from benchmarks import cli

    sys.exit(cli.library_main(__doc__, "benchmarks/speed_compiled.py", "python -m benchmarks.speed (its engines)"))
