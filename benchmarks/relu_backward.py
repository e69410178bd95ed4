"""The backward mask of relu (``g`` where ``x > 0``, else 0) at three sizes, in the builds
given, each in its own process, the processes alternating: µs per call of
``rustgrad.autograd.grad`` through one relu, the median over the rounds of each process's
median. The static seed step's fused ``Where`` node runs the same loop on 64×100.

    python benchmarks/relu_backward.py [--rounds 4] [--builds DIR ...]

(DIR/rustgrad: a build, e.g. a copy of python/rustgrad; without --builds, the installed one.)
"""

from __future__ import annotations

import argparse
import json
import statistics

from product_rates import alternate, build_environment, child_results

SIZES = [(64, 100), (256, 1024), (1024, 4096)]

CHILD = r"""
import json, sys
import numpy as np
import rustgrad
from call_timing import median_call_us
rng = np.random.default_rng(0)
times = {}
for rows, cols in json.loads(sys.argv[1]):
    x = rustgrad.from_numpy(rng.standard_normal((rows, cols), dtype=np.float32)).requires_grad_()
    g = rustgrad.from_numpy(rng.standard_normal((rows, cols), dtype=np.float32))
    y = rustgrad.relu(x)
    calls = max(int(sys.argv[2]), 2_000_000 // (rows * cols))
    times[f"{rows}x{cols}"] = median_call_us(lambda: rustgrad.autograd.grad(y, x, g, retain_graph=True), calls)
print(json.dumps(times))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--builds", nargs="+", default=["installed"])
    parser.add_argument("--min-calls", type=int, default=20, help="calls per size at least (more for small sizes)")
    args = parser.parse_args()

    def run(build: str, _threads: int) -> dict[str, float]:
        environment = {} if build == "installed" else build_environment(build)
        return child_results(CHILD, environment, [json.dumps(SIZES), str(args.min_calls)])

    runs = alternate(args.builds, args.rounds, run, 0)
    for build, rounds in runs.items():
        cells = [f"{size} {statistics.median(t[size] for t in rounds):.2f} µs" for size in rounds[0]]
        print(f"{build}: " + ", ".join(cells))


if __name__ == "__main__":
    main()
