"""LSTM forward plus backward (1 layer, input 32, hidden 128, batch 16, 50 steps, float32):
``nn.LSTM`` against the same step written by hand in numpy, on the same data and weights.
PyTorch takes about 3.45 ms here (issue 14); the target is at most 1.2x the numpy step."""

from __future__ import annotations

from typing import Callable

import numpy as np
import pytest

SEQ, BATCH, INPUT, HIDDEN = 50, 16, 32, 128


def _problem() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    bound = 1 / np.sqrt(HIDDEN)

    def uniform(*shape: int) -> np.ndarray:
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    return {
        "x": rng.standard_normal((SEQ, BATCH, INPUT)).astype(np.float32),
        "w_ih": uniform(4 * HIDDEN, INPUT),
        "w_hh": uniform(4 * HIDDEN, HIDDEN),
        "b_ih": uniform(4 * HIDDEN),
        "b_hh": uniform(4 * HIDDEN),
    }


def _sigmoid(v: np.ndarray, out: np.ndarray) -> np.ndarray:
    np.negative(v, out=out)
    np.exp(out, out=out)
    out += 1
    return np.reciprocal(out, out=out)


def numpy_lstm_step(p: dict[str, np.ndarray]) -> Callable[[], dict[str, np.ndarray]]:
    """Forward through time, then backward through time for loss = output.sum(), by hand:
    the input projection of all steps in one product, per step one product and the gate math."""
    x, w_ih, w_hh = p["x"], p["w_ih"], p["w_hh"]
    bias = p["b_ih"] + p["b_hh"]
    L, N, H = SEQ, BATCH, HIDDEN
    acts = np.empty((L, N, 4 * H), np.float32)  # sigmoid(i, f), tanh(g), sigmoid(o)
    cs = np.empty((L + 1, N, H), np.float32)
    hs = np.empty((L + 1, N, H), np.float32)
    tanh_c = np.empty((L, N, H), np.float32)
    d_gates = np.empty((L, N, 4 * H), np.float32)

    def step() -> dict[str, np.ndarray]:
        hs[0] = 0
        cs[0] = 0
        projected = (x.reshape(L * N, -1) @ w_ih.T + bias).reshape(L, N, 4 * H)
        w_hh_t = w_hh.T
        for t in range(L):
            gates = projected[t] + hs[t] @ w_hh_t
            a = acts[t]
            _sigmoid(gates[:, : 2 * H], a[:, : 2 * H])
            np.tanh(gates[:, 2 * H : 3 * H], out=a[:, 2 * H : 3 * H])
            _sigmoid(gates[:, 3 * H :], a[:, 3 * H :])
            i, f, g, o = a[:, :H], a[:, H : 2 * H], a[:, 2 * H : 3 * H], a[:, 3 * H :]
            np.multiply(f, cs[t], out=cs[t + 1])
            cs[t + 1] += i * g
            np.tanh(cs[t + 1], out=tanh_c[t])
            np.multiply(o, tanh_c[t], out=hs[t + 1])
        dh_next = np.zeros((N, H), np.float32)
        dc_next = np.zeros((N, H), np.float32)
        for t in range(L - 1, -1, -1):
            a = acts[t]
            i, f, g, o = a[:, :H], a[:, H : 2 * H], a[:, 2 * H : 3 * H], a[:, 3 * H :]
            dh = dh_next + 1.0  # d(sum of outputs)/dh_t is 1
            tc = tanh_c[t]
            dc = dc_next + dh * o * (1 - tc * tc)
            dg = d_gates[t]
            dg[:, :H] = dc * g * i * (1 - i)
            dg[:, H : 2 * H] = dc * cs[t] * f * (1 - f)
            dg[:, 2 * H : 3 * H] = dc * i * (1 - g * g)
            dg[:, 3 * H :] = dh * tc * o * (1 - o)
            dc_next = dc * f
            dh_next = dg @ w_hh
        flat = d_gates.reshape(L * N, 4 * H)
        return {
            "x": (flat @ w_ih).reshape(L, N, -1),
            "w_ih": flat.T @ x.reshape(L * N, -1),
            "w_hh": flat.T @ hs[:L].reshape(L * N, H),
            "bias": flat.sum(0),
            "output": hs[1:],
        }

    return step


def rustgrad_lstm_step(p: dict[str, np.ndarray]) -> Callable[[], object]:
    import rustgrad
    from rustgrad import nn

    model = nn.LSTM(INPUT, HIDDEN)
    with rustgrad.no_grad():
        for name in ("w_ih", "w_hh", "b_ih", "b_hh"):
            getattr(model, name.replace("w_", "weight_").replace("b_", "bias_") + "_l0").copy_(
                rustgrad.from_numpy(p[name])
            )
    x = rustgrad.from_numpy(p["x"]).requires_grad_()

    def step() -> object:
        model.zero_grad()
        x.grad = None
        output, _ = model(x)
        output.sum().backward()
        return output

    return step


@pytest.mark.benchmark(group="lstm forward+backward")
def test_rustgrad_lstm(benchmark):
    benchmark(rustgrad_lstm_step(_problem()))


@pytest.mark.benchmark(group="lstm forward+backward")
def test_numpy_lstm(benchmark):
    benchmark(numpy_lstm_step(_problem()))
