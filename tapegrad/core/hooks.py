"""Gradient hooks: ``t.register_hook(fn)`` calls ``fn(grad)`` when the replay reaches ``t``'s gradient.

A hook lives on the tensor's node (a recorded value) or on the tensor itself (a leaf), so it dies with it.
:data:`LIVE` counts the hooks registered and not yet removed nor dead with their tensor: a replay looks for
hooks only while it is non-zero, so a process that once used a hook pays nothing after removing it.
"""

from __future__ import annotations

import itertools
import threading
import weakref

__all__ = ["register_hook", "run_hooks", "Hooks", "HookHandle", "LIVE"]


class _Live:
    """How many hooks are registered, not removed, on tensors still alive: ``LIVE.n``."""

    __slots__ = ("n",)

    def __init__(self):
        self.n = 0


LIVE = _Live()
_lock = threading.Lock()
_ids = itertools.count(1)


class _Count:
    """How many hooks one owner still holds: what its finalizer takes off ``live`` when it dies."""

    __slots__ = ("n",)

    def __init__(self):
        self.n = 0


def _add(count, k):
    with _lock:
        count.n += k
        LIVE.n += k


class Hooks:
    """The hooks of one tensor (``fns``, in registration order) and their count. The count is a separate
    object so that the owner's finalizer can hold it without holding the hooks (which may refer to the owner)."""

    __slots__ = ("fns", "count")

    def __init__(self):
        self.fns = {}
        self.count = _Count()


class HookHandle:
    """What ``register_hook`` returns: ``remove()`` unregisters the hook."""

    __slots__ = ("_hooks", "_key")

    def __init__(self, hooks, key):
        self._hooks, self._key = hooks, key

    def remove(self) -> None:
        """Unregister the hook (idempotent)."""
        if self._hooks.fns.pop(self._key, None) is not None:
            _add(self._hooks.count, -1)


def _owner_dead(count):
    _add(count, -count.n)


def register_hook(t, fn) -> HookHandle:
    """Register ``fn(grad) -> grad or None`` on tensor ``t`` (on its node if a tape recorded it)."""
    if not callable(fn):
        raise TypeError("register_hook() takes a callable fn(grad) -> grad or None")
    node = t._node
    owner = node if node is not None else t
    hooks = getattr(owner, "hooks" if node is not None else "_hooks", None)
    if hooks is None:
        hooks = Hooks()
        if node is not None:
            node.hooks = hooks
        else:
            t._hooks = hooks
        weakref.finalize(owner, _owner_dead, hooks.count)
    key = next(_ids)
    hooks.fns[key] = fn
    _add(hooks.count, 1)
    return HookHandle(hooks, key)


def run_hooks(hooks, g):
    """``g`` after every hook of ``hooks`` saw it (a hook returning non-None replaces it)."""
    for fn in list(hooks.fns.values()):
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
