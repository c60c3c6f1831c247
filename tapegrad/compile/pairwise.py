"""NumPy's pairwise summation, as a fused loop computes it one leaf at a time (:mod:`.fuse`).

``np.add.reduce`` of a contiguous float array sums it with ``pairwise_sum`` (NumPy's ``loops_utils.h``): under
8 elements one after another, up to ``LEAF`` (128) in 8 partial sums, longer ones split in two halves (the
first a multiple of 8 long) summed the same way and added. A fused loop that ends in a sum cannot hold the
whole array, so it walks the same tree: it computes the values of the next **leaf** (a range of at most
``LEAF`` consecutive elements) into a small buffer, sums it as NumPy does (:func:`leaf_sum`), and adds the
sums where the tree adds them (:func:`after_leaf`). The result is NumPy's to the bit, in C order: the order in
which NumPy reduces a C-contiguous array, the layout of a value a ufunc computes from C-contiguous operands.

The functions are plain Python (checked against ``np.sum`` without numba, ``tests/test_fusion.py``); a fused
kernel calls numba's compilation of them. The walk keeps a stack of the tree's pending nodes: ``sizes[k]``
elements, ``states[k]`` 0 (not started), 1 (its first half under way) or 2 (its second half under way).

>>> import numpy as np
>>> x = np.random.default_rng(0).standard_normal(1000)
>>> bool(pairwise_sum(x) == np.sum(x))
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["LEAF", "DEPTH", "leaf_sum", "descend", "after_leaf", "pairwise_sum"]

LEAF = 128  # NumPy's PW_BLOCKSIZE: the longest range summed without splitting
DEPTH = 64  # the walk's stacks: the tree of 2^63 elements is 57 deep


def leaf_sum(buf, n, zero):
    """NumPy's sum of ``buf[:n]`` (``n <= LEAF``); ``zero`` is ``-0.0`` in the sum's dtype (which it keeps)."""
    if n < 8:
        res = zero
        for i in range(n):
            res += buf[i]
        return res
    r0, r1, r2, r3, r4, r5, r6, r7 = buf[0], buf[1], buf[2], buf[3], buf[4], buf[5], buf[6], buf[7]
    i = 8
    while i < n - n % 8:
        r0 += buf[i]
        r1 += buf[i + 1]
        r2 += buf[i + 2]
        r3 += buf[i + 3]
        r4 += buf[i + 4]
        r5 += buf[i + 5]
        r6 += buf[i + 6]
        r7 += buf[i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += buf[i]
        i += 1
    return res


def descend(sizes, states, k):
    """From the node on top of the stack (``k``), down its first halves to a leaf: the new top."""
    while sizes[k] > LEAF:
        states[k] = 1
        sizes[k + 1] = sizes[k] // 2 - sizes[k] // 2 % 8  # the first half: a multiple of 8
        states[k + 1] = 0
        k += 1
    return k


def after_leaf(sizes, states, sums, value, k, nsums):
    """The leaf on top (``k``) is summed to ``value``: add what the tree adds, go to the next leaf. Returns the
    new top (-1 when the whole tree is summed, into ``sums[0]``) and how many partial sums are kept."""
    sums[nsums] = value
    nsums += 1
    k -= 1
    while k >= 0:
        if states[k] == 1:  # its first half is summed: its second half next
            states[k] = 2
            sizes[k + 1] = sizes[k] - (sizes[k] // 2 - sizes[k] // 2 % 8)
            states[k + 1] = 0
            k += 1
            while sizes[k] > LEAF:  # descend (inline: numba calls no plain function)
                states[k] = 1
                sizes[k + 1] = sizes[k] // 2 - sizes[k] // 2 % 8
                states[k + 1] = 0
                k += 1
            return k, nsums
        sums[nsums - 2] = sums[nsums - 2] + sums[nsums - 1]  # both halves summed: the node's sum
        nsums -= 1
        k -= 1
    return k, nsums


def pairwise_sum(x):
    """NumPy's sum of the 1-d float array ``x`` (not empty), by the walk a fused loop makes (a reference)."""
    sizes, states = np.empty(DEPTH, np.int64), np.empty(DEPTH, np.int64)
    sums = np.empty(DEPTH, x.dtype)
    zero = x.dtype.type(-0.0)
    sizes[0], states[0] = x.size, 0
    k, nsums, start = descend(sizes, states, 0), 0, 0
    while k >= 0:
        n = int(sizes[k])
        k, nsums = after_leaf(sizes, states, sums, leaf_sum(x[start : start + n], n, zero), k, nsums)
        start += n
    return sums[0] + x.dtype.type(0.0)  # NumPy's reduction starts from +0.0
