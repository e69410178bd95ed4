"""Our own AVX-512 float32 kernel against the `gemm` crate, shape by shape: what the
rule in rust/kernels/matmul.rs (`own_kernel_runs`) chooses between.

Each configuration runs in its own process (`RUSTGRAD_GEMM=own` lets our kernel run
every float32 product up to 2^28 multiply-adds, `RUSTGRAD_GEMM=crate` none), and the
processes alternate, so that a change of the machine's state reaches both sides.
Prints GFLOP/s: the median over the rounds of each process's median, and in
brackets the best single call.

    python benchmarks/kernel_choice.py [--rounds 3] [--threads 1 2]
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

SHAPES = [
    (64, 1000, 100), (1000, 64, 100), (64, 100, 1000), (128, 128, 128), (256, 256, 256),
    (384, 384, 384), (512, 256, 384), (1024, 64, 1024), (256, 1024, 256), (64, 512, 512),
    (512, 512, 512), (48, 1024, 1024), (128, 1024, 1024), (64, 4096, 1024),
]
CALL_BUDGET_MACS = 3 * 10**8

CHILD = """
import json, sys
import rustgrad
from product_rates import product_rates
rustgrad.set_num_threads(int(sys.argv[1]))
print(json.dumps(product_rates(json.loads(sys.argv[2]), int(sys.argv[3]), min_calls=20)))
"""


def run(kind: str, threads: int) -> dict[str, list[float]]:
    env = dict(os.environ, RUSTGRAD_GEMM=kind)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parent), env.get("PYTHONPATH")]))
    args = [sys.executable, "-c", CHILD, str(threads), json.dumps(SHAPES), str(CALL_BUDGET_MACS)]
    return json.loads(subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), f"{args.rounds} rounds")
    for threads in args.threads:
        runs = alternate(["own", "crate"], args.rounds, run, threads)
        print(f"{threads} thread(s)      shape     own kernel        crate   (GFLOP/s)")
        for m, k, n in SHAPES:
            name = f"{m}x{k}x{n}"
            print(f"  {name:>20}  {median_and_best(runs['own'], name):>15} {median_and_best(runs['crate'], name):>15}")

if __name__ == "__main__":
    main()
