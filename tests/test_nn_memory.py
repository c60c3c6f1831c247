"""The layers keep only what their rules read, in bytes (``t.saved_bytes()`` counts each saved array once), and a
training loop that keeps its losses (``history.append(loss)``) retains almost nothing per step (tracemalloc,
as tests/test_memory.py measures it)."""

import gc
import tracemalloc
import weakref

import numpy as np

import tapegrad as tg
from tapegrad import nn

rng = np.random.default_rng(0)


def test_a_conv2d_layer_saves_its_input_and_weight_only():
    conv = nn.Conv2d(3, 8, 5, padding=2, rng=0)
    x = tg.Tensor(rng.standard_normal((16, 3, 12, 12)), requires_grad=True)
    with tg.record() as t:
        y = conv(x)
    # never the columns (25 times the input) or the output: the rules rebuild the columns from the input
    assert [e.op for e in t.entries] == ["conv", "reshape", "add"]
    assert t.saved_bytes() == x.data.nbytes + conv.weight.data.nbytes
    y.backward(np.ones(y.shape))
    assert t.saved_bytes() == 0 and x.grad.shape == x.shape


def test_pooling_saves_the_input_at_most_and_average_pooling_nothing():
    x = tg.Tensor(rng.standard_normal((4, 3, 8, 8)), requires_grad=True)
    with tg.record() as t:
        y = tg.max_pool2d(x, 2)  # (the outputs are held: an entry whose output is dropped frees its values)
    assert t.saved_bytes() == x.data.nbytes and y.requires_grad
    with tg.record() as t:
        y = tg.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False)
        z = tg.adaptive_avg_pool2d(x, (3, 5))
    assert t.saved_bytes() == 0 and len(t) == 2 and y.requires_grad and z.requires_grad


def test_layer_norm_saves_its_input_and_weight_only():
    ln = nn.LayerNorm(64)
    x = tg.Tensor(rng.standard_normal((32, 10, 64)), requires_grad=True)
    with tg.record() as t:
        y = ln(x)
    assert y.shape == x.shape and [e.op for e in t.entries] == [
        "standardize"
    ]  # no mean, centred copy or normalised copy
    assert t.saved_bytes() == x.data.nbytes + ln.weight.data.nbytes


def test_batch_norm_saves_its_input_and_weight_in_training_and_evaluation():
    bn = nn.BatchNorm2d(4)
    x = tg.Tensor(rng.standard_normal((8, 4, 5, 5)), requires_grad=True)
    with tg.record() as t:
        y = bn(x)
    assert t.saved_bytes() == x.data.nbytes + bn.weight.data.nbytes
    bn.eval()
    with tg.record() as t:
        y = bn(x)
    # x * scale + shift with scale = weight * rstd, shift = -mean * scale + bias: besides x, per-channel vectors
    channel = 4 * 8  # (the weight, rstd, the scale and the negated running mean)
    assert t.saved_bytes() == x.data.nbytes + 4 * channel and y.requires_grad


def test_one_lstm_step_saves_the_state_the_gates_and_tanh_of_the_cell_only():
    n, inputs, hidden = 16, 10, 32
    cell = nn.LSTMCell(inputs, hidden, rng=0)
    x, h, c = (tg.Tensor(rng.standard_normal(s), requires_grad=True) for s in ((n, inputs), (n, hidden), (n, hidden)))
    with tg.record() as t:
        h2, c2 = cell(x, (h, c))
    state = n * hidden * 8
    expected = (
        x.data.nbytes
        + cell.weight_ih.data.nbytes  # x @ W_ih^T: both operands
        + h.data.nbytes
        + cell.weight_hh.data.nbytes  # h @ W_hh^T
        + 4 * state  # the gates i, f, o (sigmoid outputs) and g (tanh output)
        + c.data.nbytes  # f * c
        + state  # tanh(c'), for h' = o * tanh(c')
    )
    assert t.saved_bytes() == expected  # nothing else: no pre-activations, no concatenated gates, no copies
    t.backward(h2, np.ones(h2.shape))
    assert all(v.grad is not None for v in (x, h, c))


def _cnn():
    gen = np.random.default_rng(0)
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, rng=gen),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(4, 8, 3, rng=gen),
        nn.GELU(),
        nn.Flatten(),
        nn.Dropout(0.2, rng=1),
        nn.Linear(8 * 2 * 2, 10, rng=gen),
    )


def test_keeping_every_loss_of_a_cnn_retains_at_most_512_bytes_a_step():
    model = _cnn()
    opt = tg.optim.Adam(model.parameters(), lr=1e-3)
    data = [(tg.Tensor(rng.standard_normal((8, 1, 8, 8))), rng.integers(0, 10, 8)) for _ in range(25)]
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    tapes = []

    def step(x, y):
        opt.zero_grad()
        with tg.record() as t:
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        tapes.append(weakref.ref(t))
        return loss

    for x, y in data[:5]:  # warm-up: Adam's moments, NumPy's caches
        step(x, y)
    history = []
    tracemalloc.start()
    try:
        for x, y in data[5:]:
            history.append(step(x, y))
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0]
        losses = [loss.item() for loss in history]
        del history  # what goes now is exactly what the kept losses held (caches stay)
        gc.collect()
        freed = kept - tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(losses) == 20 and np.isfinite(losses).all()
    assert all(ref() is None for ref in tapes)  # every step's tape, with its saved activations, is gone
    assert 0 < freed / 20 <= 512, f"{freed / 20:.0f} bytes retained per kept loss"
