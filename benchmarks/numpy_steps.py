"""The reference two-layer step written by hand in numpy, two ways.

These are the baselines every rustgrad step is compared against.
"""

from __future__ import annotations

import numpy as np

LEARNING_RATE = 1e-6


class InPlaceNumpyStep:
    """Forward and backward by hand into preallocated buffers (the fastest numpy can do)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, w1: np.ndarray, w2: np.ndarray) -> None:
        self.x, self.y, self.w1, self.w2 = x, y, w1.copy(), w2.copy()
        n, h, d_out = x.shape[0], w1.shape[1], w2.shape[1]
        f = x.dtype
        self.h = np.empty((n, h), f)
        self.h_relu = np.empty((n, h), f)
        self.y_pred = np.empty((n, d_out), f)
        self.diff = np.empty((n, d_out), f)
        self.grad_h = np.empty((n, h), f)
        self.grad_w1 = np.empty_like(self.w1)
        self.grad_w2 = np.empty_like(self.w2)
        self.mask = np.empty((n, h), bool)

    def __call__(self) -> float:
        np.matmul(self.x, self.w1, out=self.h)
        np.maximum(self.h, 0, out=self.h_relu)
        np.matmul(self.h_relu, self.w2, out=self.y_pred)
        np.subtract(self.y_pred, self.y, out=self.diff)
        flat = self.diff.reshape(-1)
        loss = float(flat @ flat)
        self.diff *= 2.0  # now the gradient of the loss with respect to y_pred
        np.matmul(self.h_relu.T, self.diff, out=self.grad_w2)
        np.matmul(self.diff, self.w2.T, out=self.grad_h)
        np.less(self.h, 0, out=self.mask)
        self.grad_h[self.mask] = 0
        np.matmul(self.x.T, self.grad_h, out=self.grad_w1)
        self.grad_w1 *= LEARNING_RATE
        self.grad_w2 *= LEARNING_RATE
        self.w1 -= self.grad_w1
        self.w2 -= self.grad_w2
        return loss


class SimpleNumpyStep:
    """The same step with one new array per op, as the PyTorch tutorial writes it."""

    def __init__(self, x: np.ndarray, y: np.ndarray, w1: np.ndarray, w2: np.ndarray) -> None:
        self.x, self.y, self.w1, self.w2 = x, y, w1.copy(), w2.copy()

    def __call__(self) -> float:
        h = self.x @ self.w1
        h_relu = np.maximum(h, 0)
        y_pred = h_relu @ self.w2
        loss = float(np.square(y_pred - self.y).sum())
        grad_y_pred = 2.0 * (y_pred - self.y)
        grad_w2 = h_relu.T @ grad_y_pred
        grad_h_relu = grad_y_pred @ self.w2.T
        grad_h = grad_h_relu.copy()
        grad_h[h < 0] = 0
        grad_w1 = self.x.T @ grad_h
        self.w1 -= LEARNING_RATE * grad_w1
        self.w2 -= LEARNING_RATE * grad_w2
        return loss
