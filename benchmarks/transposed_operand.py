"""The weight gradient ``x.T @ g`` with x read through its transposed view against a dense copy of
xᵀ: the product's time each way, the copy's own time (ours and numpy's), and whether both ways give
the same bits.

    python benchmarks/transposed_operand.py [--threads 1 2] [--calls 300]

On machines without AVX-512 the `gemm` crate runs these products; this measures what reading A
dense would save and what the copy costs (docs/performance.md, "The second round's targets on an
AVX2 machine").
"""

from __future__ import annotations

import argparse
from typing import Callable

import numpy as np

import rustgrad
from call_timing import median_call_us

SHAPES = [(1000, 64, 100), (777, 33, 129), (1000, 256, 100), (512, 64, 512)]


def median_us(call: Callable[[], object], calls: int, rounds: int = 9) -> float:
    return median_call_us(call, calls, rounds=rounds, warmup=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((64, 1000)).astype(np.float32)
    x, g = rustgrad.tensor(x_np), rustgrad.tensor(rng.standard_normal((64, 100)).astype(np.float32))
    view, dense = x.t(), x.t().contiguous()
    print("| threads | xᵀ view @ g | dense xᵀ @ g | copy, then dense @ g | our copy of xᵀ | numpy's copy of xᵀ |")
    print("|---|---|---|---|---|---|")
    for threads in args.threads:
        rustgrad.set_num_threads(threads)
        row = [median_us(f, args.calls) for f in (lambda: view.mm(g), lambda: dense.mm(g),
                                                  lambda: view.contiguous().mm(g), lambda: view.contiguous(),
                                                  lambda: np.ascontiguousarray(x_np.T))]
        print(f"| {threads} | " + " | ".join(f"{us:.1f} µs" for us in row) + " |")
    for threads in args.threads:
        rustgrad.set_num_threads(threads)
        for m, k, n in SHAPES:
            a = rustgrad.tensor(rng.standard_normal((k, m)).astype(np.float32))
            b = rustgrad.tensor(rng.standard_normal((k, n)).astype(np.float32))
            same = np.array_equal(a.t().mm(b).numpy(), a.t().contiguous().mm(b).numpy())
            print(f"{threads} thread(s), {m}×{k}×{n}: view and dense give {'the same' if same else 'different'} bits")


if __name__ == "__main__":
    main()
