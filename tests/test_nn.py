"""nn: parameter discovery, modes, state dicts, layers, and losses (values, stability, exact gradients)."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn

rng = np.random.default_rng(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 4, rng=0), nn.Tanh(), nn.Dropout(0.5, rng=1))
        self.heads = [nn.Linear(4, 2, rng=2), nn.Linear(4, 1, rng=3)]
        self.temperature = tg.Tensor(1.0, requires_grad=True)
        self.constant = tg.Tensor(np.ones(3))  # no gradient: not a parameter
        self.alias = self.heads[0]  # the same module twice: its parameters count once

    def forward(self, x):
        h = self.body(x)
        return self.heads[0](h) * self.temperature, self.heads[1](h)


def test_parameters_and_submodules_are_found_by_attribute_each_once():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == [  # a module's own parameters first, then each submodule's (PyTorch's order)
        "temperature",
        "body.0.weight",
        "body.0.bias",
        "heads.0.weight",
        "heads.0.bias",
        "heads.1.weight",
        "heads.1.bias",
    ]
    assert len(net.parameters()) == 7
    assert [type(m).__name__ for m in net.modules()].count("Linear") == 3


def test_train_and_eval_reach_every_submodule():
    net = Net().eval()
    assert not any(m.training for m in net.modules())
    assert all(m.training for m in net.train().modules())


def test_gradients_reach_every_parameter_and_zero_grad_clears_them():
    net = Net()
    with tg.tape.record():
        a, b = net(tg.Tensor(rng.normal(size=(5, 3))))
        loss = a.sum() + b.sum()
    loss.backward()
    assert all(p.grad is not None and p.grad.shape == p.shape for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_linear_initialisation_is_seeded_and_bounded():
    a, b, c = nn.Linear(25, 40, rng=7), nn.Linear(25, 40, rng=7), nn.Linear(25, 40, rng=8)
    np.testing.assert_array_equal(a.weight.data, b.weight.data)
    assert not np.array_equal(a.weight.data, c.weight.data)
    assert a.weight.shape == (40, 25) and a.bias.shape == (40,)
    assert np.abs(a.weight.data).max() <= 0.2 and np.abs(a.weight.data).max() > 0.18  # U(-1/5, 1/5)
    assert abs(a.weight.data.std() - 0.2 / np.sqrt(3)) < 0.01
    assert nn.Linear(2, 2, bias=False).bias is None
    assert nn.Linear(2, 2, rng=0, dtype=np.float32).weight.dtype == np.float32


def test_linear_computes_x_wt_plus_b_and_rejects_wrong_widths():
    layer = nn.Linear(3, 2, rng=0)
    x = rng.normal(size=(4, 3))
    np.testing.assert_allclose(layer(tg.Tensor(x)).data, x @ layer.weight.data.T + layer.bias.data)
    with pytest.raises(ValueError, match=r"Linear\(3, 2\): input has 5 features"):
        layer(tg.Tensor(np.ones((4, 5))))


def test_linear_gradients_are_exact():
    layer = nn.Linear(3, 2, rng=0)
    x = rng.normal(size=(4, 3))

    def fn(w, b):
        return nn.functional.linear(tg.Tensor(x), w, b)

    assert tg.gradcheck(fn, layer.weight.data, layer.bias.data)


@pytest.mark.parametrize("shape", [(4, 3), (2, 4, 3), (3,)])
def test_a_linear_layer_is_one_entry_of_the_tape_with_the_compositions_values_and_gradients(shape):
    # x @ W.T + b as one op (the bias added into the product's own buffer), where the composition records a
    # transpose, a product and a sum; without a bias it is the product alone
    layer, x = nn.Linear(3, 2, rng=0), rng.normal(size=shape)
    with tg.record() as t:
        y = layer(tg.Tensor(x))
        ops = [e.op for e in t.entries]
        (y**2).sum().backward()
    assert ops == ["linear"]
    np.testing.assert_allclose(y.data, x @ layer.weight.data.T + layer.bias.data, rtol=1e-12)
    g = (2 * y.data).reshape(-1, 2)
    np.testing.assert_allclose(layer.weight.grad, g.T @ x.reshape(-1, 3), rtol=1e-12)
    np.testing.assert_allclose(layer.bias.grad, g.sum(axis=0), rtol=1e-12)
    assert layer.weight.grad.strides == layer.weight.data.strides
    with tg.record() as t:
        nn.Linear(3, 2, bias=False, rng=0)(tg.Tensor(x))
    assert "linear" not in [e.op for e in t.entries]


@pytest.mark.parametrize(
    "x_shape, w_shape, b_shape",
    [
        ((5, 4), (3, 4), (1,)),
        ((5, 4), (3, 4), (5, 3)),
        ((2, 5, 4), (3, 4), (1, 3)),
        ((2, 3, 0), (4, 0), (4,)),
        ((2, 3, 0), (4, 0), (1,)),
    ],
)
def test_linear_gives_every_input_a_gradient_of_its_own_shape(x_shape, w_shape, b_shape):
    # a bias that broadcasts ((1,), (batch, out)) is the composition's, summed back to its shape (PyTorch's);
    # only a bias of shape (out,) is the one op. No input features (in 0) is the bias alone, at any rank of x
    arrays = [rng.normal(size=s) for s in (x_shape, w_shape, b_shape)]

    def loss(x, w, b):
        return (nn.functional.linear(x, w, b) ** 2).sum()

    grads = tg.grad(loss, argnums=(0, 1, 2))(*arrays)
    assert [np.shape(g) for g in grads] == [x_shape, w_shape, b_shape]
    assert tg.gradcheck(loss, *arrays)


def test_a_linear_layer_keeps_numpys_promotion_of_a_wider_bias():
    # float32 input and weight, float64 bias: float64 out, as x @ W.T + b gives (not the bias cast into float32)
    x, w = tg.Tensor(np.ones((2, 3), np.float32)), tg.Tensor(np.ones((4, 3), np.float32))
    out = nn.functional.linear(x, w, tg.Tensor(np.full(4, 1e-9)))
    assert out.dtype == np.float64 and out.data[0, 0] == 3.0 + 1e-9


def test_state_dict_round_trip_copies_and_restores():
    a, b = Net(), Net()
    for p in b.parameters():
        p.data = p.data + 1.0
    state = a.state_dict()
    assert set(state) == {n for n, _ in a.named_parameters()} | {"body.2._extra_state"}
    b.load_state_dict(state)
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(p.data, q.data)
        assert p.data is not q.data
    state["temperature"][...] = 99.0  # the state dict holds copies
    assert a.temperature.data == 1.0 and b.temperature.data == 1.0


def test_load_state_dict_names_every_problem_and_changes_nothing():
    net = Net()
    before = {n: p.data.copy() for n, p in net.named_parameters()}
    state = Net().state_dict()
    for p in Net().parameters():
        p.data += 5
    state.pop("heads.1.bias")
    state["extra.weight"] = np.zeros(2)
    with pytest.raises(KeyError, match=r"missing keys \['heads.1.bias'\] and unexpected keys \['extra.weight'\]"):
        net.load_state_dict(state)
    state = {k: v + 1 if not k.endswith("_extra_state") else v for k, v in Net().state_dict().items()}
    state["body.0.weight"] = np.zeros((3, 4))
    with pytest.raises(ValueError, match=r"body.0.weight has shape \(3, 4\) in the state dict but \(4, 3\)"):
        net.load_state_dict(state)
    bad_rng = Net().state_dict()
    bad_rng["body.2._extra_state"] = {"bit_generator": "MT19937", "state": {}}
    with pytest.raises(ValueError, match="cannot restore body.2._extra_state"):
        net.load_state_dict(bad_rng)
    for n, p in net.named_parameters():
        np.testing.assert_array_equal(p.data, before[n])
    partial = {"temperature": np.array(3.0)}
    net.load_state_dict(partial, strict=False)
    assert net.temperature.data == 3.0


def test_sequential_indexing_and_errors():
    model = nn.Sequential(nn.ReLU(), nn.Sigmoid())
    assert isinstance(model[-1], nn.Sigmoid) and len(model) == 2
    with pytest.raises(IndexError):
        model[2]
    with pytest.raises(TypeError, match="item 0 is a function"):
        nn.Sequential(lambda x: x)
    assert "Sigmoid" in repr(model)


def test_activations_compute_their_functions():
    x = rng.normal(size=(3, 4))
    np.testing.assert_allclose(nn.ReLU()(tg.Tensor(x)).data, np.maximum(x, 0))
    np.testing.assert_allclose(nn.Tanh()(tg.Tensor(x)).data, np.tanh(x))
    np.testing.assert_allclose(nn.Sigmoid()(tg.Tensor(x)).data, 1 / (1 + np.exp(-x)))


def test_dropout_is_inverted_seeded_and_off_in_eval():
    x = tg.Tensor(np.ones((200, 50)))
    drop = nn.Dropout(0.3, rng=0)
    y = drop(x).data
    np.testing.assert_allclose(np.unique(y), [0.0, 1 / 0.7])
    assert abs((y == 0).mean() - 0.3) < 0.02
    assert abs(y.mean() - 1.0) < 0.03  # expectation kept
    np.testing.assert_array_equal(nn.Dropout(0.3, rng=0)(x).data, y)
    assert drop.eval()(x) is x
    assert nn.Dropout(0.0, rng=0)(x) is x
    assert not nn.Dropout(1.0, rng=0)(x).data.any()
    with pytest.raises(ValueError, match="p must be in"):
        nn.Dropout(1.5)


def test_dropout_state_restores_its_masks():
    a = nn.Dropout(0.5, rng=0)
    a(tg.Tensor(np.ones(10)))
    state = a.state_dict()
    want = a(tg.Tensor(np.ones(10))).data
    b = nn.Dropout(0.5, rng=123)
    b.load_state_dict(state)
    np.testing.assert_array_equal(b(tg.Tensor(np.ones(10))).data, want)


def test_dropout_gradient_is_the_mask():
    x = tg.Tensor(np.ones(1000), requires_grad=True)
    drop = nn.Dropout(0.25, rng=0)
    with tg.tape.record():
        y = drop(x)
        s = y.sum()
    s.backward()
    np.testing.assert_array_equal(x.grad, y.data)  # x is ones: the output is the scaled mask


# -- losses ---------------------------------------------------------------------------------------------
REDUCTIONS = ["mean", "sum", "none"]


def _reduce(v, reduction):
    return v.mean() if reduction == "mean" else v.sum() if reduction == "sum" else v


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mse_loss_value_and_gradient(reduction):
    x, t = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    np.testing.assert_allclose(
        nn.mse_loss(tg.Tensor(x), tg.Tensor(t), reduction).data, _reduce((x - t) ** 2, reduction)
    )
    assert tg.gradcheck(lambda a, b: nn.mse_loss(a, b, reduction), x, t)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_value_and_gradient(reduction):
    logits, labels = rng.normal(size=(5, 4)), np.array([0, 3, 1, 1, 2])
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    want = _reduce(-logp[np.arange(5), labels], reduction)
    np.testing.assert_allclose(nn.cross_entropy(tg.Tensor(logits), labels, reduction=reduction).data, want)
    assert tg.gradcheck(lambda z: nn.cross_entropy(z, labels, reduction=reduction), logits)


def test_cross_entropy_gradient_is_softmax_minus_one_hot_and_second_order_works():
    logits, labels = rng.normal(size=(3, 4)), np.array([2, 0, 3])
    z = tg.Tensor(logits, requires_grad=True)
    with tg.tape.record():
        loss = nn.cross_entropy(z, labels, reduction="sum")
    loss.backward()
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(z.grad, p - np.eye(4)[labels])
    assert tg.gradgradcheck(lambda z: nn.cross_entropy(z, labels), logits)


def test_cross_entropy_is_stable_and_takes_a_single_example():
    big = tg.Tensor([[1e4, 0.0], [0.0, -1e4]])
    out = nn.cross_entropy(big, np.array([1, 1]), reduction="none").data
    np.testing.assert_allclose(out, [1e4, 1e4])
    single = nn.cross_entropy(tg.Tensor([1.0, 2.0, 3.0]), 2)
    assert single.shape == () and single.item() == pytest.approx(np.log(np.exp([1, 2, 3]).sum()) - 3)


def test_cross_entropy_refuses_bad_targets():
    z = tg.Tensor(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"class probabilities and needs the input's shape \(2, 3\), got \(2,\)"):
        nn.cross_entropy(z, np.array([0.0, 1.0]))  # floats are probabilities: they need the input's shape
    with pytest.raises(ValueError, match=r"in \[0, 3\)"):
        nn.cross_entropy(z, np.array([0, 3]))
    with pytest.raises(ValueError, match=r"needs a target of shape \(2,\), got \(3,\)"):
        nn.cross_entropy(z, np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="reduction must be one of"):
        nn.cross_entropy(z, np.array([0, 1]), reduction="avg")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits_value_and_gradient(reduction):
    x, t = rng.normal(size=(6,)) * 3, rng.uniform(size=(6,))
    s = 1 / (1 + np.exp(-x))
    want = _reduce(-(t * np.log(s) + (1 - t) * np.log(1 - s)), reduction)
    np.testing.assert_allclose(
        nn.binary_cross_entropy_with_logits(tg.Tensor(x), tg.Tensor(t), reduction=reduction).data, want
    )
    assert tg.gradcheck(lambda a, b: nn.binary_cross_entropy_with_logits(a, b, reduction=reduction), x, t)


def test_binary_cross_entropy_with_logits_is_stable_and_exact_at_zero():
    x = tg.Tensor([-800.0, 0.0, 800.0], requires_grad=True)
    t = tg.Tensor([1.0, 0.25, 0.0])
    with tg.tape.record():
        loss = nn.binary_cross_entropy_with_logits(x, t, reduction="none")
        total = loss.sum()
    np.testing.assert_allclose(loss.data, [800.0, np.log(2.0), 800.0])
    total.backward()
    np.testing.assert_allclose(x.grad, [-1.0, 0.25, 1.0])  # sigmoid(x) - t, also at x = 0


def test_losses_match_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    logits, labels = rng.normal(size=(6, 5)), rng.integers(0, 5, size=6)
    x, t = rng.normal(size=(6,)), rng.uniform(size=(6,))
    for reduction in REDUCTIONS:
        np.testing.assert_allclose(
            nn.cross_entropy(tg.Tensor(logits), labels, reduction=reduction).data,
            F.cross_entropy(torch.tensor(logits), torch.tensor(labels), reduction=reduction).numpy(),
        )
        np.testing.assert_allclose(
            nn.binary_cross_entropy_with_logits(tg.Tensor(x), tg.Tensor(t), reduction=reduction).data,
            F.binary_cross_entropy_with_logits(torch.tensor(x), torch.tensor(t), reduction=reduction).numpy(),
        )
        np.testing.assert_allclose(
            nn.mse_loss(tg.Tensor(x), tg.Tensor(t), reduction).data,
            F.mse_loss(torch.tensor(x), torch.tensor(t), reduction=reduction).numpy(),
        )


def test_mse_loss_refuses_silent_broadcasting():
    with pytest.raises(ValueError, match=r"input shape \(4, 1\) and target shape \(4,\)"):
        nn.mse_loss(tg.Tensor(np.zeros((4, 1))), tg.Tensor(np.zeros(4)))


def test_a_small_network_learns_xor():
    x = tg.Tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    y = np.array([0, 1, 1, 0])
    model = nn.Sequential(nn.Linear(2, 16, rng=0), nn.Tanh(), nn.Linear(16, 2, rng=1))
    opt = tg.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(150):
        opt.zero_grad()
        with tg.tape.record():
            loss = nn.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    assert loss.item() < 0.05
    assert (model(x).data.argmax(axis=1) == y).all()


def test_a_training_step_leaves_nothing_recorded_alive():
    import gc
    import weakref

    model = nn.Sequential(nn.Linear(4, 32, rng=0), nn.ReLU(), nn.Dropout(0.5, rng=1), nn.Linear(32, 3, rng=2))
    opt = tg.optim.Adam(model.parameters(), lr=0.01)
    x, y = tg.Tensor(rng.normal(size=(64, 4))), rng.integers(0, 3, size=64)
    history, tapes = [], []
    for _ in range(5):
        opt.zero_grad()
        with tg.tape.record() as t:
            loss = nn.cross_entropy(model(x), y)
        assert t.saved_bytes() > 64 * 32 * 8  # the hidden activations are on the tape...
        loss.backward()
        opt.step()
        assert t.saved_bytes() == 0 and len(t) == 0  # ...and gone after backward
        history.append(loss)  # keeping every loss keeps no graph
        tapes.append(weakref.ref(t))
        del t
    gc.collect()
    assert all(ref() is None for ref in tapes)


@pytest.mark.parametrize(
    "loss",
    [
        lambda z: nn.mse_loss(z, np.zeros((4, 3), dtype=np.float32)),
        lambda z: nn.cross_entropy(z, np.array([0, 1, 2, 0])),
        lambda z: nn.binary_cross_entropy_with_logits(z, np.ones((4, 3), dtype=np.float32)),
    ],
)
def test_float32_stays_float32_through_losses_and_gradients(loss):
    z = tg.Tensor(rng.normal(size=(4, 3)).astype(np.float32), requires_grad=True)
    with tg.tape.record():
        out = loss(z)
    out.backward()
    assert out.dtype == np.float32 and z.grad.dtype == np.float32
