"""The engine's core: nodes and records, recording (``apply``), replay, hooks and the base tape.

Read it in this order: :mod:`.node` (the vocabulary), :mod:`.record` (what one op does), :mod:`.replay`
(the backward pass), :mod:`.grads` (its two ends: seeds, and the hand-over to the leaves), :mod:`.tape` (the
life cycle, the contract, the extension interface, and the only writer of a tape's state), :mod:`.hooks`.
"""

from .hooks import HookHandle, register_hook
from .node import EntryView, Node
from .record import apply, apply_nondiff
from .replay import set_differentiable_rules
from .tape import BaseTape, backward_of, keep_pending, stop_recording

__all__ = [
    "BaseTape",
    "EntryView",
    "HookHandle",
    "Node",
    "apply",
    "apply_nondiff",
    "backward_of",
    "keep_pending",
    "register_hook",
    "set_differentiable_rules",
    "stop_recording",
]
