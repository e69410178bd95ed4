"""`rustgrad.sort(x, dim=1)` of a 1024×1024 float32 matrix against numpy's `np.sort(x, 1)`,
in one process: the best of 15 calls each, in rounds that alternate the two.

    python benchmarks/sort_rows.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import time
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
    args = parser.parse_args()
    values = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    tensor = rustgrad.from_numpy(values)
    if not np.array_equal(rustgrad.sort(tensor, 1)[0].numpy(), np.sort(values, 1)):
        raise SystemExit("rustgrad.sort disagrees with np.sort")
    for _ in range(args.rounds):
        ours = best_ms(lambda: rustgrad.sort(tensor, 1))
        numpy = best_ms(lambda: np.sort(values, 1))
        print(f"rustgrad {ours:6.2f} ms   numpy {numpy:5.2f} ms   {ours / numpy:5.2f}x numpy")


if __name__ == "__main__":
    main()
