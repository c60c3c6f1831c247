"""What every transform does around ``f``: a tape of its own, released on the way out, and ``f`` run on it.

``run`` flattens the arguments being differentiated, passes each leaf into ``f`` through an op of the
transform's tape, and returns what ``f`` returned; ``finish`` turns results into arrays unless an outer
tape records. Private: the public functions are in :mod:`tapegrad.transforms`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._batched import Batched
from ._state import BATCH, FORWARD, is_recording, transform_argument
from ._tensor import Tensor
from ._tree import tree_flatten, tree_unflatten
from .backend import is_floating, is_lazy
from .core import keep_pending
from .forward import has_tangent
from .registry import defop
from .tape import Tape, record

# A differentiated argument that an outer tape recorded enters f through this op, so that it is also a value
# of the transform's own tape (and stays connected to the outer one). Any other argument enters as a new leaf.
functional_input = defop(
    "functional_input",
    lambda x: x.view(),
    lambda xp, g, ans, x: g,
    register=False,
    view=True,
    linear=True,
    batch="leading",
)


def keeps_tensors() -> bool:
    """Whether results stay tensors: an outer tape records, or a forward-mode level (their tangents) or a vmap
    level (their batch) is open."""
    return is_recording() or bool(FORWARD.get()) or bool(BATCH.get())


class Scope:
    """A tape of a transform's own: released on the way out, whatever happened, keeping the context's pending tape."""

    def __init__(self, persistent: bool = False):
        self.tape = record(persistent=persistent)
        self.tape.transform_own = True
        self._pending = keep_pending()

    def __enter__(self) -> Tape:
        self._pending.__enter__()
        return self.tape

    def __exit__(self, *exc) -> None:
        self.tape.release()
        self._pending.__exit__()

    def keep(self) -> Tape:
        """Leave the scope without releasing the tape (``vjp_fn`` holds it): the context gets its pending tape back."""
        self._pending.__exit__()
        return self.tape


def _is_index(i) -> bool:
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def parse_argnums(argnums, what, name="argnums", empty=False):
    """``(positions, many)`` from an ``argnums``-like argument: an int, or a tuple of ints (``many``; empty
    only where ``empty``). Bools are refused: ``argnums=True`` is a mistake, never argument 1.

    >>> parse_argnums(1, "grad"), parse_argnums((0, -1), "grad")
    (((1,), False), ((0, -1), True))
    """
    if _is_index(argnums):
        return (int(argnums),), False
    if isinstance(argnums, Sequence) and not isinstance(argnums, str) and (argnums or empty):
        if all(_is_index(i) for i in argnums):
            return tuple(int(i) for i in argnums), True
    kind = "a tuple of ints" if empty else "a non-empty tuple of ints"
    raise TypeError(f"{what}: {name} must be an int or {kind}, got {argnums!r}")


def argnums_of(argnums, argnum, what):
    """``argnums``, or autograd's spelling ``argnum=`` where that was given instead (both: ``TypeError``).

    >>> argnums_of(0, 1, "grad"), argnums_of((0, 1), None, "grad")
    (1, (0, 1))
    """
    if argnum is None:
        return argnums
    if argnums != 0:
        raise TypeError(f"{what}: pass argnums= or autograd's argnum=, not both (got {argnums!r} and {argnum!r})")
    return argnum


def check_argnums(nums, n, what, name="argnums", takes=None) -> tuple:
    """``nums`` as positions in ``range(n)`` (negative ones count from the end): one out of range, or two that
    name the same argument (``(0, 0)``, or ``(0, -1)`` of a one-argument function), raise ``ValueError``.

    >>> check_argnums((0, -1), 3, "grad")
    (0, 2)
    """
    takes = takes or f"a call with {n} positional argument{'' if n == 1 else 's'}"
    out = []
    for i in nums:
        if not -n <= i < n:
            raise ValueError(f"{what}: {name} {i} is out of range for {takes}")
        out.append(i % n)
    if len(set(out)) != len(out):
        twice = next(j for j in out if out.count(j) > 1)
        raise ValueError(
            f"{what}: {name}={tuple(nums)} names argument {twice} twice, for {takes}; name each argument once"
        )
    return tuple(out)


def _as_tensor(leaf, what, nested):
    """What ``f`` gets for one differentiated leaf: a value of the transform's tape. Inside an outer recording
    (``nested``), a tensor the outer tapes can differentiate goes through ``functional_input``, so it stays connected to
    them; anything else becomes a new leaf on the same data, one per occurrence, so that the same tensor passed
    twice gets two gradients and the caller's tensor is left as it was."""
    if isinstance(leaf, Tensor):
        if not is_floating(leaf._data):
            raise TypeError(
                f"{what}: cannot differentiate with respect to a tensor of dtype {leaf.dtype}; "
                "pass floating-point data, e.g. x.astype(np.float64)"
            )
        if (
            (nested and (leaf._node is not None or leaf.requires_grad))
            or has_tangent(leaf)
            or isinstance(leaf, Batched)
        ):
            t = functional_input(leaf)  # its tangents (forward mode) come along
            if t._node is None:
                t.requires_grad = True  # a leaf of this tape that only forward mode knew
                transform_argument(t)
            return t
        data = leaf._data
    else:
        data = np.asarray(leaf)
        if data.dtype.kind not in "fc":
            data = data.astype(np.float64)
    t = Tensor._wrap(data)
    t.requires_grad = True
    for lv in BATCH.get():  # a leaf of f's own, not of its closure (which vmap refuses under a tape outside it)
        lv.own.add(id(t))
    return transform_argument(t)  # f's own value: x += y inside f rebinds it, as autograd's programs expect


def run(t, f, args, kwargs, nums, what):
    """Run ``f`` on ``t`` with the arguments at ``nums`` differentiable; return its result, their specs and leaves."""
    args = list(args)
    check_argnums(nums, len(args), what)
    specs, flat = [], []
    for i in nums:
        leaves, spec = tree_flatten(args[i], f"{what}: argument {i}")
        specs.append((spec, len(leaves)))
        flat.extend(leaves)
    nested = keeps_tensors()
    with t:
        xs = [_as_tensor(leaf, what, nested) for leaf in flat]
        k = 0
        for i, (spec, n) in zip(nums, specs):
            args[i] = tree_unflatten(spec, xs[k : k + n])
            k += n
        res = f(*args, **kwargs)
    return res, specs, xs


def per_argument(specs, flat, many):
    trees, k = [], 0
    for spec, n in specs:
        trees.append(tree_unflatten(spec, flat[k : k + n]))
        k += n
    return tuple(trees) if many else trees[0]


def split_aux(res, has_aux, what):
    if not has_aux:
        return res, None
    if not (isinstance(res, (tuple, list)) and len(res) == 2):
        raise TypeError(f"{what}: has_aux=True needs f to return a pair (output, aux), got {type(res).__name__}")
    return res[0], res[1]


def connected(o) -> bool:
    # Everything computed from a differentiated argument was recorded (each one is a node of the tape), and an
    # argument returned as it is, is a leaf that needs a gradient.
    return isinstance(o, Tensor) and (o._node is not None or o.requires_grad)


def finish(tree, recording):
    """Results leave as arrays, or as (recorded) tensors while an outer tape records."""
    if recording:
        return tree
    leaves, spec = tree_flatten(tree, "result")
    # NumPy gives 0-d results as scalars (np.float64); return arrays throughout. Lazy (Dask) arrays stay
    # lazy: converting them would compute each on its own, one pass over the data per result (tg.compute).
    datas = [x._data if isinstance(x, Tensor) else x for x in leaves]
    return tree_unflatten(spec, [a if is_lazy(a) else np.asarray(a) for a in datas])


def aux_out(aux, recording):
    """``aux`` with its tensors as arrays (outside a recording); anything else in it is left as it is."""
    if recording:
        return aux
    if isinstance(aux, Tensor):
        return aux._data
    if isinstance(aux, dict):
        return type(aux)((k, aux_out(v, False)) for k, v in aux.items())
    if isinstance(aux, tuple) and hasattr(aux, "_fields"):
        return type(aux)(*[aux_out(v, False) for v in aux])
    if isinstance(aux, (list, tuple)):
        return type(aux)(aux_out(v, False) for v in aux)
    return aux
