"""A character-level language model trained on Python's own source code: a GRU (or a small Transformer).

What it shows, step by step:

1. The text is the source of a module of Python's standard library (``argparse`` by default): it ships with
   every Python, so nothing is downloaded. Each distinct character gets an integer; 10% at the end is held out.
2. Training windows of ``--seq-len`` characters are cut at random; the model reads characters 0..n-1 and
   predicts 1..n. ``nn.Embedding`` turns the integers into vectors, then either
   - ``--arch gru``: ``nn.GRU(batch_first=True)`` carries a hidden state along the window, or
   - ``--arch transformer``: blocks of ``nn.LayerNorm``, causal ``nn.MultiheadAttention`` (each position sees
     only the ones before it: ``is_causal=True``) and a GELU MLP, with learned position embeddings;
   and ``nn.Linear`` gives logits over the characters. ``nn.CrossEntropyLoss`` takes the logits as ``(N, C, L)``
   and the targets as ``(N, L)``, PyTorch's layout for a loss per position.
3. Adam with gradient clipping trains it; the held-out loss (in bits per character) is printed as it falls.
4. Text is sampled before and after training, one character at a time at ``--temperature``: it starts as noise
   and ends up looking like Python (indentation, ``def``, ``self.``, docstrings).

    python examples/char_lm.py                             # a GRU on argparse.py (100,000 characters)
    python examples/char_lm.py --arch transformer          # the Transformer instead
    python examples/char_lm.py --module string --steps 300 # another module, fewer steps
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import os
import pathlib
import tempfile
import time

import numpy as np

import tapegrad as tg
from tapegrad import nn, optim

DEFAULT_OUT = os.path.join(tempfile.gettempdir(), "tapegrad", "char_lm")
DOCS_PLOT = pathlib.Path(__file__).resolve().parent.parent / "docs" / "char_lm.png"


def load_text(module: str) -> str:
    """The source of a standard-library module."""
    return inspect.getsource(importlib.import_module(module))


class GRUModel(nn.Module):
    """Embedding, a GRU over the sequence, a linear map to the characters' logits."""

    def __init__(self, vocab: int, width: int, layers: int, rng):
        super().__init__()
        self.embed = nn.Embedding(vocab, width, rng=rng)
        self.rnn = nn.GRU(width, width, num_layers=layers, batch_first=True, rng=rng)
        self.head = nn.Linear(width, vocab, rng=rng)

    def forward(self, idx, state=None):
        out, state = self.rnn(self.embed(idx), state)
        return self.head(out), state


class Block(nn.Module):
    """Pre-norm Transformer block: x + attention(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, width: int, heads: int, rng):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True, rng=rng)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width, rng=rng), nn.GELU(), nn.Linear(4 * width, width, rng=rng))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False, is_causal=True)[0]
        return x + self.mlp(self.norm2(x))


class TransformerModel(nn.Module):
    """Token and position embeddings, causal Transformer blocks, a final norm and the logits."""

    def __init__(self, vocab: int, width: int, layers: int, heads: int, context: int, rng):
        super().__init__()
        self.embed = nn.Embedding(vocab, width, rng=rng)
        self.position = nn.Embedding(context, width, rng=rng)
        self.blocks = nn.ModuleList([Block(width, heads, rng) for _ in range(layers)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, rng=rng)
        self.context = context

    def forward(self, idx, state=None):
        idx = idx[:, -self.context :]
        x = self.embed(idx) + self.position(np.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)), None


def build_model(args, vocab: int) -> nn.Module:
    rng = np.random.default_rng(args.seed)
    if args.arch == "gru":
        return GRUModel(vocab, args.width, args.layers, rng)
    return TransformerModel(vocab, args.width, args.layers, args.heads, args.seq_len, rng)


def loss_of(model, loss_fn, data: np.ndarray, starts: np.ndarray, seq_len: int):
    """Cross-entropy of predicting each next character of the windows starting at ``starts``."""
    windows = data[starts[:, None] + np.arange(seq_len + 1)]
    logits, _ = model(windows[:, :-1])  # (N, L, C)
    return loss_fn(tg.transpose(logits, (0, 2, 1)), windows[:, 1:])  # the class axis second: (N, C, L)


def sample(model, chars: list, prompt: str, length: int, temperature: float, rng) -> str:
    """Draw ``length`` characters after ``prompt``, feeding each one back (evaluation mode, nothing recorded)."""
    model.eval()
    index = {c: i for i, c in enumerate(chars)}
    idx = np.array([[index[c] for c in prompt if c in index]])
    out, state, feed = [], None, idx
    for _ in range(length):
        logits, state = model(feed, state)
        z = logits.data[0, -1] / temperature
        p = np.exp(z - z.max())
        nxt = int(rng.choice(len(chars), p=p / p.sum()))
        out.append(chars[nxt])
        idx = np.concatenate([idx, [[nxt]]], axis=1)
        feed = np.array([[nxt]]) if state is not None else idx  # the GRU carries its state; attention rereads
    model.train()
    return prompt + "".join(out)


def save_curve(history: dict, path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2), dpi=90)
    ax.plot(history["step"], history["train_bits"], label="training (batch)", alpha=0.7)
    ax.plot(history["step"], history["val_bits"], marker="o", label="held out")
    ax.set(xlabel="step", ylabel="bits per character", title=title)
    ax.grid(alpha=0.3)
    ax.legend()
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
    text = load_text(args.module)
    chars = sorted(set(text))
    data = np.array([chars.index(c) for c in text], dtype=np.int64)
    split = int(0.9 * len(data))
    train_data, val_data = data[:split], data[split:]
    model = build_model(args, len(chars))
    opt = optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng([args.seed, 1])
    val_starts = np.random.default_rng([args.seed, 2]).integers(0, len(val_data) - args.seq_len - 1, 64)
    say = (lambda *a: None) if args.quiet else print
    n_params = sum(p.size for p in model.parameters())
    say(f"{args.module}.py: {len(text):,} characters, {len(chars)} distinct; {args.arch} of {n_params:,} parameters")
    before = sample(model, chars, args.prompt, args.sample_length, args.temperature, np.random.default_rng(0))
    say(f"--- sampled before training ---\n{before}\n")

    from tqdm import tqdm

    history = {"step": [], "train_bits": [], "val_bits": []}
    bar = tqdm(range(1, args.steps + 1), unit="step", disable=args.quiet, leave=False)
    start, nats = time.perf_counter(), np.log(2)
    for step in bar:
        starts = rng.integers(0, len(train_data) - args.seq_len - 1, args.batch_size)
        opt.zero_grad()
        with tg.record():
            loss = loss_of(model, loss_fn, train_data, starts, args.seq_len)
        loss.backward()
        optim.clip_grad_norm(model.parameters(), args.clip)
        opt.step()
        bar.set_postfix(bits=f"{loss.item() / nats:.3f}")
        if step % args.eval_every == 0 or step == args.steps:
            model.eval()
            val = loss_of(model, loss_fn, val_data, val_starts, args.seq_len).item()
            model.train()
            for key, value in zip(history, (step, loss.item() / nats, val / nats)):
                history[key].append(value)
            if not args.quiet:
                bar.write(f"step {step:5d}  train {loss.item() / nats:.3f}  held out {val / nats:.3f} bits/char")
    bar.close()
    seconds = time.perf_counter() - start
    after = sample(model, chars, args.prompt, args.sample_length, args.temperature, np.random.default_rng(0))
    say(f"\n--- sampled after {args.steps} steps ({seconds:.0f} s, {1000 * seconds / args.steps:.0f} ms a step) ---")
    say(after)
    if args.plot and history["step"]:
        name = "GRU" if args.arch == "gru" else "Transformer"
        save_curve(history, args.plot, f"character-level {name} on {args.module}.py")
        say(f"\ncurve saved to {args.plot}")
    return {"history": history, "before": before, "after": after, "model": model, "chars": chars, "seconds": seconds}


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--module", default="argparse", help="the standard-library module whose source is the text")
    parser.add_argument("--arch", choices=["gru", "transformer"], default="gru", help="the sequence model")
    parser.add_argument("--width", type=int, default=128, help="embedding and hidden size")
    parser.add_argument("--layers", type=int, default=1, help="GRU layers or Transformer blocks")
    parser.add_argument("--heads", type=int, default=4, help="attention heads (transformer)")
    parser.add_argument("--seq-len", type=int, default=64, help="characters per training window (and context)")
    parser.add_argument("--batch-size", type=int, default=32, help="windows per step")
    parser.add_argument("--steps", type=int, default=600, help="training steps")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam's learning rate")
    parser.add_argument("--clip", type=float, default=1.0, help="gradient norm clipping threshold")
    parser.add_argument("--eval-every", type=int, default=50, help="steps between held-out evaluations")
    parser.add_argument("--prompt", default="def ", help="the text sampling starts from")
    parser.add_argument("--sample-length", type=int, default=300, help="characters to sample")
    parser.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (lower: safer)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (through threadpoolctl, if installed)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the weights and the windows")
    parser.add_argument("--out", default=DEFAULT_OUT, help="folder for the PNG of the loss curve")
    parser.add_argument("--plot", default="", help="PNG path (empty: OUT/curve.png)")
    parser.add_argument("--no-plot", action="store_true", help="do not draw (no matplotlib needed)")
    parser.add_argument("--update-docs", action="store_true", help=f"draw into the committed docs/{DOCS_PLOT.name}")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no printed text")
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
