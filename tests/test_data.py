"""tapegrad.data: datasets, splits, samplers, the default collate, and a loader whose position is
checkpointed so that a training run resumed mid-epoch follows the uninterrupted one bit for bit."""

from collections import namedtuple

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn, optim
from tapegrad.data import (
    DataLoader,
    Dataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)

X = np.random.default_rng(0).normal(size=(50, 4))
Y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)


def _labels(loader):
    return [yb.data.tolist() for _, yb in loader]


def test_tensor_dataset_indexes_its_arrays_together_and_refuses_unequal_lengths():
    ds = TensorDataset(tg.Tensor(X), Y)
    assert len(ds) == 50
    x, y = ds[3]
    np.testing.assert_array_equal(x, X[3])
    assert y == Y[3]
    with pytest.raises(ValueError, match=r"first axes differ \(\[50, 49\]\)"):
        TensorDataset(X, Y[:-1])
    with pytest.raises(ValueError, match="at least one array"):
        TensorDataset()


def test_every_epoch_visits_every_sample_once_in_batches():
    loader = DataLoader(TensorDataset(X, Y), batch_size=8)
    batches = list(loader)
    assert len(loader) == len(batches) == 7
    assert [b[0].shape for b in batches] == [(8, 4)] * 6 + [(2, 4)]
    assert isinstance(batches[0], list) and isinstance(batches[0][0], tg.Tensor)
    np.testing.assert_array_equal(np.concatenate([b[0].data for b in batches]), X)  # no shuffle: in order
    dropped = DataLoader(TensorDataset(X, Y), batch_size=8, drop_last=True)
    assert len(dropped) == len(list(dropped)) == 6


def test_shuffling_is_seeded_fresh_each_epoch_and_covers_the_dataset():
    def epochs(seed, n=3):
        loader = DataLoader(TensorDataset(X, np.arange(50)), batch_size=16, shuffle=True, generator=seed)
        return [np.concatenate(_labels(loader)) for _ in range(n)]

    a, b, c = epochs(0), epochs(0), epochs(1)
    assert all((x == y).all() for x, y in zip(a, b))  # the same seed, the same orders
    assert not (a[0] == a[1]).all() and not (a[0] == c[0]).all()
    assert all(sorted(e.tolist()) == list(range(50)) for e in a)
    gen = np.random.default_rng(0)
    via_rng = DataLoader(TensorDataset(X, np.arange(50)), batch_size=16, shuffle=True, rng=gen)
    assert (np.concatenate(_labels(via_rng)) == a[0]).all() and via_rng.generator is gen


def test_the_tensor_dataset_fast_path_gives_what_the_default_collate_gives():
    ds = random_split(TensorDataset(X.astype(np.float32), Y, X[:, :2] > 0), [30, 20], generator=3)[1]
    fast = DataLoader(ds, batch_size=7, shuffle=True, generator=5)
    slow = DataLoader(ds, batch_size=7, shuffle=True, generator=5, collate_fn=lambda b: default_collate(b))
    for f, s in zip(fast, slow, strict=True):
        for a, b in zip(f, s, strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape and a.data.tobytes() == b.data.tobytes()


def test_default_collate_follows_pytorch_for_each_kind_of_sample():
    Point = namedtuple("Point", "x y")
    batch = default_collate([{"a": 1, "b": [0.5, np.ones(2)], "s": "x"}, {"a": 2, "b": [1.5, np.zeros(2)], "s": "y"}])
    assert batch["a"].dtype == np.int64 and batch["a"].data.tolist() == [1, 2]
    assert batch["b"][0].dtype == np.float64 and batch["b"][1].shape == (2, 2)
    assert batch["s"] == ["x", "y"]
    p = default_collate([Point(1.0, True), Point(2.0, False)])
    assert isinstance(p, Point) and p.y.dtype == bool
    t = default_collate([tg.Tensor(np.ones(3, np.float32)), tg.Tensor(np.zeros(3, np.float32))])
    assert t.shape == (2, 3) and t.dtype == np.float32 and not t.requires_grad
    with pytest.raises(ValueError, match=r"shapes \[\(2,\), \(3,\)\] cannot be stacked"):
        default_collate([np.ones(2), np.ones(3)])
    with pytest.raises(TypeError, match="samples of type object"):
        default_collate([object()])


def test_collate_fn_and_custom_datasets_and_samplers():
    class Words(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return "word" + str(i)

    class EveryOther(Sampler):
        def __iter__(self):
            return iter([4, 2, 0])

        def __len__(self):
            return 3

    loader = DataLoader(Words(), batch_size=2, sampler=EveryOther(), collate_fn=" ".join)
    assert list(loader) == ["word4 word2", "word0"] and len(loader) == 2
    assert list(SequentialSampler(range(3))) == [0, 1, 2]
    with pytest.raises(ValueError, match="cannot be combined with shuffle"):
        DataLoader(Words(), sampler=EveryOther(), shuffle=True)
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1, got 0"):
        DataLoader(Words(), batch_size=0)
    with pytest.raises(ValueError, match="num_workers must be 0"):
        DataLoader(Words(), num_workers=2)
    with pytest.raises(TypeError, match="not both"):
        DataLoader(Words(), shuffle=True, generator=0, rng=0)
    with pytest.raises(TypeError, match="generator must be a numpy.random.Generator"):
        DataLoader(Words(), shuffle=True, generator="seed")


def test_random_sampler_with_replacement_and_more_samples_than_the_dataset():
    with_replacement = list(RandomSampler(range(4), replacement=True, num_samples=20, generator=0))
    assert len(with_replacement) == 20 and set(with_replacement) <= {0, 1, 2, 3}
    many = list(RandomSampler(range(4), num_samples=10, generator=0))
    assert sorted(many[:4]) == sorted(many[4:8]) == [0, 1, 2, 3] and len(many) == 10


def test_random_split_by_lengths_and_fractions_is_seeded_and_disjoint():
    ds = TensorDataset(np.arange(10))
    a = random_split(ds, [3, 7], generator=1)
    b = random_split(ds, [3, 7], generator=np.random.default_rng(1))
    assert [s.indices for s in a] == [s.indices for s in b]
    assert sorted(a[0].indices + a[1].indices) == list(range(10))
    assert isinstance(a[0], Subset) and a[0][0] == ds[a[0].indices[0]]
    assert [len(s) for s in random_split(ds, [0.34, 0.33, 0.33], generator=0)] == [4, 3, 3]
    with pytest.raises(ValueError, match="sum to 9, the dataset has 10"):
        random_split(ds, [4, 5])
    with pytest.warns(UserWarning, match="index 1 is 0"):
        random_split(TensorDataset(np.arange(2)), [0.9, 0.1], generator=0)


def test_random_split_fractions_give_pytorchs_lengths():
    torch = pytest.importorskip("torch")
    for n in [10, 17, 101]:
        for fractions in ([0.8, 0.2], [0.34, 0.33, 0.33], [0.5, 0.25, 0.125, 0.125], [1.0]):
            ours = [len(s) for s in random_split(TensorDataset(np.arange(n)), fractions, generator=0)]
            theirs = [len(s) for s in torch.utils.data.random_split(range(n), fractions)]
            assert ours == theirs, (n, fractions)


# -- resuming ---------------------------------------------------------------------------------------------
def _setup(seed, loader_seed):
    model = nn.Sequential(nn.Linear(4, 8, rng=seed), nn.Tanh(), nn.Linear(8, 2, rng=seed + 1))
    opt = optim.Adam(model.parameters(), lr=0.05)
    train, _ = random_split(TensorDataset(X, Y), [40, 10], generator=7)
    loader = DataLoader(train, batch_size=6, shuffle=True, generator=loader_seed)
    return model, opt, loader


def _train(model, opt, loader, steps, trajectory):
    done = 0
    while done < steps:
        for xb, yb in loader:
            opt.zero_grad()
            with tg.tape.record():
                loss = nn.cross_entropy(model(xb), yb.data)
            loss.backward()
            opt.step()
            trajectory.append(b"".join(p.data.tobytes() for p in model.parameters()))
            done += 1
            if done == steps:
                break


@pytest.mark.parametrize("k", [3, 7, 10, 16])  # within the first epoch, at its end, within later ones
def test_a_run_resumed_mid_epoch_follows_the_uninterrupted_run_bit_for_bit(k, tmp_path):
    full = []
    _train(*_setup(0, 11), 24, full)

    model, opt, loader = _setup(0, 11)
    first = []
    _train(model, opt, loader, k, first)
    path = tmp_path / "ckpt.npz"
    tg.save({"model": model.state_dict(), "optim": opt.state_dict(), "data": loader.state_dict()}, path)

    model, opt, loader = _setup(5, 99)  # other weights and another shuffle until loaded
    ckpt = tg.load(path)
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optim"])
    loader.load_state_dict(ckpt["data"])
    rest = []
    _train(model, opt, loader, 24 - k, rest)
    assert first + rest == full


def test_loader_state_round_trips_through_a_checkpoint_and_bad_states_are_refused(tmp_path):
    loader = DataLoader(TensorDataset(X, Y), batch_size=8, shuffle=True, generator=0)
    it = iter(loader)
    next(it), next(it)
    state = loader.state_dict()
    assert (state["epoch"], state["position"]) == (1, 2) and state["order"].dtype == np.int64
    tg.save(state, tmp_path / "s.npz")
    loaded = tg.load(tmp_path / "s.npz")
    other = DataLoader(TensorDataset(X, Y), batch_size=8, shuffle=True, generator=1)
    other.load_state_dict(loaded)
    assert _labels(other) == [yb.data.tolist() for _, yb in it]
    assert _labels(other) == _labels(loader)  # the next epochs agree too

    plain = DataLoader(TensorDataset(X, Y), batch_size=8)
    with pytest.raises(ValueError, match="has a sampler state"):
        plain.load_state_dict(state)
    small = DataLoader(TensorDataset(X[:10], Y[:10]), batch_size=8, shuffle=True)
    with pytest.raises(ValueError, match="50 indices, this sampler gives 10"):
        small.load_state_dict(state)
    with pytest.raises(ValueError, match="position 9 is past"):
        other.load_state_dict({**state, "position": 9})
    with pytest.raises(ValueError, match="'epoch', 'position', 'order' and 'sampler'"):
        other.load_state_dict({"epoch": 1})
    before = other.state_dict()
    with pytest.raises(ValueError, match="not a generator state"):
        other.load_state_dict({**state, "sampler": {"generator": {"bit_generator": "MT19937"}}})
    after = other.state_dict()
    assert after["epoch"] == before["epoch"] and (after["order"] == before["order"]).all()
