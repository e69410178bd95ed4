"""The time steps of the recurrent layers: one direction of one layer over a whole sequence, and
one step of a cell. Modes are torch's: ``RNN_TANH``, ``RNN_RELU``, ``LSTM``, ``GRU``."""

from __future__ import annotations

from typing import Optional

import rustgrad
from rustgrad._rustgrad import Tensor

Weights = tuple[Tensor, Tensor, Optional[Tensor], Optional[Tensor]]


def _input_bias(mode: str, b_ih: Optional[Tensor], b_hh: Optional[Tensor]) -> Optional[Tensor]:
    """The bias added to the input projection: both biases for RNN and LSTM, where they are
    simply summed; only b_ih for GRU, whose b_hn sits inside r ⊙ (W_hn h + b_hn)."""
    if b_ih is None or b_hh is None:
        return None
    return b_ih if mode == "GRU" else b_ih + b_hh


def _project(x: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    """x (..., K) @ weightᵀ + bias, in one product over all leading dims."""
    flat = x.reshape(-1, x.shape[-1])
    out = flat.matmul(weight.t()) if bias is None else rustgrad.addmm(bias, flat, weight.t())
    return out.reshape(*x.shape[:-1], weight.shape[0])


def _step(mode: str, xp: Tensor, h: Tensor, c: Optional[Tensor], w_hh_t: Tensor, b_hh: Optional[Tensor]
          ) -> tuple[Tensor, Optional[Tensor]]:
    """One step from the projected input ``xp`` (N, gates·H) and the state (h, c)."""
    if mode == "GRU":
        hp = h.matmul(w_hh_t) if b_hh is None else rustgrad.addmm(b_hh, h, w_hh_t)
        return _gru_pointwise(xp, hp, h), None
    gates = rustgrad.addmm(xp, h, w_hh_t)
    if mode == "LSTM":
        assert c is not None  # invariant: LSTM steps carry a cell state
        return _lstm_pointwise(gates, c)
    return (gates.tanh() if mode == "RNN_TANH" else gates.relu()), None


def _lstm_pointwise(gates: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    hidden = c.shape[-1]
    act = gates.sigmoid()
    i = act.narrow(1, 0, hidden)
    f = act.narrow(1, hidden, hidden)
    o = act.narrow(1, 3 * hidden, hidden)
    g = gates.narrow(1, 2 * hidden, hidden).tanh()
    c = f * c + i * g
    return o * c.tanh(), c


def _gru_pointwise(xp: Tensor, hp: Tensor, h: Tensor) -> Tensor:
    hidden = h.shape[-1]
    rz = (xp.narrow(1, 0, 2 * hidden) + hp.narrow(1, 0, 2 * hidden)).sigmoid()
    r = rz.narrow(1, 0, hidden)
    z = rz.narrow(1, hidden, hidden)
    n = (xp.narrow(1, 2 * hidden, hidden) + r * hp.narrow(1, 2 * hidden, hidden)).tanh()
    return n + z * (h - n)


def run_direction(mode: str, x: Tensor, weights: Weights, h0: Tensor, c0: Optional[Tensor], reverse: bool
                  ) -> tuple[Tensor, Tensor, Optional[Tensor]]:
    """Runs one direction of one layer over ``x`` (L, N, H_in) from h0 (N, H) (and c0);
    returns the outputs (L, N, H) in time order and the final h (and c)."""
    w_ih, w_hh, b_ih, b_hh = weights
    projected = _project(x, w_ih, _input_bias(mode, b_ih, b_hh)).unbind(0)
    w_hh_t = w_hh.t()
    b_hh_step = b_hh if mode == "GRU" else None
    h, c = h0, c0
    outputs: list[Tensor] = [h0] * len(projected)
    order = range(len(projected) - 1, -1, -1) if reverse else range(len(projected))
    for t in order:
        h, c = _step(mode, projected[t], h, c, w_hh_t, b_hh_step)
        outputs[t] = h
    if not outputs:
        return rustgrad.zeros((0, *h0.shape), dtype=h0.dtype), h, c
    return rustgrad.stack(outputs, 0), h, c


def cell_step(mode: str, input: Tensor, h: Tensor, c: Optional[Tensor], weights: Weights
              ) -> tuple[Tensor, Optional[Tensor]]:
    """One step of a cell from ``input`` (N, H_in) and the state (h, c)."""
    w_ih, w_hh, b_ih, b_hh = weights
    xp = _project(input, w_ih, _input_bias(mode, b_ih, b_hh))
    return _step(mode, xp, h, c, w_hh.t(), b_hh if mode == "GRU" else None)
