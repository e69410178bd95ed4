"""Elementwise ops on strided views (a transpose, a permute, an expand) against the same op after
an explicit copy into order, and numpy's own strided op. The broadcasting kernels copy a strided
operand of the output's shape into order first (``forward/elementwise.rs``, ``in_order``) and read
a broadcast one (``expand``) in place: these rows show both choices against the alternative."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad

SIDES = [1024, 4096]


def operands(side: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((side, side), dtype=np.float32)
    b = rng.standard_normal((side, side), dtype=np.float32)
    row = rng.standard_normal((1, side), dtype=np.float32)
    return a, b, row


@pytest.mark.benchmark(group="strided")
@pytest.mark.parametrize("side", SIDES, ids=lambda s: f"{s}x{s}")
def test_transposed_view_plus_matrix(benchmark, side):
    a, b, _ = operands(side)
    at, tb = rustgrad.tensor(a).t(), rustgrad.tensor(b)
    benchmark(lambda: at + tb)


@pytest.mark.benchmark(group="strided")
@pytest.mark.parametrize("side", SIDES, ids=lambda s: f"{s}x{s}")
def test_transposed_view_copied_then_plus_matrix(benchmark, side):
    a, b, _ = operands(side)
    at, tb = rustgrad.tensor(a).t(), rustgrad.tensor(b)
    benchmark(lambda: at.contiguous() + tb)


@pytest.mark.benchmark(group="strided")
@pytest.mark.parametrize("side", SIDES, ids=lambda s: f"{s}x{s}")
def test_numpy_transposed_plus_matrix(benchmark, side):
    a, b, _ = operands(side)
    benchmark(lambda: a.T + b)


@pytest.mark.benchmark(group="strided")
@pytest.mark.parametrize("side", SIDES, ids=lambda s: f"{s}x{s}")
def test_expanded_row_plus_matrix(benchmark, side):
    _, b, row = operands(side)
    r, tb = rustgrad.tensor(row), rustgrad.tensor(b)
    benchmark(lambda: r.expand(side, side) + tb)


@pytest.mark.benchmark(group="strided")
@pytest.mark.parametrize("side", SIDES, ids=lambda s: f"{s}x{s}")
def test_expanded_row_copied_then_plus_matrix(benchmark, side):
    _, b, row = operands(side)
    r, tb = rustgrad.tensor(row), rustgrad.tensor(b)
    benchmark(lambda: r.expand(side, side).contiguous() + tb)


@pytest.mark.benchmark(group="strided")
@pytest.mark.parametrize("side", SIDES, ids=lambda s: f"{s}x{s}")
def test_numpy_row_plus_matrix(benchmark, side):
    _, b, row = operands(side)
    benchmark(lambda: row + b)
