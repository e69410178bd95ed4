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
64×1000×100 runs as two halves of its depth by default and in bands of rows with the switch
(`benchmarks/depth_halves.py` compares those two).

    python benchmarks/column_bands.py [--rounds 5] [--threads 2]
"""

from __future__ import annotations

from product_rates import alternate, median_and_best, parse_rounds_and_threads, rates_in_child

SHAPES = [(64, 1000, 100), (64, 1000, 256), (64, 100, 1000), (32, 256, 512), (16, 1024, 1024),
          (128, 1024, 1024), (64, 4096, 1024), (64, 1024, 4096)]
CALL_BUDGET_MACS = 5 * 10**9

CONFIGURATIONS = {"columns": {}, "rows": {"RUSTGRAD_GEMM_THREADING": "rows"}}


def run(configuration: str, threads: int) -> dict[str, list[float]]:
    return rates_in_child(CONFIGURATIONS[configuration], threads, SHAPES, CALL_BUDGET_MACS)


def main() -> None:
    args = parse_rounds_and_threads(__doc__.splitlines()[0], rounds=5, threads=[2])
    for threads in args.threads:
        runs = alternate(list(CONFIGURATIONS), args.rounds, run, threads)
        print(f"{threads} thread(s), GFLOP/s  {'row':>16}  {'columns':>15} {'rows':>15}")
        for m, k, n in SHAPES:
            row = f"{m}x{k}x{n}"
            cells = [median_and_best(runs[name], row) for name in CONFIGURATIONS]
            print(f"  {row:>38}  {cells[0]:>15} {cells[1]:>15}")


if __name__ == "__main__":
    main()
