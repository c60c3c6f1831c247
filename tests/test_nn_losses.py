"""Every loss, as a function and as a class, against PyTorch (values and input gradients) over reductions,
shapes and options, over several seeds; gradcheck always; and error messages that never contradict themselves."""

import re

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn

F = nn.functional
SEEDS = [0, 1, 2]
REDUCTIONS = ["mean", "sum", "none"]
pytestmark = pytest.mark.filterwarnings("ignore:reduction. 'mean' divides:UserWarning")  # torch's KLDivLoss advice


def _case(name, rng):
    """(our class kwargs, torch kwargs, inputs as arrays (the first is differentiated), second differentiated?)."""
    logits2, logits4 = rng.standard_normal((6, 5)), rng.standard_normal((3, 4, 2, 3))
    classes2, classes4 = rng.integers(0, 5, 6), rng.integers(0, 4, (3, 2, 3))
    classes2[1] = classes4[0, 0, 0] = -100  # ignored ones
    probs = rng.dirichlet(np.ones(5), 6)
    weight5 = rng.uniform(0.5, 2.0, 5)
    x, t = rng.standard_normal((4, 3)) * 2, rng.standard_normal((4, 3)) * 2
    p01, t01 = rng.uniform(0.05, 0.95, (4, 3)), rng.uniform(0, 1, (4, 3))
    cases = {
        "CrossEntropyLoss": ({}, (logits2, classes2)),
        "CrossEntropyLoss-weight": ({"weight": weight5}, (logits2, classes2)),
        "CrossEntropyLoss-smoothing": ({"label_smoothing": 0.2}, (logits2, classes2)),
        "CrossEntropyLoss-weight-smoothing": ({"weight": weight5, "label_smoothing": 0.3}, (logits2, classes2)),
        "CrossEntropyLoss-spatial": ({"label_smoothing": 0.1}, (logits4, classes4)),
        "CrossEntropyLoss-spatial-weight": ({"weight": weight5[:4]}, (logits4, classes4)),
        "CrossEntropyLoss-ignore": ({"ignore_index": 2}, (logits2, np.where(classes2 < 0, 0, classes2))),
        "CrossEntropyLoss-probabilities": ({"label_smoothing": 0.1}, (logits2, probs)),
        "CrossEntropyLoss-probabilities-weight": ({"weight": weight5}, (logits2, probs)),
        "CrossEntropyLoss-one": ({}, (logits2[0], np.array(3))),
        "NLLLoss": ({"weight": weight5}, (np.log(probs), classes2)),
        "NLLLoss-spatial": ({}, (logits4, classes4)),
        "BCELoss": ({"weight": rng.uniform(0.5, 2, 3)}, (p01, t01)),
        "BCEWithLogitsLoss": ({}, (x, t01)),
        "BCEWithLogitsLoss-weights": (
            {"weight": rng.uniform(0.5, 2, (4, 3)), "pos_weight": rng.uniform(0.5, 3, 3)},
            (x, t01),
        ),
        "MSELoss": ({}, (x, t)),
        "L1Loss": ({}, (x, t)),
        "HuberLoss": ({"delta": 1.5}, (x, t)),
        "SmoothL1Loss": ({"beta": 0.7}, (x, t)),
        "SmoothL1Loss-beta0": ({"beta": 0.0}, (x, t)),
        "KLDivLoss": ({}, (np.log(probs), probs[::-1].copy())),
        "KLDivLoss-log_target": ({"log_target": True}, (np.log(probs), np.log(probs[::-1]))),
        "CosineEmbeddingLoss": ({"margin": 0.2}, (x, t, np.array([1, -1, -1, 1]))),
    }
    return cases[name]


CASES = [
    "CrossEntropyLoss",
    "CrossEntropyLoss-weight",
    "CrossEntropyLoss-smoothing",
    "CrossEntropyLoss-weight-smoothing",
    "CrossEntropyLoss-spatial",
    "CrossEntropyLoss-spatial-weight",
    "CrossEntropyLoss-ignore",
    "CrossEntropyLoss-probabilities",
    "CrossEntropyLoss-probabilities-weight",
    "CrossEntropyLoss-one",
    "NLLLoss",
    "NLLLoss-spatial",
    "BCELoss",
    "BCEWithLogitsLoss",
    "BCEWithLogitsLoss-weights",
    "MSELoss",
    "L1Loss",
    "HuberLoss",
    "SmoothL1Loss",
    "SmoothL1Loss-beta0",
    "KLDivLoss",
    "KLDivLoss-log_target",
    "CosineEmbeddingLoss",
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("case", CASES)
def test_losses_match_torch(case, reduction, seed):
    torch = pytest.importorskip("torch")
    name = case.split("-")[0]
    if reduction == "batchmean" and name != "KLDivLoss":
        return
    kwargs, arrays = _case(case, np.random.default_rng(seed))
    ours = getattr(nn, name)(reduction=reduction, **kwargs)
    t_kwargs = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    theirs = getattr(torch.nn, name)(reduction=reduction, **t_kwargs)
    float_second = arrays[1].dtype.kind == "f"
    xs = [tg.Tensor(a, requires_grad=i == 0 or (i == 1 and float_second)) for i, a in enumerate(arrays)]
    ts = [torch.tensor(a, requires_grad=i == 0 or (i == 1 and float_second)) for i, a in enumerate(arrays)]
    with tg.record():
        out = ours(*xs)
        cot = np.random.default_rng(seed + 5).standard_normal(out.shape)
        s = (out * cot).sum()
    s.backward()
    t_out = theirs(*ts)
    (t_out * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(out.data, t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    for x, t in zip(xs, ts):
        if t.requires_grad:  # the input's gradient, and a floating target's
            np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("case", CASES)
def test_losses_pass_gradcheck(case):
    kwargs, arrays = _case(case, np.random.default_rng(3))
    name = case.split("-")[0]
    kwargs = {k: v for k, v in kwargs.items()}
    loss = getattr(nn, name)(**kwargs)
    differentiable = [0] + ([1] if arrays[1].dtype.kind == "f" and name not in ("BCELoss",) else [])
    rest = [a for i, a in enumerate(arrays) if i not in differentiable]

    def fn(*xs):
        args = list(xs) + rest if len(differentiable) == 2 else [xs[0]] + rest
        return loss(*args)

    if name in ("L1Loss", "HuberLoss", "SmoothL1Loss"):  # kinks: keep finite differences off them
        arrays = [arrays[0] + np.where(np.abs(arrays[0] - arrays[1]) < 0.05, 0.2, 0.0), arrays[1]]
    assert tg.gradcheck(fn, *[arrays[i] for i in differentiable])


def test_cross_entropy_second_derivatives_with_every_option():
    rng = np.random.default_rng(0)
    logits, labels = rng.standard_normal((4, 3, 2)), np.array([[0, 2], [1, -100], [2, 2], [0, 1]])
    weight = np.array([0.5, 1.0, 2.0])
    assert tg.gradgradcheck(lambda z: F.cross_entropy(z, labels, weight, label_smoothing=0.2), logits)
    t = rng.uniform(size=logits.shape)
    assert tg.gradgradcheck(lambda z: F.binary_cross_entropy_with_logits(z, t, pos_weight=2.0), logits)


def test_cross_entropy_with_everything_ignored_is_nan_as_in_torch():
    out = F.cross_entropy(tg.Tensor(np.zeros((2, 3))), np.array([-100, -100]))
    assert np.isnan(out.item())
    assert F.cross_entropy(tg.Tensor(np.zeros((2, 3))), np.array([-100, -100]), reduction="sum").item() == 0.0


PADDING_ONLY = [
    ("cross_entropy", {}),
    ("cross_entropy", {"label_smoothing": 0.1}),
    ("cross_entropy", {"weight": np.array([0.5, 1.0, 2.0])}),
    ("cross_entropy", {"weight": np.array([0.5, 1.0, 2.0]), "label_smoothing": 0.2}),
    ("cross_entropy", {"reduction": "sum"}),
    ("nll_loss", {}),
    ("nll_loss", {"weight": np.array([0.5, 1.0, 2.0])}),
]


@pytest.mark.parametrize("tensor_target", [False, True], ids=["array-target", "tensor-target"])
@pytest.mark.parametrize("name,kwargs", PADDING_ONLY, ids=[f"{n}-{k}" for n, k in PADDING_ONLY])
def test_a_batch_of_padding_only_has_gradient_zero_not_nan(name, kwargs, tensor_target):
    # every target is ignore_index: the mean is 0/0, NaN as in PyTorch, but a constant (it reads no logit), so
    # the gradient is 0; a NaN there would turn every parameter into NaN after one such batch
    logits = np.random.default_rng(0).standard_normal((4, 3))
    target = np.full(4, -100)
    target = tg.Tensor(target) if tensor_target else target
    with np.errstate(all="raise"):  # no 0/0 on the way, forward or backward
        value, g = tg.value_and_grad(lambda z: getattr(F, name)(z, target, **kwargs))(logits)
    assert np.isnan(value) == (kwargs.get("reduction", "mean") == "mean")
    np.testing.assert_array_equal(g, 0)
    loss = nn.CrossEntropyLoss(**kwargs) if name == "cross_entropy" else nn.NLLLoss(**kwargs)
    z = tg.Tensor(logits, requires_grad=True)
    with tg.record():
        out = loss(z, target)
    out.backward()  # a training step on such a batch: parameters stay finite
    np.testing.assert_array_equal(z.grad, 0)


@pytest.mark.parametrize("name,kwargs", PADDING_ONLY, ids=[f"{n}-{k}" for n, k in PADDING_ONLY])
def test_a_batch_of_padding_only_agrees_with_torch(name, kwargs):
    torch = pytest.importorskip("torch")
    logits = np.random.default_rng(0).standard_normal((4, 3))
    target = np.full(4, -100)
    value, g = tg.value_and_grad(lambda z: getattr(F, name)(z, target, **kwargs))(logits)
    t = torch.tensor(logits, requires_grad=True)
    tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    tf = getattr(torch.nn.functional, name)
    out = tf(t if name == "cross_entropy" else torch.log_softmax(t, 1), torch.tensor(target), **tkw)
    out.backward()
    np.testing.assert_array_equal(np.isnan(value), np.isnan(out.item()))
    if not np.isnan(value):
        assert value == out.item()
    np.testing.assert_array_equal(g, t.grad.numpy())


def test_a_compiled_step_on_a_batch_of_padding_only_has_gradient_zero():
    logits = np.random.default_rng(0).standard_normal((4, 3))
    step = tg.compile(tg.value_and_grad(lambda z, t: F.cross_entropy(z, t)))
    value, g = step(logits, np.array([0, 2, -100, 1]))  # traced on an ordinary batch
    assert np.isfinite(value) and np.any(g != 0)
    value, g = step(logits, np.full(4, -100))  # the same program on padding only
    assert np.isnan(value)
    np.testing.assert_array_equal(g, 0)


def _shape_messages():
    z2, z3 = tg.Tensor(np.zeros((4, 3))), tg.Tensor(np.zeros((4, 3, 2)))
    calls = [
        lambda: F.cross_entropy(z2, np.zeros((4, 1), np.int64)),
        lambda: F.cross_entropy(z3, np.zeros(4, np.int64)),  # the old message here read "need (4,), got (4,)"
        lambda: F.cross_entropy(z3, np.zeros((4, 3), np.int64)),
        lambda: F.nll_loss(z2, np.zeros(5, np.int64)),
        lambda: F.nll_loss(tg.Tensor(np.zeros(3)), np.zeros(1, np.int64)),
        lambda: F.cross_entropy(z2, np.zeros((4, 2))),
        lambda: F.mse_loss(z2, tg.Tensor(np.zeros(3))),
        lambda: F.binary_cross_entropy_with_logits(z2, tg.Tensor(np.zeros((3, 4)))),
        lambda: F.cross_entropy(z2, np.zeros(4, np.int64), np.ones(4)),
    ]
    messages = []
    for call in calls:
        with pytest.raises(ValueError) as err:
            call()
        messages.append(str(err.value))
    return messages


def test_shape_errors_never_contradict_themselves():
    for message in _shape_messages():
        shapes = re.findall(r"\([0-9, ]*\)", message)
        assert len(shapes) >= 2, message
        assert len(set(shapes)) == len(shapes), f"the same shape named as wanted and as given: {message}"
    assert "needs a target of shape (4, 2), got (4,)" in _shape_messages()[1]


def test_loss_argument_errors():
    z = tg.Tensor(np.zeros((2, 3)))
    with pytest.raises(TypeError, match="pass reduction='sum' by keyword"):
        F.cross_entropy(z, np.array([0, 1]), "sum")
    with pytest.raises(ValueError, match=r"in \[0, 3\) or equal ignore_index \(-100\)"):
        F.nll_loss(z, np.array([0, -1]))
    with pytest.raises(ValueError, match="probabilities in"):
        F.binary_cross_entropy(tg.Tensor([1.5]), tg.Tensor([1.0]))
    with pytest.raises(ValueError, match="reduction must be one of"):
        nn.KLDivLoss(reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing must be in"):
        F.cross_entropy(z, np.array([0, 1]), label_smoothing=1.5)
    with pytest.raises(ValueError, match="target must be 1 or -1"):
        F.cosine_embedding_loss(z, z, [1, 0])


def test_stable_losses_at_extreme_logits():
    big = tg.Tensor([[1e4, -1e4], [-1e4, 1e4]], requires_grad=True)
    with tg.record():
        total = F.cross_entropy(big, np.array([1, 1]), label_smoothing=0.1) + F.binary_cross_entropy_with_logits(
            big, tg.Tensor(np.ones((2, 2))), pos_weight=tg.Tensor([3.0, 0.5])
        )
    total.backward()
    assert np.isfinite(total.item()) and np.isfinite(big.grad).all()
    p = tg.Tensor([0.0, 1.0, 0.5], requires_grad=True)
    with tg.record():
        bce = F.binary_cross_entropy(p, tg.Tensor([1.0, 0.0, 1.0]), reduction="none")
    np.testing.assert_allclose(bce.data, [100.0, 100.0, np.log(2)])  # log clamped at -100, as PyTorch
