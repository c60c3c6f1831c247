"""A LeNet-style convolutional network on scikit-learn's 8x8 handwritten digits, built from tapegrad.nn layers.

What it shows, step by step:

1. The images become a batch of shape (N, 1, 8, 8), PyTorch's layout (batch, channels, height, width).
2. Three 3x3 convolutions (``nn.Conv2d``, padding 1 keeps the size) learn local strokes; ``nn.BatchNorm2d``
   standardises each channel over the batch and keeps running statistics for evaluation; two 2x2 max-poolings
   halve the resolution (8 -> 4 -> 2); ``nn.Flatten`` and ``nn.Linear`` turn the 64 x 2 x 2 features into logits.
3. Each training batch is shifted by up to one pixel at random (augmentation: the digit may sit anywhere), and
   the cross-entropy mixes in a little of the uniform distribution (``label_smoothing``).
4. Adam with a cosine learning-rate schedule trains it; ``model.eval()`` switches batch norm to its running
   statistics and dropout off for the test set.
5. The tape of one step is printed: how many ops it recorded and how many bytes it keeps for the backward pass
   (each convolution keeps its input and weight, never its 9-times-larger columns).

The data (1797 images) ships with scikit-learn; 20% is held out by a seeded split. The default 20 epochs take
about a second an epoch on one core and reach about 99% test accuracy.

    python examples/cnn_digits.py                       # train, print the figures, plot the curves
    python examples/cnn_digits.py --epochs 5 --width 16 # smaller and shorter
    python examples/cnn_digits.py --help                # every flag, with its default
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import tempfile
import time

import numpy as np

import tapegrad as tg
from tapegrad import nn, optim

DEFAULT_OUT = os.path.join(tempfile.gettempdir(), "tapegrad", "cnn_digits")
DOCS_PLOT = pathlib.Path(__file__).resolve().parent.parent / "docs" / "cnn_digits.png"


def load_data(seed: int, dtype, test_fraction: float = 0.2):
    """Images scaled to [0, 1] as (N, 1, 8, 8), split by a seeded permutation: (x_train, y_train, x_test, y_test)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x, y = (digits.images / 16.0).astype(dtype)[:, None], digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(round(test_fraction * len(x)))
    return x[order[n_test:]], y[order[n_test:]], x[order[:n_test]], y[order[:n_test]]


def build_model(width: int, dropout: float, seed: int, dtype) -> nn.Module:
    """conv-bn-relu x2, pool, conv-bn-relu, pool, flatten, dropout, linear: about 30k parameters at width 32."""
    g = np.random.default_rng(seed)  # one generator: every layer's initial weights follow from the seed
    return nn.Sequential(
        nn.Conv2d(1, width, 3, padding=1, rng=g, dtype=dtype),
        nn.BatchNorm2d(width, dtype=dtype),
        nn.ReLU(),
        nn.Conv2d(width, width, 3, padding=1, rng=g, dtype=dtype),
        nn.BatchNorm2d(width, dtype=dtype),
        nn.ReLU(),
        nn.MaxPool2d(2),  # 8x8 -> 4x4
        nn.Conv2d(width, 2 * width, 3, padding=1, rng=g, dtype=dtype),
        nn.BatchNorm2d(2 * width, dtype=dtype),
        nn.ReLU(),
        nn.MaxPool2d(2),  # 4x4 -> 2x2
        nn.Flatten(),
        nn.Dropout(dropout, rng=g.spawn(1)[0]),
        nn.Linear(2 * width * 2 * 2, 10, rng=g, dtype=dtype),
    )


def shift(images: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Move each image by -1, 0 or 1 pixel along each axis (zeros come in at the edge)."""
    n, _, h, w = images.shape
    padded = np.pad(images, ((0, 0), (0, 0), (1, 1), (1, 1)))
    dy, dx = rng.integers(0, 3, n), rng.integers(0, 3, n)
    rows = dy[:, None] + np.arange(h)  # (n, h): each image's window of rows in the padded one
    cols = dx[:, None] + np.arange(w)
    return padded[np.arange(n)[:, None, None, None], 0, rows[:, None, :, None], cols[:, None, None, :]]


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    """Test accuracy in evaluation mode (running statistics, no dropout); nothing is recorded."""
    model.eval()
    correct = (model(tg.Tensor(x)).data.argmax(axis=1) == y).mean()
    model.train()
    return float(correct)


def save_curves(history: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = np.arange(1, len(history["loss"]) + 1)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3), dpi=90)
    ax1.plot(epochs, history["loss"], marker="o")
    ax1.set(xlabel="epoch", ylabel="training cross-entropy", yscale="log", title="loss")
    ax2.plot(epochs, history["test_accuracy"], marker="o", color="C1")
    ax2.axhline(0.985, color="grey", lw=0.8, ls="--")
    ax2.set(xlabel="epoch", ylabel="test accuracy", ylim=(0.9, 1.0), title="accuracy")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
    fig.suptitle("LeNet-style CNN on the 8x8 digits (tapegrad)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def blas_threads(n: int):
    """Limit the BLAS library to ``n`` threads (threadpoolctl, which scikit-learn brings): the matrices here are
    small, and on a busy machine extra BLAS threads cost more than they bring."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(n, user_api="blas")


def train(args) -> dict:
    with blas_threads(args.threads):
        return _train(args)


def _train(args) -> dict:
    dtype = np.dtype(args.dtype)
    x_train, y_train, x_test, y_test = load_data(args.seed, dtype)
    model = build_model(args.width, args.dropout, args.seed, dtype)
    opt = optim.Adam(model.parameters(), lr=args.lr)
    schedule = optim.CosineAnnealingLR(opt, T_max=args.epochs)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    rng = np.random.default_rng([args.seed, 1])  # shuffling and shifts, apart from the model's generators
    say = (lambda *a: None) if args.quiet else print
    n_params = sum(p.size for p in model.parameters())
    say(f"{len(x_train)} training and {len(x_test)} test images; {n_params:,} parameters ({dtype.name})")

    from tqdm import tqdm

    batches = -(-len(x_train) // args.batch_size)
    bar = tqdm(total=args.epochs * batches, unit="step", disable=args.quiet, leave=False)
    history, step_times, tape_figures = {"loss": [], "test_accuracy": []}, [], None
    start = time.perf_counter()
    for epoch in range(args.epochs):
        order, total = rng.permutation(len(x_train)), 0.0
        for i in range(0, len(order), args.batch_size):
            idx = order[i : i + args.batch_size]
            xb = shift(x_train[idx], rng) if args.augment else x_train[idx]
            t0 = time.perf_counter()
            opt.zero_grad()
            with tg.record() as tape:
                loss = loss_fn(model(tg.Tensor(xb)), y_train[idx])
            if tape_figures is None:
                tape_figures = (len(tape), tape.saved_bytes(), xb.nbytes)
            loss.backward()
            opt.step()
            step_times.append(time.perf_counter() - t0)
            total += loss.item() * len(idx)
            bar.update()
            bar.set_postfix(epoch=epoch + 1, loss=f"{loss.item():.3f}")
        schedule.step()
        history["loss"].append(total / len(order))
        history["test_accuracy"].append(accuracy(model, x_test, y_test))
        if not args.quiet:
            bar.write(f"epoch {epoch + 1:3d}/{args.epochs}  loss {history['loss'][-1]:.4f}  "
                      f"test accuracy {history['test_accuracy'][-1]:.4f}")  # fmt: skip
    bar.close()
    seconds = time.perf_counter() - start
    step_ms = 1000 * float(np.median(step_times))
    entries, saved, batch_bytes = tape_figures
    say(f"one step's tape: {entries} ops keeping {saved / 1e6:.2f} MB for backward (the batch itself: "
        f"{batch_bytes / 1e3:.1f} kB); freed by backward()")  # fmt: skip
    say(f"test accuracy {history['test_accuracy'][-1]:.4f} after {args.epochs} epochs in {seconds:.1f} s "
        f"({step_ms:.1f} ms per training step of {args.batch_size} images)")  # fmt: skip
    if args.plot and history["loss"]:
        save_curves(history, args.plot)
        say(f"curves saved to {args.plot}")
    return {
        "history": history,
        "test_accuracy": history["test_accuracy"][-1] if history["test_accuracy"] else accuracy(model, x_test, y_test),
        "model": model,
        "seconds": seconds,
        "step_ms": step_ms,
        "tape": {"entries": entries, "saved_bytes": saved},
    }


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=20, help="passes over the training images")
    parser.add_argument("--batch-size", type=int, default=64, help="images per training step")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam's learning rate at the start (cosine decay to 0)")
    parser.add_argument("--width", type=int, default=32, help="channels of the first two convolutions (then twice)")
    parser.add_argument("--dropout", type=float, default=0.3, help="dropout before the last layer")
    parser.add_argument("--label-smoothing", type=float, default=0.05, help="cross-entropy's label smoothing")
    parser.add_argument("--augment", action=argparse.BooleanOptionalAction, default=True,
                        help="shift each training image by up to one pixel at random")  # fmt: skip
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32", help="parameter and data type")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (through threadpoolctl, if installed)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the split, the weights, the shuffling and shifts")
    parser.add_argument("--out", default=DEFAULT_OUT, help="folder for the PNG of the loss and accuracy curves")
    parser.add_argument("--plot", default="", help="PNG path (empty: OUT/curve.png)")
    parser.add_argument("--no-plot", action="store_true", help="do not draw (no matplotlib needed)")
    parser.add_argument("--update-docs", action="store_true", help=f"draw into the committed docs/{DOCS_PLOT.name}")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no printed figures")
    args = parser.parse_args(argv)
    if args.update_docs and (args.no_plot or args.plot):
        parser.error("--update-docs draws into docs/: drop --no-plot and --plot")
    args.plot = (
        ""
        if args.no_plot
        else (str(DOCS_PLOT) if args.update_docs else args.plot or os.path.join(args.out, "curve.png"))
    )
    return args


def main(argv=None) -> dict:
    return train(parse(argv))


if __name__ == "__main__":
    main()
