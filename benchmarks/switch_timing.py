"""Products and the seed step timed under configurations of rustgrad's environment switches
(`RUSTGRAD_GEMM_EDGE`, `RUSTGRAD_GEMM_THREADING`, ...), for scripts that compare a change with
what it replaced. Each configuration runs in its own process and the processes alternate, so
that a change of the machine's state reaches both sides. Prints, per row, the median over the
rounds of each process's median µs, in brackets the best process's median, and after it, for
each configuration but the first, the median over the rounds of its time ÷ the first's in the
same round (the two processes ran next to each other, so mostly in the same state)."""

from __future__ import annotations

import json
import statistics

from product_rates import alternate, child_results, parse_rounds_and_threads

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

STEP_CALLS = 300


def compare(description: str, configurations: dict[str, dict[str, str]], shapes: list) -> None:
    """Times ``shapes`` ((m, k, n, A stored transposed) each) and the seed step, static and eager,
    in every configuration (a name and the environment it adds) and every ``--build NAME=DIR``
    (a folder holding another rustgrad build, first on the module path), for ``--rounds`` rounds
    on each of ``--threads``, and prints the table."""
    args = parse_rounds_and_threads(description, rounds=5, threads=[1, 2], builds=True)
    clashes = set(args.build) & set(configurations)
    if clashes:
        raise SystemExit(f"--build: {', '.join(sorted(clashes))} already names a configuration of this script")
    configurations = {**configurations, **args.build}
    names = list(configurations)

    def run(name: str, threads: int) -> dict[str, float]:
        return child_results(CHILD, configurations[name], [str(threads), json.dumps(shapes), str(STEP_CALLS)])

    for threads in args.threads:
        runs = alternate(names, args.rounds, run, threads)
        print(f"{threads} thread(s), µs  {'row':>22}  " + " ".join(f"{name:>22}" for name in names))
        for row in runs[names[0]][0]:
            cells = [cell(runs[name], runs[names[0]], row, name != names[0]) for name in names]
            print(f"  {row:>36}  " + " ".join(f"{c:>22}" for c in cells))


def cell(rounds: list[dict[str, float]], first: list[dict[str, float]], row: str, with_ratio: bool) -> str:
    """"median (best)" of a configuration's rounds, and "×ratio" to the first configuration's, round by round."""
    text = f"{statistics.median(r[row] for r in rounds):6.1f} ({min(r[row] for r in rounds):6.1f})"
    if with_ratio:
        text += f" ×{statistics.median(r[row] / f[row] for r, f in zip(rounds, first)):.3f}"
    return text
