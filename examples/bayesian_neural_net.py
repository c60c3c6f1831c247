"""A Bayesian neural network fitted by black-box variational inference, written the HIPS-autograd way.

The program is plain NumPy code: ``import tapegrad.numpy as np`` and ``from tapegrad import grad`` are its only
tapegrad lines. Swap them for ``import autograd.numpy as np`` and ``from autograd import grad`` and it runs
under autograd, with the same gradients (the test suite checks it).

The model: a 1-tanh-layer network f_w(x) with a weight vector w of D numbers, a Gaussian prior
w ~ N(0, prior_scale^2 I) and a Gaussian likelihood y ~ N(f_w(x), noise^2). The posterior p(w | data) is
approximated by a diagonal Gaussian q(w) = N(mu, diag(exp(rho))^2), fitted by maximising the evidence lower
bound

    ELBO(mu, rho) = E_q[log p(y | x, w) + log p(w)] + H[q],   H[q] = sum(rho) + D (1 + log 2 pi) / 2

estimated with S reparameterised samples w = mu + exp(rho) * eps, eps ~ N(0, I) (the same eps for every
function of one step, drawn from a seed per step, so a step's objective is a deterministic function of
(mu, rho)). Adam follows the gradient of -ELBO / N. The data are noisy samples of a wave with a gap in the
middle: far from the data, the posterior predictive spreads out.

    python examples/bayesian_neural_net.py                   # 1500 steps, writes history.json (and fit.png)
    python examples/bayesian_neural_net.py --steps 200 --out /tmp/bnn
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

import tapegrad.numpy as np
import tapegrad.numpy.random as npr
from tapegrad import grad


def make_data(n, noise, seed):
    """``n`` points x in [-3, -1] and [1, 3] (a gap between), y = sin(2 x) / 2 + x / 4 + N(0, noise^2)."""
    rs = npr.RandomState(seed)
    x = np.concatenate([rs.uniform(-3.0, -1.0, n // 2), rs.uniform(1.0, 3.0, n - n // 2)])
    y = np.sin(2.0 * x) / 2.0 + x / 4.0 + noise * rs.randn(n)
    return x[:, None], y


class Network:
    """A 1-in, 1-out network with one tanh layer of ``hidden`` units, evaluated for many weight vectors at once."""

    def __init__(self, hidden):
        self.hidden = hidden
        self.size = 3 * hidden + 1  # input weights, biases, output weights, output bias

    def unpack(self, w):
        """Each part of a stack of weight vectors ``w`` (S, D), shaped for broadcasting over (S, points, units)."""
        h = self.hidden
        w_in = w[:, :h][:, None, :]
        b_in = w[:, h : 2 * h][:, None, :]
        w_out = w[:, 2 * h : 3 * h][:, :, None]
        b_out = w[:, 3 * h :][:, None, :]
        return w_in, b_in, w_out, b_out

    def __call__(self, w, x):
        """Predictions (S, points) of the S networks of ``w`` at the points ``x`` (points, 1)."""
        w_in, b_in, w_out, b_out = self.unpack(w)
        hidden = np.tanh(x[None, :, :] * w_in + b_in)  # (S, points, units)
        return (np.matmul(hidden, w_out) + b_out)[:, :, 0]


def gaussian_log_density(z, mean, scale):
    return -0.5 * ((z - mean) / scale) ** 2 - np.log(scale) - 0.5 * np.log(2.0 * np.pi)


def make_objective(net, x, y, noise, prior_scale, samples, seed):
    """``objective(params, step)``: -ELBO / N for params = concatenate([mu, rho]), its samples drawn from a
    generator seeded by (seed, step)."""
    n, d = len(y), net.size

    def objective(params, step):
        mu, rho = params[:d], params[d:]
        eps = npr.default_rng([seed, step]).standard_normal((samples, d))
        w = mu + np.exp(rho) * eps  # (S, D), reparameterised
        log_likelihood = np.sum(gaussian_log_density(y, net(w, x), noise), axis=1)
        log_prior = np.sum(gaussian_log_density(w, 0.0, prior_scale), axis=1)
        entropy = np.sum(rho) + 0.5 * d * (1.0 + np.log(2.0 * np.pi))
        elbo = np.mean(log_likelihood + log_prior) + entropy
        return -elbo / n

    return objective


def initial_params(net, seed, scale=0.5, log_sd=-3.0):
    rs = npr.RandomState(seed + 1)
    return np.concatenate([scale * rs.randn(net.size), np.full(net.size, log_sd)])


def adam(gradient, params, steps, rate, callback=None, b1=0.9, b2=0.999, eps=1e-8):
    """Adam on a flat parameter vector (arrays in, arrays out)."""
    m = np.zeros(len(params))
    v = np.zeros(len(params))
    for t in range(steps):
        g = gradient(params, t)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g**2
        params = params - rate * (m / (1 - b1 ** (t + 1))) / (np.sqrt(v / (1 - b2 ** (t + 1))) + eps)
        if callback is not None:
            callback(params, t)
    return params


def predictive(net, params, x, samples, seed):
    """The posterior predictive's mean and standard deviation (network uncertainty) at the points ``x``."""
    d = net.size
    mu, rho = params[:d], params[d:]
    w = mu + np.exp(rho) * npr.default_rng(seed).standard_normal((samples, d))
    f = net(w, x)
    return np.mean(f, axis=0), np.std(f, axis=0)


def plot(path, net, params, x, y, seed):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = np.linspace(-5.0, 5.0, 200)[:, None]
    mean, sd = predictive(net, params, grid, 200, seed)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.fill_between(grid[:, 0], mean - 2 * sd, mean + 2 * sd, alpha=0.25, label="mean ± 2 sd")
    ax.plot(grid[:, 0], mean, label="predictive mean")
    ax.plot(x[:, 0], y, "o", ms=3, label="data")
    ax.set_title("Bayesian neural network, black-box variational inference")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(
        description="Fit a Bayesian neural network by black-box variational inference (autograd-style NumPy).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--n", type=int, default=40, help="number of training points")
    parser.add_argument("--noise", type=float, default=0.1, help="standard deviation of the observation noise")
    parser.add_argument("--hidden", type=int, default=20, help="tanh units in the hidden layer")
    parser.add_argument("--prior-scale", type=float, default=1.0, help="standard deviation of the weights' prior")
    parser.add_argument("--samples", type=int, default=10, help="Monte Carlo samples of the weights per step")
    parser.add_argument("--steps", type=int, default=1500, help="Adam steps")
    parser.add_argument("--rate", type=float, default=0.02, help="Adam's learning rate")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data, the initial point and the samples")
    parser.add_argument(
        "--out", default=os.path.join(tempfile.gettempdir(), "tapegrad", "bnn"), help="folder for the results"
    )
    parser.add_argument("--no-plot", action="store_true", help="skip the plot (fit.png, needs matplotlib)")
    parser.add_argument("--quiet", action="store_true", help="print nothing")
    args = parser.parse_args(argv)

    x, y = make_data(args.n, args.noise, args.seed)
    net = Network(args.hidden)
    objective = make_objective(net, x, y, args.noise, args.prior_scale, args.samples, args.seed)
    history = []

    def record(params, t):
        if t % 50 == 0 or t == args.steps - 1:
            history.append((t, float(objective(params, t))))
            if not args.quiet:
                print(f"step {t:5d}   -ELBO / N = {history[-1][1]:.4f}")

    params = adam(grad(objective), initial_params(net, args.seed), args.steps, args.rate, record)
    mean, sd = predictive(net, params, x, 200, args.seed)
    rmse = float(np.sqrt(np.mean((mean - y) ** 2)))
    gap_sd = float(np.mean(predictive(net, params, np.zeros((1, 1)), 200, args.seed)[1]))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "history.json"), "w") as f:
        json.dump({"history": history, "rmse": rmse, "sd_at_data": float(np.mean(sd)), "sd_in_gap": gap_sd}, f)
    if not args.no_plot:
        try:
            plot(os.path.join(args.out, "fit.png"), net, params, x, y, args.seed)
        except ImportError:
            pass
    if not args.quiet:
        print(f"train RMSE of the predictive mean {rmse:.3f}; predictive sd {float(np.mean(sd)):.3f} at the data, "
              f"{gap_sd:.3f} in the gap; results in {args.out}")  # fmt: skip
    return {"params": params, "history": history, "rmse": rmse, "sd": sd, "gap_sd": gap_sd, "objective": objective}


if __name__ == "__main__":
    main()
