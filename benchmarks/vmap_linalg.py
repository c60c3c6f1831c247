"""vmap through the decompositions: batched against what tapegrad ran before they had batching rules.

    taskset -c 1 env OPENBLAS_NUM_THREADS=1 python -m benchmarks.vmap_linalg

- ``hessian`` (``jacfwd(jacrev(f))``, every column in one batched pass) of a loss through ``eigvalsh`` and
  ``slogdet`` of a 12x12 matrix, against ``jacrev(jacrev(f))``, the rows ``hessian`` took while ``eigh`` and
  ``slogdet`` had none;
- per-example gradients ``vmap(grad(g))`` of a loss through ``eigh`` and ``svd`` over 64 matrices of 6x6, against
  a Python loop of 64 gradients.

Each pair is checked equal first, then timed interleaved (CPU time, 7 rounds): median and interquartile range.
"""

from __future__ import annotations

import time

import numpy as np

import tapegrad as tg
from tapegrad import linalg as la


def _cases():
    rng = np.random.default_rng(0)
    n = 12
    a = rng.standard_normal((n, n))
    a = a + a.T

    def f(m):
        return (la.eigvalsh(m) ** 3).sum() + la.slogdet(m @ m.T + np.eye(n))[1]

    xs = rng.standard_normal((64, 6, 6))
    xs = xs + np.swapaxes(xs, -1, -2)

    def g(m):
        return (la.eigh(m)[0] ** 2).sum() + la.svd(m)[1].sum()

    def loop(ms):
        return np.stack([tg.grad(g)(m) for m in ms])

    return [
        ("hessian 12x12, batched", tg.hessian(f), "hessian 12x12, rows", tg.jacrev(tg.jacrev(f)), a),
        ("vmap(grad) of 64", tg.vmap(tg.grad(g)), "loop of 64 grads", loop, xs),
    ]


def main(rounds: int = 7) -> None:
    for fast_name, fast, slow_name, slow, arg in _cases():
        np.testing.assert_allclose(fast(arg), slow(arg), rtol=1e-8, atol=1e-8)
        times = {fast_name: [], slow_name: []}
        for _ in range(rounds):
            for name, fn in ((fast_name, fast), (slow_name, slow)):
                t = time.process_time()
                fn(arg)
                times[name].append(time.process_time() - t)
        for name, ts in times.items():
            q1, med, q3 = np.percentile(ts, [25, 50, 75]) * 1e3
            print(f"{name:24s} median {med:8.1f} ms   IQR {q1:.1f}-{q3:.1f} ms")
        print(f"{'':24s} ratio {np.median(times[slow_name]) / np.median(times[fast_name]):.1f}x")


if __name__ == "__main__":
    main()
