"""Running a tapegrad module and its PyTorch twin side by side: weights copied through ``state_dict`` (so the
names and shapes must match PyTorch's exactly: ``load_state_dict(strict=True)``), the same inputs, the same
output cotangents; outputs, input gradients and every parameter's gradient compared.

Import torch through ``pytest.importorskip("torch")`` in the test first: this module assumes it is installed.
"""

from __future__ import annotations

import numpy as np

import tapegrad as tg


def copy_into(ours, theirs) -> None:
    """Load our state dict into the torch module; strict, so every name and shape must agree."""
    import torch

    state = {k: torch.from_numpy(np.array(v)) for k, v in ours.state_dict().items() if not k.endswith("_extra_state")}
    theirs.load_state_dict(state, strict=True)


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [] if out is None else [out]


def compare(ours, theirs, *inputs, seed=0, rtol=1e-10, atol=1e-12, grad_inputs=True, call=None, **kwargs):
    """Forward both modules on ``inputs`` (arrays; float ones get gradients), backward a random cotangent through
    every output, and compare outputs, input gradients and parameter gradients. Returns our outputs."""
    import torch

    copy_into(ours, theirs)
    rng = np.random.default_rng(seed)
    floating = [np.asarray(a).dtype.kind == "f" and grad_inputs for a in inputs]
    ts = [torch.tensor(np.asarray(a), requires_grad=f) for a, f in zip(inputs, floating)]
    xs = [tg.Tensor(np.asarray(a), requires_grad=f) for a, f in zip(inputs, floating)]
    call = call or (lambda m, *args: m(*args, **kwargs))
    t_out = _flat(call(theirs, *ts))
    with tg.record():
        out = call(ours, *xs)
        flat = _flat(out)
        vs = [rng.standard_normal(o.shape) for o in flat]
        total = sum((o * v).sum() for o, v in zip(flat, vs))
    total.backward()
    sum((o * torch.tensor(v)).sum() for o, v in zip(t_out, vs)).backward()
    assert len(flat) == len(t_out)
    for i, (a, b) in enumerate(zip(flat, t_out)):
        np.testing.assert_allclose(a.data, b.detach().numpy(), rtol=rtol, atol=atol, err_msg=f"output {i}")
    for i, (x, t) in enumerate(zip(xs, ts)):
        if t.requires_grad:
            np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=rtol, atol=atol, err_msg=f"input {i} grad")
    theirs_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        g = theirs_params[name].grad
        want = np.zeros(p.shape) if g is None else g.numpy()
        got = np.zeros(p.shape) if p.grad is None else p.grad
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{name} grad")
    return out
