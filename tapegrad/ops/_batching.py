"""Batching rules that ``defop`` rows declare (``batch=``), and the axis arithmetic every rule shares.

A rule is ``rule(k, datas, batched, params)``: ``datas`` are the op's inputs as arrays, a batched one with ``k``
leading batch axes (of size 1 for a level it does not vary along), an unbatched one as it is; it returns the
output with the ``k`` batch axes first. A parameter that f computed from its arguments (an index array) is
batched too: a rule that takes it names it in ``rule.batched_params`` and gets it as a :class:`BatchedIndex`
(its array with the ``k`` batch axes first); vmap refuses such a parameter for any other rule, naming it.
:mod:`tapegrad.batching` derives the rules of elementwise ops and of
``batch="axis"`` and ``batch="leading"`` rows, and calls these.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

__all__ = [
    "shift_axes", "rank", "full", "sizes", "reshape_rule", "transpose_rule", "expand_dims_rule", "squeeze_rule",
    "broadcast_to_rule", "getitem_rule", "concatenate_rule", "stack_rule", "matmul_rule", "diagonal_rule",
    "trace_rule", "flat_index_rule", "solve_rule", "fft_axes_rule", "BatchedIndex", "first_axis_rule", "conv_rule", "einsum_rule",
    "tensordot_rule", "convolve_rule", "scatter_rule", "take_along_axis_rule", "scatter_along_axis_rule",
    "index_update_rule", "last_writes", "last_writes_rule", "roll_rule", "pad_rule", "diagflat_rule", "standardize_rule", "identity_basis",
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


def _takes(*names):
    # the batched parameters a rule takes (see the module docstring)
    def mark(rule):
        rule.batched_params = names
        return rule

    return mark


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
            out = [s if n == 1 else n for s, n in zip(out, d.shape[:k])]  # broadcasting's: a batch of 0 stays 0
    return out


def _one(datas, batched, name):
    if any(batched[1:]):
        raise NotImplementedError(f"vmap: {name}'s batching rule takes a batch of its first input only")
    return datas[0]


def flat_index_rule(forward, name):
    """argmax and argmin: ``axis=None`` is an index into the flattened example (NumPy's), so each example is
    flattened behind the batch axes and searched along that one axis; an integer axis is shifted past the batch.

    >>> rule = flat_index_rule(lambda x, axis, keepdims: np.argmax(x, axis=axis, keepdims=keepdims), "argmax")
    >>> rule(1, [np.array([[[0, 5], [1, 2]], [[7, 0], [0, 9]]])], [True], {})
    array([1, 3])
    """

    def rule(k, datas, batched, params):
        x = _one(datas, batched, name)
        axis, keepdims = params.get("axis"), params.get("keepdims", False)
        if axis is not None:
            return forward(x, axis=shift_axes(axis, k, x.ndim - k), keepdims=keepdims)
        out = forward(np.reshape(x, x.shape[:k] + (math.prod(x.shape[k:]),)), axis=k, keepdims=False)
        return np.reshape(out, x.shape[:k] + (1,) * (x.ndim - k)) if keepdims else out

    return rule


def reshape_rule(k, datas, batched, params):
    x = _one(datas, batched, "reshape")
    shape = params["shape"]
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)
    if -1 in shape and 0 in x.shape[:k]:  # an empty batch: NumPy cannot infer the -1 of (0, -1), the example can
        shape = np.empty(x.shape[k:], dtype=np.bool_).reshape(shape).shape
    return np.reshape(x, x.shape[:k] + shape)


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


@_takes("index")
def getitem_rule(k, datas, batched, params):
    x = _one(datas, batched, "getitem")
    index = _adjacent_arrays(params["index"], "getitem")
    if any(isinstance(i, BatchedIndex) for i in index):  # each example indexed by its own array
        x = x if batched[0] else np.reshape(x, (1,) * k + np.shape(x))
        full_index, lead, m = _per_example_index(k, index, x.shape[:k], x.ndim - k, "getitem")
        out = x[full_index]  # (batch, index, lead, rest): the leading slices' axes go after the batch's
        return np.moveaxis(out, tuple(range(k + m, k + m + lead)), tuple(range(k, k + lead)))
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


# -- parameters batched by f (an index computed inside vmap) -------------------------------------------------
class BatchedIndex:
    """A parameter that varies along the batch: ``data`` has the ``k`` batch axes first (size 1 for a level it
    does not vary along), then one example's array.

    >>> BatchedIndex(np.zeros((3, 2), int)).data.shape
    (3, 2)
    """

    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data


def _index_with_batch(k, idx):
    """An index array of one example (or a :class:`BatchedIndex`) with ``k`` leading batch axes."""
    if isinstance(idx, BatchedIndex):
        return idx.data
    idx = np.asarray(idx)
    return np.reshape(idx, (1,) * k + idx.shape)


def _per_example_index(k, index, batch, r, name):
    """An index of one example holding batched arrays, as one index of the batch: an arange per batch axis and
    the example's arrays lined up behind them; and how many axes the slices before the arrays make (NumPy puts
    them after the arrays' axes, the batch's being arrays too) and how many the arrays make."""
    index = _adjacent_arrays(index, name)
    group = [j for j, i in enumerate(index) if _is_advanced(i) or isinstance(i, (int, np.integer))]
    arrays = [i.data if isinstance(i, BatchedIndex) else np.asarray(i) for i in (index[j] for j in group)]
    if any(a.dtype == bool for a in arrays):
        raise NotImplementedError(
            f"vmap: {name} with a boolean mask beside a batched index: the selected count would differ between "
            "examples; use tg.where, or integer indices"
        )
    own = [a.shape[k:] if isinstance(index[j], BatchedIndex) else a.shape for j, a in zip(group, arrays)]
    m = len(np.broadcast_shapes(*own))
    lined = [
        np.reshape(a, (a.shape[:k] if isinstance(index[j], BatchedIndex) else (1,) * k) + (1,) * (m - len(o)) + o)
        for j, a, o in zip(group, arrays, own)
    ]
    aranges = tuple(np.arange(b).reshape((1,) * j + (b,) + (1,) * (k - 1 - j + m)) for j, b in enumerate(batch))
    consumed = sum(1 for i in index if i is not None and i is not Ellipsis)
    widths = [r - consumed if i is Ellipsis else 1 for i in index[: group[0]]]
    full_index = aranges + index[: group[0]] + tuple(lined) + index[group[-1] + 1 :]
    return full_index, sum(widths), m


def _adjacent_arrays(index, name):
    """Refuse an index whose array indices are separated by slices: NumPy moves their axes first, which the
    batch axes in front would change."""
    index = index if isinstance(index, tuple) else (index,)
    picked = [j for j, i in enumerate(index) if _is_advanced(i) or isinstance(i, (int, np.integer))]
    if any(_is_advanced(i) for i in index) and picked != list(range(picked[0], picked[-1] + 1)):
        raise NotImplementedError(
            f"vmap: {name} with array indices separated by slices moves their axes first, which a batch axis in "
            "front would change: index in two steps (x[:, idx][idx2])"
        )
    return index


# -- ops with a leading N axis: the batch folded into N ------------------------------------------------------
def first_axis_rule(forward, name):
    """The rule of an op on ``(N, ...)`` whose examples along N are independent (unfold, fold, pooling): the
    batch axes are folded into N, the op runs once, and N is split again."""

    def rule(k, datas, batched, params):
        x = _one(datas, batched, name)
        out = forward(np.reshape(x, (-1,) + x.shape[k + 1 :]), **params)
        return np.reshape(out, x.shape[: k + 1] + out.shape[1:])

    return rule


def conv_rule(forward, name):
    """conv and conv_transpose: a batch of inputs folded into N; a batch of weights folded into the channels,
    one group per example (``groups * B``), the input's channels repeated for each (JAX's trick)."""

    def rule(k, datas, batched, params):
        x, w = datas
        if not batched[1]:
            out = forward(np.reshape(x, (-1,) + x.shape[k + 1 :]), w, **params)
            return np.reshape(out, x.shape[: k + 1] + out.shape[1:])
        n = sizes(k, datas, batched)
        x, w = full(k, datas, batched, n)
        b = int(np.prod(n, dtype=np.int64))
        if b == 0:  # no example: no groups to fold them into; one example's output says the shape
            one = forward(np.zeros(x.shape[k:], x.dtype), np.zeros(w.shape[k:], w.dtype), **params)
            return np.zeros(tuple(n) + one.shape, one.dtype)
        x = np.moveaxis(np.reshape(x, (b,) + x.shape[k:]), 0, 1)  # (N, B, C, *spatial)
        x = np.reshape(x, (x.shape[0], -1) + x.shape[3:])
        w = np.reshape(w, (-1,) + w.shape[k + 1 :])
        out = forward(x, w, **dict(params, groups=params["groups"] * b))  # (N, B * O, *out)
        out = np.moveaxis(np.reshape(out, (out.shape[0], b, -1) + out.shape[2:]), 1, 0)
        return np.reshape(out, tuple(n) + out.shape[1:])

    return rule


# -- contractions ----------------------------------------------------------------------------------------------
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _fresh(subscripts, k):
    letters = [c for c in _LETTERS if c not in subscripts]
    if len(letters) < k:
        raise NotImplementedError(f"vmap: einsum {subscripts!r} leaves no letter free for {k} batch axes")
    return "".join(letters[:k])


def einsum_rule(k, datas, batched, params):
    """A fresh letter per batch axis, on every batched operand and first in the output."""
    spec = params["subscripts"]
    inputs, output = spec.split("->")
    lead = _fresh(spec, k)
    n = sizes(k, datas, batched)
    # einsum broadcasts no labelled axis of size 1: a batched operand not at the full batch sizes is widened
    lined = [
        np.broadcast_to(d, tuple(n) + d.shape[k:]) if b and list(d.shape[:k]) != n else d
        for d, b in zip(datas, batched)
    ]
    terms = [lead + t if b else t for t, b in zip(inputs.split(","), batched)]
    return np.einsum(",".join(terms) + "->" + lead + output, *lined, optimize=params.get("optimize", False))


def tensordot_rule(k, datas, batched, params):
    """One side batched: its batch axes are free axes of tensordot; both: an einsum with the batch letters."""
    x, y = datas
    ax_x, ax_y = params["axes"]
    if not batched[1]:
        return np.tensordot(x, y, axes=(tuple(a + k for a in ax_x), ax_y))  # the batch axes come first
    if not batched[0]:
        out = np.tensordot(x, y, axes=(ax_x, tuple(a + k for a in ax_y)))  # (free x, batch, free y)
        nx = x.ndim - len(ax_x)
        return np.moveaxis(out, tuple(range(nx, nx + k)), tuple(range(k)))
    rx, ry = x.ndim - k, y.ndim - k
    lx = list(_LETTERS[k : k + rx])
    ly = list(_LETTERS[k + rx : k + rx + ry])
    for i, j in zip(ax_x, ax_y):
        ly[j] = lx[i]
    lead = _LETTERS[:k]
    free = [c for i, c in enumerate(lx) if i not in ax_x] + [c for j, c in enumerate(ly) if j not in ax_y]
    spec = f"{lead}{''.join(lx)},{lead}{''.join(ly)}->{lead}{''.join(free)}"
    return np.einsum(spec, *full(k, datas, batched, sizes(k, datas, batched)), optimize=True)


def convolve_rule(correlate, offset):
    """np.convolve and np.correlate of 1-D examples: sliding windows of the zero-padded first input times the
    second (flipped for a convolution), one product for the batch, then NumPy's ``mode`` slice (``offset``:
    where it starts in the full output)."""

    def rule(k, datas, batched, params):
        x, y = full(k, datas, batched, sizes(k, datas, batched))
        m, n = x.shape[-1], y.shape[-1]
        padded = np.pad(x, [(0, 0)] * k + [(n - 1, n - 1)])
        windows = np.lib.stride_tricks.sliding_window_view(padded, n, axis=-1)  # (batch, m + n - 1, n)
        whole = np.einsum("...tn,...n->...t", windows, y if correlate else y[..., ::-1])
        mode = params.get("mode", "valid" if correlate else "full")
        length = {"full": m + n - 1, "same": max(m, n), "valid": max(m, n) - min(m, n) + 1}[mode]
        start = offset(mode, m, n, correlate)
        return whole[..., start : start + length]

    return rule


# -- indexing --------------------------------------------------------------------------------------------------
@_takes("index")
def scatter_rule(k, datas, batched, params):
    g = _one(datas, batched, "scatter")
    index = _adjacent_arrays(params["index"], "scatter")
    if any(isinstance(i, BatchedIndex) for i in index):  # getitem's adjoint, each example at its own index
        g = g if batched[0] else np.reshape(g, (1,) * k + np.shape(g))
        shape = tuple(params["shape"])
        arrays = [i.data for i in index if isinstance(i, BatchedIndex)]
        n = tuple(max([g.shape[j]] + [a.shape[j] for a in arrays]) for j in range(k))
        full_index, lead, m = _per_example_index(k, index, n, len(shape), "scatter")
        g = np.moveaxis(g, tuple(range(k, k + lead)), tuple(range(k + m, k + m + lead)))
        out = np.zeros(n + shape, dtype=g.dtype)
        np.add.at(out, full_index, g)  # repeated positions accumulate
        return out
    out = np.zeros(g.shape[:k] + tuple(params["shape"]), dtype=g.dtype)
    np.add.at(out, (slice(None),) * k + index, g)  # repeated integer indices accumulate
    return out


@_takes("indices")
def take_along_axis_rule(k, datas, batched, params):
    x = _one(datas, batched, "take_along_axis")
    x = x if batched[0] else np.reshape(x, (1,) * k + np.shape(x))  # shared, the indices batched
    idx = _index_with_batch(k, params["indices"])
    return np.take_along_axis(x, idx, axis=params["axis"] % (x.ndim - k) + k)  # size-1 axes broadcast


@_takes("indices")
def scatter_along_axis_rule(k, datas, batched, params):
    g = _one(datas, batched, "scatter_along_axis")
    g = g if batched[0] else np.reshape(g, (1,) * k + np.shape(g))  # shared, the indices batched
    idx = _index_with_batch(k, params["indices"])
    shape = tuple(params["shape"])
    n = list(np.broadcast_shapes(g.shape[:k], idx.shape[:k]))  # not max(): a batch of 0 stays 0
    idx = np.broadcast_to(idx, tuple(n) + idx.shape[k:])
    at = [np.arange(s).reshape((1,) * i + (s,) + (1,) * (k + len(shape) - i - 1)) for i, s in enumerate(n)]
    at += [
        idx if i == params["axis"] else np.arange(s).reshape((1,) * (k + i) + (s,) + (1,) * (len(shape) - i - 1))
        for i, s in enumerate(shape)
    ]
    out = np.zeros(tuple(n) + shape, dtype=g.dtype)
    np.add.at(out, tuple(at), g)  # repeats accumulate
    return out


def _last_of_each(flat):
    """Which entries of the integer array ``flat`` are the last occurrence of their value."""
    rev = flat[::-1]
    last = flat.size - 1 - np.unique(rev, return_index=True)[1]
    keep = np.zeros(flat.shape, dtype=bool)
    keep[last] = True
    return keep


def _global_positions(k, pos, n, size):
    """Per-example flat positions ``pos`` (batch axes first) as positions into the whole batch, one row each."""
    pos = np.broadcast_to(pos, tuple(n) + pos.shape[k:]).reshape(math.prod(n), math.prod(pos.shape[k:])) % size
    return pos + (np.arange(pos.shape[0]) * size)[:, None]


def last_writes(positions):
    """For the flat positions an update writes to, in order: whether each write is the last to its position (the
    one that wins, and the only one that gets the gradient).

    >>> last_writes(np.array([2, 0, 2]))
    array([False,  True,  True])
    """
    return _last_of_each(np.asarray(positions).reshape(-1)).reshape(np.shape(positions))


def last_writes_rule(k, datas, batched, params):
    pos = datas[0]  # flat positions (never negative: tg.index_update computes them), batch axes first
    size = int(pos.max()) + 1 if pos.size else 1
    return _last_of_each(_global_positions(k, pos, pos.shape[:k], size).reshape(-1)).reshape(pos.shape)


@_takes("index")
def index_update_rule(k, datas, batched, params):
    x, v = datas
    if isinstance(params["index"], BatchedIndex):
        return _index_update_per_example(k, x, v, batched, params["index"].data)
    index = _adjacent_arrays(params["index"], "index_update")
    n = sizes(k, datas, batched)
    out = np.array(np.broadcast_to(x, tuple(n) + (x.shape[k:] if batched[0] else np.shape(x))))
    out[(slice(None),) * k + index] = v  # an unbatched value broadcasts from the right, a batched one lines up
    return out


def _index_update_per_example(k, x, v, batched, pos):
    """``index_update`` of a flat example at positions of its own (``tg.index_update``'s batched index): each
    example's last write to a position wins, as without vmap."""
    n = np.broadcast_shapes(tuple(sizes(k, [x, v], batched)), pos.shape[:k])  # not max(): a batch of 0 stays 0
    shape = x.shape[k:] if batched[0] else np.shape(x)
    out = np.array(np.broadcast_to(x, n + shape), order="C")  # C order: its reshape below is a view
    size = math.prod(shape)
    where = _global_positions(k, pos, n, size).reshape(-1)
    values = np.broadcast_to(v if batched[1] else np.asarray(v), n + pos.shape[k:]).reshape(-1)
    keep = _last_of_each(where)
    out.reshape(-1)[where[keep]] = values[keep]
    return out


# -- axes shifted past the batch -------------------------------------------------------------------------------
def roll_rule(k, datas, batched, params):
    x = _one(datas, batched, "roll")
    axis, shift = params.get("axis"), params["shift"]
    if axis is None:  # the example flattened, rolled and given its shape back
        flat = np.roll(np.reshape(x, x.shape[:k] + (math.prod(x.shape[k:]),)), shift, axis=k)
        return np.reshape(flat, x.shape)
    return np.roll(x, shift, axis=shift_axes(axis, k, x.ndim - k))


def pad_rule(k, datas, batched, params):
    x = _one(datas, batched, "pad")
    params = dict(params)
    params["pad_width"] = ((0, 0),) * k + tuple(params["pad_width"])
    values = params.get("constant_values", 0)
    if isinstance(values, tuple):
        params["constant_values"] = ((0, 0),) * k + values
    mode = params.pop("mode", "constant")
    return np.pad(x, params.pop("pad_width"), mode=mode, **params)


def diagflat_rule(k, datas, batched, params):
    x = _one(datas, batched, "diagflat")
    flat = np.reshape(x, x.shape[:k] + (math.prod(x.shape[k:]),))
    m, off = flat.shape[-1], params.get("k", 0)
    out = np.zeros(x.shape[:k] + (m + abs(off),) * 2, dtype=x.dtype)
    i = np.arange(m)
    out[..., i + max(-off, 0), i + max(off, 0)] = flat
    return out


def standardize_rule(forward):
    """x, weight and bias lined up as an elementwise op's (size-1 axes after the batch axes), the statistics'
    axes shifted past the batch, and the op's ``forward`` run once."""

    def rule(k, datas, batched, params):
        top = rank(datas[0], batched[0], k)  # weight and bias broadcast to x's shape
        lined = [
            np.reshape(d, d.shape[:k] + (1,) * (top - rank(d, True, k)) + d.shape[k:]) if b else d
            for d, b in zip(datas, batched)
        ]
        if not batched[0]:
            lined[0] = np.reshape(lined[0], (1,) * k + np.shape(lined[0]))
        return forward(*lined, axis=shift_axes(params["axis"], k, top), eps=params["eps"])

    return rule
