"""NumPy's selections whose positions are read from the values: ``unique`` and the set operations,
``sort_complex``, ``trim_zeros``, ``choose``, ``piecewise``, ``bincount`` and ``histogram``.

The positions (which elements, in which bins) are computed by NumPy from the values and are constants; what is
selected from a tensor, or summed from its weights, is on the tape. The gradient of a selection goes to the
elements selected: ``unique``'s to the first occurrence of each value, the set operations' to the first
occurrence in the input the value is taken from (the first, for ``intersect1d``). ``histogram``'s bin edges,
when NumPy computes them from the data (``bins`` a number, no ``range``), move with its extremes, and so does
a density; the counts have no derivative.

>>> import tapegrad as tg, tapegrad.numpy as np
>>> tg.grad(lambda x: np.unique(x).sum())(np.array([2.0, 1.0, 2.0]))   # the first 2 gets it
array([1., 1., 0.])
"""

from __future__ import annotations

import numpy as np

import tapegrad.ops as ops

from .._tensor import Tensor
from ._calculus import constant_only, data, requires_grad, shape
from ._signatures import check_out, unsupported


def _first_occurrences(ar, index, axis):
    return ops.take(ops.ravel(ar), index) if axis is None else ops.take(ar, index, axis=axis)


def unique(
    ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True, sorted=True
):
    """NumPy's ``np.unique`` on tensors: the values are selected from the input (the gradient goes to the first
    occurrence of each); the indices and counts are NumPy's."""
    _, index, inverse, counts = np.unique(
        data(ar), return_index=True, return_inverse=True, return_counts=True, axis=axis, equal_nan=equal_nan
    )
    out = (_first_occurrences(ar, index, axis),)
    out += (index,) if return_index else ()
    out += (inverse,) if return_inverse else ()
    out += (counts,) if return_counts else ()
    return out if len(out) > 1 else out[0]


def unique_values(x):
    """NumPy's ``np.unique_values`` on tensors (see :func:`unique`)."""
    return unique(x)


def unique_counts(x):
    """NumPy's ``np.unique_counts`` on tensors (see :func:`unique`)."""
    values, counts = unique(x, return_counts=True)
    return np.unique_counts(np.zeros(1))._replace(values=values, counts=counts)


def unique_inverse(x):
    """NumPy's ``np.unique_inverse`` on tensors (see :func:`unique`)."""
    values, inverse = unique(x, return_inverse=True)
    return np.unique_inverse(np.zeros(1))._replace(values=values, inverse_indices=inverse.reshape(shape(x)))


def unique_all(x):
    """NumPy's ``np.unique_all`` on tensors (see :func:`unique`)."""
    values, index, inverse, counts = unique(x, return_index=True, return_inverse=True, return_counts=True)
    return np.unique_all(np.zeros(1))._replace(
        values=values, indices=index, inverse_indices=inverse.reshape(shape(x)), counts=counts
    )


def sort_complex(a):
    """NumPy's ``np.sort_complex`` on tensors: sorted by real part, then imaginary part, as complex."""
    order = np.argsort(data(a), axis=-1)
    out = ops.take_along_axis(a, order, axis=-1)
    return out if np.iscomplexobj(data(a)) else ops.astype(out, dtype=np.complex128)


def trim_zeros(filt, trim="fb", axis=None):
    """NumPy's ``np.trim_zeros`` on tensors (1-D): a slice, read from the values."""
    if len(shape(filt)) != 1:
        raise unsupported("trim_zeros", "an input of more than one dimension", "only 1-D is handled", "Pass a 1-D one")
    nonzero = np.flatnonzero(data(filt))
    trim = trim.lower()
    if nonzero.size == 0:
        return ops.getitem(filt, index=slice(0, 0))
    start = nonzero[0] if "f" in trim else 0
    stop = nonzero[-1] + 1 if "b" in trim else shape(filt)[0]
    return ops.getitem(filt, index=slice(int(start), int(stop)))


def bincount(x, /, weights=None, minlength=0):
    """NumPy's ``np.bincount`` on tensors: tensor ``weights`` are summed per bin on the tape (``index_add``)."""
    constant_only("bincount", "x", x)
    xd = data(x)
    if not isinstance(weights, Tensor):
        return np.bincount(xd, weights=weights, minlength=minlength)
    n = max(int(xd.max()) + 1 if xd.size else 0, minlength)
    zeros = np.zeros(n, dtype=np.result_type(weights.dtype, np.float64))
    return ops.index_add(zeros, xd, ops.astype(weights, dtype=zeros.dtype))


def choose(a, choices, out=None, mode="raise"):
    """NumPy's ``np.choose`` on tensors: ``choices[a]`` elementwise (a select; the gradient goes to the choice
    taken)."""
    check_out("choose", out)
    constant_only("choose", "a", a)
    index, n = data(a), len(choices)
    if mode == "wrap":
        index = index % n
    elif mode == "clip":
        index = np.clip(index, 0, n - 1)
    elif np.any((index < 0) | (index >= n)):
        raise ValueError(f"np.choose: invalid entry in choice array (indices must be in [0, {n}))")
    return ops.select([index == k for k in range(n)], list(choices))


def piecewise(x, condlist, funclist, *args, **kw):
    """NumPy's ``np.piecewise`` on tensors: each function is applied to the elements its condition selects."""
    conds = [data(c) for c in (condlist if isinstance(condlist, (list, tuple)) else [condlist])]
    if len(conds) == 1 and np.ndim(conds[0]) == 0 and len(shape(x)) > 0:
        conds = [np.full(shape(x), conds[0])]
    if len(funclist) == len(conds) + 1:
        conds.append(~np.any(conds, axis=0))
    elif len(funclist) != len(conds):
        raise ValueError(f"np.piecewise: {len(funclist)} functions for {len(conds)} conditions")
    out = ops.zeros_like(x)
    for cond, f in zip(conds, funclist):
        cond = np.broadcast_to(np.asarray(cond, dtype=bool), shape(x))
        if not cond.any():
            continue
        value = f(ops.getitem(x, index=cond), *args, **kw) if callable(f) else f
        out = ops.index_update(out, cond, value)
    return out


def _unique_first(ar):
    """The unique values of ``ar`` flattened, selected from it (first occurrences), and their positions."""
    _, index = np.unique(data(ar), return_index=True)
    return ops.take(ops.ravel(ar), index), index


def union1d(ar1, ar2):
    """NumPy's ``np.union1d`` on tensors: the sorted unique values of both."""
    return unique(ops.concatenate([ops.ravel(ar1), ops.ravel(ar2)]))


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    """NumPy's ``np.intersect1d`` on tensors: the sorted values in both, taken from ``ar1``."""
    d1, d2 = np.ravel(data(ar1)), np.ravel(data(ar2))
    _, first1 = np.unique(d1, return_index=True)
    _, first2 = np.unique(d2, return_index=True)
    keep = np.isin(d1[first1], d2)
    values = ops.take(ops.ravel(ar1), first1[keep])
    if not return_indices:
        return values
    where2 = first2[np.searchsorted(d2[first2], d1[first1][keep])]
    return values, first1[keep], where2


def setdiff1d(ar1, ar2, assume_unique=False):
    """NumPy's ``np.setdiff1d`` on tensors: the sorted unique values of ``ar1`` not in ``ar2``."""
    values, first = _unique_first(ar1)
    keep = ~np.isin(np.ravel(data(ar1))[first], np.ravel(data(ar2)))
    return ops.take(values, np.flatnonzero(keep))


def setxor1d(ar1, ar2, assume_unique=False):
    """NumPy's ``np.setxor1d`` on tensors: the sorted values in exactly one of the two."""
    v1, f1 = _unique_first(ar1)
    v2, f2 = _unique_first(ar2)
    d1, d2 = np.ravel(data(ar1))[f1], np.ravel(data(ar2))[f2]
    k1, k2 = ~np.isin(d1, d2), ~np.isin(d2, d1)
    both = ops.concatenate([ops.take(v1, np.flatnonzero(k1)), ops.take(v2, np.flatnonzero(k2))])
    return ops.take(both, np.argsort(np.concatenate([d1[k1], d2[k2]]), kind="stable"))


def _edges(a, bins, range, name):
    """The bin edges: NumPy's, and on the tape when they come from the extremes of a tensor being differentiated."""
    constant = np.histogram_bin_edges(data(a), bins=bins, range=range)
    if not requires_grad(a) or range is not None or np.ndim(bins) == 1:
        return constant
    if isinstance(bins, str):
        raise unsupported(
            name,
            f"bins={bins!r}",
            "the rule choosing the number of bins from the data has no derivative",
            "Pass the number of bins, or the edges",
        )
    flat = ops.ravel(a)
    low, high = ops.min(flat), ops.max(flat)
    if data(low) == data(high):  # NumPy widens an empty range by 0.5 on each side
        low, high = ops.subtract(low, 0.5), ops.add(high, 0.5)
    return ops.linspace(low, high, len(constant))


def histogram(a, bins=10, range=None, density=None, weights=None):
    """NumPy's ``np.histogram`` on tensors: tensor ``weights`` are summed per bin on the tape, edges computed
    from the data move with its extremes, and so does a density; the counts themselves have no derivative."""
    edges = _edges(a, bins, range, "histogram")
    values = np.ravel(data(a))
    constant_edges = data(edges)
    if isinstance(weights, Tensor):
        n = len(constant_edges) - 1
        index = np.searchsorted(constant_edges, values, side="right") - 1
        index[values == constant_edges[-1]] = n - 1  # the last bin is closed
        inside = (index >= 0) & (index < n)
        w = ops.ravel(weights)
        counts = ops.index_add(np.zeros(n, dtype=np.result_type(weights.dtype, float)), index[inside],
                               ops.take(w, np.flatnonzero(inside)))  # fmt: skip
    else:
        counts = np.histogram(values, bins=constant_edges, weights=data(weights) if weights is not None else None)[0]
    if density:
        counts = ops.divide(ops.divide(counts, ops.sum(counts)), ops.subtract(edges[1:], edges[:-1]))
    return counts, edges


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """NumPy's ``np.histogram_bin_edges`` on tensors: computed from the data, they move with its extremes."""
    return _edges(a, bins, range, "histogram_bin_edges")


def _histogram_nd(name, numpy_function):
    def f(*args, **kwargs):
        if any(requires_grad(a) for a in list(args) + list(kwargs.values())):
            raise unsupported(
                name,
                "tensors being differentiated",
                "tapegrad has no rule for its edges and weights",
                "Use np.histogram per axis, or pass np.asarray(t) to count constants",
            )
        return numpy_function(*[data(a) if isinstance(a, Tensor) else a for a in args],
                              **{k: data(v) if isinstance(v, Tensor) else v for k, v in kwargs.items()})  # fmt: skip

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"NumPy's ``np.{name}`` on constant tensors (no rule for tensors being differentiated)."
    return f


histogram2d = _histogram_nd("histogram2d", np.histogram2d)
histogramdd = _histogram_nd("histogramdd", np.histogramdd)
