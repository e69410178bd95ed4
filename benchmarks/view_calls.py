"""What a view, an index key or a one-element op through the op table costs per call, in
rustgrad and in numpy: the best of several repeats of timeit, the rows interleaved. The tensors
are a 1400×64 float32 matrix (above the size from which a kernel releases the GIL), a 10×64 one
(below it) and a one-element vector.

    python benchmarks/view_calls.py [--rounds 5] [--only SUBSTRING]

Run it once per build (``PYTHONPATH=<a saved build's parent>`` for the other one) to compare
builds. numpy runs with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed from this process's
environment (the script re-executes itself).
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable

from best_blas import reexec_without_slowing_variables  # noqa: E402

reexec_without_slowing_variables()

import numpy as np  # noqa: E402

import rustgrad  # noqa: E402
from coverage_cases import _data_loader as data_loader_case  # noqa: E402


def rows() -> dict[str, tuple[Callable[[], object], Callable[[], object]]]:
    """Each row's (rustgrad call, numpy call)."""
    large, small = np.random.rand(1400, 64).astype(np.float32), np.random.rand(10, 64).astype(np.float32)
    big, little = rustgrad.from_numpy(large), rustgrad.from_numpy(small)
    one, one_np = rustgrad.ones(1), np.ones(1, dtype=np.float32)
    epoch = data_loader_case()  # the benchmark suite's row
    return {
        "x[5], 1400×64": (lambda: big[5], lambda: large[5]),
        "x[5], 10×64": (lambda: little[5], lambda: small[5]),
        "x[0:64], 1400×64": (lambda: big[0:64], lambda: large[0:64]),
        "x[:, 0:8], 1400×64": (lambda: big[:, 0:8], lambda: large[:, 0:8]),
        "x.t(), 1400×64": (lambda: big.t(), lambda: large.T),
        "x.reshape(-1), 1400×64": (lambda: big.reshape(-1), lambda: large.reshape(-1)),
        "x.unsqueeze(0), 1400×64": (lambda: big.unsqueeze(0), lambda: large[None]),
        "x.narrow(0, 0, 64), 1400×64": (lambda: big.narrow(0, 0, 64), lambda: large[0:64]),
        "a.exp(), one element": (lambda: one.exp(), lambda: np.exp(one_np)),
        "a.relu(), one element": (lambda: one.relu(), lambda: np.maximum(one_np, 0)),
        "DataLoader epoch, 1400×64 in batches of 64": (epoch.ours(), epoch.theirs()),
    }


def best_ns(call: Callable[[], object], number: int) -> float:
    return min(timeit.repeat(call, number=number, repeat=3)) / number * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default="", help="time only the rows whose name holds this")
    args = parser.parse_args()
    chosen = {name: calls for name, calls in rows().items() if args.only in name}
    best = {name: [float("inf"), float("inf")] for name in chosen}
    for _ in range(args.rounds):
        for name, calls in chosen.items():
            number = 200 if "epoch" in name else 20_000
            for side, call in enumerate(calls):
                best[name][side] = min(best[name][side], best_ns(call, number))
    for name, (ours, theirs) in best.items():
        print(f"  {name:<46} {ours:9.0f} ns   numpy {theirs:9.0f} ns   {ours / theirs:5.2f}x numpy")


if __name__ == "__main__":
    main()
