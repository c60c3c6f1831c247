"""Batching rules that ``defop`` rows declare (``batch=``), and the axis arithmetic every rule shares.

A rule is ``rule(k, datas, batched, params)``: ``datas`` are the op's inputs as arrays, a batched one with ``k``
leading batch axes (of size 1 for a level it does not vary along), an unbatched one as it is; it returns the
output with the ``k`` batch axes first. :mod:`tapegrad.batching` derives the rules of elementwise ops and of
``batch="axis"`` and ``batch="leading"`` rows, and calls these.
"""

from __future__ import annotations

import contextlib

import numpy as np

__all__ = [
    "shift_axes", "rank", "full", "sizes", "reshape_rule", "transpose_rule", "expand_dims_rule", "squeeze_rule",
    "broadcast_to_rule", "getitem_rule", "concatenate_rule", "stack_rule", "matmul_rule", "diagonal_rule",
    "trace_rule", "identity_basis",
]  # fmt: skip

# The identity matrices jacfwd pushes through f as a batch of tangents (the input's basis) while it runs, by id: the
# matrix product's rule recognises a batch of the identity's columns and takes A's columns instead of a product
_IDENTITIES: dict[int, np.ndarray] = {}


@contextlib.contextmanager
def identity_basis(n: int, dtype):
    """``np.eye(n, dtype=dtype)`` that :func:`matmul_rule` knows for the duration of the block: ``A @ e_i`` for the
    batch of the identity's columns ``e_i`` is ``A``'s columns, taken without a product (``jacfwd`` of a function
    that starts with a matrix product pays for one product fewer). After the block it is an array like any other.

    >>> with identity_basis(3, np.float64) as e:
    ...     bool(_is_identity(e)), bool(_is_identity(e[1:])), bool(_is_identity(np.eye(3)))
    (True, False, False)
    >>> bool(_is_identity(e))
    False
    """
    e = np.eye(n, dtype=dtype)
    _IDENTITIES[id(e)] = e
    try:
        yield e
    finally:
        del _IDENTITIES[id(e)]


def _is_identity(d) -> bool:
    """Whether ``d`` is an :func:`identity_basis` matrix or a view of all of it, as it is (same memory, layout)."""
    owner = d.base if d.base is not None else d
    if _IDENTITIES.get(id(owner)) is not owner:
        return False
    return (
        d.shape == owner.shape
        and d.strides == owner.strides
        and d.dtype == owner.dtype
        and d.__array_interface__["data"][0] == owner.__array_interface__["data"][0]
    )


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
        if k == 1 and x.shape[1] == y.shape[0] and _is_identity(y):  # A @ e_i is A's column i: no product
            return np.array(x.T, dtype=np.result_type(x, y))
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
