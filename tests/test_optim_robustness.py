"""Optimizer robustness: ``load_state_dict`` validates as the constructor does and changes nothing on error;
a failed ``step()`` changes nothing (step counts, moments, parameters)."""

import copy

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import optim


def _stepped(make, n=2, shape=(3,)):
    w = tg.Tensor(np.linspace(-1.0, 1.0, int(np.prod(shape))).reshape(shape), requires_grad=True)
    opt = make([w])
    for k in range(n):
        w.grad = np.full(shape, 0.5 + k)
        opt.step()
    return w, opt


def _snapshot(opt):
    return copy.deepcopy(opt.state_dict())


def _same(a, b):
    assert type(a) is type(b), (a, b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    else:
        assert a == b or (a != a and b != b)


def _adam_state(**group_changes):
    _, opt = _stepped(lambda ps: optim.Adam(ps, lr=0.1))
    sd = opt.state_dict()
    sd["param_groups"][0].update(group_changes)
    return sd


@pytest.mark.parametrize(
    "bad, message",
    [
        (lambda: _stepped(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9))[1].state_dict(), "momentum"),
        (lambda: _adam_state(lr=-1.0), r"lr must be .*>= 0.*-1"),
        (lambda: _adam_state(betas=(2, 0.5)), r"betas .*\(2, 0\.5\)"),
        (lambda: _adam_state(lr="0.1"), r"lr must be a number.*'0\.1'"),
        (lambda: _adam_state(amsgrad="yes"), r"amsgrad must be True or False"),
        (lambda: _adam_state(eps=float("nan")), r"eps must be"),
    ],
    ids=["sgd-state", "negative-lr", "betas", "string-lr", "string-flag", "nan-eps"],
)
def test_load_state_dict_refuses_what_the_constructor_refuses_and_changes_nothing(bad, message):
    w, opt = _stepped(lambda ps: optim.Adam(ps, lr=0.3, betas=(0.8, 0.9)))
    before = _snapshot(opt)
    with pytest.raises(ValueError, match=message):
        opt.load_state_dict(bad())
    _same(opt.state_dict(), before)
    w.grad = np.ones(3)
    opt.step()  # still usable


def test_a_state_missing_a_moment_or_with_a_foreign_entry_is_refused():
    w, opt = _stepped(lambda ps: optim.Adam(ps, lr=0.1))
    before = _snapshot(opt)
    sd = opt.state_dict()
    del sd["state"][0]["exp_avg_sq"]
    with pytest.raises(ValueError, match=r"parameter 0: .*exp_avg_sq"):
        opt.load_state_dict(sd)
    sd = opt.state_dict()
    sd["state"][0]["momentum_buffer"] = np.zeros(3)
    with pytest.raises(ValueError, match=r"parameter 0: .*momentum_buffer"):
        opt.load_state_dict(sd)
    sd = opt.state_dict()
    sd["state"][0]["step"] = "3"
    with pytest.raises(ValueError, match=r"'step'"):
        opt.load_state_dict(sd)
    sd = opt.state_dict()
    sd["state"][0]["exp_avg"] = np.array(["a", "b", "c"])
    with pytest.raises(ValueError, match=r"'exp_avg'"):
        opt.load_state_dict(sd)
    _same(opt.state_dict(), before)


def test_mismatched_groups_counts_and_shapes_are_refused_and_change_nothing():
    a, b = tg.Tensor(np.ones(2), requires_grad=True), tg.Tensor(np.ones(3), requires_grad=True)
    opt = optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    a.grad, b.grad = np.ones(2), np.ones(3)
    opt.step()
    sd = opt.state_dict()
    before = _snapshot(opt)
    other = optim.Adam([{"params": [b]}, {"params": [a], "lr": 0.5}], lr=0.1)
    with pytest.raises(ValueError, match=r"shape \(2,\).*shape \(3,\)"):
        other.load_state_dict(sd)
    assert other.state == {} and other.param_groups[0]["lr"] == 0.1
    with pytest.raises(ValueError, match="2 parameter group"):
        optim.Adam([a, b]).load_state_dict(sd)
    with pytest.raises(ValueError, match="group 1 has 1 parameter"):
        optim.Adam([{"params": [a]}, {"params": [b, tg.Tensor([1.0], requires_grad=True)]}]).load_state_dict(sd)
    with pytest.raises(ValueError, match="'state' and 'param_groups'"):
        opt.load_state_dict({"state": {}})
    _same(opt.state_dict(), before)


EVERY_OPTIMIZER = {
    "SGD": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
    "Adam": lambda ps: optim.Adam(ps, lr=0.1, amsgrad=True),
    "AdamW": lambda ps: optim.AdamW(ps, lr=0.1),
    "Adamax": lambda ps: optim.Adamax(ps),
    "NAdam": lambda ps: optim.NAdam(ps),
    "RAdam": lambda ps: optim.RAdam(ps),
    "RMSprop": lambda ps: optim.RMSprop(ps, momentum=0.5, centered=True),
    "Adagrad": lambda ps: optim.Adagrad(ps),
    "Adadelta": lambda ps: optim.Adadelta(ps),
}


@pytest.mark.parametrize("make", EVERY_OPTIMIZER.values(), ids=EVERY_OPTIMIZER.keys())
def test_a_failed_step_changes_no_state_and_no_parameter(make):
    a = tg.Tensor(np.ones(3), requires_grad=True)
    b = tg.Tensor(np.ones(2), requires_grad=True)
    opt = make([a, b])
    a.grad, b.grad = np.ones(3), np.ones(2)
    opt.step()
    before, a0, b0 = _snapshot(opt), a.data.copy(), b.data.copy()
    b.data.setflags(write=False)  # the second parameter cannot be written: the step must fail as a whole
    a.grad, b.grad = np.full(3, 2.0), np.full(2, 2.0)
    with pytest.raises(ValueError, match="read-only"):
        opt.step()
    _same(opt.state_dict(), before)
    assert a.data.tobytes() == a0.tobytes() and b.data.tobytes() == b0.tobytes()


def test_a_failed_lbfgs_step_changes_nothing():
    w = tg.Tensor(np.ones(3), requires_grad=True)
    opt = optim.LBFGS([w])

    def closure():
        opt.zero_grad()
        with tg.tape.record():
            loss = (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    before, w0 = _snapshot(opt), w.data.copy()
    w.data.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        opt.step(closure)
    _same(opt.state_dict(), before)
    assert w.data.tobytes() == w0.tobytes()


def test_an_lbfgs_state_of_the_wrong_size_is_refused():
    w, v = tg.Tensor(np.ones(3), requires_grad=True), tg.Tensor(np.ones(2), requires_grad=True)
    opt = optim.LBFGS([w])

    def closure():
        opt.zero_grad()
        with tg.tape.record():
            loss = (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    other = optim.LBFGS([v])
    with pytest.raises(ValueError, match=r"'d' has shape \(3,\), expected shape \(2,\)"):
        other.load_state_dict(opt.state_dict())
    assert other.state == {}
    sd = opt.state_dict()
    sd["state"][0]["ro"] = ["x"]
    with pytest.raises(ValueError, match="'ro' must be a list of numbers"):
        opt.load_state_dict(sd)
