"""Gradients over Dask arrays: what only a lazy, distributed library has. The op-by-op checks and the tape's
behaviour on Dask are the ``backend`` fixture's (tests/backends.py runs them on Dask too); here: NumPy mixing
with Dask, nothing computed until asked, one pass for the value and the gradients, no graph kept between
steps, random programs against NumPy, a cluster of processes, the example on a short run."""

import gc
import importlib.util
import json
import logging
import pathlib
import subprocess
import sys
import threading
import tracemalloc
import weakref

import numpy as np
import pytest
from backends import load
from hypothesis import given, settings
from programs import programs

import tapegrad as tg
from tapegrad import backend as tgb

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
from dask.callbacks import Callback  # noqa: E402  (after the skip: dask is optional)

ROOT = pathlib.Path(__file__).resolve().parent.parent
DASK = load("dask")


class Tasks(Callback):
    """Counts the tasks Dask runs while active (the threaded scheduler's callbacks)."""

    def __init__(self):
        super().__init__()
        self.n = 0
        self.lock = threading.Lock()

    def _posttask(self, key, result, dsk, state, worker_id):
        with self.lock:
            self.n += 1


def _logistic(w, b, X, y):
    z = X @ w + b
    return tg.mean(tg.logaddexp(0.0, z) - y * z) + 0.01 * tg.sum(w * w)


class Store:
    """An array-like store the Dask graph reads its chunks from (as it would a file): the graph holds the
    store itself, so a weak reference to it says whether any graph is still alive."""

    def __init__(self, array):
        self.array, self.shape, self.dtype, self.ndim = array, array.shape, array.dtype, array.ndim

    def __getitem__(self, index):
        return self.array[index]


def _data(rows=60, features=3, chunks=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, features))
    y = (rng.random(rows) < 0.5).astype(float)
    return X, y, da.from_array(X, chunks=(chunks, features)), da.from_array(y, chunks=chunks)


def test_import_tapegrad_does_not_import_dask():
    code = "import sys, numpy as np, tapegrad as tg; tg.exp(tg.Tensor(np.ones(2))); print('dask' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False", out.stderr


def test_numpy_parameters_mix_with_dask_data_and_gradients_are_lazy_and_exact():
    X, y, Xd, yd = _data()
    grads = {}
    for name, (Xi, yi) in {"numpy": (X, y), "dask": (Xd, yd)}.items():
        w = tg.Tensor(np.array([0.5, -0.25, 1.0]), requires_grad=True)
        b = tg.Tensor(np.array(0.1), requires_grad=True)
        with Tasks() as tasks:
            with tg.record():
                loss = _logistic(w, b, tg.Tensor(Xi), tg.Tensor(yi))
            loss.backward()
        if name == "dask":
            assert tasks.n == 0  # recording and replaying only built graphs
            assert tgb.is_lazy(loss.data) and tgb.is_lazy(w.grad) and tgb.is_lazy(b.grad)
            loss_value, gw = tg.compute(loss, w.grad)
            assert loss_value is loss and isinstance(loss.data, np.ndarray) and isinstance(gw, np.ndarray)
            tg.compute(b)
            assert isinstance(b.grad, np.ndarray)  # a tensor given to compute gets its gradient computed too
            grads[name] = (loss.item(), gw, b.grad)
        else:
            grads[name] = (loss.item(), w.grad, b.grad)
    np.testing.assert_allclose(grads["dask"][0], grads["numpy"][0], rtol=1e-13)
    for got, want in zip(grads["dask"][1:], grads["numpy"][1:]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_common_backend_lets_numpy_mix_with_dask_only():
    d, n = da.ones(2), np.ones(2)
    assert tgb.common_backend("add", [n, d]).name == "dask" and tgb.common_backend("add", [d, n, 2.0]).name == "dask"
    strict = load("array_api_strict")
    if not isinstance(strict, str):
        with pytest.raises(TypeError, match="add: inputs come from two array libraries, dask and array_api_strict"):
            tgb.common_backend("add", [d, n, strict.asarray(n)])


def test_value_and_gradients_are_computed_in_one_pass_over_the_data():
    calls = []

    def chunk(block, block_info=None):
        calls.append(block_info[0]["chunk-location"])
        return block * 1.0

    X, y, Xd, yd = _data(rows=80, chunks=20)
    Xd = Xd.map_blocks(chunk, dtype=float)  # a chunk read (or generated) each time a task needs it
    value, (gw, gb) = tg.value_and_grad(_logistic, argnums=(0, 1))(np.zeros(3), np.zeros(()), Xd, yd)
    assert calls == []
    value, gw, gb = tg.compute(value, gw, gb, scheduler="threads")
    assert sorted(calls) == [(i, 0) for i in range(4)]  # each of the 4 chunks once, for the loss and both gradients
    ref_value, (ref_w, ref_b) = tg.value_and_grad(_logistic, argnums=(0, 1))(np.zeros(3), np.zeros(()), X, y)
    np.testing.assert_allclose(value, ref_value, rtol=1e-13)
    np.testing.assert_allclose(gw, ref_w, rtol=1e-12)


def _steps(history, n=5, rows=20_000, features=10):
    """Train a few steps on data that only the Dask graph holds; returns a weak reference to that data."""
    source = Store(np.random.default_rng(0).standard_normal((rows, features + 1)))  # 1.7 MB
    probe = weakref.ref(source)
    data = da.from_array(source, chunks=(rows // 4, features + 1), asarray=True)
    del source
    X, y = tg.Tensor(data[:, :features]), tg.Tensor((data[:, features] > 0).astype(float))
    w = tg.Tensor(np.zeros(features), requires_grad=True)
    b = tg.Tensor(np.zeros(()), requires_grad=True)
    opt = tg.optim.SGD([w, b], lr=0.5)
    graphs = []
    for _ in range(n):
        opt.zero_grad()
        with tg.record():
            loss = _logistic(w, b, X, y)
        loss.backward()
        graphs.append(weakref.ref(loss.data.__dask_graph__()))
        tg.compute(loss, w, b)
        opt.step()
        history.append(loss)
    return probe, graphs


def test_a_history_of_lazy_losses_keeps_no_graph():
    _steps([])  # first use: Dask's lazily imported modules and caches are not what this test measures
    history = []
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        probe, graphs = _steps(history)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(history) == 5 and all(isinstance(h.data, np.ndarray) for h in history)
    assert history[-1].item() < history[0].item()
    assert probe() is None  # the data only the graphs held is gone: no loss in the history holds a graph
    assert all(g() is None for g in graphs)  # each step's graph was released once computed
    assert held < 200_000, f"the history holds {held} bytes after 5 steps (the data alone is 1.7 MB)"


def test_without_compute_a_lazy_loss_keeps_its_graph():
    # The test above can fail: a loss kept lazy holds its graph and, through it, the data.
    source = Store(np.ones((100, 3)))
    probe = weakref.ref(source)
    w = tg.Tensor(np.zeros(3), requires_grad=True)
    with tg.record():
        loss = (tg.Tensor(da.from_array(source, chunks=50)) @ w).sum()
    loss.backward()
    del source
    gc.collect()
    assert probe() is not None
    tg.compute(loss, w)
    gc.collect()
    assert probe() is None


def test_an_optimizer_step_on_lazy_gradients_names_the_fix():
    w = tg.Tensor(np.zeros(2), requires_grad=True)
    with tg.record():
        loss = (tg.Tensor(da.ones((4, 2), chunks=2)) @ w).sum()
    loss.backward()
    with pytest.raises(
        TypeError, match=r"SGD\.step: the gradient of a parameter of shape \(2,\) is a lazy dask array.*tg\.compute"
    ):
        tg.optim.SGD([w], lr=0.1).step()


def test_lazy_masks_and_indices_raise_naming_the_op_and_dask():
    x = tg.Tensor(DASK.asarray(np.array([1.0, -2.0, 3.0])), requires_grad=True)
    with pytest.raises(NotImplementedError, match="getitem: the dask backend needs an index known"):
        x[x > 0]
    with tg.record():
        y = x[np.array([True, False, True])].sum() + x[np.array([0, 0, 2])].sum() + x[::-1][1:].sum()
    y.backward()
    np.testing.assert_allclose(DASK.to_numpy(x.grad), [4.0, 1.0, 2.0])


@settings(max_examples=max(10, settings.default.max_examples // 2))
@given(programs())
def test_random_programs_on_dask_give_numpy_s_gradients(program):
    ct = np.random.default_rng(0).uniform(0.5, 1.5, np.shape(program(*map(tg.Tensor, program.inputs)).data))
    results = []
    for asarray in (np.asarray, DASK.asarray):
        xs = [tg.Tensor(asarray(a), requires_grad=True) for a in program.inputs]
        with tg.record():
            out = program(*xs)
        out.backward(asarray(ct))
        results.append([out.data] + [x.grad for x in xs])
    for want, got in zip(*results):
        if want is None:
            assert got is None
            continue
        assert isinstance(got, da.Array)
        np.testing.assert_allclose(DASK.to_numpy(got), want, rtol=1e-10, atol=1e-12)


def _cluster_steps(client):
    X, y, Xd, yd = _data(rows=400, chunks=100)
    w = tg.Tensor(np.zeros(3), requires_grad=True)
    b = tg.Tensor(np.zeros(()), requires_grad=True)
    opt = tg.optim.Adam([w, b], lr=0.1)
    history = []
    for _ in range(3):
        opt.zero_grad()
        with tg.record():
            loss = _logistic(w, b, tg.Tensor(Xd), tg.Tensor(yd))
        loss.backward()
        tg.compute(loss, w, b)  # on the cluster: the active client is Dask's default scheduler
        opt.step()
        history.append(loss.item())
    return history, w.data


@pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::DeprecationWarning")
def test_a_local_cluster_of_two_processes_trains_as_the_threaded_scheduler_does():
    distributed = pytest.importorskip("distributed")
    local, w_local = _cluster_steps(None)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, memory_limit="300MB"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        history, w = _cluster_steps(client)
        workers = client.scheduler_info()["workers"]
    assert len(workers) == 2
    assert history[-1] < history[0]
    np.testing.assert_allclose(history, local, rtol=1e-12)
    np.testing.assert_allclose(w, w_local, rtol=1e-12)


def _example():
    spec = importlib.util.spec_from_file_location("example_dask_logistic", ROOT / "examples" / "dask_logistic.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::DeprecationWarning")
def test_the_example_fits_out_of_core_on_a_short_run(tmp_path):
    pytest.importorskip("distributed")
    pytest.importorskip("scipy")
    args = ["--rows", "60000", "--chunk-rows", "5000", "--features", "8", "--subsample-rows", "10000"]
    args += ["--lbfgs-iters", "8", "--adam-steps", "4", "--no-throughput", "--quiet", "--out", str(tmp_path)]
    example = _example()
    results = example.main(args)
    s, f = results["subsample"], results["full"]
    np.testing.assert_allclose(s["lbfgs_loss_dask"], s["lbfgs_loss_numpy"], rtol=1e-9)
    np.testing.assert_allclose(s["adam_loss_dask"], s["adam_loss_numpy"], rtol=1e-12)
    assert f["lbfgs_loss"] < 0.69 and f["adam_last_loss"] < f["adam_first_loss"]
    assert len(results["worker_peak_bytes"]) == 2 and all(p > 0 for p in results["worker_peak_bytes"])
    assert example.headroom(results) > 0.25  # a worker holds a chunk or two: far below its 250 MB
    assert "headroom: every worker stayed at least" in example.report(results)
    assert (tmp_path / "results.json").exists()


@pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::DeprecationWarning")
def test_the_example_shows_its_progress_and_keeps_daskss_worker_warnings_for_verbose(tmp_path):
    pytest.importorskip("distributed")
    pytest.importorskip("scipy")
    args = [sys.executable, str(ROOT / "examples" / "dask_logistic.py"), "--rows", "20000", "--chunk-rows", "5000"]
    args += ["--features", "4", "--subsample-rows", "5000", "--lbfgs-iters", "2", "--adam-steps", "2"]
    args += ["--no-throughput", "--out", str(tmp_path)]
    run = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    passes = [i for i, line in enumerate(lines) if line.startswith("  L-BFGS pass ")]
    assert passes and passes[-1] < lines.index(next(line for line in lines if line.startswith("data: ")))
    assert any(line.startswith("  Adam step ") for line in lines)
    assert "distributed." not in run.stderr, run.stderr  # no worker notes without --verbose
    quiet = subprocess.run(args + ["--quiet"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert quiet.returncode == 0 and quiet.stdout == "", quiet.stdout


@pytest.mark.parametrize("verbose", [False, True])
def test_the_example_keeps_the_workers_notes_for_verbose(monkeypatch, verbose):
    # The workers' own notes ("Pausing worker" near the limit) are their loggers' warnings: silenced below
    # ERROR unless --verbose. Checked on the cluster's arguments, since provoking them takes a worker near its
    # limit, which pauses it and can stall the run.
    pytest.importorskip("distributed")
    distributed = pytest.importorskip("dask.distributed")  # where the example imports them from
    seen = {}
    monkeypatch.setattr(distributed, "LocalCluster", lambda **kw: seen.update(kw) or "cluster")
    monkeypatch.setattr(distributed, "Client", lambda cluster: ("client", cluster))
    example = _example()
    args = example.build_parser().parse_args(["--verbose"] if verbose else [])
    assert example.start_cluster(args, 2) == (("client", "cluster"), "cluster")
    assert seen["silence_logs"] == (logging.WARNING if verbose else logging.ERROR)


def test_the_example_gathers_the_subsample_chunk_by_chunk(monkeypatch):
    x = da.from_array(np.arange(60.0).reshape(20, 3), chunks=(5, 3))
    calls, compute = [], da.Array.compute
    monkeypatch.setattr(da.Array, "compute", lambda self, **kw: calls.append(self.numblocks) or compute(self, **kw))
    np.testing.assert_array_equal(_example().gather(x), np.arange(60.0).reshape(20, 3))
    assert calls == [(1, 1)] * 4  # one chunk per compute: no worker ever concatenates the whole


def test_the_guide_lists_every_op_dask_cannot_run_and_quotes_the_committed_run():
    from op_table import OPS

    page = (ROOT / "docs" / "guide" / "dask.md").read_text()
    refused = {n for n, op in {**tg.REGISTRY, **tg.NONDIFF}.items() if "dask" in op.refuses}
    refused |= {case.name for case in OPS if "dask" in case.unsupported}  # functions composed of those ops
    missing = sorted(name for name in refused if f"`{name}`" not in page)
    assert not missing, f"docs/guide/dask.md does not list {missing}"
    example = _example()
    results = json.loads((ROOT / "docs" / "dask-logistic.json").read_text())
    for line in example.report(results).splitlines():
        assert f"- {line}\n" in page, f"docs/guide/dask.md: not the committed run's figure: {line}"


@pytest.mark.parametrize("reduce", [tg.mean, tg.sum, lambda x: tg.mean(x, axis=0).sum()], ids=["mean", "sum", "axis"])
def test_a_gradient_broadcast_back_over_a_chunked_array_keeps_its_chunks(reduce):
    # Before, mean's and sum's gradient over a Dask array was one block the size of the data: a pass over
    # a thousand chunks put the whole of it on one worker (20 MB for the example's 2.5 million rows).
    x = tg.Tensor(da.arange(24000.0, chunks=3000).reshape(8000, 3) / 1000.0, requires_grad=True)  # chunk by chunk
    with tg.record():
        loss = reduce(tg.sin(x))
    loss.backward()
    assert x.grad.chunks == x.data.chunks
    largest = Largest()
    with largest:
        grad = x.grad.compute()
    assert largest.nbytes <= 1000 * 3 * 8  # no task made more than a chunk
    expected = tg.grad(lambda v: reduce(tg.sin(v)))(np.arange(24000.0).reshape(8000, 3) / 1000.0)
    np.testing.assert_allclose(grad, expected, rtol=1e-12)


class Largest(Callback):
    """The largest chunk a task returned while active (bytes; the final concatenation of a compute aside)."""

    def __init__(self):
        super().__init__()
        self.nbytes = 0

    def _posttask(self, key, result, dsk, state, worker_id):
        if isinstance(key, tuple):  # a chunk's key: (name, i, j)
            self.nbytes = max(self.nbytes, getattr(result, "nbytes", 0))


def test_a_large_numpy_parameter_adds_its_numpy_and_dask_gradients():
    # 4096 elements: the replay adds large cotangents in place where it can, never a Dask one into NumPy memory
    w = tg.Tensor(np.linspace(-1.0, 1.0, 4096), requires_grad=True)
    X = da.ones((8, 4096), chunks=(4, 4096))
    with tg.record():
        loss = (tg.Tensor(X) @ w).sum() + (w * w).sum()  # replayed last first: the NumPy gradient comes first
    loss.backward()
    tg.compute(loss, w)
    np.testing.assert_allclose(w.grad, 2 * w.data + 8.0)
