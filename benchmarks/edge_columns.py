"""The last 1 to 8 columns of float32 products past their last whole panel of 16, on our
AVX2 kernel (the default on CPUs with AVX2 and FMA), against the `gemm` crate's half-filled
8-lane kernel, which `RUSTGRAD_GEMM_EDGE=crate` restores. See rust/kernels/edge_columns.rs.

Times products with such an edge (the seed step's 100 columns leave 4), one without
(96 columns, the control), and the seed step itself, static and eager. Each configuration
runs in its own process and the processes alternate, so that a change of the machine's
state reaches both sides. Prints, per row, the median over the rounds of each process's
median µs, and in brackets the best process's median.

    python benchmarks/edge_columns.py [--rounds 5] [--threads 1 2]
"""

from __future__ import annotations

import json
import statistics

from product_rates import alternate, child_results, parse_rounds_and_threads

# (m, k, n, A stored transposed): the seed step's two products first.
SHAPES = [(64, 1000, 100, False), (1000, 64, 100, True), (64, 1000, 96, False), (1000, 64, 96, True),
          (64, 100, 1000, False), (256, 256, 260, False), (512, 784, 100, True)]
STEP_CALLS = 300

CHILD = """
import json, sys
import numpy as np
import rustgrad
from call_timing import median_call_us
from rustgrad._demo import Problem
from steps import eager_step, static_step

def median_us(call, calls):
    return median_call_us(call, calls, warmup=calls // 4 + 2)

rustgrad.set_num_threads(int(sys.argv[1]))
rng = np.random.default_rng(0)
result = {}
for m, k, n, transposed in json.loads(sys.argv[2]):
    if transposed:
        a = rustgrad.from_numpy(rng.standard_normal((k, m), dtype=np.float32)).t()
    else:
        a = rustgrad.from_numpy(rng.standard_normal((m, k), dtype=np.float32))
    b = rustgrad.from_numpy(rng.standard_normal((k, n), dtype=np.float32))
    calls = max(50, int(2e8 / (m * k * n)))
    result[f"{m}x{k}x{n}" + ("ᵀ" if transposed else "")] = median_us(lambda: a @ b, calls)
problem = Problem.make(0)
result["seed step, static"] = median_us(static_step(problem), int(sys.argv[3]))
result["seed step, eager"] = median_us(eager_step(problem), int(sys.argv[3]))
print(json.dumps(result))
"""

CONFIGURATIONS = {"ours": {}, "crate": {"RUSTGRAD_GEMM_EDGE": "crate"}}


def run(configuration: str, threads: int) -> dict[str, float]:
    return child_results(CHILD, CONFIGURATIONS[configuration], [str(threads), json.dumps(SHAPES), str(STEP_CALLS)])


def main() -> None:
    args = parse_rounds_and_threads(__doc__.splitlines()[0], rounds=5, threads=[1, 2])
    for threads in args.threads:
        runs = alternate(list(CONFIGURATIONS), args.rounds, run, threads)
        print(f"{threads} thread(s), µs  {'row':>22}  {'ours':>15} {'crate':>15}")
        for row in runs["ours"][0]:
            cells = [f"{statistics.median(r[row] for r in runs[name]):6.1f} ({min(r[row] for r in runs[name]):6.1f})"
                     for name in CONFIGURATIONS]
            print(f"  {row:>36}  {cells[0]:>15} {cells[1]:>15}")


if __name__ == "__main__":
    main()
