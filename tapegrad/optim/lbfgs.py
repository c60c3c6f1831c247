"""L-BFGS with an optional strong-Wolfe line search, a port of ``torch.optim.LBFGS`` (itself after minFunc).

``step(closure)`` runs up to ``max_iter`` iterations; ``closure()`` re-evaluates the loss and its gradients
(zero the gradients, record, ``backward()``, return the loss). All parameters form one flat vector. Each
iteration finds a direction ``d`` from the last ``history_size`` curvature pairs ``(s, y)`` by the two-loop
recursion, then moves ``t * d``: a fixed ``t = lr`` (the first iteration ever ``lr * min(1, 1 / |g|_1)``), or
the step a strong-Wolfe line search finds. It stops early when the gradient's largest entry is at most
``tolerance_grad``, or when the loss or the step changes by less than ``tolerance_change``.

The state (kept under the first parameter, as PyTorch keeps it) is committed only when ``step`` returns: if
the closure raises, the parameters are put back as they were and the state is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._tensor import Tensor
from .hyperparameters import checked_array, is_number, shown
from .line_search import strong_wolfe
from .optimizer import Optimizer

__all__ = ["LBFGS"]

_STATE_KEYS = ("func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss")


class LBFGS(Optimizer):
    """L-BFGS (one parameter group), PyTorch's algorithm and arguments; ``step`` needs a closure.

    >>> import numpy as np, tapegrad as tg
    >>> w = tg.Tensor([3.0, -2.0], requires_grad=True)
    >>> opt = tg.optim.LBFGS([w], line_search_fn="strong_wolfe")
    >>> def closure():
    ...     opt.zero_grad()
    ...     with tg.record():
    ...         loss = ((w - tg.Tensor([1.0, 2.0])) ** 2).sum()
    ...     loss.backward()
    ...     return loss
    >>> _ = opt.step(closure); w.data.round(6)
    array([1., 2.])
    """

    def __init__(
        self,
        params,
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ):
        if max_eval is None and isinstance(max_iter, int):
            max_eval = max(max_iter * 5 // 4, 1)
        defaults = dict(
            lr=lr,
            max_iter=max_iter,
            max_eval=max_eval,
            tolerance_grad=tolerance_grad,
            tolerance_change=tolerance_change,
            history_size=history_size,
            line_search_fn=line_search_fn,
        )
        super().__init__(params, defaults)

    def add_param_group(self, group: dict) -> None:
        """LBFGS has one group: its parameters form one vector."""
        if self.param_groups:
            raise ValueError("LBFGS does not support parameter groups (there can be only one)")
        super().add_param_group(group)

    @property
    def _flat_params(self) -> list:
        return self.param_groups[0]["params"]

    def _gather_flat_grad(self) -> np.ndarray:
        group = self.param_groups[0]
        return np.concatenate(
            [
                self._grad(p, group).ravel() if p.grad is not None else np.zeros(p.size, p.dtype)
                for p in self._flat_params
            ]
        )

    def _add_grad(self, t: float, d: np.ndarray) -> None:
        offset = 0
        for p in self._flat_params:
            data = p.data
            data += t * d[offset : offset + p.size].reshape(p.shape)
            p.data = data  # bump the version
            offset += p.size

    def _set_params(self, values: list) -> None:
        for p, value in zip(self._flat_params, values):
            data = p.data
            np.copyto(data, value)
            p.data = data

    def step(self, closure: Callable):
        """Run up to ``max_iter`` L-BFGS iterations; returns the loss ``closure()`` gave at the start."""
        if closure is None:
            raise TypeError(
                "LBFGS.step needs a closure that zeroes the gradients, records the loss, "
                "calls backward() and returns the loss"
            )
        for p in self._flat_params:
            if not p.data.flags.writeable:
                raise ValueError(
                    f"LBFGS.step: a parameter of shape {p.shape} has a read-only array; nothing was updated"
                )
        start = [p.data.copy() for p in self._flat_params]
        try:
            loss, state = self._iterate(closure, dict(self.state.get(id(self._flat_params[0]), {})))
        except BaseException:
            self._set_params(start)  # a closure that raised leaves the parameters as they were
            raise
        self.state[id(self._flat_params[0])] = state
        return loss

    def _iterate(self, closure: Callable, state: dict):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if np.abs(flat_grad).max() <= tolerance_grad:
            return orig_loss, state

        d, t, H_diag = state.get("d"), state.get("t"), state.get("H_diag")
        old_dirs, old_stps = list(state.get("old_dirs", [])), list(state.get("old_stps", []))
        ro = list(state.get("ro", []))
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # the direction: steepest descent at first, then the L-BFGS two-loop recursion
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1.0
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = float(y.dot(s))
                if ys > 1e-10:  # keep the pair only where the curvature is positive
                    if len(old_dirs) == history_size:  # forget the oldest pair
                        del old_dirs[0], old_stps[0], ro[0]
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / float(y.dot(y))
                al = [0.0] * len(old_dirs)
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = float(old_stps[i].dot(q)) * ro[i]
                    q = q + (-al[i]) * old_dirs[i]
                d = r = q * H_diag
                for i in range(len(old_dirs)):
                    be_i = float(old_dirs[i].dot(r)) * ro[i]
                    r += (al[i] - be_i) * old_stps[i]

            prev_flat_grad = flat_grad.copy()
            prev_loss = loss

            # the step length
            t = min(1.0, 1.0 / float(np.abs(flat_grad).sum())) * lr if state["n_iter"] == 1 else lr
            gtd = float(flat_grad.dot(d))
            if gtd > -tolerance_change:  # the directional derivative is below tolerance
                break

            ls_func_evals = 0
            if group["line_search_fn"] == "strong_wolfe":
                x_init = [p.data.copy() for p in self._flat_params]

                def obj_func(t, d, x_init=x_init):
                    self._add_grad(t, d)
                    value = float(closure())
                    grad = self._gather_flat_grad()
                    self._set_params(x_init)
                    return value, grad

                loss, flat_grad, t, ls_func_evals = strong_wolfe(
                    obj_func, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals
                )
                self._add_grad(t, d)
                opt_cond = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_grad(t, d)  # a fixed step
                opt_cond = False
                if n_iter != max_iter:  # re-evaluate, except after the last iteration
                    loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if np.abs(d * t).max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break  # no progress

        state.update(d=d, t=float(t), old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=float(H_diag))
        state.update(prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss, state

    def _load_param_state(self, p: Tensor, group: dict, saved: dict, where: str) -> dict:
        if p is not self._flat_params[0]:
            raise ValueError(f"{where}: LBFGS keeps its state under the first parameter only")
        n = sum(q.size for q in self._flat_params)
        dtype = np.result_type(*[q.dtype for q in self._flat_params])
        missing, extra = sorted({"func_evals", "n_iter"} - set(saved)), sorted(set(saved) - set(_STATE_KEYS))
        if missing or extra:
            raise ValueError(f"{where}: the LBFGS state lacks {missing} or has unknown entries {extra}")
        out = {}
        for key, value in saved.items():
            what = f"{where}: '{key}'"
            if key in ("func_evals", "n_iter"):
                if not (isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 0):
                    raise ValueError(f"{what} must be an integer count >= 0, got {shown(value)}")
                out[key] = int(value)
            elif key in ("d", "prev_flat_grad"):
                out[key] = None if value is None else checked_array(value, (n,), dtype, what)
            elif key in ("t", "H_diag", "prev_loss"):
                if not (value is None or is_number(value)):
                    raise ValueError(f"{what} must be a number or None, got {shown(value)}")
                out[key] = None if value is None else float(value)
            elif key == "ro":
                if not (isinstance(value, (list, tuple)) and all(is_number(v) for v in value)):
                    raise ValueError(f"{what} must be a list of numbers")
                out[key] = [float(v) for v in value]
            else:
                if not isinstance(value, (list, tuple)):
                    raise ValueError(f"{what} must be a list of arrays")
                out[key] = [checked_array(v, (n,), dtype, f"{what}[{i}]") for i, v in enumerate(value)]
        if not len(out.get("old_dirs", [])) == len(out.get("old_stps", [])) == len(out.get("ro", [])):
            raise ValueError(f"{where}: 'old_dirs', 'old_stps' and 'ro' must have the same length")
        return out
