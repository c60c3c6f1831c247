"""``MultiheadAttention`` and ``scaled_dot_product_attention`` against PyTorch (values, weights and gradients,
with copied weights) over masks (boolean and float, attention and key padding), ``batch_first``, unbatched
inputs, ``need_weights``/``average_attn_weights``, causal masking and other key/value widths; and gradcheck."""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn

F = nn.functional
SEEDS = [0, 1, 2]


def _masks(rng, batch, heads, length, source):
    bool_mask = rng.random((length, source)) < 0.3
    bool_mask[:, 0] = False  # every query keeps a key: no all-masked row (NaN in both libraries)
    padding = rng.random((batch, source)) < 0.3
    padding[:, 1] = False
    return {
        "none": {},
        "bool attn_mask": {"attn_mask": bool_mask},
        "float attn_mask (N*heads, L, S)": {"attn_mask": rng.standard_normal((batch * heads, length, source))},
        "key_padding_mask": {"key_padding_mask": padding},
        "float key_padding_mask": {"key_padding_mask": rng.standard_normal((batch, source))},
        "both": {"attn_mask": bool_mask, "key_padding_mask": padding},
    }


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mask", ["none", "bool attn_mask", "float attn_mask (N*heads, L, S)", "key_padding_mask",
                                  "float key_padding_mask", "both"])  # fmt: skip
@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_matches_torch(seed, mask, batch_first):
    torch = pytest.importorskip("torch")
    from torch_parity import compare

    rng = np.random.default_rng(seed)
    batch, length, source, e, heads = 2, 4, 5, 6, 3
    ours = nn.MultiheadAttention(e, heads, batch_first=batch_first, rng=seed)
    theirs = torch.nn.MultiheadAttention(e, heads, batch_first=batch_first).double()
    for p in ours.parameters():  # nonzero biases, so that their gradients are compared too
        p.data = rng.normal(size=p.shape) * 0.5
    kwargs = {k: torch.tensor(v) for k, v in _masks(rng, batch, heads, length, source)[mask].items()}
    shape = (lambda n: (batch, n, e)) if batch_first else (lambda n: (n, batch, e))
    q, k, v = rng.standard_normal(shape(length)), rng.standard_normal(shape(source)), rng.standard_normal(shape(source))

    def call(m, q, k, v):
        masks = kwargs if m is theirs else {key: value.numpy() for key, value in kwargs.items()}
        return m(q, k, v, **masks)

    compare(ours, theirs, q, k, v, seed=seed, call=call)
    compare(ours, theirs, q, k, v, seed=seed, call=lambda m, q, k, v: m(q, k, v, average_attn_weights=False))
    out, weights = ours(tg.Tensor(q), tg.Tensor(k), tg.Tensor(v), need_weights=False)
    assert weights is None and out.shape == q.shape


def test_multihead_attention_unbatched_causal_and_other_widths_match_torch():
    torch = pytest.importorskip("torch")
    from torch_parity import compare

    rng = np.random.default_rng(0)
    ours, theirs = nn.MultiheadAttention(4, 2, kdim=3, vdim=5, rng=0), torch.nn.MultiheadAttention(4, 2, kdim=3, vdim=5)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    q, k, v = rng.standard_normal((3, 2, 4)), rng.standard_normal((6, 2, 3)), rng.standard_normal((6, 2, 5))
    compare(ours, theirs.double(), q, k, v)
    compare(ours, theirs, q[:, 0], k[:, 0], v[:, 0])  # unbatched
    self_attn, twin = nn.MultiheadAttention(4, 1, bias=False, rng=1), torch.nn.MultiheadAttention(4, 1, bias=False)
    x = rng.standard_normal((5, 2, 4))
    causal = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    compare(
        self_attn,
        twin.double(),
        x,
        call=lambda m, x: (
            m(x, x, x, is_causal=True) if m is self_attn else m(x, x, x, attn_mask=causal, is_causal=True)
        ),
    )


def test_multihead_attention_initialisation_dropout_and_errors():
    mha = nn.MultiheadAttention(8, 2, dropout=0.5, rng=0)
    bound = np.sqrt(6 / (8 + 24))  # xavier_uniform_ of (3E, E)
    assert np.abs(mha.in_proj_weight.data).max() <= bound and (mha.in_proj_bias.data == 0).all()
    assert (mha.out_proj.bias.data == 0).all() and np.abs(mha.out_proj.weight.data).max() <= 1 / np.sqrt(8)
    x = tg.Tensor(np.random.default_rng(0).standard_normal((4, 2, 8)))
    state = mha.state_dict()
    first = mha(x, x, x)[0].data
    assert not np.array_equal(first, mha(x, x, x)[0].data)  # dropout on the weights while training
    mha.load_state_dict(state)
    np.testing.assert_array_equal(mha(x, x, x)[0].data, first)  # its generator is checkpointed
    mha.eval()
    np.testing.assert_array_equal(mha(x, x, x)[0].data, mha(x, x, x)[0].data)
    with pytest.raises(ValueError, match="num_heads=3 must divide embed_dim=8"):
        nn.MultiheadAttention(8, 3)
    with pytest.raises(ValueError, match=r"must end in 8, 8 and 8 features"):
        mha(x, x, tg.Tensor(np.zeros((4, 2, 7))))
    with pytest.raises(ValueError, match="key_padding_mask of shape"):
        mha(x, x, x, key_padding_mask=np.zeros((3, 4), dtype=bool))


def test_multihead_attention_passes_gradcheck():
    mha = nn.MultiheadAttention(4, 2, rng=0)
    rng = np.random.default_rng(1)
    q, kv = rng.standard_normal((3, 1, 4)), rng.standard_normal((2, 1, 4))
    names = [n for n, _ in mha.named_parameters()]

    def fn(q, kv, w, b, ow, ob):
        mha.in_proj_weight, mha.in_proj_bias, mha.out_proj.weight, mha.out_proj.bias = w, b, ow, ob
        out, weights = mha(q, kv, kv, attn_mask=np.array([[False, True], [False, False], [True, False]]))
        return out.sum(axis=-1) + weights.sum(axis=-1)

    assert names == ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    params = [mha.in_proj_weight.data, rng.standard_normal(12), mha.out_proj.weight.data, rng.standard_normal(4)]
    assert tg.gradcheck(fn, q, kv, *params)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", ["plain", "bool mask", "float mask", "causal", "scale", "gqa"])
def test_scaled_dot_product_attention_matches_torch(seed, case):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((2, 4, 3, 5)), rng.standard_normal((2, 4, 6, 5)), rng.standard_normal((2, 4, 6, 7))
    kwargs = {
        "plain": {},
        "bool mask": {"attn_mask": np.concatenate([np.ones((3, 1), bool), rng.random((3, 5)) < 0.6], axis=1)},
        "float mask": {"attn_mask": rng.standard_normal((2, 1, 3, 6))},
        "causal": {"is_causal": True},
        "scale": {"scale": 0.3},
        "gqa": {"enable_gqa": True},
    }[case]
    if case == "gqa":
        k, v = k[:, :2], v[:, :2]
    tensors = [tg.Tensor(a, requires_grad=True) for a in (q, k, v)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    cot = rng.standard_normal((2, 4, 3, 7))
    with tg.record():
        out = F.scaled_dot_product_attention(*tensors, **kwargs)
        s = (out * cot).sum()
    s.backward()
    t_kwargs = {key: torch.tensor(val) if isinstance(val, np.ndarray) else val for key, val in kwargs.items()}
    t_out = torch.nn.functional.scaled_dot_product_attention(*theirs, **t_kwargs)
    (t_out * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(out.data, t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    for ours, t in zip(tensors, theirs):
        np.testing.assert_allclose(ours.grad, t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_scaled_dot_product_attention_dropout_gradcheck_and_errors():
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((1, 3, 2)), rng.standard_normal((1, 4, 2)), rng.standard_normal((1, 4, 2))
    a = F.scaled_dot_product_attention(tg.Tensor(q), tg.Tensor(k), tg.Tensor(v), dropout_p=0.5, rng=7)
    b = F.scaled_dot_product_attention(tg.Tensor(q), tg.Tensor(k), tg.Tensor(v), dropout_p=0.5, rng=7)
    c = F.scaled_dot_product_attention(tg.Tensor(q), tg.Tensor(k), tg.Tensor(v))
    np.testing.assert_array_equal(a.data, b.data)
    assert not np.allclose(a.data, c.data)
    mask = np.array([[True, False, True, True], [True, True, False, False], [False, True, True, True]])
    assert tg.gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), q, k, v)
    assert tg.gradgradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v)
    with pytest.raises(ValueError, match="not both"):
        F.scaled_dot_product_attention(tg.Tensor(q), tg.Tensor(k), tg.Tensor(v), attn_mask=mask, is_causal=True)
    with pytest.raises(ValueError, match="must be"):
        F.scaled_dot_product_attention(tg.Tensor(q), tg.Tensor(k), tg.Tensor(v[:, :3]))
