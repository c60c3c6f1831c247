"""Classify the 8x8 handwritten digits that ship with scikit-learn using an MLP, Adam and cross-entropy.

The data (1797 images, 10 classes) is inside the scikit-learn package: nothing is downloaded. A seeded
split keeps 20% for testing. Each epoch logs the training loss and the train and test accuracy, saves a
checkpoint (model, optimizer, generator states, history) atomically, and at the end the curves go to a PNG.

    python examples/classify_digits.py                   # 30 epochs, about 98% test accuracy
    python examples/classify_digits.py --epochs 10       # stop early...
    python examples/classify_digits.py --resume          # ...and continue to 30 from the checkpoint
    python examples/classify_digits.py --update-docs     # redraw the committed docs/digits_curve.png

The checkpoint and the curves go to ``--out`` (by default a folder under the system's temporary directory,
never the checkout); ``--update-docs`` draws the curves into the committed ``docs/digits_curve.png`` instead.

A resumed run follows the uninterrupted one exactly: the checkpoint holds the dropout and shuffling
generators' states as well as the weights and Adam's moments.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import tempfile
import time

import numpy as np

import tapegrad as tg
from tapegrad import nn, optim, tape


def load_data(seed: int, test_fraction: float = 0.2):
    """Pixels scaled to [0, 1], split by a seeded permutation: (x_train, y_train, x_test, y_test)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x, y = digits.data / 16.0, digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = int(round(test_fraction * len(x)))
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def build_model(hidden: int, dropout: float, seed: int) -> nn.Module:
    rng = np.random.default_rng(seed)  # one generator: every layer's draws follow from the seed
    return nn.Sequential(
        nn.Linear(64, hidden, rng=rng),
        nn.ReLU(),
        nn.Dropout(dropout, rng=rng.spawn(1)[0]),
        nn.Linear(hidden, 10, rng=rng),
    )


def evaluate(model: nn.Module, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) in eval mode; nothing is recorded outside a record() block."""
    model.eval()
    logits = model(tg.Tensor(x))
    model.train()
    return nn.cross_entropy(logits, y).item(), float((logits.data.argmax(axis=1) == y).mean())


def save_curve(history: dict, path: str, n_test: int | None = None, title: str = "") -> None:
    """Loss (log scale) and accuracy per epoch, train and test; the final test accuracy is written on the plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = np.arange(1, len(history["train_loss"]) + 1)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=100, layout="constrained")
    ax1.plot(epochs, history["train_loss"], label="train", lw=2)
    ax1.plot(epochs, history["test_loss"], label="test", lw=2)
    ax1.set(xlabel="epoch", ylabel="cross-entropy (log scale)", yscale="log", title="loss")
    ax2.plot(epochs, history["train_acc"], label="train", lw=2)
    ax2.plot(epochs, history["test_acc"], label="test", lw=2)
    low = min(0.8, min(history["test_acc"]) - 0.02)
    ax2.set(xlabel="epoch", ylabel="accuracy", ylim=(low, 1.005), title="accuracy")
    final = history["test_acc"][-1]
    ax2.plot([epochs[-1]], [final], "o", color="C1", ms=7)
    right = f" ({round(final * n_test)}/{n_test})" if n_test else ""
    ax2.annotate(
        f"test accuracy after epoch {epochs[-1]}: {final:.2%}{right}",
        xy=(epochs[-1], final),
        xytext=(0.95, 0.22),
        textcoords="axes fraction",
        ha="right",
        arrowprops={"arrowstyle": "->", "color": "C1"},
        fontsize=11,
        color="C1",
    )
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend(loc="upper right" if ax is ax1 else "lower right")
    if title:
        fig.suptitle(title, fontsize=11)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def train(
    epochs: int = 30,
    batch_size: int = 64,
    lr: float = 3e-3,
    hidden: int = 128,
    dropout: float = 0.1,
    seed: int = 0,
    out: str | None = None,
    plot: str | None = "",
    resume: bool = False,
    progress: bool = False,
    quiet: bool = False,
) -> dict:
    """Train (or resume) and return the history, the final test accuracy and the model.

    ``out`` (default :data:`DEFAULT_OUT`) holds the checkpoint; ``plot`` is the curves' PNG (``""``: in
    ``out``; None: no plot). Resuming needs ``out/checkpoint.npz`` and more ``epochs`` than it holds.
    """
    out = DEFAULT_OUT if out is None else out
    x_train, y_train, x_test, y_test = load_data(seed)
    model = build_model(hidden, dropout, seed)
    opt = optim.Adam(model.parameters(), lr=lr)
    data_rng = np.random.default_rng([seed, 1])  # the shuffling, apart from the model's generators
    config = {"batch_size": batch_size, "lr": lr, "hidden": hidden, "dropout": dropout, "seed": seed}
    history = {"train_loss": [], "test_loss": [], "train_acc": [], "test_acc": []}
    start = 0
    ckpt_path = os.path.join(out, "checkpoint.npz")
    if resume:
        if not os.path.exists(ckpt_path):
            raise SystemExit(
                f"--resume: there is no checkpoint at {ckpt_path}; make one with a run without --resume "
                f"(python examples/classify_digits.py --epochs 10 --out {out}), or pass the --out of an earlier run"
            )
        ckpt = tg.load(ckpt_path)
        if ckpt["config"] != config:
            raise SystemExit(f"{ckpt_path} was trained with {ckpt['config']}, not {config}: pass the same arguments")
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optim"])
        data_rng.bit_generator.state = ckpt["data_rng"]
        history, start = ckpt["history"], ckpt["epoch"]
        if epochs <= start:
            raise SystemExit(
                f"--resume: {ckpt_path} has already trained {start} epochs, so --epochs {epochs} leaves nothing "
                f"to train; --epochs is the total, not a count to add: pass --epochs {start + 10} to train 10 more"
            )
        if not quiet:
            print(f"resumed from {ckpt_path} at epoch {start}")
    bar = None
    if progress and not quiet:
        try:
            from tqdm import tqdm
        except ImportError:
            raise SystemExit(
                "the progress bar needs tqdm (pip install -e '.[examples]' in a checkout); or pass --no-progress"
            ) from None
        bar = tqdm(total=(epochs - start) * -(-len(x_train) // batch_size), unit="batch", leave=False)
    for epoch in range(start, epochs):
        t0 = time.perf_counter()
        order = data_rng.permutation(len(x_train))
        total = 0.0
        for i in range(0, len(order), batch_size):
            idx = order[i : i + batch_size]
            opt.zero_grad()
            with tape.record():
                loss = nn.cross_entropy(model(tg.Tensor(x_train[idx])), y_train[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
            if bar is not None:
                bar.update()
        _, train_acc = evaluate(model, x_train, y_train)
        test_loss, test_acc = evaluate(model, x_test, y_test)
        for key, value in zip(history, (total / len(order), test_loss, train_acc, test_acc)):
            history[key].append(value)
        os.makedirs(out, exist_ok=True)
        state = {"model": model.state_dict(), "optim": opt.state_dict(), "data_rng": data_rng.bit_generator.state}
        tg.save({**state, "history": history, "epoch": epoch + 1, "config": config}, ckpt_path)
        line = (
            f"epoch {epoch + 1:3d}/{epochs}  loss {history['train_loss'][-1]:.4f}  "
            f"train acc {train_acc:.4f}  test acc {test_acc:.4f}  ({time.perf_counter() - t0:.2f}s)"
        )
        if bar is not None:
            bar.write(line)
        elif not quiet:
            print(line)
    if bar is not None:
        bar.close()
    if plot is not None and history["test_acc"]:
        plot_path = plot or os.path.join(out, "curve.png")
        title = f"MLP 64-{hidden}-10 on scikit-learn's 8x8 digits ({len(y_train)} train, {len(y_test)} test images)"
        save_curve(history, plot_path, n_test=len(y_test), title=title)
        if not quiet:
            print(f"curves saved to {plot_path}")
    test_acc = history["test_acc"][-1] if history["test_acc"] else evaluate(model, x_test, y_test)[1]
    return {
        "history": history,
        "test_accuracy": test_acc,
        "n_test": len(y_test),
        "model": model,
        "checkpoint": ckpt_path,
    }


DEFAULT_OUT = str(pathlib.Path(tempfile.gettempdir()) / "tapegrad" / "digits")
DOCS_CURVE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "digits_curve.png"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--epochs", type=int, default=30, help="train until this many epochs in total")
    parser.add_argument("--batch-size", type=int, default=64, help="images per Adam step")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam's learning rate")
    parser.add_argument("--hidden", type=int, default=128, help="width of the hidden layer")
    parser.add_argument("--dropout", type=float, default=0.1, help="dropout probability after the hidden layer")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split, the weights, dropout and shuffling")
    parser.add_argument("--out", default=DEFAULT_OUT, help="folder for the checkpoint (and, by default, the PNG)")
    parser.add_argument("--plot", default="", help="PNG path for the curves (empty: OUT/curve.png)")
    parser.add_argument("--no-plot", action="store_true", help="do not draw the curves (no matplotlib needed)")
    parser.add_argument(
        "--update-docs", action="store_true", help=f"draw the curves into the committed docs/{DOCS_CURVE.name}"
    )
    parser.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.npz up to --epochs")
    parser.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=True, help="a tqdm bar over the batches"
    )
    parser.add_argument("--quiet", action="store_true", help="print nothing (and no progress bar)")
    return parser


def main(argv=None) -> dict:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1 or args.hidden < 1:
        parser.error("--epochs, --batch-size and --hidden must be at least 1")
    if not 0 <= args.dropout < 1:
        parser.error(f"--dropout {args.dropout}: a probability in [0, 1)")
    if args.update_docs and (args.no_plot or args.plot):
        parser.error("--update-docs draws the curves into docs/: drop --no-plot and --plot")
    plot = None if args.no_plot else (str(DOCS_CURVE) if args.update_docs else args.plot)
    result = train(
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        hidden=args.hidden,
        dropout=args.dropout,
        seed=args.seed,
        out=args.out,
        plot=plot,
        resume=args.resume,
        progress=args.progress,
        quiet=args.quiet,
    )
    if not args.quiet:
        acc, n = result["test_accuracy"], result["n_test"]
        print(f"test accuracy {acc:.4f} ({round(acc * n)}/{n})")
    return result


if __name__ == "__main__":
    main()
