"""Read the tape of the quick start's model: the Wengert list, the backward trace, the memory report, a drawing.

    python examples/reading_the_tape.py                        # prints the three views
    python examples/reading_the_tape.py --render /tmp/tape.svg  # also draws it (Graphviz)
    python examples/reading_the_tape.py --update-docs           # redraws the committed docs/tape.svg

The documentation's "Debugging and reading the tape" page shows this output, and its tests check that it is
what the script prints. Drawing needs the ``viz`` extra (``pip install -e ".[viz]"`` in a checkout) and the
Graphviz program (``apt-get install graphviz``).
"""

import argparse
import pathlib

import numpy as np

import tapegrad as tg
from tapegrad import tape


def record_step():
    rng = np.random.default_rng(0)
    X = tg.Tensor(rng.standard_normal((64, 3)), name="X")
    y = tg.Tensor(X.data @ np.array([[2.0], [-1.0], [0.5]]) + 0.1 * rng.standard_normal((64, 1)), name="y")
    W = tg.Tensor(np.zeros((3, 1)), requires_grad=True, name="W")
    b = tg.Tensor(np.zeros(1), requires_grad=True, name="b")
    t = tape.record(track_source=True)  # keep each entry's line, output shape and dtype
    with t:
        loss = ((X @ W + b - y) ** 2).mean()
    return t, loss


DOCS_SVG = pathlib.Path(__file__).resolve().parent.parent / "docs" / "tape.svg"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--render", metavar="PATH", help="also draw the tape into PATH (.svg, .png)")
    parser.add_argument("--update-docs", action="store_true", help=f"draw it into the committed docs/{DOCS_SVG.name}")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.render and args.update_docs:
        parser.error("--render and --update-docs both say where to draw: pass one")
    if args.update_docs:
        args.render = str(DOCS_SVG)
    t, loss = record_step()
    print(">>> print(t)")
    print(t)
    print("\n>>> print(t.memory_report())")
    print(t.memory_report())
    if args.render:
        tg.viz.render(t, args.render)
    print("\n>>> loss.backward(trace=True)")
    loss.backward(trace=True)


if __name__ == "__main__":
    main()
