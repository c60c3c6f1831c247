"""The gradient tape's life cycle: a recording block, one replay (or several), release.

Contract
--------
- **What is recorded.** While a ``with tg.record():`` block is active, every differentiable op whose inputs
  need a gradient (``requires_grad=True``, computed from such tensors, or watched with ``t.watch(x)``) appends
  one *entry* to every active tape: the op, a key per input, the values its rule declared it needs (nothing
  more), and a weak reference to its output's :class:`~tapegrad.core.node.Node`. Tensors hold their array and
  at most a node, a bare token; they never point at their inputs or at an entry. Outside every block nothing
  is recorded and nothing is kept.
- **Per context.** The active tapes belong to the thread and, within it, to the asyncio task (contextvars): two
  threads or two tasks recording at once never mix entries. Nested blocks record every op on every active tape
  (as TensorFlow's nested tapes do), which is what makes derivatives of derivatives work.
- **Replay.** ``backward()`` walks the list in reverse (:mod:`tapegrad.core.replay`); each entry's saved
  values are dropped as soon as its rule ran, and a non-persistent tape is then released: it holds nothing.
  Gradients are added into ``.grad`` (``+=``), atomically per leaf, so threads replaying into shared leaves
  lose no contribution.
- **What persists.** ``record(persistent=True)`` keeps the entries for several replays until ``release()``.
  ``backward(create_graph=True)`` records the rules on the replayed tape (and every active one) and keeps it, so
  the gradients it produces can be differentiated again.
- **A replay that fails** (a hook raising, an interrupt, an in-place change found, an anomaly) leaves a
  non-persistent tape *failed*: the entries it had replayed are freed, so every later use raises a
  :class:`~tapegrad.errors.TapeError` saying where it failed; no ``.grad`` was written by it. A persistent tape
  frees nothing while it replays, so it can be replayed again after the error.
- **Who keeps a tape alive.** The block while it is active; then whoever holds the tape object
  (``with tg.record() as t``); and, so that ``loss.backward()`` works after the block, the context keeps the
  most recently closed tape until the next block closes. Tensors refer to their tape only weakly, so keeping a
  tensor (a loss in a history list) never keeps a graph alive. A tape dropped without replay frees everything at
  once: a loop that records and never calls backward stays bounded.
- **Dead entries.** An entry whose output node has become unreachable (no tensor holds it and no later entry
  uses it) cannot contribute to any gradient: a weak-reference callback drops its saved values at once.
- **In-place changes.** Changing an array in place through tapegrad (``x.data -= ...``, ``x += y`` outside
  ``record()``, optimizer steps) marks its memory changed (:mod:`tapegrad._state`); a replay that needs a saved value whose memory, or
  the memory it is a view of, changed after it was recorded raises :class:`~tapegrad.errors.InPlaceModificationError`
  naming the op. Views share versions because they share memory: ``W.T`` saved by a product is caught when
  ``W`` changes. Rebinding (``x.data = a``) changes no saved value and is not an error. Writes that bypass
  tapegrad (``x.data[0] = 1``, ``np.add(..., out=x.data)``) cannot be seen; ``record(check_saved=True)`` catches
  them with a checksum of every saved array, verified at replay. Inside ``record()``, ``x += y`` (every
  augmented operator) on a value being recorded is ``x = x + y``, recorded, and on a leaf that requires a
  gradient it is refused, unless a transform (``tg.grad``...) made the leaf of its function's argument
  (``tensor_methods.AUGMENTED``, ``_state.transform_argument``).

Extension interface
-------------------
Tools (budgets, anomaly checks, source lines, drawing, recomputation, compiled tapes) attach to the core here,
never by reaching into its attributes:

- **Monitors**: ``tape.add_monitor(fn)``; ``fn(tape, entry, out)`` runs after each entry is recorded on that
  tape (``entry.rec`` is the record, read by the positions in :mod:`tapegrad.core.node`; ``entry.info`` may be
  set). A monitor that raises refuses the op: the entry is taken off every tape that recorded it.
- **The replay observer**: a subclass's ``observer(trace)`` returns None or an object that the replay calls for
  each entry it replays, ``observer(index, rec, node, g, grads) -> op``, whose returned op's rules are used (so
  it can wrap them), and whose ``done()`` runs at the end. ``on_drop()`` runs when a tape holding unreplayed
  entries is collected.
- **Reading**: ``tape.live_entries()`` gives ``(position, entry)`` pairs in execution order; ``tape.entries``
  gives :class:`~tapegrad.core.node.EntryView` objects with named fields.
- **The op probe** (profiling): while a context is profiled, ``tapegrad._state.PROBE`` holds its probe, counted in
  ``TRACING.n``; ``apply`` and ``apply_nondiff`` call ``probe.start(op)`` before an op's forward and
  ``probe.stop(op, datas, params, out)`` after it (an op that raised never reaches ``stop``).
- **The differentiable rules slot**: :func:`tapegrad.core.replay.set_differentiable_rules`, filled by the ops.
- **The tracer** (compiled tapes): while a function is traced, ``tapegrad._state.TRACER`` holds this context's
  tracer. ``apply`` and ``apply_nondiff`` report every op to ``tracer.op(op, inputs, params, out)``; a recorded
  replay reports each entry it differentiates to ``tracer.replaying(node, rec)`` before its rules run and calls
  ``tracer.replayed()`` after them, and a plain replay (or ``backward()`` of a value no tape recorded) is
  refused through ``tracer.backward(what)``, which names the user's line (its rules would run unseen); Python
  reading a traced value (``Tensor``'s conversions, ``.data``) and in-place
  changes ask the tracer first (``tracer.concrete``, ``tracer.modified``). ``TRACING.n`` counts traces in
  progress anywhere, so untraced code pays one attribute read per op.
"""

from __future__ import annotations

import itertools

from .._state import ACTIVE, BATCH, ENDED_INSIDE, FORWARD, PENDING, WATCHED, live_tapes
from .._tensor import Tensor
from .._tree import tree_flatten, tree_unflatten
from ..backend import NUMPY, backend_of, is_array, is_floating, nbytes
from ..errors import TapeError
from .grads import fresh, seed, write_grad
from .node import REPLAYED, EntryView, Node, TapeRef, entry_key, kept_values
from .replay import key_of, replay

__all__ = ["BaseTape", "stop_recording", "keep_pending", "backward_of"]

_serials = itertools.count()


class BaseTape:
    """A Wengert list of recorded ops: the core of :class:`tapegrad.tape.Tape` (make one with ``tg.record()``).

    >>> import tapegrad as tg
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> with tg.record() as t:
    ...     y = (x * x).sum()
    >>> len(t)
    2
    >>> y.backward(); x.grad
    array([2., 4.])
    >>> len(t)   # replayed and released
    0
    """

    def __init__(self, persistent: bool = False):
        self.persistent = persistent
        self._entries: list = []
        self._ref = TapeRef(self)
        self._ref.state = "recording"
        self._ref.outer = ()
        self._ref.transform_own = False
        self._watched: dict[int, Tensor] = {}
        self._compact_at = 1024
        self._replays = 0  # replays walking the list now: compaction waits for them
        # Callables monitor(tape, entry, out) run after each entry is recorded (see the extension interface).
        # Empty by default, so plain recording pays one truth test per op.
        self._monitors: list = []
        self.site = None  # (file, line) where record() made it, for the dropped-tape warning
        self._serial = next(_serials)  # creation order: a tape can only use values of tapes made before it
        self._differentiated = False  # replayed with create_graph: its gradients are values later tapes may use
        self._upstream: dict = {}  # such tapes whose values this one used: kept alive, replays continue into them
        live_tapes.add(self)  # for tapegrad.debug.live_tapes(); weak, so it keeps no tape alive

    # -- the context manager ------------------------------------------------------------------------
    def __enter__(self):
        if self._ref.state != "recording":
            raise TapeError(self._unusable())
        active = ACTIVE.get()
        if active:
            self._ref.outer += tuple([t._ref for t in active])
        ACTIVE.set(active + (self,))
        _sync_watched()
        return self

    def __exit__(self, *exc) -> None:
        # try/finally semantics: whatever happened in the block, this tape stops recording here.
        active = ACTIVE.get()
        ACTIVE.set(active[:-1] if active and active[-1] is self else tuple(t for t in active if t is not self))
        _sync_watched()
        if self in ENDED_INSIDE.get():
            ENDED_INSIDE.set(tuple(t for t in ENDED_INSIDE.get() if t is not self))
        if self._ref.state == "recording":
            PENDING.set(self)

    def watch(self, *tensors: Tensor) -> None:
        """Record ops on ``tensors`` as if they required a gradient, for this tape (TensorFlow's ``watch``).

        >>> import tapegrad as tg
        >>> x = tg.Tensor(3.0)
        >>> with tg.record() as t:
        ...     t.watch(x)
        ...     y = x * x
        >>> float(t.gradient(y, x))
        6.0
        """
        for x in tensors:
            if not isinstance(x, Tensor):
                raise TypeError(f"watch() takes tensors, got {type(x).__name__}")
            _check_float(x, "watch")
            self._watched[id(x)] = x
        _sync_watched()

    def nest_in(self, tapes) -> None:
        """Treat ``tapes`` (and what they are nested in) as enclosing this one: values they recorded, used on
        this tape, are nested use rather than values carried over from an earlier tape."""
        self._ref.outer += tuple(r for t in tapes for r in (t._ref, *t._ref.outer))

    def __del__(self):
        # Dropped holding saved values it never replayed: often a forgotten backward (tapegrad.debug warns).
        try:
            if self._ref.state == "recording" and not self.persistent and self._entries:
                self.on_drop()
        except Exception:  # never raise from a finalizer (e.g. at interpreter exit)
            pass

    # -- the extension interface -------------------------------------------------------------------
    def add_monitor(self, fn) -> None:
        """Call ``fn(tape, entry, out)`` after each entry recorded on this tape (see the module docstring)."""
        self._monitors.append(fn)

    def remove_monitor(self, fn) -> None:
        """Stop calling ``fn`` (added with :meth:`add_monitor`)."""
        self._monitors = [m for m in self._monitors if m is not fn]

    @property
    def monitors(self) -> tuple:
        """The monitors attached to this tape, in the order they run."""
        return tuple(self._monitors)

    def observer(self, trace):
        """What the replay calls for each entry it replays, or None: tools override this (tracing, anomaly)."""
        return None

    def on_drop(self) -> None:
        """Called when this tape is collected while it still holds unreplayed entries (tools warn here)."""

    def live_entries(self) -> list:
        """``(position, entry)`` for each live entry, in execution order (positions as the replay numbers them)."""
        return [(i, e) for i, e in enumerate(self._entries) if e.rec is not None]

    # -- inspection ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        return sum(1 for e in self._entries if e.rec is not None)

    @property
    def entries(self) -> list:
        """The live entries with named fields (:class:`~tapegrad.core.node.EntryView`), in execution order."""
        return [EntryView(e) for e in self._entries if e.rec is not None]

    @property
    def state(self) -> str:
        """'recording' (open or closed, not yet replayed), 'replayed', 'released' or 'failed'."""
        return self._ref.state

    @property
    def transform_own(self) -> bool:
        """Whether this is a transform's own tape (``tg.grad``'s, ``tg.vjp``'s: :class:`tapegrad._scope.Scope`
        sets it): ``backward()`` of a value it recorded inside a ``record()`` block replays the block's tape, as
        for any value of the block, never this one, which the transform releases (or ``vjp_fn`` keeps).

        >>> import tapegrad as tg
        >>> with tg.record() as t:
        ...     pass
        >>> t.transform_own
        False
        """
        return self._ref.transform_own

    @transform_own.setter
    def transform_own(self, value: bool) -> None:
        self._ref.transform_own = bool(value)

    def saved_bytes(self, *, excluding=None) -> int:
        """Bytes of the arrays this tape keeps for backward (each array counted once), leaving out the entry
        ``excluding`` (what a budget asks: the bytes without the op it refuses)."""
        seen, total = set(), 0
        for e in self._entries:
            rec = e.rec
            if rec is None or e is excluding:
                continue
            for a in kept_values(rec):
                if is_array(a) and id(a) not in seen:
                    seen.add(id(a))
                    total += nbytes(a)
        return total

    def __repr__(self) -> str:
        return f"<Tape {self.state}, {len(self)} entries, persistent={self.persistent}>"

    # -- recording: what core.record calls -------------------------------------------------------------
    def append(self, entry, out, active) -> None:
        """Add ``entry``, just recorded for the tensor ``out`` on every tape in ``active``, then run this tape's
        monitors: one that raises refuses the op, which is taken off every tape that recorded it."""
        entries = self._entries
        entries.append(entry)
        if len(entries) >= self._compact_at:
            self._compact()
        if self._monitors:
            self._run_monitors(entry, out, active)

    def keep_upstream(self, earlier) -> None:
        """An op recorded here used a create_graph gradient of the ``earlier`` tape: keep that tape alive, so that
        this tape's replays continue into it."""
        self._upstream[id(earlier)] = earlier

    def _run_monitors(self, entry, out, active) -> None:
        try:
            for monitor in self._monitors:
                monitor(self, entry, out)
        except BaseException:
            # Refused: off every tape that recorded it (those before this one in `active`, and this one), so the
            # tapes are exactly as before the op (a budget, an anomaly).
            node, rec = entry(), entry.rec
            for t in active:
                entries = t._entries
                if entries and entries[-1]() is node and entries[-1].rec is rec:
                    entries.pop().rec = None
                if t is self:
                    break
            entry.rec = None
            raise

    def _compact(self) -> None:
        # Amortised O(1): drop dead entries so an open tape used for evaluation stays bounded.
        if self._replays:  # a replay is walking the list by index
            return
        entries = self._entries
        entries[:] = [e for e in entries if e.rec is not None]
        self._compact_at = max(1024, 2 * len(entries))

    # -- replay and release -------------------------------------------------------------------------
    def backward(self, target: Tensor, gradient=None, *, create_graph: bool = False, trace=False) -> None:
        """Replay this tape from ``target`` and accumulate into ``.grad`` of the leaves (see Tensor.backward).

        ``trace=True`` (or a file) prints each adjoint update as it runs (see tapegrad.debug).
        """
        self._check_replayable()
        g = seed(target, gradient, "backward", differentiable=create_graph)
        observer = self.observer(trace)
        self._replay([(key_of(target), g)], create_graph=create_graph, leaves=True, observer=observer)
        if observer is not None:
            observer.done()

    def gradient(self, target, sources, output_gradients=None, *, unconnected: str = "none"):
        """Gradients of ``target`` with respect to ``sources`` (a tensor, or nested lists/tuples/dicts of them),
        in the same structure, without touching ``.grad``.

        ``unconnected="zero"`` gives zeros instead of None for sources that took no part.

        >>> import tapegrad as tg
        >>> x = tg.Tensor(2.0, requires_grad=True)
        >>> with tg.record() as t:
        ...     y = x ** 3
        >>> float(t.gradient(y, x))
        12.0
        """
        if unconnected not in ("none", "zero"):
            raise ValueError(f"gradient(): unconnected must be 'none' or 'zero', got {unconnected!r}")
        self._check_replayable()
        flat, spec = tree_flatten(sources, "gradient()")
        tflat = _targets(target)
        gflat = (
            [None] * len(tflat)
            if output_gradients is None
            else ([output_gradients] if isinstance(target, Tensor) else list(output_gradients))
        )
        if len(gflat) != len(tflat):
            raise ValueError("gradient(): output_gradients must match target in structure")
        # Run while an outer tape records, or inside forward mode or vmap (whose tangents and batch axes must
        # follow the rules through ops): differentiable again.
        create_graph = bool(ACTIVE.get()) or bool(FORWARD.get()) or bool(BATCH.get())
        quiet = create_graph and not ACTIVE.get()  # only forward mode or vmap needs the rules' ops: none recorded
        roots = [(key_of(t), seed(t, g, "gradient", differentiable=create_graph)) for t, g in zip(tflat, gflat)]
        wanted = {}
        for s in flat:
            if not isinstance(s, Tensor):
                raise TypeError(f"gradient(): sources must be tensors, got {type(s).__name__}")
            wanted[key_of(s)] = s.dtype  # a real source's gradient is real, even where complex values met it
        found = self._replay(
            roots, create_graph=create_graph, leaves=False, wanted=wanted, observer=self.observer(False), quiet=quiet
        )
        out = []
        for s in flat:
            g = found.get(key_of(s))
            if g is None and unconnected == "zero":
                g = (backend_of(s._data) or NUMPY).xp.zeros(s.shape, dtype=s.dtype)  # one example's (vmap)
            out.append(g)
        return tree_unflatten(spec, out)

    def _replay(self, roots, *, create_graph, leaves, wanted=None, observer=None, quiet=False):
        """Replay this tape, then the earlier tapes whose create_graph gradients it used, each once, latest
        first (a tape only uses values of tapes made before it), with the cotangents that reached them."""
        queue: dict = {}
        found_all = {} if wanted is not None else None
        tape, todo = self, list(roots)
        while True:
            outcome = tape._replay_once(
                todo,
                create_graph=create_graph,
                leaves=leaves,
                wanted=wanted,
                observer=observer if tape is self else tape.observer(False),
                quiet=quiet,
            )
            if outcome.found:
                for key, g in outcome.found.items():
                    old = found_all.get(key)
                    found_all[key] = g if old is None else old + g
            for key, g in outcome.leftovers:
                earlier = key.tape()
                if earlier is None or earlier.state != "recording":
                    raise TapeError(
                        "a gradient reached a value computed on an earlier tape, from a gradient recorded with "
                        "create_graph=True, but that tape was replayed or released since: "
                        + (_unusable(key.tape) if earlier is None else earlier._unusable())
                    )
                queue.setdefault(earlier, []).append((key, g))
            if not queue:  # a backward() of one tape: nothing reached an earlier one
                return found_all
            tape = max(queue, key=lambda t: t._serial)
            todo = queue.pop(tape)

    def _replay_once(self, roots, *, create_graph, leaves, wanted, observer, quiet=False):
        """One replay of this tape (:func:`tapegrad.core.replay.replay`), and its outcome applied: a
        non-persistent tape is consumed, or failed where the replay raised."""
        retain = self.persistent or create_graph  # a recorded replay reads the forward values again later
        # quiet: the rules run on tensors (forward mode's tangents, vmap's batch) but no tape records them
        outer = self._record_rules_here() if create_graph and not quiet else None
        if create_graph:
            self._differentiated = True  # its gradients are recorded on it: later tapes may differentiate them
        self._replays += 1  # compaction waits for it
        try:
            outcome = replay(
                self._entries,
                roots,
                create_graph=create_graph,
                retain=retain,
                leaves=leaves,
                wanted=wanted,
                observer=observer,
                upstream=self._upstream,
                home=self,
            )
        finally:
            self._replays -= 1
            if outer is not None:
                ACTIVE.set(outer)
        if outcome.failure is not None:
            position, op, err = outcome.failure
            outcome = None
            if not retain:  # the entries already replayed are freed: every later use must say so
                self._failed(position, op, err)
            try:
                raise err
            finally:
                err = None  # the traceback refers to this frame: no cycle through it
        if not retain:
            self._consumed(roots)
        return outcome

    def _record_rules_here(self):
        """Make the rules of a recorded replay ops of this tape (its forward values are needed) and of every
        active tape; returns the active tapes to restore."""
        saved = ACTIVE.get()
        if self not in saved:
            self._ref.outer += tuple(t._ref for t in saved)
            ACTIVE.set(saved + (self,))
        return saved

    def release(self) -> None:
        """Free every entry and saved array now; the tape cannot be replayed afterwards."""
        for e in self._entries:
            e.rec = None
        self._entries = []
        self._upstream = {}
        if self._ref.state != "failed":
            self._ref.state = "released"
        if PENDING.get() is self:
            PENDING.set(None)

    def _check_replayable(self) -> None:
        if self._ref.state != "recording":
            raise TapeError(self._unusable())

    def _unusable(self) -> str:
        return _unusable(self._ref)

    def _failed(self, position, op, err) -> None:
        """A replay raised partway: free what is left and make every later use say where it failed."""
        if position is None or position == "leaves":
            index = position
        else:  # counted as the tape counts its entries: the live ones before it (still unreplayed)
            index = sum(1 for e in self._entries[:position] if e.rec is not None)
        self._ref.failure = (index, getattr(op, "name", None), type(err).__name__)
        self._ref.state = "failed"
        self.release()
        _leave_active(self)

    def _consumed(self, roots) -> None:
        """After a non-persistent replay: nothing is kept, and later uses say it was replayed."""
        self._entries = []
        self._upstream = {}
        self._ref.state = "replayed"
        for key, _ in roots:  # a kept loss then holds a shared ref, not one per tape (88 bytes a step)
            if key.__class__ is Node and (key.tape is self._ref or _replayed_for(key, self._ref)):
                key.tape = REPLAYED
        if PENDING.get() is self:
            PENDING.set(None)
        _leave_active(self)


def _unusable(ref) -> str:
    """Why the tape behind ``ref`` (alive or not) can no longer be replayed."""
    state = ref.state
    if state == "replayed":
        return (
            "backward() was already called on this tape, which freed it: a non-persistent tape can be "
            "replayed once. Record with tg.record(persistent=True) to call backward more than once"
        )
    if state == "failed":
        return _failure_message(ref.failure)
    if state == "recording":
        return (
            "the tape that recorded this tensor was dropped before backward(): a tape you do not hold "
            "is kept only until the next record() block in this context ends. Call backward() before "
            "recording again, or hold it (`with tg.record() as t:`) and call t.backward(loss)"
        )
    return "this tape was released (release() was called); record the computation again"


def _failure_message(failure) -> str:
    index, op, err = failure
    if index == "leaves":
        where = "while handing the gradients to the leaves"
    else:
        where = f"at entry {index} ({op})" if op is not None else "before reaching any entry"
    return (
        f"an earlier backward() on this tape failed {where} with {err}: the entries it had replayed are freed, "
        "so no gradient can be computed from this tape. Record the computation again (record with "
        "persistent=True to be able to retry a replay after an error)"
    )


def _leave_active(tape) -> None:
    # Replayed (or failed) inside its own block: later ops there are not recorded on it.
    active = ACTIVE.get()
    if tape in active:
        ACTIVE.set(tuple(t for t in active if t is not tape))
        _sync_watched()
        ENDED_INSIDE.set(ENDED_INSIDE.get() + (tape,))  # so that an error about a later op can say why


def _targets(target) -> list:
    if isinstance(target, Tensor):
        return [target]
    if isinstance(target, (list, tuple)) and all(isinstance(t, Tensor) for t in target):
        return list(target)
    raise TypeError(
        f"gradient(): the target must be a tensor or a list of tensors computed on this tape, got "
        f"{type(target).__name__}"
    )


def _sync_watched() -> None:
    active = ACTIVE.get()
    for t in active:
        if t._watched:
            break
    else:  # what every record() block's entry and exit find: no tape watches anything (a loop, no list made)
        WATCHED.set(_NONE_WATCHED)
        return
    WATCHED.set(frozenset().union(*[t._watched for t in active if t._watched]))


_NONE_WATCHED = frozenset()


def _check_float(x, what):
    if not is_floating(x._data):
        raise TypeError(
            f"{what}: a tensor of dtype {x._data.dtype} cannot carry a gradient; "
            "convert it first, e.g. Tensor(x.numpy().astype(np.float64))"
        )


class stop_recording:
    """Pause every active tape in this context for the block: ops inside are plain NumPy and keep nothing.

    >>> import tapegrad as tg
    >>> x = tg.Tensor(1.0, requires_grad=True)
    >>> with tg.record():
    ...     with tg.stop_recording():
    ...         y = x * 2
    >>> y.requires_grad
    False
    """

    def __enter__(self):
        self._saved = (ACTIVE.get(), WATCHED.get())
        ACTIVE.set(())
        WATCHED.set(frozenset())
        return self

    def __exit__(self, *exc):
        active, watched = self._saved
        ACTIVE.set(active)
        WATCHED.set(watched)


class keep_pending:
    """A block whose own tapes must not displace the tape this context keeps for a later ``loss.backward()``
    (the tapes of transforms and recomputation): on the way out the kept tape is put back if still replayable.

    >>> import tapegrad as tg
    >>> x = tg.Tensor(2.0, requires_grad=True)
    >>> with tg.record():
    ...     y = x * x
    >>> with keep_pending():
    ...     _ = tg.grad(lambda v: v * v)(3.0)
    >>> y.backward(); float(x.grad)
    4.0
    """

    def __enter__(self):
        self._pending = PENDING.get()
        return self

    def __exit__(self, *exc):
        pending = self._pending
        PENDING.set(pending if pending is not None and pending.state == "recording" else None)


def backward_of(t: Tensor, gradient=None, create_graph: bool = False, trace=False) -> None:
    """``t.backward(...)``: replay the tape that recorded ``t`` (a leaf's own gradient is its seed)."""
    node = t._node
    if node is None:
        g = seed(t, gradient, "backward")  # raises the "no tape recorded this tensor" error for constants
        write_grad(t, fresh(g, t._data.dtype, 2, t._data))
        return
    tape = _tape_to_replay(node)
    if tape is None:
        raise TapeError(_unusable(_why_gone(node.tape)))
    tape.backward(t, gradient, create_graph=create_graph, trace=trace)


def _tape_to_replay(node):
    """The tape whose replay ``backward()`` of ``node``'s tensor runs, or None: its own while it records, else, where
    another tape stands in for it (:func:`_stands_in`), the nearest enclosing tape that recorded the value too. A
    tape that replayed (or failed to) is the answer's reason: falling back on another would count the value twice."""
    ref = node.tape
    if ref.state == "recording" and not ref.transform_own:
        tape = ref()
        if tape is not None:
            return tape
    return _enclosing_tape_of(node) if _stands_in(ref) else None


def _stands_in(ref) -> bool:
    """Whether an enclosing tape may replay the values of the tape behind ``ref``: a transform's own
    (``transform_own``: released on its way out, or kept by ``vjp_fn``), one released, or one dropped unreplayed."""
    return ref.transform_own or ref.state == "released" or (ref.state == "recording" and ref() is None)


def _replayed_for(node, ref) -> bool:
    """Whether the tape behind ``ref`` replayed in place of ``node``'s own: the node is then consumed, as any value is
    by its own tape's replay, and a second backward() raises."""
    return _stands_in(node.tape) and any(r is ref for r in node.tape.outer)


def _enclosing_tape_of(node):
    """The nearest tape, of those that ``node``'s own tape was nested in, that recorded ``node`` too and can still
    be replayed, or None. A transform's own tape (``tg.grad``'s, ``tg.value_and_grad``'s) is released on its way
    out, while the block around the call recorded the same ops: its results' backward() replays that block's tape.
    The tape is checked to hold the node's entry: one that does not would give every input a zero gradient."""
    key = entry_key(node)
    for ref in reversed(node.tape.outer):
        tape = ref()
        if tape is not None and ref.state == "recording" and any(e() is key for e in tape._entries):
            return tape
    return None


def _why_gone(ref):
    """Whose state explains that a value's tape cannot be replayed: its own, or, for a transform's own tape (which the
    user never handled: released on its way out, or kept by ``vjp_fn``), the nearest block around it that was
    replayed, failed, or was dropped before backward() (the context keeps one block's tape)."""
    if ref.transform_own:
        for outer in reversed(ref.outer):
            if outer.state in ("replayed", "failed") or (outer() is None and outer.state == "recording"):
                return outer
    return ref
