"""benchmarks/conv.py on tiny batches: both im2col formulations agree, every measurement comes back, and the
models it times side by side start from the same weights. Nothing here looks at a time."""

import time

import numpy as np
import pytest

from benchmarks import conv


def test_im2col_formulations_agree():
    x = np.random.default_rng(0).standard_normal((2, 3, 9, 7))
    np.testing.assert_array_equal(conv.im2col_swv(x, 3, 1), conv.im2col_slices(x, 3, 1))


def test_the_benchmark_runs_and_its_models_are_twins():
    torch = pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    lines = []
    results = conv.run(batch=2, rounds=1, clock=time.process_time, dtypes=(np.float64,), out=lines.append)
    assert {key[1] for key in results} == {"conv", "lenet", "cnn_digits"}
    assert all(t[0] > 0 for r in results.values() for t in r.values())
    assert any("LeNet-5" in line for line in lines) and any("CNN example" in line for line in lines)
    ours, theirs = conv.lenet_layers(np.float64, torch)
    x = np.random.default_rng(0).standard_normal((2, 1, 28, 28))
    np.testing.assert_allclose(ours(conv.tg.Tensor(x)).data, theirs(torch.tensor(x)).detach().numpy(), rtol=1e-10)
