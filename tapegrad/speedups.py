"""The engine's optional compiled hot path: ``TAPEGRAD_SPEEDUPS=1`` runs the recording of one- and two-input ops
and the plain backward walk in C (``tapegrad/core/native.c``).

tapegrad is pure Python, and the pure path is the default and the reference: the C functions do, step for
step, what :func:`tapegrad.core.record.function_of`'s fast paths and :func:`tapegrad.core.replay._walk_plain`
do, and call back into them for everything but the common case. The extension is built when the package is
installed on a machine with a C compiler (``pip install -e .`` or ``pip install .``); where it could not be
built, or a checkout's ``native.c`` changed since its last install, asking for it warns and the pure path runs.
The choice is made once, on import, before any op is made (:mod:`tapegrad.registry` imports this module): it
fills the core's slots for it (``record.set_native``, ``replay.set_native``), and the core never imports it.

    TAPEGRAD_SPEEDUPS=1 python examples/linear_regression.py   # with the compiled hot path
    python -c "import tapegrad.speedups as s; print(s.ENABLED)"

>>> import tapegrad.speedups as speedups
>>> speedups.ENABLED == (speedups.ASKED and speedups.built() is not None and not speedups.stale(speedups.built()))
True
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import warnings

from .core import record, replay

__all__ = ["ENABLED", "ASKED", "speedups", "built", "stale"]

ASKED = os.environ.get("TAPEGRAD_SPEEDUPS", "").strip() not in ("", "0")

try:
    import tapegrad.core.native as native
except ImportError:  # not built: there was no C compiler when the package was installed
    native = None


def built():
    """The compiled module, or None where it was not built (no C compiler when the package was installed)."""
    return native


def stale(module) -> bool:
    """Whether ``module`` was built from another ``native.c`` than the one in this checkout (it changed since the
    last install); an installed wheel has no source beside it and is never stale."""
    source = pathlib.Path(record.__file__).with_name("native.c")
    if not source.exists():
        return False
    return getattr(module, "SOURCE", None) != hashlib.sha256(source.read_bytes()).hexdigest()[:16]


def _load():
    if not ASKED:
        return None
    module = built()
    if module is None or stale(module):
        why = "was not built" if module is None else "was built from an older tapegrad/core/native.c"
        warnings.warn(
            f"TAPEGRAD_SPEEDUPS=1, but tapegrad's compiled hot path (tapegrad.core.native) {why}: the pure-Python "
            "engine runs. Reinstall with a C compiler present (python -m pip install -e .) to build it, or unset "
            "TAPEGRAD_SPEEDUPS",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    return module


speedups = _load()  # the module the engine calls, or None: the pure path
ENABLED = speedups is not None
if ENABLED:
    record.set_native(speedups)
    replay.set_native(speedups)
