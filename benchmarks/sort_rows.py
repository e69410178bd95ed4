"""`rustgrad.sort(x, dim=1)` of a 1024×1024 float32 matrix against numpy's `np.sort(x, 1)`,
in one process: the best of 15 calls each, in rounds that alternate the two. `argsort` is
the part of our sort that finds the order; the rest gathers the values.

    python benchmarks/sort_rows.py [--rounds 3] [--threads N]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Callable

import numpy as np

import rustgrad


def best_ms(call: Callable[[], object], calls: int = 15) -> float:
    call()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="rustgrad.set_num_threads (default: all)")
    args = parser.parse_args()
    if args.threads is not None:
        rustgrad.set_num_threads(args.threads)
    print(f"rustgrad from {Path(rustgrad.__file__).parent}, {rustgrad.get_num_threads()} thread(s)")
    values = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    tensor = rustgrad.from_numpy(values)
    if not np.array_equal(rustgrad.sort(tensor, 1)[0].numpy(), np.sort(values, 1)):
        raise SystemExit("rustgrad.sort disagrees with np.sort")
    for _ in range(args.rounds):
        ours = best_ms(lambda: rustgrad.sort(tensor, 1))
        order = best_ms(lambda: rustgrad.argsort(tensor, 1))
        numpy = best_ms(lambda: np.sort(values, 1))
        print(f"rustgrad {ours:6.2f} ms (argsort {order:6.2f})   numpy {numpy:5.2f} ms   {ours / numpy:5.2f}x numpy")


if __name__ == "__main__":
    main()
