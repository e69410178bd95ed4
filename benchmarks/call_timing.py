"""The timing loop that benchmark scripts share: µs per call, the median over rounds."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_call_us(call: Callable[[], object], calls: int, rounds: int = 7, warmup: int = 1) -> float:
    """Runs ``call`` ``warmup`` times, then ``rounds`` rounds of ``calls`` calls; the median µs per call."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        times.append(1e6 * (time.perf_counter() - start) / calls)
    return statistics.median(times)


def median_step_us(call: Callable[[], object], calls: int) -> float:
    """Runs ``call`` ``calls`` times; the median of the calls' own times, in µs (as pytest-benchmark
    reports a row)."""
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1e6 * statistics.median(times)
