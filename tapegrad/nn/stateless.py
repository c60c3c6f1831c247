"""``functional_call``: a module run with parameters (and buffers) passed in, as ``torch.func.functional_call``.

A model written as a ``Module`` keeps its weights as attributes; the transforms and ``tg.compile`` want a
function of its weights. ``functional_call(model, params, args)`` puts the given tensors (or arrays) in place
of the named parameters and buffers for one call, and puts the model's own back afterwards, whatever happens.
So ``tg.grad(lambda p: loss(nn.functional_call(model, p, x)))(params)`` differentiates with respect to a dict
of arrays, and a compiled training step takes the weights as an argument, never as a constant.
"""

from __future__ import annotations

from .._tensor import Tensor
from .module import Module

__all__ = ["functional_call", "parameter_arrays"]


def functional_call(
    module: Module, params: dict, args=(), kwargs=None, *, strict: bool = False, return_buffers: bool = False
):
    """Call ``module(*args, **kwargs)`` with ``params`` (dotted name -> tensor or array, as
    ``named_parameters()`` and ``named_buffers()`` name them) in place of its own; ``args`` is a tuple or
    one argument. ``strict=True`` requires a value for every parameter and buffer.

    ``return_buffers=True`` returns ``(output, buffers)``: the new values of the buffers passed in (a batch
    norm's running statistics in training mode), as tensors, so that a compiled training step can return
    them; the module's own buffers are left as they were.

    >>> import numpy as np, tapegrad as tg
    >>> layer = tg.nn.Linear(2, 1, rng=0)
    >>> params = {"weight": np.array([[1.0, 2.0]]), "bias": np.array([0.5])}
    >>> tg.nn.functional_call(layer, params, tg.Tensor([[1.0, 1.0]]))
    Tensor([[3.5]])
    >>> g = tg.grad(lambda p: tg.nn.functional_call(layer, p, tg.Tensor([[1.0, 1.0]])).sum())(params)
    >>> g["weight"], g["bias"]
    (array([[1., 1.]]), array([1.]))
    """
    if not isinstance(module, Module):
        raise TypeError(f"functional_call: expected a Module, got {type(module).__name__}")
    if not isinstance(params, dict):
        raise TypeError(f"functional_call: params is a dict of dotted names, got {type(params).__name__}")
    slots = _slots(module)
    unknown = [name for name in params if name not in slots]
    if unknown:
        raise KeyError(
            f"functional_call: {type(module).__name__} has no parameter or buffer named {unknown}; "
            f"its names are {list(slots)}"
        )
    if strict:
        missing = [name for name in slots if name not in params]
        if missing:
            raise KeyError(f"functional_call(strict=True): no value for {missing}")
    args = args if isinstance(args, tuple) else (args,)
    saved, installed = [], {}
    try:
        for name, value in params.items():
            owner, attr, index = slots[name]
            value = value if isinstance(value, Tensor) else Tensor(value)
            saved.append((owner, attr, index, _get(owner, attr, index)))
            _set(owner, attr, index, value)
            installed[name] = value
        out = module(*args, **(kwargs or {}))
        if not return_buffers:
            return out
        buffers = {name for name, _ in module.named_buffers()}
        return out, {name: Tensor._wrap(installed[name]._data) for name in params if name in buffers}
    finally:
        for owner, attr, index, old in reversed(saved):
            _set(owner, attr, index, old)


def parameter_arrays(module: Module) -> dict:
    """``{name: array}`` of the module's parameters, the arrays themselves (not copies): what a compiled
    training step that donates its parameters updates in place.

    >>> import tapegrad as tg
    >>> layer = tg.nn.Linear(2, 1, rng=0)
    >>> parameter_arrays(layer)["weight"] is layer.weight.data
    True
    """
    return {name: p.data for name, p in module.named_parameters()}


def _slots(module) -> dict:
    """dotted name -> (owning module, attribute, list index or None), for every parameter and buffer."""
    out = {}
    for path, m in module.named_modules():
        dot = f"{path}." if path else ""
        for name, value in vars(m).items():
            if isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, Tensor) and item.requires_grad:
                        out.setdefault(f"{dot}{name}.{i}", (m, name, i))
            elif isinstance(value, Tensor) and (value.requires_grad or name in vars(m).get("_buffers", ())):
                out.setdefault(dot + name, (m, name, None))
    return out


def _get(owner, attr, index):
    value = getattr(owner, attr)
    return value if index is None else value[index]


def _set(owner, attr, index, value) -> None:
    if index is None:
        setattr(owner, attr, value)
        return
    seq = getattr(owner, attr)
    if isinstance(seq, list):
        seq[index] = value
    else:
        setattr(owner, attr, seq[:index] + (value,) + seq[index + 1 :])
