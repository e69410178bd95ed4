"""float32 matmul against numpy, on 1 and 2 threads (GFLOP/s in the report), and batched
products (`bmm`, `@` on 3-D operands) against numpy's `matmul` on all threads."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad

SEED_SHAPES = [(64, 1000, 100), (64, 100, 10), (1000, 64, 100)]
SQUARES = [(n, n, n) for n in (256, 512, 1024, 2048)]


def _operands(m: int, k: int, n: int):
    rng = np.random.default_rng(0)
    return rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)


def _numpy_threads(threads: int):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    return threadpoolctl.threadpool_limits(limits=threads, user_api="blas")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", SEED_SHAPES + SQUARES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.benchmark(group="matmul")
def test_rustgrad_matmul(benchmark, shape, threads):
    a, b = _operands(*shape)
    ta, tb = rustgrad.from_numpy(a), rustgrad.from_numpy(b)
    rustgrad.set_num_threads(threads)
    benchmark.extra_info["flops"] = 2 * shape[0] * shape[1] * shape[2]
    benchmark(ta.mm, tb)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", SEED_SHAPES + SQUARES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.benchmark(group="matmul")
def test_numpy_matmul(benchmark, shape, threads):
    a, b = _operands(*shape)
    benchmark.extra_info["flops"] = 2 * shape[0] * shape[1] * shape[2]
    with _numpy_threads(threads):
        benchmark(np.matmul, a, b)


BATCHES = [(64, 128, 128, 128), (16, 512, 512, 512)]


def _batched_operands(batch: int, m: int, k: int, n: int):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((batch, m, k)).astype(np.float32)
    return a, rng.standard_normal((batch, k, n)).astype(np.float32)


@pytest.mark.parametrize("spelling", ["bmm", "at"])
@pytest.mark.parametrize("shape", BATCHES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.benchmark(group="batched matmul")
def test_rustgrad_batched_matmul(benchmark, shape, spelling):
    a, b = _batched_operands(*shape)
    ta, tb = rustgrad.from_numpy(a), rustgrad.from_numpy(b)
    benchmark.extra_info["flops"] = 2 * shape[0] * shape[1] * shape[2] * shape[3]
    benchmark(ta.bmm if spelling == "bmm" else ta.__matmul__, tb)


@pytest.mark.parametrize("shape", BATCHES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.benchmark(group="batched matmul")
def test_numpy_batched_matmul(benchmark, shape):
    a, b = _batched_operands(*shape)
    benchmark.extra_info["flops"] = 2 * shape[0] * shape[1] * shape[2] * shape[3]
    benchmark(np.matmul, a, b)
