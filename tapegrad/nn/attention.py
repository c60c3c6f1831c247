"""``MultiheadAttention``: PyTorch's layer, with its parameter names (``in_proj_weight``, ``in_proj_bias``,
``out_proj.weight``, ``out_proj.bias``; ``q_proj_weight``, ``k_proj_weight``, ``v_proj_weight`` when the key or
value width differs), shapes, initialisation (Xavier-uniform input projections, zero biases) and masks.

``attn_mask`` is ``(L, S)`` or ``(N * num_heads, L, S)``, ``key_padding_mask`` ``(N, S)``: boolean, True where
a query may *not* attend (PyTorch's convention for this layer), or float, added to the scores.
``is_causal=True`` without a mask masks each query's later keys. The attention weights (``need_weights``) are
averaged over the heads unless ``average_attn_weights=False``. Dropout on the weights (training only) draws from
the layer's own generator, saved in ``state_dict`` as ``_extra_state``.
"""

from __future__ import annotations

import numpy as np

import tapegrad.nn.init as init
import tapegrad.ops as ops

from .._tensor import Tensor
from ._attention_functions import attend, causal_mask
from .layers import Linear
from .module import Module

__all__ = ["MultiheadAttention"]


def _mask_parts(mask, what, shape, name):
    """(allowed, bias) of a PyTorch-style mask (bool: True = masked out; float: added), reshaped to ``shape``."""
    if mask is None:
        return None, None
    array = mask.data if isinstance(mask, Tensor) else np.asarray(mask)
    if array.size != np.prod(shape):  # e.g. (L, S): the same for every batch and head
        fits = array.ndim <= len(shape) and all(a in (1, b) for a, b in zip(array.shape[::-1], shape[::-1]))
        if not fits:
            raise ValueError(f"{name}: {what} of shape {array.shape} does not fit the attention scores {shape}")
        shape = (1,) * (len(shape) - array.ndim) + tuple(array.shape)
    if array.dtype == bool:
        return ~array.reshape(shape), None
    return None, (ops.reshape(mask, shape) if isinstance(mask, Tensor) else array.reshape(shape))


def _combine(a, b, join):
    return b if a is None else (a if b is None else join(a, b))


class MultiheadAttention(Module):
    """Multi-head attention ``softmax(q k^T / sqrt(d)) v`` over ``num_heads`` heads of ``embed_dim / num_heads``.

    ``forward(query, key, value)`` takes ``(L, N, E)`` (``(N, L, E)`` with ``batch_first``, or unbatched
    ``(L, E)``) and returns ``(attn_output, attn_weights)``, the weights ``None`` unless ``need_weights``.

    >>> import numpy as np, tapegrad as tg
    >>> mha = tg.nn.MultiheadAttention(8, 2, batch_first=True, rng=0)
    >>> x = tg.Tensor(np.random.default_rng(0).normal(size=(3, 5, 8)))
    >>> out, w = mha(x, x, x)
    >>> out.shape, w.shape, bool(np.allclose(w.data.sum(-1), 1))
    ((3, 5, 8), (3, 5, 5), True)
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, rng=None, dtype=np.float64):  # fmt: skip
        super().__init__()
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are not supported")
        if num_heads < 1 or embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: num_heads={num_heads} must divide embed_dim={embed_dim}")
        if not 0 <= dropout < 1:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1), got {dropout}")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self.head_dim = embed_dim // num_heads
        gen = init.generator(rng)
        empty = lambda *shape: Tensor(np.empty(shape, dtype=dtype), requires_grad=True)  # noqa: E731
        self._same_dims = self.kdim == embed_dim and self.vdim == embed_dim
        if self._same_dims:
            self.in_proj_weight = init.xavier_uniform_(empty(3 * embed_dim, embed_dim), rng=gen)
        else:
            self.q_proj_weight = init.xavier_uniform_(empty(embed_dim, embed_dim), rng=gen)
            self.k_proj_weight = init.xavier_uniform_(empty(embed_dim, self.kdim), rng=gen)
            self.v_proj_weight = init.xavier_uniform_(empty(embed_dim, self.vdim), rng=gen)
        self.in_proj_bias = init.zeros_(empty(3 * embed_dim)) if bias else None
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, rng=gen, dtype=dtype)
        if bias:
            init.zeros_(self.out_proj.bias)
        self._dropout_rng = init.generator(gen.integers(2**63))

    def get_extra_state(self):
        return self._dropout_rng.bit_generator.state if self.dropout else None

    def set_extra_state(self, state) -> None:
        self._dropout_rng.bit_generator.state = state

    def _projections(self):
        e = self.embed_dim
        if self._same_dims:
            w = self.in_proj_weight
            ws = (w[:e], w[e : 2 * e], w[2 * e :])
        else:
            ws = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        b = self.in_proj_bias
        bs = (None, None, None) if b is None else (b[:e], b[e : 2 * e], b[2 * e :])
        return ws, bs

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):  # fmt: skip
        name = "MultiheadAttention"
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = (ops.expand_dims(t, 1) for t in (query, key, value))
        elif self.batch_first:
            query, key, value = (ops.swapaxes(t, 0, 1) for t in (query, key, value))
        (length, batch, e), source = query.shape, key.shape[0]
        if e != self.embed_dim or key.shape[-1] != self.kdim or value.shape[-1] != self.vdim:
            raise ValueError(
                f"{name}: query, key and value must end in {self.embed_dim}, {self.kdim} and {self.vdim} features, "
                f"got shapes {query.shape}, {key.shape} and {value.shape}"
            )
        if key.shape[:2] != value.shape[:2] or key.shape[1] != batch:
            raise ValueError(f"{name}: key {key.shape} and value {value.shape} must share (S, N) with N = {batch}")
        h, d = self.num_heads, self.head_dim
        (wq, wk, wv), (bq, bk, bv) = self._projections()

        def heads(x, w, b, n):  # (n, N, width) -> (N, heads, n, head_dim)
            y = ops.matmul(x, ops.transpose(w))
            y = y if b is None else y + b
            return ops.transpose(ops.reshape(y, (n, batch, h, d)), (1, 2, 0, 3))

        q, k, v = heads(query, wq, bq, length), heads(key, wk, bk, source), heads(value, wv, bv, source)
        if is_causal and attn_mask is None:
            attn_mask = ~causal_mask(length, source)
        allowed, bias = _mask_parts(attn_mask, "attn_mask", (batch, h, length, source), name)
        pad_allowed, pad_bias = _mask_parts(key_padding_mask, "key_padding_mask", (batch, 1, 1, source), name)
        allowed = _combine(allowed, pad_allowed, lambda a, b: a & b)
        bias = _combine(bias, pad_bias, lambda a, b: a + b)
        out, weights = attend(q, k, v, allowed, bias, self.dropout if self.training else 0.0, self._dropout_rng)
        out = self.out_proj(ops.reshape(ops.transpose(out, (2, 0, 1, 3)), (length, batch, e)))  # (L, N, E)
        out = ops.squeeze(out, 1) if unbatched else (ops.swapaxes(out, 0, 1) if self.batch_first else out)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = ops.mean(weights, axis=1)
        return out, (ops.squeeze(weights, 0) if unbatched else weights)

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, batch_first={self.batch_first}"
