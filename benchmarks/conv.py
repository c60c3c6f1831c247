"""Convolution speed, side by side with PyTorch's CPU convolution in one process, one thread each.

Four measurements, each a median over interleaved rounds of this process's CPU time (``--clock wall`` for
wall-clock time), so other work on a shared machine counts less:

1. *im2col*: the columns of a LeNet-sized batch gathered with ``sliding_window_view`` plus a reshape (the copy
   it implies) against the strided slices and one ``stack`` that ``tapegrad.ops.conv`` uses (they agree exactly).
2. *conv2d*: the two convolutions of LeNet-5 on a batch of 28x28 images (1 -> 6 channels 5x5 padding 2, then
   6 -> 16 channels 5x5), forward alone and forward + backward (input and weight gradients), tapegrad and torch.
3. *LeNet-5*: a whole forward + backward (conv, relu, max-pool twice, three linear layers, cross-entropy).
4. *the CNN example's step*: ``examples/cnn_digits.py``'s model (batch norm, dropout, Adam) on a batch of 8x8
   digits, tapegrad against the same model in torch.

    python -m benchmarks.conv                   # float32 and float64, batch 64, 30 rounds
    python -m benchmarks.conv --rounds 5 --batch 8
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import pathlib
import statistics
import sys
import time

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import tapegrad as tg
from tapegrad import nn

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _one_thread():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def _time(fns: dict, rounds: int, clock) -> dict:
    """Median and best seconds of each function, rounds interleaved so that drifts hit all alike."""
    for f in fns.values():
        f()  # warm-up
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, f in fns.items():
            start = clock()
            f()
            times[name].append(clock() - start)
    return {name: (statistics.median(t), min(t)) for name, t in times.items()}


def im2col_swv(x, k, pad):
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = sliding_window_view(padded, (k, k), axis=(2, 3))  # (N, C, OH, OW, k, k), a view
    n, c, oh, ow = win.shape[:4]
    return win.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * k * k, oh * ow)  # the copy


def im2col_slices(x, k, pad):
    return tg.ops.conv._unfold(x, (k, k), (1, 1), ((pad, pad), (pad, pad)), (1, 1), xp=np)


def lenet_layers(dtype, torch):
    """(conv shapes, tapegrad LeNet-5, torch LeNet-5) with the same weights."""
    g = np.random.default_rng(0)
    ours = nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2, rng=g, dtype=dtype), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5, rng=g, dtype=dtype), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(400, 120, rng=g, dtype=dtype), nn.ReLU(), nn.Linear(120, 84, rng=g, dtype=dtype), nn.ReLU(),
        nn.Linear(84, 10, rng=g, dtype=dtype),
    )  # fmt: skip
    T = torch.nn
    theirs = T.Sequential(
        T.Conv2d(1, 6, 5, padding=2), T.ReLU(), T.MaxPool2d(2), T.Conv2d(6, 16, 5), T.ReLU(), T.MaxPool2d(2),
        T.Flatten(), T.Linear(400, 120), T.ReLU(), T.Linear(120, 84), T.ReLU(), T.Linear(84, 10),
    )  # fmt: skip
    theirs = theirs.to(getattr(torch, np.dtype(dtype).name))
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in ours.state_dict().items()})
    return ours, theirs


def _load_example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(batch: int, rounds: int, clock, dtypes, out=print) -> dict:
    import torch

    torch.set_num_threads(1)
    F = torch.nn.functional
    results = {}
    rng = np.random.default_rng(0)
    out(f"numpy {np.__version__}, torch {torch.__version__}, python {sys.version.split()[0]}; one thread each; "
        f"batch {batch}; median (best) of {rounds} rounds, {'CPU' if clock is time.process_time else 'wall'} time, ms")  # fmt: skip
    for dtype in dtypes:
        name = np.dtype(dtype).name
        x1 = rng.standard_normal((batch, 1, 28, 28)).astype(dtype)
        x2 = rng.standard_normal((batch, 6, 14, 14)).astype(dtype)
        np.testing.assert_array_equal(im2col_swv(x2, 5, 0), im2col_slices(x2, 5, 0))
        cols = _time({f"swv {s}": (lambda x=x, p=p: im2col_swv(x, 5, p)) for s, x, p in (("1", x1, 2), ("2", x2, 0))}
                     | {f"slices {s}": (lambda x=x, p=p: im2col_slices(x, 5, p)) for s, x, p in (("1", x1, 2), ("2", x2, 0))},
                     rounds, clock)  # fmt: skip
        out(f"\n{name}: im2col (the columns of a 5x5 convolution)")
        for layer, shape in (("1", x1.shape), ("2", x2.shape)):
            a, b = cols[f"swv {layer}"], cols[f"slices {layer}"]
            out(f"  input {shape}: sliding_window_view + reshape {1e3 * a[0]:.2f} ({1e3 * a[1]:.2f})   "
                f"strided slices + stack {1e3 * b[0]:.2f} ({1e3 * b[1]:.2f})")  # fmt: skip
        ours, theirs = lenet_layers(dtype, torch)
        convs = [(x1, ours[0], theirs[0], 2), (x2, ours[3], theirs[3], 0)]
        out(f"{name}: conv2d, forward | forward + backward (input and weight gradients)")
        for x, mine, twin, pad in convs:
            X, TX = tg.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
            w, b = mine.weight, mine.bias
            cot = rng.standard_normal((batch, w.shape[0]) + ((28, 28) if pad else (10, 10))).astype(dtype)
            tcot = torch.tensor(cot)

            def ours_fb(X=X, w=w, b=b, pad=pad, cot=cot):
                with tg.record():
                    y = tg.conv2d(X, w, b, padding=pad)
                y.backward(cot)

            def theirs_fb(TX=TX, twin=twin, pad=pad, tcot=tcot):
                F.conv2d(TX, twin.weight, twin.bias, padding=pad).backward(tcot)

            t = _time({
                "tapegrad f": lambda X=X, w=w, b=b, pad=pad: tg.conv2d(X, w, b, padding=pad),
                "torch f": lambda TX=TX, twin=twin, pad=pad: F.conv2d(TX, twin.weight, twin.bias, padding=pad),
                "tapegrad fb": ours_fb,
                "torch fb": theirs_fb,
            }, rounds, clock)  # fmt: skip
            results[(name, "conv", x.shape)] = t
            out(f"  {x.shape} * {w.shape}: tapegrad {1e3 * t['tapegrad f'][0]:.2f} | {1e3 * t['tapegrad fb'][0]:.2f}"
                f"   torch {1e3 * t['torch f'][0]:.2f} | {1e3 * t['torch fb'][0]:.2f}"
                f"   ratio {t['tapegrad fb'][0] / t['torch fb'][0]:.2f}x")  # fmt: skip
        labels = rng.integers(0, 10, batch)

        def lenet_ours(ours=ours, x1=x1, labels=labels):
            for p in ours.parameters():
                p.grad = None
            with tg.record():
                loss = nn.functional.cross_entropy(ours(tg.Tensor(x1)), labels)
            loss.backward()

        def lenet_theirs(theirs=theirs, x1=x1, labels=labels):
            theirs.zero_grad()
            F.cross_entropy(theirs(torch.tensor(x1)), torch.tensor(labels)).backward()

        t = _time({"tapegrad": lenet_ours, "torch": lenet_theirs}, rounds, clock)
        results[(name, "lenet")] = t
        out(f"{name}: LeNet-5 forward + backward, {batch} x 1 x 28 x 28: tapegrad {1e3 * t['tapegrad'][0]:.2f} "
            f"({1e3 * t['tapegrad'][1]:.2f})   torch {1e3 * t['torch'][0]:.2f} ({1e3 * t['torch'][1]:.2f})   "
            f"ratio {t['tapegrad'][0] / t['torch'][0]:.2f}x")  # fmt: skip
        results[(name, "cnn_digits")] = t = _cnn_step(batch, dtype, rounds, clock, torch)
        out(f"{name}: the CNN example's training step (forward, backward, Adam), {batch} x 1 x 8 x 8: tapegrad "
            f"{1e3 * t['tapegrad'][0]:.2f} ({1e3 * t['tapegrad'][1]:.2f})   torch {1e3 * t['torch'][0]:.2f} "
            f"({1e3 * t['torch'][1]:.2f})   ratio {t['tapegrad'][0] / t['torch'][0]:.2f}x")  # fmt: skip
    return results


def _cnn_step(batch, dtype, rounds, clock, torch):
    example = _load_example("cnn_digits")
    ours = example.build_model(32, 0.3, 0, dtype)
    T = torch.nn
    w = 32
    theirs = T.Sequential(
        T.Conv2d(1, w, 3, padding=1), T.BatchNorm2d(w), T.ReLU(), T.Conv2d(w, w, 3, padding=1), T.BatchNorm2d(w),
        T.ReLU(), T.MaxPool2d(2), T.Conv2d(w, 2 * w, 3, padding=1), T.BatchNorm2d(2 * w), T.ReLU(), T.MaxPool2d(2),
        T.Flatten(), T.Dropout(0.3), T.Linear(2 * w * 4, 10),
    ).to(getattr(torch, np.dtype(dtype).name))  # fmt: skip
    theirs.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in ours.state_dict().items()
                            if not k.endswith("_extra_state")})  # fmt: skip
    opt = tg.optim.Adam(ours.parameters(), lr=1e-3)
    topt = torch.optim.Adam(theirs.parameters(), lr=1e-3)
    rng = np.random.default_rng(1)
    x, y = rng.random((batch, 1, 8, 8)).astype(dtype), rng.integers(0, 10, batch)
    loss_fn, tloss_fn = nn.CrossEntropyLoss(label_smoothing=0.05), T.CrossEntropyLoss(label_smoothing=0.05)

    def step_ours():
        opt.zero_grad()
        with tg.record():
            loss = loss_fn(ours(tg.Tensor(x)), y)
        loss.backward()
        opt.step()

    def step_theirs():
        topt.zero_grad()
        tloss_fn(theirs(torch.tensor(x)), torch.tensor(y)).backward()
        topt.step()

    return _time({"tapegrad": step_ours, "torch": step_theirs}, rounds, clock)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--batch", type=int, default=64, help="images per batch")
    parser.add_argument("--rounds", type=int, default=30, help="interleaved timing rounds")
    parser.add_argument("--clock", choices=["cpu", "wall"], default="cpu", help="process CPU time or wall-clock time")
    parser.add_argument("--dtype", choices=["float32", "float64", "both"], default="both", help="which precisions")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("torch") is None:  # the benchmark is a comparison: without its twin, say so
        parser.exit(2, "benchmarks/conv.py times tapegrad beside PyTorch, which is not installed: "
                       "pip install torch==2.13.0 (a CPU wheel; never a tapegrad dependency)\n")  # fmt: skip
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    dtypes = (np.float32, np.float64) if args.dtype == "both" else (np.dtype(args.dtype).type,)
    with _one_thread():
        return run(args.batch, args.rounds, clock, dtypes)


if __name__ == "__main__":
    main()
