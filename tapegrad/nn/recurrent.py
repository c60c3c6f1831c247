"""Recurrent layers: ``RNNCell``, ``GRUCell``, ``LSTMCell`` and the multi-layer ``RNN``, ``GRU``, ``LSTM``.

PyTorch's gate order, weight names and shapes (``weight_ih_l0`` of ``(gates * hidden, input)``, ``weight_hh_l0``,
``bias_ih_l0``, ``bias_hh_l0``, ``..._reverse`` for the backward direction), so that a ``state_dict`` copies
over in either direction, and its initialisation (every weight and bias from ``U(-1/sqrt(hidden),
1/sqrt(hidden))``, drawn in parameter order). The gates, per step, with ``x`` the input and ``h`` the state:

    RNN   h' = tanh(W_ih x + b_ih + W_hh h + b_hh)                     (or relu)
    GRU   r, z = sigmoid(...), n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h
    LSTM  i, f, o = sigmoid(...), g = tanh(...), c' = f * c + i * g, h' = o * tanh(c')

The sequence layers compute the input projections of every step in one matrix product per layer and
direction, then run the recurrence step by step; each step's ops save only what their rules read (the
state, the gate activations, ``tanh(c')``).
"""

from __future__ import annotations

import math

import numpy as np

import tapegrad.nn.functional as F
import tapegrad.ops as ops

from .._tensor import Tensor
from .init import generator
from .module import Module

__all__ = ["RNNCell", "GRUCell", "LSTMCell", "RNN", "GRU", "LSTM"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "GRU": 3, "LSTM": 4}


def _recurrent(mode, w_hh, b_hh):
    """The state's weights, transposed once per forward: [(W^T, b)], or for GRU [(W_rz^T, b_rz), (W_n^T, b_n)]
    (the candidate gate's product is kept apart: its rule saves it, and a slice would keep all three alive)."""
    if mode != "GRU":
        return [(ops.transpose(w_hh), b_hh)]
    n = w_hh.shape[1]
    return [
        (ops.transpose(w_hh[: 2 * n]), None if b_hh is None else b_hh[: 2 * n]),
        (ops.transpose(w_hh[2 * n :]), None if b_hh is None else b_hh[2 * n :]),
    ]


def _product(h, weight_and_bias):
    w, b = weight_and_bias
    hw = ops.matmul(h, w)
    return hw if b is None else hw + b


def _step(mode, xw, h, c, hh):
    """One step from the input's projection ``xw = x W_ih^T + b_ih``; returns (h', c') (c' None but for LSTM)."""
    n = h.shape[-1]
    if mode == "RNN_TANH":
        return ops.tanh(xw + _product(h, hh[0])), None
    if mode == "RNN_RELU":
        return ops.relu(xw + _product(h, hh[0])), None
    if mode == "GRU":
        rz = xw[..., : 2 * n] + _product(h, hh[0])
        r, z = ops.sigmoid(rz[..., :n]), ops.sigmoid(rz[..., n:])
        candidate = ops.tanh(xw[..., 2 * n :] + r * _product(h, hh[1]))
        return candidate + z * (h - candidate), None  # (1 - z) * n + z * h
    gates = xw + _product(h, hh[0])
    i, f = ops.sigmoid(gates[..., :n]), ops.sigmoid(gates[..., n : 2 * n])
    g, o = ops.tanh(gates[..., 2 * n : 3 * n]), ops.sigmoid(gates[..., 3 * n :])
    c = f * c + i * g
    return o * ops.tanh(c), c


def _uniform(gen, shape, hidden, dtype):
    bound = 1.0 / math.sqrt(hidden)
    return Tensor(gen.uniform(-bound, bound, shape).astype(dtype), requires_grad=True)


class _Cell(Module):
    _mode = ""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, rng=None, dtype=np.float64):
        super().__init__()
        if input_size < 1 or hidden_size < 1:
            raise ValueError(f"{type(self).__name__}: input_size and hidden_size must be >= 1")
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gen, rows = generator(rng), _GATES[self._mode] * hidden_size
        self.weight_ih = _uniform(gen, (rows, input_size), hidden_size, dtype)
        self.weight_hh = _uniform(gen, (rows, hidden_size), hidden_size, dtype)
        self.bias_ih = _uniform(gen, (rows,), hidden_size, dtype) if bias else None
        self.bias_hh = _uniform(gen, (rows,), hidden_size, dtype) if bias else None

    def _run(self, x, state, c=None):
        name = type(self).__name__
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ValueError(f"{name}: input must be (N, {self.input_size}) or ({self.input_size},), got {x.shape}")
        batch = x.shape[:-1]
        zeros = lambda: Tensor(np.zeros(batch + (self.hidden_size,), dtype=x.dtype))  # noqa: E731
        state = zeros() if state is None else state
        if state.shape != batch + (self.hidden_size,):
            raise ValueError(f"{name}: hidden state must have shape {batch + (self.hidden_size,)}, got {state.shape}")
        if self._mode == "LSTM":
            c = zeros() if c is None else c
        xw = F.linear(x, self.weight_ih, self.bias_ih)
        return _step(self._mode, xw, state, c, _recurrent(self._mode, self.weight_hh, self.bias_hh))

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, bias={self.bias}"


class RNNCell(_Cell):
    """One Elman RNN step ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (``nonlinearity="relu"``: relu).

    >>> import numpy as np, tapegrad as tg
    >>> tg.nn.RNNCell(3, 5, rng=0)(tg.Tensor(np.ones((2, 3)))).shape
    (2, 5)
    """

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", rng=None, dtype=np.float64):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self._mode, self.nonlinearity = f"RNN_{nonlinearity.upper()}", nonlinearity
        super().__init__(input_size, hidden_size, bias, rng, dtype)

    def forward(self, x: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._run(x, hx)[0]


class GRUCell(_Cell):
    """One GRU step (gates r, z, n in PyTorch's order).

    >>> import numpy as np, tapegrad as tg
    >>> tg.nn.GRUCell(3, 5, rng=0)(tg.Tensor(np.ones((2, 3)))).shape
    (2, 5)
    """

    _mode = "GRU"

    def forward(self, x: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._run(x, hx)[0]


class LSTMCell(_Cell):
    """One LSTM step (gates i, f, g, o in PyTorch's order): ``(h', c') = cell(x, (h, c))``.

    >>> import numpy as np, tapegrad as tg
    >>> h, c = tg.nn.LSTMCell(3, 5, rng=0)(tg.Tensor(np.ones((2, 3))))
    >>> h.shape, c.shape
    ((2, 5), (2, 5))
    """

    _mode = "LSTM"

    def forward(self, x: Tensor, hx: tuple | None = None) -> tuple[Tensor, Tensor]:
        h, c = (None, None) if hx is None else hx
        return self._run(x, h, c)


class _RNNBase(Module):
    _mode = ""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, rng=None,
                 dtype=np.float64):  # fmt: skip
        super().__init__()
        name = type(self).__name__
        if input_size < 1 or hidden_size < 1 or num_layers < 1:
            raise ValueError(f"{name}: input_size, hidden_size and num_layers must be >= 1")
        if not 0 <= dropout < 1:
            raise ValueError(f"{name}: dropout must be in [0, 1), got {dropout}")
        self.input_size, self.hidden_size, self.num_layers, self.bias = input_size, hidden_size, num_layers, bias
        self.batch_first, self.dropout, self.bidirectional = batch_first, dropout, bidirectional
        gen, rows = generator(rng), _GATES[self._mode] * hidden_size
        directions = 2 if bidirectional else 1
        for layer in range(num_layers):
            width = input_size if layer == 0 else hidden_size * directions
            for suffix in ("", "_reverse")[:directions]:
                setattr(self, f"weight_ih_l{layer}{suffix}", _uniform(gen, (rows, width), hidden_size, dtype))
                setattr(self, f"weight_hh_l{layer}{suffix}", _uniform(gen, (rows, hidden_size), hidden_size, dtype))
                if bias:
                    setattr(self, f"bias_ih_l{layer}{suffix}", _uniform(gen, (rows,), hidden_size, dtype))
                    setattr(self, f"bias_hh_l{layer}{suffix}", _uniform(gen, (rows,), hidden_size, dtype))
        self._dropout_rng = generator(gen.integers(2**63)) if dropout else None

    def get_extra_state(self):
        return None if self._dropout_rng is None else self._dropout_rng.bit_generator.state

    def set_extra_state(self, state) -> None:
        self._dropout_rng.bit_generator.state = state

    def _params(self, layer, suffix):
        get = lambda kind: getattr(self, f"{kind}_l{layer}{suffix}", None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def forward(self, input: Tensor, hx=None):
        name, directions = type(self).__name__, 2 if self.bidirectional else 1
        if input.ndim not in (2, 3) or input.shape[-1] != self.input_size:
            raise ValueError(
                f"{name}: input must be (L, N, {self.input_size}), batch first or unbatched, got {input.shape}"
            )
        unbatched = input.ndim == 2
        x = ops.expand_dims(input, 1) if unbatched else (ops.swapaxes(input, 0, 1) if self.batch_first else input)
        length, batch = x.shape[:2]
        states = self._initial_states(hx, batch, unbatched, x.dtype)
        last_h, last_c = [], []
        for layer in range(self.num_layers):
            if layer and self.dropout and self.training:
                x = F.dropout(x, self.dropout, self._dropout_rng)
            outputs = []
            for d, suffix in enumerate(("", "_reverse")[:directions]):
                w_ih, w_hh, b_ih, b_hh = self._params(layer, suffix)
                h, c = (s[layer * directions + d] if s is not None else None for s in states)
                xw = F.linear(x, w_ih, b_ih)  # every step's input projection in one product
                hh, seq = _recurrent(self._mode, w_hh, b_hh), [None] * length
                for t in range(length - 1, -1, -1) if suffix else range(length):
                    h, c = _step(self._mode, xw[t], h, c, hh)
                    seq[t] = h
                outputs.append(ops.stack(seq, axis=0))
                last_h.append(h)
                last_c.append(c)
            x = outputs[0] if directions == 1 else ops.concatenate(outputs, axis=-1)
        out = ops.squeeze(x, 1) if unbatched else (ops.swapaxes(x, 0, 1) if self.batch_first else x)
        final = [ops.stack(last_h, axis=0)] + ([ops.stack(last_c, axis=0)] if self._mode == "LSTM" else [])
        if unbatched:
            final = [ops.squeeze(s, 1) for s in final]
        return out, (tuple(final) if self._mode == "LSTM" else final[0])

    def _initial_states(self, hx, batch, unbatched, dtype):
        """(h_0, c_0) as (layers * directions, N, hidden) tensors; zeros where not given (c_0 None but for LSTM)."""
        name, lstm = type(self).__name__, self._mode == "LSTM"
        shape = (self.num_layers * (2 if self.bidirectional else 1), batch, self.hidden_size)
        if lstm and hx is not None and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise ValueError(f"{name}: hx must be a pair (h_0, c_0)")
        given = (hx if lstm else (hx, None)) if hx is not None else (None, None)
        states = []
        for s in given[: 2 if lstm else 1]:
            if s is None:
                states.append(Tensor(np.zeros(shape, dtype=dtype)))
                continue
            s = ops.expand_dims(s, 1) if unbatched else s
            if s.shape != shape:
                want = (shape[0], shape[2]) if unbatched else shape
                raise ValueError(f"{name}: initial state must have shape {want}, got {s.shape}")
            states.append(s)
        return states[0], (states[1] if lstm else None)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(_RNNBase):
    """A multi-layer Elman RNN: ``output, h_n = rnn(input, h_0)`` with ``input`` ``(L, N, H_in)`` (``(N, L, H_in)``
    with ``batch_first``, or unbatched ``(L, H_in)``), ``output`` ``(L, N, D * H)``, ``h_n`` ``(D * layers, N, H)``.

    >>> import numpy as np, tapegrad as tg
    >>> out, h = tg.nn.RNN(3, 4, num_layers=2, rng=0)(tg.Tensor(np.ones((5, 2, 3))))
    >>> out.shape, h.shape
    ((5, 2, 4), (2, 2, 4))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, rng=None, dtype=np.float64):  # fmt: skip
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self._mode, self.nonlinearity = f"RNN_{nonlinearity.upper()}", nonlinearity
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, rng, dtype)


class GRU(_RNNBase):
    """A multi-layer GRU, with ``RNN``'s shapes: ``output, h_n = gru(input, h_0)``.

    >>> import numpy as np, tapegrad as tg
    >>> out, h = tg.nn.GRU(3, 4, batch_first=True, bidirectional=True, rng=0)(tg.Tensor(np.ones((2, 5, 3))))
    >>> out.shape, h.shape
    ((2, 5, 8), (2, 2, 4))
    """

    _mode = "GRU"


class LSTM(_RNNBase):
    """A multi-layer LSTM: ``output, (h_n, c_n) = lstm(input, (h_0, c_0))``, with ``RNN``'s shapes.

    >>> import numpy as np, tapegrad as tg
    >>> out, (h, c) = tg.nn.LSTM(3, 4, rng=0)(tg.Tensor(np.ones((5, 3))))
    >>> out.shape, h.shape, c.shape
    ((5, 4), (1, 4), (1, 4))
    """

    _mode = "LSTM"

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size: int = 0, rng=None, dtype=np.float64):  # fmt: skip
        if proj_size:
            raise NotImplementedError("LSTM: proj_size (projected hidden states) is not supported")
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, rng, dtype)
