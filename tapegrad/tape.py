"""The gradient tape: recording, replay and release. The whole life cycle of a recorded computation is here.

Contract
--------
- **What is recorded.** While a ``with tape.record():`` block is active on a thread, every differentiable op
  whose inputs need a gradient appends one *entry* to the tape: the op, a key per input, the values its rule
  declared it needs (nothing more), and a weak reference to its output's :class:`Node`. Tensors hold their
  array and at most a ``Node``, a bare identity token; they never point at their inputs or at an entry.
  Outside every ``record()`` block nothing is recorded and nothing is kept for gradients.
- **Per thread.** The stack of active tapes belongs to the thread: two threads recording at once never mix
  entries. Nested blocks record every op on every active tape (as TensorFlow's nested tapes do), which is what
  makes derivatives of derivatives work.
- **Replay.** ``backward()`` walks the list in reverse: it is in execution order, so reversed it is already a
  topological order and no graph sort is needed. Cotangents live in a dict keyed by node (or by the leaf
  tensor); each is popped when its producing entry runs, and each entry's saved values are dropped right after
  its rule ran, so memory falls as replay proceeds. A non-persistent tape is then released: it holds nothing.
- **What persists.** ``record(persistent=True)`` keeps the entries for several replays until ``release()``.
  ``backward(create_graph=True)`` records the rules on the replayed tape (and every active one) and keeps it,
  so the gradients it produces can be differentiated again.
- **Who keeps a tape alive.** The block while it is active; then whoever holds the tape object
  (``with tape.record() as t``); and, so that ``loss.backward()`` works after the block, the thread keeps the
  most recently closed tape until the next block closes. Tensors refer to their tape only weakly, so keeping
  a tensor (a loss in a history list) never keeps a graph alive. A tape dropped without replay frees
  everything at once: a loop that records and never calls backward stays bounded.
- **Dead entries.** An entry whose output node has become unreachable (no tensor holds it and no later entry
  uses it) cannot contribute to any gradient: a weak-reference callback drops its saved values at once.
- **In-place changes.** Changing a tensor's data through tapegrad (``x.data = ...``, ``x.data -= ...``,
  in-place operators, optimizer steps) bumps its version; a replay that needs a value changed after it was
  recorded raises :class:`InPlaceModificationError` naming the op, instead of using the changed value.
"""

from __future__ import annotations

import math
import sys
import threading
import weakref

import numpy as np

from ._tree import tree_flatten, tree_unflatten
from .backend import NUMPY, backend_of, common_backend
from .registry import Shape, numpy_rules, unbroadcast
from .tensor import Tensor

__all__ = [
    "Tape",
    "record",
    "stop_recording",
    "current",
    "is_recording",
    "TapeError",
    "InPlaceModificationError",
]

_getrefcount = sys.getrefcount
_new_tensor = Tensor.__new__
_ndarray = np.ndarray
_PLAIN = frozenset((float, int, bool, np.ndarray, np.float64, np.float32, np.int64))  # raw inputs NumPy runs as is
_clock = 0  # bumped by every in-place change made through tapegrad; entries remember its value
_watch_used = False  # set once any tape watches a tensor, so plain recording never looks


class TapeError(RuntimeError):
    """A tape was used in a way that cannot give a correct gradient."""


class InPlaceModificationError(TapeError):
    """A value a recorded op saved for its backward rule was changed in place before the replay."""


class Node:
    """The identity of one recorded value: the key its cotangent lives under during replay.

    A node holds no data and no link to other nodes. ``tape`` is a weak reference to the innermost tape that
    recorded it, which is how ``loss.backward()`` finds its tape.
    """

    __slots__ = ("tape", "_version", "hooks", "__weakref__")


class _TapeRef(weakref.ref):
    """The weak reference every node of a tape shares; ``state`` outlives the tape to explain errors.

    ``outer`` holds the references of the tapes that were active when this one was: an op on this tape's
    nodes recorded there is nested use, not a value carried over from an earlier tape.
    """

    __slots__ = ("state", "outer")


class _Gone:
    pass


_REPLAYED = _TapeRef(_Gone())  # already dead: what the targets of a consumed replay point at
_REPLAYED.state, _REPLAYED.outer = "replayed", ()


class _Entry(weakref.ref):
    """One line of the Wengert list: a weak reference to the output node, and ``rec`` while it is live.

    ``rec = (op, srcs, vals, ans, shapes, params, epoch, mask)``: the op; per input its node, its tensor
    (a leaf) or None; what the rule saved; the saved output; input shapes where they broadcast; the op's
    parameters; the clock when recorded; a bit mask of the inputs that need a gradient. ``info`` is unset
    unless a monitor (debugging, budgets) attached something, e.g. the source line.
    """

    __slots__ = ("rec", "info")


def _entry_died(entry):
    # The output node is unreachable: nothing can send a cotangent here any more.
    entry.rec = None


class _State(threading.local):
    active: tuple = ()  # the active tapes, innermost last
    anomaly = False  # inside tapegrad.detect_anomaly(): new tapes check every value (tapegrad.debug)
    pending = None  # the most recently closed tape, kept so that loss.backward() works after the block
    watched = frozenset()  # ids of tensors watched by an active tape


_state = _State()
_live_tapes: weakref.WeakSet = weakref.WeakSet()


def current() -> Tape | None:
    """The innermost tape recording on this thread, or None.

    >>> from tapegrad import tape
    >>> tape.current() is None
    True
    """
    active = _state.active
    return active[-1] if active else None


def is_recording() -> bool:
    """Whether ops on this thread are being recorded right now."""
    return bool(_state.active)


class Tape:
    """A Wengert list of recorded ops. Make one with :func:`record`.

    >>> import tapegrad as tg
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> with tg.tape.record() as t:
    ...     y = (x * x).sum()
    >>> len(t)
    2
    >>> y.backward(); x.grad
    array([2., 4.])
    >>> len(t)   # replayed and released
    0
    """

    def __init__(self, persistent: bool = False, max_saved_bytes: int | None = None):
        self.persistent = persistent
        self._entries: list[_Entry] = []
        self._ref = _TapeRef(self)
        self._ref.state = "recording"
        self._ref.outer = ()
        self._watched: dict[int, Tensor] = {}
        self._compact_at = 1024
        self._replays = 0
        # Callables monitor(tape, entry, out) run after each entry is recorded: budgets, anomaly checks,
        # source lines. Empty by default, so plain recording pays one truth test per op.
        self._monitors: list = []
        self._anomaly = False  # record(detect_anomaly=True): replays check every gradient (tapegrad.debug)
        self._site = None  # where record() was called, for the dropped-tape warning
        _live_tapes.add(self)  # for tapegrad.debug.live_tapes(); weak, so it keeps no tape alive
        if max_saved_bytes is not None:
            from .budget import install_budget  # a monitor: tapes without a budget pay nothing

            install_budget(self, max_saved_bytes)

    # -- the context manager ------------------------------------------------------------------------
    def __enter__(self) -> Tape:
        if self._ref.state in ("replayed", "released"):
            raise TapeError(f"this tape was already {self._ref.state}; start a new block with tape.record()")
        active = _state.active
        if active:
            self._ref.outer += tuple([t._ref for t in active])
        _state.active = active + (self,)
        self._sync_watched()
        return self

    def __exit__(self, *exc) -> None:
        active = _state.active
        # try/finally semantics: whatever happened in the block, this tape stops recording here.
        _state.active = tuple(t for t in active if t is not self)
        self._sync_watched()
        if self._ref.state == "recording":
            _state.pending = self

    def _sync_watched(self):
        ids = set()
        for t in _state.active:
            ids.update(t._watched)
        _state.watched = frozenset(ids)

    def watch(self, *tensors: Tensor) -> None:
        """Record ops on ``tensors`` as if they required a gradient, for this tape (TensorFlow's ``watch``).

        >>> import tapegrad as tg
        >>> x = tg.Tensor(3.0)
        >>> with tg.tape.record() as t:
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
        global _watch_used
        _watch_used = True
        self._sync_watched()

    def __del__(self):
        # Dropped holding saved values it never replayed: often a forgotten backward (tapegrad.debug warns).
        try:
            if self._ref.state == "recording" and not self.persistent and self._entries:
                from .debug import _dropped_unreplayed

                _dropped_unreplayed(self)
        except Exception:  # never raise from a finalizer (e.g. at interpreter exit)
            pass

    # -- inspection ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        return sum(1 for e in self._entries if e.rec is not None)

    @property
    def entries(self) -> list:
        """The live entries' records, in execution order (read-only view for debugging tools)."""
        return [e.rec for e in self._entries if e.rec is not None]

    @property
    def state(self) -> str:
        """'recording' (open or closed, not yet replayed), 'replayed' or 'released'."""
        return self._ref.state

    def saved_bytes(self) -> int:
        """Bytes of the arrays this tape keeps for backward (each array counted once)."""
        seen, total = set(), 0
        for rec in self.entries:
            for a in (*rec[2], rec[3]):
                if _is_array(a) and id(a) not in seen:
                    seen.add(id(a))
                    total += _nbytes(a)
        return total

    def __repr__(self) -> str:
        return f"<Tape {self.state}, {len(self)} entries, persistent={self.persistent}>"

    # The readable views live in tapegrad.debug and tapegrad.viz; these are their entry points.
    def __str__(self) -> str:
        from .debug import format_tape

        return format_tape(self)

    def memory_report(self) -> str:
        """Per entry: op, source line, output shape and dtype, saved arrays and bytes; then totals (tapegrad.debug)."""
        from .debug import memory_report

        return memory_report(self)

    def stats(self) -> dict:
        """The figures of :meth:`memory_report` as a dict."""
        from .debug import stats

        return stats(self)

    def to_dot(self) -> str:
        """Graphviz DOT source drawing this tape (tapegrad.viz)."""
        from .viz import to_dot

        return to_dot(self)

    def find_nonfinite(self) -> list:
        """The entries whose saved values hold NaN or infinity, earliest first (tapegrad.debug)."""
        from .debug import find_nonfinite

        return find_nonfinite(self)

    # -- recording ----------------------------------------------------------------------------------
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
        seed = _seed(target, gradient, "backward", differentiable=create_graph)
        observer = self._observer(trace)
        self._replay([(_key_of(target), seed)], create_graph=create_graph, leaves=True, observer=observer)
        if observer is not None:
            observer.done()

    def _observer(self, trace):
        # Checked once per replay: the replay loop only pays for tracing or anomaly checks when asked.
        if trace or self._anomaly or _state.anomaly:
            from .debug import replay_observer

            return replay_observer(self, trace, self._anomaly or _state.anomaly)
        return None

    def gradient(self, target, sources, output_gradients=None, *, unconnected: str = "none"):
        """Gradients of ``target`` with respect to ``sources`` (a tensor, or nested lists/tuples/dicts of them),
        in the same structure, without touching ``.grad``.

        ``unconnected="zero"`` gives zeros instead of None for sources that took no part.

        >>> import tapegrad as tg
        >>> x = tg.Tensor(2.0, requires_grad=True)
        >>> with tg.tape.record() as t:
        ...     y = x ** 3
        >>> float(t.gradient(y, x))
        12.0
        """
        if unconnected not in ("none", "zero"):
            raise ValueError(f"gradient(): unconnected must be 'none' or 'zero', got {unconnected!r}")
        flat, spec = tree_flatten(sources, "gradient()")
        tflat = [target] if isinstance(target, Tensor) else list(target)
        gflat = (
            [None] * len(tflat)
            if output_gradients is None
            else ([output_gradients] if isinstance(target, Tensor) else list(output_gradients))
        )
        if len(gflat) != len(tflat):
            raise ValueError("gradient(): output_gradients must match target in structure")
        create_graph = bool(_state.active)  # run while an outer tape records: differentiable again
        roots = [(_key_of(t), _seed(t, g, "gradient", differentiable=create_graph)) for t, g in zip(tflat, gflat)]
        wanted = {}
        for s in flat:
            if not isinstance(s, Tensor):
                raise TypeError(f"gradient(): sources must be tensors, got {type(s).__name__}")
            wanted[_key_of(s)] = None
        found = self._replay(
            roots, create_graph=create_graph, leaves=False, wanted=wanted, observer=self._observer(False)
        )
        out = []
        for s in flat:
            g = found.get(_key_of(s))
            if g is None and unconnected == "zero":
                g = (backend_of(s._data) or NUMPY).xp.zeros_like(s._data)
            out.append(g)
        return tree_unflatten(spec, out)

    def release(self) -> None:
        """Free every entry and saved array now; the tape cannot be replayed afterwards."""
        for e in self._entries:
            e.rec = None
        self._entries = []
        self._ref.state = "released"
        if _state.pending is self:
            _state.pending = None

    def _replay(self, roots, *, create_graph, leaves, wanted=None, observer=None):
        state = self._ref.state
        if state != "recording":
            raise TapeError(_consumed_message(state))
        entries = self._entries
        n = len(entries)
        retain = self.persistent or create_graph
        grads: dict = {}
        for key, seed in roots:
            old = grads.get(key)
            grads[key] = seed if old is None else old + seed
        found = {} if wanted is not None else None
        self._replays += 1
        if create_graph:
            xp = _tensor_rules()
            # The rules become recorded ops: on this tape (its forward values are needed) and on every active one.
            saved_active = _state.active
            if self not in saved_active:
                self._ref.outer += tuple(t._ref for t in saved_active)
                _state.active = saved_active + (self,)
        elif roots[0][1].__class__ is _ndarray:
            xp = numpy_rules
        else:  # every entry a root reaches ran in the root's library (one library per op)
            xp = common_backend("backward", [seed for _, seed in roots]).fx
            xp = numpy_rules if xp is np else xp
        # The common replay (no hooks, no gradient() sources, not recorded) skips every optional step.
        slow = create_graph or found is not None or _hooks_on or observer is not None
        pop, get = grads.pop, grads.get
        try:
            for idx in range(n - 1, -1, -1):
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
                if epoch < _clock:
                    _check_versions(op, srcs, vals, ans, node, epoch)
                if slow:
                    if _hooks_on and getattr(node, "hooks", None):
                        g = _run_hooks(node.hooks, g)
                    if found is not None and node in wanted:
                        found[node] = g
                    if create_graph:
                        g, ans, vals = _as_tensors(g, ans, vals, srcs, node, op)
                    if observer is not None:  # tracing, anomaly checks: it wraps the op's rules
                        op = observer(idx, rec, node, g, grads)
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
                            elif create_graph or old.size < 1024:  # small: a new array costs less
                                grads[src] = old + gi
                            else:
                                _accumulate(grads, src, old, gi)
                            old = None
                    i += 1
                rec = vals = ans = g = gi = None
        finally:
            self._replays -= 1
            if create_graph:
                _state.active = saved_active
        # What is left are leaves (and nodes of other tapes, which this replay does not reach through).
        while grads:
            key, g = grads.popitem()
            if found is not None:
                if key in wanted:  # a leaf, or a value an outer tape recorded (a node this tape never produced)
                    if _hooks_on and getattr(key, "_hooks", None):  # a leaf's hooks see gradient() too
                        g = _run_hooks(key._hooks, g)
                    dtype = g.dtype if key.__class__ is Node else key._data.dtype
                    refs = _getrefcount(g) - 1  # counted here: passed as an argument, g would count once more
                    found[key] = g if create_graph else _fresh(g, dtype, refs)
            elif key.__class__ is Node:
                continue
            elif leaves and key.requires_grad:
                if not create_graph:
                    refs = _getrefcount(g) - 1
                    g = _fresh(g, key._data.dtype, refs)
                _write_grad(key, g)
            key = g = None
        if not retain:
            self._entries = []
            self._ref.state = "replayed"
            for key, _ in roots:  # a kept loss then holds a shared ref, not one per tape (88 bytes a step)
                if key.__class__ is Node and key.tape is self._ref:
                    key.tape = _REPLAYED
            if _state.pending is self:
                _state.pending = None
            if self in _state.active:  # replayed inside its own block: later ops there are not recorded on it
                _state.active = tuple(t for t in _state.active if t is not self)
                self._sync_watched()
        return found


def record(
    *,
    persistent: bool = False,
    detect_anomaly: bool = False,
    track_source: bool = False,
    max_saved_bytes: int | None = None,
) -> Tape:
    """Start recording on a new tape: ``with tape.record() as t: ...``.

    ``track_source=True`` keeps, per entry, the file and line that called the op and its output's shape and
    dtype (printing and memory reports show them); ``detect_anomaly=True`` also raises at the first NaN or
    infinity, forward or backward, naming the op and that line (see :mod:`tapegrad.debug`).
    ``max_saved_bytes`` caps what the tape may keep for backward: the op that would cross it raises
    :class:`~tapegrad.budget.TapeBudgetError` and is not recorded (see :mod:`tapegrad.budget`).

    >>> import tapegrad as tg
    >>> w = tg.Tensor([1.0, -1.0], requires_grad=True)
    >>> with tg.tape.record():
    ...     loss = (w * w).sum()
    >>> loss.backward(); w.grad
    array([ 2., -2.])
    """
    t = Tape(persistent=persistent, max_saved_bytes=max_saved_bytes)
    f = sys._getframe(1)
    t._site = (f.f_code.co_filename, f.f_lineno)
    if detect_anomaly or track_source or _state.anomaly:
        from .debug import instrument

        instrument(t, anomaly=detect_anomaly or _state.anomaly)
    return t


class stop_recording:
    """Pause every active tape on this thread for the block: ops inside are plain NumPy and keep nothing.

    >>> import tapegrad as tg
    >>> x = tg.Tensor(1.0, requires_grad=True)
    >>> with tg.tape.record():
    ...     with tg.tape.stop_recording():
    ...         y = x * 2
    >>> y.requires_grad
    False
    """

    def __enter__(self):
        self._saved = (_state.active, _state.watched)
        _state.active = ()
        _state.watched = frozenset()
        return self

    def __exit__(self, *exc):
        _state.active, _state.watched = self._saved


# -- recording one op ---------------------------------------------------------------------------------
def apply(op, args, params):
    """Run ``op`` on ``args`` (tensors, arrays, scalars) and record it on every active tape that needs it.

    This is the hot path of every op: one pass over the inputs, no per-op allocation beyond the output
    tensor, its node, the entry and the entry's record.
    """
    # One pass over the inputs: the arrays for the forward; keys and the grad mask for the tape.
    datas = []
    srcs = []
    mask = bit = 0
    active = _state.active
    top = active[-1]._ref if active else None
    foreign = None
    plain = True  # every array is NumPy: call the NumPy forward directly (tapegrad.backend for the others)
    for a in args:
        if isinstance(a, Tensor):
            d = a._data
            if d.__class__ is not _ndarray:
                plain = False
            datas.append(d)
            node = a._node
            if node is not None:
                srcs.append(node)
                mask |= 1 << bit
                if node.tape is not top:  # recorded under another tape: checked apart, once recording
                    foreign = node
            else:
                srcs.append(a)
                if a.requires_grad:
                    mask |= 1 << bit
        else:
            if a.__class__ not in _PLAIN:
                plain = False
            datas.append(a)
            srcs.append(None)
        bit += 1
    if plain:
        try:
            out = op.forward(*datas, **params) if params else op.forward(*datas)
        except ValueError as err:
            raise _shape_error(op, args, err) from None
        if out.__class__ is not _ndarray:
            out = np.asarray(out)  # ufuncs return NumPy scalars for 0-d inputs
    else:
        out = _forward_any(op, args, datas, params)
    t = _new_tensor(Tensor)
    t._data = out
    t.grad = None
    if _watch_used and active and _state.watched:  # t.watch(x) is rare: checked apart
        mask = _watched_mask(args)
    if not (active and mask):
        t.requires_grad = False
        t._node = None
        return t
    if foreign is not None:
        _foreign_input(op, foreign, active)
    shapes = None
    if op.broadcast:
        oshape = out.shape
        bit = 1
        for d in datas:
            if mask & bit and d.shape != oshape:
                shapes = tuple([getattr(d, "shape", None) for d in datas])
                break
            bit <<= 1
    save = op.save
    rec = (
        op,
        tuple(srcs),
        tuple(datas) if save is True else (op.nosave if save is None else op.saved_values(datas)),
        out if op.save_ans else None,
        shapes,
        params,
        _clock,
        mask,
    )
    node = Node()
    node.tape = top
    t.requires_grad = True
    t._node = node
    for tape in active:
        e = _Entry(node, _entry_died)
        e.rec = rec
        entries = tape._entries
        entries.append(e)
        if len(entries) >= tape._compact_at:
            tape._compact()
        if tape._monitors:
            for monitor in tape._monitors:
                monitor(tape, e, t)
    return t


def _foreign_input(op, node, active):
    """An input recorded under a tape that is not recording now, nor nested with one that is: warn."""
    ref = node.tape
    for t in active:
        r = t._ref
        # The same tape; one nested in an active tape; or an enclosing tape (a nested tape replayed with
        # create_graph after the blocks closed reads values of the tape around it).
        if r is ref or any(o is r for o in ref.outer) or any(o is ref for o in r.outer):
            return
    from .debug import _warn_cross_tape

    _warn_cross_tape(op, ref)


def _watched_mask(args):
    watched = _state.watched
    mask = 0
    for i, a in enumerate(args):
        if isinstance(a, Tensor) and (a._node is not None or a.requires_grad or id(a) in watched):
            mask |= 1 << i
    return mask


def _forward_any(op, args, datas, params):
    """The forward of ``op`` in the library of its inputs (one library per op), for arrays other than NumPy's."""
    backend = common_backend(op.name, datas)
    if backend is NUMPY:
        forward = op.forward
    else:
        forward = backend.forward(op)
        for i, d in enumerate(datas):
            if isinstance(d, np.generic) and not isinstance(args[i], Tensor):
                datas[i] = d.item()  # a NumPy scalar acts as a Python number (in the saved values too)
    try:
        out = forward(*datas, **params)
    except ValueError as err:
        raise _shape_error(op, args, err) from None
    except AttributeError as err:
        if isinstance(err, NotImplementedError):  # a function the library lacks: say which op needed it
            raise NotImplementedError(f"{op.name}: {err}") from None
        raise
    if out.__class__ is not _ndarray and (backend is NUMPY or isinstance(out, np.generic)):
        out = backend.asarray(out)  # a scalar where the library should have given a 0-d array
    return out


def apply_nondiff(op, args, params):
    """Run an op whose result carries no gradient (comparisons, argmax): never recorded."""
    datas = [a._data if isinstance(a, Tensor) else a for a in args]
    if all(d.__class__ in _PLAIN for d in datas):
        try:
            return Tensor._wrap(np.asarray(op.forward(*datas, **params)))
        except ValueError as err:
            raise _shape_error(op, args, err) from None
    return Tensor._wrap(_forward_any(op, args, datas, params))


def _shape_error(op, args, err):
    shapes = ", ".join(
        str(a.shape) if hasattr(a, "shape") else (str(np.shape(a)) if not np.isscalar(a) else "scalar") for a in args
    )
    return ValueError(f"{op.name}: incompatible shapes {shapes}: {err}")


# -- pieces of the replay -----------------------------------------------------------------------------
def _key_of(t: Tensor):
    return t._node if t._node is not None else t


def _seed(target, gradient, what, differentiable=False):
    if not isinstance(target, Tensor):
        raise TypeError(f"{what}(): the target must be a Tensor, got {type(target).__name__}")
    if target._node is None and not target.requires_grad:
        raise TapeError(
            f"{what}() on a tensor that no tape recorded: compute it inside `with tape.record():` "
            "from tensors created with requires_grad=True (or watched with t.watch(x))"
        )
    data = target._data
    if gradient is None:
        if data.size != 1:
            raise ValueError(
                f"{what}() needs a gradient argument for a non-scalar output of shape {data.shape}: "
                f"call .sum() (or .mean()) first, or pass gradient= an array of shape {data.shape}"
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


def _seed_any(data, g):
    # A seed given as a list, a number or another library's array is made an array of the output's library.
    b = backend_of(data) or NUMPY
    gb = backend_of(g)
    if gb is b:
        return g if g.dtype == data.dtype else b.astype(g, data.dtype)
    if gb is not None:
        from .backend import to_numpy

        g = to_numpy(g)
    return b.asarray(g, dtype=data.dtype)


def _consumed_message(state):
    if state == "replayed":
        return (
            "backward() was already called on this tape, which freed it: a non-persistent tape can be "
            "replayed once. Record with tape.record(persistent=True) to call backward more than once"
        )
    return "this tape was released (release() was called); record the computation again"


def _accumulate(grads, key, old, g):
    """Add a further contribution ``g`` to the large cotangent ``old`` stored under ``key``."""
    # Add in place into a buffer nothing else holds (the dict, the caller's local and ours, getrefcount's
    # argument), as PyTorch's AccumulateGrad steals buffers; otherwise add out of place.
    if old.__class__ is np.ndarray and old.base is None and _getrefcount(old) <= 4:
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
    """
    if g.__class__ is not _ndarray:
        return _fresh_any(g, dtype, refs)
    if g.dtype != dtype:
        return g.astype(dtype)
    if g.base is not None or not g.flags.writeable or refs > 1:
        return np.array(g)
    return g


def _fresh_any(g, dtype, refs):
    # Another library's gradient stays in that library (on the GPU for CuPy); copied unless provably private.
    b = backend_of(g)
    if b is None:  # a NumPy scalar
        return np.array(g, dtype=dtype)
    if g.dtype != dtype:
        return b.astype(g, dtype)
    if refs > 1 or getattr(g, "base", True) is not None:  # array API arrays do not say whether they are views
        return b.copy(g)
    return g


def _write_grad(leaf, g):
    if _hooks_on and getattr(leaf, "_hooks", None):
        g = _run_hooks(leaf._hooks, g)
    if leaf.grad is None:
        leaf.grad = g
    else:
        leaf.grad = leaf.grad + g


def _check_versions(op, srcs, vals, ans, node, epoch):
    for i, src in enumerate(srcs):
        if src is not None and vals[i] is not None and getattr(src, "_version", 0) > epoch:
            raise InPlaceModificationError(
                f"{op.name}: input {i} (shape {vals[i].shape}) was changed in place after the tape saved it "
                "for backward. Change it only after backward(), or write x = x + y instead of an in-place update"
            )
    if ans is not None and getattr(node, "_version", 0) > epoch:
        raise InPlaceModificationError(
            f"{op.name}: its output was changed in place after the tape saved it for backward; "
            "write out = out + y instead of an in-place update"
        )


def bump_version(t: Tensor) -> None:
    """Mark ``t`` as changed in place (called by tapegrad's in-place paths, never on the hot path)."""
    global _clock
    _clock += 1
    t._version = _clock
    if t._node is not None:
        t._node._version = _clock


def _as_tensors(g, ans, vals, srcs, node, op):
    wrap = Tensor._wrap_recorded
    if not isinstance(g, Tensor):
        g = Tensor._wrap(g)
    if ans is not None:
        ans = wrap(ans, node)
    vals = tuple(
        wrap(v, s)
        if _is_array(v) and s.__class__ is Node
        else (s if _is_array(v) and isinstance(s, Tensor) and s._data is v else v)
        for v, s in zip(vals, srcs)
    )
    return g, ans, vals


def _is_array(v):
    return v.__class__ is _ndarray or (v is not None and v.__class__ is not Shape and backend_of(v) is not None)


def _nbytes(a):
    n = getattr(a, "nbytes", None)
    if n is None:  # the array API has no nbytes: count from the dtype's bits
        xp = backend_of(a).xp
        if xp.isdtype(a.dtype, "bool"):
            bits = 8
        elif xp.isdtype(a.dtype, "integral"):
            bits = xp.iinfo(a.dtype).bits
        else:
            bits = xp.finfo(a.dtype).bits * (2 if xp.isdtype(a.dtype, "complex floating") else 1)
        n = math.prod(a.shape) * bits // 8
    return n


_hooks_on = False


def _run_hooks(hooks, g):
    for fn in list(hooks.values()):
        r = fn(g)
        if r is not None:
            if getattr(r, "shape", None) != g.shape:
                raise ValueError(
                    f"a gradient hook ({getattr(fn, '__name__', fn)}) returned {type(r).__name__} of shape "
                    f"{getattr(r, 'shape', None)} for a gradient of shape {g.shape}: return None or a replacement "
                    "of the same shape"
                )
            g = r
    return g


def enable_hooks() -> None:
    """Called when the first hook is registered, so replays without hooks never look for them."""
    global _hooks_on
    _hooks_on = True


_TENSOR_RULES = None


def _tensor_rules():
    global _TENSOR_RULES
    if _TENSOR_RULES is None:
        from .ops import tensor_rules

        _TENSOR_RULES = tensor_rules
    return _TENSOR_RULES


def _check_float(x, what):
    data = x._data
    if not (backend_of(data) or NUMPY).is_floating(data.dtype):
        raise TypeError(
            f"{what}: a tensor of dtype {x._data.dtype} cannot carry a gradient; "
            "convert it first, e.g. Tensor(x.numpy().astype(np.float64))"
        )


# -- entry points used by Tensor ------------------------------------------------------------------------
def _backward(t: Tensor, gradient, create_graph: bool, trace=False) -> None:
    node = t._node
    if node is None:
        if not t.requires_grad:
            _seed(t, gradient, "backward")  # raises the "no tape recorded this tensor" error
        seed = _seed(t, gradient, "backward")  # a leaf: its own gradient is the seed
        _write_grad(t, _fresh(seed, t._data.dtype, 2))
        return
    tape = node.tape()
    if tape is None:
        state = node.tape.state
        if state == "recording":
            raise TapeError(
                "the tape that recorded this tensor was dropped before backward(): a tape you do not hold "
                "is kept only until the next record() block on this thread ends. Call backward() before "
                "recording again, or hold it (`with tape.record() as t:`) and call t.backward(loss)"
            )
        raise TapeError(_consumed_message(state))
    tape.backward(t, gradient, create_graph=create_graph, trace=trace)


class _HookHandle:
    __slots__ = ("_hooks", "_key")

    def __init__(self, hooks, key):
        self._hooks, self._key = hooks, key

    def remove(self) -> None:
        """Unregister the hook (idempotent)."""
        self._hooks.pop(self._key, None)


_hook_ids = iter(range(1, sys.maxsize))


def _register_hook(t: Tensor, fn) -> _HookHandle:
    if not callable(fn):
        raise TypeError("register_hook() takes a callable fn(grad) -> grad or None")
    owner = t._node if t._node is not None else t
    hooks = getattr(owner, "hooks" if owner is t._node else "_hooks", None)
    if hooks is None:
        hooks = {}
        if owner is t._node:
            owner.hooks = hooks
        else:
            owner._hooks = hooks
    key = next(_hook_ids)
    hooks[key] = fn
    enable_hooks()
    return _HookHandle(hooks, key)
