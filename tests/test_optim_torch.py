"""Optimizers and schedules against PyTorch's, step for step (skipped without torch, never failing without it).

Every optimizer runs 100 steps in float64 on three parameters in two groups with different hyperparameters,
from gradients of a fixed function of the current parameters (computed in NumPy for both libraries, so only
the optimizers differ); one parameter skips a gradient every seventh step. The trajectories must agree to
1e-12. Every schedule runs 120+ steps on two groups and its learning rates (and momenta, where it cycles them)
must agree to 1e-12. LBFGS is checked on the Rosenbrock function and on a least-squares problem.
"""

import math

import numpy as np
import pytest
from lr_schedule_cases import SCHEDULE_CASES, plateau_metrics, sgd

import tapegrad as tg
from tapegrad import optim

torch = pytest.importorskip("torch")

SHAPES = [(3,), (2, 2), (4,)]
STEPS = 100


@pytest.fixture(autouse=True)
def float64_default():
    # PyTorch keeps scalar state (NAdam's mu_product, step counts) in the default dtype: float64 here, as ours.
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def _start():
    rng = np.random.default_rng(0)
    return [rng.normal(size=s) for s in SHAPES]


def _gradient(p: np.ndarray, i: int) -> np.ndarray:
    target = np.linspace(-1.0, 1.0, p.size).reshape(p.shape) * (i + 1)
    return 2.0 * (p - target) + 0.3 * np.cos(3.0 * p)


def _groups(params, group1):
    return [{"params": params[:2]}, {"params": params[2:], **group1}]


def _trajectory(params, opt, data, set_grad):
    out = []
    for step in range(STEPS):
        for i, p in enumerate(params):
            skip = i == 2 and step % 7 == 3
            set_grad(p, None if skip else _gradient(data(p), i))
        opt.step()
        out.append(np.concatenate([data(p).ravel() for p in params]))
    return np.array(out)


def _ours(name, defaults, group1):
    params = [tg.Tensor(a, requires_grad=True) for a in _start()]
    opt = getattr(optim, name)(_groups(params, group1), **defaults)

    def set_grad(p, g):
        p.grad = g

    return _trajectory(params, opt, lambda p: p.data, set_grad)


def _theirs(name, defaults, group1):
    params = [torch.tensor(a, requires_grad=True) for a in _start()]
    opt = getattr(torch.optim, name)(_groups(params, group1), foreach=False, **defaults)

    def set_grad(p, g):
        p.grad = None if g is None else torch.tensor(g)

    return _trajectory(params, opt, lambda p: p.detach().numpy(), set_grad)


OPTIMIZER_CASES = [
    ("SGD", dict(lr=0.05), dict(lr=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9), dict(momentum=0.5, dampening=0.2)),
    ("SGD", dict(lr=0.02, momentum=0.9, nesterov=True, weight_decay=0.1), dict(lr=0.05, weight_decay=0.0)),
    ("SGD", dict(lr=0.02, momentum=0.8, maximize=True), dict(maximize=False)),
    ("Adam", dict(lr=0.05), dict(lr=0.01, betas=(0.8, 0.99))),
    ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1), dict(amsgrad=False, eps=1e-4)),
    ("Adam", dict(lr=0.02, maximize=True), dict(maximize=False, weight_decay=0.2)),
    ("AdamW", dict(lr=0.05), dict(weight_decay=0.3, amsgrad=True)),
    ("RMSprop", dict(lr=0.01), dict(lr=0.003)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.1, momentum=0.9), dict(momentum=0.0, lr=0.003)),
    ("RMSprop", dict(lr=0.005, momentum=0.9, centered=True), dict(centered=False, alpha=0.5)),
    ("RMSprop", dict(lr=0.005, centered=True, weight_decay=0.05), dict(momentum=0.5, maximize=True)),
    ("Adagrad", dict(lr=0.1), dict(lr=0.3)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.05, initial_accumulator_value=0.5), dict(lr=0.2)),
    ("Adagrad", dict(lr=0.2, initial_accumulator_value=0.1, eps=1e-6), dict(lr_decay=0.1, maximize=True)),
    ("Adadelta", dict(), dict(lr=0.5)),
    ("Adadelta", dict(lr=0.5, rho=0.5, weight_decay=0.1), dict(eps=1e-3)),
    ("Adadelta", dict(lr=2.0, eps=1e-4), dict(rho=0.99, weight_decay=0.2)),
    ("Adamax", dict(lr=0.01), dict(lr=0.05)),
    ("Adamax", dict(lr=0.02, betas=(0.8, 0.99), weight_decay=0.1), dict(eps=1e-3)),
    ("Adamax", dict(lr=0.02, maximize=True), dict(betas=(0.5, 0.9), maximize=False)),
    ("NAdam", dict(lr=0.01), dict(lr=0.05)),
    ("NAdam", dict(lr=0.005, momentum_decay=0.01, weight_decay=0.1), dict(betas=(0.8, 0.99))),
    ("NAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True), dict(decoupled_weight_decay=False)),
    ("RAdam", dict(lr=0.01), dict(lr=0.05)),
    ("RAdam", dict(lr=0.02, weight_decay=0.1), dict(betas=(0.8, 0.9))),
    ("RAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True), dict(eps=1e-4, maximize=True)),
]


@pytest.mark.parametrize(
    "name, defaults, group1", OPTIMIZER_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(OPTIMIZER_CASES)]
)
def test_trajectories_match_torch_over_100_steps(name, defaults, group1):
    ours, theirs = _ours(name, defaults, group1), _theirs(name, defaults, group1)
    assert np.abs(ours[-1] - ours[0]).max() > 1e-2  # the parameters really moved
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


# -- LBFGS ------------------------------------------------------------------------------------------------
def _rosenbrock(x):
    a, b = x[0], x[1]
    value = (1 - a) ** 2 + 100 * (b - a * a) ** 2
    grad = np.array([-2 * (1 - a) - 400 * a * (b - a * a), 200 * (b - a * a)])
    return float(value), grad


A = np.random.default_rng(3).normal(size=(12, 4))
B = np.random.default_rng(4).normal(size=12)


def _least_squares(x):  # x = weights (4) then a bias (1)
    r = A @ x[:4] + x[4] - B
    return float(r @ r), np.concatenate([2 * A.T @ r, [2 * r.sum()]])


def _lbfgs_run(make_params, data, set_grad, make_opt, objective, calls):
    params = make_params()
    opt = make_opt(params)
    sizes = [int(np.prod(np.shape(data(p)))) for p in params]

    def flat():
        return np.concatenate([np.ravel(data(p)) for p in params])

    def closure():
        value, grad = objective(flat())
        for p, g in zip(params, np.split(grad, np.cumsum(sizes)[:-1])):
            set_grad(p, g.reshape(np.shape(data(p))))
        return value

    out = []
    for _ in range(calls):
        loss = opt.step(closure)
        out.append(np.concatenate([flat(), [float(loss)]]))
    return np.array(out), opt


LBFGS_CASES = [
    (_rosenbrock, [np.array([-1.5, 2.0])], dict(line_search_fn="strong_wolfe")),
    (_rosenbrock, [np.array([2.0]), np.array([-1.0])], dict(line_search_fn="strong_wolfe", max_iter=5, history_size=3)),
    (_rosenbrock, [np.array([0.5, -0.5])], dict(line_search_fn="strong_wolfe", history_size=2, max_iter=7)),
    (_least_squares, [np.zeros(4), np.zeros(1)], dict(line_search_fn="strong_wolfe", history_size=3, max_iter=4)),
    (_least_squares, [np.ones(4), np.ones(1)], dict(lr=0.1, max_iter=10, history_size=4, tolerance_change=1e-12)),
    (_least_squares, [np.ones(4), -np.ones(1)], dict(max_iter=3)),
]


@pytest.mark.parametrize("objective, start, kwargs", LBFGS_CASES)
def test_lbfgs_matches_torch(objective, start, kwargs):
    def set_ours(p, g):
        p.grad = g

    def set_theirs(p, g):
        p.grad = torch.tensor(g)

    ours, opt = _lbfgs_run(
        lambda: [tg.Tensor(s.copy(), requires_grad=True) for s in start],
        lambda p: p.data,
        set_ours,
        lambda ps: optim.LBFGS(ps, **kwargs),
        objective,
        calls=12,
    )
    theirs, topt = _lbfgs_run(
        lambda: [torch.tensor(s.copy(), requires_grad=True) for s in start],
        lambda p: p.detach().numpy(),
        set_theirs,
        lambda ps: torch.optim.LBFGS(ps, **kwargs),
        objective,
        calls=12,
    )
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    mine, their = opt.state[id(opt.param_groups[0]["params"][0])], topt.state[topt.param_groups[0]["params"][0]]
    assert (mine["func_evals"], mine["n_iter"]) == (their["func_evals"], their["n_iter"])
    assert len(mine["old_dirs"]) == len(their["old_dirs"])


def test_lbfgs_minimises_rosenbrock_from_a_tapegrad_closure():
    x = tg.Tensor([-1.5, 2.0], requires_grad=True)
    opt = optim.LBFGS([x], line_search_fn="strong_wolfe", max_iter=100)

    def closure():
        opt.zero_grad()
        with tg.tape.record():
            loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
    np.testing.assert_allclose(x.data, [1.0, 1.0], atol=1e-4)
    assert float(closure()) < 1e-9


# -- schedules --------------------------------------------------------------------------------------------
def _lr_run(lib, make_opt, make_sched, steps, metrics=None, epochs=None):
    p = [tg.Tensor([0.0], requires_grad=True), tg.Tensor([0.0], requires_grad=True)]
    if lib is torch.optim:
        p = [torch.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)]
    opt = make_opt(lib, p)
    sched = make_sched(lib.lr_scheduler, opt)
    out = []
    for k in range(steps):
        row = [g["lr"] for g in opt.param_groups]
        row += [g.get("momentum", g.get("betas", (0.0,))[0]) for g in opt.param_groups]
        out.append(row + list(sched.get_last_lr()))
        opt.step()
        if metrics is not None:
            sched.step(metrics[k])
        elif epochs is not None:
            sched.step(epochs[k])
        else:
            sched.step()
    return np.array(out, dtype=float)


@pytest.mark.parametrize("name", sorted(SCHEDULE_CASES))
def test_schedules_match_torch_over_120_steps(name):
    make_opt, make_sched = SCHEDULE_CASES[name]
    ours = _lr_run(optim, make_opt, make_sched, 125)
    theirs = _lr_run(torch.optim, make_opt, make_sched, 125)
    assert len(np.unique(ours[:, 0])) > 1  # the rate really changes
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


PLATEAU_CASES = [
    dict(),
    dict(mode="min", factor=0.5, patience=3, threshold=0.01, cooldown=2),
    dict(factor=0.3, patience=2, threshold=0.05, threshold_mode="abs", min_lr=[0.01, 0.001]),
    dict(mode="max", factor=0.7, patience=1, threshold_mode="abs", threshold=0.0, min_lr=1e-3, eps=1e-4),
]


@pytest.mark.parametrize("kwargs", PLATEAU_CASES)
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    metrics = plateau_metrics()
    if kwargs.get("mode") == "max":
        metrics = [-m for m in metrics]

    def make(s, o):
        return s.ReduceLROnPlateau(o, **kwargs)

    ours = _lr_run(optim, sgd, make, 150, metrics=metrics)
    theirs = _lr_run(torch.optim, sgd, make, 150, metrics=metrics)
    assert len(np.unique(ours[:, 0])) > 2
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


def test_warm_restarts_with_fractional_epochs_match_torch():
    epochs = [e + b / 5 for e in range(30) for b in range(5)]

    def make(s, o):
        return s.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001)

    ours = _lr_run(optim, sgd, make, len(epochs), epochs=epochs)
    theirs = _lr_run(torch.optim, sgd, make, len(epochs), epochs=epochs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


def test_clip_grad_norm_and_value_match_torch_for_every_norm_type():
    rng = np.random.default_rng(1)
    grads = [rng.standard_normal(s) for s in [(3, 2), (5,), (1,)]]
    import tapegrad.nn.utils as utils

    for norm_type in [2.0, 1.0, 3.0, math.inf, "inf", 0.5]:
        ps = [tg.Tensor(np.zeros_like(g), requires_grad=True) for g in grads]
        ts = [torch.zeros(g.shape, requires_grad=True) for g in grads]
        for p, t, g in zip(ps, ts, grads):
            p.grad, t.grad = g.copy(), torch.tensor(g)
        ours = utils.clip_grad_norm_(ps, 0.7, norm_type=norm_type)
        theirs = torch.nn.utils.clip_grad_norm_(ts, 0.7, norm_type=norm_type)
        assert float(ours) == pytest.approx(float(theirs), rel=1e-13)
        for p, t in zip(ps, ts):
            np.testing.assert_allclose(p.grad, t.grad.numpy(), rtol=1e-13)
    for p, t, g in zip(ps, ts, grads):
        p.grad, t.grad = 2 * g, torch.tensor(2 * g)
    utils.clip_grad_value_(ps, 0.3)
    torch.nn.utils.clip_grad_value_(ts, 0.3)
    for p, t in zip(ps, ts):
        np.testing.assert_array_equal(p.grad, t.grad.numpy())
