"""Optimizers against their published update equations, computed by hand in plain Python floats, and against
PyTorch where it is installed; parameter groups, state dicts, clipping and schedules."""

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
