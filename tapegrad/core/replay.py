"""The replay: a tape's entries walked in reverse, each op's vector-Jacobian rules applied, gradients handed out.

The algorithm (:func:`replay`; ``Tape.backward`` and ``Tape.gradient`` call it):

1. Seed a dict of cotangents, keyed by node (or by leaf tensor), with each root's gradient.
2. For each live entry, last first (the list is in execution order, so reversed it is already a topological
   order): pop its output's cotangent (none: nothing asked for depends on it, skip); on a non-persistent tape
   drop the entry's saved values now, since nothing reads them after its rule; check that nothing it saved was
   changed in place since it was recorded; run the op's rule for each input that needs a gradient, sum the
   result back to the input's shape where it was broadcast, and add it into that input's cotangent.
3. What is left in the dict are the leaves' gradients: they go to ``.grad`` (backward) or back to the caller
   (gradient()).

Optional steps, taken only when asked for: gradient hooks (:mod:`.hooks`), a recorded replay (``create_graph``: the rules run on tensors with tapegrad's ops, so the replay
is itself recorded), and an observer (tracing, anomaly checks) that may wrap the op's rules, in one named call;
and the sources of ``gradient()``, whose cotangents are picked up as their entries are reached.

The namespace a recorded replay's rules compute with is a slot that :mod:`tapegrad.ops` fills
(:func:`set_differentiable_rules`), as the op tables sit above this layer.

While a function is traced (:mod:`tapegrad.compile`), a recorded replay tells the tracer which entry it
differentiates (``tracer.replaying(node, rec)``), so the program can say which forward line each rule's ops
come from; a plain replay is refused there, since its rules would run on arrays the tracer never sees.
"""

from __future__ import annotations

import sys
import threading
import weakref
from contextvars import ContextVar

import numpy as np

from .._shapes import Shape, unbroadcast
from .._state import ACTIVE, CLOCK, TRACER, TRACING, modified_since
from .._tensor import Tensor
from ..backend import NUMPY, backend_of, common_backend, is_array, is_complex, to_numpy
from ..backend.numpy_rules import numpy_rules
from ..errors import InPlaceModificationError, TapeError
from .hooks import LIVE, run_hooks
from .node import ANS, OP, SAVED, SRCS, Node

__all__ = ["replay", "seed", "set_differentiable_rules", "check_saved", "key_of"]

_getrefcount = sys.getrefcount
_ndarray = np.ndarray
_grad_lock = threading.Lock()
_rules = {"differentiable": None}
# Tapes replayed inside their own record() block while the block is still open, in this context.
_ended_inside: ContextVar[tuple] = ContextVar(
    "tapegrad_ended_inside", default=()
)  # the namespace of tapegrad ops rules use on a recorded replay


def set_differentiable_rules(namespace) -> None:
    """Give the replay the namespace rules compute with when the replay is recorded (``create_graph``): NumPy's
    names implemented by differentiable tapegrad ops. :mod:`tapegrad.ops` calls this once, on import."""
    _rules["differentiable"] = namespace


def key_of(t: Tensor):
    """The key ``t``'s cotangent lives under: its node if a tape recorded it, else the (leaf) tensor itself."""
    return t._node if t._node is not None else t


def replay(tape, roots, *, create_graph, leaves, wanted=None, observer=None, leftovers=None):
    """Replay ``tape`` from ``roots`` (pairs of key and seed cotangent): see the module docstring.

    ``leaves``: write the leaves' gradients into ``.grad``. ``wanted``: keys whose gradients to return (as a
    dict), without touching ``.grad``. Returns that dict, or None. Cotangents left for values of the earlier
    tapes this one used (``tape._upstream``) are appended to ``leftovers``, for the caller to continue there.
    """
    if TRACING.n and not create_graph:
        tracer = TRACER.get()
        if tracer is not None:  # its rules would run on arrays the program never sees: refused, naming the line
            tracer.backward("a plain backward pass (loss.backward(), or gradient() outside every tape)")
    entries = tape._entries
    retain = tape.persistent or create_graph  # a recorded replay reads the forward values again later
    grads: dict = {}
    for key, g in roots:
        old = grads.get(key)
        grads[key] = g if old is None else old + g
    found = {} if wanted is not None else None
    # Sources that are leaves are picked up at the end; only recorded values need a look at each entry.
    wanted_nodes = {k for k in wanted if k.__class__ is Node} or None if wanted is not None else None
    xp = _rules_for(roots, create_graph)
    optional = create_graph or LIVE.n or observer is not None
    pop, get = grads.pop, grads.get
    outer_active = _record_on(tape) if create_graph else None
    if create_graph:
        tape._differentiated = True  # its gradients are recorded on it: later tapes may differentiate them
    upstream = tape._upstream
    tape._replays += 1
    idx, op = None, None
    try:
        for idx in range(len(entries) - 1, -1, -1):
            e = entries[idx]
            rec = e.rec
            if rec is None:
                continue
            if not retain:
                e.rec = None  # its saved values go as soon as its rule has run
            node = e()
            if node is None:
                continue
            g = pop(node, None)
            if g is None:
                continue
            op, srcs, vals, ans, shapes, params, epoch, mask = rec
            if epoch < CLOCK.tick:  # something was changed in place since: was it what this entry saved?
                check_saved(op, vals, ans, epoch)
            if optional:
                g, op, ans, vals = _optional_steps(idx, rec, node, g, grads, create_graph, observer)
            if wanted_nodes is not None and node in wanted_nodes:  # a gradient() source: its cotangent is complete
                found[node] = _real_of_real(xp, g, wanted[node])
            vjps = op.vjps
            if op.joint:  # one rule returns every input's gradient (custom ops, recomputation)
                joint = vjps[0](xp, g, ans, *vals, **params) if params else vjps[0](xp, g, ans, *vals)
                vjps = [lambda *_, gi=gi, **__: gi for gi in joint]  # the op's params are passed too
            i = 0
            for src in srcs:
                if (mask >> i) & 1:
                    gi = vjps[i](xp, g, ans, *vals, **params) if params else vjps[i](xp, g, ans, *vals)
                    if gi is not None:
                        if shapes is not None and shapes[i] is not None and gi.shape != shapes[i]:
                            gi = unbroadcast(xp, gi, shapes[i])
                        old = get(src)
                        if old is None:
                            grads[src] = gi
                        elif create_graph or old.size < 1024:  # small: a new array costs less than the checks
                            grads[src] = old + gi
                        else:
                            _accumulate(grads, src, old, gi)
                        old = None  # our reference would make the next in-place add think the buffer shared
                i += 1
            rec = vals = ans = g = gi = None  # nothing of the entry outlives its step
        idx = None
        # What is left are leaves (and nodes of other tapes, which this replay does not reach through). In a
        # recorded replay this runs while the tape still records, so adding onto an existing .grad is recorded.
        while grads:
            key, g = grads.popitem()
            if found is not None and key in wanted:
                # A leaf, or a value an outer tape recorded (a node this tape never produced).
                leaf_hooks = getattr(key, "_hooks", None) if key.__class__ is not Node else None
                if leaf_hooks is not None and LIVE.n:  # a leaf's hooks see gradient() too
                    g = run_hooks(leaf_hooks, g)
                dtype = (wanted[key] or g.dtype) if key.__class__ is Node else key._data.dtype
                # Counted on a line of its own: as an argument of _fresh, g would be on the stack once
                # more. getrefcount's argument and our local leave 1 when nothing else holds g.
                refs = _getrefcount(g) - 1
                if create_graph:
                    found[key] = _keeps_its_tape(_real_for(xp, _real_of_real(xp, g, wanted[key]), key), tape)
                else:
                    found[key] = _fresh(g, dtype, refs)
            elif key.__class__ is Node:
                if upstream and leftovers is not None and id(key.tape()) in upstream:
                    leftovers.append((key, g))
                continue
            elif leaves and key.requires_grad:
                if not create_graph:
                    refs = _getrefcount(g) - 1  # on its own line, as above
                    g = _fresh(g, key._data.dtype, refs)
                _write_grad(key, g, xp if create_graph else None)
                if create_graph:
                    _keeps_its_tape(key.grad, tape)
            key = g = None  # a buffer handed to .grad must not stay referenced from this frame
    except BaseException as err:
        if not retain:  # the entries already replayed are freed: every later use must say so
            tape._failed(idx, op, err)
        raise
    finally:
        tape._replays -= 1
        if outer_active is not None:
            ACTIVE.set(outer_active)
    if not retain:
        tape._consumed(roots)
    return found


_kept = weakref.WeakKeyDictionary()  # node of a create_graph gradient -> the tape its value was recorded on


def _keeps_its_tape(g, tape):
    """A gradient recorded by a create_graph replay keeps ``tape`` alive as long as the gradient lives: it is
    a value meant to be differentiated again, in this block or a later one (other tensors refer to their tape
    only weakly)."""
    node = getattr(g, "_node", None)
    if node is not None:
        _kept[node] = tape
    return g


def _rules_for(roots, create_graph):
    """The namespace the rules compute with: tapegrad's ops when recorded, else the seeds' library."""
    if create_graph:
        xp = _rules["differentiable"]
        if xp is None:
            raise TapeError("create_graph=True needs tapegrad.ops, which registers the differentiable rules")
        return xp
    if roots[0][1].__class__ is _ndarray:
        return numpy_rules
    fx = common_backend("backward", [g for _, g in roots]).fx  # every entry a root reaches ran in its library
    return numpy_rules if fx is np else fx


def _record_on(tape):
    """Make the rules of a recorded replay ops of ``tape`` (its forward values are needed) and of every active
    tape; returns the active tapes to restore."""
    saved = ACTIVE.get()
    if tape not in saved:
        tape._ref.outer += tuple(t._ref for t in saved)
        ACTIVE.set(saved + (tape,))
    return saved


def _optional_steps(idx, rec, node, g, grads, create_graph, observer):
    """Hooks on this value, tensors for a recorded replay, the observer: each only when asked for."""
    op, ans, vals = rec[OP], rec[ANS], rec[SAVED]
    node_hooks = getattr(node, "hooks", None)
    if node_hooks is not None and LIVE.n:
        g = run_hooks(node_hooks, g)
    if create_graph:
        g, ans, vals = _as_tensors(g, ans, vals, rec[SRCS], node)
        op = _recorded_rules(op)
        if TRACING.n:
            tracer = TRACER.get()
            if tracer is not None:
                tracer.replaying(node, rec)
    if observer is not None:  # tracing, anomaly checks: it wraps the op's rules
        op = observer(idx, rec, node, g, grads)
    return g, op, ans, vals


class _RecordedRules:
    """An op's rules, checked on a recorded replay: each must return a tensor (or None). A rule that returns a
    plain array computed with ``np`` instead of ``xp`` was not recorded, so every derivative through it would be
    silently wrong: it raises instead, naming the op."""

    __slots__ = ("name", "vjps", "joint")

    def __init__(self, op):
        self.name, self.joint = op.name, op.joint
        self.vjps = _CheckedRules(op.vjps, op.name, op.joint)


class _CheckedRules:
    """``rules[i]``, checked; indexed as the op's own rules are (a variadic op has one rule per argument)."""

    __slots__ = ("rules", "name", "joint")

    def __init__(self, rules, name, joint):
        self.rules, self.name, self.joint = rules, name, joint

    def __getitem__(self, i):
        rule = self.rules[i]
        return None if rule is None else _checked(rule, self.name, self.joint)


def _checked(rule, name, joint=False):
    def run(*args, **params):
        out = rule(*args, **params)
        for gi in out if joint else (out,):
            if gi is not None and not isinstance(gi, Tensor):
                raise TapeError(
                    f"{name}: its rule returned a {type(gi).__name__}, not a tensor, on a recorded replay "
                    "(create_graph=True, hessian, grad of grad): it computes with NumPy on arrays (np.cos(x), "
                    "x.data) instead of xp (xp.cos(x)), so it is not recorded and every higher derivative through "
                    "it would be wrong. Write the rule with xp's functions"
                )
        return out

    return run


_recorded_cache: dict = {}


def _recorded_rules(op):
    checked = _recorded_cache.get(op)
    if checked is None:
        checked = _recorded_cache[op] = _RecordedRules(op)
    return checked


def check_saved(op, vals, ans, epoch) -> None:
    """Raise if an array this entry saved (or any view of the same memory) was changed in place since ``epoch``."""
    for i, v in enumerate(vals):
        if v is not None and v.__class__ is not Shape and is_array(v) and modified_since(v, epoch):
            raise InPlaceModificationError(
                f"{op.name}: input {i} (shape {tuple(v.shape)}), which the tape saved for backward, was changed "
                "in place after it was recorded (through it or a view of the same memory). Change it only after "
                "backward(), or write x = x - y (a new array) instead of an in-place update"
            )
    if ans is not None and modified_since(ans, epoch):
        raise InPlaceModificationError(
            f"{op.name}: its output (shape {tuple(ans.shape)}), which the tape saved for backward, was changed in "
            "place after it was recorded; write out = out + y (a new array) instead of an in-place update"
        )


def seed(target, gradient, what, differentiable=False):
    """The cotangent a replay starts from at ``target``: ones for a scalar, else ``gradient`` checked and cast."""
    if not isinstance(target, Tensor):
        raise TypeError(f"{what}(): the target must be a Tensor, got {type(target).__name__}")
    if TRACING.n and not differentiable:  # inside tg.compile: what to write instead, at the user's line
        tracer = TRACER.get()
        if tracer is not None:
            tracer.backward(f"{what}()")
    if target._node is None and not target.requires_grad:
        if ended_inside():
            raise TapeError(
                f"{what}() on a tensor that no tape recorded: it was computed inside a record() block whose tape "
                "a backward() inside the same block had already replayed, which ends its recording. Call "
                "backward() after the block, or start a new `with tg.record():` block for the next computation"
            )
        raise TapeError(
            f"{what}() on a tensor that no tape recorded: compute it inside `with tg.record():` "
            "from tensors created with requires_grad=True (or watched with t.watch(x))"
        )
    data = target._data
    if gradient is None:
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
        return np.ones_like(data) if data.__class__ is _ndarray else backend_of(data).xp.ones_like(data)
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


def ended_inside() -> bool:
    """Whether a record() block still open in this context had its tape replayed inside it."""
    return bool(_ended_inside.get())


def _seed_any(data, g):
    # A seed given as a list, a number or another library's array is made an array of the output's library.
    b = backend_of(data) or NUMPY
    gb = backend_of(g)
    if gb is b:
        return g if g.dtype == data.dtype else b.astype(g, data.dtype)
    if gb is not None:
        g = to_numpy(g)
    return b.asarray(g, dtype=data.dtype)


def _accumulate(grads, key, old, g):
    """Add a further contribution ``g`` to the large cotangent ``old`` stored under ``key``."""
    # Add in place into a buffer nothing else holds (the dict, the caller's local and ours, getrefcount's
    # argument), as PyTorch's AccumulateGrad steals buffers; otherwise add out of place.
    if old.__class__ is np.ndarray and g.__class__ is np.ndarray and old.base is None and _getrefcount(old) <= 4:
        if old.dtype is g.dtype or old.dtype == g.dtype:
            try:
                old += g
                return
            except ValueError:  # read-only, or g broadcasts to a larger shape
                pass
    grads[key] = old + g


def _fresh(g, dtype, refs):
    """A gradient the user may keep and change: the leaf's dtype, a buffer shared with nothing else.

    ``refs`` is how many references the caller's frame holds besides its own local (1 means only that local).
    A complex gradient of a real leaf is its real part (the adjoint of embedding the reals in the complex numbers).
    """
    if g.__class__ is not _ndarray:
        return _fresh_any(g, dtype, refs)
    if g.dtype != dtype:
        return (g.real if g.dtype.kind == "c" and dtype.kind != "c" else g).astype(dtype)
    if g.base is not None or not g.flags.writeable or refs > 1:
        return np.array(g)
    return g


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


def _write_grad(leaf, g, xp=None):
    """Add ``g`` into ``leaf.grad``, atomically per leaf: threads replaying into one shared leaf lose nothing.

    ``xp`` is given on a recorded replay, where a complex gradient of a real leaf takes its real part as an op.
    """
    leaf_hooks = getattr(leaf, "_hooks", None)
    if leaf_hooks is not None and LIVE.n:
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


def _real_of_real(xp, g, dtype):
    """The gradient of a source of ``dtype`` (None: not known): its real part where the source is real and the
    cotangent complex (a real value that met complex ones downstream), as :func:`_real_for` does for leaves."""
    if dtype is None or is_complex(dtype) or not is_complex(g._data if isinstance(g, Tensor) else g):
        return g
    return xp.real(g)


def _real_for(xp, g, key):
    """On a recorded replay: a complex gradient of a real value is its real part, recorded as an op (the adjoint
    of the embedding of the reals in the complex numbers); and a leaf's gradient has the leaf's dtype, as a
    plain replay gives it (a float32 leaf of a float64 loss gets a float32 gradient), cast as an op."""
    data = g._data if isinstance(g, Tensor) else g
    if key.__class__ is Node:
        return g
    if is_complex(data) and not is_complex(key._data):
        g = xp.real(g)
        data = g._data if isinstance(g, Tensor) else g
    dtype = key._data.dtype
    if data.dtype != dtype and not is_complex(data):
        g = xp.astype(g, dtype)
    return g


def _as_tensors(g, ans, vals, srcs, node):
    """For a recorded replay: the cotangent and the saved values as tensors, keyed to the nodes they are values
    of, so that the rules recorded now connect to the forward entries."""
    wrap = Tensor._wrap_recorded
    if not isinstance(g, Tensor):
        g = Tensor._wrap(g)
    if ans is not None:
        ans = wrap(ans, node)
    vals = tuple(
        wrap(v, s)
        if is_array(v) and s.__class__ is Node
        else (s if is_array(v) and isinstance(s, Tensor) and s._data is v else v)
        for v, s in zip(vals, srcs)
    )
    return g, ans, vals
