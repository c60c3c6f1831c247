"""Accuracy of the incomplete gamma and beta functions' derivatives in their parameters, against mpmath.

    python -m benchmarks.incomplete_accuracy              # the grid of the docs (~1 min, needs mpmath)
    python -m benchmarks.incomplete_accuracy --points 6   # a coarser grid, for a smoke test

The grid: a (and b) geometric in [0.1, 50], x geometric in [1e-3, 100] for gammainc and uniform in (0, 1) for
betainc, crossing the boundaries where the computation changes method (x = a + 1, x = (a + 1) / (a + b + 2)).
mpmath differentiates the side of the function that is not close to 1 (P or Q, I_x(a, b) or I_{1-x}(b, a)) in
40 digits. The error printed is relative, except where the reference is below 1e-13 of the largest value on
the grid (a mixed derivative crosses zero there), where it is relative to that largest value.
"""

from __future__ import annotations

import pathlib
import sys

if __name__ == "__main__" and not __package__:  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from benchmarks import cli  # noqa: E402


def _gamma_reference(mpmath, a, x, n):
    if x < a + 1:
        return float(mpmath.diff(lambda s: mpmath.gammainc(s, 0, x, regularized=True), a, n))
    return -float(mpmath.diff(lambda s: mpmath.gammainc(s, x, mpmath.inf, regularized=True), a, n))


def _beta_reference(mpmath, a, b, x, na, nb):
    if x < (a + 1) / (a + b + 2):
        return float(mpmath.diff(lambda s, u: mpmath.betainc(s, u, 0, x, regularized=True), (a, b), (na, nb)))
    one_minus = 1 - mpmath.mpf(x)
    return -float(mpmath.diff(lambda s, u: mpmath.betainc(u, s, 0, one_minus, regularized=True), (a, b), (na, nb)))


def _worst(got, want):
    scale = np.maximum(np.abs(want), 1e-13 * np.max(np.abs(want)))
    err = np.abs(got - want) / scale
    i = np.unravel_index(int(np.argmax(err)), err.shape)
    return float(err[i]), i


def main(argv=None) -> int:
    parser = cli.parser("python -m benchmarks.incomplete_accuracy", __doc__)
    parser.add_argument("--points", type=int, default=12, help="grid points along each axis")
    parser.add_argument("--dps", type=int, default=40, help="mpmath's working precision, in decimal digits")
    args = parser.parse_args(argv)
    try:
        import mpmath  # noqa: PLC0415
    except ImportError:
        print("this benchmark compares against mpmath: pip install mpmath", file=sys.stderr)
        return 2
    from tapegrad.ops._incomplete import betainc_dab, gammainc_da  # noqa: PLC0415

    mpmath.mp.dps = args.dps
    params = np.geomspace(0.1, 50.0, args.points)
    xs = np.geomspace(1e-3, 100.0, args.points + 1)
    a, x = np.meshgrid(params, xs)
    print(f"{'function':<26} {'worst error':>12}  where")
    for n in (1, 2):
        want = np.vectorize(lambda a, x, n=n: _gamma_reference(mpmath, a, x, n))(a, x)
        err, i = _worst(gammainc_da(a, x, n), want)
        print(f"{f'd^{n}/da^{n} gammainc':<26} {err:12.2e}  a={a[i]:.4g} x={x[i]:.4g}")
    ua = np.linspace(0.0, 1.0, args.points + 2)[1:-1]
    a, b, u = np.meshgrid(params, params, ua, indexing="ij")
    for na, nb in ((1, 0), (0, 1), (2, 0), (1, 1), (0, 2)):
        want = np.vectorize(lambda a, b, u, na=na, nb=nb: _beta_reference(mpmath, a, b, u, na, nb))(a, b, u)
        err, i = _worst(betainc_dab(a, b, u, na, nb), want)
        name = f"d/da^{na} db^{nb} betainc"
        print(f"{name:<26} {err:12.2e}  a={a[i]:.4g} b={b[i]:.4g} x={u[i]:.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
