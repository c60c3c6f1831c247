"""Matrix product for 1-D, 2-D and batched N-D operands (batch dimensions broadcast).

The rules promote 1-D operands the way ``np.matmul`` does, compute in the output's batch shape, and leave
summing over broadcast batch dimensions to the replay's ``unbroadcast``.
"""

import numpy as np

from ..registry import defop


def _matmul_vjp_x(xp, g, ans, x, y):
    if x.ndim == 1 and y.ndim == 1:
        return g * y
    if y.ndim == 1:  # (..., m, k) @ (k,) -> (..., m)
        return xp.expand_dims(g, -1) * y
    if x.ndim == 1:  # (k,) @ (..., k, n) -> (..., n)
        return xp.squeeze(xp.matmul(y, xp.expand_dims(g, -1)), -1)
    return xp.matmul(g, xp.swapaxes(y, -1, -2))


def _matmul_vjp_y(xp, g, ans, x, y):
    if x.ndim == 1 and y.ndim == 1:
        return g * x
    if x.ndim == 1:
        return xp.expand_dims(x, -1) * xp.expand_dims(g, -2)
    if y.ndim == 1:
        return xp.squeeze(xp.matmul(xp.swapaxes(x, -1, -2), xp.expand_dims(g, -1)), -1)
    return xp.matmul(xp.swapaxes(x, -1, -2), g)


matmul = defop(
    "matmul",
    np.matmul,
    _matmul_vjp_x,
    _matmul_vjp_y,
    save="x y",
    broadcast=True,
    doc="Matrix product (x @ y) for 1-D, 2-D and batched operands.\n\n"
    ">>> import tapegrad as tg\n>>> tg.matmul(tg.Tensor([[1.0, 2.0]]), tg.Tensor([[3.0], [4.0]]))\nTensor([[11.]])",
)
