"""Threaded products on the `gemm` crate: split into one band of rows per thread on our
spin pool (the default), against the crate's own threading (rayon), which
`RUSTGRAD_GEMM_THREADING=rayon` restores. See `crate_product_in_row_bands` in
rust/kernels/crate_gemm.rs.

Each configuration runs in its own process and the processes alternate, so that a
change of the machine's state reaches both sides. Prints, per row, the median over
the rounds of each process's median (GFLOP/s for products, ms for the large step), and
in brackets the best single call. Both give the same bits (tests/test_determinism.py
and the Rust test `bands_of_rows_give_the_bits_of_one_call`).

    python benchmarks/row_bands.py [--rounds 5] [--threads 2] (several counts: --threads 2 1)
"""

from __future__ import annotations

import json

from product_rates import alternate, child_results, median_and_best, parse_rounds_and_threads

SHAPES = [(256, 1024, 1024), (384, 1024, 1024), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048),
          (1024, 4096, 4096), (4096, 1024, 4096), (4096, 1024, 1000)]
CALL_BUDGET_MACS = 2 * 10**10
LARGE_STEP = (1024, 4096, 4096, 1000)
LARGE_STEP_CALLS = 12

CHILD = """
import json, statistics, sys, time
import rustgrad
from product_rates import product_rates
from steps import scaled_problem, static_step
rustgrad.set_num_threads(int(sys.argv[1]))
result = product_rates(json.loads(sys.argv[2]), int(sys.argv[3]), min_calls=10)
step = static_step(scaled_problem(tuple(json.loads(sys.argv[4]))))
step()
times = []
for _ in range(int(sys.argv[5])):
    start = time.perf_counter()
    step()
    times.append(time.perf_counter() - start)
result["large step"] = [statistics.median(times) * 1e3, min(times) * 1e3]
print(json.dumps(result))
"""

CONFIGURATIONS = {"bands": {}, "rayon": {"RUSTGRAD_GEMM_THREADING": "rayon"}}


def run(configuration: str, threads: int) -> dict[str, list[float]]:
    args = [str(threads), json.dumps(SHAPES), str(CALL_BUDGET_MACS), json.dumps(LARGE_STEP), str(LARGE_STEP_CALLS)]
    return child_results(CHILD, CONFIGURATIONS[configuration], args)


def main() -> None:
    args = parse_rounds_and_threads(__doc__.splitlines()[0], rounds=5, threads=[2])
    for threads in args.threads:
        runs = alternate(list(CONFIGURATIONS), args.rounds, run, threads)
        print(f"{threads} thread(s)  {'row':>24}  {'bands':>14} {'rayon':>14}")
        for row in [f"{m}x{k}x{n}" for m, k, n in SHAPES] + ["large step"]:
            unit, better = ("ms", min) if row == "large step" else ("GFLOP/s", max)
            cells = [median_and_best(runs[name], row, better) for name in CONFIGURATIONS]
            print(f"  {row + ' ' + unit:>34}  {cells[0]:>15} {cells[1]:>15}")

if __name__ == "__main__":
    main()
