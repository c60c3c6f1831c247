"""Read the tape of the quick start's model: the Wengert list, the backward trace, the memory report, a drawing.

python examples/reading_the_tape.py            # prints the three views (the README shows this output)
python examples/reading_the_tape.py --render docs/tape.svg   # also draws it (needs tapegrad[viz], Graphviz)
"""

import argparse

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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--render", metavar="PATH", help="draw the tape into PATH (.svg, .png)")
    args = parser.parse_args(argv)
    t, loss = record_step()
    print("$ print(t)")
    print(t)
    print("\n$ print(t.memory_report())")
    print(t.memory_report())
    if args.render:
        tg.viz.render(t, args.render)
    print("\n$ loss.backward(trace=True)")
    loss.backward(trace=True)


if __name__ == "__main__":
    main()
