"""The GPU proof, prepared to run on a machine with CuPy and a GPU: the core tests and an MLP step on CuPy arrays.

1. Runs every test marked ``backend`` (the op table and the tape's behaviour, tests/backends.py) on CuPy
   arrays: ``TAPEGRAD_BACKENDS=cupy python -m pytest -m backend tests``.
2. Checks one SGD step of an MLP 784-512-512-10 (batch 256, ReLU, mean squared error) on CuPy against the same
   step on NumPy: gradients must agree, and stay on the device.
3. Times that step (zero grad, forward, backward, update; synchronised) on the GPU beside NumPy on the CPU, in
   float32 and float64, interleaved round by round, and prints medians.

Everything printed is also written to ``--out`` (by default a file under the system's temporary directory);
``--update-docs`` writes the committed ``benchmarks/results/gpu_check[_LIB_dry_run].txt`` instead. Without CuPy
or a GPU it says so and exits with status 0, writing nothing. ``--library array_api_strict`` runs the same
script on the CPU (a dry run of the script itself; its timings say nothing about GPUs)::

    python benchmarks/gpu_check.py                    # on a GPU machine: pip install cupy-cuda12x first
    python benchmarks/gpu_check.py --update-docs      # the same, kept in benchmarks/results/gpu_check.txt
    python benchmarks/gpu_check.py --library array_api_strict --rounds 3
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tapegrad as tg  # noqa: E402
from tapegrad import tape  # noqa: E402
from tapegrad.backend import to_numpy  # noqa: E402

SIZES = (784, 512, 512, 10)
BATCH = 256


class Library:
    def __init__(self, name, asarray, sync, describe):
        self.name, self.asarray, self.sync, self.describe = name, asarray, sync, describe


def load(name: str) -> tuple[Library | None, str]:
    """The library to test, or None and why it cannot run here."""
    if name == "cupy":
        try:
            import cupy
        except ImportError as err:
            return None, f"CuPy is not installed ({err}); install it on a GPU machine: pip install cupy-cuda12x"
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as err:  # CUDARuntimeError without a driver or device
            return None, f"CuPy is installed but finds no GPU ({type(err).__name__}: {err})"
        if count < 1:
            return None, "CuPy is installed but finds no GPU"
        props = cupy.cuda.runtime.getDeviceProperties(0)
        gpu = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        describe = f"cupy {cupy.__version__}, GPU {gpu}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}"
        return Library("cupy", cupy.asarray, lambda: cupy.cuda.Device().synchronize(), describe), ""
    if name == "array_api_strict":
        try:
            import array_api_strict as xp
        except ImportError as err:
            return None, f"array_api_strict is not installed ({err})"
        return Library(name, xp.asarray, lambda: None, f"array_api_strict {xp.__version__} (CPU dry run)"), ""
    return None, f"unknown library {name!r}"


def run_core_tests(lib: Library) -> tuple[bool, str]:
    env = {**os.environ, "TAPEGRAD_BACKENDS": lib.name}
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "backend", "-p", "no:cacheprovider", "tests"]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    failures = [ln for ln in lines if ln.startswith(("FAILED", "ERROR"))]
    return done.returncode == 0, "\n".join(failures[:20] + lines[-1:])


def init_params(dtype, seed=0):
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in zip(SIZES[:-1], SIZES[1:]):
        params.append((rng.standard_normal((n_in, n_out)) * np.sqrt(2.0 / n_in)).astype(dtype))
        params.append(np.zeros(n_out, dtype=dtype))
    rng = np.random.default_rng(seed + 1)
    X = rng.standard_normal((BATCH, SIZES[0])).astype(dtype)
    Y = rng.standard_normal((BATCH, SIZES[-1])).astype(dtype)
    return params, X, Y


def sgd_step(params, X, Y, lr=0.01):
    """One SGD step: zero grad, forward, backward, update. Returns the loss tensor."""
    for p in params:
        p.grad = None
    W1, b1, W2, b2, W3, b3 = params
    with tape.record():
        h = tg.relu(X @ W1 + b1)
        h = tg.relu(h @ W2 + b2)
        loss = ((h @ W3 + b3 - Y) ** 2).mean()
    loss.backward()
    for p in params:
        p.data -= lr * p.grad
    return loss


def tensors(arrays, asarray, requires_grad):
    return [tg.Tensor(asarray(a), requires_grad=requires_grad) for a in arrays]


def check_gradients(lib: Library, dtype) -> str:
    params, X, Y = init_params(dtype)
    grads = {}
    for name, asarray in (("numpy", np.asarray), (lib.name, lib.asarray)):
        ps = tensors(params, asarray, True)
        Xt, Yt = tensors((X, Y), asarray, False)
        for p in ps:
            p.grad = None
        with tape.record():
            loss = ((tg.relu(tg.relu(Xt @ ps[0] + ps[1]) @ ps[2] + ps[3]) @ ps[4] + ps[5] - Yt) ** 2).mean()
        loss.backward()
        if name == lib.name:
            stray = [type(p.grad).__name__ for p in ps if type(p.grad) is np.ndarray]
            if stray:
                raise AssertionError(f"gradients came back as NumPy arrays: {stray}")
        grads[name] = [to_numpy(p.grad) for p in ps]
    rtol = 1e-4 if dtype == np.float32 else 1e-9
    worst = 0.0
    for a, b in zip(grads["numpy"], grads[lib.name]):
        np.testing.assert_allclose(b, a, rtol=rtol, atol=rtol * float(np.abs(a).max()))
        worst = max(worst, float(np.max(np.abs(a - b))))
    return f"gradients agree with NumPy ({np.dtype(dtype).name}, largest difference {worst:.2e}) and stay in {lib.name}"


def time_steps(lib: Library, dtype, rounds: int):
    params, X, Y = init_params(dtype)
    engines = {}
    for name, asarray, sync in (("numpy (CPU)", np.asarray, lambda: None), (f"{lib.name}", lib.asarray, lib.sync)):
        engines[name] = (tensors(params, asarray, True), *tensors((X, Y), asarray, False), sync)
    for ps, Xt, Yt, sync in engines.values():  # warm-up: kernels compiled, memory pools filled
        for _ in range(3):
            sgd_step(ps, Xt, Yt)
        sync()
    times = {k: [] for k in engines}
    for _ in range(rounds):
        for k, (ps, Xt, Yt, sync) in engines.items():
            sync()
            start = time.perf_counter()
            sgd_step(ps, Xt, Yt)
            sync()
            times[k].append((time.perf_counter() - start) * 1e3)
    return {k: statistics.median(v) for k, v in times.items()}, {k: (min(v), max(v)) for k, v in times.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/gpu_check.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--library", default="cupy", help="cupy (the GPU proof) or array_api_strict (a dry run)")
    parser.add_argument("--rounds", type=int, default=30, help="interleaved timing rounds per dtype")
    parser.add_argument(
        "--out",
        default=None,
        help=f"output file (None: {tempfile.gettempdir()}/tapegrad/gpu_check[_LIB_dry_run].txt)",
    )
    parser.add_argument(
        "--update-docs",
        action="store_true",
        help="write the committed benchmarks/results/gpu_check[_LIB_dry_run].txt instead of --out",
    )
    args = parser.parse_args(argv)
    if args.out and args.update_docs:
        parser.error("--out and --update-docs both say where to write: pass one")
    lib, why = load(args.library)
    if lib is None:
        print(f"gpu_check: not run: {why}")
        return 0
    suffix = "" if lib.name == "cupy" else f"_{lib.name}_dry_run"
    folder = ROOT / "benchmarks" / "results" if args.update_docs else pathlib.Path(tempfile.gettempdir()) / "tapegrad"
    out = pathlib.Path(args.out) if args.out else folder / f"gpu_check{suffix}.txt"
    lines = []

    def say(text=""):
        print(text, flush=True)
        lines.append(text)

    say(f"tapegrad gpu_check on {lib.name}: {lib.describe}")
    say(f"numpy {np.__version__}, python {platform.python_version()}, {platform.machine()}")
    say(f"command: python benchmarks/gpu_check.py --library {args.library} --rounds {args.rounds}")
    say()
    ok, summary = run_core_tests(lib)
    say(f"1. core tests on {lib.name} (pytest -m backend tests): {'passed' if ok else 'FAILED'}")
    say("   " + summary.replace("\n", "\n   "))
    say()
    say(f"2. MLP {'-'.join(map(str, SIZES))}, batch {BATCH}: one step's gradients against NumPy")
    for dtype in (np.float64, np.float32):
        try:
            say("   " + check_gradients(lib, dtype))
        except AssertionError as err:
            ok = False
            say(f"   FAILED ({np.dtype(dtype).name}): {err}")
    say()
    say(f"3. SGD step time (zero grad, forward, backward, update), median of {args.rounds} interleaved rounds, ms")
    for dtype in (np.float64, np.float32):
        med, spread = time_steps(lib, dtype, args.rounds)
        (cpu, gpu) = med.values()
        parts = [f"{k} {v:.2f} ({spread[k][0]:.2f}..{spread[k][1]:.2f})" for k, v in med.items()]
        say(f"   {np.dtype(dtype).name}: " + ";  ".join(parts) + f";  numpy/{lib.name} {cpu / gpu:.1f}x")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"written to {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
