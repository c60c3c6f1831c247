"""Optimizers against their published update equations, computed by hand in plain Python floats, and against
PyTorch where it is installed; parameter groups, state dicts, clipping and schedules."""

import copy
import math

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import optim

GRADS = [[0.5, -2.0, 0.0], [1.5, 0.25, -1.0], [-0.75, 3.0, 0.5], [0.1, -0.2, 2.0], [1.0, 1.0, -3.0]]
P0 = [1.0, -0.5, 2.0]


def run(make, grads=GRADS, p0=P0, dtype=np.float64):
    p = tg.Tensor(np.array(p0, dtype=dtype), requires_grad=True)
    opt = make([p])
    out = []
    for g in grads:
        p.grad = np.array(g, dtype=dtype)
        opt.step()
        out.append(p.data.copy())
    return np.array(out), opt


def sgd_by_hand(lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
    out, p, buf = [], list(P0), [None] * len(P0)
    for grad in GRADS:
        for i, g in enumerate(grad):
            g = g + weight_decay * p[i]
            if momentum:
                buf[i] = g if buf[i] is None else momentum * buf[i] + (1 - dampening) * g
                g = g + momentum * buf[i] if nesterov else buf[i]
            p[i] = p[i] - lr * g
        out.append(list(p))
    return np.array(out)


def adam_by_hand(lr, b1, b2, eps, weight_decay=0.0, amsgrad=False, decoupled=False):
    n = len(P0)
    out, p, m, v, vmax = [], list(P0), [0.0] * n, [0.0] * n, [0.0] * n
    for t, grad in enumerate(GRADS, start=1):
        for i, g in enumerate(grad):
            if decoupled:
                p[i] = p[i] * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p[i]
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            vmax[i] = max(vmax[i], v[i])
            vhat = (vmax[i] if amsgrad else v[i]) / (1 - b2**t)
            p[i] = p[i] - lr * (m[i] / (1 - b1**t)) / (math.sqrt(vhat) + eps)
        out.append(list(p))
    return np.array(out)


SGD_CASES = [
    dict(lr=0.1),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.05, momentum=0.8, dampening=0.3),
    dict(lr=0.05, momentum=0.9, nesterov=True),
    dict(lr=0.1, momentum=0.5, weight_decay=0.1),
]
ADAM_CASES = [
    dict(lr=0.1, betas=(0.9, 0.999), eps=1e-8),
    dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
    dict(lr=0.1, betas=(0.9, 0.999), eps=1e-8, amsgrad=True),
    dict(lr=0.1, betas=(0.5, 0.9), eps=1e-8, weight_decay=0.2, amsgrad=True),
]


@pytest.mark.parametrize("kw", SGD_CASES)
def test_sgd_follows_the_published_equations(kw):
    got, _ = run(lambda ps: optim.SGD(ps, **kw))
    np.testing.assert_allclose(got, sgd_by_hand(**kw), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("kw", ADAM_CASES)
@pytest.mark.parametrize("cls", [optim.Adam, optim.AdamW])
def test_adam_and_adamw_follow_the_published_equations(cls, kw):
    got, _ = run(lambda ps: cls(ps, **kw))
    decoupled = cls is optim.AdamW
    wd = kw.get("weight_decay", 1e-2 if decoupled else 0.0)  # the two classes' defaults differ
    want = adam_by_hand(kw["lr"], *kw["betas"], kw["eps"], wd, kw.get("amsgrad", False), decoupled)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_adam_and_adamw_differ_only_with_weight_decay():
    a, _ = run(lambda ps: optim.Adam(ps, lr=0.1, weight_decay=0.3))
    w, _ = run(lambda ps: optim.AdamW(ps, lr=0.1, weight_decay=0.3))
    assert not np.allclose(a, w)
    a, _ = run(lambda ps: optim.Adam(ps, lr=0.1))
    w, _ = run(lambda ps: optim.AdamW(ps, lr=0.1, weight_decay=0.0))
    np.testing.assert_array_equal(a, w)


def _torch_run(torch, make, grads=GRADS):
    p = torch.tensor(P0, dtype=torch.float64, requires_grad=True)
    opt = make([p])
    out = []
    for g in grads:
        p.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
        out.append(p.detach().numpy().copy())
    return np.array(out)


@pytest.mark.parametrize("kw", SGD_CASES)
def test_sgd_matches_torch(kw):
    torch = pytest.importorskip("torch")
    want = _torch_run(torch, lambda ps: torch.optim.SGD(ps, **kw))
    got, _ = run(lambda ps: optim.SGD(ps, **kw))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("kw", ADAM_CASES)
@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_and_adamw_match_torch(name, kw):
    torch = pytest.importorskip("torch")
    want = _torch_run(torch, lambda ps: getattr(torch.optim, name)(ps, foreach=False, **kw))
    got, _ = run(lambda ps: getattr(optim, name)(ps, **kw))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("make", [lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), lambda ps: optim.Adam(ps, lr=0.1)])
def test_float32_parameters_stay_float32(make):
    got, opt = run(make, dtype=np.float32)
    assert got.dtype == np.float32
    assert all(v.dtype == np.float32 for s in opt.state.values() for v in s.values() if isinstance(v, np.ndarray))


def test_step_updates_in_place_bumps_the_version_and_skips_missing_grads():
    a, b = tg.Tensor([1.0, 2.0], requires_grad=True), tg.Tensor([5.0], requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)
    buf, v0 = a.data, a.version
    a.grad = np.array([1.0, -1.0])
    opt.step()
    assert a.data is buf and a.version > v0  # same array, changed where it is
    assert b.data[0] == 5.0 and id(b) not in opt.state  # grad None: untouched, no state
    opt.zero_grad()
    assert a.grad is None and b.grad is None


def test_a_step_between_forward_and_backward_makes_the_tape_refuse_to_replay():
    w = tg.Tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    w.grad = np.ones(2)
    with tg.tape.record():
        loss = (w * w).sum()
    opt.step()
    with pytest.raises(tg.InPlaceModificationError, match="multiply"):
        loss.backward()


def test_step_inside_record_is_not_recorded():
    w = tg.Tensor([1.0], requires_grad=True)
    opt = optim.Adam([w], lr=0.1)
    w.grad = np.ones(1)
    with tg.tape.record() as t:
        opt.step()
    assert len(t) == 0


def test_parameter_groups_have_their_own_learning_rate():
    a, b = tg.Tensor([1.0], requires_grad=True), tg.Tensor([1.0], requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.0)
    a.grad = b.grad = np.ones(1)
    opt.step()
    assert a.data[0] == pytest.approx(0.9) and b.data[0] == pytest.approx(0.5)


def test_bad_arguments_are_refused_with_clear_errors():
    w = tg.Tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="requires_grad=False"):
        optim.SGD([tg.Tensor([1.0])], lr=0.1)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD([w], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="betas"):
        optim.Adam([w], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="more than one group"):
        optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)
    with pytest.raises(TypeError, match="unknown hyperparameter"):
        optim.SGD([{"params": [w], "momentun": 0.9}], lr=0.1)


@pytest.mark.parametrize("make", [lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), lambda ps: optim.AdamW(ps, lr=0.1)])
def test_state_dict_round_trip_continues_the_same_trajectory(make):
    full, _ = run(make)
    half, opt = run(make, grads=GRADS[:2])
    state = opt.state_dict()
    opt.state[next(iter(opt.state))].clear()  # the saved state must be a copy
    p = tg.Tensor(half[-1], requires_grad=True)
    fresh = make([p])
    fresh.load_state_dict(state)
    for i, g in enumerate(GRADS[2:], start=2):
        p.grad = np.array(g)
        fresh.step()
        np.testing.assert_array_equal(p.data, full[i])


def test_load_state_dict_checks_before_changing_anything():
    a, b = tg.Tensor([1.0, 2.0], requires_grad=True), tg.Tensor([1.0], requires_grad=True)
    opt = optim.Adam([a], lr=0.1)
    a.grad = np.ones(2)
    opt.step()
    other = optim.Adam([b], lr=0.5)
    with pytest.raises(ValueError, match=r"shape \(2,\).*shape \(1,\)"):
        other.load_state_dict(opt.state_dict())
    assert other.param_groups[0]["lr"] == 0.5 and not other.state
    with pytest.raises(ValueError, match="1 parameter group"):
        optim.Adam([{"params": [a]}, {"params": [b]}]).load_state_dict(opt.state_dict())


def test_clip_grad_norm_matches_the_definition_and_returns_the_norm():
    rng = np.random.default_rng(0)
    ps = [tg.Tensor(np.zeros(s), requires_grad=True) for s in [(3, 2), (4,), (1,)]]
    grads = [rng.standard_normal(p.shape) for p in ps]
    for p, g in zip(ps, grads):
        p.grad = g.copy()
    total = math.sqrt(sum(float((g**2).sum()) for g in grads))
    assert optim.clip_grad_norm(ps, 1.0) == pytest.approx(total)
    clipped = math.sqrt(sum(float((p.grad**2).sum()) for p in ps))
    assert clipped == pytest.approx(1.0, rel=1e-5)
    for p, g in zip(ps, grads):
        np.testing.assert_allclose(p.grad, g / (total + 1e-6))
    assert optim.clip_grad_norm(ps, 10.0) == pytest.approx(1.0, rel=1e-5)  # below the maximum: unchanged
    largest = max(abs(p.grad).max() for p in ps)
    assert optim.clip_grad_norm(ps, 0.1, norm_type=float("inf")) == pytest.approx(largest)
    assert max(abs(p.grad).max() for p in ps) == pytest.approx(0.1, rel=1e-5)


def test_clip_grad_norm_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    grads = [rng.standard_normal(s) for s in [(3, 2), (5,)]]
    ps = [tg.Tensor(np.zeros_like(g), requires_grad=True) for g in grads]
    ts = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    for p, t, g in zip(ps, ts, grads):
        p.grad, t.grad = g.copy(), torch.tensor(g)
    assert optim.clip_grad_norm(ps, 0.5) == pytest.approx(float(torch.nn.utils.clip_grad_norm_(ts, 0.5)))
    for p, t in zip(ps, ts):
        np.testing.assert_allclose(p.grad, t.grad.numpy(), rtol=1e-12)


def test_clip_grad_value_clamps_each_element():
    w = tg.Tensor(np.zeros(4), requires_grad=True)
    w.grad = np.array([-5.0, -0.5, 0.5, 5.0])
    optim.clip_grad_value([w], 1.0)
    np.testing.assert_array_equal(w.grad, [-1.0, -0.5, 0.5, 1.0])


def _lrs(make_sched, base=1.0, epochs=12):
    opt = optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=base)
    sched = make_sched(opt)
    out = []
    for _ in range(epochs):
        out.append(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    return out, sched


def test_step_lr_and_cosine_follow_their_formulas():
    got, _ = _lrs(lambda o: optim.StepLR(o, step_size=3, gamma=0.5))
    assert got == [0.5 ** (e // 3) for e in range(12)]
    got, _ = _lrs(lambda o: optim.CosineAnnealingLR(o, T_max=8, eta_min=0.1))
    np.testing.assert_allclose(got, [0.1 + 0.9 * (1 + math.cos(math.pi * e / 8)) / 2 for e in range(12)])


def test_schedules_match_torch():
    torch = pytest.importorskip("torch")
    for ours, theirs in [
        (lambda o: optim.StepLR(o, 4, 0.3), lambda o: torch.optim.lr_scheduler.StepLR(o, 4, 0.3)),
        (
            lambda o: optim.CosineAnnealingLR(o, 6, 0.01),
            lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 6, 0.01),
        ),
    ]:
        topt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.5)
        tsched = theirs(topt)
        want = []
        for _ in range(10):
            want.append(tsched.get_last_lr()[0])
            topt.step()
            tsched.step()
        got, _ = _lrs(ours, base=0.5, epochs=10)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_scheduler_state_dict_resumes_the_schedule():
    full, _ = _lrs(lambda o: optim.StepLR(o, step_size=2, gamma=0.5), epochs=8)
    _, sched = _lrs(lambda o: optim.StepLR(o, step_size=2, gamma=0.5), epochs=5)
    opt = optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    resumed = optim.StepLR(opt, step_size=99)
    resumed.load_state_dict(sched.state_dict())
    rest = []
    for _ in range(3):
        rest.append(resumed.get_last_lr()[0])
        resumed.step()
    assert rest == full[5:]


# -- the other optimizers against their equations, by hand in plain Python floats ---------------------------
def _by_hand(update, state0):
    """Run ``update(i, p, g, t, state) -> p`` element by element over GRADS, from P0."""
    out, p = [], list(P0)
    states = [dict(state0) for _ in P0]
    for t, grad in enumerate(GRADS, start=1):
        for i, g in enumerate(grad):
            p[i] = update(p[i], g, t, states[i])
        out.append(list(p))
    return np.array(out)


def rmsprop_by_hand(lr, alpha, eps, weight_decay=0.0, momentum=0.0, centered=False):
    def update(p, g, t, s):
        g = g + weight_decay * p
        s["v"] = alpha * s["v"] + (1 - alpha) * g * g
        s["a"] = s["a"] + (1 - alpha) * (g - s["a"])
        avg = math.sqrt(s["v"] - s["a"] ** 2 if centered else s["v"]) + eps
        if momentum:
            s["b"] = momentum * s["b"] + g / avg
            return p - lr * s["b"]
        return p - lr * g / avg

    return _by_hand(update, {"v": 0.0, "a": 0.0, "b": 0.0})


def adagrad_by_hand(lr, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10):
    def update(p, g, t, s):
        g = g + weight_decay * p
        s["sum"] += g * g
        return p - lr / (1 + (t - 1) * lr_decay) * g / (math.sqrt(s["sum"]) + eps)

    return _by_hand(update, {"sum": initial_accumulator_value})


def adadelta_by_hand(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0):
    def update(p, g, t, s):
        g = g + weight_decay * p
        s["v"] = rho * s["v"] + (1 - rho) * g * g
        delta = math.sqrt(s["u"] + eps) / math.sqrt(s["v"] + eps) * g
        s["u"] = rho * s["u"] + (1 - rho) * delta * delta
        return p - lr * delta

    return _by_hand(update, {"v": 0.0, "u": 0.0})


def adamax_by_hand(lr, betas, eps=1e-8, weight_decay=0.0):
    b1, b2 = betas

    def update(p, g, t, s):
        g = g + weight_decay * p
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["u"] = max(b2 * s["u"], abs(g) + eps)
        return p - lr / (1 - b1**t) * s["m"] / s["u"]

    return _by_hand(update, {"m": 0.0, "u": 0.0})


def nadam_by_hand(lr, betas, eps=1e-8, weight_decay=0.0, momentum_decay=4e-3, decoupled_weight_decay=False):
    b1, b2 = betas

    def update(p, g, t, s):
        if decoupled_weight_decay:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        mu, mu_next = (b1 * (1 - 0.5 * 0.96 ** (k * momentum_decay)) for k in (t, t + 1))
        s["prod"] *= mu
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["v"] = b2 * s["v"] + (1 - b2) * g * g
        d = math.sqrt(s["v"] / (1 - b2**t)) + eps
        return p - lr * (1 - mu) / (1 - s["prod"]) * g / d - lr * mu_next / (1 - s["prod"] * mu_next) * s["m"] / d

    return _by_hand(update, {"m": 0.0, "v": 0.0, "prod": 1.0})


def radam_by_hand(lr, betas, eps=1e-8, weight_decay=0.0):
    b1, b2 = betas
    rho_inf = 2 / (1 - b2) - 1

    def update(p, g, t, s):
        g = g + weight_decay * p
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["v"] = b2 * s["v"] + (1 - b2) * g * g
        m_hat = s["m"] / (1 - b1**t)
        rho = rho_inf - 2 * t * b2**t / (1 - b2**t)
        if rho <= 5:
            return p - lr * m_hat
        r = math.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
        return p - lr * m_hat * r * math.sqrt(1 - b2**t) / (math.sqrt(s["v"]) + eps)

    return _by_hand(update, {"m": 0.0, "v": 0.0})


BY_HAND_CASES = [
    ("RMSprop", rmsprop_by_hand, dict(lr=0.01, alpha=0.99, eps=1e-8)),
    ("RMSprop", rmsprop_by_hand, dict(lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.1, momentum=0.9)),
    ("RMSprop", rmsprop_by_hand, dict(lr=0.01, alpha=0.9, eps=1e-8, momentum=0.5, centered=True)),
    ("Adagrad", adagrad_by_hand, dict(lr=0.1)),
    ("Adagrad", adagrad_by_hand, dict(lr=0.1, lr_decay=0.1, weight_decay=0.2, initial_accumulator_value=0.5)),
    ("Adadelta", adadelta_by_hand, dict()),
    ("Adadelta", adadelta_by_hand, dict(lr=0.5, rho=0.5, eps=1e-3, weight_decay=0.1)),
    ("Adamax", adamax_by_hand, dict(lr=0.02, betas=(0.9, 0.999))),
    ("Adamax", adamax_by_hand, dict(lr=0.02, betas=(0.5, 0.9), weight_decay=0.1)),
    ("NAdam", nadam_by_hand, dict(lr=0.02, betas=(0.9, 0.999))),
    ("NAdam", nadam_by_hand, dict(lr=0.02, betas=(0.8, 0.99), weight_decay=0.1, momentum_decay=0.05)),
    ("NAdam", nadam_by_hand, dict(lr=0.02, betas=(0.8, 0.99), weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", radam_by_hand, dict(lr=0.02, betas=(0.9, 0.999))),
    ("RAdam", radam_by_hand, dict(lr=0.02, betas=(0.5, 0.7), weight_decay=0.1)),  # rho_t > 5 from step 5
]


@pytest.mark.parametrize("name, by_hand, kw", BY_HAND_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(BY_HAND_CASES)])
def test_optimizers_follow_their_published_equations(name, by_hand, kw):
    got, _ = run(lambda ps: getattr(optim, name)(ps, **kw))
    np.testing.assert_allclose(got, by_hand(**kw), rtol=1e-12, atol=1e-14)


ALL_OPTIMIZERS = [
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    lambda ps: optim.Adam(ps, lr=0.1, amsgrad=True),
    lambda ps: optim.AdamW(ps, lr=0.1),
    lambda ps: optim.Adamax(ps, lr=0.1),
    lambda ps: optim.NAdam(ps, lr=0.1),
    lambda ps: optim.RAdam(ps, lr=0.1),
    lambda ps: optim.RMSprop(ps, lr=0.1, momentum=0.9, centered=True),
    lambda ps: optim.Adagrad(ps, lr=0.1, initial_accumulator_value=0.1),
    lambda ps: optim.Adadelta(ps),
]
OPTIMIZER_IDS = ["SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad", "Adadelta"]


@pytest.mark.parametrize("make", ALL_OPTIMIZERS, ids=OPTIMIZER_IDS)
def test_every_optimizer_resumes_from_a_saved_state_bit_for_bit(make, tmp_path):
    full, _ = run(make)
    half, opt = run(make, grads=GRADS[:2])
    tg.save(opt.state_dict(), tmp_path / "opt.npz")
    p = tg.Tensor(half[-1], requires_grad=True)
    fresh = make([p])
    fresh.load_state_dict(tg.load(tmp_path / "opt.npz"))
    for i, g in enumerate(GRADS[2:], start=2):
        p.grad = np.array(g)
        fresh.step()
        assert p.data.tobytes() == full[i].tobytes()


@pytest.mark.parametrize("make", ALL_OPTIMIZERS, ids=OPTIMIZER_IDS)
def test_every_optimizer_keeps_float32_and_maximizes_by_negating(make):
    got, opt = run(make, dtype=np.float32)
    assert got.dtype == np.float32
    assert all(v.dtype == np.float32 for s in opt.state.values() for v in s.values() if isinstance(v, np.ndarray))
    up, _ = run(lambda ps: _with(make(ps), maximize=True))
    down, _ = run(make, grads=[[-g for g in grad] for grad in GRADS])
    np.testing.assert_array_equal(up, down)


def _with(opt, **changes):
    for group in opt.param_groups:
        group.update(changes)
    return opt


def test_every_hyperparameter_is_checked_by_the_one_table():
    w = tg.Tensor([1.0], requires_grad=True)
    for make in ALL_OPTIMIZERS + [lambda ps: optim.LBFGS(ps)]:
        opt = make([w])
        assert set(opt.defaults) <= set(optim.hyperparameters.HYPERPARAMETERS), type(opt).__name__


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda w: optim.RMSprop([w], alpha=1.5), r"RMSprop: alpha must be a number in \[0, 1\], got 1\.5"),
        (lambda w: optim.RMSprop([w], momentum=-0.1), r"momentum must be a number >= 0, got -0\.1"),
        (lambda w: optim.Adagrad([w], lr_decay=-1), r"Adagrad: lr_decay must be a number >= 0, got -1"),
        (lambda w: optim.Adagrad([w], initial_accumulator_value=-1), "initial_accumulator_value"),
        (lambda w: optim.Adadelta([w], rho=1.1), r"Adadelta: rho must be a number in \[0, 1\], got 1\.1"),
        (lambda w: optim.Adamax([w], betas=(0.9, 1.0)), r"Adamax: betas must be two numbers in \[0, 1\)"),
        (lambda w: optim.NAdam([w], momentum_decay=-1), "NAdam: momentum_decay must be a number >= 0"),
        (lambda w: optim.RAdam([w], eps=-1e-8), "RAdam: eps must be a number >= 0"),
        (lambda w: optim.Adam([w], lr="fast"), r"Adam: lr must be a number >= 0, got 'fast' \(a str\)"),
        (lambda w: optim.SGD([{"params": [w], "lr": -1}], lr=0.1), r"SGD: lr must be a number >= 0, got -1"),
        (lambda w: optim.LBFGS([w], history_size=0), r"LBFGS: history_size must be an integer >= 1, got 0"),
        (lambda w: optim.LBFGS([w], line_search_fn="wolfe"), r"line_search_fn must be None or 'strong_wolfe'"),
        (lambda w: optim.LBFGS([{"params": [w]}, {"params": [tg.Tensor([1.0], requires_grad=True)]}]), "groups"),
        (lambda w: optim.Adam(w), "one Tensor"),
    ],
)
def test_bad_hyperparameters_name_the_argument_and_the_value(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make(tg.Tensor([1.0], requires_grad=True))


def test_adagrad_starts_each_group_from_its_own_initial_accumulator():
    a, b = tg.Tensor([1.0], requires_grad=True), tg.Tensor([1.0], requires_grad=True)
    opt = optim.Adagrad([{"params": [a]}, {"params": [b], "initial_accumulator_value": 3.0}], lr=1.0)
    a.grad = b.grad = np.array([1.0])
    opt.step()
    assert opt.state[id(a)]["sum"][0] == 1.0 and opt.state[id(b)]["sum"][0] == 4.0


def test_a_step_reads_every_gradient_through_one_helper(monkeypatch):
    # complex parameters will need a conjugate or a real view: one place to change
    seen = []
    original = optim.Optimizer._grad

    def spy(self, p, group):
        seen.append(type(self).__name__)
        return original(self, p, group)

    monkeypatch.setattr(optim.Optimizer, "_grad", spy)
    for make in ALL_OPTIMIZERS:
        run(make, grads=GRADS[:1])
    assert seen == OPTIMIZER_IDS
    w = tg.Tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match=r"shape \(1,\) has a gradient of shape \(2,\)"):
        w.grad = np.ones(2)
        optim.SGD([w], lr=0.1).step()


def test_step_with_a_closure_returns_its_loss():
    w = tg.Tensor([2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.25)

    def closure():
        opt.zero_grad()
        with tg.tape.record():
            loss = (w * w).sum()
        loss.backward()
        return loss

    assert float(opt.step(closure)) == 4.0 and w.data[0] == 1.0


# -- LBFGS without torch ----------------------------------------------------------------------------------
def _quadratic_closure(opt, w, target, fail_after=None):
    calls = []

    def closure():
        calls.append(1)
        if fail_after is not None and len(calls) > fail_after:
            raise KeyboardInterrupt
        opt.zero_grad()
        with tg.tape.record():
            loss = ((w - tg.Tensor(target)) ** 2 * tg.Tensor([1.0, 10.0, 100.0])).sum()
        loss.backward()
        return loss

    return closure


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_solves_a_quadratic_and_resumes_from_its_saved_state(line_search_fn, tmp_path):
    target = np.array([1.0, -2.0, 0.5])
    full = tg.Tensor(np.zeros(3), requires_grad=True)
    opt = optim.LBFGS([full], lr=1, max_iter=4, history_size=3, line_search_fn=line_search_fn)
    trajectory = []
    for _ in range(6):
        opt.step(_quadratic_closure(opt, full, target))
        trajectory.append(full.data.copy())
    np.testing.assert_allclose(full.data, target, atol=1e-4)

    w = tg.Tensor(np.zeros(3), requires_grad=True)
    first = optim.LBFGS([w], lr=1, max_iter=4, history_size=3, line_search_fn=line_search_fn)
    for _ in range(2):
        first.step(_quadratic_closure(first, w, target))
    tg.save(first.state_dict(), tmp_path / "lbfgs.npz")
    v = tg.Tensor(w.data.copy(), requires_grad=True)
    second = optim.LBFGS([v], lr=1, max_iter=4, history_size=3, line_search_fn=line_search_fn)
    second.load_state_dict(tg.load(tmp_path / "lbfgs.npz"))
    for k in range(2, 6):
        second.step(_quadratic_closure(second, v, target))
        assert v.data.tobytes() == trajectory[k].tobytes()


def test_lbfgs_leaves_parameters_and_state_as_they_were_when_the_closure_raises():
    w = tg.Tensor(np.zeros(3), requires_grad=True)
    opt = optim.LBFGS([w], max_iter=10, line_search_fn="strong_wolfe")
    opt.step(_quadratic_closure(opt, w, np.ones(3)))
    before, w0 = copy.deepcopy(opt.state_dict()), w.data.copy()
    with pytest.raises(KeyboardInterrupt):
        opt.step(_quadratic_closure(opt, w, np.ones(3), fail_after=3))
    assert w.data.tobytes() == w0.tobytes()
    after = opt.state_dict()
    assert after["state"][0]["func_evals"] == before["state"][0]["func_evals"]
    assert after["state"][0]["n_iter"] == before["state"][0]["n_iter"]
    with pytest.raises(TypeError, match="needs a closure"):
        opt.step(None)


def test_clipping_under_pytorchs_names_with_non_finite_norms():
    import tapegrad.nn.utils as utils

    w = tg.Tensor(np.zeros(2), requires_grad=True)
    w.grad = np.array([np.inf, 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        utils.clip_grad_norm_([w], 1.0, error_if_nonfinite=True)
    assert w.grad[0] == np.inf  # unchanged by the refused clip
    total = utils.clip_grad_norm_(w, 1.0, foreach=True)  # one tensor, foreach ignored
    assert isinstance(total, tg.Tensor) and float(total) == np.inf
    assert np.isnan(w.grad[0]) and w.grad[1] == 0.0  # scaled by 1 / inf, as PyTorch does
    w.grad = np.array([3.0, -4.0], dtype=np.float32)
    total = utils.clip_grad_norm_([w], 1.0, norm_type="inf")
    assert total.dtype == np.float32 and float(total) == 4.0 and w.grad.dtype == np.float32
    assert float(utils.get_total_norm([np.ones(4), np.ones(5)], norm_type=1)) == 9.0
    assert utils.clip_grad_norm_([tg.Tensor([0.0], requires_grad=True)], 1.0).item() == 0.0  # no gradients
    with pytest.raises(ValueError, match="max_norm must be >= 0, got -1.0"):
        utils.clip_grad_norm_([w], -1)
    assert utils.clip_grad_norm_ is optim.clip_grad_norm_ and utils.clip_grad_value_ is optim.clip_grad_value
