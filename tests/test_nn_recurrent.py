"""RNN, GRU, LSTM and their cells against ``torch.nn`` with copied weights (names, gate order and shapes must be
PyTorch's for ``load_state_dict(strict=True)`` to take them), over layers, directions, ``batch_first``,
unbatched inputs and initial states; and ``tg.gradcheck`` on small ones."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn

SEEDS = [0, 1, 2]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("RNNCell", {}),
        ("RNNCell", {"nonlinearity": "relu", "bias": False}),
        ("GRUCell", {}),
        ("GRUCell", {"bias": False}),
        ("LSTMCell", {}),
    ],
)
def test_cells_match_torch(name, kwargs, seed):
    torch = pytest.importorskip("torch")
    from torch_parity import compare

    rng = np.random.default_rng(seed)
    x, h = rng.standard_normal((4, 3)), rng.standard_normal((4, 5))
    ours, theirs = getattr(nn, name)(3, 5, rng=seed, **kwargs), getattr(torch.nn, name)(3, 5, **kwargs).double()
    if name == "LSTMCell":
        c = rng.standard_normal((4, 5))
        compare(ours, theirs, x, h, c, seed=seed, call=lambda m, x, h, c: m(x, (h, c)))
        compare(ours, theirs, x[0], seed=seed)  # unbatched, zero state
    else:
        compare(ours, theirs, x, h, seed=seed)
        compare(ours, theirs, x[0], seed=seed)


RNN_CASES = [
    ("RNN", {}),
    ("RNN", {"num_layers": 2, "nonlinearity": "relu", "batch_first": True}),
    ("RNN", {"bidirectional": True, "bias": False}),
    ("GRU", {}),
    ("GRU", {"num_layers": 2, "bidirectional": True}),
    ("GRU", {"batch_first": True, "bias": False}),
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2, "batch_first": True}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name,kwargs", RNN_CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(RNN_CASES)])
def test_sequence_layers_match_torch_with_and_without_initial_state(name, kwargs, seed):
    torch = pytest.importorskip("torch")
    from torch_parity import compare

    rng = np.random.default_rng(seed)
    ours, theirs = getattr(nn, name)(3, 4, rng=seed, **kwargs), getattr(torch.nn, name)(3, 4, **kwargs).double()
    assert list(ours.state_dict()) == list(theirs.state_dict())  # the same names, in the same order
    length, batch = 5, 2
    x = rng.standard_normal((batch, length, 3) if kwargs.get("batch_first") else (length, batch, 3))
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    h0 = rng.standard_normal((layers, batch, 4))
    compare(ours, theirs, x, seed=seed)  # zero initial state
    if name == "LSTM":
        c0 = rng.standard_normal((layers, batch, 4))
        compare(ours, theirs, x, h0, c0, seed=seed, call=lambda m, x, h, c: m(x, (h, c)))
    else:
        compare(ours, theirs, x, h0, seed=seed)
    unbatched = x[0] if kwargs.get("batch_first") else x[:, 0]
    compare(ours, theirs, unbatched, seed=seed)


def test_recurrent_initialisation_is_pytorch_s_and_seeded():
    lstm = nn.LSTM(10, 25, num_layers=2, bidirectional=True, rng=0)
    names = [n for n, _ in lstm.named_parameters()]
    assert names[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert names[4] == "weight_ih_l0_reverse" and lstm.weight_ih_l1.shape == (100, 50)
    bound = 1 / np.sqrt(25)
    for p in lstm.parameters():
        assert np.abs(p.data).max() <= bound
    assert abs(np.concatenate([p.data.ravel() for p in lstm.parameters()]).std() - bound / np.sqrt(3)) < 0.01
    np.testing.assert_array_equal(nn.LSTM(10, 25, rng=0).weight_ih_l0.data, nn.LSTM(10, 25, rng=0).weight_ih_l0.data)
    assert nn.GRUCell(3, 4).weight_hh.shape == (12, 4) and nn.RNNCell(3, 4).weight_ih.shape == (4, 3)


@pytest.mark.parametrize("name", ["RNN", "GRU", "LSTM"])
def test_sequence_layers_pass_gradcheck(name):
    layer = getattr(nn, name)(2, 2, bidirectional=True, rng=0)
    names = [n for n, _ in layer.named_parameters()]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 1, 2))

    def fn(x, *params):
        for n, p in zip(names, params):
            setattr(layer, n, p)
        out, state = layer(x)
        return out.sum(axis=-1) + (state[0] if name == "LSTM" else state).sum()

    assert tg.gradcheck(fn, x, *[p.data for p in layer.parameters()])
    cell = nn.LSTMCell(2, 3, rng=1)
    assert tg.gradgradcheck(lambda x: cell(x)[0] * cell(x)[1], rng.standard_normal((2, 2)))


@pytest.mark.parametrize("name", ["RNNCell", "GRUCell", "LSTMCell"])
def test_cells_pass_gradcheck_in_input_state_and_weights(name):
    cell = getattr(nn, name)(3, 2, rng=0)
    rng = np.random.default_rng(0)
    x, h = rng.standard_normal((2, 3)), rng.standard_normal((2, 2))

    def fn(x, h, w_ih, w_hh, b_ih, b_hh):
        cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh = w_ih, w_hh, b_ih, b_hh
        out = cell(x, (h, h * 0.5)) if name == "LSTMCell" else cell(x, h)
        return out[0] + out[1] if name == "LSTMCell" else out

    params = [p.data for p in (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)]
    assert tg.gradcheck(fn, x, h, *params)


def test_dropout_between_layers_is_seeded_and_checkpointed():
    x = tg.Tensor(np.random.default_rng(0).standard_normal((6, 2, 3)))
    a, b = nn.GRU(3, 4, num_layers=2, dropout=0.5, rng=0), nn.GRU(3, 4, num_layers=2, dropout=0.5, rng=0)
    np.testing.assert_array_equal(a(x)[0].data, b(x)[0].data)  # the same masks from the same seed
    state = a.state_dict()
    assert "_extra_state" in state
    first = a(x)[0].data
    b.load_state_dict(state)
    np.testing.assert_array_equal(b(x)[0].data, first)  # the restored generator draws the same masks
    assert not np.array_equal(first, a(x)[0].data)  # and each call draws new ones
    evals = a.eval()(x)[0].data, a(x)[0].data
    np.testing.assert_array_equal(*evals)  # no dropout in evaluation


def test_recurrent_errors_name_the_layer_and_the_shapes():
    lstm = nn.LSTM(3, 4, num_layers=2)
    with pytest.raises(ValueError, match=r"LSTM: input must be \(L, N, 3\)"):
        lstm(tg.Tensor(np.zeros((5, 2, 4))))
    with pytest.raises(ValueError, match=r"initial state must have shape \(2, 2, 4\), got \(1, 2, 4\)"):
        lstm(tg.Tensor(np.zeros((5, 2, 3))), (tg.Tensor(np.zeros((1, 2, 4))), tg.Tensor(np.zeros((1, 2, 4)))))
    with pytest.raises(ValueError, match="hx must be a pair"):
        lstm(tg.Tensor(np.zeros((5, 2, 3))), tg.Tensor(np.zeros((2, 2, 4))))
    with pytest.raises(ValueError, match=r"GRUCell: hidden state must have shape \(2, 4\)"):
        nn.GRUCell(3, 4)(tg.Tensor(np.zeros((2, 3))), tg.Tensor(np.zeros((3, 4))))
    with pytest.raises(NotImplementedError, match="proj_size"):
        nn.LSTM(3, 4, proj_size=2)
