"""Every exception and warning tapegrad raises, and the few helpers their messages share.

This is the ground floor of the package: it imports nothing from tapegrad, so any module may raise these.

>>> import tapegrad as tg
>>> issubclass(tg.InPlaceModificationError, tg.TapeError)
True
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = [
    "TapeError",
    "InPlaceModificationError",
    "TapeBudgetError",
    "AnomalyError",
    "GradcheckError",
    "CheckpointError",
    "TracingError",
    "BatchedValueError",
    "TapeEscapeError",
    "NestedTensorError",
    "TapeLeakWarning",
    "TapeEscapeWarning",
    "numpy_rule_error",
    "warn_once",
    "user_frame",
    "fmt_bytes",
]


class TapeError(RuntimeError):
    """A tape was used in a way that cannot give a correct gradient."""


class InPlaceModificationError(TapeError):
    """A value a recorded op saved for its backward rule was changed in place before the replay."""


class TapeBudgetError(TapeError):
    """Recording one more op would make the tape keep more than its ``max_saved_bytes``.

    Attributes: ``op`` (the op's name), ``budget``, ``saved_bytes`` (what the tape keeps without that op),
    ``op_bytes`` (what that op would have added), ``entries`` (live entries) and ``largest``
    (``(op name, bytes)`` of the biggest entries, largest first).

    >>> import numpy as np, tapegrad as tg
    >>> x = tg.Tensor(np.ones(1000), requires_grad=True)
    >>> with tg.record(max_saved_bytes=10_000) as t:
    ...     y = tg.exp(x)                # saves its output: 8,000 bytes
    ...     try:
    ...         z = tg.exp(y)            # 8,000 more would cross 10,000
    ...     except tg.TapeBudgetError as err:
    ...         print(err.op, err.saved_bytes, err.op_bytes, err.entries)
    exp 8000 8000 1
    >>> len(t)   # the op that crossed the budget was not recorded
    1
    """

    def __init__(self, message, *, op, budget, saved_bytes, op_bytes, entries, largest):
        super().__init__(message)
        self.op = op
        self.budget = budget
        self.saved_bytes = saved_bytes
        self.op_bytes = op_bytes
        self.entries = entries
        self.largest = largest


class AnomalyError(FloatingPointError):
    """A recorded op produced, or its rule returned, NaN or infinity. ``op``, ``phase`` ("forward" or
    "backward"), ``index`` (the entry, as ``print(t)`` numbers it), ``filename`` and ``lineno`` say where."""

    def __init__(self, message, op, phase, index, filename=None, lineno=None):
        super().__init__(message)
        self.op, self.phase, self.index, self.filename, self.lineno = op, phase, index, filename, lineno


class GradcheckError(AssertionError):
    """Reverse-mode and finite-difference gradients disagree."""


class CheckpointError(ValueError):
    """A file is not a readable tapegrad checkpoint (truncated, corrupt, or written by something else).

    >>> import os, tempfile, tapegrad as tg
    >>> path = os.path.join(tempfile.mkdtemp(), "bad.npz")
    >>> with open(path, "wb") as f:
    ...     _ = f.write(b"not a checkpoint")
    >>> try:
    ...     tg.load(path)
    ... except tg.CheckpointError as err:
    ...     print("refused:", "not a checkpoint" in str(err))
    refused: True
    """


class TracingError(TypeError):
    """A function traced by ``tg.compile`` does what a compiled program cannot replay: Python reads a traced
    value (``bool(t)``, ``float(t)``, ``t.item()``, ``t.data``, a boolean mask's data-dependent shape), or it
    changes a traced value in place. The message names the line.

    >>> import numpy as np, tapegrad as tg
    >>> f = tg.compile(lambda x: x * 2 if x.sum() > 0 else -x)
    >>> try:
    ...     f(np.ones(2))
    ... except tg.TracingError as err:
    ...     print(str(err).split(" (")[0])
    bool(t) of a traced value
    """


class TapeEscapeError(TapeError, TypeError):
    """Inside a function given to a transform (``tg.grad``, ``tg.jvp``...), Python asked for the value of a tensor
    being differentiated (``float(t)``, ``np.asarray(t)``, ``t.item()``, ``Tensor(t)``): what is computed from
    it would be a constant, and the derivative wrong. A ``TypeError`` too, as HIPS autograd's and JAX's are for
    the same read. ``what`` is the read (``"float(t)"``)."""

    def __init__(self, message, what=""):
        super().__init__(message)
        self.what = what


class BatchedValueError(TypeError):
    """Python asked ``tg.vmap`` for the value of a batched tensor (``np.asarray(t)``, ``t.item()``, ``bool(t)``):
    inside ``vmap`` a value is every example's at once, so ``f`` must compute with tapegrad's ops. ``what`` is
    the read (``"np.asarray(t)"``)."""

    def __init__(self, message, what=""):
        super().__init__(message)
        self.what = what


class NestedTensorError(TypeError):
    """An op was given a list or tuple holding tensors (``tg.exp([t0, t1])``), which NumPy would turn into a
    constant. Raised before the op records anything; ``tapegrad.numpy`` stacks such lists and calls again."""


class TapeLeakWarning(UserWarning):
    """A pattern that keeps recorded values alive for nothing, or cuts a gradient without saying so."""


class TapeEscapeWarning(UserWarning):
    """A tensor being recorded was turned into a raw NumPy array: the gradient stops there."""


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_REGISTRY: dict = {}  # warnings' once-per-line registry for a line tapegrad names itself (no frame of it)


def numpy_rule_error(name: str, what: str, where: str) -> TapeError:
    """The error for a rule that computes with NumPy where it must use ``xp`` (so nothing it does is recorded):
    ``what`` it did, ``where`` (a recorded replay, forward mode).

    >>> str(numpy_rule_error("bad_sin", "returned a ndarray, not a tensor,", "on a recorded replay"))[:52]
    'bad_sin: its rule returned a ndarray, not a tensor, '
    """
    return TapeError(
        f"{name}: its rule {what} {where}: it computes with NumPy on arrays (np.cos(x), x.data) instead of xp "
        "(xp.cos(x)), so it is not recorded and every higher derivative through it would be wrong. Write the rule "
        "with xp's functions"
    )


def user_frame(frame):
    """The first frame outside tapegrad's own modules, walking outwards from ``frame``.

    >>> import sys
    >>> user_frame(sys._getframe()) is sys._getframe()
    True
    """
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
    return frame


def warn_once(message: str, category: type, frame=None, filename=None, lineno=None) -> None:
    """Warn at the user's line (``frame``, or the first frame outside tapegrad), as ``warnings.warn`` with a
    stacklevel would: once per line under the default filter, through the line's module's registry, so that
    ``warnings.simplefilter("error")``, ``"always"`` or ``pytest.warns`` set later still see every one."""
    registry = _REGISTRY
    if filename is None:
        f = user_frame(frame if frame is not None else sys._getframe(1))
        filename, lineno, module = (
            (f.f_code.co_filename, f.f_lineno, f.f_globals.get("__name__")) if f else ("?", 0, None)
        )
        if f is not None:
            registry = f.f_globals.setdefault("__warningregistry__", {})
    else:
        module = None
    # module=None would silence the warning: name the file's module as warnings.warn does
    module = module or os.path.splitext(os.path.basename(filename))[0]
    warnings.warn_explicit(message, category, filename, lineno, module=module, registry=registry)


def fmt_bytes(n: int) -> str:
    """Bytes in binary units: ``96 B``, ``1.5 KiB``, ``3.0 MiB``.

    >>> fmt_bytes(96), fmt_bytes(1536)
    ('96 B', '1.5 KiB')
    """
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # unreachable
