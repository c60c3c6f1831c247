"""``nn.Linear``'s ``x @ weight.T + bias`` as one op (``torch.nn.functional.linear``, PyTorch's ``addmm``).

Written as three ops (the transpose, the product, the sum) it is three entries of the tape and three rules on
every step; as one it is one entry, and its forward adds the bias into the product's own buffer, which no one
else has seen (a sum of two ops cannot: the product is a value later ops may read). ``x`` is ``(..., in)`` and
its leading axes are one matrix of rows for the product each way, ``weight`` is ``(out, in)``, ``bias``
``(out,)``. The rules: ``g @ weight`` for ``x``, ``g^T @ x`` for ``weight`` (in its own layout: no transpose to
copy), ``g`` summed over the rows for ``bias``; all through ``xp``, so a recorded replay differentiates them again.
"""

from __future__ import annotations

import math

import numpy as np

from ..registry import defop


def _rows(xp, a):
    """``a`` of shape ``(..., n)`` as the matrix ``(rows, n)`` (a 2-D ``a`` as it is). The rows are counted, not
    left to ``-1``, which NumPy cannot infer for an array with no elements (``in_features`` 0)."""
    return a if a.ndim == 2 else xp.reshape(a, (math.prod(a.shape[:-1]), a.shape[-1]))


def _product(xp, x, weight):
    """``x @ weight.T`` with ``x``'s leading axes as rows of one matrix product."""
    out = xp.matmul(_rows(xp, x), xp.swapaxes(weight, -1, -2))
    return out if x.ndim == 2 else xp.reshape(out, tuple(x.shape[:-1]) + (weight.shape[0],))


def _linear(x, weight, bias, *, xp=np):
    out = _product(xp, x, weight)
    if out.__class__ is np.ndarray and np.result_type(out, bias) == out.dtype:
        out += bias  # the product's own buffer (or a reshaped view of it): nothing else holds it
        return out
    return out + bias  # another library's array, or a bias of a wider dtype (NumPy's promotion)


def _vjp_x(xp, g, ans, x, weight, bias):
    gx = xp.matmul(_rows(xp, g), weight)
    return gx if x.ndim == 2 else xp.reshape(gx, tuple(x.shape))


def _vjp_weight(xp, g, ans, x, weight, bias):
    return xp.matmul(xp.swapaxes(_rows(xp, g), -1, -2), _rows(xp, x))


def _vjp_bias(xp, g, ans, x, weight, bias):
    return xp.sum(_rows(xp, g), axis=0)


def _jvp(xp, ts, ans, x, weight, bias):
    tx, tw, tb = ts
    terms = []
    if tx is not None:
        terms.append(_product(xp, tx, weight))
    if tw is not None:
        terms.append(_product(xp, x, tw))
    if tb is not None:
        terms.append(xp.broadcast_to(tb, tuple(ans.shape)) if not terms else tb)
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


def _batch(k, datas, batched, params):
    """vmap: a batch of inputs alone is more rows of the same product; a batch of weights (or biases) is one
    product per example, each example's rows against its own weight."""
    x, weight, bias = datas
    bx, bw, bb = batched
    if not (bw or bb):
        return _linear(x, weight, bias)
    # Each batched input has its own k batch axes, of size 1 along a level it does not vary on (nested vmaps):
    # its rows, weights and bias keep their own, and the product and the sum broadcast them.
    middle = x.shape[k:-1] if bx else x.shape[:-1]
    rows = np.reshape(x, (x.shape[:k] if bx else ()) + (math.prod(middle), x.shape[-1]))
    out = np.matmul(rows, np.swapaxes(weight, -1, -2)) + (np.expand_dims(bias, -2) if bb else bias)
    return np.reshape(out, out.shape[:-2] + middle + (out.shape[-1],))


linear = defop(
    "linear",
    _linear,
    _vjp_x,
    _vjp_weight,
    _vjp_bias,
    save="x weight",
    inputs=("x", "weight", "bias"),
    jvp=_jvp,
    batch=_batch,
    doc="x @ weight.T + bias in one entry (nn.functional.linear's op).\n\n"
    ">>> import tapegrad as tg\n>>> from tapegrad.nn._linear_op import linear\n"
    ">>> linear(tg.Tensor([[1.0, 2.0]]), tg.Tensor([[1.0, 1.0]]), tg.Tensor([0.5]))\nTensor([[3.5]])",
)
