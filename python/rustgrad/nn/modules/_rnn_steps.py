"""The time steps of the recurrent layers: one direction of one layer over a whole sequence, and
one step of a cell. Modes are torch's: ``RNN_TANH``, ``RNN_RELU``, ``LSTM``, ``GRU``."""

from __future__ import annotations

from typing import Optional

import rustgrad
from rustgrad._rustgrad import Tensor
from rustgrad.autograd import Function, FunctionCtx
from rustgrad.errors import GradientError

Weights = tuple[Tensor, Tensor, Optional[Tensor], Optional[Tensor]]


class _Steps(Function):
    """``x.unbind(0)`` with one backward for all the slices: the stack of their gradients.
    (``unbind`` through ``select`` gives every slice's gradient as a zero tensor of the whole
    input's shape, which costs O(L²) over a sequence of length L.)"""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor) -> tuple[Tensor, ...]:
        ctx.shape, ctx.dtype = tuple(x.shape), x.dtype
        return tuple(piece.clone() for piece in x.unbind(0))

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Optional[Tensor]) -> Tensor:
        zeros = None
        filled = []
        for g in grads:
            if g is None:
                zeros = rustgrad.zeros(ctx.shape[1:], dtype=ctx.dtype) if zeros is None else zeros
                g = zeros
            filled.append(g)
        return rustgrad.stack(filled, 0)


def steps(x: Tensor) -> tuple[Tensor, ...]:
    """The slices of ``x`` along dim 0, with a gradient that costs one stack."""
    if not x.requires_grad or not rustgrad.is_grad_enabled():
        return x.unbind(0)
    return _Steps.apply(x)


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
    return rustgrad.lerp(n, h, z)  # (1 - z) n + z h


class _LstmLayer(Function):
    """One direction of one LSTM layer over a sequence, from the projected inputs ``xp``
    (L, N, 4H, biases included), h0, c0 (N, H) and ``w_hh`` (4H, H). The forward runs the steps
    without recording them; the backward runs backpropagation through time in closed form:
    per step one product and a handful of elementwise ops, where the recorded composite
    needs about twenty-five tape nodes. Returns (output (L, N, H), h_n, c_n)."""

    @staticmethod
    def forward(ctx: FunctionCtx, xp: Tensor, h0: Tensor, c0: Tensor, w_hh: Tensor, reverse: bool
                ) -> tuple[Tensor, Tensor, Tensor]:
        length, hidden = xp.shape[0], h0.shape[-1]
        w_hh_t = w_hh.t()
        acts: list[Tensor] = [h0] * length  # sigmoid of all four gates (the g block unused)
        cells: list[Tensor] = [c0] * length  # the cell state after each step
        hs: list[Tensor] = [h0] * length
        h, c = h0, c0
        for t in range(length - 1, -1, -1) if reverse else range(length):
            gates = rustgrad.addmm(xp[t], h, w_hh_t)
            a = gates.sigmoid()
            g = gates.narrow(1, 2 * hidden, hidden).tanh()
            c = a.narrow(1, hidden, hidden) * c + a.narrow(1, 0, hidden) * g
            h = a.narrow(1, 3 * hidden, hidden) * c.tanh()
            acts[t] = rustgrad.cat([a.narrow(1, 0, 2 * hidden), g, a.narrow(1, 3 * hidden, hidden)], 1)
            cells[t], hs[t] = c, h
        out = rustgrad.stack(hs, 0)
        ctx.reverse, ctx.hidden = reverse, hidden
        ctx.state = (rustgrad.stack(acts, 0), rustgrad.stack(cells, 0), out, h0, c0, w_hh)
        return out, h, c

    @staticmethod
    def backward(ctx: FunctionCtx, g_out: Optional[Tensor], g_h: Optional[Tensor], g_c: Optional[Tensor]
                 ) -> tuple[Optional[Tensor], ...]:
        if rustgrad.is_grad_enabled():
            raise GradientError("LSTM: differentiating through its backward (create_graph=True) is not supported")
        acts, cells, out, h0, c0, w_hh = ctx.state
        length, hidden, reverse = acts.shape[0], ctx.hidden, ctx.reverse
        # The states each step started from, in time order.
        shift = (lambda seq, first: rustgrad.cat([seq.narrow(0, 1, length - 1), first.unsqueeze(0)], 0)) if reverse \
            else (lambda seq, first: rustgrad.cat([first.unsqueeze(0), seq.narrow(0, 0, length - 1)], 0))
        c_prev, h_prev = shift(cells, c0), shift(out, h0)
        i, f = acts.narrow(2, 0, hidden), acts.narrow(2, hidden, hidden)
        g, o = acts.narrow(2, 2 * hidden, hidden), acts.narrow(2, 3 * hidden, hidden)
        tanh_c = cells.tanh()
        # d gates = [dc, dc, dc, dh] * k, with k the local derivatives of every step at once.
        k = rustgrad.cat([g * i * (1 - i), c_prev * f * (1 - f), i * (1 - g * g), tanh_c * o * (1 - o)], 2)
        dc_from_h = o * (1 - tanh_c * tanh_c)
        dh = g_h if g_h is not None else rustgrad.zeros_like(h0)
        dc = g_c if g_c is not None else rustgrad.zeros_like(c0)
        d_gates: list[Tensor] = [dh] * length
        for t in range(length) if reverse else range(length - 1, -1, -1):
            if g_out is not None:
                dh = dh + g_out[t]
            dc = dc + dh * dc_from_h[t]
            d_gates[t] = rustgrad.cat([dc, dc, dc, dh], 1) * k[t]
            dc = dc * f[t]
            dh = d_gates[t].matmul(w_hh)
        d_xp = rustgrad.stack(d_gates, 0)
        flat = d_xp.reshape(-1, 4 * hidden)
        d_w_hh = flat.t().matmul(h_prev.reshape(-1, hidden))
        return d_xp, dh, dc, d_w_hh, None


def run_direction(mode: str, x: Tensor, weights: Weights, h0: Tensor, c0: Optional[Tensor], reverse: bool
                  ) -> tuple[Tensor, Tensor, Optional[Tensor]]:
    """Runs one direction of one layer over ``x`` (L, N, H_in) from h0 (N, H) (and c0);
    returns the outputs (L, N, H) in time order and the final h (and c)."""
    w_ih, w_hh, b_ih, b_hh = weights
    if mode == "LSTM" and len(x) > 0:
        assert c0 is not None  # invariant: an LSTM layer starts from a cell state
        projected_all = _project(x, w_ih, _input_bias(mode, b_ih, b_hh))
        return _LstmLayer.apply(projected_all, h0, c0, w_hh, reverse)
    projected = steps(_project(x, w_ih, _input_bias(mode, b_ih, b_hh)))
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
