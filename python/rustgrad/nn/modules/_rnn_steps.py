"""The time steps of the recurrent layers: one direction of one layer over a whole sequence, and
one step of a cell. Modes are torch's: ``RNN_TANH``, ``RNN_RELU``, ``LSTM``, ``GRU``."""

from __future__ import annotations

from typing import Optional

import rustgrad
from rustgrad._rustgrad import Tensor
from rustgrad.autograd import Function, FunctionCtx, grad, is_grad_enabled, no_grad

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
    return rustgrad.lerp(n, h, z)  # (1 - z) n + z h


def _previous(seq: Tensor, first: Tensor, reverse: bool) -> Tensor:
    """The states each step started from, in time order: ``seq`` (L, N, H) holds the state after
    each step, ``first`` the state before the first step run (the last one when ``reverse``)."""
    length = seq.shape[0]
    if reverse:
        return rustgrad.cat([seq.narrow(0, 1, length - 1), first.unsqueeze(0)], 0)
    return rustgrad.cat([first.unsqueeze(0), seq.narrow(0, 0, length - 1)], 0)


def _time_order(length: int, reverse: bool) -> range:
    return range(length - 1, -1, -1) if reverse else range(length)


# Each layer below is one direction of one layer over a whole sequence, from the projected
# inputs ``xp`` (L, N, gates·H; input biases included) and the initial state. The forward runs
# the steps without recording them; the backward is backpropagation through time in closed
# form, with the local derivatives of all steps computed at once, so each step costs one
# product and a few elementwise ops (the recorded composite needs 15 to 25 tape nodes a step).
# That closed form reads the forward's values without their history, so a backward that is
# recorded (create_graph=True) replays the steps as recorded ops instead and differentiates
# them (``_recorded_backward``): its gradients can be differentiated again, to any order.


def _replay(mode: str, xp: Tensor, h0: Tensor, c0: Optional[Tensor], w_hh: Tensor, b_hh: Optional[Tensor],
            reverse: bool) -> list[Tensor]:
    """The layer's outputs (output, h_n, and c_n for LSTM) computed again with recorded ops."""
    w_hh_t = w_hh.t()
    hs: list[Tensor] = [h0] * xp.shape[0]
    h, c = h0, c0
    for t in _time_order(xp.shape[0], reverse):
        h, c = _step(mode, xp[t], h, c, w_hh_t, b_hh)
        hs[t] = h
    outputs = [rustgrad.stack(hs, 0), h]
    if c is not None:
        outputs.append(c)
    return outputs


def _recorded_backward(mode: str, inputs: tuple[Optional[Tensor], ...], reverse: bool,
                       grads: tuple[Optional[Tensor], ...]) -> Optional[list[Optional[Tensor]]]:
    """With create_graph=True: the gradients of (xp, h0, c0, w_hh, b_hh) from the replayed steps,
    recorded so they are differentiable; None when the backward is not recorded."""
    wanted = [t is not None and t.requires_grad for t in inputs]
    if not is_grad_enabled() or not any(wanted):
        return None
    xp, h0, c0, w_hh, b_hh = inputs
    assert xp is not None and h0 is not None and w_hh is not None  # invariant: the layers always pass them
    pairs = [(out, g) for out, g in zip(_replay(mode, xp, h0, c0, w_hh, b_hh, reverse), grads) if g is not None]
    found = iter(grad([out for out, _ in pairs], [t for t, w in zip(inputs, wanted) if w],
                      [g for _, g in pairs], create_graph=True, allow_unused=True))
    return [next(found) if w else None for w in wanted]


class _ElmanLayer(Function):
    """h_t = act(xp_t + h_{t-1} W_hhᵀ), act tanh or relu. Returns (output (L, N, H), h_n)."""

    @staticmethod
    def forward(ctx: FunctionCtx, xp: Tensor, h0: Tensor, w_hh: Tensor, relu: bool, reverse: bool
                ) -> tuple[Tensor, Tensor]:
        w_hh_t = w_hh.t()
        hs: list[Tensor] = [h0] * xp.shape[0]
        h = h0
        for t in _time_order(xp.shape[0], reverse):
            pre = rustgrad.addmm(xp[t], h, w_hh_t)
            h = pre.relu() if relu else pre.tanh()
            hs[t] = h
        out = rustgrad.stack(hs, 0)
        ctx.save_for_backward(xp, h0, w_hh)
        ctx.state = (out, h0, w_hh, relu, reverse)
        return out, h

    @staticmethod
    def backward(ctx: FunctionCtx, g_out: Optional[Tensor], g_h: Optional[Tensor]) -> tuple[Optional[Tensor], ...]:
        relu, reverse = ctx.state[3], ctx.state[4]
        if is_grad_enabled():
            xp, h0, w_hh = ctx.saved_tensors
            mode = "RNN_RELU" if relu else "RNN_TANH"
            recorded = _recorded_backward(mode, (xp, h0, None, w_hh, None), reverse, (g_out, g_h))
            if recorded is not None:
                return recorded[0], recorded[1], recorded[3], None, None
        with no_grad():
            return _ElmanLayer._closed_form(ctx, g_out, g_h)

    @staticmethod
    def _closed_form(ctx: FunctionCtx, g_out: Optional[Tensor], g_h: Optional[Tensor]) -> tuple[Optional[Tensor], ...]:
        out, h0, w_hh, relu, reverse = ctx.state
        deriv = (out > 0).to(out.dtype) if relu else 1 - out * out
        dh = g_h if g_h is not None else rustgrad.zeros_like(h0)
        d_pre: list[Tensor] = [dh] * out.shape[0]
        for t in reversed(_time_order(out.shape[0], reverse)):
            if g_out is not None:
                dh = dh + g_out[t]
            d_pre[t] = dh * deriv[t]
            dh = d_pre[t].matmul(w_hh)
        d_xp = rustgrad.stack(d_pre, 0)
        hidden = h0.shape[-1]
        d_w_hh = d_xp.reshape(-1, hidden).t().matmul(_previous(out, h0, reverse).reshape(-1, hidden))
        return d_xp, dh, d_w_hh, None, None


class _LstmLayer(Function):
    """Gates (i, f, g, o): c_t = σ(f) c_{t-1} + σ(i) tanh(g), h_t = σ(o) tanh(c_t).
    Returns (output (L, N, H), h_n, c_n)."""

    @staticmethod
    def forward(ctx: FunctionCtx, xp: Tensor, h0: Tensor, c0: Tensor, w_hh: Tensor, reverse: bool
                ) -> tuple[Tensor, Tensor, Tensor]:
        length, hidden = xp.shape[0], h0.shape[-1]
        w_hh_t = w_hh.t()
        acts: list[Tensor] = [h0] * length  # σ of all four gates (the g block unused)
        gs: list[Tensor] = [h0] * length  # tanh(g)
        cells: list[Tensor] = [c0] * length  # the cell state after each step
        hs: list[Tensor] = [h0] * length
        h, c = h0, c0
        for t in _time_order(length, reverse):
            gates = rustgrad.addmm(xp[t], h, w_hh_t)
            a = gates.sigmoid()
            g = gates.narrow(1, 2 * hidden, hidden).tanh()
            c = a.narrow(1, hidden, hidden) * c + a.narrow(1, 0, hidden) * g
            h = a.narrow(1, 3 * hidden, hidden) * c.tanh()
            acts[t], gs[t], cells[t], hs[t] = a, g, c, h
        out = rustgrad.stack(hs, 0)
        ctx.save_for_backward(xp, h0, c0, w_hh)
        ctx.state = (rustgrad.stack(acts, 0), rustgrad.stack(gs, 0), rustgrad.stack(cells, 0), out, h0, c0, w_hh,
                     reverse)
        return out, h, c

    @staticmethod
    def backward(ctx: FunctionCtx, g_out: Optional[Tensor], g_h: Optional[Tensor], g_c: Optional[Tensor]
                 ) -> tuple[Optional[Tensor], ...]:
        if is_grad_enabled():
            xp, h0, c0, w_hh = ctx.saved_tensors
            recorded = _recorded_backward("LSTM", (xp, h0, c0, w_hh, None), ctx.state[-1], (g_out, g_h, g_c))
            if recorded is not None:
                return recorded[0], recorded[1], recorded[2], recorded[3], None
        with no_grad():
            return _LstmLayer._closed_form(ctx, g_out, g_h, g_c)

    @staticmethod
    def _closed_form(ctx: FunctionCtx, g_out: Optional[Tensor], g_h: Optional[Tensor], g_c: Optional[Tensor]
                     ) -> tuple[Optional[Tensor], ...]:
        acts, g, cells, out, h0, c0, w_hh, reverse = ctx.state
        length, hidden = acts.shape[0], h0.shape[-1]
        i, f, o = acts.narrow(2, 0, hidden), acts.narrow(2, hidden, hidden), acts.narrow(2, 3 * hidden, hidden)
        tanh_c = cells.tanh()
        c_prev = _previous(cells, c0, reverse)
        # d gates = [dc, dc, dc, dh] * k, k holding the local derivatives of every step.
        k = rustgrad.cat([g * i * (1 - i), c_prev * f * (1 - f), i * (1 - g * g), tanh_c * o * (1 - o)], 2)
        dc_from_h = o * (1 - tanh_c * tanh_c)
        dh = g_h if g_h is not None else rustgrad.zeros_like(h0)
        dc = g_c if g_c is not None else rustgrad.zeros_like(c0)
        d_gates: list[Tensor] = [dh] * length
        for t in reversed(_time_order(length, reverse)):
            if g_out is not None:
                dh = dh + g_out[t]
            dc = dc + dh * dc_from_h[t]
            d_gates[t] = rustgrad.cat([dc, dc, dc, dh], 1) * k[t]
            dc = dc * f[t]
            dh = d_gates[t].matmul(w_hh)
        d_xp = rustgrad.stack(d_gates, 0)
        h_prev = _previous(out, h0, reverse)
        d_w_hh = d_xp.reshape(-1, 4 * hidden).t().matmul(h_prev.reshape(-1, hidden))
        return d_xp, dh, dc, d_w_hh, None


class _GruLayer(Function):
    """Gates (r, z, n): r, z = σ(xp_rz + h W_rzᵀ + b_rz), n = tanh(xp_n + r (h W_nᵀ + b_hn)),
    h_t = (1 - z) n + z h_{t-1}. Returns (output (L, N, H), h_n)."""

    @staticmethod
    def forward(ctx: FunctionCtx, xp: Tensor, h0: Tensor, w_hh: Tensor, b_hh: Optional[Tensor], reverse: bool
                ) -> tuple[Tensor, Tensor]:
        length, hidden = xp.shape[0], h0.shape[-1]
        w_hh_t = w_hh.t()
        gates: list[Tensor] = [h0] * length  # r, z, n
        hns: list[Tensor] = [h0] * length  # h W_nᵀ + b_hn
        hs: list[Tensor] = [h0] * length
        h = h0
        for t in _time_order(length, reverse):
            hp = h.matmul(w_hh_t) if b_hh is None else rustgrad.addmm(b_hh, h, w_hh_t)
            x_t = xp[t]
            rz = (x_t.narrow(1, 0, 2 * hidden) + hp.narrow(1, 0, 2 * hidden)).sigmoid()
            hn = hp.narrow(1, 2 * hidden, hidden)
            n = (x_t.narrow(1, 2 * hidden, hidden) + rz.narrow(1, 0, hidden) * hn).tanh()
            h = rustgrad.lerp(n, h, rz.narrow(1, hidden, hidden))
            gates[t], hns[t], hs[t] = rustgrad.cat([rz, n], 1), hn, h
        out = rustgrad.stack(hs, 0)
        ctx.save_for_backward(xp, h0, w_hh, b_hh)
        ctx.state = (rustgrad.stack(gates, 0), rustgrad.stack(hns, 0), out, h0, w_hh, b_hh is not None, reverse)
        return out, h

    @staticmethod
    def backward(ctx: FunctionCtx, g_out: Optional[Tensor], g_h: Optional[Tensor]) -> tuple[Optional[Tensor], ...]:
        if is_grad_enabled():
            xp, h0, w_hh, b_hh = ctx.saved_tensors
            recorded = _recorded_backward("GRU", (xp, h0, None, w_hh, b_hh), ctx.state[-1], (g_out, g_h))
            if recorded is not None:
                return recorded[0], recorded[1], recorded[3], recorded[4], None
        with no_grad():
            return _GruLayer._closed_form(ctx, g_out, g_h)

    @staticmethod
    def _closed_form(ctx: FunctionCtx, g_out: Optional[Tensor], g_h: Optional[Tensor]) -> tuple[Optional[Tensor], ...]:
        gates, hn, out, h0, w_hh, has_bias, reverse = ctx.state
        length, hidden = gates.shape[0], h0.shape[-1]
        r, z, n = (gates.narrow(2, k * hidden, hidden) for k in range(3))
        h_prev = _previous(out, h0, reverse)
        k_n = (1 - z) * (1 - n * n)
        # d xp = [dh, dh, dh] * k; d hp = d xp * m (the n block scaled by r).
        k = rustgrad.cat([k_n * hn * r * (1 - r), (h_prev - n) * z * (1 - z), k_n], 2)
        m = rustgrad.cat([rustgrad.ones_like(gates.narrow(2, 0, 2 * hidden)), r], 2)
        dh = g_h if g_h is not None else rustgrad.zeros_like(h0)
        d_xs: list[Tensor] = [dh] * length
        d_hs: list[Tensor] = [dh] * length
        for t in reversed(_time_order(length, reverse)):
            if g_out is not None:
                dh = dh + g_out[t]
            d_xs[t] = rustgrad.cat([dh, dh, dh], 1) * k[t]
            d_hs[t] = d_xs[t] * m[t]
            dh = rustgrad.addmm(dh * z[t], d_hs[t], w_hh)
        d_hp = rustgrad.stack(d_hs, 0).reshape(-1, 3 * hidden)
        d_w_hh = d_hp.t().matmul(h_prev.reshape(-1, hidden))
        return rustgrad.stack(d_xs, 0), dh, d_w_hh, d_hp.sum(0) if has_bias else None, None


def run_direction(mode: str, x: Tensor, weights: Weights, h0: Tensor, c0: Optional[Tensor], reverse: bool
                  ) -> tuple[Tensor, Tensor, Optional[Tensor]]:
    """Runs one direction of one layer over ``x`` (L, N, H_in) from h0 (N, H) (and c0);
    returns the outputs (L, N, H) in time order and the final h (and c)."""
    w_ih, w_hh, b_ih, b_hh = weights
    if x.shape[0] == 0:
        return rustgrad.zeros((0, *h0.shape), dtype=h0.dtype), h0, c0
    xp = _project(x, w_ih, _input_bias(mode, b_ih, b_hh))
    if mode == "LSTM":
        assert c0 is not None  # invariant: an LSTM layer starts from a cell state
        return _LstmLayer.apply(xp, h0, c0, w_hh, reverse)
    if mode == "GRU":
        out, h = _GruLayer.apply(xp, h0, w_hh, b_hh, reverse)
    else:
        out, h = _ElmanLayer.apply(xp, h0, w_hh, mode == "RNN_RELU", reverse)
    return out, h, None


def cell_step(mode: str, input: Tensor, h: Tensor, c: Optional[Tensor], weights: Weights
              ) -> tuple[Tensor, Optional[Tensor]]:
    """One step of a cell from ``input`` (N, H_in) and the state (h, c)."""
    w_ih, w_hh, b_ih, b_hh = weights
    xp = _project(input, w_ih, _input_bias(mode, b_ih, b_hh))
    return _step(mode, xp, h, c, w_hh.t(), b_hh if mode == "GRU" else None)
