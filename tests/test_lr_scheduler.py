"""Learning-rate schedules without PyTorch: checkpoints resume exactly (through ``tapegrad.save``), states of
another scheduler are refused, lambdas are not saved, and bad arguments are refused with clear errors.
Their values are checked against PyTorch's in tests/test_optim_torch.py."""

import math

import numpy as np
import pytest
from lr_schedule_cases import SCHEDULE_CASES, plateau_metrics, sgd

import tapegrad as tg
from tapegrad import optim


def _setup(name):
    make_opt, make_sched = SCHEDULE_CASES[name]
    params = [tg.Tensor([0.0], requires_grad=True), tg.Tensor([0.0], requires_grad=True)]
    opt = make_opt(optim, params)
    return opt, make_sched(optim.lr_scheduler, opt)


def _rates(opt, sched, steps, out):
    for _ in range(steps):
        out.append(
            [g["lr"] for g in opt.param_groups] + [g.get("momentum", g.get("betas", (0,))[0]) for g in opt.param_groups]
        )
        opt.step()
        sched.step()
    return out


@pytest.mark.parametrize("name", sorted(SCHEDULE_CASES))
def test_every_schedule_resumes_from_a_checkpoint_exactly(name, tmp_path):
    full = _rates(*_setup(name), 120, [])
    opt, sched = _setup(name)
    first = _rates(opt, sched, 47, [])
    tg.save({"optim": opt.state_dict(), "sched": sched.state_dict()}, tmp_path / "ckpt.npz")
    opt, sched = _setup(name)
    for _ in range(5):  # the fresh run has moved on: loading must put it back
        opt.step()
        sched.step()
    ckpt = tg.load(tmp_path / "ckpt.npz")
    opt.load_state_dict(ckpt["optim"])
    sched.load_state_dict(ckpt["sched"])
    assert first + _rates(opt, sched, 73, []) == full


@pytest.mark.parametrize("name", ["StepLR", "OneCycleLR-cos", "SequentialLR-warmup", "ChainedScheduler"])
def test_loading_only_the_schedule_restores_the_rates_it_set(name):
    opt, sched = _setup(name)
    _rates(opt, sched, 30, [])
    state, lrs = sched.state_dict(), [g["lr"] for g in opt.param_groups]
    opt2, sched2 = _setup(name)
    sched2.load_state_dict(state)
    assert [g["lr"] for g in opt2.param_groups] == lrs == sched2.get_last_lr()


def test_reduce_lr_on_plateau_resumes_from_a_checkpoint_exactly(tmp_path):
    metrics = plateau_metrics()

    def run(sched, opt, ms):
        out = []
        for m in ms:
            out.append([g["lr"] for g in opt.param_groups])
            sched.step(m)
        return out

    def setup():
        opt = sgd(optim, [tg.Tensor([0.0], requires_grad=True), tg.Tensor([0.0], requires_grad=True)])
        return opt, optim.ReduceLROnPlateau(opt, factor=0.5, patience=3, cooldown=2, threshold=0.01)

    opt, sched = setup()
    full = run(sched, opt, metrics)
    assert len({row[0] for row in full}) > 2
    opt, sched = setup()
    first = run(sched, opt, metrics[:70])
    tg.save({"o": opt.state_dict(), "s": sched.state_dict()}, tmp_path / "c.npz")
    opt, sched = setup()
    ckpt = tg.load(tmp_path / "c.npz")
    opt.load_state_dict(ckpt["o"])
    sched.load_state_dict(ckpt["s"])
    assert first + run(sched, opt, metrics[70:]) == full


class Halving:
    """A callable object: its attributes are saved with the schedule, as PyTorch saves them."""

    def __init__(self, rate):
        self.rate = rate

    def __call__(self, epoch):
        return self.rate**epoch


def test_lambdas_are_not_saved_but_callable_objects_attributes_are():
    opt = optim.SGD(
        [{"params": [tg.Tensor([0.0], requires_grad=True)]}, {"params": [tg.Tensor([0.0], requires_grad=True)]}], lr=1.0
    )
    sched = optim.LambdaLR(opt, [lambda e: 0.9**e, Halving(0.5)])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [None, {"rate": 0.5}]
    other = optim.LambdaLR(opt, [lambda e: 0.9**e, Halving(0.1)])
    other.load_state_dict(state)
    assert other.lr_lambdas[1].rate == 0.5


def test_a_state_from_another_kind_of_schedule_is_refused_and_changes_nothing():
    opt = optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    step = optim.StepLR(opt, step_size=3)
    cosine = optim.CosineAnnealingLR(opt, T_max=10)
    before = cosine.state_dict()
    with pytest.raises(ValueError, match="another kind of scheduler"):
        cosine.load_state_dict(step.state_dict())
    assert cosine.state_dict() == before
    two = optim.SGD(
        [{"params": [tg.Tensor([0.0], requires_grad=True)]}, {"params": [tg.Tensor([0.0], requires_grad=True)]}], lr=1.0
    )
    with pytest.raises(ValueError, match="rates for 1 group"):
        optim.StepLR(two, step_size=3).load_state_dict(step.state_dict())


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda o: optim.StepLR(o, step_size=0), ValueError, r"StepLR: step_size must be an integer >= 1, got 0"),
        (
            lambda o: optim.LinearLR(o, start_factor=0),
            ValueError,
            r"LinearLR: start_factor must be a number in \(0, 1\]",
        ),
        (lambda o: optim.ConstantLR(o, factor=2), ValueError, r"ConstantLR: factor must be a number in \[0, 1\]"),
        (lambda o: optim.MultiStepLR(o, milestones=[3, -1]), ValueError, "each milestone must be an integer >= 0"),
        (lambda o: optim.CosineAnnealingWarmRestarts(o, T_0=2.5), ValueError, "T_0 must be an integer >= 1"),
        (lambda o: optim.OneCycleLR(o, max_lr=1.0), ValueError, "total_steps, or both epochs and steps_per_epoch"),
        (lambda o: optim.OneCycleLR(o, 1.0, 10, pct_start=2.0), ValueError, r"pct_start must be a float in \[0, 1\]"),
        (lambda o: optim.OneCycleLR(o, 1.0, 10, anneal_strategy="cosine"), ValueError, "'cos' or 'linear'"),
        (lambda o: optim.CyclicLR(o, 0.1, 1.0, mode="sawtooth"), ValueError, "mode must be 'triangular'"),
        (lambda o: optim.CyclicLR(o, [0.1, 0.2], 1.0), ValueError, r"base_lr has 2 value\(s\) for 1 parameter group"),
        (lambda o: optim.ReduceLROnPlateau(o, factor=1.0), ValueError, r"factor must be a number in \[0, 1\)"),
        (lambda o: optim.ReduceLROnPlateau(o, mode="least"), ValueError, "mode must be 'min' or 'max'"),
        (
            lambda o: optim.ReduceLROnPlateau(o, threshold_mode="pct"),
            ValueError,
            "threshold_mode must be 'rel' or 'abs'",
        ),
        (lambda o: optim.SequentialLR(o, [optim.StepLR(o, 2)], milestones=[3]), ValueError, "need 0 milestone"),
        (lambda o: optim.ChainedScheduler([optim.ReduceLROnPlateau(o)]), ValueError, "needs the metric"),
        (lambda o: optim.LambdaLR(o, 0.5), TypeError, "lr_lambda must be a function"),
        (lambda o: optim.StepLR("opt", 2), TypeError, "needs a tapegrad Optimizer, got str"),
    ],
)
def test_bad_schedule_arguments_are_refused_clearly(make, error, message):
    opt = optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0, momentum=0.9)
    with pytest.raises(error, match=message):
        make(opt)


def test_cycling_momentum_needs_an_optimizer_with_momentum_and_one_cycle_stops_at_its_end():
    opt = optim.Adagrad([tg.Tensor([0.0], requires_grad=True)])
    with pytest.raises(ValueError, match="Adagrad has neither; pass cycle_momentum=False"):
        optim.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    sched = optim.OneCycleLR(opt, max_lr=1.0, total_steps=3, cycle_momentum=False)
    for _ in range(3):
        sched.step()
    with pytest.raises(ValueError, match="stepped 4 times, but total_steps is 3"):
        sched.step()


def test_cyclic_schedules_cycle_momentum_and_betas_inversely_to_the_rate():
    opt = optim.Adam([tg.Tensor([0.0], requires_grad=True)])
    sched = optim.OneCycleLR(opt, max_lr=1.0, total_steps=20)
    seen = []
    for _ in range(20):
        seen.append((opt.param_groups[0]["lr"], opt.param_groups[0]["betas"][0]))
        sched.step()
    lr_peak = max(range(20), key=lambda k: seen[k][0])
    beta_low = min(range(20), key=lambda k: seen[k][1])
    assert lr_peak == beta_low and seen[0][1] == 0.95 and math.isclose(seen[lr_peak][1], 0.85)
    assert opt.param_groups[0]["betas"][1] == 0.999
    assert {"initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum"} <= set(opt.param_groups[0])
    optim.Adam([tg.Tensor([0.0], requires_grad=True)]).load_state_dict(opt.state_dict())  # schedule keys load


def test_warm_restarts_can_step_by_fractional_epochs():
    opt = optim.SGD([tg.Tensor([0.0], requires_grad=True)], lr=1.0)
    sched = optim.CosineAnnealingWarmRestarts(opt, T_0=2, eta_min=0.0)
    sched.step(0.5)
    assert sched.get_last_lr()[0] == pytest.approx((1 + math.cos(math.pi * 0.25)) / 2)
    sched.step(2.0)
    assert sched.get_last_lr()[0] == 1.0  # a restart
    np.testing.assert_equal(sched.last_epoch, 2)
