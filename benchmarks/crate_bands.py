"""Mid-size products on the `gemm` crate (the path of machines without AVX-512) on one
thread and on two. From 2^20 multiply-adds up they run in bands of rows on the spin pool
(`row_bands` in rust/kernels/crate_gemm.rs); before, everything under 2^24 ran on one
thread, so the one-thread column is also the time before.

Each thread count runs in its own process and the processes alternate. Prints the median
over the rounds of each process's median call in µs, float32, with `RUSTGRAD_DISABLE_AVX512=1`
so that an AVX-512 machine measures the crate too.

    python benchmarks/crate_bands.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

# (m, k, n, A read through a transposed view): the seed step's two products first.
SHAPES = [(64, 1000, 100, False), (1000, 64, 100, True), (32, 256, 128, False), (128, 128, 128, False),
          (1024, 32, 64, False), (128, 256, 256, False)]

CHILD = """
import json, statistics, sys, time
import numpy as np
import rustgrad
rustgrad.set_num_threads(int(sys.argv[1]))
rng = np.random.default_rng(0)
result = {}
for m, k, n, transposed in json.loads(sys.argv[2]):
    a = rustgrad.tensor(rng.standard_normal((k, m) if transposed else (m, k)).astype(np.float32))
    a = a.t() if transposed else a
    b = rustgrad.tensor(rng.standard_normal((k, n)).astype(np.float32))
    for _ in range(50):
        a @ b
    times = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(200):
            a @ b
        times.append((time.perf_counter() - start) / 200 * 1e6)
    result[f"{m}x{k}x{n}" + ("ᵀ" if transposed else "")] = statistics.median(times)
print(json.dumps(result))
"""


def run(threads: int) -> dict[str, float]:
    env = dict(os.environ, RUSTGRAD_DISABLE_AVX512="1")
    args = [sys.executable, "-c", CHILD, str(threads), json.dumps(SHAPES)]
    return json.loads(subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    for _ in range(args.rounds):
        for threads in runs:
            runs[threads].append(run(threads))
    print("| m×k×n (ᵀ: A transposed) | 1 thread µs | 2 threads µs |")
    print("|---|---|---|")
    for row in runs[1][0]:
        one, two = (statistics.median(r[row] for r in runs[t]) for t in (1, 2))
        print(f"| {row} | {one:.1f} | {two:.1f} |")


if __name__ == "__main__":
    main()
