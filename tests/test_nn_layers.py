"""Convolution, pooling, shape, embedding, normalisation and activation layers, containers, buffers and init.

Each layer: forward and backward against ``torch.nn`` with copied weights (skipped without torch, over several
seeds; the copy is ``load_state_dict(strict=True)``, so names and shapes are PyTorch's), and ``tg.gradcheck``
(always). Initialisation is checked by its bounds and spread, seeded generators by reproducibility.
"""

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn

SEEDS = [0, 1, 2]
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same':UserWarning")  # torch's, about its own copy


def _torch():
    torch = pytest.importorskip("torch")
    return torch


def _parity(make_ours, make_theirs, shape, seed, **kw):
    from torch_parity import compare

    torch = _torch()
    torch.manual_seed(seed)
    x = np.random.default_rng(seed).standard_normal(shape)
    return compare(make_ours(seed), make_theirs(torch).double(), x, seed=seed, **kw)


# -- convolution ----------------------------------------------------------------------------------------------
CONV_CASES = [
    ("Conv2d", dict(in_channels=3, out_channels=4, kernel_size=3), (2, 3, 7, 6)),
    ("Conv2d", dict(in_channels=4, out_channels=6, kernel_size=(3, 2), stride=2, padding=1, groups=2), (2, 4, 7, 8)),
    (
        "Conv2d",
        dict(in_channels=2, out_channels=3, kernel_size=4, padding="same", dilation=(1, 2), bias=False),
        (1, 2, 6, 9),
    ),
    ("Conv2d", dict(in_channels=2, out_channels=2, kernel_size=3, padding=2, padding_mode="reflect"), (2, 2, 5, 5)),
    ("Conv2d", dict(in_channels=2, out_channels=2, kernel_size=3, padding=1, padding_mode="circular"), (2, 2, 4, 5)),
    (
        "Conv2d",
        dict(in_channels=2, out_channels=2, kernel_size=(2, 3), padding="same", padding_mode="replicate"),
        (1, 2, 4, 5),
    ),
    ("Conv2d", dict(in_channels=3, out_channels=2, kernel_size=3, padding="valid"), (3, 6, 6)),  # unbatched
    ("Conv1d", dict(in_channels=3, out_channels=4, kernel_size=3, stride=2, padding=1), (2, 3, 9)),
    ("Conv1d", dict(in_channels=4, out_channels=4, kernel_size=2, dilation=3, groups=4, padding="same"), (2, 4, 8)),
    (
        "ConvTranspose2d",
        dict(in_channels=3, out_channels=4, kernel_size=3, stride=2, padding=1, output_padding=1),
        (2, 3, 4, 5),
    ),
    (
        "ConvTranspose2d",
        dict(in_channels=4, out_channels=2, kernel_size=(2, 3), stride=(1, 2), groups=2, dilation=2),
        (1, 4, 3, 3),
    ),
    ("ConvTranspose1d", dict(in_channels=2, out_channels=3, kernel_size=4, stride=2, padding=1), (2, 2, 5)),
]


@pytest.mark.parametrize("name,kwargs,shape", CONV_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CONV_CASES)])
@pytest.mark.parametrize("seed", SEEDS)
def test_convolutions_match_torch(name, kwargs, shape, seed):
    _parity(
        lambda s: getattr(nn, name)(**kwargs, rng=s),
        lambda torch: getattr(torch.nn, name)(**kwargs),
        shape,
        seed,
    )


@pytest.mark.parametrize("name,kwargs,shape", CONV_CASES[:2] + CONV_CASES[7:8] + CONV_CASES[9:10])
def test_convolutions_pass_gradcheck(name, kwargs, shape):
    layer = getattr(nn, name)(**kwargs, rng=0)
    small = shape[:-1] + (min(shape[-1], 6),)
    x = np.random.default_rng(0).standard_normal(small)

    def fn(x, w, *b):
        layer.weight, layer.bias = w, (b[0] if b else None)
        return layer(x)

    params = [layer.weight.data] + ([layer.bias.data] if layer.bias is not None else [])
    assert tg.gradcheck(fn, x, *params)


def test_conv_transpose_output_size_picks_the_output_padding():
    torch = _torch()
    up = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, rng=0)
    theirs = torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).double()
    from torch_parity import copy_into

    copy_into(up, theirs)
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4))
    for size in [(7, 7), (8, 8), (7, 8)]:
        got = up(tg.Tensor(x), output_size=size)
        want = theirs(torch.tensor(x), output_size=size)
        np.testing.assert_allclose(got.data, want.detach().numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match=r"not in the reachable range \[7, 8\]"):
        up(tg.Tensor(x), output_size=(9, 9))


def test_convolution_initialisation_is_pytorch_s_and_seeded():
    conv = nn.Conv2d(6, 16, 5, rng=0)
    bound = 1 / np.sqrt(6 * 25)
    assert conv.weight.shape == (16, 6, 5, 5) and conv.bias.shape == (16,)
    assert np.abs(conv.weight.data).max() <= bound and np.abs(conv.weight.data).max() > 0.95 * bound
    assert abs(conv.weight.data.std() - bound / np.sqrt(3)) < 0.05 * bound
    np.testing.assert_array_equal(nn.Conv2d(6, 16, 5, rng=0).weight.data, conv.weight.data)
    assert not np.array_equal(nn.Conv2d(6, 16, 5, rng=1).weight.data, conv.weight.data)
    up = nn.ConvTranspose2d(8, 4, 3, groups=2, rng=0)  # fan_in from weight.shape[1] = 4 / 2, as PyTorch
    assert up.weight.shape == (8, 2, 3, 3) and np.abs(up.weight.data).max() <= 1 / np.sqrt(2 * 9)
    assert nn.Conv1d(2, 2, 3, dtype=np.float32).weight.dtype == np.float32


def test_convolution_errors_name_the_layer_and_the_shapes():
    with pytest.raises(ValueError, match="groups=2 must divide in_channels=3"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' needs stride 1"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")
    conv = nn.Conv2d(3, 4, 3)
    with pytest.raises(ValueError, match=r"conv2d: the input has 2 channels but the weight of shape \(4, 3, 3, 3\)"):
        conv(tg.Tensor(np.zeros((1, 2, 5, 5))))
    with pytest.raises(ValueError, match=r"conv2d: input must have 4 dimensions"):
        conv(tg.Tensor(np.zeros((5, 5))))
    with pytest.raises(ValueError, match=r"smaller than the kernel \(3, 3\)"):
        conv(tg.Tensor(np.zeros((1, 3, 2, 5))))


# -- pooling, shape, embedding -------------------------------------------------------------------------------
POOL_CASES = [
    ("MaxPool2d", dict(kernel_size=2), (2, 3, 6, 6)),
    ("MaxPool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True), (2, 2, 7, 6)),
    ("MaxPool2d", dict(kernel_size=2, stride=1, dilation=2), (1, 2, 5, 5)),
    ("MaxPool1d", dict(kernel_size=3, stride=2, padding=1), (2, 3, 8)),
    ("AvgPool2d", dict(kernel_size=2), (2, 3, 6, 6)),
    ("AvgPool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False), (2, 2, 7, 6)),
    ("AvgPool2d", dict(kernel_size=3, stride=2, padding=1, divisor_override=4), (1, 2, 5, 5)),
    ("AvgPool1d", dict(kernel_size=3, stride=2, padding=1), (2, 3, 8)),
    ("AdaptiveAvgPool2d", dict(output_size=(3, 2)), (2, 3, 7, 5)),
    ("AdaptiveAvgPool2d", dict(output_size=1), (2, 3, 4, 4)),
    ("AdaptiveAvgPool1d", dict(output_size=4), (2, 3, 9)),
    ("Flatten", dict(), (2, 3, 4, 5)),
    ("Flatten", dict(start_dim=0, end_dim=2), (2, 3, 4, 5)),
    ("Unflatten", dict(dim=1, unflattened_size=(3, 4)), (2, 12, 5)),
    ("Identity", dict(), (2, 3)),
]


@pytest.mark.parametrize("name,kwargs,shape", POOL_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(POOL_CASES)])
@pytest.mark.parametrize("seed", SEEDS)
def test_pooling_and_shape_layers_match_torch(name, kwargs, shape, seed):
    _parity(lambda s: getattr(nn, name)(**kwargs), lambda torch: getattr(torch.nn, name)(**kwargs), shape, seed)


@pytest.mark.parametrize("name,kwargs,shape", POOL_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(POOL_CASES)])
def test_pooling_and_shape_layers_pass_gradcheck(name, kwargs, shape):
    layer = getattr(nn, name)(**kwargs)
    x = np.random.default_rng(0).permutation(int(np.prod(shape))).reshape(shape) * 0.1  # no ties for max
    assert tg.gradcheck(layer, x)


@pytest.mark.parametrize("seed", SEEDS)
def test_embedding_matches_torch_and_padding_gets_no_gradient(seed):
    torch = _torch()
    ours = nn.Embedding(7, 3, padding_idx=2, rng=seed)
    theirs = torch.nn.Embedding(7, 3, padding_idx=2).double()
    from torch_parity import compare

    idx = np.random.default_rng(seed).integers(0, 7, (4, 5))
    idx[0, :3] = 2
    compare(ours, theirs, idx)
    np.testing.assert_array_equal(ours.weight.data[2], 0.0)
    with tg.record():
        loss = (ours(idx) ** 2).sum() + ours(np.array([2, 2])).sum()
    ours.weight.grad = None
    loss.backward()
    np.testing.assert_array_equal(ours.weight.grad[2], 0.0)
    assert np.abs(ours.weight.grad).sum() > 0


def test_embedding_init_gradcheck_and_frozen_tables():
    emb = nn.Embedding(1000, 20, rng=0)
    assert abs(emb.weight.data.std() - 1.0) < 0.02 and abs(emb.weight.data.mean()) < 0.02  # N(0, 1)
    idx = np.array([[0, 3, 3], [1, 0, 2]])
    assert tg.gradcheck(lambda w: nn.functional.embedding(idx, w), np.random.default_rng(0).normal(size=(4, 2)))
    frozen = nn.Embedding.from_pretrained(np.eye(3))
    assert frozen.parameters() == [] and list(frozen.state_dict()) == ["weight"]
    assert nn.Embedding.from_pretrained(np.eye(3), freeze=False).parameters()[0].shape == (3, 3)
    with pytest.raises(IndexError, match=r"indices must be in \[0, 3\)"):
        frozen(np.array([3]))
    with pytest.raises(TypeError, match="indices must be integers"):
        frozen(np.array([0.5]))


@pytest.mark.parametrize("bad", [-1, -3, 3, 7])
def test_embedding_refuses_an_index_outside_its_rows_negative_ones_included_as_pytorch_does(bad):
    emb = nn.Embedding(3, 2, rng=0)
    idx = np.array([[0, 1], [2, bad]])
    message = rf"embedding: indices must be in \[0, 3\), got \[{bad}\]"
    for call in (
        lambda: emb(idx),
        lambda: emb(tg.Tensor(idx)),
        lambda: nn.functional.embedding(idx, emb.weight),
        lambda: nn.functional.embedding(tg.Tensor(idx), emb.weight, padding_idx=0),
    ):
        with pytest.raises(IndexError, match=message):
            call()
    # compiled: the program checks every call's indices, not only the ones it was traced with
    lookup = tg.compile(lambda i, w: nn.functional.embedding(i, w))
    good = np.array([[0, 1], [2, 2]])
    np.testing.assert_array_equal(lookup(good, emb.weight.data), emb.weight.data[good])
    np.testing.assert_array_equal(lookup(good[::-1].copy(), emb.weight.data), emb.weight.data[good[::-1]])
    with pytest.raises(IndexError, match=message):
        lookup(idx, emb.weight.data)


def test_a_compiled_loss_checks_every_calls_target_classes():
    loss = tg.compile(lambda x, t: nn.functional.cross_entropy(x, t))
    x = np.random.default_rng(0).standard_normal((2, 3))
    np.testing.assert_allclose(loss(x, np.array([0, 1])), nn.cross_entropy(tg.Tensor(x), np.array([0, 1])).data)
    loss(x, np.array([2, 1]))  # the program runs
    with pytest.raises(
        ValueError, match=r"target classes must be in \[0, 3\) or equal ignore_index \(-100\), got \[-1\]"
    ):
        loss(x, np.array([0, -1]))  # before, the program picked the last class
    np.testing.assert_allclose(loss(x, np.array([0, -100])), nn.cross_entropy(tg.Tensor(x), np.array([0, -100])).data)


# -- normalisation --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "name,args,kwargs,shape",
    [
        ("LayerNorm", (5,), {}, (3, 4, 5)),
        ("LayerNorm", ((4, 5),), {"eps": 1e-3}, (3, 4, 5)),
        ("LayerNorm", (5,), {"elementwise_affine": False}, (2, 5)),
        ("LayerNorm", (5,), {"bias": False}, (2, 5)),
        ("GroupNorm", (2, 6), {}, (3, 6, 4, 4)),
        ("GroupNorm", (3, 3), {"affine": False}, (2, 3, 5)),
    ],
)
def test_layer_and_group_norm_match_torch(name, args, kwargs, shape, seed):
    def ours(s):
        layer = getattr(nn, name)(*args, **kwargs)
        for p in layer.parameters():  # not their ones and zeros: the parameters' gradients must be exercised
            p.data = np.random.default_rng(s + 10).normal(size=p.shape)
        return layer

    _parity(ours, lambda torch: getattr(torch.nn, name)(*args, **kwargs), shape, seed)


def test_normalisation_layers_pass_gradcheck():
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((2, 3, 4)), rng.standard_normal(4), rng.standard_normal(4)
    assert tg.gradcheck(lambda x, w, b: nn.functional.layer_norm(x, (4,), w, b), x, w, b)
    assert tg.gradgradcheck(lambda x, w, b: nn.functional.layer_norm(x, (4,), w, b), x, w, b)
    x = rng.standard_normal((2, 4, 3))
    assert tg.gradcheck(lambda x, w, b: nn.functional.group_norm(x, 2, w, b), x, w, b)
    x = rng.standard_normal((4, 4, 2))
    assert tg.gradcheck(lambda x, w, b: nn.functional.batch_norm(x, None, None, w, b, training=True), x, w, b)
    rm, rv = rng.standard_normal(4), rng.uniform(0.5, 2, 4)
    assert tg.gradcheck(lambda x, w, b: nn.functional.batch_norm(x, rm, rv, w, b), x, w, b)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "name,kwargs,shape",
    [
        ("BatchNorm1d", {}, (8, 3)),
        ("BatchNorm1d", {"momentum": 0.3}, (6, 3, 5)),
        ("BatchNorm1d", {"momentum": None}, (6, 3)),
        ("BatchNorm2d", {}, (4, 3, 5, 5)),
        ("BatchNorm2d", {"affine": False, "eps": 1e-3}, (4, 3, 2, 2)),
        ("BatchNorm2d", {"track_running_stats": False}, (4, 3, 2, 2)),
    ],
)
def test_batch_norm_follows_torch_through_training_and_evaluation(name, kwargs, shape, seed):
    torch = _torch()
    from torch_parity import compare

    rng = np.random.default_rng(seed)
    ours, theirs = getattr(nn, name)(shape[1], **kwargs), getattr(torch.nn, name)(shape[1], **kwargs).double()
    for p in ours.parameters():
        p.data = rng.normal(size=p.shape)
    for step in range(3):  # the running statistics move with every training batch...
        x = rng.normal(2.0, 3.0, shape)
        compare(ours, theirs, x, seed=seed + step)
        for key, value in theirs.state_dict().items():
            np.testing.assert_allclose(ours.state_dict()[key], value.numpy(), rtol=1e-12, err_msg=key)
    ours.eval(), theirs.eval()  # ...and evaluation uses them (or the batch's, without tracking)
    compare(ours, theirs, rng.normal(size=shape), seed=seed)
    if kwargs.get("track_running_stats", True):
        assert int(ours.num_batches_tracked.item()) == 3 and ours.num_batches_tracked.dtype == np.int64


def test_batch_norm_buffers_are_saved_loaded_and_not_parameters(tmp_path):
    bn = nn.BatchNorm2d(3)
    bn(tg.Tensor(np.random.default_rng(0).normal(1.0, 2.0, (4, 3, 2, 2))))
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    tg.save({"model": bn.state_dict()}, tmp_path / "bn.npz")
    fresh = nn.BatchNorm2d(3)
    fresh.load_state_dict(tg.load(tmp_path / "bn.npz")["model"])
    for name, buf in bn.named_buffers():
        np.testing.assert_array_equal(getattr(fresh, name).data, buf.data)
    assert fresh.num_batches_tracked.dtype == np.int64 and fresh.num_batches_tracked.item() == 1
    bad = bn.state_dict()
    bad["running_var"] = np.ones(4)
    with pytest.raises(ValueError, match=r"running_var has shape \(4,\) in the state dict but \(3,\)"):
        fresh.load_state_dict(bad)
    with pytest.raises(KeyError, match=r"missing keys \['running_mean'\]"):
        fresh.load_state_dict({k: v for k, v in bn.state_dict().items() if k != "running_mean"})
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
    assert [n for n, _ in model.named_buffers()] == ["1.running_mean", "1.running_var", "1.num_batches_tracked"]
    with pytest.raises(ValueError, match="training needs more than 1 value per channel"):
        nn.BatchNorm1d(3)(tg.Tensor(np.zeros((1, 3))))


def test_register_buffer_rules():
    m = nn.Module()
    m.register_buffer("scratch", tg.Tensor(np.zeros(2)), persistent=False)
    assert m.state_dict() == {} and [n for n, _ in m.named_buffers()] == ["scratch"]
    with pytest.raises(ValueError, match="requires a gradient"):
        m.register_buffer("w", tg.Tensor(np.zeros(2), requires_grad=True))
    with pytest.raises(ValueError, match="without dots"):
        m.register_buffer("a.b", None)
    m.register_buffer("empty", None)
    assert [n for n, _ in m.named_buffers()] == ["scratch"]


# -- activations ----------------------------------------------------------------------------------------------
ACTIVATIONS = [
    ("GELU", {}),
    ("GELU", {"approximate": "tanh"}),
    ("SiLU", {}),
    ("LeakyReLU", {"negative_slope": 0.2}),
    ("ELU", {"alpha": 0.5}),
    ("SELU", {}),
    ("Softplus", {"beta": 2.0, "threshold": 3.0}),
    ("Hardtanh", {"min_val": -0.5, "max_val": 2.0}),
    ("ReLU6", {}),
    ("LogSigmoid", {}),
    ("Softmax", {"dim": 1}),
    ("LogSoftmax", {"dim": -1}),
    ("ReLU", {}),
    ("Tanh", {}),
    ("Sigmoid", {}),
]


@pytest.mark.parametrize("name,kwargs", ACTIVATIONS, ids=[a[0] + str(i) for i, a in enumerate(ACTIVATIONS)])
@pytest.mark.parametrize("seed", SEEDS)
def test_activation_layers_match_torch(name, kwargs, seed):
    _parity(lambda s: getattr(nn, name)(**kwargs), lambda torch: getattr(torch.nn, name)(**kwargs), (3, 4, 5), seed)


@pytest.mark.parametrize("name,kwargs", ACTIVATIONS[:12], ids=[a[0] + str(i) for i, a in enumerate(ACTIVATIONS[:12])])
def test_activation_layers_pass_gradcheck(name, kwargs):
    x = np.random.default_rng(0).uniform(0.2, 1.5, (3, 4)) * np.random.default_rng(1).choice([-1, 1], (3, 4))
    assert tg.gradcheck(getattr(nn, name)(**kwargs), x)


def test_softmax_without_dim_warns_and_takes_pytorch_s_choice():
    x = tg.Tensor(np.zeros((2, 3)))
    with pytest.warns(UserWarning, match="pass dim=1"):
        y = nn.Softmax()(x)
    np.testing.assert_allclose(y.data, 1 / 3)


# -- containers and init ---------------------------------------------------------------------------------------
def test_module_list_and_dict_name_their_modules_as_pytorch():
    torch = _torch()
    ours = nn.ModuleList([nn.Linear(2, 3, rng=0), nn.Sequential(nn.Linear(3, 3, rng=1))])
    ours.append(nn.LayerNorm(3))
    theirs = torch.nn.ModuleList(
        [torch.nn.Linear(2, 3), torch.nn.Sequential(torch.nn.Linear(3, 3)), torch.nn.LayerNorm(3)]
    )
    assert list(ours.state_dict()) == list(theirs.state_dict())
    heads = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.Identity()})
    heads["c"] = nn.Linear(2, 1)
    theirs = torch.nn.ModuleDict({"a": torch.nn.Linear(2, 2), "b": torch.nn.Identity(), "c": torch.nn.Linear(2, 1)})
    assert list(heads.state_dict()) == list(theirs.state_dict()) and list(heads) == ["a", "b", "c"]


def test_containers_behave_like_lists_and_dicts():
    layers = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    layers.insert(0, nn.Linear(2, 2, rng=0))
    layers += [nn.Sigmoid()]
    assert [type(m).__name__ for m in layers] == ["Linear", "ReLU", "Tanh", "Sigmoid"]
    assert isinstance(layers[-1], nn.Sigmoid) and len(layers[1:3]) == 2
    del layers[1]
    assert len(layers) == 3 and [n for n, _ in layers.named_children()] == ["0", "1", "2"]
    with pytest.raises(IndexError, match="out of range for 3 modules"):
        layers[5]
    with pytest.raises(TypeError, match="expected a Module"):
        layers.append(lambda x: x)
    with pytest.raises(NotImplementedError, match="iterate over its modules"):
        layers(1)
    d = nn.ModuleDict([("x", nn.ReLU())])
    assert "x" in d and d.pop("x") is not None and len(d) == 0
    with pytest.raises(KeyError, match="without dots"):
        d["a.b"] = nn.ReLU()
    with pytest.raises(KeyError, match="has no key 'z'"):
        d["z"]
    model = nn.ModuleList([nn.Dropout(0.5)]).eval()
    assert not model[0].training


@pytest.mark.parametrize(
    "fn,kwargs,check",
    [
        ("xavier_uniform_", {}, lambda w: np.abs(w).max() <= np.sqrt(6 / (40 + 30))),
        ("xavier_normal_", {"gain": 2.0}, lambda w: abs(w.std() - 2 * np.sqrt(2 / 70)) < 0.01),
        ("kaiming_uniform_", {"nonlinearity": "relu"}, lambda w: np.abs(w).max() <= np.sqrt(6 / 30)),
        ("kaiming_normal_", {"mode": "fan_out"}, lambda w: abs(w.std() - np.sqrt(2 / 1.0001) / np.sqrt(40)) < 0.01),
        ("uniform_", {"a": -2.0, "b": -1.0}, lambda w: (w >= -2).all() and (w <= -1).all()),
        ("normal_", {"mean": 3.0, "std": 0.5}, lambda w: abs(w.mean() - 3) < 0.05 and abs(w.std() - 0.5) < 0.02),
        ("trunc_normal_", {"a": -1.0, "b": 1.0}, lambda w: np.abs(w).max() <= 1.0),
        ("orthogonal_", {"gain": 2.0}, lambda w: np.allclose(w.T @ w, 4 * np.eye(30))),
    ],
)
def test_init_functions_are_seeded_and_have_their_distributions(fn, kwargs, check):
    w = tg.Tensor(np.empty((40, 30)), requires_grad=True)
    v0 = w.version
    assert getattr(nn.init, fn)(w, **kwargs, rng=0) is w and w.version > v0
    assert check(w.data)
    again = tg.Tensor(np.empty((40, 30)))
    np.testing.assert_array_equal(getattr(nn.init, fn)(again, **kwargs, rng=0).data, w.data)


def test_init_constants_gains_and_errors():
    w = tg.Tensor(np.empty((2, 3, 4)))
    assert (nn.init.zeros_(w).data == 0).all() and (nn.init.ones_(w).data == 1).all()
    assert (nn.init.constant_(w, 0.5).data == 0.5).all()
    np.testing.assert_array_equal(nn.init.eye_(tg.Tensor(np.empty((2, 3)))).data, np.eye(2, 3))
    assert nn.init.calculate_gain("relu") == np.sqrt(2) and nn.init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        nn.init.xavier_uniform_(tg.Tensor(np.empty(3)))
    with pytest.raises(ValueError, match="unsupported nonlinearity"):
        nn.init.calculate_gain("swish")
    q = nn.init.orthogonal_(tg.Tensor(np.empty((4, 2, 3))), rng=0).data.reshape(4, 6)
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-12)


def test_layers_keep_float32():
    x = tg.Tensor(np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32), requires_grad=True)
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1, dtype=np.float32),
        nn.BatchNorm2d(4, dtype=np.float32),
        nn.GELU(),
        nn.MaxPool2d(2),
        nn.AvgPool2d(2),
        nn.GroupNorm(2, 4, dtype=np.float32),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.LayerNorm(4, dtype=np.float32),
    )
    with tg.record():
        y = model(x)
        s = y.sum()
    s.backward()
    assert y.dtype == np.float32 and x.grad.dtype == np.float32
    assert all(p.grad.dtype == np.float32 for p in model.parameters())
