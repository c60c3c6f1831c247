"""The node-graph design, written honestly, as the reference tapegrad is measured against.

This is how micrograd, early autograd engines and most teaching code work: every tensor produced by an op
holds its parent tensors and a closure that maps the upstream gradient to one gradient per parent.
``backward()`` sorts the graph by a recursive depth-first search from the output, sweeps it in reverse
keeping every node's gradient in a dict until the sweep ends, then writes ``.grad`` on every node that
requires a gradient. Nothing is released afterwards: the graph lives as long as any tensor of it does.

It is not a strawman: a result that needs no gradient keeps no parents and no closure, closures skip
parents that need no gradient, closures capture arrays (never their own tensor, so there are no reference
cycles and plain reference counting frees a graph once nothing holds it), and broadcasting is undone in
one place.

>>> import numpy as np
>>> from benchmarks.nodegraph import Tensor, relu
>>> w = Tensor(np.array([1.0, -2.0]), requires_grad=True)
>>> loss = relu(w * 3.0).sum()
>>> loss.backward(); w.grad
array([3., 0.])
"""

from __future__ import annotations

import numpy as np

__all__ = ["Tensor", "relu", "exp", "log", "tanh", "sum", "mean", "log_softmax", "matmul"]


class Tensor:
    """An array with ``.data``, ``.grad``, ``.requires_grad``, its parents and a backward closure.

    ``_parents`` is a tuple, not a set, so that it lines up with the closure's gradients (one per parent).
    """

    __slots__ = ("data", "grad", "requires_grad", "_parents", "_backward", "__weakref__")

    def __init__(self, data, requires_grad: bool = False):
        self.data = data.data if isinstance(data, Tensor) else np.asarray(data)
        self.grad = None
        self.requires_grad = bool(requires_grad)
        self._parents = ()
        self._backward = None

    @property
    def shape(self) -> tuple:
        return self.data.shape

    def __repr__(self) -> str:
        return f"nodegraph.Tensor({self.data!r}, requires_grad={self.requires_grad})"

    def item(self):
        return self.data.item()

    def numpy(self) -> np.ndarray:
        return self.data

    # -- operators --------------------------------------------------------------------------------
    def __add__(self, other):
        return _binary(self, other, np.add, lambda g, x, y, ans: (g, g))

    def __radd__(self, other):
        return _binary(other, self, np.add, lambda g, x, y, ans: (g, g))

    def __sub__(self, other):
        return _binary(self, other, np.subtract, lambda g, x, y, ans: (g, -g))

    def __rsub__(self, other):
        return _binary(other, self, np.subtract, lambda g, x, y, ans: (g, -g))

    def __mul__(self, other):
        return _binary(self, other, np.multiply, lambda g, x, y, ans: (g * y, g * x))

    def __rmul__(self, other):
        return _binary(other, self, np.multiply, lambda g, x, y, ans: (g * y, g * x))

    def __truediv__(self, other):
        return _binary(self, other, np.divide, lambda g, x, y, ans: (g / y, -g * ans / y))

    def __rtruediv__(self, other):
        return _binary(other, self, np.divide, lambda g, x, y, ans: (g / y, -g * ans / y))

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __neg__(self):
        return _unary(self, np.negative(self.data), lambda g: -g)

    def __pow__(self, k):
        if isinstance(k, Tensor):
            raise TypeError("nodegraph: only a constant exponent is supported")
        x = self.data
        return _unary(self, x**k, lambda g: g * k * x ** (k - 1))

    def relu(self):
        return relu(self)

    def exp(self):
        return exp(self)

    def log(self):
        return log(self)

    def tanh(self):
        return tanh(self)

    def sum(self, axis=None, keepdims=False):
        return sum(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        return mean(self, axis=axis, keepdims=keepdims)

    # -- backward ---------------------------------------------------------------------------------
    def backward(self, gradient=None) -> None:
        """Sort the graph by DFS from here, sweep it in reverse, then write ``.grad`` on every node needing one."""
        topo: list = []
        _build(self, topo, set())
        grads = {id(self): np.ones_like(self.data) if gradient is None else np.asarray(gradient)}
        for t in reversed(topo):
            g = grads.get(id(t))
            if g is None or t._backward is None:
                continue
            for p, gp in zip(t._parents, t._backward(g)):
                if gp is None:
                    continue
                gp = _unbroadcast(gp, p.data.shape)
                old = grads.get(id(p))
                grads[id(p)] = gp if old is None else old + gp
        # Every gradient was kept until the sweep ended; now every node that requires one gets it.
        for t in topo:
            if t.requires_grad and id(t) in grads:
                g = grads[id(t)]
                t.grad = g if t.grad is None else t.grad + g


def _build(t, topo, visited) -> None:
    # Recursive depth-first search; a module function, not a nested closure: a closure that calls itself is a
    # reference cycle, which would keep the whole graph alive until the cyclic garbage collector runs.
    if id(t) not in visited:
        visited.add(id(t))
        for p in t._parents:
            _build(p, topo, visited)
        topo.append(t)


def _tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor(x)


def _unbroadcast(g, shape):
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    return np.sum(g, axis=axes, keepdims=True).reshape(shape)


def _result(data, parents, rule) -> Tensor:
    out = Tensor(data)
    if any(p.requires_grad for p in parents):
        out.requires_grad = True
        out._parents = parents
        out._backward = rule
    return out


def _binary(a, b, fn, vjp) -> Tensor:
    a, b = _tensor(a), _tensor(b)
    x, y = a.data, b.data
    ans = fn(x, y)
    need_x, need_y = a.requires_grad, b.requires_grad

    def rule(g):
        gx, gy = vjp(g, x, y, ans)
        return (gx if need_x else None, gy if need_y else None)

    return _result(ans, (a, b), rule)


def _unary(a, ans, vjp) -> Tensor:
    return _result(ans, (a,), lambda g: (vjp(g),))


def matmul(a, b) -> Tensor:
    """``a @ b`` for 2-D operands (and a 1-D right operand)."""
    a, b = _tensor(a), _tensor(b)
    x, y = a.data, b.data
    need_x, need_y = a.requires_grad, b.requires_grad

    def rule(g):
        if y.ndim == 1:
            return (np.outer(g, y) if need_x else None, x.T @ g if need_y else None)
        return (g @ y.T if need_x else None, x.T @ g if need_y else None)

    return _result(x @ y, (a, b), rule)


def relu(a) -> Tensor:
    """max(a, 0)."""
    a = _tensor(a)
    ans = np.maximum(a.data, 0)
    return _unary(a, ans, lambda g: np.where(ans > 0, g, 0))


def exp(a) -> Tensor:
    """e ** a."""
    a = _tensor(a)
    ans = np.exp(a.data)
    return _unary(a, ans, lambda g: g * ans)


def log(a) -> Tensor:
    """Natural logarithm."""
    a = _tensor(a)
    x = a.data
    return _unary(a, np.log(x), lambda g: g / x)


def tanh(a) -> Tensor:
    """Hyperbolic tangent."""
    a = _tensor(a)
    ans = np.tanh(a.data)
    return _unary(a, ans, lambda g: g * (1 - ans * ans))


def _kept(g, shape, axis, keepdims):
    if keepdims or axis is None:
        return np.reshape(g, (1,) * len(shape)) if axis is None else g
    axes = (axis,) if isinstance(axis, int) else axis
    return np.expand_dims(g, tuple(a % len(shape) for a in axes))


def sum(a, axis=None, keepdims=False) -> Tensor:
    """Sum over ``axis`` (None: all)."""
    a = _tensor(a)
    shape = a.data.shape
    return _unary(
        a,
        np.sum(a.data, axis=axis, keepdims=keepdims),
        lambda g: np.broadcast_to(_kept(g, shape, axis, keepdims), shape),
    )


def mean(a, axis=None, keepdims=False) -> Tensor:
    """Mean over ``axis`` (None: all)."""
    a = _tensor(a)
    shape = a.data.shape
    ans = np.mean(a.data, axis=axis, keepdims=keepdims)
    n = a.data.size // max(ans.size, 1)
    return _unary(a, ans, lambda g: np.broadcast_to(_kept(g, shape, axis, keepdims) / n, shape))


def log_softmax(a, axis=-1) -> Tensor:
    """a - logsumexp(a) along ``axis``, computed stably."""
    a = _tensor(a)
    x = a.data
    m = np.max(x, axis=axis, keepdims=True)
    ans = x - (np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m)
    return _unary(a, ans, lambda g: g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True))


if __name__ == "__main__":  # a part of the benchmarks, not one: say which one to run
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
    from benchmarks import cli

    sys.exit(
        cli.library_main(
            __doc__,
            "benchmarks/nodegraph.py",
            "python -m benchmarks.memory or python -m benchmarks.speed (they measure this engine)",
        )
    )
