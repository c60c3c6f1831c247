"""The replay: a tape's entries walked in reverse, each op's vector-Jacobian rules applied, gradients handed out.

The algorithm (:func:`replay`, which ``Tape.backward`` and ``Tape.gradient`` call; the tape applies the
:class:`Outcome` it returns, as the tape's state is :mod:`.tape`'s alone):

1. Seed a dict of cotangents, keyed by node (or by leaf tensor), with each root's gradient.
2. Walk the live entries, last first (the list is in execution order, so reversed it is already a topological
   order): pop the output's cotangent (none: nothing asked for depends on it, skip); on a non-persistent tape
   drop the entry's saved values now, since nothing reads them after its rule; check that nothing it saved was
   changed in place since it was recorded; run the op's rule for each input that needs a gradient, sum the
   result back to the input's shape where it was broadcast, and add it into that input's cotangent (:func:`_pull`).
3. What is left in the dict are the leaves' gradients: they go to ``.grad`` (backward) or back to the caller
   (gradient()): :func:`tapegrad.core.grads.hand_over`.

There are two walks. The plain one (:func:`_walk_plain`) runs the rules on arrays at NumPy speed. The recorded one
(:func:`_walk_recorded`, ``create_graph``) runs them on tensors with tapegrad's ops, so the replay is itself
recorded, and checks that every rule returned a tensor. Optional steps are taken only when asked for
(:class:`_Steps`): gradient hooks (:mod:`.hooks`), an observer (tracing, anomaly checks) that may wrap the op's
rules, and the sources of ``gradient()``, whose cotangents are picked up as their entries are reached.

The namespace a recorded replay's rules compute with is a slot that :mod:`tapegrad.ops` fills
(:func:`set_differentiable_rules`), as the op tables sit above this layer.

While a function is traced (:mod:`tapegrad.compile`), a recorded replay tells the tracer which entry it
differentiates (``tracer.replaying(node, rec)`` before its rules run, ``tracer.replayed()`` after), so the
program can say which forward line each rule's ops come from; a plain replay is refused there, since its rules
would run on arrays the tracer never sees.
"""

from __future__ import annotations

import sys

import numpy as np

from .._shapes import Shape, unbroadcast
from .._state import BATCH, CLOCK, FORWARD, TRACER, TRACING, modified_since
from .._tensor import Tensor
from ..backend import common_backend, is_array, is_complex
from ..backend.numpy_rules import numpy_rules
from ..errors import BatchedValueError, InPlaceModificationError, TapeError, TapeEscapeError, numpy_rule_error
from .grads import fresh, hand_over
from .hooks import LIVE, run_hooks
from .node import ANS, EPOCH, OP, SAVED, SRCS, Node, Outputs, answers, output_node, outputs_of

__all__ = ["replay", "Outcome", "set_differentiable_rules", "check_saved", "key_of", "cotangents"]

_getrefcount = sys.getrefcount
_ndarray = np.ndarray
_NATIVE = [None]  # the slot for the compiled walk (tapegrad.core.native), filled by tapegrad.speedups
_rules = {"differentiable": None}  # the namespace of tapegrad ops rules use on a recorded replay


def set_differentiable_rules(namespace) -> None:
    """Give the replay the namespace rules compute with when the replay is recorded (``create_graph``): NumPy's
    names implemented by differentiable tapegrad ops. :mod:`tapegrad.ops` calls this once, on import."""
    _rules["differentiable"] = namespace


def key_of(t: Tensor):
    """The key ``t``'s cotangent lives under: its node if a tape recorded it, else the (leaf) tensor itself."""
    return t._node if t._node is not None else t


class Outcome:
    """What one replay hands back to its tape, which applies it.

    ``found``: the gradients ``wanted`` asked for, by key (None for a backward); ``leftovers``: ``(key, cotangent)``
    pairs for values of the earlier tapes in ``upstream``, to continue there; ``failure``: None, or ``(position,
    op, error)`` where the replay raised (position None: before any entry; ``"leaves"``: handing gradients over);
    ``kept``: the nodes the replay passed, to drop after the tape's entries (see :func:`_walk_plain`).
    """

    __slots__ = ("found", "leftovers", "failure", "kept")

    def __init__(self, found, leftovers, failure, kept):
        self.found, self.leftovers, self.failure, self.kept = found, leftovers, failure, kept


def replay(entries, roots, *, create_graph, retain, leaves, wanted=None, observer=None, upstream=(), home=None):
    """Replay ``entries`` from ``roots`` (pairs of key and seed cotangent): see the module docstring.

    ``retain``: keep the entries' saved values (a persistent tape, or a recorded replay, which reads them again
    later). ``leaves``: write the leaves' gradients into ``.grad``. ``wanted``: keys whose gradients to return,
    without touching ``.grad``. ``observer``: called per entry (tracing, anomaly checks). ``upstream``: ids of the
    earlier tapes whose values this one used. ``home``: the tape replayed, which a recorded gradient keeps alive.
    """
    if TRACING.n and not create_graph:
        tracer = TRACER.get()
        if tracer is not None:  # its rules would run on arrays the program never sees: refused, naming the line
            tracer.backward("a plain backward pass (loss.backward(), or gradient() outside every tape)")
        if FORWARD.get() or BATCH.get():  # its rules would run on arrays, without tangents or batch axes
            raise TapeError(
                "a plain backward pass (loss.backward()) inside forward mode (tg.jvp, tg.jacfwd, tg.hvp, "
                "tg.linearize) or tg.vmap would drop the tangents or the batch of the gradients it writes: "
                "compute the gradient with tg.grad (or loss.backward(create_graph=True)) inside the function"
            )
    grads: dict = {}
    for key, g in roots:
        old = grads.get(key)
        grads[key] = g if old is None else old + g
    xp = _rules_for(roots, create_graph)
    found = {} if wanted is not None else None
    steps = _Steps.asked_for(observer, wanted, found, create_graph)
    kept: list = []
    if create_graph:
        failure = _walk_recorded(entries, grads, xp, steps)
    elif steps is None and _NATIVE[0] is not None:  # the same walk in C (TAPEGRAD_SPEEDUPS=1, tapegrad.speedups)
        failure = _NATIVE[0].walk_plain(entries, grads, xp, retain, kept)
    else:
        failure = _walk_plain(entries, grads, xp, retain, steps, kept)
    leftovers: list = []
    if failure is None:
        try:
            hand_over(
                grads,
                xp=xp,
                recorded=create_graph,
                leaves=leaves,
                wanted=wanted,
                found=found,
                upstream=upstream,
                leftovers=leftovers,
                home=home,
            )
        except BaseException as err:
            failure = ("leaves", None, err)
        if found:
            _real_sources(found, wanted, xp)
            _distinct(found, xp, create_graph)
    return Outcome(found, leftovers, failure, kept)


def _real_sources(found, wanted, xp) -> None:
    """A real ``gradient()`` source's gradient is real, as a real leaf's is: the real part of a cotangent that a
    later complex value gave it (``wanted`` holds each source's dtype; a node of the tape has no other record)."""
    for key, g in found.items():
        dtype = wanted[key]
        if g is None or dtype is None or is_complex(dtype):
            continue
        if isinstance(g, Tensor):  # a recorded replay: the real part as an op
            if is_complex(g._data):
                found[key] = xp.real(g)
        elif is_complex(g):
            found[key] = fresh(g, dtype, 2)  # its real part, in a buffer of its own


def _distinct(found, xp, recorded) -> None:
    """Each ``gradient()`` source gets a gradient of its own: sources handed one cotangent (``u + v`` hands both
    ``g``) would get one array, and a change to one result would change the others. A copy, as an op
    (``positive``) on a recorded replay."""
    seen = set()
    for key, g in found.items():
        if g is not None and id(g) in seen:
            found[key] = xp.positive(g) if recorded else fresh(g, g.dtype, 2)
        seen.add(id(g))


def _walk_plain(entries, grads, xp, retain, steps, kept):
    """Step 2 on arrays: every live entry, last first. Returns None, or ``(position, op, error)`` where it raised.

    The rules of an op with one rule per input run here, in the loop (the hot path of every backward); a joint
    rule goes through :func:`_pull`. The output nodes replayed go to ``kept``, dropped after the tape's entries:
    a node that died now would call its entry's weak-reference callback, for an entry already freed.
    """
    pop, get, keep = grads.pop, grads.get, kept.append
    idx = op = None
    try:
        for idx in range(len(entries) - 1, -1, -1):
            e = entries[idx]
            rec = e.rec
            if rec is None:
                continue
            node = e()
            e.rec = rec if retain else None  # a tape not retained drops its saved values as its rule runs
            keep(node)
            g = pop(node, None)  # None: nothing asked for depends on it (or its output died)
            if g is None and (g := cotangents(node, pop)) is None:  # several outputs: all their cotangents
                continue
            op, srcs, vals, ans, shapes, params, epoch, mask = rec
            if epoch < CLOCK.tick:  # something was changed in place since: was it what this entry saved?
                check_saved(op, vals, ans, epoch)
            if steps is not None:
                g = steps.hooked(node, g)
                op = steps.observed(idx, rec, node, g, grads)
            if op.joint:
                _pull(op, xp, g, ans, vals, rec, grads, False)
                continue
            vjps, i = op.vjps, 0
            args = (xp, g, ans, *vals)  # packed once for all the entry's rules: a call with *vals packs again
            for src in srcs:
                if (mask >> i) & 1:
                    gi = vjps[i](*args, **params) if params else vjps[i](*args)
                    if gi is not None:
                        gi = gi if shapes is None or shapes[i] is None else unbroadcast(xp, gi, shapes[i])
                        old = get(src)
                        if old is not None and old.size >= IN_PLACE_FROM:  # a large further contribution
                            _add(grads, src, old, gi)  # (a rule may return g itself, for two inputs or one twice)
                        else:  # the first, or a small further one: a new array, as _add would make
                            grads[src] = gi if old is None else old + gi
                        old = None  # our reference would make an in-place add think the buffer shared
                i += 1
            rec = vals = ans = g = gi = args = None  # nothing of the entry outlives its step
    except BaseException as err:
        keep(rec)  # its inputs' entries stay as they were until the tape has numbered the failure
        return idx, op, err
    return None


def _walk_recorded(entries, grads, xp, steps):
    """Step 2 on tensors (``create_graph``): the rules are ops recorded on the active tapes, checked to return
    tensors. Returns None, or ``(position, op, error)`` where it raised."""
    pop = grads.pop
    tracer = TRACER.get() if TRACING.n else None
    idx = op = None
    try:
        for idx in range(len(entries) - 1, -1, -1):
            e = entries[idx]
            rec = e.rec
            if rec is None:
                continue
            node = e()
            g = pop(node, None)
            if g is None and (g := cotangents(node, pop)) is None:
                continue
            op = rec[OP]
            if rec[EPOCH] < CLOCK.tick:
                check_saved(op, rec[SAVED], rec[ANS], rec[EPOCH])
            g, ans, vals = _as_tensors(steps.hooked(node, g), rec[ANS], rec[SAVED], rec[SRCS], node)
            op = steps.observed(idx, rec, node, g, grads)
            if tracer is None:
                _pull(_recorded_rules(op, rec), xp, g, ans, vals, rec, grads, True)
            else:
                _pull_traced(tracer, node, _recorded_rules(op, rec), xp, g, ans, vals, rec, grads)
            rec = g = ans = vals = None
    except BaseException as err:
        return idx, op, err
    return None


def cotangents(group, pop):
    """The cotangents of an entry with several outputs (``group``, its :class:`Outputs`), taken out of the
    replay's dict: a tuple, None for an output nobody used (which its rule skips); None when none was used, or
    for an entry of one output (whose cotangent the replay found missing already)."""
    if group.__class__ is not Outputs:
        return None
    gs = tuple([None if node is None else pop(node, None) for node in outputs_of(group)])
    for g in gs:
        if g is not None:
            return gs
    return None


def _pull_traced(tracer, node, op, xp, g, ans, vals, rec, grads):
    """:func:`_pull` while a function is traced: the tracer knows whose rules its ops come from."""
    tracer.replaying(node, rec)
    try:
        _pull(op, xp, g, ans, vals, rec, grads, True)
    finally:
        tracer.replayed()


def _pull(op, xp, g, ans, vals, rec, grads, recorded):
    """One entry's rules: each input that needs a gradient gets its rule's result for the cotangent ``g``, summed
    back to the input's shape where it was broadcast, added into its cotangent in ``grads``."""
    _, srcs, _, _, shapes, params, _, mask = rec
    vjps, args = op.vjps, (xp, g, ans, *vals)
    joint = (vjps[0](*args, **params) if params else vjps[0](*args)) if op.joint else None
    i = 0
    for src in srcs:
        if (mask >> i) & 1:
            if joint is not None:  # one rule returned every input's gradient (custom ops, recomputation)
                gi = joint[i]
            else:
                gi = vjps[i](*args, **params) if params else vjps[i](*args)
            if gi is not None:
                if shapes is not None and shapes[i] is not None:
                    gi = unbroadcast(xp, gi, shapes[i])
                old = grads.get(src)
                if old is None:
                    grads[src] = gi
                else:  # a further contribution
                    if recorded:
                        grads[src] = old + gi
                    else:
                        _add(grads, src, old, gi)
                old = None  # our reference would make the next in-place add think the buffer shared
        i += 1


IN_PLACE_FROM = 1024  # elements: a smaller cotangent gets a new array for a further contribution (_add)


def _add(grads, key, old, g):
    """Add a further contribution ``g`` to the cotangent ``old`` stored under ``key``, on a plain replay."""
    # Small: a new array costs less than the checks. Large: add in place into a buffer nothing else holds (the
    # dict, the caller's local and ours, getrefcount's argument), as PyTorch's AccumulateGrad steals buffers.
    if old.size < IN_PLACE_FROM:
        grads[key] = old + g
        return
    if old.__class__ is np.ndarray and g.__class__ is np.ndarray and old.base is None and _getrefcount(old) <= 4:
        if old.dtype is g.dtype or old.dtype == g.dtype:
            try:
                old += g
                return
            except ValueError:  # read-only, or g broadcasts to a larger shape
                pass
    grads[key] = old + g


class _Steps:
    """The optional steps of one replay, per entry: the hooks on the entry's output, the observer (tracing,
    anomaly checks, which may wrap the op's rules), and the pickup of a ``gradient()`` source's cotangent, which
    is complete when its entry is reached."""

    __slots__ = ("hooks", "observer", "picks", "found")

    @classmethod
    def asked_for(cls, observer, wanted, found, recorded):
        """The steps this replay takes, or None when it takes none (a recorded replay always has them)."""
        # Sources that are leaves are picked up at the end; only recorded values need a look at each entry.
        picks = {k for k in wanted if k.__class__ is Node} if wanted is not None else None
        if not (recorded or picks or LIVE.n or observer is not None):
            return None
        steps = cls()
        steps.hooks, steps.observer, steps.picks, steps.found = LIVE.n > 0, observer, picks or None, found
        return steps

    def hooked(self, node, g):
        """``g`` after the hooks registered on this value, if any (on each output of an op with several)."""
        if node.__class__ is Outputs:
            if not self.hooks:
                return g
            return tuple([gi if gi is None else self.hooked(p, gi) for p, gi in zip(outputs_of(node), g)])
        node_hooks = getattr(node, "hooks", None) if self.hooks else None
        return g if node_hooks is None or not LIVE.n else run_hooks(node_hooks, g)

    def observed(self, idx, rec, node, g, grads):
        """The op whose rules run for this entry: the observer's (it may wrap them), else the entry's own."""
        op = rec[OP] if self.observer is None else self.observer(idx, rec, node, g, grads)
        picks = self.picks
        if picks is not None:
            if node.__class__ is Outputs:
                for p, gi in zip(outputs_of(node), g):
                    if gi is not None and p in picks:
                        self.found[p] = gi
            elif node in picks:
                self.found[node] = g
        return op


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


_REPLAY = "on a recorded replay (create_graph=True, hessian, grad of grad, vmap)"


def _checked(rule, name, joint=False):
    def run(*args, **params):
        try:
            out = rule(*args, **params)
        except (BatchedValueError, TapeEscapeError) as err:  # the rule read a value: it, not the user's f, is at fault
            raise numpy_rule_error(name, f"reads a tensor's value ({err.what})", _REPLAY) from err
        for gi in out if joint else (out,):
            if gi is not None and not isinstance(gi, Tensor):
                raise numpy_rule_error(name, f"returned a {type(gi).__name__}, not a tensor,", _REPLAY)
        return out

    return run


_recorded_cache: dict = {}


def _recorded_rules(op, rec):
    """``op``'s rules, checked (cached per registered op; an observer's wrapped op is checked as it is)."""
    if op is not rec[OP]:
        return _RecordedRules(op)
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
    for a in answers(ans):
        if modified_since(a, epoch):
            raise InPlaceModificationError(
                f"{op.name}: its output (shape {tuple(a.shape)}), which the tape saved for backward, was changed in "
                "place after it was recorded; write out = out + y (a new array) instead of an in-place update"
            )


def _as_tensors(g, ans, vals, srcs, node):
    """For a recorded replay: the cotangent and the saved values as tensors, keyed to the nodes they are values
    of, so that the rules recorded now connect to the forward entries."""
    wrap = Tensor._wrap_recorded
    if node.__class__ is Outputs:  # several outputs: each cotangent, and each output keyed to its own node
        g = tuple([gi if gi is None or isinstance(gi, Tensor) else Tensor._wrap(gi) for gi in g])
        if ans is not None:
            # a tensor: vmap's batched output, kept as it is (its node is the output's already)
            ans = tuple([a if isinstance(a, Tensor) else wrap(a, output_node(node, i)) for i, a in enumerate(ans)])
    else:
        if not isinstance(g, Tensor):
            g = Tensor._wrap(g)
        if ans is not None and not isinstance(ans, Tensor):  # a tensor: vmap's batched output, kept as it is
            ans = wrap(ans, node)
    vals = tuple(
        wrap(v, s)
        if is_array(v) and s.__class__ is Node
        else (s if is_array(v) and isinstance(s, Tensor) and s._data is v else v)
        for v, s in zip(vals, srcs)
    )
    return g, ans, vals


def bind_native(module) -> None:
    """Hand the compiled walk (``module``: :mod:`tapegrad.core.native`) what it calls back for all but the common
    case."""
    module.bind_replay(
        Outputs=Outputs, cotangents=cotangents, check_saved=check_saved, pull=_pull, add=_add,
        unbroadcast=unbroadcast, CLOCK=CLOCK, IN_PLACE_FROM=IN_PLACE_FROM,
    )  # fmt: skip


def set_native(module) -> None:
    """Replay with the compiled walk of ``module`` from now on (``TAPEGRAD_SPEEDUPS=1``): :mod:`tapegrad.speedups`
    calls this on import; the engine never imports it."""
    bind_native(module)
    _NATIVE[0] = module
