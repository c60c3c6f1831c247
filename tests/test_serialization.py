"""Checkpoints: exact round trips without pickle, atomic writes, clear errors for damaged or foreign files,
and a resumed run that follows the uninterrupted one bit for bit."""

import json
import os

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import nn, optim


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
    elif isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b)
    else:
        assert a == b


def test_round_trip_keeps_values_types_and_dtypes(tmp_path):
    obj = {
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
        "i64": np.array([1, -2], dtype=np.int64),
        "mask": np.array([True, False]),
        "zero_d": np.array(2.5),
        "empty": np.zeros((0, 3)),
        "scalar": np.float32(1.25),
        3: {"nested": [1, 2.0, "three", None, True, (4, 5)]},
        "floats": [0.1, float("inf"), float("nan"), -0.0],
        "big": 2**127 + 11,  # generator states hold 128-bit integers
        "rng": np.random.default_rng(5).bit_generator.state,
    }
    path = tmp_path / "ckpt.npz"
    tg.save(obj, path)
    _same(obj, tg.load(path))


def test_state_dicts_of_model_and_optimizer_round_trip(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4, rng=0), nn.ReLU(), nn.Dropout(0.2, rng=1), nn.Linear(4, 2, rng=2))
    opt = optim.Adam(model.parameters(), lr=0.01, amsgrad=True)
    for p in model.parameters():
        p.grad = np.ones(p.shape)
    opt.step()
    state = {"model": model.state_dict(), "optim": opt.state_dict()}
    tg.save(state, tmp_path / "c.npz")
    _same(state, tg.load(tmp_path / "c.npz"))


def test_save_writes_atomically_and_a_failed_save_changes_nothing(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.npz"
    tg.save({"w": np.ones(3)}, path)
    good = path.read_bytes()

    def crash(f, *args, **kwargs):
        f.write(b"PK\x03\x04 half a checkpoint")
        raise KeyboardInterrupt  # the process dies in the middle of the write

    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(KeyboardInterrupt):
        tg.save({"w": np.zeros(3)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == good
    assert os.listdir(tmp_path) == ["ckpt.npz"]  # no temporary file left behind
    with pytest.raises(TypeError, match=r"the object\['model'\] is a Linear.*state_dict"):
        tg.save({"model": nn.Linear(2, 2)}, path)
    with pytest.raises(TypeError, match="object array"):
        tg.save({"x": np.array([{}, 1], dtype=object)}, path)
    with pytest.raises(TypeError, match="keys must be str or int"):
        tg.save({(1, 2): 3}, path)
    assert path.read_bytes() == good and os.listdir(tmp_path) == ["ckpt.npz"]
    _same(tg.load(path), {"w": np.ones(3)})


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_a_checkpoint_gets_the_usual_file_mode(tmp_path):
    mask = os.umask(0o022)
    try:
        tg.save({"w": np.ones(1)}, tmp_path / "a.npz")
        assert (tmp_path / "a.npz").stat().st_mode & 0o777 == 0o644
        os.chmod(tmp_path / "a.npz", 0o600)
        tg.save({"w": np.ones(1)}, tmp_path / "a.npz")  # overwriting keeps the mode the file had
        assert (tmp_path / "a.npz").stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(mask)


def _checkpoint(tmp_path):
    path = tmp_path / "ckpt.npz"
    tg.save({"w": np.arange(1000.0), "step": 7}, path)
    return path


def test_a_truncated_file_gets_a_clear_error(tmp_path):
    path = _checkpoint(tmp_path)
    data = path.read_bytes()
    for cut in (0, 10, len(data) // 2, len(data) - 10):
        path.write_bytes(data[:cut])
        with pytest.raises(tg.CheckpointError, match="truncated, corrupt or not a checkpoint"):
            tg.load(path)


def test_a_corrupted_byte_gets_a_clear_error(tmp_path):
    path = _checkpoint(tmp_path)
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF  # inside the array's bytes: the zip checksum catches it
    path.write_bytes(bytes(data))
    with pytest.raises(tg.CheckpointError):
        tg.load(path)


def test_garbage_and_foreign_files_get_clear_errors(tmp_path):
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(os.urandom(512))
    with pytest.raises(tg.CheckpointError, match="garbage.npz"):
        tg.load(garbage)
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, x=np.ones(3))
    with pytest.raises(tg.CheckpointError, match="not a tapegrad checkpoint"):
        tg.load(foreign)
    npy = tmp_path / "array.npy"
    np.save(npy, np.ones(3))
    with pytest.raises(tg.CheckpointError, match="single NumPy array"):
        tg.load(npy)
    with pytest.raises(FileNotFoundError):
        tg.load(tmp_path / "missing.npz")


def _with_header(tmp_path, header, **arrays):
    path = tmp_path / "crafted.npz"
    raw = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(path, __tapegrad__=raw, **arrays)
    return path


def test_bad_headers_get_clear_errors(tmp_path):
    cases = [
        ({"format": "something-else", "version": 1, "tree": {"value": 1}}, {}),
        ({"format": "tapegrad-checkpoint", "version": 99, "tree": {"value": 1}}, {}),
        ({"format": "tapegrad-checkpoint", "version": 1, "tree": {"array": "a0", "scalar": False}}, {}),
        ({"format": "tapegrad-checkpoint", "version": 1, "tree": {"code": "import os"}}, {}),
    ]
    for header, arrays in cases:
        with pytest.raises(tg.CheckpointError, match="structure description is not valid"):
            tg.load(_with_header(tmp_path, header, **arrays))


def test_load_never_unpickles(tmp_path):
    header = {"format": "tapegrad-checkpoint", "version": 1, "tree": {"array": "a0", "scalar": False}}
    path = _with_header(tmp_path, header, a0=np.array([{"evil": 1}], dtype=object))  # numpy pickles this
    with pytest.raises(tg.CheckpointError, match="pickle"):
        tg.load(path)


# -- resuming ---------------------------------------------------------------------------------------------
X = np.random.default_rng(0).normal(size=(60, 5))
Y = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0)


def _setup(seed):
    model = nn.Sequential(
        nn.Linear(5, 16, rng=seed), nn.ReLU(), nn.Dropout(0.3, rng=seed + 1), nn.Linear(16, 3, rng=seed + 2)
    )
    opt = optim.AdamW(model.parameters(), lr=0.02, weight_decay=0.01, amsgrad=True)
    sched = optim.StepLR(opt, step_size=2, gamma=0.5)
    return model, opt, sched, np.random.default_rng(seed + 3)


def _train(model, opt, sched, data_rng, epochs, losses):
    for _ in range(epochs):
        order = data_rng.permutation(len(X))
        for start in range(0, len(X), 16):
            idx = order[start : start + 16]
            opt.zero_grad()
            with tg.tape.record():
                loss = nn.cross_entropy(model(tg.Tensor(X[idx])), Y[idx])
            loss.backward()
            optim.clip_grad_norm(model.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
        sched.step()


def test_resuming_from_a_checkpoint_follows_the_uninterrupted_run_bit_for_bit(tmp_path):
    full = _setup(0)
    full_losses = []
    _train(*full, epochs=6, losses=full_losses)

    first = _setup(0)
    losses = []
    _train(*first, epochs=3, losses=losses)
    model, opt, sched, data_rng = first
    path = tmp_path / "run.npz"
    tg.save(
        {
            "model": model.state_dict(),
            "optim": opt.state_dict(),
            "sched": sched.state_dict(),
            "data_rng": data_rng.bit_generator.state,
            "losses": losses,
        },
        path,
    )
    del first, model, opt, sched, data_rng

    model, opt, sched, data_rng = _setup(100)  # different weights, masks and shuffles until loaded
    ckpt = tg.load(path)
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optim"])
    sched.load_state_dict(ckpt["sched"])
    data_rng.bit_generator.state = ckpt["data_rng"]
    losses = ckpt["losses"]
    _train(model, opt, sched, data_rng, epochs=3, losses=losses)

    assert losses == full_losses  # every step's loss, exactly
    for p, q in zip(model.parameters(), full[0].parameters()):
        assert p.data.tobytes() == q.data.tobytes()
    _same(opt.state_dict(), full[1].state_dict())
    assert sched.get_last_lr() == full[2].get_last_lr()
