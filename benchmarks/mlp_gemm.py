"""The MLP step's matrix products in each memory layout, side by side: ``python -m benchmarks.mlp_gemm``.

The 784-512-512-10 SGD step (batch 256) makes eight GEMMs: three in the forward (``a @ W``), and in the
backward, per layer, the weight's gradient (``a.T @ g``) and, but for the first layer, the input's
(``g @ W.T``). A compiled step calls each on views of the arrays it has (``a.T`` is the F-ordered view of a
C-ordered ``a``), so BLAS is told to transpose rather than given a copy. This times each product with its
operands in either order (C or F: the same values, stored as they are or transposed) and its result in
either (an F-ordered result is computed as ``(B.T @ A.T).T``), interleaved, on one thread, in CPU time, and
the step's own layout beside the fastest: whether any layout is worth a copy or another plan.
"""

from __future__ import annotations

import argparse
import itertools
import pathlib
import sys
import time

if __name__ == "__main__":
    if not __package__:  # run as a script: make the `benchmarks` package importable
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
    from benchmarks import hygiene

    hygiene.cap_blas_threads_by_env()  # before NumPy loads BLAS

import numpy as np  # noqa: E402

__all__ = ["GEMMS", "main"]

# name, (rows, inner, cols), and the layout the compiled step gives BLAS: A's order, B's order
GEMMS = [
    ("forward 1: X @ W0", (256, 784, 512), "CC"),
    ("forward 2: a1 @ W1", (256, 512, 512), "CC"),
    ("forward 3: a2 @ W2", (256, 512, 10), "CC"),
    ("grad W2: a2.T @ g3", (512, 256, 10), "FC"),
    ("grad a2: g3 @ W2.T", (256, 10, 512), "CF"),
    ("grad W1: a1.T @ g2", (512, 256, 512), "FC"),
    ("grad a1: g2 @ W1.T", (256, 512, 512), "CF"),
    ("grad W0: X.T @ g1", (784, 256, 512), "FC"),
]


def _operand(rng, shape, order, dtype):
    a = rng.standard_normal(shape).astype(dtype)
    return np.ascontiguousarray(a) if order == "C" else np.asfortranarray(a)


def _cases(m, k, n, dtype, rng):
    """Each layout of ``A @ B`` (A: m x k, B: k x n): its operands and destination, and a call writing into it."""
    for oa, ob, oc in itertools.product("CF", "CF", "CF"):
        a, b = _operand(rng, (m, k), oa, dtype), _operand(rng, (k, n), ob, dtype)
        out = np.empty((m, n), dtype, order=oc)
        if oc == "C":
            yield oa + ob + oc, (lambda a=a, b=b, out=out: np.matmul(a, b, out=out))
        else:  # an F-ordered C is C.T in C order: B.T @ A.T
            yield oa + ob + oc, (lambda a=a, b=b, out=out: np.matmul(b.T, a.T, out=out.T))


def measure(dtype, rounds, passes) -> list:
    """Per GEMM: {layout: median CPU ms} and the step's layout."""
    rng = np.random.default_rng(0)
    rows = []
    for name, (m, k, n), mine in GEMMS:
        cases = dict(_cases(m, k, n, dtype, rng))
        samples = {key: [] for key in cases}
        for fn in cases.values():
            fn()
        for _ in range(rounds):
            for key, fn in cases.items():
                t0 = time.process_time()
                for _ in range(passes):
                    fn()
                samples[key].append((time.process_time() - t0) / passes * 1e3)
        rows.append((name, mine + "C", {key: np.percentile(s, [25, 50, 75]) for key, s in samples.items()}))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=9, help="rounds, each timing every layout of a GEMM once")
    parser.add_argument("--passes", type=int, default=5, help="calls per sample (its time is their mean)")
    args = parser.parse_args(argv)
    from benchmarks import hygiene  # noqa: PLC0415

    print(hygiene.pin_to_one_core(None))
    for dtype in (np.float64, np.float32):
        print(f"\n{np.dtype(dtype).name}: CPU ms per GEMM (median over {args.rounds} rounds); layout = A, B, result")
        total_mine = total_best = 0.0
        for name, mine, times in measure(dtype, args.rounds, args.passes):
            best = min(times, key=lambda key: times[key][1])
            cells = "  ".join(f"{key} {t[1]:.3f}" for key, t in times.items())
            lo, hi = times[mine][0], times[mine][2]
            print(f"- {name}: step's {mine} {times[mine][1]:.3f} (IQR {lo:.3f}-{hi:.3f}), best {best} | {cells}")
            total_mine += times[mine][1]
            total_best += times[best][1]
        print(f"  the step's layouts: {total_mine:.2f} ms in all; the fastest of each: {total_best:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
