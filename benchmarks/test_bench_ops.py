"""Elementwise ops and reductions on float32 against numpy, at 1M and 16M elements (all threads).

Each op runs on the same data in both libraries; the report divides the medians of one run.
`amax(dim)` stands in for `max(dim)` until that returns (values, indices).
"""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad

SIZES = {"1M": (1024, 1024), "16M": (4096, 4096)}


def _operands(size: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    shape = SIZES[size]
    return (rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32))


OPS = {
    "add": (lambda a, b: a + b, lambda x, y: x + y),
    "mul": (lambda a, b: a * b, lambda x, y: x * y),
    # A number on the left: ran 25 times slower than `x - 1` until 2026-12-07.
    "1 - x": (lambda a, b: 1 - a, lambda x, y: 1 - x),
    "exp": (lambda a, b: np.exp(a), lambda x, y: x.exp()),
    "sin": (lambda a, b: np.sin(a), lambda x, y: x.sin()),
    "sum": (lambda a, b: a.sum(), lambda x, y: x.sum()),
    "amax(dim)": (lambda a, b: a.max(axis=1), lambda x, y: x.amax(dim=1)),
    # torch's max(dim) also gives the indices (numpy's max(axis) only the values).
    "max(dim)": (lambda a, b: a.max(axis=1), lambda x, y: x.max(dim=1)),
    "cumsum": (lambda a, b: np.cumsum(a, axis=1), lambda x, y: x.cumsum(1)),
}


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.benchmark(group="ops")
def test_rustgrad_op(benchmark, op, size):
    a, b = _operands(size)
    x, y = rustgrad.from_numpy(a), rustgrad.from_numpy(b)
    benchmark(OPS[op][1], x, y)


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.benchmark(group="ops")
def test_numpy_op(benchmark, op, size):
    a, b = _operands(size)
    benchmark(OPS[op][0], a, b)
