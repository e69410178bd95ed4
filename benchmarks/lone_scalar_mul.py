"""A lone ``t * 0.5`` of a 1000×100 float32 tensor (the size of the seed step's w1), timed after
pauses of 0, 0.1, 1 and 10 ms. Past the spin window (300 µs by default) the kernel threads' helpers
have parked, and a write that waited for one would pay for waking it; mid-size writes therefore
split only while the helpers spin (docs/performance.md, "The eager step's update").

    python benchmarks/lone_scalar_mul.py [--calls 300]

Each figure is the median over ``--calls`` calls, in µs. To compare two builds, run this script
from each build's environment in turn (alternating processes).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

import rustgrad

PAUSES_S = [0.0, 0.0001, 0.001, 0.01]


def median_us(t: rustgrad.Tensor, pause_s: float, calls: int) -> float:
    times = []
    for _ in range(calls):
        if pause_s:
            time.sleep(pause_s)
        start = time.perf_counter()
        product = t * 0.5
        times.append(time.perf_counter() - start)
        del product
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--label", default="", help="a tag printed on the line (say, old or new)")
    args = parser.parse_args()
    w = np.random.default_rng(0).standard_normal((1000, 100)).astype(np.float32)
    t = rustgrad.from_numpy(w)
    figures = "  ".join(f"pause {p * 1e3:g} ms: {median_us(t, p, args.calls):6.1f} µs" for p in PAUSES_S)
    print(f"{args.label} rustgrad from {Path(rustgrad.__file__).parent}, {rustgrad.get_num_threads()} threads")
    print(f"{args.label} {figures}")


if __name__ == "__main__":
    main()
