"""A one-element `a + b` in rustgrad (with and without requires_grad) against
numpy's, timed with timeit in one process: the best of several repeats of
200,000 adds each, the three interleaved.

    python benchmarks/one_element_add.py [--rounds 5]

numpy runs on its best BLAS kernel: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are
removed from this process's environment (the script re-executes itself).
"""

from __future__ import annotations

import argparse
import timeit

from best_blas import reexec_without_slowing_variables  # noqa: E402

reexec_without_slowing_variables()

import numpy as np  # noqa: E402

import rustgrad  # noqa: E402

ADDS = 200_000


def best_ns(a: object, b: object) -> float:
    return min(timeit.repeat("a + b", globals={"a": a, "b": b}, number=ADDS, repeat=3)) / ADDS * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    operands = {
        "numpy": (np.array([1.0]), np.array([2.0])),
        "rustgrad, requires_grad": (rustgrad.tensor([1.0], requires_grad=True),
                                    rustgrad.tensor([2.0], requires_grad=True)),
        "rustgrad, no grad": (rustgrad.tensor([1.0]), rustgrad.tensor([2.0])),
    }
    best = {name: float("inf") for name in operands}
    for _ in range(args.rounds):
        for name, (a, b) in operands.items():
            best[name] = min(best[name], best_ns(a, b))
    for name, ns in best.items():
        print(f"  {name:<26} {ns:6.0f} ns   {ns / best['numpy']:5.2f}x numpy")


if __name__ == "__main__":
    main()
