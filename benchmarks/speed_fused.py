"""The compiler's targets, side by side in one process on one thread: ``python -m benchmarks.speed --fused``.

Each row times tapegrad's compiled program with fused kernels (numba), the same program on NumPy's calls
(``fuse=False``), hand-written NumPy where the speed benchmark has it, and JAX's ``jit`` when installed (never
a dependency: ``pip install jax jaxlib`` beside tapegrad to see its column). One core: the process is pinned
to one CPU before JAX starts, and times are CPU time of the whole process (every thread's). XLA's CPU client
runs a program on a pool of threads of its own even with ``--xla_cpu_multi_thread_eigen=false`` (measured:
two threads sharing the MLP step's work), so elapsed time on an unpinned machine gives JAX several cores
where BLAS and numba have one; pinned, its threads share the one core, and CPU time counts all of them (and
not the other processes of a loaded machine). Times are medians over rounds that call each engine in turn
(interleaved), after a warm-up, the cycle collector off while timing; the MLP rows give the interquartile
range too.

- **compile**: seconds of the first call (the trace and the build) of a 10,000-op chain without fusion; of
  the first two calls (the trace, then the first run of the program, checked against eager, which compiles
  its kernels) of the 1,000-cycle chain fused, with an empty kernel cache; then the same in a second process
  whose disk cache holds the kernels (beyond importing numba; importing tapegrad included). Python's bytecode
  is cached for that process as an installed package's is (``PYTHONPYCACHEPREFIX``, a temporary folder, warmed
  by a first such process), also where the environment sets ``PYTHONDONTWRITEBYTECODE``.
- **chain**: the speed benchmark's 1,000-cycle chain (``tanh(x * w + b) - c`` on (4,) arrays, value and the
  four gradients): µs per forward op.
- **wide**: 5 cycles of the chain (20 ops) on 10^6 float64 elements, value and gradients: ms per call.
- **mlp**: the 784-512-512-10 SGD step (batch 256) with its parameters donated, float64 and float32: ms per
  step, beside the tight hand-written NumPy step.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

__all__ = ["main", "median_time"]


CLOCK = time.process_time  # CPU time of every thread: see the module docstring


def median_time(fn, repeats=15, warmup=3) -> float:
    """Median CPU seconds of ``fn()`` over ``repeats`` calls after ``warmup`` calls, the collector off."""
    return statistics.median(interleaved({"fn": fn}, repeats, warmup)["fn"])


def interleaved(fns: dict, rounds=15, warmup=3) -> dict:
    """CPU seconds of each call, per name: ``rounds`` rounds, each calling every function once in turn (so that
    a slower or busier stretch of the machine weighs on all of them alike), in an order shuffled anew each round
    (measured: the engine timed right after JAX's took 1 ms more an MLP step, whichever it was), after ``warmup``
    calls of each."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: dict = {name: [] for name in fns}
    order = list(fns)
    shuffle = random.Random(0).shuffle
    was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            shuffle(order)
            for name in order:
                fn = fns[name]
                t0 = CLOCK()
                fn()
                times[name].append(CLOCK() - t0)
    finally:
        if was:
            gc.enable()
    return times


def _jax():
    try:
        # a thread pool of one size per core it may use: pinned first (main), its threads share the one core
        os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
        import jax  # noqa: PLC0415

        jax.config.update("jax_enable_x64", True)
        return jax
    except ImportError:
        return None


def _chain_loss(xp_tanh, cycles):
    def loss(x, w, b, c):
        for _ in range(cycles):
            x = xp_tanh(x * w + b) - c
        return x.sum()

    return loss


def _chain_args(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    w = 1.0 + 0.1 * rng.standard_normal(n)
    b, c = 0.1 * rng.standard_normal((2, n))
    return x, w, b, c


def _tapegrad_chain(cycles, fuse):
    import tapegrad as tg  # noqa: PLC0415

    return tg.compile(tg.value_and_grad(_chain_loss(tg.tanh, cycles), argnums=(0, 1, 2, 3)), fuse=fuse)


def _numpy_chain(cycles):
    def step(x0, w, b, c):
        x, saved = x0, []
        for _ in range(cycles):
            t = np.tanh(x * w + b)
            saved.append((x, t))
            x = t - c
        value = x.sum()
        g = np.ones_like(x0)
        gw, gb, gc = np.zeros_like(w), np.zeros_like(b), np.zeros_like(c)
        for x, t in reversed(saved):
            gc -= g
            g = g * (1 - t * t)
            gb += g
            gw += g * x
            g = g * w
        return value, (g, gw, gb, gc)

    return step


def _jax_chain(jax, cycles):
    """JAX's chain: unrolled up to 10 cycles; longer ones as ``lax.scan`` of one cycle (XLA takes minutes to
    compile 4,000 unrolled ops; the scan runs the same arithmetic, one cycle per iteration)."""
    import jax.numpy as jnp  # noqa: PLC0415

    if cycles <= 10:
        return jax.jit(jax.value_and_grad(_chain_loss(jnp.tanh, cycles), argnums=(0, 1, 2, 3)))

    def loss(x, w, b, c):
        def cycle(x, _):
            return jnp.tanh(x * w + b) - c, None

        return jax.lax.scan(cycle, x, None, length=cycles)[0].sum()

    return jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2, 3)))


SETTLE_S = 0.02  # after each JAX call: its pool's threads spin a while before they sleep


def _block(out):
    """Wait for JAX's results, then for its threads to go idle: their spinning is JAX's CPU time, which would
    otherwise be charged to whichever engine is timed next on the same core."""
    for leaf in _leaves(out):
        getattr(leaf, "block_until_ready", lambda: None)()
    time.sleep(SETTLE_S)
    return out


def _leaves(out):
    if isinstance(out, (tuple, list)):
        for x in out:
            yield from _leaves(x)
    elif isinstance(out, dict):
        for x in out.values():
            yield from _leaves(x)
    else:
        yield out


def compile_rows(cache) -> list:
    import tapegrad as tg  # noqa: PLC0415

    rows = []
    args = _chain_args(4)
    t0 = CLOCK()
    f = _tapegrad_chain(10_000 // 13, fuse=False)  # ~10,000 ops traced: 4 forward and 9 backward a cycle
    f(*args)  # the trace and the program's build
    ops = f.program.info["traced_ops"]
    rows.append((f"compile {ops:,} ops, NumPy calls: the first call (s)", CLOCK() - t0, None, "≤ 2"))
    t0 = CLOCK()
    import numba  # noqa: PLC0415, F401

    imported = CLOCK() - t0
    os.environ["TAPEGRAD_CACHE"] = cache
    t0 = CLOCK()
    f = _tapegrad_chain(1000, fuse=True)
    f(*args)
    f(*args)
    gc.collect()
    first = CLOCK() - t0
    info = f.program.info
    label = f"compile 1,000-cycle chain fused, first process (s; {info['fused_runs']} runs)"
    rows.append((label, first, None, "≤ 10"))
    code = textwrap.dedent(
        """
        import gc, time, numpy as np
        import numba
        t0 = time.process_time()
        from benchmarks.speed_fused import _tapegrad_chain, _chain_args
        f = _tapegrad_chain(1000, fuse=True)
        args = _chain_args(4)
        f(*args); f(*args)
        gc.collect()  # the collections the calls put off (the collector paused) are counted too
        print(time.process_time() - t0)
        """
    )
    env = dict(os.environ, TAPEGRAD_CACHE=cache, PYTHONPYCACHEPREFIX=os.path.join(cache, "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for _ in range(2):  # the first also writes the bytecode; the second is timed as an installed package runs
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    rows.append(
        ("compile the same, second process, disk cache (s, beyond numba's import)", float(out.stdout), None, "≤ 1")
    )
    rows.append(("importing numba (s)", imported, None, ""))
    del tg
    return rows


def chain_rows(jax) -> list:
    cycles, ops = 1000, 4000
    args = _chain_args(4)
    fused, plain, hand = _tapegrad_chain(cycles, True), _tapegrad_chain(cycles, False), _numpy_chain(cycles)
    j = _jax_chain(jax, cycles) if jax else None
    fns = {"fused": lambda: fused(*args), "numpy program": lambda: plain(*args), "hand-written": lambda: hand(*args)}
    if j is not None:
        fns["jax"] = lambda: _block(j(*args))
    times = {k: statistics.median(t) / ops * 1e6 for k, t in interleaved(fns).items()}
    return [("1,000-cycle chain (µs per op)", times, "fused ≤ 0.15")]


def wide_rows(jax) -> list:
    cycles = 5
    args = _chain_args(1_000_000)
    fused, plain, hand = _tapegrad_chain(cycles, True), _tapegrad_chain(cycles, False), _numpy_chain(cycles)
    j = _jax_chain(jax, cycles) if jax else None
    fns = {"fused": lambda: fused(*args), "numpy program": lambda: plain(*args), "hand-written": lambda: hand(*args)}
    if j is not None:
        fns["jax"] = lambda: _block(j(*args))
    times = {k: statistics.median(t) * 1e3 for k, t in interleaved(fns, rounds=7).items()}
    return [("20 ops on 10^6 float64, value and grad (ms)", times, "fused ≥ 4x faster than NumPy's, ≤ JAX")]


def mlp_rows(jax, rounds=21) -> list:
    """The MLP step's rows: per dtype, the median ms of each engine, interleaved, and its interquartile range."""
    import tapegrad as tg  # noqa: PLC0415
    from benchmarks.speed_workloads import FULL, mlp_data, numpy_mlp_tight  # noqa: PLC0415

    rows = []
    lr = FULL.lr

    def loss(ps, X, Y, relu):
        a = X
        for i in range(0, len(ps), 2):
            a = a @ ps[i] + ps[i + 1]
            if i + 2 < len(ps):
                a = relu(a)
        return ((a - Y) ** 2).mean()

    def step(ps, X, Y):
        value, grads = tg.value_and_grad(lambda p: loss(p, X, Y, tg.relu))(ps)
        return value, [p - lr * g for p, g in zip(ps, grads)]

    for dtype in (np.float64, np.float32):
        fns = {}
        for name, fuse in (("fused", True), ("numpy program", False)):
            params, X, Y = mlp_data(FULL, dtype)
            compiled = tg.compile(step, donate_argnums=0, fuse=fuse)
            state = {"p": params}

            def call(compiled=compiled, state=state, X=X, Y=Y):
                state["p"] = compiled(state["p"], X, Y)[1]

            fns[name] = call
        forward, backward = numpy_mlp_tight(FULL, dtype)
        fns["hand-written"] = lambda f=forward, b=backward: b(f())
        if jax is not None:
            fns["jax"] = _jax_mlp(jax, loss, lr, *mlp_data(FULL, dtype))
        times = interleaved(fns, rounds)
        label = f"MLP SGD step {np.dtype(dtype).name} (ms)"
        rows.append(
            (label, {k: statistics.median(t) * 1e3 for k, t in times.items()}, "fused ≤ 0.97x hand-written, ≤ JAX")
        )
        spread = {k: tuple(np.percentile(t, [25, 75]) * 1e3) for k, t in times.items()}
        rows[-1][1]["iqr"] = spread
    return rows


def _jax_mlp(jax, loss, lr, params, X, Y):
    """JAX's step, jitted with its parameters donated, as a call that waits for the new parameters."""
    import jax.numpy as jnp  # noqa: PLC0415

    def jstep(ps, X, Y):
        value, grads = jax.value_and_grad(lambda p: loss(p, X, Y, jax.nn.relu))(ps)
        return value, [p - lr * g for p, g in zip(ps, grads)]

    jitted = jax.jit(jstep, donate_argnums=0)
    state = {"p": [jnp.asarray(p) for p in params]}
    JX, JY = jnp.asarray(X), jnp.asarray(Y)

    def call():
        _, state["p"] = jitted(state["p"], JX, JY)
        _block(state["p"])

    return call


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.parse_args(argv)
    if importlib.util.find_spec("numba") is None:
        print("benchmarks/speed_fused.py times fused kernels: install the jit extra (pip install -e '.[jit]')")
        return 2
    from benchmarks import hygiene  # noqa: PLC0415

    hygiene.cap_blas_threads_by_env()
    pinned = hygiene.pin_to_one_core(None)  # before JAX starts its threads, which inherit the one core
    allocator = hygiene.pin_allocator()  # glibc's moving thresholds made the hand-written step vary by a fifth
    jax = _jax()
    print(f"# tapegrad compiler targets, one core (numpy {np.__version__}, jax {getattr(jax, '__version__', '-')})")
    print(f"# {pinned}; {allocator}; CPU time of the process, every thread's")
    print()
    with tempfile.TemporaryDirectory() as cache:
        for label, value, _, target in compile_rows(cache):
            print(f"- {label}: {value:.2f}" + (f"  (target {target})" if target else ""))
    print()
    print("| workload | fused | NumPy program | hand-written | JAX jit | target |")
    print("|---|---|---|---|---|---|")
    spreads = []
    for rows in (chain_rows, wide_rows, mlp_rows):
        for label, times, target in rows(jax):
            if "iqr" in times:
                spreads.append((label, times.pop("iqr")))
            cells = [times.get(k) for k in ("fused", "numpy program", "hand-written", "jax")]
            text = " | ".join("-" if c is None else (f"{c:.3f}" if c < 10 else f"{c:.1f}") for c in cells)
            ratio = f" (fused/hand {times['fused'] / times['hand-written']:.2f}x" + (
                f", fused/JAX {times['fused'] / times['jax']:.2f}x)" if "jax" in times else ")"
            )
            print(f"| {label} | {text} | {target}{ratio} |", flush=True)
    for label, spread in spreads:
        quartiles = ", ".join(f"{k} {lo:.2f}-{hi:.2f}" for k, (lo, hi) in spread.items())
        print(f"- {label}, interquartile ranges: {quartiles}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
