"""Whether two Python threads run rustgrad kernels in parallel: 2n float32 1024² products
in one thread against n in each of two threads, rustgrad on one kernel thread
(`set_num_threads(1)`), so each Python thread can use one core. GIL-free sha256 hashing
of 8 MiB is timed the same way as a yardstick of what this machine gives one process
right now. A ratio (two threads / one thread) near 0.5 means the two threads ran in
parallel; near 1.0, they took turns (a held GIL, a shared lock, or a busy machine when
the yardstick is near 1.0 too).

    python benchmarks/threads.py [--repeats 5] [--products 4]

(The tests prove that kernels release the GIL, without timing: tests/test_concurrency.py.)
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import threading
import time
from typing import Callable

import rustgrad


def two_threads(work: Callable[[], object]) -> None:
    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def ratio(work: Callable[[int], object], n: int) -> float:
    """Time of n calls in each of two threads over 2n calls in one thread."""
    t0 = time.perf_counter()
    work(2 * n)
    serial = time.perf_counter() - t0
    t0 = time.perf_counter()
    two_threads(lambda: work(n))
    return (time.perf_counter() - t0) / serial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--products", type=int, default=4, help="products per thread")
    args = parser.parse_args()
    rustgrad.set_num_threads(1)
    a = rustgrad.randn(1024, 1024)
    data = os.urandom(8 << 20)

    def matmuls(n: int) -> None:
        for _ in range(n):
            a @ a

    def hashes(n: int) -> None:
        for _ in range(n):
            hashlib.sha256(data).digest()  # releases the GIL for large inputs

    matmuls(1)  # warm-up
    for name, work in [("rustgrad 1024² matmul", matmuls), ("sha256 of 8 MiB (yardstick)", hashes)]:
        ratios = sorted(ratio(work, args.products) for _ in range(args.repeats))
        print(f"  {name:<28} two threads / one thread: median {statistics.median(ratios):.2f}"
              f"   (min {ratios[0]:.2f}, max {ratios[-1]:.2f})")


if __name__ == "__main__":
    main()
