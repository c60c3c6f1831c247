"""The derivatives of tanh, to the sixth, by nested elementwise gradients: HIPS autograd's examples/tanh.py
(the plot written to --out, the number of points a flag). examples/autograd/tanh.py runs on autograd and
examples/tanh_from_autograd.py on tapegrad: only their imports differ (docs/guide/from-autograd.md).

    python examples/tanh_from_autograd.py                   # 700 points, writes tanh.png
    python examples/tanh_from_autograd.py --points 50 --out /tmp/tanh
"""

import argparse
import os
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import tapegrad.numpy as np  # noqa: E402
from tapegrad import elementwise_grad as egrad  # noqa: E402


def tanh(x):
    return (1.0 - np.exp(-2 * x)) / (1.0 + np.exp(-(2 * x)))


def derivatives(x, n=6):
    """tanh at x and its first n derivatives, each the elementwise gradient of the one before."""
    f, out = tanh, [tanh(x)]
    for _ in range(n):
        f = egrad(f)
        out.append(f(x))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--points", type=int, default=700, help="points in [-7, 7]")
    parser.add_argument(
        "--out",
        default=os.path.join(tempfile.gettempdir(), "tapegrad-tanh"),
        help="output folder (default: tapegrad-tanh in the temporary directory)",
    )
    args = parser.parse_args(argv)
    x = np.linspace(-7, 7, args.points)
    ys = derivatives(x)
    for k, y in enumerate(ys):
        print(f"derivative {k}: max |.| = {np.max(np.abs(y)):.4f}")
    for y in ys:
        plt.plot(x, y)  # the results are arrays: matplotlib takes them as they are
    plt.axis("off")
    os.makedirs(args.out, exist_ok=True)
    plt.savefig(os.path.join(args.out, "tanh.png"))
    plt.close()
    return x, ys


if __name__ == "__main__":
    main()
