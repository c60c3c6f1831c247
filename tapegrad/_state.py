"""What is recording, per context, and what memory was changed in place: the state every layer above reads.

- **Per context.** The active tapes (innermost last), the tensors they watch, the most recently closed
  tape and the tapes replayed inside their own still open block are :mod:`contextvars` variables: each thread
  starts with none, and each asyncio task works on its own copy, so two tasks interleaving on one thread never
  record onto each other's tapes (a task created inside a ``record()`` block starts with that block's tapes, as
  its ops belong to the block).
- **The version clock.** Every in-place change tapegrad makes to an array (``x.data -= ...``, ``x += y``,
  optimizer steps) calls :func:`mark_modified`, which ticks a global clock and notes the tick against the
  array's *memory root* (the array a view was taken from, followed to the end). An entry remembers the clock
  when it was recorded; :func:`modified_since` then tells whether a value it saved, or any view of the same
  memory, was changed after that. Views share versions because they share memory.

>>> import numpy as np
>>> a = np.ones(3); epoch = clock()
>>> mark_modified(a)
>>> modified_since(a[1:], epoch), modified_since(np.ones(3), epoch)
(True, False)
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from contextvars import ContextVar

import numpy as np

from .backend import memory_root
from .errors import TapeEscapeError, TapeEscapeWarning, user_frame, warn_once

__all__ = [
    "ACTIVE",
    "WATCHED",
    "PENDING",
    "ENDED_INSIDE",
    "ended_inside",
    "is_recording",
    "current",
    "live_tapes",
    "CLOCK",
    "clock",
    "mark_modified",
    "modified_since",
    "version_of",
    "warn_escape",
    "numpy_conversion",
    "TRACING",
    "TRACER",
    "FORWARD",
    "BATCH",
    "PROBE",
    "tracer",
    "is_traced",
    "concrete",
]

_NUMPY = os.path.dirname(np.__file__) + os.sep
_NUMPY_TESTING = os.path.join(os.path.dirname(np.__file__), "testing") + os.sep

ACTIVE: ContextVar[tuple] = ContextVar("tapegrad_active", default=())  # the active tapes, innermost last
WATCHED: ContextVar[frozenset] = ContextVar("tapegrad_watched", default=frozenset())  # ids watched by them
PENDING: ContextVar = ContextVar("tapegrad_pending", default=None)  # kept so that loss.backward() works after a block

# Tapes replayed inside their own record() block while the block is still open (so an error about a later op
# in the block can say why it was not recorded).
ENDED_INSIDE: ContextVar[tuple] = ContextVar("tapegrad_ended_inside", default=())

live_tapes: weakref.WeakSet = weakref.WeakSet()  # every tape not yet collected (tapegrad.debug.live_tapes)


def is_recording() -> bool:
    """Whether ops in this context are being recorded right now.

    >>> import tapegrad as tg
    >>> with tg.record():
    ...     print(is_recording())
    True
    """
    return bool(ACTIVE.get())


def ended_inside() -> bool:
    """Whether a record() block still open in this context had its tape replayed inside it.

    >>> ended_inside()
    False
    """
    return bool(ENDED_INSIDE.get())


def current():
    """The innermost tape recording in this context, or None.

    >>> current() is None
    True
    """
    active = ACTIVE.get()
    return active[-1] if active else None


# -- tracing (tapegrad.compile) ----------------------------------------------------------------------------
class _Tracing:
    """``TRACING.n``: the traces and profiles in progress, and forward mode's and vmap's levels, in every context
    (the check ops make before anything else): while it is 0, an op pays one attribute read for the tracer and
    the probe together."""

    __slots__ = ("n", "_lock")

    def __init__(self):
        self.n = 0
        self._lock = threading.Lock()

    def add(self, k: int) -> None:
        """Count ``k`` more traces, profiles or forward-mode and vmap levels in progress (negative: fewer),
        atomically across threads."""
        with self._lock:
            self.n += k


TRACING = _Tracing()
TRACER: ContextVar = ContextVar("tapegrad_tracer", default=None)  # this context's tracer while it traces
# Forward mode (tapegrad.forward): the levels whose tangents ops propagate in this context, innermost last. While a
# level is open TRACING.n counts it, so that every op reaches apply's report (tangents are computed there).
FORWARD: ContextVar[tuple] = ContextVar("tapegrad_forward", default=())
# vmap (tapegrad.batching): the batch levels open in this context, outermost first; TRACING.n counts them too.
BATCH: ContextVar[tuple] = ContextVar("tapegrad_batch", default=())
# vmap under a tape: the closures being taken over while its function runs, innermost last. Each has
# ``take(args)``, which every op's inputs pass through first (a tensor of f's closure becomes the call's input).
CLOSED: ContextVar[tuple] = ContextVar("tapegrad_closed", default=())
# This context's op probe while it is profiled (tapegrad.profiler): ``probe.start(op)`` before an op's forward,
# ``probe.stop(op, datas, params, out)`` after it; it counts in TRACING.n while it is set.
PROBE: ContextVar = ContextVar("tapegrad_probe", default=None)


def tracer():
    """The tracer recording this context's ops for :func:`tapegrad.compile`, or None.

    >>> tracer() is None
    True
    """
    return TRACER.get() if TRACING.n else None


def is_traced(x) -> bool:
    """Whether ``x`` (a tensor or an array) is a value of a function that ``tg.compile`` is tracing in this
    context: code that must not read its values (a layer's running statistics, a loss's targets) computes
    with ops instead. The tracer is asked (``tracer.traces(array)``); untraced code pays one attribute read.

    >>> import numpy as np, tapegrad as tg
    >>> is_traced(np.ones(2))
    False
    >>> tg.compile(lambda x: x * is_traced(x))(np.ones(2))
    array([1., 1.])
    """
    t = tracer()
    return t is not None and t.traces(getattr(x, "_data", x))


_ARGUMENTS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id -> a leaf a transform made for f


def transform_argument(t):
    """Note that the leaf ``t`` is one a transform (``tg.grad``...) made of ``f``'s argument, and return it: inside
    ``f``, ``x += y`` rebinds such a leaf (autograd's idiom), where it refuses a leaf the user made.

    >>> import tapegrad as tg
    >>> is_transform_argument(transform_argument(tg.Tensor(1.0, requires_grad=True)))
    True
    """
    _ARGUMENTS[id(t)] = t
    return t


def is_transform_argument(t) -> bool:
    """Whether ``t`` is a leaf a transform made of its function's argument (:func:`transform_argument`).

    >>> import tapegrad as tg
    >>> is_transform_argument(tg.Tensor(1.0, requires_grad=True))
    False
    """
    return _ARGUMENTS.get(id(t)) is t


def concrete(array, what: str) -> None:
    """Python is about to read the values of ``array`` (``bool(t)``, ``t.item()``, ``t.data``...): while a
    function is traced, the tracer refuses it for a traced value, whose data differs from call to call."""
    t = TRACER.get()
    if t is not None:
        t.concrete(array, what)


# -- the version clock ---------------------------------------------------------------------------------------
class _Clock:
    """The version clock: ``CLOCK.tick`` counts in-place changes (read once per recorded op)."""

    __slots__ = ("tick",)

    def __init__(self):
        self.tick = 0


CLOCK = _Clock()
_modified: dict = {}  # id(memory root) -> (tick of its last in-place change, weak reference to the root or None)
_lock = threading.Lock()


def clock() -> int:
    """The current tick: entries recorded now remember it."""
    return CLOCK.tick


def _forget(key, ref):
    with _lock:
        if _modified.get(key, (0, None))[1] is ref:
            del _modified[key]


def mark_modified(array) -> None:
    """Note that ``array``'s memory was just changed in place (every view of the same memory with it)."""
    if TRACING.n:
        t = TRACER.get()
        if t is not None:
            t.modified(array)
    root = memory_root(array)
    key = id(root)
    with _lock:
        CLOCK.tick += 1
        ref = _modified.get(key, (0, None))[1]
        if ref is None or ref() is not root:  # the root's first change (a parameter's, every step, is not)
            try:
                ref = weakref.ref(root, lambda r, key=key: _forget(key, r))
            except TypeError:  # a buffer owner without weak references (bytes): matched by identity alone
                ref = None
        _modified[key] = (CLOCK.tick, ref)


def version_of(array) -> int:
    """The tick of the last in-place change of ``array``'s memory, 0 if it never changed."""
    root = memory_root(array)
    last, ref = _modified.get(id(root), (0, None))
    return last if ref is None or ref() is root else 0


def modified_since(array, epoch: int) -> bool:
    """Whether ``array``'s memory (through any view of it) was changed in place after tick ``epoch``."""
    return version_of(array) > epoch


def warn_escape(how: str, frame=None, message: str | None = None, tangent: bool = False) -> None:
    """A recorded tensor's value leaves the tape (``np.asarray(t)``, ``float(t)``, ``t.item()``, ``t.numpy()``,
    ``Tensor(t)``) while a tape records: warn at the user's line (``frame``, by default the caller's caller)
    that gradients stop there. Inside a function given to a transform (a transform's own tape records, or the
    value carries a forward-mode ``tangent``) the derivative through it would be wrong: raise
    :class:`~tapegrad.errors.TapeEscapeError` there instead. tapegrad's own code steps outside on purpose and is not
    warned; NumPy's Python code that only reads values (``np.testing``) warns at the user's line."""
    active = ACTIVE.get()
    if not (active or tangent):
        return
    f = start = frame if frame is not None else sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_NUMPY):  # np.testing on a tensor: the caller's line
        f = f.f_back
    if f is None or user_frame(f) is not f:
        return
    if f is start and (tangent or any(tape.transform_own for tape in active)):
        raise TapeEscapeError(
            f"{how} inside a function given to a transform (tg.grad, tg.jacrev, tg.jvp, tg.jacfwd, ...) turns a "
            "value it differentiates into a constant, so the derivative through it would be wrong. Compute that "
            "step with tapegrad's ops (tapegrad.numpy, tapegrad.scipy) to keep it differentiated, or take t.data "
            "where a constant is meant on purpose",
            how,
        )
    if not active:
        return
    warn_once(
        message
        or f"{how} on a tensor being recorded gives a plain value, off the tape: gradients do not flow through "
        "what is computed from it. Use tapegrad ops to stay on the tape, or `x.data` to step outside on purpose",
        TapeEscapeWarning,
        f,
    )


def numpy_conversion(frame, tangent: bool = False) -> None:
    """NumPy converts a tensor being recorded to an array (``Tensor.__array__``, called from ``frame``).

    From NumPy's own Python code (``np.sum([t, t])``, ``np.r_[t, t]``, ``np.linalg.norm([t[0], t[1]])``: NumPy did
    not hand the call to tapegrad, as the tensors sit inside a list, a tuple or an index expression) the
    function's result would be a constant with no gradient: raise ``TypeError``, naming the function. From the
    user's line (``np.asarray(t)``, the documented way off the tape, which NumPy's C functions cannot be told
    apart from) warn there, or raise inside a transform's function, as :func:`warn_escape` does. ``np.testing``'s
    checks only read values: they warn."""
    if not (ACTIVE.get() or tangent):
        return
    scipy = _scipy_dir()
    if scipy is not None and frame.f_code.co_filename.startswith(scipy):
        name = _scipy_function(frame, scipy)
        raise TypeError(
            f"{name} converted a tensor being recorded to a NumPy array (SciPy's Python functions do not hand the "
            "call to tapegrad), so its result would be a constant with no gradient. Use tapegrad.scipy's function "
            f"of the same name ({name.replace('scipy.', 'tapegrad.scipy.', 1)}, where it has one), or tapegrad's "
            "ops; to use the value as a constant on purpose, pass t.data"
        )
    if frame.f_code.co_filename.startswith(_NUMPY) and not frame.f_code.co_filename.startswith(_NUMPY_TESTING):
        name = _numpy_function(frame)
        raise TypeError(
            f"{name} converted a tensor being recorded to a NumPy array (NumPy did not hand the call to tapegrad: "
            "the tensor sits inside a list, a tuple or an index expression, or the function does not dispatch), "
            "so its result would be a constant with no gradient. Use tapegrad.numpy's function of the same name "
            "(import tapegrad.numpy as np), which records tensors inside lists, or build the array on the tape "
            "first (np.stack([...]), tg.stack); to use the value as a constant on purpose, pass t.data"
        )
    warn_escape("np.asarray(t) (or np.array, np.float32(t), ...)", frame, tangent=tangent)


def _scipy_dir() -> str | None:
    """SciPy's directory once SciPy is imported (its frames exist only then), else None."""
    scipy = sys.modules.get("scipy")
    path = getattr(scipy, "__file__", None)
    return os.path.dirname(path) + os.sep if path else None


def _scipy_function(frame, scipy: str) -> str:
    """The public name of the SciPy function whose Python code runs at ``frame`` (the outermost of SciPy's frames
    from there): ``scipy.special.logsumexp``, ``scipy.stats.norm.logpdf`` (a distribution's method)."""
    while frame.f_back is not None and frame.f_back.f_code.co_filename.startswith(scipy):
        frame = frame.f_back
    owner = frame.f_locals.get("self")
    dist = getattr(owner, "dist", owner)  # a frozen distribution: norm(loc=...).logpdf
    if type(dist).__module__.startswith("scipy.stats") and isinstance(getattr(dist, "name", None), str):
        return f"scipy.stats.{dist.name}.{frame.f_code.co_name}"
    public = []  # scipy.special._logsumexp -> scipy.special
    for part in frame.f_globals.get("__name__", "scipy").split(".")[1:]:
        if part.startswith("_"):
            break
        public.append(part)
    return ".".join(["scipy", *public, frame.f_code.co_name])


def _numpy_function(frame) -> str:
    """The public name of the NumPy function whose Python code runs at ``frame`` (the outermost one of NumPy's
    frames from there): ``np.sum``, ``np.linalg.norm``, ``np.r_``."""
    while frame.f_back is not None and frame.f_back.f_code.co_filename.startswith(_NUMPY):
        frame = frame.f_back
    public = []  # numpy._core.fromnumeric -> np, numpy.linalg._linalg -> np.linalg, numpy.lib._*_impl -> np
    for part in frame.f_globals.get("__name__", "numpy").split(".")[1:]:
        if part.startswith("_"):
            break
        public.append(part)
    prefix = ".".join(["np"] + (public if public != ["lib"] else []))
    code = frame.f_code
    qualname = getattr(code, "co_qualname", code.co_name)
    if "." in qualname:  # a method: NumPy's index tricks are objects (np.r_[...] is RClass.__getitem__)
        owner = frame.f_locals.get("self")
        named = [n for n in ("r_", "c_", "s_", "index_exp", "mgrid", "ogrid") if getattr(np, n, None) is owner]
        if named:
            return f"np.{named[0]}"
    return f"{prefix}.{qualname}"
