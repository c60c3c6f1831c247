"""The inputs the NumPy coverage probe calls each function with, for JAX and for tapegrad alike.

A probe is ``(args, kwargs)`` built from a namespace ``xp`` (``jax.numpy`` or ``tapegrad.numpy``, for the few
probes that pass a function) and the fixed arrays of :class:`Arrays`. The float64 arrays found in ``args``
(through lists and tuples) are the inputs differentiated; everything else is a constant. Functions not listed
take the default: one 3 x 3 matrix, or two for a binary ufunc.

    python benchmarks/coverage_probes.py    # says it is a part of benchmarks.coverage
"""

from __future__ import annotations

import inspect
import pathlib
import sys

import numpy as np

if __name__ == "__main__" and not __package__:  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))


class Arrays:
    """Fixed, well-conditioned inputs: distinct values (no ties for sorts and extremes), positive where a
    domain needs it, square matrices far from singular."""

    def __init__(self, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.X = rng.permutation(np.linspace(0.2, 0.8, 9)).reshape(3, 3) + rng.uniform(-0.01, 0.01, (3, 3))
        self.Y = rng.permutation(np.linspace(0.3, 0.9, 9)).reshape(3, 3) + rng.uniform(-0.01, 0.01, (3, 3))
        self.V = np.array([0.3, 0.55, 0.7]) + rng.uniform(-0.01, 0.01, 3)
        self.W = np.array([0.9, 0.4, 0.6]) + rng.uniform(-0.01, 0.01, 3)
        self.A = self.X + 3.0 * np.eye(3)  # well conditioned, distinct real eigenvalues
        self.S = self.A @ self.A.T + np.eye(3)  # symmetric positive definite
        self.X3 = np.arange(1.0, 13.0).reshape(2, 2, 3) / 13.0 + rng.uniform(-0.01, 0.01, (2, 2, 3))
        self.I = np.array([[0, 1, 0], [1, 1, 0], [0, 0, 1]])


def probes(xp, a: Arrays) -> dict:
    """``name -> (args, kwargs)`` for the functions the default does not fit (``linalg.x`` and ``fft.x`` too)."""
    X, Y, V, W, A, S, X3, I = a.X, a.Y, a.V, a.W, a.A, a.S, a.X3, a.I  # noqa: E741
    sorted_v = np.sort(V)
    jax = xp.__name__.startswith("jax")
    copy = {"inplace": False} if jax else {}  # JAX's versions of the in-place ones
    size = lambda n: {"size": n} if jax else {}  # JAX's set operations differentiate with a static size
    d1, d2 = np.array([0.3, 0.1, 0.3, 0.7]), np.array([0.7, 0.2])  # repeated and shared values
    ints2 = "bitwise_and bitwise_or bitwise_xor gcd lcm left_shift right_shift bitwise_left_shift bitwise_right_shift"
    ints2 = ints2.split()
    ints1 = "invert bitwise_not bitwise_invert bitwise_count packbits".split()
    table = {
        # domains
        "arccosh": ((X + 1.5,), {}),
        "acosh": ((X + 1.5,), {}),
        "float_power": ((X, Y), {}),
        "clip": ((X, 0.3, 0.6), {}),
        "ldexp": ((X, I), {}),
        "full": (((3, 3), np.asarray(X[0, 0])), {}),
        **{name: ((I, I), {}) for name in ints2},
        **{name: ((I,), {}) for name in ints1},
        # shape
        "reshape": ((X, (9,)), {}),
        "moveaxis": ((X3, 0, 2), {}),
        "rollaxis": ((X3, 2), {}),
        "swapaxes": ((X, 0, 1), {}),
        "expand_dims": ((X, 0), {}),
        "squeeze": ((X[None],), {}),
        "broadcast_to": ((V, (3, 3)), {}),
        "tile": ((X, 2), {}),
        "repeat": ((X, 2), {}),
        "roll": ((X, 1), {}),
        "pad": ((X, 1), {}),
        "resize": ((X, (2, 5)), {}),
        "split": ((X, 3), {}),
        "array_split": ((X, 2), {}),
        "hsplit": ((X, 3), {}),
        "vsplit": ((X, 3), {}),
        "dsplit": ((X3, 3), {}),
        "dstack": (([X, Y],), {}),
        "hstack": (([X, Y],), {}),
        "vstack": (([X, Y],), {}),
        "row_stack": (([X, Y],), {}),
        "column_stack": (([V, W],), {}),
        "stack": (([X, Y],), {}),
        "concatenate": (([X, Y],), {}),
        "concat": (([X, Y],), {}),
        "block": (([[X, Y], [Y, X]],), {}),
        "unstack": ((X,), {}),
        "append": ((X, Y), {}),
        "insert": ((X, 1, 5.0), {}),
        "delete": ((X, 1), {}),
        "broadcast_arrays": ((X, V), {}),
        "meshgrid": ((V, W), {}),
        "atleast_3d": ((X,), {}),
        "permute_dims": ((X3, (2, 0, 1)), {}),
        "transpose": ((X3, (2, 0, 1)), {}),
        "astype": ((X, np.float32), {}),
        # indexing and selection
        "take": ((X, np.array([0, 2])), {}),
        "take_along_axis": ((X, np.argsort(X, axis=1), 1), {}),
        "compress": ((np.array([True, False, True]), X), {"axis": 0}),
        "unpackbits": ((np.array([3, 5], dtype=np.uint8),), {}),
        "extract": ((X > 0.5, X), {}),
        "select": (([X > 0.5, X < 0.3], [X, Y]), {}),
        "where": ((X > 0.5, X, Y), {}),
        "choose": ((I, [X, Y]), {}),
        "piecewise": ((X, [X > 0.5], [lambda x: x * x, lambda x: -x]), {}),
        "partition": ((X, 1), {}),
        "argpartition": ((X, 1), {}),
        "searchsorted": ((sorted_v, W), {}),
        "digitize": ((W, sorted_v), {}),
        "bincount": ((np.array([0, 1, 1, 3]), np.array([0.2, 0.5, 0.7, 0.1])), {}),
        "unique": ((d1,), size(3)),
        "unique_values": ((d1,), size(3)),
        "unique_counts": ((d1,), size(3)),
        "unique_inverse": ((d1,), size(3)),
        "unique_all": ((d1,), size(3)),
        "union1d": ((d1, d2), size(4)),
        "intersect1d": ((d1, d2), size(1)),
        "setdiff1d": ((d1, d2), size(2)),
        "setxor1d": ((d1, d2), size(3)),
        "trim_zeros": ((np.array([0.0, 0.4, 0.5, 0.0]),), {}),
        "isin": ((X, X[0]), {}),
        "fill_diagonal": ((X, 1.0), copy),
        "put": ((X, np.array([0, 2]), np.array([5.0, 6.0])), copy),
        "place": ((X, X > 0.5, np.array([1.0])), copy),
        "putmask": ((X, X > 0.5, Y), {}),
        "copyto": ((X, Y), {}),
        "put_along_axis": ((X, np.argsort(X, axis=1)[:, :1], 0.0, 1), copy),
        "ravel_multi_index": (((np.array([0, 1]), np.array([1, 2])), (3, 3)), {}),
        "unravel_index": ((np.array([1, 5]), (3, 3)), {}),
        "diag_indices_from": ((X,), {}),
        "tril_indices_from": ((X,), {}),
        "triu_indices_from": ((X,), {}),
        "lexsort": (((V, W),), {}),
        # reductions and statistics
        "percentile": ((X, 30.0), {}),
        "quantile": ((X, 0.3), {}),
        "nanpercentile": ((X, 30.0), {}),
        "nanquantile": ((X, 0.3), {}),
        "average": ((X,), {"axis": 0, "weights": np.array([0.2, 0.3, 0.5])}),
        "cumulative_sum": ((V,), {}),
        "cumulative_prod": ((V,), {}),
        "cov": ((X,), {}),
        "corrcoef": ((X,), {}),
        "histogram": ((V,), {"bins": 2}),
        "histogram_bin_edges": ((V,), {"bins": 2}),
        "histogram2d": ((V, W), {"bins": 2}),
        "histogramdd": ((X,), {"bins": 2}),
        "einsum_path": (("ij,jk->ik", X, Y), {}),
        "einsum": (("ij,jk->ik", X, Y), {}),
        "apply_along_axis": ((lambda v: v * v, 0, X), {}),
        "apply_over_axes": ((xp.sum, X, [0]), {}),
        # linear and polynomial
        "cross": ((X, Y), {}),
        "convolve": ((V, W), {}),
        "correlate": ((V, W), {}),
        "diagflat": ((V,), {}),
        "vander": ((V,), {}),
        "polyval": ((V, W), {}),
        "polyfit": ((V, W, 1), {}),
        "polyadd": ((V, W[:2]), {}),
        "polysub": ((V, W[:2]), {}),
        "polymul": ((V, W), {}),
        "polydiv": ((V, W[:2]), {}),
        "polyder": ((V,), {}),
        "polyint": ((V,), {}),
        "poly": ((V,), {}),
        "roots": ((np.array([1.0, -3.0, 2.0]),), {}),
        "interp": ((np.array([0.35, 0.5, 0.65]), sorted_v, W), {}),
        "trapezoid": ((X,), {}),
        "gradient": ((X,), {}),
        "ediff1d": ((X,), {}),
        "unwrap": ((X * 7.0,), {}),
        "sort_complex": ((V,), {}),
        "linspace": ((V, W, 4), {}),
        "logspace": ((V, W, 4), {}),
        "geomspace": ((V, W, 4), {}),
        "full_like": ((X, 2.0), {}),
        # linalg
        "linalg.solve": ((A, Y), {}),
        "linalg.tensorsolve": ((A, V), {}),
        "linalg.tensorinv": ((A,), {"ind": 1}),
        "linalg.inv": ((A,), {}),
        "linalg.pinv": ((X,), {}),
        "linalg.det": ((A,), {}),
        "linalg.slogdet": ((A,), {}),
        "linalg.cholesky": ((S,), {}),
        "linalg.eigh": ((S,), {}),
        "linalg.eigvalsh": ((S,), {}),
        "linalg.eig": ((A,), {}),
        "linalg.eigvals": ((A,), {}),
        "linalg.svd": ((A,), {"full_matrices": False}),
        "linalg.svdvals": ((A,), {}),
        "linalg.qr": ((A,), {}),
        "linalg.lstsq": ((A, Y), {}),
        "linalg.matrix_power": ((A, 3), {}),
        "linalg.multi_dot": (([X, Y, X],), {}),
        "linalg.cross": ((X, Y), {}),
        "linalg.outer": ((V, W), {}),
        "linalg.vecdot": ((X, Y), {}),
        "linalg.cond": ((A,), {}),
        "linalg.matrix_rank": ((A,), {}),
        # fft
        "fft.fftfreq": ((4,), {}),
        "fft.rfftfreq": ((4,), {}),
    }
    return table


def default(xp, a: Arrays, numpy_obj) -> tuple:
    """The probe of a function not in :func:`probes`: a matrix per required positional parameter (a ufunc's
    inputs), two at most."""
    if isinstance(numpy_obj, np.ufunc):
        n = numpy_obj.nin
    else:
        try:
            parameters = inspect.signature(numpy_obj).parameters.values()
        except (TypeError, ValueError):
            parameters = ()
        n = sum(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)
    return (a.X, a.Y)[: max(1, min(n, 2))], {}


# NumPy's functions that make new arrays from shapes and numbers, and its utilities: nothing to differentiate
NOT_PROBED = frozenset(
    "arange zeros ones empty eye identity tri bartlett blackman hamming hanning kaiser diag_indices indices "
    "tril_indices triu_indices mask_indices frombuffer fromfile fromfunction fromiter fromstring from_dlpack load "
    "printoptions get_printoptions set_printoptions frompyfunc isdtype issubdtype promote_types broadcast_shapes "
    "can_cast result_type einsum_path array_repr array_str save savez savez_compressed savetxt ix_ "
    "fft.fftfreq fft.rfftfreq".split()
)


if __name__ == "__main__":
    from benchmarks import cli

    sys.exit(cli.library_main(__doc__, "benchmarks/coverage_probes.py", "python -m benchmarks.coverage"))
