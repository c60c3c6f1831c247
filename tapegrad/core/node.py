"""The tape's vocabulary: nodes (the identity of a recorded value), tape references, entries and records.

- A :class:`Node` is a bare token: the key a recorded value's cotangent lives under during replay. It holds no
  data and no link to other nodes; ``tape`` is a weak reference to the innermost tape that recorded it.
- An :class:`Entry` is one line of the Wengert list: a weak reference to its output's node, and ``rec`` while
  it is live. When the output node becomes unreachable the entry drops its record at once.
- A *record* is a plain tuple, read by the named positions below (a tuple subclass or a named tuple on the
  hot path measured 5-11% slower per op). :class:`EntryView` gives the same fields names for readers
  (``Tape.entries``).
"""

from __future__ import annotations

import weakref

__all__ = [
    "Node",
    "Outputs",
    "outputs_of",
    "output_node",
    "TapeRef",
    "REPLAYED",
    "Entry",
    "entry_died",
    "EntryView",
    "answers",
    "entry_key",
    "kept_values",
    "OP",
    "SRCS",
    "SAVED",
    "ANS",
    "SHAPES",
    "PARAMS",
    "EPOCH",
    "MASK",
]

# The fields of a record, by position: (op, srcs, saved, ans, shapes, params, epoch, mask).
OP = 0  # the registry's Op
SRCS = 1  # per input: its Node (a recorded value), its Tensor (a leaf), or None (a constant)
SAVED = 2  # per input: what the rule reads (the array, a Shape, a number) or None
ANS = 3  # the output, when the rule reads it, else None
SHAPES = 4  # per input its shape, when some input needing a gradient was broadcast; else None
PARAMS = 5  # the op's keyword parameters (axis, keepdims, ...)
EPOCH = 6  # the version clock's tick when recorded (tapegrad._state)
MASK = 7  # bit i set: input i needs a gradient


class Node:
    """The identity of one recorded value: the key its cotangent lives under during replay.

    ``group``: for an output of an entry with several outputs, that entry's :class:`Outputs` (unset otherwise),
    which each output keeps alive, so the entry lives while any of its outputs does.
    """

    # keep: the tape a create_graph gradient keeps alive; _tangents: the value's tangents in forward mode (by level),
    # here so that the tensors a recorded replay wraps around the saved values carry them too
    __slots__ = ("tape", "hooks", "keep", "group", "_tangents", "__weakref__")


class Outputs:
    """What the entry of an op with several outputs refers to (``Op.outputs``): one :class:`Node` per output,
    each the key its own cotangent lives under, held weakly (``parts``); each output's node holds this one
    (``group``), so the entry dies, and drops its record, when the last of its outputs does. It is never a key
    of the cotangents itself: the replay pops every output's cotangent and gives the op's rules a tuple of them
    (None for an output nobody used).
    """

    __slots__ = ("tape", "parts", "_tangents", "__weakref__")  # _tangents: forward mode's, per output (by level)


def outputs_of(group) -> list:
    """The live output nodes of ``group`` (an :class:`Outputs`), by position (None for one that died)."""
    return [r() for r in group.parts]


def output_node(group, i):
    """The node of output ``i`` of ``group``: the live one, or, where it died, a new one in its place (a
    recorded replay whose rules read that output must connect them to the entry: its cotangent there reaches
    the entry through it)."""
    node = group.parts[i]()
    if node is None:
        node = Node()
        node.tape, node.group = group.tape, group
        parts = list(group.parts)
        parts[i] = weakref.ref(node)
        group.parts = tuple(parts)
    return node


class TapeRef(weakref.ref):
    """The weak reference every node of a tape shares; ``state`` outlives the tape to explain errors.

    ``outer`` holds the references of the tapes that were active when this one was: an op on this tape's
    nodes recorded there is nested use, not a value carried over from an earlier tape. ``failure`` says where
    a replay that raised stopped (state "failed"). ``transform_own``: the tape is a transform's own (see
    :attr:`tapegrad.core.tape.BaseTape.transform_own`), known after the tape is gone.
    """

    __slots__ = ("state", "outer", "failure", "transform_own")


class _Gone:
    pass


REPLAYED = TapeRef(_Gone())  # already dead: what the targets of a consumed replay point at
REPLAYED.state, REPLAYED.outer, REPLAYED.transform_own = "replayed", (), False


class Entry(weakref.ref):
    """One line of the Wengert list: a weak reference to the output node, and ``rec`` while it is live.

    ``info`` is unset unless a monitor (debugging) attached something, e.g. the source line.
    """

    __slots__ = ("rec", "info")


def entry_died(entry) -> None:
    """The output node is unreachable: nothing can send a cotangent to this entry any more."""
    entry.rec = None


def entry_key(node):
    """What the entry that recorded ``node`` refers to: its :class:`Outputs` for an output of an op with several
    outputs, else the node itself (tools match a consumer's inputs to their producers' entries by it)."""
    return getattr(node, "group", node)


def answers(ans) -> tuple:
    """The outputs a record keeps (its ``ANS`` field): ``()``, the one output, or each of several."""
    return () if ans is None else (ans if ans.__class__ is tuple else (ans,))


def kept_values(rec) -> tuple:
    """Everything a record keeps for its rules: the saved inputs' values, then its outputs (:func:`answers`)."""
    return (*rec[SAVED], *answers(rec[ANS]))


class EntryView:
    """One live entry with named fields, as ``Tape.entries`` gives it (read-only: built on read).

    - ``op``: the op's name; ``inputs``: per input its node, leaf tensor or None (a constant);
    - ``saved``: per input what the rule keeps (an array, a shape, a number, or None);
    - ``output``: the saved output or None; ``shapes``: input shapes where they broadcast, or None;
    - ``params``: the op's keyword parameters; ``node``: the output's node (None once it died), for an op
      with several outputs their :class:`Outputs`; ``outputs``: the op's output names (``()``: one output).

    >>> import tapegrad as tg
    >>> x = tg.Tensor([1.0, 2.0], requires_grad=True)
    >>> with tg.record() as t:
    ...     y = tg.exp(x).sum()
    >>> [(e.op, e.output is not None) for e in t.entries]
    [('exp', True), ('sum', False)]
    """

    __slots__ = ("rec", "node", "entry")

    def __init__(self, entry):
        self.entry = entry
        self.rec = entry.rec
        self.node = entry()

    op = property(lambda self: self.rec[OP].name)
    inputs = property(lambda self: self.rec[SRCS])
    saved = property(lambda self: self.rec[SAVED])
    output = property(lambda self: self.rec[ANS])
    shapes = property(lambda self: self.rec[SHAPES])
    params = property(lambda self: self.rec[PARAMS])
    outputs = property(lambda self: self.rec[OP].outputs)

    @property
    def needs_grad(self) -> tuple:
        """Per input, whether it needs a gradient."""
        mask = self.rec[MASK]
        return tuple(bool((mask >> i) & 1) for i in range(len(self.rec[SRCS])))

    def __repr__(self) -> str:
        return f"<entry {self.op}, {len(self.inputs)} inputs>"
