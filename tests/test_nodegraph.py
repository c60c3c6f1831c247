"""The node-graph reference used by the benchmarks computes the same gradients as tapegrad."""

import numpy as np
import pytest

import tapegrad as tg
from benchmarks import nodegraph as ng


def _both(fn, *arrays, need=None):
    """Gradients of fn on each engine, for the inputs whose flag in ``need`` is set (default: all)."""
    need = need or [True] * len(arrays)
    grads = []
    xs = [ng.Tensor(a.copy(), requires_grad=n) for a, n in zip(arrays, need)]
    fn(ng, *xs).backward()
    grads.append([x.grad for x in xs])
    ts = [tg.Tensor(a.copy(), requires_grad=n) for a, n in zip(arrays, need)]
    with tg.record():
        out = fn(tg, *ts)
    out.backward()
    grads.append([t.grad for t in ts])
    return grads


def _mlp(m, x, w1, b1, w2, b2, y):
    h = m.relu(x @ w1 + b1)
    return -(m.log_softmax(h @ w2 + b2) * y).sum() * (1.0 / x.shape[0])


CASES = {
    "add-broadcast": (lambda m, x, y: (x + y).sum(), [(3, 4), (4,)]),
    "sub-rsub": (lambda m, x, y: (2.0 - x - y).sum(), [(3, 1), (1, 4)]),
    "mul-div": (lambda m, x, y: (x * y / (y * y + 1.0)).sum(), [(2, 3), (3,)]),
    "neg-pow": (lambda m, x, y: ((-x) ** 3 * y).mean(), [(2, 3), (2, 3)]),
    "exp-log-tanh": (lambda m, x, y: (m.log(m.exp(x) + 1.0) * m.tanh(y)).sum(), [(4,), (4,)]),
    "sum-axis": (lambda m, x, y: (m.sum(x * y, axis=0) ** 2).sum(), [(3, 4), (3, 4)]),
    "mean-keepdims": (lambda m, x, y: (m.mean(x, axis=1, keepdims=True) * y).sum(), [(3, 4), (3, 4)]),
    "matmul-vector": (lambda m, x, y: (x @ y).sum(), [(3, 4), (4,)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_ops_match_tapegrad(name):
    fn, shapes = CASES[name]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    ref, tape = _both(fn, *arrays)
    for r, t in zip(ref, tape):
        np.testing.assert_allclose(r, t, rtol=1e-12, atol=1e-12)


def test_mlp_gradients_match_tapegrad_and_constants_get_none():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((5, 6)), np.eye(3)[rng.integers(0, 3, 5)]
    params = [rng.standard_normal((6, 4)), rng.standard_normal(4), rng.standard_normal((4, 3)), rng.standard_normal(3)]
    need = [False, True, True, True, True, False]
    ref, tape = _both(_mlp, x, *params, y, need=need)
    assert ref[0] is None and tape[0] is None and ref[5] is None
    for r, t in zip(ref[1:5], tape[1:5]):
        np.testing.assert_allclose(r, t, rtol=1e-12, atol=1e-12)


def test_backward_writes_grad_on_every_node_that_requires_one_and_keeps_the_graph():
    w = ng.Tensor(np.ones(3), requires_grad=True)
    h = w * 2.0
    loss = (h * h).sum()
    loss.backward()
    np.testing.assert_allclose(h.grad, 2 * h.data)  # an intermediate gets .grad too: the design's cost
    np.testing.assert_allclose(w.grad, 8 * w.data)
    square = loss._parents[0]
    assert square._parents == (h, h) and h._parents[0] is w  # nothing released after backward


def test_results_of_constants_keep_no_graph():
    c = ng.Tensor(np.ones(3))
    out = ng.relu(c * 2.0)
    assert not out.requires_grad and out._parents == () and out._backward is None
