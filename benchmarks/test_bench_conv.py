"""conv2d forward plus backward (input and weight gradients) against a numpy im2col-plus-matmul
step computing the same three products, float32, padding 1, stride 1, all threads.

The issue's shapes: 32×3×32×32 by 16×3×3×3 and 64×16×16×16 by 32×16×3×3. The report gives the
median, the ratio to numpy and the GFLOP/s of the three products (2·N·O·oh·ow·C·kh·kw each).
"""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad

CONV_SHAPES = [(32, 3, 32, 32, 16, 3), (64, 16, 16, 16, 32, 3)]


def conv_flops(shape: tuple) -> int:
    """Multiply-adds ×2 of the forward product, times 3 (forward, input and weight gradients)."""
    n, c, h, w, o, k = shape
    return 3 * 2 * n * o * h * w * c * k * k


def _arrays(shape: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n, c, h, w, o, k = shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    weight = rng.standard_normal((o, c, k, k)).astype(np.float32)
    return x, weight, rng.standard_normal((n, o, h, w)).astype(np.float32)


class NumpyConv:
    """A hand-written numpy conv2d step (stride 1, padding k // 2): im2col by strided views, one
    matmul per product over the whole batch, col2im by adding shifted slices."""

    def __init__(self, x: np.ndarray, weight: np.ndarray, grad: np.ndarray) -> None:
        self.x, self.weight, self.grad = x, weight, grad
        self.pad = weight.shape[2] // 2

    def cols(self) -> np.ndarray:
        n, c, h, w = self.x.shape
        k = self.weight.shape[2]
        p = self.pad
        xp = np.pad(self.x, ((0, 0), (0, 0), (p, p), (p, p)))
        s = xp.strides
        windows = np.lib.stride_tricks.as_strided(xp, (n, c, k, k, h, w), (s[0], s[1], s[2], s[3], s[2], s[3]))
        # (c·k·k) × (n·h·w), rows in the weight's order.
        return windows.transpose(1, 2, 3, 0, 4, 5).reshape(c * k * k, n * h * w)

    def step(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n, c, h, w = self.x.shape
        o, _, k, _ = self.weight.shape
        cols = self.cols()
        w2 = self.weight.reshape(o, -1)
        out = (w2 @ cols).reshape(o, n, h, w).transpose(1, 0, 2, 3)
        g2 = self.grad.transpose(1, 0, 2, 3).reshape(o, n * h * w)
        grad_weight = (g2 @ cols.T).reshape(self.weight.shape)
        dcols = (w2.T @ g2).reshape(c, k, k, n, h, w)
        p = self.pad
        dxp = np.zeros((n, c, h + 2 * p, w + 2 * p), dtype=self.x.dtype)
        for i in range(k):
            for j in range(k):
                dxp[:, :, i:i + h, j:j + w] += dcols[:, i, j].transpose(1, 0, 2, 3)
        return out, dxp[:, :, p:p + h, p:p + w], grad_weight


def rustgrad_step(x: rustgrad.Tensor, weight: rustgrad.Tensor, grad: rustgrad.Tensor) -> None:
    x.grad = None
    weight.grad = None
    out = rustgrad.nn.functional.conv2d(x, weight, padding=1)
    out.backward(grad)


def test_numpy_step_computes_the_convolution():
    """The numpy step is the same computation (checked against rustgrad once)."""
    x, weight, grad = _arrays((2, 3, 5, 5, 4, 3))
    out, gx, gw = NumpyConv(x, weight, grad).step()
    tx = rustgrad.tensor(x, requires_grad=True)
    tw = rustgrad.tensor(weight, requires_grad=True)
    rustgrad_step(tx, tw, rustgrad.tensor(grad))
    np.testing.assert_allclose(rustgrad.nn.functional.conv2d(tx, tw, padding=1).detach().numpy(), out, rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(tx.grad.numpy(), gx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tw.grad.numpy(), gw, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", CONV_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.benchmark(group="conv2d forward+backward")
def test_rustgrad_conv2d_step(benchmark, shape):
    x, weight, grad = _arrays(shape)
    tx = rustgrad.tensor(x, requires_grad=True)
    tw = rustgrad.tensor(weight, requires_grad=True)
    tg = rustgrad.tensor(grad)
    benchmark.extra_info["flops"] = conv_flops(shape)
    benchmark(rustgrad_step, tx, tw, tg)


@pytest.mark.parametrize("shape", CONV_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.benchmark(group="conv2d forward+backward")
def test_numpy_conv2d_step(benchmark, shape):
    step = NumpyConv(*_arrays(shape))
    benchmark.extra_info["flops"] = conv_flops(shape)
    benchmark(step.step)
