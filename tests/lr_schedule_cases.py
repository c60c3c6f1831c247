"""Learning-rate schedule cases shared by the schedule tests (ours alone) and the PyTorch parity tests.

Each case is ``(make_optimizer, make_schedule)``; both take the library's namespace (``tapegrad.optim`` or
``torch.optim``, and its ``lr_scheduler``), so one table builds the same run in either library.
"""

import numpy as np


def sgd(lib, p):
    return lib.SGD([{"params": [p[0]]}, {"params": [p[1]], "lr": 0.03}], lr=0.1, momentum=0.9)


def adam(lib, p):
    return lib.Adam([{"params": [p[0]]}, {"params": [p[1]], "lr": 0.003}], lr=0.01)


def plateau_metrics(n=150):
    rng = np.random.default_rng(7)
    level, out = 10.0, []
    for k in range(n):
        if k % 30 < 6:
            level *= 0.97
        out.append(level + 0.01 * rng.normal())
    return out


SCHEDULE_CASES = {
    "LambdaLR": (sgd, lambda s, o: s.LambdaLR(o, [lambda e: 0.97**e, lambda e: 1 / (1 + e)])),
    "MultiplicativeLR": (sgd, lambda s, o: s.MultiplicativeLR(o, lambda e: 0.99 if e % 2 else 0.95)),
    "StepLR": (sgd, lambda s, o: s.StepLR(o, step_size=7, gamma=0.7)),
    "MultiStepLR": (sgd, lambda s, o: s.MultiStepLR(o, milestones=[10, 30, 30, 80], gamma=0.5)),
    "ExponentialLR": (sgd, lambda s, o: s.ExponentialLR(o, gamma=0.97)),
    "LinearLR": (sgd, lambda s, o: s.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=40)),
    "LinearLR-decay": (sgd, lambda s, o: s.LinearLR(o, start_factor=1.0, end_factor=0.05, total_iters=90)),
    "ConstantLR": (sgd, lambda s, o: s.ConstantLR(o, factor=0.25, total_iters=30)),
    "PolynomialLR": (sgd, lambda s, o: s.PolynomialLR(o, total_iters=80, power=2.0)),
    "CosineAnnealingLR": (sgd, lambda s, o: s.CosineAnnealingLR(o, T_max=30, eta_min=0.001)),
    "CosineAnnealingWarmRestarts": (
        sgd,
        lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=10, T_mult=2, eta_min=1e-3),
    ),
    "CosineAnnealingWarmRestarts-1": (sgd, lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=13)),
    "OneCycleLR-cos": (sgd, lambda s, o: s.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=130)),
    "OneCycleLR-linear": (
        adam,
        lambda s, o: s.OneCycleLR(
            o, max_lr=0.1, epochs=13, steps_per_epoch=10, anneal_strategy="linear", pct_start=0.25
        ),
    ),
    "OneCycleLR-three-phase": (
        sgd,
        lambda s, o: s.OneCycleLR(o, max_lr=0.5, total_steps=125, three_phase=True, div_factor=10.0),
    ),
    "OneCycleLR-no-momentum": (
        sgd,
        lambda s, o: s.OneCycleLR(o, max_lr=0.5, total_steps=125, cycle_momentum=False, final_div_factor=100.0),
    ),
    "CyclicLR-triangular": (
        sgd,
        lambda s, o: s.CyclicLR(o, base_lr=[0.01, 0.001], max_lr=[0.1, 0.05], step_size_up=9),
    ),
    "CyclicLR-triangular2": (
        adam,
        lambda s, o: s.CyclicLR(o, base_lr=0.001, max_lr=0.1, step_size_up=7, step_size_down=12, mode="triangular2"),
    ),
    "CyclicLR-exp_range": (
        sgd,
        lambda s, o: s.CyclicLR(o, 0.01, 0.2, step_size_up=10, mode="exp_range", gamma=0.99, base_momentum=0.7),
    ),
    "CyclicLR-scale_fn": (
        sgd,
        lambda s, o: s.CyclicLR(
            o, 0.01, 0.2, step_size_up=5, scale_fn=lambda x: 0.9**x, scale_mode="iterations", cycle_momentum=False
        ),
    ),
    "SequentialLR-warmup": (
        sgd,
        lambda s, o: s.SequentialLR(
            o, [s.LinearLR(o, start_factor=0.01, total_iters=10), s.CosineAnnealingLR(o, T_max=100)], milestones=[10]
        ),
    ),
    "SequentialLR-three": (
        sgd,
        lambda s, o: s.SequentialLR(
            o,
            [s.ConstantLR(o, factor=0.5, total_iters=5), s.ExponentialLR(o, gamma=0.95), s.StepLR(o, 10, 0.5)],
            milestones=[20, 60],
        ),
    ),
    "ChainedScheduler": (
        sgd,
        lambda s, o: s.ChainedScheduler([s.ConstantLR(o, factor=0.1, total_iters=8), s.ExponentialLR(o, gamma=0.98)]),
    ),
    "ChainedScheduler-2": (
        sgd,
        lambda s, o: s.ChainedScheduler([s.LinearLR(o, 0.2, 1.0, 15), s.MultiStepLR(o, [40, 90], 0.3)], optimizer=o),
    ),
}
