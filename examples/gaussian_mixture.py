"""A Gaussian mixture fitted by EM as a fixed point, and how each data point moves the fit.

EM for a mixture of K one-dimensional Gaussians is a map on the parameters theta = (weights, means, stds): the
responsibilities r[n, k] = softmax_k(log w_k + log N(x_n | mu_k, sigma_k)), then w_k = mean_n r[n, k],
mu_k = sum_n r[n, k] x_n / sum_n r[n, k] and sigma_k^2 the responsibility-weighted variance. The maximum
likelihood fit is its fixed point, theta* = em_step(x)(theta*), which ``tg.fixed_point`` iterates to.

Differentiating the fit with respect to the data does not go back through the iterations: ``tg.fixed_point``
uses the implicit function theorem (one more fixed-point iteration, of the adjoint, with the VJPs of one EM step
at theta*), so ``tg.jacobian(fit)(x)`` is the influence of every point on every fitted parameter, exact, at the
memory of one step. The test suite checks it against refitting with each point moved (finite differences).

    python examples/gaussian_mixture.py                     # 600 points from 3 components
    python examples/gaussian_mixture.py --points 150 --components 2
"""

from __future__ import annotations

import argparse

import numpy as np

import tapegrad as tg

TRUE = {"weights": [0.5, 0.3, 0.2], "means": [-4.0, 0.0, 3.0], "stds": [1.0, 0.7, 1.2]}


def make_data(n, seed=0, components=3):
    """``n`` points from the first ``components`` of TRUE (weights renormalised)."""
    rng = np.random.default_rng(seed)
    w = np.array(TRUE["weights"][:components])
    k = rng.choice(components, size=n, p=w / w.sum())
    return rng.normal(np.array(TRUE["means"])[k], np.array(TRUE["stds"])[k])


def unpack(theta, k):
    return theta[:k], theta[k : 2 * k], theta[2 * k :]


def em_step(x):
    """One EM step of a K-component mixture on the data ``x``, as a function of theta (tapegrad's ops, so that it
    can be differentiated in x and in theta)."""

    def step(theta):
        k = theta.shape[0] // 3
        w, mu, sigma = unpack(theta, k)
        z = (x[:, None] - mu[None, :]) / sigma[None, :]
        log_joint = tg.log(w)[None, :] - 0.5 * z * z - tg.log(sigma)[None, :] - 0.5 * np.log(2 * np.pi)
        r = tg.softmax(log_joint, axis=1)  # responsibilities, (n, K)
        nk = r.sum(axis=0)
        mu_new = (r * x[:, None]).sum(axis=0) / nk
        d = x[:, None] - mu_new[None, :]
        sigma_new = tg.sqrt((r * d * d).sum(axis=0) / nk)
        return tg.concatenate([nk / x.shape[0], mu_new, sigma_new])

    return step


def initial_theta(x, k):
    """Equal weights, means at evenly spaced quantiles, every std the data's."""
    mu = np.quantile(x, (np.arange(k) + 0.5) / k)
    return np.concatenate([np.full(k, 1.0 / k), mu, np.full(k, np.std(x))])


def fit(x, k, tol=1e-10):
    """The maximum-likelihood parameters (weights, means, stds), concatenated: EM's fixed point from
    :func:`initial_theta`. Differentiable in ``x``."""
    x0 = initial_theta(np.asarray(x.data if isinstance(x, tg.Tensor) else x), k)
    return tg.fixed_point(em_step, x, x0, tol=tol)


def log_likelihood_tensor(x, theta):
    """The mixture's log-likelihood of the data, sum_n log sum_k w_k N(x_n | mu_k, sigma_k), on tapegrad's ops."""
    w, mu, sigma = unpack(theta, theta.shape[0] // 3)
    z = (x[:, None] - mu[None, :]) / sigma[None, :]
    log_joint = tg.log(w)[None, :] - 0.5 * z * z - tg.log(sigma)[None, :] - 0.5 * np.log(2 * np.pi)
    return tg.logsumexp(log_joint, axis=1).sum()


def log_likelihood(x, theta):
    return float(log_likelihood_tensor(x, np.asarray(theta)).item())


def _row(values, digits):
    return "[" + " ".join(f"{v:.{digits}f}" for v in values) + "]"


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--points", type=int, default=600, help="data points")
    parser.add_argument("--components", type=int, default=3, choices=(1, 2, 3), help="mixture components")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data")
    args = parser.parse_args(argv)
    k = args.components
    x = make_data(args.points, args.seed, k)
    theta = fit(x, k)
    w, mu, sigma = unpack(theta, k)
    print(f"{args.points} points, {k} components; log-likelihood {log_likelihood(x, theta):.4f}")
    print(f"weights {_row(w, 3)}  means {_row(mu, 3)}  stds {_row(sigma, 3)}")
    influence = tg.jacobian(lambda x: fit(x, k)[k : 2 * k])(x)  # d mu_k / d x_n, (K, n)
    order = np.argsort(x)
    print("d means / d x at the smallest, median and largest point:")
    for n in (order[0], order[len(x) // 2], order[-1]):
        print(f"  x = {x[n]:7.3f}: {_row(influence[:, n], 5)}")
    print(f"translating the data translates the means: sum_n d mu_k / d x_n = {_row(influence.sum(axis=1), 6)}")
    return {"x": x, "theta": theta, "influence": influence}


if __name__ == "__main__":
    main()
