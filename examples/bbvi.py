"""Black-box variational inference with ``tapegrad.scipy.stats``: a Gaussian fitted to a posterior by
stochastic gradients of the evidence lower bound (the reparameterisation trick).

The model is Bayesian linear regression with a known noise level,

    w ~ N(0, prior^2 I),    y | X, w ~ N(X w, noise^2),

written as a log joint density with ``stats.norm.logpdf``. Its posterior is Gaussian with precision
``X^T X / noise^2 + I / prior^2``, so the answer is known: a diagonal Gaussian ``q(w) = N(m, diag(s^2))``
that maximises the ELBO has ``m`` the posterior mean and ``s^2`` the inverse of the precision's diagonal. The
ELBO, ``E_q[log p(y, w)] + H[q]``, is estimated with ``--samples`` draws ``w = m + s * eps`` per step and
maximised with Adam; the script prints the fitted and exact moments side by side.

    python examples/bbvi.py                 # 8 features, 3000 steps
    python examples/bbvi.py --steps 500     # the test suite's fast run
"""

from __future__ import annotations

import argparse
import math

import numpy as np

import tapegrad as tg
from tapegrad.scipy import stats


def make_data(n: int, d: int, noise: float, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    w = rng.standard_normal(d)
    return x, x @ w + noise * rng.standard_normal(n)


def log_joint(w, x, y, noise: float, prior: float):
    """log p(y, w) for a batch of weight vectors w (samples, d): one value per sample."""
    prior_term = stats.norm.logpdf(w, 0.0, prior).sum(axis=1)
    likelihood = stats.norm.logpdf(y, w @ x.T, noise).sum(axis=1)
    return prior_term + likelihood


def exact_posterior(x, y, noise: float, prior: float):
    """The Gaussian posterior's mean and the variances of the best diagonal Gaussian (1 / diag(precision))."""
    precision = x.T @ x / noise**2 + np.eye(x.shape[1]) / prior**2
    mean = np.linalg.solve(precision, x.T @ y / noise**2)
    return mean, 1.0 / np.diag(precision)


def fit(x, y, noise, prior, steps, samples, lr, seed):
    d = x.shape[1]
    mean = tg.Tensor(np.zeros(d), requires_grad=True)
    log_std = tg.Tensor(np.full(d, -1.0), requires_grad=True)
    opt = tg.optim.Adam([mean, log_std], lr=lr)
    rng = np.random.default_rng(seed)
    history = []
    for step in range(steps):
        eps = rng.standard_normal((samples, d))
        opt.zero_grad()
        with tg.record():
            w = mean + tg.exp(log_std) * eps
            entropy = log_std.sum() + 0.5 * d * (1.0 + math.log(2 * math.pi))
            elbo = log_joint(w, x, y, noise, prior).mean() + entropy
            loss = -elbo
        loss.backward()
        opt.step()
        for group in opt.param_groups:  # a step size decaying to a tenth, for the noise of the estimate
            group["lr"] = lr * (0.1 ** ((step + 1) / steps))
        history.append(float(elbo.data))
    return mean.data.copy(), np.exp(2 * log_std.data), history


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--n", type=int, default=50, help="data points")
    parser.add_argument("--d", type=int, default=8, help="features")
    parser.add_argument("--noise", type=float, default=0.5, help="the noise's standard deviation")
    parser.add_argument("--prior", type=float, default=1.0, help="the prior's standard deviation")
    parser.add_argument("--steps", type=int, default=3000, help="Adam steps")
    parser.add_argument("--samples", type=int, default=16, help="draws per ELBO estimate")
    parser.add_argument("--lr", type=float, default=0.05, help="Adam's initial step size")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data, the initial values and the draws")
    parser.add_argument("--quiet", action="store_true", help="print only the final figures")
    args = parser.parse_args(argv)
    x, y = make_data(args.n, args.d, args.noise, args.seed)
    mean, var, history = fit(x, y, args.noise, args.prior, args.steps, args.samples, args.lr, args.seed + 1)
    exact_mean, exact_var = exact_posterior(x, y, args.noise, args.prior)
    if not args.quiet:
        for step in sorted({0, len(history) // 2, len(history) - 1}):
            window = history[max(0, step - 49) : step + 1]
            print(f"step {step:5d}  ELBO {np.mean(window):10.3f} (mean of the last {len(window)} estimates)")
        print("posterior mean, fitted:", np.array2string(mean, precision=3))
        print("posterior mean, exact: ", np.array2string(exact_mean, precision=3))
        print(f"largest error: mean {np.abs(mean - exact_mean).max():.3f}, "
              f"std {np.abs(np.sqrt(var) / np.sqrt(exact_var) - 1).max():.1%} of the exact")  # fmt: skip
    return {"mean": mean, "var": var, "exact_mean": exact_mean, "exact_var": exact_var, "history": history}


if __name__ == "__main__":
    main()
