"""Entries with several outputs (``Op.outputs``): one entry, a tuple of tensors, every output's cotangent in one
rule; and everything that reads entries (the replays, hooks, gradient() sources, memory, views, tools)."""

from __future__ import annotations

import gc
import io
import weakref

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad import linalg as la
from tapegrad.core.node import Outputs


def _sym(seed=0, n=3, batch=()):
    a = np.random.default_rng(seed).normal(size=batch + (n, n))
    return a + np.swapaxes(a, -1, -2) + np.diag(np.arange(n) * 4.0)


def _loss(w, v):
    return (w * w).sum() + (v * v * tg.expand_dims(w, -2)).sum()


def test_one_entry_a_tuple_of_tensors_and_the_op_declares_its_outputs():
    a = tg.Tensor(_sym(), requires_grad=True)
    with tg.record() as t:
        res = la.eigh(a)
    assert len(t) == 1 and isinstance(t.entries[0].node, Outputs)
    assert t.entries[0].outputs == ("eigenvalues", "eigenvectors") == tg.REGISTRY["eigh"].outputs
    w, v = res
    assert res.eigenvalues is w and res.eigenvectors is v and w.requires_grad and v.requires_grad
    assert w.dtype == np.float64 and w.shape == (3,) and v.shape == (3, 3)  # nothing packed
    assert tg.REGISTRY["exp"].outputs == ()
    for name, outputs in [("eig", 2), ("svd", 3), ("qr", 2), ("slogdet", 2), ("lu", 3)]:
        assert len(tg.REGISTRY[name].outputs) == outputs, name


def test_each_output_reaches_the_one_rule_and_an_unused_one_gets_none():
    seen = []
    op = tg.REGISTRY["eigh"]
    rule = op.vjps[0]

    def spy(xp, g, ans, *xs, **params):
        seen.append(tuple(gi is None for gi in g))
        return rule(xp, g, ans, *xs, **params)

    op.vjps = (spy,)
    try:
        for pick in (lambda w, v: (w**2).sum(), lambda w, v: (v**4).sum(), lambda w, v: _loss(w, v)):
            a = tg.Tensor(_sym(), requires_grad=True)
            with tg.record():
                loss = pick(*la.eigh(a))
            loss.backward()
    finally:
        op.vjps = (rule,)
    assert seen == [(False, True), (True, False), (False, False)]


def test_the_rule_is_finite_difference_exact_for_any_outputs_used_batched_and_to_second_order():
    a = tg.Tensor(_sym(1, batch=(2,)))
    assert tg.gradcheck(lambda x: _loss(*la.eigh(x)), a)
    assert tg.gradgradcheck(lambda x: _loss(*la.eigh(x)), a)
    b = np.random.default_rng(2).normal(size=(2, 3, 3)) + np.eye(3)[::-1] * 5  # pivoting swaps rows
    for f in (
        lambda x: (la.lu(x)[1] ** 3).sum(),
        lambda x: (la.lu(x)[2] ** 2).sum(),
        lambda x: (la.lu(x)[1] * la.lu(x)[2]).sum(),  # two entries, each output reused
    ):
        assert tg.gradcheck(f, tg.Tensor(b)) and tg.gradgradcheck(f, tg.Tensor(b))


def test_lu_is_scipys():
    sl = pytest.importorskip("scipy.linalg", reason="SciPy is the reference of lu")
    a = np.random.default_rng(3).normal(size=(2, 4, 4))
    p, lower, u = la.lu(tg.Tensor(a))
    for k in range(2):
        for got, want in zip((p, lower, u), sl.lu(a[k])):
            np.testing.assert_allclose(got.data[k], want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose((p @ lower @ u).data, a, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="lu: the matrix is singular"):
        tg.grad(lambda x: la.lu(x)[2].sum())(tg.Tensor(np.ones((3, 3))))
    with pytest.raises(ValueError, match="lu"):
        la.lu(tg.Tensor(np.ones((2, 3))))


def test_a_tape_with_several_output_entries_frees_everything_after_backward():
    a = tg.Tensor(_sym(), requires_grad=True)
    with tg.record() as t:
        w, v = la.eigh(a)
        q, r = la.qr(v * w)
        loss = (r * r).sum() + (q * w).sum()
    refs = [weakref.ref(x) for x in (w._data, v._data, q._data, r._data)]
    nodes = [weakref.ref(x._node) for x in (w, v, q, r)] + [weakref.ref(w._node.group)]
    assert t.saved_bytes() >= sum(x.data.nbytes for x in (w, v, q, r))  # each output's buffer counted
    loss.backward()
    assert len(t) == 0 and t.saved_bytes() == 0
    del w, v, q, r, loss
    gc.collect()
    assert all(ref() is None for ref in refs + nodes)


def test_an_entry_lives_while_any_output_does_and_dies_with_the_last():
    a = tg.Tensor(_sym(), requires_grad=True)
    with tg.record() as t:
        w, v = la.eigh(a)
        del w
        assert len(t) == 1  # v keeps the entry alive
        loss = (v * v).sum()
    loss.backward()
    assert a.grad is not None
    with tg.record() as t2:
        w, v = la.eigh(a)
        del w, v
    assert len(t2) == 0


def test_hooks_see_each_outputs_cotangent():
    a = tg.Tensor(_sym(), requires_grad=True)
    got = {}
    with tg.record():
        w, v = la.eigh(a)
        w.register_hook(lambda g: got.setdefault("w", g))
        v.register_hook(lambda g: got.setdefault("v", g * 0))  # a hook may replace the cotangent
        loss = _loss(w, v)
    loss.backward()
    np.testing.assert_allclose(got["w"], 2 * w.data + (v.data**2).sum(axis=0))
    np.testing.assert_array_equal(got["v"], 0)
    expected = tg.grad(lambda x: _loss(la.eigh(x)[0], tg.stop_gradient(la.eigh(x)[1])))(tg.Tensor(a.data))
    np.testing.assert_allclose(a.grad, expected, rtol=1e-10, atol=1e-12)


def test_gradient_sources_may_be_outputs_of_one_entry():
    a = tg.Tensor(_sym(), requires_grad=True)
    with tg.record() as t:
        w, v = la.eigh(a)
        loss = _loss(w, v)
    gw, gv, ga = t.gradient(loss, [w, v, a])
    np.testing.assert_allclose(gw, 2 * w.data + (v.data**2).sum(axis=0))
    np.testing.assert_allclose(gv, 2 * v.data * w.data)
    np.testing.assert_allclose(ga, tg.grad(lambda x: _loss(*la.eigh(x)))(tg.Tensor(a.data)), rtol=1e-10)


def test_create_graph_through_several_outputs_matches_finite_differences():
    a = tg.Tensor(_sym(4))
    u = np.random.default_rng(5).normal(size=(3, 3))
    got = tg.hvp(lambda x: _loss(*la.eigh(x)), a.data, u)
    eps = 1e-6
    grad = tg.grad(lambda x: _loss(*la.eigh(x)))
    fd = (grad(tg.Tensor(a.data + eps * u)) - grad(tg.Tensor(a.data - eps * u))) / (2 * eps)
    np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-6)


def test_views_and_tools_read_several_outputs():
    a = tg.Tensor(_sym(), requires_grad=True)
    with tg.record(track_source=True, detect_anomaly=True) as t:
        w, v = la.eigh(a)
        loss = _loss(w, v)
    printed = " ".join(str(t).split())  # the columns' padding aside
    assert "t0.eigenvalues, t0.eigenvectors = eigh(in0) (3,3) -> (3,), (3,3)" in printed, printed
    assert "multiply(t0.eigenvectors, t0.eigenvectors)" in printed, printed
    assert "saved: t0.eigenvalues, t0.eigenvectors (96 B)" in printed, printed
    dot = t.to_dot()
    assert '"op0" -> "t0.eigenvalues"' in dot and '"t0.eigenvectors" -> "op' in dot, dot
    assert t.memory_report() and tg.debug.memory.stats(t)["peak_bytes"] > 0
    out = io.StringIO()
    loss.backward(trace=out)
    assert "[0] t0.eigenvalues, t0.eigenvectors = eigh(in0)" in out.getvalue(), out.getvalue()
    assert "ḡt0 (3,), (3,3)" in out.getvalue(), out.getvalue()
    assert a.grad is not None


def test_checkpoint_recomputes_an_op_with_several_outputs():
    b = np.random.default_rng(6).normal(size=(3, 3)) + np.eye(3)[::-1] * 5

    def block(x):
        p, lo, up = la.lu(x)
        return lo * 2 + up

    x = tg.Tensor(b, requires_grad=True)
    with tg.record():
        loss = (tg.checkpoint(block)(x) ** 2).sum()
    loss.backward()
    np.testing.assert_allclose(x.grad, tg.grad(lambda y: (block(y) ** 2).sum())(tg.Tensor(b)), rtol=1e-10)


def test_numpys_result_types_through_tapegrad_numpy_and_numpys_dispatch():
    a = tg.Tensor(_sym(), requires_grad=True)
    for res in (tnp.linalg.eigh(a), np.linalg.eigh(a)):
        assert isinstance(res.eigenvalues, tg.Tensor) and isinstance(res.eigenvectors, tg.Tensor)
        np.testing.assert_allclose(res.eigenvalues.data, np.linalg.eigh(a.data).eigenvalues)
    sign, logabsdet = tnp.linalg.slogdet(a)
    np.testing.assert_allclose(logabsdet.data, np.linalg.slogdet(a.data).logabsdet)
    assert tnp.linalg.svd(a).S.shape == (3,) and tnp.linalg.qr(a).R.shape == (3, 3)


def test_compiled_matches_eager_through_several_outputs():
    a = _sym(7)

    def f(x):
        w, v = la.eigh(x)
        q, r = la.qr(v + x)
        return _loss(w, v) + (r * r).sum()

    step = tg.compile(tg.value_and_grad(f))
    want = tg.value_and_grad(f)(tg.Tensor(a))
    for _ in range(2):  # the traced call, then the program
        got = step(a)
        np.testing.assert_allclose(got[0], want[0].data if isinstance(want[0], tg.Tensor) else want[0], rtol=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-10, atol=1e-12)
    assert "output" in step.source and "eigh(" in step.source


def test_second_order_reads_an_output_that_died_before_the_replay():
    # eigvalsh drops the eigenvectors at once; the recorded replay's rule reads them, keyed to a new node of the
    # entry, so the second derivative flows through them too
    assert tg.gradgradcheck(lambda x: (la.eigvalsh(x) ** 3).sum(), tg.Tensor(_sym(8)))
    assert tg.gradgradcheck(lambda x: (la.svdvals(x) ** 3).sum(), tg.Tensor(_sym(9, batch=(2,))))
