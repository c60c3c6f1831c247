"""Forward mode and vmap against HIPS autograd and JAX (eager, no jit), side by side in one process.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.transforms          # one thread, as the table in issue 26
    OPENBLAS_NUM_THREADS=1 python -m benchmarks.transforms --quick  # fewer rounds (CI's smoke run)
    OPENBLAS_NUM_THREADS=1 python -m benchmarks.transforms --ref main  # this tree beside git ref main's

``--ref`` adds a column for the ``tapegrad`` package of a git ref, imported beside this tree's under another name
(as ``benchmarks.overhead`` does), so that a change is measured before and after in one process, round by round.

``f(x) = sum(tanh(A @ tanh(A @ x)) ** 2)`` with ``x`` of size 200: each figure is a multiple of ``f``'s own time in
the same library (best of interleaved rounds), for ``grad``, ``jvp`` of ``tanh(A @ tanh(A @ x))``, ``hvp``
(also as a multiple of the library's own ``grad``), the 200x200 ``jacobian`` and ``hessian``. Then per-example
gradients of the digits MLP (64-32-10, cross-entropy, 256 examples): ``vmap(grad(loss))`` as a multiple of one
batched gradient, and a Python loop of 256 gradients beside it. autograd and JAX are optional (``pip install
autograd jax jaxlib``: never a dependency); a missing one is left out of the table. Every candidate's result is
checked against tapegrad's before it is timed.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import tempfile
import time
import timeit

import numpy as np

import tapegrad as tg

rng = np.random.default_rng(0)
N = 200
A = rng.standard_normal((N, N)) / np.sqrt(N)
X0, T0 = rng.standard_normal(N), rng.standard_normal(N)


def tapegrad_row(tg=tg):
    def inner(x):
        return tg.tanh(A @ tg.tanh(A @ x))

    def f(x):
        return (inner(x) ** 2).sum()

    return {
        "f": lambda: f(tg.Tensor(X0)),
        "grad": lambda: tg.grad(f)(X0),
        "jvp": lambda: tg.jvp(inner, (X0,), (T0,))[1],
        "hvp": lambda: tg.hvp(f, X0, T0),
        "jacobian": lambda: tg.jacobian(inner)(X0),
        "hessian": lambda: tg.hessian(f)(X0),
    }


def autograd_row():
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        return None

    def inner(x):
        return anp.tanh(A @ anp.tanh(A @ x))

    def f(x):
        return anp.sum(inner(x) ** 2)

    g = autograd.grad(f)
    return {
        "f": lambda: f(X0),
        "grad": lambda: g(X0),
        "jvp": lambda: autograd.make_jvp(inner)(X0)(T0)[1],
        "hvp": lambda: autograd.hessian_vector_product(f)(X0, T0),
        "jacobian": lambda: autograd.jacobian(inner)(X0),
        "hessian": lambda: autograd.hessian(f)(X0),
    }


def jax_row():
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    a, x0, t0 = jnp.asarray(A), jnp.asarray(X0), jnp.asarray(T0)

    def inner(x):
        return jnp.tanh(a @ jnp.tanh(a @ x))

    def f(x):
        return jnp.sum(inner(x) ** 2)

    def ready(fn):
        return lambda: jax.block_until_ready(fn())

    return {
        "f": ready(lambda: f(x0)),
        "grad": ready(lambda: jax.grad(f)(x0)),
        "jvp": ready(lambda: jax.jvp(inner, (x0,), (t0,))[1]),
        "hvp": ready(lambda: jax.jvp(jax.grad(f), (x0,), (t0,))[1]),
        "jacobian": ready(lambda: jax.jacfwd(inner)(x0)),
        "hessian": ready(lambda: jax.hessian(f)(x0)),
    }


NUMBER = {"f": 200, "grad": 50, "jvp": 50, "hvp": 50, "jacobian": 3, "hessian": 2}


def measure(rows, rounds):
    """Every candidate's time per call in each round (process CPU time), the rounds interleaved so that load hits
    all alike: ``{lib: {row: [seconds per round]}}``."""
    times = {lib: {k: [] for k in row} for lib, row in rows.items()}
    for _ in range(rounds):
        for lib, row in rows.items():
            for k, fn in row.items():
                times[lib][k].append(timeit.Timer(fn, timer=time.process_time).timeit(NUMBER[k]) / NUMBER[k])
    return times


def ratios(a, b):
    """The median and quartiles of the per-round ratios ``a[i] / b[i]`` (the same round's load on both)."""
    q = statistics.quantiles([x / y for x, y in zip(a, b)], n=4, method="inclusive")
    return statistics.median(x / y for x, y in zip(a, b)), q[0], q[2]


def check(rows):
    ref = {k: np.asarray(fn()) for k, fn in rows["tapegrad"].items()}
    for lib, row in rows.items():
        for k, fn in row.items():
            np.testing.assert_allclose(np.asarray(fn()), ref[k], rtol=1e-8, atol=1e-10, err_msg=f"{lib} {k}")


# -- per-example gradients of the digits MLP --------------------------------------------------------------
def mlp_problem(batch=256):
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = digits.data[:batch] / 16.0
    y = np.eye(10)[digits.target[:batch]]
    r = np.random.default_rng(1)
    params = {
        "w1": r.standard_normal((64, 32)) * 0.1,
        "b1": np.zeros(32),
        "w2": r.standard_normal((32, 10)) * 0.1,
        "b2": np.zeros(10),
    }
    return params, x, y


def loss_of(tg):
    def loss(p, x, y):
        """Cross-entropy of one example (or of a batch, summed) with one-hot targets."""
        h = tg.relu(x @ p["w1"] + p["b1"])
        return -(y * tg.log_softmax(h @ p["w2"] + p["b2"], axis=-1)).sum()

    return loss


loss = loss_of(tg)


def per_example_fns(tg=tg):
    """The per-example rows of ``tg``, each checked: ``{name: (fn, calls per timing)}``."""
    loss = loss_of(tg)
    params, x, y = mlp_problem()
    batched = tg.grad(loss)
    each = tg.vmap(tg.grad(loss), in_axes=(None, 0, 0))
    got = each(params, x, y)
    for i in (0, 17, 255):
        want = tg.grad(loss)(params, x[i], y[i])
        for k in params:
            np.testing.assert_allclose(got[k][i], want[k], rtol=1e-10, atol=1e-13)
    fns = {
        "one batched gradient": (lambda: batched(params, x, y), 20),
        "vmap(grad(loss))": (lambda: each(params, x, y), 10),
        "a loop of 256 gradients": (lambda: [tg.grad(loss)(params, x[i], y[i]) for i in range(256)], 1),
    }
    return fns


def per_example(rounds, packages):
    """Best time per call of each per-example row, for each package (``{label: tapegrad module}``), interleaved."""
    fns = {(lib, k): v for lib, tg in packages.items() for k, v in per_example_fns(tg).items()}
    times = {k: [] for k in fns}
    for _ in range(rounds):
        for k, (fn, n) in fns.items():
            times[k].append(timeit.Timer(fn, timer=time.process_time).timeit(n) / n)
    return times


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="two rounds instead of seven")
    parser.add_argument("--ref", default=None, help="also a column for the tapegrad of this git ref (e.g. main)")
    args = parser.parse_args(argv)
    rounds = 2 if args.quick else 7
    with tempfile.TemporaryDirectory() as tmp:
        packages = {"tapegrad": tg}
        if args.ref is not None:
            from benchmarks.overhead import load_ref, resolve_ref

            ref = resolve_ref(args.ref)
            if ref is None:
                parser.error(f"--ref {args.ref}: not a git ref of this checkout")
            packages[f"tapegrad {args.ref}"] = load_ref(ref, pathlib.Path(tmp))
        report(packages, rounds)


def report(packages, rounds):
    rows = {lib: tapegrad_row(pkg) for lib, pkg in packages.items()}
    for lib, make in (("autograd", autograd_row), ("JAX (eager)", jax_row)):
        row = make()
        if row is not None:
            rows[lib] = row
    check(rows)
    times = measure(rows, rounds)
    best = {lib: {k: min(v) for k, v in t.items()} for lib, t in times.items()}
    libs = list(rows)
    print(f"f(x) = sum(tanh(A @ tanh(A @ x))**2), x of size {N}: multiples of f's own time in each library")
    print(f"{'':<22}" + "".join(f"{lib:>20}" for lib in libs))
    print(f"{'f itself (µs)':<22}" + "".join(f"{best[lib]['f'] * 1e6:>20.1f}" for lib in libs))
    for k in ("grad", "jvp", "hvp", "jacobian", "hessian"):
        cells = []
        for lib in libs:
            ratio = best[lib][k] / best[lib]["f"]
            extra = f" ({best[lib][k] / best[lib]['grad']:.1f}x grad)" if k == "hvp" else ""
            cells.append(f"{ratio:.1f}x{extra}")
        label = {"jacobian": f"jacobian {N}x{N}", "hessian": f"hessian {N}x{N}"}.get(k, k)
        print(f"{label:<22}" + "".join(f"{c:>20}" for c in cells))
    pe_times = per_example(rounds, packages)
    pe = {k: min(v) for k, v in pe_times.items()}
    print("\nper-example gradients, digits MLP 64-32-10, 256 examples (multiples of one batched gradient)")
    for lib in packages:
        base = pe[(lib, "one batched gradient")]
        for (who, k), v in pe.items():
            if who == lib:
                med, lo, hi = ratios(pe_times[(who, k)], pe_times[(lib, "one batched gradient")])
                print(
                    f"  {lib + ': ' + k:<40}{v * 1e3:8.2f} ms  best {v / base:6.1f}x  median {med:.2f}x [{lo:.2f}, {hi:.2f}]"
                )
    for ref in list(packages)[1:]:  # --ref: this tree against the ref, round by round
        print(f"\nthis tree / {ref}, time per call: median of the per-round ratios [IQR]")
        for k in rows["tapegrad"]:
            med, lo, hi = ratios(times["tapegrad"][k], times[ref][k])
            print(f"  {k:<26}{med:6.2f} [{lo:.2f}, {hi:.2f}]")
        for k in ("one batched gradient", "vmap(grad(loss))"):
            med, lo, hi = ratios(pe_times[("tapegrad", k)], pe_times[(ref, k)])
            print(f"  {k:<26}{med:6.2f} [{lo:.2f}, {hi:.2f}]")
    print("\nmultiples of f and of grad: median of the per-round ratios [IQR]")
    for lib in libs:
        cells = []
        for k, base in (("hvp", "grad"), ("jvp", "f"), ("jacobian", "f"), ("hessian", "f")):
            med, lo, hi = ratios(times[lib][k], times[lib][base])
            cells.append(f"{k}/{base} {med:.1f} [{lo:.1f}, {hi:.1f}]")
        print(f"  {lib:<16}" + "   ".join(cells))


if __name__ == "__main__":
    main()
