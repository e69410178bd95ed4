"""What kernel_choice.py and row_bands.py share: GFLOP/s of `a.mm(b)` for float32 operands
of given shapes, timed in the calling process (their child processes), and the rounds of
alternating processes with their summary."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

Results = dict[str, list[float]]


def product_rates(shapes: list[list[int]], call_budget_macs: int, min_calls: int) -> Results:
    """For each (m, k, n): [GFLOP/s of the median call, of the best call], keyed "mxkxn"."""
    import numpy as np  # here, so that the parent scripts import neither numpy nor rustgrad

    import rustgrad

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


def alternate(
    configurations: list[str], rounds: int, run: Callable[[str, int], Results], threads: int
) -> dict[str, list[Results]]:
    """`rounds` rounds, each running `run(configuration, threads)` (a process) for every configuration in turn."""
    runs: dict[str, list[Results]] = {name: [] for name in configurations}
    for _ in range(rounds):
        for name in runs:
            runs[name].append(run(name, threads))
    return runs


def median_and_best(results: list[Results], row: str, better: Callable = max) -> str:
    """"median (best)": the median over the processes of their medians, and the best call."""
    median = statistics.median(r[row][0] for r in results)
    return f"{median:6.1f} ({better(r[row][1] for r in results):6.1f})"
