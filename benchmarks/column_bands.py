"""Threaded products of few rows on the `gemm` crate: split into one band of columns per
thread on our spin pool (the default where it applies), against what ran them before,
which `RUSTGRAD_GEMM_THREADING=rows` restores (bands of rows, or the crate's own
threading for large products too short for bands of rows). See `column_bands` in
rust/kernels/crate_gemm.rs.

A band of rows makes the crate pack all of B for that band, so on a short product each
thread packs all of B; a band of columns packs only its share of B and reads A in place.
Each configuration runs in its own process and the processes alternate, so that a change
of the machine's state reaches both sides. Prints, per row, the median over the rounds of
each process's median GFLOP/s, and in brackets the best single call. Both give the same
bits (the Rust test `bands_of_columns_give_the_bits_of_one_call`). The seed step's
64×1000×100 is the control: bands of 48 and 52 columns would leave the bits of the whole
product, so it keeps its bands of rows in both.

    python benchmarks/column_bands.py [--rounds 5] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from product_rates import alternate, median_and_best

SHAPES = [(64, 1000, 100), (64, 1000, 256), (64, 100, 1000), (32, 256, 512), (16, 1024, 1024),
          (128, 1024, 1024), (64, 4096, 1024), (64, 1024, 4096)]
CALL_BUDGET_MACS = 5 * 10**9

CHILD = """
import json, sys
import rustgrad
from product_rates import product_rates
rustgrad.set_num_threads(int(sys.argv[1]))
print(json.dumps(product_rates(json.loads(sys.argv[2]), int(sys.argv[3]), min_calls=20)))
"""

CONFIGURATIONS = {"columns": {}, "rows": {"RUSTGRAD_GEMM_THREADING": "rows"}}


def run(configuration: str, threads: int) -> dict[str, list[float]]:
    env = dict(os.environ, **CONFIGURATIONS[configuration])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parent), env.get("PYTHONPATH")]))
    args = [sys.executable, "-c", CHILD, str(threads), json.dumps(SHAPES), str(CALL_BUDGET_MACS)]
    return json.loads(subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[2])
    args = parser.parse_args()
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), f"{args.rounds} rounds")
    for threads in args.threads:
        runs = alternate(list(CONFIGURATIONS), args.rounds, run, threads)
        print(f"{threads} thread(s), GFLOP/s  {'row':>16}  {'columns':>15} {'rows':>15}")
        for m, k, n in SHAPES:
            row = f"{m}x{k}x{n}"
            cells = [median_and_best(runs[name], row) for name in CONFIGURATIONS]
            print(f"  {row:>38}  {cells[0]:>15} {cells[1]:>15}")


if __name__ == "__main__":
    main()
