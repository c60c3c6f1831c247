"""Gradients at the two ends of a replay: the seeds it starts from, and the hand-over of what reaches the leaves.

- :func:`seed`: the cotangent a replay starts from at a target (ones for a scalar, else the given gradient,
  checked and cast to the target's library and dtype).
- :func:`hand_over`: what is left of the cotangents once every entry was replayed. A leaf's gradient goes to
  ``.grad`` (:func:`write_grad`, atomically per leaf) or back to ``gradient()``'s caller, in the leaf's dtype and in
  a buffer shared with nothing else (:func:`fresh`), so the user may keep and change it. A cotangent of a value
  another tape recorded goes back to the caller, which continues there.
- On a recorded replay (``create_graph``) the hand-over is recorded too: a complex gradient of a real leaf is its
  real part as an op, and a gradient produced keeps the replayed tape alive (:func:`keeps_its_tape`).
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from .._batched import Batched
from .._state import TRACER, TRACING, ended_inside
from .._tensor import Tensor
from ..backend import NUMPY, backend_of, is_complex, to_numpy
from ..errors import TapeError
from .hooks import LIVE, run_hooks
from .node import Node

__all__ = ["seed", "hand_over", "fresh", "write_grad", "keeps_its_tape"]

_getrefcount = sys.getrefcount
_ndarray = np.ndarray
_grad_lock = threading.Lock()


def seed(target, gradient, what, differentiable=False):
    """The cotangent a replay starts from at ``target``: ones for a scalar, else ``gradient`` checked and cast."""
    if not isinstance(target, Tensor):
        raise TypeError(f"{what}(): the target must be a Tensor, got {type(target).__name__}")
    if TRACING.n and not differentiable:  # inside tg.compile: what to write instead, at the user's line
        tracer = TRACER.get()
        if tracer is not None:
            tracer.backward(f"{what}()")
    if target._node is None and not target.requires_grad:
        raise TapeError(_not_recorded(what))
    data = target._data
    if target.__class__ is Batched:  # vmap's: the seed is one example's, the same for every example
        data = np.broadcast_to(np.zeros((), data.dtype), target.shape)
    if gradient is None:
        return _ones_for(data, what)
    if differentiable and isinstance(gradient, Tensor):
        g = gradient  # a recorded replay keeps a tensor cotangent, so the result is differentiable in it too (jvp)
    else:
        g = gradient._data if isinstance(gradient, Tensor) else gradient
        if g.__class__ is not _ndarray or data.__class__ is not _ndarray:
            g = _seed_any(data, g)  # a list, a number or another library's array
        elif g.dtype != data.dtype:
            g = g.astype(data.dtype)
    if g.shape != data.shape:
        raise ValueError(f"{what}(): the gradient argument has shape {g.shape} but the output has shape {data.shape}")
    return g


def _not_recorded(what) -> str:
    if ended_inside():
        return (
            f"{what}() on a tensor that no tape recorded: it was computed inside a record() block whose tape "
            "a backward() inside the same block had already replayed, which ends its recording. Call "
            "backward() after the block, or start a new `with tg.record():` block for the next computation"
        )
    return (
        f"{what}() on a tensor that no tape recorded: compute it inside `with tg.record():` "
        "from tensors created with requires_grad=True (or watched with t.watch(x))"
    )


def _ones_for(data, what):
    # The implicit seed of a scalar output.
    if data.size != 1:
        raise ValueError(
            f"{what}() needs a gradient argument for a non-scalar output of shape {data.shape}: "
            f"call .sum() (or .mean()) first, or pass gradient= an array of shape {data.shape}"
        )
    if is_complex(data):
        raise TypeError(
            f"{what}() of a complex output needs gradient=: the gradient of a complex value is not defined; "
            "differentiate a real loss (abs(z) ** 2, z.real), or pass the cotangent explicitly"
        )
    if data.__class__ is not _ndarray:
        return backend_of(data).xp.ones_like(data)
    ones = np.empty(data.shape, data.dtype)  # np.ones_like's Python costs 0.9 µs, every backward(); this 0.3
    ones.fill(1)
    return ones


def _seed_any(data, g):
    # A seed given as a list, a number or another library's array is made an array of the output's library.
    b = backend_of(data) or NUMPY
    gb = backend_of(g)
    if gb is b:
        return g if g.dtype == data.dtype else b.astype(g, data.dtype)
    if gb is not None:
        g = to_numpy(g)
    return b.asarray(g, dtype=data.dtype)


def hand_over(grads, *, xp, recorded, leaves, wanted, found, upstream, leftovers, home) -> None:
    """Empty ``grads`` once every entry was replayed: what is left are leaves, and values of other tapes.

    ``wanted`` (``gradient()``): its keys' gradients go into ``found``; ``leaves`` (``backward()``): a leaf that
    requires a gradient gets it added into ``.grad``. A value recorded on one of the tapes in ``upstream`` (earlier
    tapes whose create_graph gradients this one used) goes to ``leftovers``, for the caller to continue there.
    ``recorded``: this is a create_graph replay (``xp`` is tapegrad's ops), ``home`` the tape replayed. In a
    recorded replay this runs while the tape still records, so adding onto an existing ``.grad`` is recorded.
    """
    while grads:
        key, g = grads.popitem()
        if found is not None and key in wanted:  # a leaf, or a value an outer tape recorded
            leaf_hooks = getattr(key, "_hooks", None) if key.__class__ is not Node else None
            if leaf_hooks is not None and LIVE.n:  # a leaf's hooks see gradient() too
                g = run_hooks(leaf_hooks, g)
            # Counted on a line of its own (as an argument of fresh, g would be on the stack once more):
            # getrefcount's argument and our local leave 1 when nothing else holds g, which is then not copied.
            refs = _getrefcount(g) - 1
            if recorded:
                found[key] = keeps_its_tape(_real_for(xp, g, key), home)
            else:
                like = None if key.__class__ is Node else key._data
                found[key] = fresh(g, g.dtype if like is None else like.dtype, refs, like)
        elif key.__class__ is Node:  # a value of another tape, which this replay does not reach through
            if upstream and id(key.tape()) in upstream:
                leftovers.append((key, g))
        elif leaves and key.requires_grad:
            refs = _getrefcount(g) - 1  # on its own line, as above
            if recorded:
                write_grad(key, _unshared(xp, g, refs), xp)
                keeps_its_tape(key.grad, home)
            else:
                write_grad(key, fresh(g, key._data.dtype, refs, key._data))
        key = g = None  # a buffer handed to .grad must not stay referenced from this frame


def _unshared(xp, g, refs):
    """On a recorded replay: ``g``, or its copy as an op (``positive``) where more than the caller's local holds it
    (``refs``, as :func:`fresh` counts them): two leaves handed one cotangent (``a + b`` hands both ``g``) get a
    ``.grad`` each, the user's to change, as a plain replay's :func:`fresh` copies (and PyTorch)."""
    return xp.positive(g) if refs > 1 else g


def keeps_its_tape(g, tape):
    """A gradient recorded by a create_graph replay keeps ``tape`` alive as long as the gradient lives: it is
    a value meant to be differentiated again, in this block or a later one (other tensors refer to their tape
    only weakly). The node holds the tape itself, not a global table: the tape's records may hold the leaf
    whose ``.grad`` this is, and a cycle through a global table would never be collected."""
    node = getattr(g, "_node", None)
    if node is not None:
        node.keep = tape
    return g


def fresh(g, dtype, refs, like=None):
    """A gradient the user may keep and change: the leaf's dtype, a buffer shared with nothing else, and (given
    ``like``, the leaf's array) the leaf's memory layout.

    ``refs`` is how many references the caller's frame holds besides its own local (1 means only that local).
    A complex gradient of a real leaf is its real part (the adjoint of embedding the reals in the complex numbers).
    The layout is PyTorch's contract for ``.grad``: the gradient of ``W`` used as ``W.T`` (``W.T * s``: its rule
    computes in the layout of ``W.T``) comes back transposed, and a parameter and its gradient in opposite orders
    make every elementwise op of an update (``p.data -= lr * p.grad``) walk one of them across its rows, several
    times slower.

    >>> import numpy as np
    >>> W = np.zeros((3, 2))
    >>> fresh(np.ones((2, 3)).T, W.dtype, 1, like=W).flags.c_contiguous
    True
    """
    if g.__class__ is not _ndarray:
        return _fresh_any(g, dtype, refs)
    order = "K" if like is None else _order_of(g, like)
    if g.dtype != dtype:
        return (g.real if g.dtype.kind == "c" and dtype.kind != "c" else g).astype(dtype, order=order)
    if g.base is not None or not g.flags.writeable or refs > 1 or order != "K":
        return np.array(g, order=order)
    return g


def _order_of(g, like) -> str:
    """How to copy ``g`` to give it ``like``'s layout: ``"K"`` when it has it already (or ``like`` has neither
    order, a view), else ``"C"`` or ``"F"``."""
    if like.__class__ is not _ndarray or g.strides == like.strides:
        return "K"
    flags = like.flags
    if flags.c_contiguous:
        return "K" if g.flags.c_contiguous else "C"
    if flags.f_contiguous:
        return "K" if g.flags.f_contiguous else "F"
    return "K"


def _fresh_any(g, dtype, refs):
    # Another library's gradient stays in that library (on the GPU for CuPy); copied unless provably private.
    b = backend_of(g)
    if b is None:  # a NumPy scalar
        return np.array(g, dtype=dtype)
    if g.dtype != dtype:
        if is_complex(g) and not _complex_dtype(b, dtype):
            g = b.xp.real(g)
        return b.astype(g, dtype)
    if refs > 1 or getattr(g, "base", True) is not None:  # array API arrays do not say whether they are views
        return b.copy(g)
    return g


def _complex_dtype(b, dtype) -> bool:
    kind = getattr(dtype, "kind", None)
    return kind == "c" if isinstance(kind, str) else bool(b.xp.isdtype(dtype, "complex floating"))


def write_grad(leaf, g, xp=None):
    """Add ``g`` into ``leaf.grad``, atomically per leaf: threads replaying into one shared leaf lose nothing.

    ``xp`` is given on a recorded replay, where a complex gradient of a real leaf takes its real part as an op.
    """
    if LIVE.n:  # some hook is registered somewhere: maybe on this leaf
        leaf_hooks = getattr(leaf, "_hooks", None)
        if leaf_hooks is not None:
            g = run_hooks(leaf_hooks, g)
    if xp is not None:
        g = _real_for(xp, g, leaf)
    while True:
        old = leaf.grad
        new = g if old is None else old + g  # out of place, outside the lock: only the swap is serialised
        with _grad_lock:
            if leaf.grad is old:
                leaf.grad = new
                return


def _real_for(xp, g, key):
    """On a recorded replay: a complex gradient of a real value is its real part, recorded as an op (the adjoint
    of the embedding of the reals in the complex numbers); and a leaf's gradient has the leaf's dtype, as a
    plain replay gives it (a float32 leaf of a float64 loss gets a float32 gradient), cast as an op."""
    if key.__class__ is Node:
        return g
    data = g._data if isinstance(g, Tensor) else g
    if is_complex(data) and not is_complex(key._data):
        g = xp.real(g)
        data = g._data if isinstance(g, Tensor) else g
    dtype = key._data.dtype
    if data.dtype != dtype and not is_complex(data):
        g = xp.astype(g, dtype)
    return g
