"""Batching rules that ``defop`` rows declare (``batch=``), and the axis arithmetic every rule shares.

A rule is ``rule(k, datas, batched, params)``: ``datas`` are the op's inputs as arrays, a batched one with ``k``
leading batch axes (of size 1 for a level it does not vary along), an unbatched one as it is; it returns the
output with the ``k`` batch axes first. :mod:`tapegrad.batching` derives the rules of elementwise ops and of
``batch="axis"`` and ``batch="leading"`` rows, and calls these.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "shift_axes", "rank", "full", "sizes", "reshape_rule", "transpose_rule", "expand_dims_rule", "squeeze_rule",
    "broadcast_to_rule", "getitem_rule", "concatenate_rule", "stack_rule", "matmul_rule", "diagonal_rule",
    "trace_rule", "solve_rule", "fft_axes_rule",
]  # fmt: skip


def rank(d, b, k):
    return np.ndim(d) - (k if b else 0)


def shift_axes(axis, k, rank):
    """Axes of one example as axes of the batch: past the ``k`` batch axes (None: every example axis).

    >>> shift_axes(None, 1, 2), shift_axes(-1, 2, 3), shift_axes((0, -1), 1, 2)
    ((1, 2), 4, (1, 2))
    """
    if axis is None:
        return tuple(range(k, k + rank))
    if isinstance(axis, (tuple, list)):
        return tuple(int(a) % max(rank, 1) + k for a in axis)
    return int(axis) % max(rank, 1) + k


def full(k, datas, batched, sizes_):
    """Every input with the ``k`` batch axes at their full sizes."""
    return [
        np.broadcast_to(d, tuple(sizes_) + d.shape[k:]) if b else np.broadcast_to(d, tuple(sizes_) + np.shape(d))
        for d, b in zip(datas, batched)
    ]


def sizes(k, datas, batched):
    out = [1] * k
    for d, b in zip(datas, batched):
        if b:
            out = [max(s, n) for s, n in zip(out, d.shape[:k])]
    return out


def _one(datas, batched, name):
    if any(batched[1:]):
        raise NotImplementedError(f"vmap: {name}'s batching rule takes a batch of its first input only")
    return datas[0]


def reshape_rule(k, datas, batched, params):
    x = _one(datas, batched, "reshape")
    shape = params["shape"]
    return np.reshape(x, x.shape[:k] + (tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)))


def transpose_rule(k, datas, batched, params):
    x = _one(datas, batched, "transpose")
    r = x.ndim - k
    axes = params.get("axes")
    axes = tuple(range(r))[::-1] if axes is None else tuple(int(a) % r for a in axes)
    return np.transpose(x, tuple(range(k)) + tuple(a + k for a in axes))


def expand_dims_rule(k, datas, batched, params):
    x = _one(datas, batched, "expand_dims")
    axis = params["axis"]
    n = len(axis) if isinstance(axis, (tuple, list)) else 1
    return np.expand_dims(x, shift_axes(axis, k, x.ndim - k + n))


def squeeze_rule(k, datas, batched, params):
    x = _one(datas, batched, "squeeze")
    axis = params.get("axis")
    if axis is None:
        axis = tuple(i for i, s in enumerate(x.shape[k:]) if s == 1)
    return np.squeeze(x, shift_axes(axis, k, x.ndim - k))


def broadcast_to_rule(k, datas, batched, params):
    x = _one(datas, batched, "broadcast_to")
    shape = tuple(params["shape"])
    r = x.ndim - k
    x = np.reshape(x, x.shape[:k] + (1,) * (len(shape) - r) + x.shape[k:])
    return np.broadcast_to(x, x.shape[:k] + shape)


def _is_advanced(i) -> bool:
    return not (isinstance(i, slice) or i is None or i is Ellipsis or isinstance(i, (int, np.integer)))


def getitem_rule(k, datas, batched, params):
    x = _one(datas, batched, "getitem")
    index = params["index"]
    index = index if isinstance(index, tuple) else (index,)
    arrays = [j for j, i in enumerate(index) if _is_advanced(i)]
    if arrays:
        picked = [j for j, i in enumerate(index) if _is_advanced(i) or isinstance(i, (int, np.integer))]
        if picked != list(range(picked[0], picked[-1] + 1)):
            raise NotImplementedError(
                "vmap: getitem with array indices separated by slices moves their axes first, which a batch "
                "axis in front would change: index in two steps (x[:, idx][idx2])"
            )
    return x[(slice(None),) * k + index]


def _joined(k, datas, batched, params, extra):
    lined = full(k, datas, batched, sizes(k, datas, batched))
    r = lined[0].ndim - k
    return lined, shift_axes(params.get("axis", 0), k, r + extra)


def concatenate_rule(k, datas, batched, params):
    lined, axis = _joined(k, datas, batched, params, 0)
    return np.concatenate(lined, axis=axis)


def stack_rule(k, datas, batched, params):
    lined, axis = _joined(k, datas, batched, params, 1)
    return np.stack(lined, axis=axis)


def matmul_rule(k, datas, batched, params):
    x, y = datas
    bx, by = batched
    rx, ry = rank(x, bx, k), rank(y, by, k)
    # one matrix product for the whole batch where a side is one unbatched matrix (a layer's weights)
    if bx and not by and ry == 2 and rx in (1, 2):
        return np.matmul(x, y)  # (batch..., [m,] n) @ (n, p): NumPy multiplies the rows at once
    if by and not bx and rx == 2 and ry == 1:
        return np.matmul(y, x.T)  # A @ v for each v: the batch of vectors as rows, times A^T
    # vectors as matrices (a row for x, a column for y), taken off again after the product
    if rx == 1:
        x = np.expand_dims(x, k if bx else 0)
    if ry == 1:
        y = np.expand_dims(y, -1)
    rx2, ry2 = max(rx, 2), max(ry, 2)
    top = max(rx2, ry2)

    def lined(d, b, r):
        if b:
            return np.reshape(d, d.shape[:k] + (1,) * (top - r) + d.shape[k:])
        return d  # an unbatched operand broadcasts from the right, as in NumPy's matmul

    out = np.matmul(lined(x, bx, rx2), lined(y, by, ry2))
    if ry == 1:
        out = out[..., 0]
    if rx == 1:
        out = out[..., 0, :] if ry != 1 else out[..., 0]
    return out


def diagonal_rule(k, datas, batched, params):
    x = _one(datas, batched, "diagonal")
    r = x.ndim - k
    a1, a2 = params.get("axis1", 0) % r + k, params.get("axis2", 1) % r + k
    return np.diagonal(x, offset=params.get("offset", 0), axis1=a1, axis2=a2)


def trace_rule(k, datas, batched, params):
    x = _one(datas, batched, "trace")
    r = x.ndim - k
    a1, a2 = params.get("axis1", 0) % r + k, params.get("axis2", 1) % r + k
    return np.trace(x, offset=params.get("offset", 0), axis1=a1, axis2=a2)


def solve_rule(forward):
    """The rule of a solve ``forward(a, b, **params)`` (``solve``, ``solve_triangular``) that broadcasts the
    leading axes of a stack of matrices ``a`` and of right-hand sides ``b``, a vector only when one example's
    is 1-D: a vector becomes a column (a batch of vectors would be read as a matrix), and each batched operand
    gets size-1 axes after its batch axes, so that its examples' own stack axes line up with the other's."""

    def rule(k, datas, batched, params):
        (a, b), (ba, bb) = datas, batched
        vector = rank(b, bb, k) == 1
        if vector:
            b = np.expand_dims(b, -1)
        top = max(rank(a, ba, k), rank(b, bb, k))

        def lined(d, is_batched):
            r = rank(d, is_batched, k)
            return np.reshape(d, d.shape[:k] + (1,) * (top - r) + d.shape[k:]) if is_batched else d

        out = forward(lined(a, ba), lined(b, bb), **params)
        return out[..., 0] if vector else out

    return rule


def fft_axes_rule(name, forward):
    """The rule of an n-dimensional transform ``forward(x, s=None, axes=None, **params)`` (``fftn``, ``ifftn``):
    ``axes`` shifted past the batch axes (None: every example axis, or the last ``len(s)`` of them, as NumPy
    reads it)."""

    def rule(k, datas, batched, params):
        x = _one(datas, batched, name)
        r = x.ndim - k
        params = dict(params)
        axes, s = params.get("axes"), params.get("s")
        if axes is None:
            axes = tuple(range(r)) if s is None else tuple(range(r - len(s), r))
        params["axes"] = shift_axes(tuple(axes), k, r)
        return forward(x, **params)

    return rule
