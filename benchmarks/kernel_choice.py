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

from product_rates import alternate, median_and_best, parse_rounds_and_threads, rates_in_child

SHAPES = [
    (64, 1000, 100), (1000, 64, 100), (64, 100, 1000), (128, 128, 128), (256, 256, 256),
    (384, 384, 384), (512, 256, 384), (1024, 64, 1024), (256, 1024, 256), (64, 512, 512),
    (512, 512, 512), (48, 1024, 1024), (128, 1024, 1024), (64, 4096, 1024),
]
CALL_BUDGET_MACS = 3 * 10**8



def run(kind: str, threads: int) -> dict[str, list[float]]:
    return rates_in_child({"RUSTGRAD_GEMM": kind}, threads, SHAPES, CALL_BUDGET_MACS)


def main() -> None:
    args = parse_rounds_and_threads(__doc__.splitlines()[0], rounds=3, threads=[1, 2])
    for threads in args.threads:
        runs = alternate(["own", "crate"], args.rounds, run, threads)
        print(f"{threads} thread(s)      shape     own kernel        crate   (GFLOP/s)")
        for m, k, n in SHAPES:
            name = f"{m}x{k}x{n}"
            print(f"  {name:>20}  {median_and_best(runs['own'], name):>15} {median_and_best(runs['crate'], name):>15}")

if __name__ == "__main__":
    main()
