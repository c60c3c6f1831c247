"""Gaussian-process regression with its kernel's hyperparameters fitted by L-BFGS on exact gradients.

The kernel is scikit-learn's ConstantKernel * RBF + WhiteKernel:

    k(x, x') = c exp(-|x - x'|^2 / (2 l^2)) + s delta(x, x')

with signal variance c, length-scale l and noise variance s, fitted in their logarithms theta = (log c, log l,
log s), as scikit-learn's ``kernel.theta`` holds them. The negative log marginal likelihood goes through a
Cholesky factor L of K = k(X, X) + jitter I:

    -log p(y | X, theta) = y^T K^{-1} y / 2 + sum(log diag L) + n log(2 pi) / 2,   K^{-1} y by cho_solve

``tg.value_and_grad`` gives it and its gradient in one forward and one reverse pass, for SciPy's L-BFGS-B
(``jac=True``); ``tg.hessian`` (reverse over reverse, through the rules of cholesky and the triangular
solves) gives its Hessian at the optimum, whose inverse is the Laplace approximation of the hyperparameters'
posterior covariance. The test suite checks the value and gradient against scikit-learn's
``GaussianProcessRegressor.log_marginal_likelihood(theta, eval_gradient=True)`` and the Hessian against finite
differences of the gradient.

    python examples/gaussian_process.py                      # 40 noisy samples of sin(x)
    python examples/gaussian_process.py --plot gp.png        # and the posterior mean with a 2-sigma band
"""

from __future__ import annotations

import argparse
import math

import numpy as np

import tapegrad as tg
from tapegrad import linalg


def make_data(n: int, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n points x in [-4, 4] (sorted) and y = sin(x) + N(0, noise^2)."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-4.0, 4.0, n))
    return x[:, None], np.sin(x) + noise * rng.standard_normal(n)


def squared_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1)


def kernel_matrix(theta, d2: np.ndarray, jitter: float, with_noise: bool = True):
    """c exp(-d2 / (2 l^2)) (+ (s + jitter) I): a tensor, differentiable in theta = (log c, log l, log s)."""
    c, length, s = tg.exp(theta[0]), tg.exp(theta[1]), tg.exp(theta[2])
    k = c * tg.exp(-0.5 * d2 / (length * length))
    if with_noise:
        k = k + (s + jitter) * np.eye(d2.shape[0])
    return k


def negative_log_marginal_likelihood(x: np.ndarray, y: np.ndarray, jitter: float = 1e-10):
    """theta -> -log p(y | x, theta), as a function of a tensor theta (for tg.value_and_grad and tg.hessian)."""
    d2, n = squared_distances(x, x), len(y)

    def nll(theta):
        L = linalg.cholesky(kernel_matrix(theta, d2, jitter))
        alpha = linalg.cho_solve((L, True), y)
        log_det_half = tg.log(L[np.arange(n), np.arange(n)]).sum()
        return 0.5 * (alpha * y).sum() + log_det_half + 0.5 * n * math.log(2 * math.pi)

    return nll


def fit(x, y, theta0, jitter=1e-10, maxiter=200):
    """L-BFGS-B from theta0 with exact gradients; returns (theta, -log likelihood, SciPy's result)."""
    from scipy.optimize import minimize

    value_and_grad = tg.value_and_grad(negative_log_marginal_likelihood(x, y, jitter))

    def fun(theta):
        value, grad = value_and_grad(theta)
        return float(value), np.asarray(grad, dtype=np.float64)

    result = minimize(
        fun, np.asarray(theta0, dtype=np.float64), jac=True, method="L-BFGS-B", options={"maxiter": maxiter}
    )
    return result.x, result.fun, result


def predict(x, y, theta, x_new, jitter=1e-10):
    """Posterior mean and standard deviation of the noise-free function at x_new."""
    theta = tg.Tensor(theta)
    L = linalg.cholesky(kernel_matrix(theta, squared_distances(x, x), jitter)).numpy()
    k_star = kernel_matrix(theta, squared_distances(x, x_new), jitter, with_noise=False).numpy()
    alpha = linalg.cho_solve((tg.Tensor(L), True), y).numpy()
    v = linalg.solve_triangular(tg.Tensor(L), k_star, lower=True).numpy()
    variance = np.exp(theta.numpy()[0]) - np.sum(v * v, axis=0)
    return k_star.T @ alpha, np.sqrt(np.maximum(variance, 0.0))


def plot(path, x, y, theta, jitter):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = np.linspace(x.min() - 1.0, x.max() + 1.0, 300)[:, None]
    mean, std = predict(x, y, theta, grid, jitter)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.fill_between(grid[:, 0], mean - 2 * std, mean + 2 * std, alpha=0.25, label="mean ± 2 sd")
    ax.plot(grid[:, 0], mean, label="posterior mean")
    ax.plot(grid[:, 0], np.sin(grid[:, 0]), "k--", lw=1, label="sin(x)")
    ax.plot(x[:, 0], y, "o", ms=4, label="data")
    c, length, s = np.exp(theta)
    ax.set_title(f"GP fit: c = {c:.3f}, l = {length:.3f}, s = {s:.4f}")
    ax.legend(loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(
        description="Fit a Gaussian process's kernel hyperparameters by L-BFGS on exact gradients.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--n", type=int, default=40, help="number of training points")
    parser.add_argument("--noise", type=float, default=0.2, help="standard deviation of the noise on sin(x)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data")
    parser.add_argument(
        "--init",
        type=float,
        nargs=3,
        default=(0.0, 0.0, -2.0),
        metavar=("LOG_C", "LOG_L", "LOG_S"),
        help="initial log signal variance, log length-scale and log noise variance",
    )
    parser.add_argument("--jitter", type=float, default=1e-10, help="added to K's diagonal (scikit-learn's alpha)")
    parser.add_argument("--maxiter", type=int, default=200, help="L-BFGS iterations at most")
    parser.add_argument("--plot", metavar="PATH", help="write the posterior mean and its 2-sigma band to PATH (PNG)")
    parser.add_argument("--quiet", action="store_true", help="print nothing")
    args = parser.parse_args(argv)

    x, y = make_data(args.n, args.noise, args.seed)
    theta, nll, result = fit(x, y, args.init, args.jitter, args.maxiter)
    hessian = np.asarray(tg.hessian(negative_log_marginal_likelihood(x, y, args.jitter))(theta))
    c, length, s = np.exp(theta)
    if not args.quiet:
        print(f"fitted in {result.nit} L-BFGS iterations ({result.nfev} evaluations): {result.message}")
        print(f"signal variance c = {c:.4f}, length-scale l = {length:.4f}, noise variance s = {s:.5f}")
        print(f"log marginal likelihood = {-nll:.6f}")
        print("standard deviations of log(c, l, s) (Laplace):", np.sqrt(np.diag(np.linalg.inv(hessian))).round(4))
    if args.plot:
        plot(args.plot, x, y, theta, args.jitter)
    return {"theta": theta, "nll": nll, "hessian": hessian, "result": result, "x": x, "y": y}


if __name__ == "__main__":
    main()
