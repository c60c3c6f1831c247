"""Guards for the project's thesis, in bytes (tracemalloc), never in time: what a tape keeps, and when it goes.

The full measurement, with memray and side by side with the node-graph reference, is
``python -m benchmarks.memory``; these are its fast, dependency-free checks.
"""

import gc
import inspect
import tracemalloc
import weakref

import numpy as np
import pytest

import tapegrad as tg
from benchmarks import workloads as wl
from tapegrad.backend import numpy_rules
from tapegrad.registry import defop


@pytest.fixture(autouse=True)
def _heap_frozen():
    """Every mark runs ``gc.collect()``: what was alive before the test (modules, the other tests' objects) is
    moved out of the collector's sight, so each collection walks only what the test made (10 s -> 2 s for this
    module), and what the test leaks is still counted by tracemalloc."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


class _Marks:
    """A meter for the workloads: live traced bytes at each mark."""

    def __init__(self):
        self.points = {}

    def mark(self, label):
        gc.collect()  # empties CPython's free lists, which tracemalloc counts as allocated (benchmarks.memory)
        self.points[label] = tracemalloc.get_traced_memory()[0]


def _traced(workload, engine, **kw):
    wl.history_kept(engine, _Marks(), steps=3, sizes=kw.get("sizes", (256, 256, 10)), n=kw.get("n", 64))  # warm-up
    meter = _Marks()
    tracemalloc.start()
    try:
        out = workload(engine, meter, **kw)
    finally:
        tracemalloc.stop()
    return meter.points, out


def _slope(points):
    steps = np.array([k for k in points if isinstance(k, int) and k >= 1], dtype=float)
    return float(np.polyfit(steps, [points[int(s)] for s in steps], 1)[0])


def test_history_kept_retains_under_1kib_per_step_while_the_node_graph_keeps_the_activations():
    points, out = _traced(wl.history_kept, wl.TapegradAdapter(), steps=60)
    ours = _slope(points)
    ref_points, ref = _traced(wl.history_kept, wl.NodeGraphAdapter(), steps=20)
    theirs = _slope(ref_points)
    assert ours < 1024, f"tapegrad retains {ours:.0f} B per kept loss"
    assert theirs >= out["activations"], f"node-graph retains {theirs:.0f} B/step < activations {out['activations']}"


def _line_of(fn, text) -> int:
    """The line of ``fn``'s source file holding ``text`` (a filter that survives edits above it)."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


class _OursMarks(_Marks):
    """Live traced bytes at each mark, less the blocks NumPy keeps in its dimension cache.

    NumPy keeps the freed shape-and-strides blocks of small arrays in a cache for its next arrays: 56-byte
    blocks, bounded (a few per size), that stay traced to the line whose array first allocated them, and fill
    over thousands of steps. Two lines of a step make such arrays with no tapegrad object beside them: NumPy's
    ``_wrapfunc`` (``np.reshape``, whose loop ``np.reshape(np.ones(()) * c, (1, 1))`` alone shows it) and the
    read-only view a loss's ``mean`` and ``sum`` pass back (``numpy_rules._broadcast_view``). Bounded, but enough
    to push a 1,000-step window past 1% now and then, so their traces are left out; an array tapegrad kept alive
    would also keep the tape entry, node or container tapegrad allocated for it, which are counted.
    """

    NUMPY_CACHE = (
        tracemalloc.Filter(False, "*numpy/_core/fromnumeric.py", 54),
        *(
            tracemalloc.Filter(False, numpy_rules.__file__, _line_of(numpy_rules._broadcast_view, text))
            for text in ("np.ndarray(", "writeable = False")  # the view, and its flags made read-only
        ),
        tracemalloc.Filter(False, tracemalloc.__file__),  # the meter's own snapshots
    )

    def __init__(self):
        super().__init__()
        self.snapshots = {}

    def mark(self, label):
        gc.collect()
        snapshot = tracemalloc.take_snapshot().filter_traces(self.NUMPY_CACHE)
        self.points[label] = sum(t.size for t in snapshot.traces)
        self.snapshots[label] = snapshot

    def growth(self, start, end, top=8) -> str:
        """Where the live bytes grew between two marks, largest first: the lines that allocated them."""
        stats = self.snapshots[end].compare_to(self.snapshots[start], "lineno")
        return "\n".join(str(s) for s in stats[:top])


def test_without_history_live_memory_stays_flat():
    engine = wl.TapegradAdapter()
    # NumPy keeps small-allocation caches that fill over the first few hundred steps (bounded, and not
    # tapegrad's): let them reach their steady state before the measured run, so 1% is tapegrad's share.
    wl.long_run(engine, _Marks(), steps=300, n=16, every=1000)
    meter = _OursMarks()
    tracemalloc.start(1)  # the innermost frame of each block: enough to tell NumPy's cache from the rest
    try:
        wl.long_run(engine, meter, steps=1000, n=16, every=1000)  # 256-256-10 MLP
    finally:
        tracemalloc.stop()
    points = meter.points
    assert abs(points[1000] - points[10]) <= 0.01 * points[10], f"{points}; grew at:\n{meter.growth(10, 1000)}"


def test_one_step_peak_is_within_ten_percent_of_params_grads_and_batch():
    E = wl.TapegradAdapter()
    wl.one_step(E, _Marks())  # warm-up: the MLP, 784-512-512-10, batch 256
    tracemalloc.start()
    try:
        out = wl.one_step(E, _Marks())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 1.10 * out["floor"], peak / out["floor"]


def test_after_backward_the_tape_holds_zero_saved_bytes():
    x = tg.Tensor(np.ones((8, 4)), requires_grad=True)
    with tg.record() as t:
        loss = tg.exp(tg.relu(x) * x).sum()
    assert t.saved_bytes() > 0
    loss.backward()
    assert t.saved_bytes() == 0 and len(t) == 0


# -- memory falls through replay: a test-only op reads the traced bytes when its rule runs -----------------
_seen = []
_probe = defop(
    "memory_probe_test",
    lambda x: x,
    lambda xp, g, ans, x: (_seen.append(tracemalloc.get_traced_memory()[0]), g)[1],
    register=False,
)


def test_memory_falls_monotonically_through_replay():
    rng = np.random.default_rng(0)
    ws = [tg.Tensor(rng.standard_normal((32, 32)) * 0.2, requires_grad=True) for _ in range(6)]
    x = tg.Tensor(rng.standard_normal((1024, 32)))  # activations (256 KiB a layer) dominate the weights (8 KiB)
    _seen.clear()
    tracemalloc.start()
    try:
        with tg.record():
            h = x
            for w in ws:
                h = _probe(tg.tanh(h @ w))
            loss = (h * h).sum()  # a real cotangent from the top, not a broadcast view of a scalar
            h = None  # the test's own reference would keep the last activation alive
        loss.backward()
    finally:
        tracemalloc.stop()
    assert len(_seen) == len(ws)
    drops = np.diff(_seen)
    assert (drops < 0).all(), _seen  # each layer replayed frees more than the gradients it adds


# -- budgets ----------------------------------------------------------------------------------------------
def test_budget_raises_at_the_op_that_crosses_it_and_leaves_the_tape_replayable():
    x = tg.Tensor(np.ones(1000), requires_grad=True)  # 8,000 bytes
    with tg.record(max_saved_bytes=20_000) as t:
        a = tg.exp(x)  # saves its output: 8,000
        b = tg.exp(a)  # 16,000
        total = b.sum()  # saves only a shape
        with pytest.raises(tg.TapeBudgetError, match=r"exp: .*over its budget of 20,000") as info:
            tg.exp(b)
        err = info.value
        assert (err.op, err.budget, err.saved_bytes, err.op_bytes, err.entries) == ("exp", 20_000, 16_000, 8_000, 3)
        assert err.largest[:2] == [("exp", 8000), ("exp", 8000)]
        assert len(t) == 3 and t.saved_bytes() == 16_000  # nothing half-recorded
    total.backward()
    np.testing.assert_allclose(x.grad, np.exp(np.exp(1.0)) * np.exp(1.0))


def test_budget_counts_what_the_tape_really_keeps():
    x = tg.Tensor(np.ones(1000), requires_grad=True)
    with tg.record(max_saved_bytes=10_000) as t:
        for _ in range(20):
            tg.exp(x)  # each result is dropped at once: its entry is dead and keeps nothing
        y = tg.sin(tg.exp(x))  # sin saves exp's output again: the same array, counted once
    assert t.saved_bytes() == 8_000 and y.requires_grad


def test_tapes_without_a_budget_have_no_monitor():
    with tg.record() as t:
        pass
    assert t.monitors == ()
    with pytest.raises(ValueError, match="max_saved_bytes"):
        tg.record(max_saved_bytes=-1)


# -- checkpoint -------------------------------------------------------------------------------------------
def _mlp(ws, x, every):
    def block(h, group):
        for w in group:
            h = tg.tanh(h @ w)
        return h

    if every:
        for k in range(0, len(ws), every):
            x = tg.checkpoint(lambda h, g=ws[k : k + every]: block(h, g))(x)
    else:
        x = block(x, ws)
    return (x * x).sum()


def test_checkpoint_gives_exactly_the_plain_gradients_and_passes_gradcheck():
    rng = np.random.default_rng(0)
    ws = [tg.Tensor(rng.standard_normal((6, 6)) * 0.5, requires_grad=True) for _ in range(4)]
    x = tg.Tensor(rng.standard_normal((5, 6)), requires_grad=True)
    grads = []
    for every in (0, 2):
        with tg.record() as t:
            loss = _mlp(ws, x, every)
        grads.append(t.gradient(loss, [x, *ws]))
    for plain, recomputed in zip(*grads):
        assert np.array_equal(plain, recomputed)
    assert tg.gradcheck(lambda x, w0, w1: _mlp([w0, w1], x, 1), x, ws[0], ws[1])


def test_checkpoint_is_one_entry_saving_only_its_inputs():
    rng = np.random.default_rng(1)
    ws = [tg.Tensor(rng.standard_normal((64, 64)) * 0.1, requires_grad=True) for _ in range(4)]
    x = tg.Tensor(rng.standard_normal((256, 64)))
    saved = []
    for every in (0, 4):
        with tg.record() as t:
            loss = _mlp(ws, x, every)
        saved.append((len(t), t.saved_bytes()))
        loss.backward()
    (n_plain, plain), (n_ckpt, ckpt) = saved
    inputs = x.data.nbytes + sum(w.data.nbytes for w in ws)
    out = 256 * 64 * 8  # the block's output, saved by x * x
    assert n_ckpt == 3 and ckpt == inputs + out < plain


def test_checkpoint_second_derivatives_match():
    rng = np.random.default_rng(2)
    w = tg.Tensor(rng.standard_normal((3, 3)), requires_grad=True)
    x = tg.Tensor(rng.standard_normal((2, 3)), requires_grad=True)
    results = []
    for every in (0, 1):
        with tg.record() as outer:
            with tg.record() as inner:
                loss = _mlp([w], x, every)
            gx = inner.gradient(loss, x)
            s = (gx * gx).sum()
        results.append(outer.gradient(s, w))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12, atol=1e-12)


CHECKPOINTED_TRANSFORMS = {  # (transform of f, of the same f without checkpoints)
    "vmap(grad)": lambda f, W: tg.vmap(tg.grad(f))(np.stack([W, 2 * W])),
    "vmap(grad, loop=True)": lambda f, W: tg.vmap(tg.grad(f), loop=True)(np.stack([W, 2 * W])),
    "grad(vmap)": lambda f, W: tg.grad(lambda w: tg.vmap(f)(tg.stack([w, 2 * w])).sum())(W),
    "hvp": lambda f, W: tg.hvp(f, W, W),
    "jvp(grad)": lambda f, W: tg.jvp(tg.grad(f), (W,), (np.ones_like(W),))[1],
    "jacfwd": lambda f, W: tg.jacfwd(f)(W),
}


@pytest.mark.parametrize("transform", list(CHECKPOINTED_TRANSFORMS))
def test_checkpoint_inside_vmap_and_forward_mode_gives_the_plain_derivatives(transform):
    # no batching or forward-mode rule: refused before, and under vmap(loop=True) an IndexError; it runs as fn
    rng = np.random.default_rng(4)
    W, X = rng.normal(size=(3, 3)), rng.normal(size=(2, 3))
    block = lambda h, w: tg.tanh(h @ w) * 2.0  # noqa: E731
    ck = tg.checkpoint(block)
    run = CHECKPOINTED_TRANSFORMS[transform]
    got = run(lambda w: (ck(ck(X, w), w) ** 2).sum(), W)
    np.testing.assert_allclose(got, run(lambda w: (block(block(X, w), w) ** 2).sum(), W), rtol=1e-12)


def test_checkpoint_refuses_an_outer_intermediate_it_does_not_take_as_argument():
    w = tg.Tensor(np.ones((2, 2)), requires_grad=True)
    with tg.record():
        hidden = w * 2.0
        with pytest.raises(ValueError, match="pass that tensor"):
            tg.checkpoint(lambda h: h @ hidden)(tg.Tensor(np.ones((2, 2))))


def test_leaves_get_their_gradient_buffers_unshared():
    # The replay hands a leaf the gradient buffer itself when nothing else holds it (no copy at the peak);
    # a buffer two leaves received (add's rule passes g to both) must still become two arrays.
    a = tg.Tensor(np.ones(4), requires_grad=True)
    b = tg.Tensor(np.ones(4), requires_grad=True)
    with tg.record():
        loss = ((a + b) * 3.0).sum()
    loss.backward()
    assert not np.shares_memory(a.grad, b.grad)
    a.grad += 1.0
    np.testing.assert_allclose(b.grad, 3.0)


def test_hvp_frees_its_tape_and_every_tangent_by_reference_counting():
    # hvp records f's ops and their tangent rules' ops on one tape: after it returns, the values, the tangents
    # and the tape are gone without the cycle collector, and repeated calls hold only their results.
    from tapegrad import tape as tape_module
    from tapegrad._state import FORWARD
    from tapegrad.forward import tangent_of

    x = np.random.default_rng(3).standard_normal(20_000)
    refs = []

    def f(x):
        h = tg.exp(tg.sin(x)) * x
        lv = FORWARD.get()[-1]
        refs.extend([weakref.ref(h.data), weakref.ref(tangent_of(h, lv).data), weakref.ref(tape_module.current())])
        return (h * h).sum()

    tg.hvp(f, x[:3], x[:3])  # warm up
    gc.disable()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        kept = [tg.hvp(f, x, x) for _ in range(5)]
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
        gc.enable()
    assert all(r() is None for r in refs), [r() is None for r in refs]
    assert held < sum(k.nbytes for k in kept) + 100_000, held
