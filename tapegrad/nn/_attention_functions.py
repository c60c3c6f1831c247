"""Attention (``tapegrad.nn.functional`` re-exports it): ``scaled_dot_product_attention``, and the core that
``MultiheadAttention`` shares, which also returns the attention weights.

Masks follow PyTorch, whose two conventions differ: in ``scaled_dot_product_attention`` a boolean
``attn_mask`` is True where a query *may* attend; in ``MultiheadAttention`` (``attn_mask``,
``key_padding_mask``) True marks what may *not*. Float masks are added to the scores either way. A row whose
every key is masked gives NaN, as in PyTorch. Masked scores are selects (``where``), never products.
"""

from __future__ import annotations

import math

import numpy as np

import tapegrad.ops as ops
import tapegrad.random as _random

from .._tensor import Tensor


def _array(v):
    return v.data if isinstance(v, Tensor) else np.asarray(v)


def causal_mask(length: int, source: int) -> np.ndarray:
    """True where query ``i`` may attend key ``j``: ``j <= i`` (the lower triangle, top-left aligned)."""
    return np.tril(np.ones((length, source), dtype=bool))


def attend(q, k, v, allowed=None, bias=None, dropout_p=0.0, rng=None, scale=None):
    """(softmax(q k^T * scale + bias, masked to ``allowed``) v, the attention weights), over the last two axes."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = ops.matmul(q, ops.swapaxes(k, -1, -2)) * scale
    if bias is not None:
        scores = scores + bias
    if allowed is not None:
        scores = ops.where(allowed, scores, -np.inf)
    weights = ops.softmax(scores, axis=-1)
    attended = weights
    if dropout_p > 0:
        generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        keep = ops.greater_equal(_random.random(generator, weights.shape), dropout_p)
        attended = weights * (ops.astype(keep, dtype=weights.dtype) / weights.dtype.type(1 - dropout_p))
    return ops.matmul(attended, v), weights


def scaled_dot_product_attention(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale=None,
    enable_gqa=False,
    *,
    rng=None,
) -> Tensor:
    """``softmax(q k^T / sqrt(E) + mask) v`` over ``(..., L, E)``, ``(..., S, E)`` and ``(..., S, Ev)``.

    ``attn_mask`` broadcasts to ``(..., L, S)``: boolean (True: may attend) or float (added). ``is_causal``
    masks keys after each query (no ``attn_mask`` then). ``dropout_p`` drops attention weights with ``rng``
    (a Generator or a seed; PyTorch applies it whenever it is nonzero). ``enable_gqa`` repeats the key/value
    heads (axis -3) to the query's heads.

    >>> import numpy as np, tapegrad as tg
    >>> q = k = tg.Tensor(np.eye(2)[None]); v = tg.Tensor([[[1.0], [3.0]]])
    >>> tg.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    Tensor([[[1.       ],
             [2.3395231]]])
    """
    if not 0 <= dropout_p < 1:
        raise ValueError(f"scaled_dot_product_attention: dropout_p must be in [0, 1), got {dropout_p}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(
            f"scaled_dot_product_attention: query {query.shape}, key {key.shape} and value {value.shape} must be "
            "(..., L, E), (..., S, E) and (..., S, Ev)"
        )
    if enable_gqa and key.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        repeat = query.shape[-3] // key.shape[-3]
        if repeat * key.shape[-3] != query.shape[-3]:
            raise ValueError(
                f"scaled_dot_product_attention: {query.shape[-3]} query heads are not a multiple of {key.shape[-3]}"
            )
        index = (Ellipsis, np.repeat(np.arange(key.shape[-3]), repeat), slice(None), slice(None))
        key, value = key[index], value[index]
    allowed = bias = None
    if is_causal:
        if attn_mask is not None:
            raise ValueError("scaled_dot_product_attention: pass attn_mask or is_causal=True, not both")
        allowed = causal_mask(query.shape[-2], key.shape[-2])
    elif attn_mask is not None:
        kind = attn_mask.dtype.kind if hasattr(attn_mask, "dtype") else np.asarray(attn_mask).dtype.kind
        if kind == "b":
            allowed = _array(attn_mask)
        else:
            bias = attn_mask
    out, _ = attend(query, key, value, allowed, bias, dropout_p, rng, scale)
    return out
