"""GFLOP/s of `a.mm(b)` for float32 operands of given shapes, timed in the calling process:
the child processes of kernel_choice.py and row_bands.py use it."""

from __future__ import annotations

import statistics
import time

import numpy as np

import rustgrad


def product_rates(shapes: list[list[int]], call_budget_macs: int, min_calls: int) -> dict[str, list[float]]:
    """For each (m, k, n): [GFLOP/s of the median call, of the best call], keyed "mxkxn"."""
    rng = np.random.default_rng(0)
    rates = {}
    for m, k, n in shapes:
        a = rustgrad.from_numpy(rng.random((m, k), dtype=np.float32))
        b = rustgrad.from_numpy(rng.random((k, n), dtype=np.float32))
        a.mm(b)
        times = []
        for _ in range(max(min_calls, call_budget_macs // (m * k * n))):
            start = time.perf_counter()
            a.mm(b)
            times.append(time.perf_counter() - start)
        flops = 2 * m * k * n
        rates[f"{m}x{k}x{n}"] = [flops / statistics.median(times) / 1e9, flops / min(times) / 1e9]
    return rates
