"""Logistic regression on a data set larger than the workers' memory: gradients over Dask arrays.

The data (``--rows`` x ``--features`` float64 values and a 0/1 label per row) is generated chunk by chunk from
``--seed``, inside the workers, and never held whole anywhere: each pass over it regenerates the chunks. The
weights are small NumPy arrays; the data are Dask arrays; every op that mixes them runs in Dask, so the loss
and its gradient are Dask graphs, evaluated together by ``tg.compute`` in one pass over the chunks.

Two fits: full-batch L-BFGS (SciPy's ``minimize(jac=True)`` through ``tg.value_and_grad`` and ``tg.compute``)
and mini-batch Adam (a few chunks per step). Both are first run on a subsample both as Dask and as NumPy
arrays, which must reach the same loss. The figures (wall time, the workers' peak memory from the cluster's
own monitor against their limit, throughput with 1 and 2 workers) go to ``--out``/results.json and are printed.

Memory: a worker holds a few chunks at a time (each task reads one chunk and reduces it to ``features + 1``
numbers), and what the driver needs whole (the subsample, as NumPy) is gathered one chunk at a time and joined
here, never concatenated on a worker: the workers' peak stays far below their limit (the report says by how
much). Progress (each pass of L-BFGS, Adam's loss) is printed as it goes; Dask's own warnings from the workers
are shown with ``--verbose`` only.

    python examples/dask_logistic.py                           # 2 workers of 250 MB, 2 GB of data
    python examples/dask_logistic.py --scheduler tcp://host:8786 --rows 100_000_000   # a real cluster

Nothing in the fitting code names the cluster: ``Client(...)`` makes it the one ``dask.compute`` uses.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import math
import pathlib
import tempfile
import time

import numpy as np

import tapegrad as tg

DEFAULT_OUT = str(pathlib.Path(tempfile.gettempdir()) / "tapegrad" / "dask_logistic")


# -- the data: generated chunk by chunk, the same for every run with the same seed -------------------------------
def true_weights(features: int, seed: int):
    rng = np.random.default_rng([seed, 2**31])
    return rng.standard_normal(features) / math.sqrt(features) * 3.0, 0.5


def _chunk(i, features, rows, seed, piece=1024):
    """Chunk ``i``: ``rows`` rows of features and, in the last column, a label drawn from the true model.

    The features are drawn ``piece`` rows at a time straight into the chunk (the same numbers as one draw of
    them all): a worker making a chunk holds it and a small piece, not the chunk twice."""
    rng = np.random.default_rng([seed, i])
    out = np.empty((rows, features + 1))
    x = out[:, :features]
    for start in range(0, rows, piece):
        x[start : start + piece] = rng.standard_normal((min(piece, rows - start), features))
    w, b = true_weights(features, seed)
    out[:, features] = rng.random(rows) < 1 / (1 + np.exp(-(x @ w + b)))
    return out


def _chunk_at(features, seed, block_info=None):
    where = block_info[None]
    return _chunk(where["chunk-location"][0], features, where["chunk-shape"][0], seed)


def make_data(rows: int, features: int, chunk_rows: int, seed: int):
    """The data as one Dask array of shape (rows, features + 1), the label in the last column.

    Each chunk is a task of its own with no input (a root task): Dask's scheduler then hands a worker a new
    chunk only as it finishes the last ones, so a worker holds a few chunks at a time, not as many as it can
    generate ahead of their use."""
    import dask.array as da

    sizes = (chunk_rows,) * (rows // chunk_rows) + ((rows % chunk_rows,) if rows % chunk_rows else ())
    return da.map_blocks(_chunk_at, chunks=(sizes, (features + 1,)), dtype=np.float64, features=features, seed=seed)


def split(data, features):
    return tg.Tensor(data[:, :features]), tg.Tensor(data[:, features])


def gather(array):
    """A Dask array as one NumPy array in this process, its chunks computed and brought here one at a time:
    ``array.compute()`` would concatenate them on a worker first, which then holds the chunks and the whole."""
    return np.concatenate([block.compute() for block in array.blocks])


def _silent(message):
    pass


# -- the model ------------------------------------------------------------------------------------------------------
def loss_fn(w, b, X, y, l2):
    """The mean logistic loss of labels ``y`` under logits ``X @ w + b``, plus an L2 penalty on ``w``."""
    z = X @ w + b
    return tg.mean(tg.logaddexp(0.0, z) - y * z) + 0.5 * l2 * tg.sum(w * w)


def fit_lbfgs(X, y, l2, maxiter, say=_silent):
    """Full-batch L-BFGS: every evaluation is one pass over the data, value and gradient together."""
    from scipy.optimize import minimize

    value_and_grad = tg.value_and_grad(loss_fn, argnums=(0, 1))
    d = X.shape[1]
    evaluations = []

    def fun(theta):
        start = time.perf_counter()
        value, (gw, gb) = value_and_grad(theta[:d], theta[d], X, y, l2)  # Dask graphs, nothing computed yet
        value, gw, gb = tg.compute(value, gw, gb)  # one pass over the chunks
        evaluations.append(float(value))
        say(f"  L-BFGS pass {len(evaluations)}: loss {float(value):.6f} ({time.perf_counter() - start:.1f} s)")
        return float(value), np.concatenate([gw, np.reshape(gb, 1)])

    res = minimize(fun, np.zeros(d + 1), jac=True, method="L-BFGS-B", options={"maxiter": maxiter, "gtol": 1e-9})
    return res.x, float(res.fun), evaluations


def fit_adam(data, features, l2, steps, batch_chunks, lr, seed, say=_silent):
    """Mini-batch Adam: each step reads ``batch_chunks`` chunks picked at random (the same for every run)."""
    w = tg.Tensor(np.zeros(features), requires_grad=True)
    b = tg.Tensor(np.zeros(()), requires_grad=True)
    opt = tg.optim.Adam([w, b], lr=lr)
    rng = np.random.default_rng(seed)
    history = []
    for _ in range(steps):
        picked = np.sort(rng.choice(data.numblocks[0], size=min(batch_chunks, data.numblocks[0]), replace=False))
        X, y = split(data.blocks[picked.tolist()] if hasattr(data, "blocks") else _rows(data, picked), features)
        opt.zero_grad()
        with tg.record():
            loss = loss_fn(w, b, X, y, l2)
        loss.backward()  # lazy gradients in w.grad and b.grad
        tg.compute(loss, w, b)  # the loss and both gradients in one pass; no graph is kept on them
        opt.step()
        history.append(loss)  # a concrete value: the history keeps no graph
        if len(history) % 10 == 0 or len(history) in (1, steps):
            say(f"  Adam step {len(history)}: loss {loss.item():.6f}")
    return np.concatenate([w.data, [b.data]]), [h.item() for h in history]


class _Blocks:
    """A NumPy array cut into the same chunks as the Dask array it was computed from (for the NumPy run)."""

    def __init__(self, array, chunk_rows):
        self.array, self.chunk_rows = array, chunk_rows
        self.numblocks = (math.ceil(len(array) / chunk_rows),)


def _rows(data, picked):
    return np.concatenate([data.array[i * data.chunk_rows : (i + 1) * data.chunk_rows] for i in picked])


# -- the cluster and its figures --------------------------------------------------------------------------------------
def start_cluster(args, workers):
    from dask.distributed import Client, LocalCluster

    if args.scheduler:
        return Client(args.scheduler), None
    cluster = LocalCluster(
        n_workers=workers,
        threads_per_worker=args.threads_per_worker,
        memory_limit=args.memory_limit,
        processes=True,
        dashboard_address=None,
        silence_logs=logging.WARNING if args.verbose else logging.ERROR,  # the workers' "Pausing worker" notes
    )
    return Client(cluster), cluster


def _worker_memory(dask_worker):
    """A worker's own record: the peak of its process memory as its monitor sampled it, and its limit."""
    return {
        "peak": int(max(dask_worker.monitor.quantities["memory"])),
        "limit": dask_worker.memory_manager.memory_limit,
    }


def worker_memory(client) -> dict:
    """The peaks and limits of the cluster's workers (bytes, sorted)."""
    memory = client.run(_worker_memory)
    return {
        "worker_peak_bytes": sorted(m["peak"] for m in memory.values()),
        "worker_limit_bytes": sorted(int(m["limit"] or 0) for m in memory.values()),
    }


def headroom(results) -> float | None:
    """The smallest share of its limit that a worker left unused, over every cluster the run started."""
    pairs = [(results.get("worker_peak_bytes", []), results.get("worker_limit_bytes", []))]
    pairs += [
        (t.get("worker_peak_bytes", []), t.get("worker_limit_bytes", []))
        for t in results.get("throughput", {}).values()
    ]
    shares = [1 - max(peaks) / max(limits) for peaks, limits in pairs if peaks and limits and max(limits)]
    return min(shares) if shares else None


def one_pass(data, features, l2):
    """Seconds for one value-and-gradient pass over all of the data."""
    X, y = split(data, features)
    start = time.perf_counter()
    value, grads = tg.value_and_grad(loss_fn, argnums=(0, 1))(np.zeros(features), np.zeros(()), X, y, l2)
    tg.compute(value, grads)
    return time.perf_counter() - start


def run(args, say=_silent) -> dict:
    import dask

    data = make_data(args.rows, args.features, args.chunk_rows, args.seed)
    d = args.features
    results = {
        "rows": args.rows,
        "features": d,
        "chunk_rows": args.chunk_rows,
        "data_bytes": int(data.nbytes),
        "workers": args.workers,
        "memory_limit": args.memory_limit,
    }
    if args.scheduler == "threads":  # Dask's default scheduler: threads of this process, no cluster
        client = cluster = None
    else:
        client, cluster = start_cluster(args, args.workers)
    try:
        # The subsample: the first chunks, as Dask arrays and as NumPy arrays computed from the same chunks.
        k = max(1, min(data.numblocks[0], args.subsample_rows // args.chunk_rows))
        sub = data.blocks[:k]
        say(f"subsample of {sub.shape[0]:,} rows, as NumPy (gathered chunk by chunk) and as Dask arrays")
        sub_np = gather(sub)
        X_np, y_np = tg.Tensor(sub_np[:, :d]), tg.Tensor(sub_np[:, d])
        _, loss_np, _ = fit_lbfgs(X_np, y_np, args.l2, args.lbfgs_iters)
        _, loss_dask, _ = fit_lbfgs(*split(sub, d), args.l2, args.lbfgs_iters)
        adam_np = fit_adam(_Blocks(sub_np, args.chunk_rows), d, args.l2, args.adam_steps, args.batch_chunks, args.lr, 1)
        adam_dask = fit_adam(sub, d, args.l2, args.adam_steps, args.batch_chunks, args.lr, 1)
        say(f"  L-BFGS loss {loss_np:.10f} (NumPy) {loss_dask:.10f} (Dask)")
        results["subsample"] = {
            "rows": int(sub.shape[0]),
            "lbfgs_loss_numpy": loss_np,
            "lbfgs_loss_dask": loss_dask,
            "adam_loss_numpy": adam_np[1][-1],
            "adam_loss_dask": adam_dask[1][-1],
        }
        # The whole data set, out of core.
        say(f"all {args.rows:,} rows ({data.nbytes / 1e6:,.0f} MB, {data.numblocks[0]} chunks), L-BFGS:")
        start = time.perf_counter()
        theta, loss, evaluations = fit_lbfgs(*split(data, d), args.l2, args.lbfgs_iters, say)
        lbfgs_s = time.perf_counter() - start
        say(f"all rows, Adam on {args.batch_chunks} chunks a step:")
        start = time.perf_counter()
        _, adam_history = fit_adam(data, d, args.l2, args.adam_steps, args.batch_chunks, args.lr, 1, say)
        adam_s = time.perf_counter() - start
        w_true, b_true = true_weights(d, args.seed)
        results["full"] = {
            "lbfgs_loss": loss,
            "lbfgs_passes": len(evaluations),
            "lbfgs_seconds": lbfgs_s,
            "rows_per_second": args.rows * len(evaluations) / lbfgs_s,
            "weight_error": float(np.linalg.norm(theta[:d] - w_true) / np.linalg.norm(w_true)),
            "adam_first_loss": adam_history[0],
            "adam_last_loss": adam_history[-1],
            "adam_steps": len(adam_history),
            "adam_seconds": adam_s,
        }
        if client is not None:
            results.update(worker_memory(client))
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    if args.throughput and not args.scheduler:  # the same pass on a cluster of 1 worker, then of 2
        results["throughput"] = {}
        for workers in (1, 2):
            say(f"one pass with {workers} worker(s), {args.repeats} timed after a warm-up")
            client, cluster = start_cluster(args, workers)
            try:
                one_pass(data, d, args.l2)  # warm: the workers import tapegrad and NumPy once
                seconds = min(one_pass(data, d, args.l2) for _ in range(args.repeats))
                memory = worker_memory(client)
            finally:
                client.close()
                cluster.close()
            results["throughput"][str(workers)] = {"seconds": seconds, "rows_per_second": args.rows / seconds, **memory}
    results["dask"] = dask.__version__
    return results


def report(results) -> str:
    mb = 1e6
    lines = [
        f"data: {results['rows']:,} rows x {results['features']} features, {results['data_bytes'] / mb:,.0f} MB "
        f"in chunks of {results['chunk_rows']:,} rows",
    ]
    s = results["subsample"]
    lines.append(
        f"subsample of {s['rows']:,} rows: L-BFGS loss {s['lbfgs_loss_numpy']:.10f} (NumPy) "
        f"{s['lbfgs_loss_dask']:.10f} (Dask); Adam loss {s['adam_loss_numpy']:.10f} (NumPy) {s['adam_loss_dask']:.10f} (Dask)"
    )
    f = results["full"]
    lines.append(
        f"all rows, L-BFGS: loss {f['lbfgs_loss']:.6f} after {f['lbfgs_passes']} passes in {f['lbfgs_seconds']:.1f} s "
        f"({f['rows_per_second'] / 1e6:.2f} M rows/s), weights within {f['weight_error']:.3f} of the true ones"
    )
    lines.append(
        f"all rows, Adam: loss {f['adam_first_loss']:.4f} -> {f['adam_last_loss']:.4f} in {f['adam_steps']} steps, "
        f"{f['adam_seconds']:.1f} s"
    )
    if "worker_peak_bytes" in results:
        peaks = ", ".join(f"{p / mb:.0f}" for p in results["worker_peak_bytes"])
        limits = ", ".join(f"{p / mb:.0f}" for p in results["worker_limit_bytes"])
        lines.append(f"workers' peak memory: {peaks} MB (limits {limits} MB)")
    for workers, t in results.get("throughput", {}).items():
        peak = f", peak {max(t['worker_peak_bytes']) / mb:.0f} MB" if t.get("worker_peak_bytes") else ""
        lines.append(
            f"one pass with {workers} worker(s): {t['seconds']:.2f} s, {t['rows_per_second'] / 1e6:.2f} M rows/s{peak}"
        )
    room = headroom(results)
    if room is not None:
        lines.append(f"headroom: every worker stayed at least {room:.0%} below its memory limit")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=2_500_000, help="rows of the generated data set")
    parser.add_argument("--features", type=int, default=100, help="features per row")
    parser.add_argument("--chunk-rows", type=int, default=20_000, help="rows per chunk (a task's share of the data)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data (the same chunks on every run)")
    parser.add_argument("--l2", type=float, default=1e-4, help="L2 penalty on the weights")
    parser.add_argument("--lbfgs-iters", type=int, default=10, help="L-BFGS iterations (each a pass or two)")
    parser.add_argument("--adam-steps", type=int, default=30, help="Adam steps")
    parser.add_argument("--batch-chunks", type=int, default=2, help="chunks per Adam mini-batch")
    parser.add_argument("--lr", type=float, default=0.05, help="Adam's learning rate")
    parser.add_argument("--subsample-rows", type=int, default=100_000, help="rows fitted both as NumPy and as Dask")
    parser.add_argument("--workers", type=int, default=2, help="workers of the local cluster")
    parser.add_argument("--threads-per-worker", type=int, default=1, help="threads of each local worker")
    parser.add_argument("--memory-limit", default="250MB", help="memory limit of each local worker")
    parser.add_argument(
        "--scheduler",
        default="",
        help="a scheduler's address (tcp://host:8786) to run on a real cluster, 'threads' for Dask's threaded "
        "scheduler in this process; empty: a local cluster of --workers processes",
    )
    parser.add_argument(
        "--throughput",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="time one pass with 1 and with 2 local workers",
    )
    parser.add_argument("--repeats", type=int, default=2, help="timed passes per cluster size (the best is kept)")
    parser.add_argument("--out", default=DEFAULT_OUT, help="folder for results.json")
    parser.add_argument("--update-docs", action="store_true", help="also write docs/dask-logistic.json")
    parser.add_argument("--quiet", action="store_true", help="print nothing")
    parser.add_argument("--verbose", action="store_true", help="show Dask's warnings from the workers too")
    return parser


def main(argv=None) -> dict:
    args = build_parser().parse_args(argv)
    if args.chunk_rows < 1 or args.rows < args.chunk_rows:
        raise SystemExit(f"--rows {args.rows} --chunk-rows {args.chunk_rows}: need at least one full chunk")
    results = run(args, _silent if args.quiet else functools.partial(print, flush=True))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(results, indent=1)
    (out / "results.json").write_text(text + "\n")
    if args.update_docs:
        (pathlib.Path(__file__).resolve().parent.parent / "docs" / "dask-logistic.json").write_text(text + "\n")
    if not args.quiet:
        print(report(results))
        print(f"results: {out / 'results.json'}")
    return results


if __name__ == "__main__":
    main()
