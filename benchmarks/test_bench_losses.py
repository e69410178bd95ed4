"""Cross-entropy forward plus backward against numpy, float32: ``F.cross_entropy`` of logits
(N, C) and int64 class indices, mean reduction, at the MLP step's (64, 10) and a large (512, 1000).
The numpy step is the hand-written stable one: log-softmax, pick, mean, and softmax − one-hot."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
import rustgrad.nn.functional as F

SHAPES = [(64, 10), (512, 1000)]
IDS = ["64x10", "512x1000"]


@pytest.fixture(scope="module", params=SHAPES, ids=IDS)
def problem(request):
    n, c = request.param
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((n, c)).astype(np.float32)
    target = rng.integers(0, c, n)
    return logits, target


def cross_entropy_step(x: rustgrad.Tensor, target: rustgrad.Tensor) -> None:
    x.grad = None
    F.cross_entropy(x, target).backward()


def numpy_cross_entropy_step(logits: np.ndarray, target: np.ndarray) -> tuple[float, np.ndarray]:
    shifted = logits - logits.max(1, keepdims=True)
    e = np.exp(shifted)
    total = e.sum(1, keepdims=True)
    rows = np.arange(len(target))
    loss = float(np.mean(np.log(total[:, 0]) - shifted[rows, target]))
    grad = e / total
    grad[rows, target] -= 1.0
    grad /= len(target)
    return loss, grad


@pytest.mark.benchmark(group="losses")
def test_cross_entropy_rustgrad(benchmark, problem):
    logits, target = problem
    x = rustgrad.tensor(logits, requires_grad=True)
    t = rustgrad.tensor(target, dtype=rustgrad.int64)
    benchmark(cross_entropy_step, x, t)
    _, expected = numpy_cross_entropy_step(logits, target)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-4, atol=1e-7)


@pytest.mark.benchmark(group="losses")
def test_cross_entropy_numpy(benchmark, problem):
    logits, target = problem
    benchmark(numpy_cross_entropy_step, logits, target)
