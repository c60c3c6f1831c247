"""One training step of the digits CNN (examples/cnn_digits.py) under ``tg.profile()``: the table, per op or per line.

The model is the example's at its defaults (width 32, float32, a batch of 64 images, one BLAS thread); one step
runs first
unprofiled (so that NumPy and BLAS have warmed up), then one step (forward, backward, Adam's update) inside
``with tg.profile() as prof:``, and the table is printed. ``--trace PATH`` also writes the Chrome trace
(open it in https://ui.perfetto.dev or chrome://tracing).

    python -m benchmarks.profile_cnn                      # per op, the slowest first
    python -m benchmarks.profile_cnn --group-by source    # per line of the example's code
    python -m benchmarks.profile_cnn --sort saved --trace /tmp/cnn.json
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import numpy as np

if __name__ == "__main__" and not __package__:  # run as a script: make the `benchmarks` package importable
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import tapegrad as tg  # noqa: E402
from benchmarks import cli  # noqa: E402
from tapegrad import nn, optim  # noqa: E402

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "cnn_digits.py"


def _example():
    spec = importlib.util.spec_from_file_location("cnn_digits", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def profile_step(batch_size: int = 64, width: int = 32, seed: int = 0):
    """The profile of one eager training step of the example's model, after one step unprofiled."""
    example = _example()
    x, y, _, _ = example.load_data(seed, np.float32)
    model = example.build_model(width, 0.1, seed, np.float32)
    opt = optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.05)
    xb, yb = x[:batch_size], y[:batch_size]

    def step():
        opt.zero_grad()
        with tg.record():
            loss = loss_fn(model(tg.Tensor(xb)), yb)
        loss.backward()
        opt.step()

    with example.blas_threads(1):  # as the example runs: small matrices, one BLAS thread
        step()
        with tg.profile() as prof:
            step()
    return prof


def main(argv=None):
    parser = cli.parser("python -m benchmarks.profile_cnn", __doc__)
    parser.add_argument("--sort", default="wall", choices=tg.profiler.SORT_KEYS, help="the column to sort by")
    parser.add_argument("--group-by", default="op", choices=("op", "source"), help="one row per op or per line")
    parser.add_argument("--rows", type=int, default=12, help="rows shown (-1: all)")
    parser.add_argument("--trace", default=None, help="also write the Chrome trace to this path")
    args = parser.parse_args(argv)
    prof = profile_step()
    print(prof.table(sort_by=args.sort, row_limit=args.rows, group_by=args.group_by))
    if args.trace:
        prof.export_chrome_trace(args.trace)
        print(f"Chrome trace: {args.trace} ({len(prof.events)} ops and entries)")
    return prof


if __name__ == "__main__":
    main()
