"""A neural ODE: a small network as the vector field of ``dy/dt = f(y; theta)``, fitted to a trajectory through
``tapegrad.scipy.integrate.odeint``, whose gradient in theta comes from the adjoint method.

The data is one trajectory of a damped spiral, ``dy/dt = A y`` with ``A = [[-0.1, 2], [-2, -0.1]]``, observed at
``--points`` times in [0, ``--horizon``]. The field is ``f(y) = W2 tanh(W1 y + b1) + b2`` (``--hidden`` units);
each step integrates it from the first observation with SciPy's ``odeint``, compares the whole trajectory with
the data (mean squared error) and takes an Adam step on the gradient, which ``odeint``'s rule computes by
integrating the adjoint system backwards (one ``tg.vjp`` of the field per evaluation).

    python examples/neural_ode.py               # 300 steps
    python examples/neural_ode.py --steps 30    # the test suite's fast run
"""

from __future__ import annotations

import argparse

import numpy as np

import tapegrad as tg
from tapegrad.scipy.integrate import odeint

A = np.array([[-0.1, 2.0], [-2.0, -0.1]])


def make_data(points: int, horizon: float):
    t = np.linspace(0.0, horizon, points)
    y0 = np.array([2.0, 0.0])
    return t, odeint(lambda y, s: A @ y, y0, t, rtol=1e-10, atol=1e-10)


def field(y, t, w1, b1, w2, b2):
    """The network's vector field at state y (its parameters as arguments, so that odeint differentiates them)."""
    return w2 @ tg.tanh(w1 @ y + b1) + b2


def init(hidden: int, seed: int):
    rng = np.random.default_rng(seed)
    shapes = [(hidden, 2), (hidden,), (2, hidden), (2,)]
    return [tg.Tensor(rng.standard_normal(s) * (0.5 if len(s) == 2 else 0.0), requires_grad=True) for s in shapes]


def trajectory_loss(params, t, data, tol):
    predicted = odeint(field, data[0], t, tuple(params), rtol=tol, atol=tol)
    return ((predicted - data) ** 2).mean()


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--points", type=int, default=20, help="observed times")
    parser.add_argument("--horizon", type=float, default=3.0, help="the last observed time")
    parser.add_argument("--hidden", type=int, default=16, help="hidden units of the field")
    parser.add_argument("--steps", type=int, default=300, help="Adam steps")
    parser.add_argument("--lr", type=float, default=0.02, help="Adam's step size")
    parser.add_argument("--tol", type=float, default=1e-6, help="odeint's rtol and atol")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data, the initial values and the draws")
    parser.add_argument("--quiet", action="store_true", help="print only the final figures")
    args = parser.parse_args(argv)
    t, data = make_data(args.points, args.horizon)
    params = init(args.hidden, args.seed)
    opt = tg.optim.Adam(params, lr=args.lr)
    history = []
    for step in range(args.steps):
        opt.zero_grad()
        with tg.record():
            loss = trajectory_loss(params, t, data, args.tol)
        loss.backward()
        opt.step()
        history.append(float(loss.data))
        if not args.quiet and (step % max(1, args.steps // 5) == 0 or step == args.steps - 1):
            print(f"step {step:4d}  trajectory MSE {history[-1]:.5f}")
    return {"history": history, "params": params, "t": t, "data": data}


if __name__ == "__main__":
    main()
