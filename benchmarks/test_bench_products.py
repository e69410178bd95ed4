"""Benchmarks of the products beyond `matmul`: `einsum` in its batched-matmul form against
our `bmm`, numpy's `einsum(optimize=True)` and numpy's `matmul`, all on float32."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad

EINSUM_BATCHES = [(64, 128, 128, 128)]


def _operands(batch: int, m: int, k: int, n: int):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((batch, m, k)).astype(np.float32)
    return a, rng.standard_normal((batch, k, n)).astype(np.float32)


def _flops(shape: tuple) -> int:
    batch, m, k, n = shape
    return 2 * batch * m * k * n


@pytest.mark.parametrize("spelling", ["einsum", "bmm"])
@pytest.mark.parametrize("shape", EINSUM_BATCHES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.benchmark(group="einsum bij,bjk->bik")
def test_rustgrad_einsum_batched_matmul(benchmark, shape, spelling):
    a, b = _operands(*shape)
    ta, tb = rustgrad.from_numpy(a), rustgrad.from_numpy(b)
    benchmark.extra_info["flops"] = _flops(shape)
    if spelling == "einsum":
        benchmark(rustgrad.einsum, "bij,bjk->bik", ta, tb)
    else:
        benchmark(ta.bmm, tb)


@pytest.mark.parametrize("spelling", ["einsum", "matmul"])
@pytest.mark.parametrize("shape", EINSUM_BATCHES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.benchmark(group="einsum bij,bjk->bik")
def test_numpy_einsum_batched_matmul(benchmark, shape, spelling):
    a, b = _operands(*shape)
    benchmark.extra_info["flops"] = _flops(shape)
    if spelling == "einsum":
        benchmark(np.einsum, "bij,bjk->bik", a, b, optimize=True)
    else:
        benchmark(np.matmul, a, b)
