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
import os
import statistics
import subprocess
import sys

SIZES = [(64, 100), (256, 1024), (1024, 4096)]

CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import rustgrad
from call_timing import median_call_us
rng = np.random.default_rng(0)
times = {}
for rows, cols in json.loads(sys.argv[2]):
    x = rustgrad.from_numpy(rng.standard_normal((rows, cols), dtype=np.float32)).requires_grad_()
    g = rustgrad.from_numpy(rng.standard_normal((rows, cols), dtype=np.float32))
    y = rustgrad.relu(x)
    calls = max(int(sys.argv[3]), 2_000_000 // (rows * cols))
    times[f"{rows}x{cols}"] = median_call_us(lambda: rustgrad.autograd.grad(y, x, g, retain_graph=True), calls)
print(json.dumps(times))
"""


def time_build(build: str | None, min_calls: int) -> dict[str, float]:
    env = dict(os.environ)
    if build:
        env["PYTHONPATH"] = build
    here = os.path.dirname(os.path.abspath(__file__))
    command = [sys.executable, "-c", CHILD, here, json.dumps(SIZES), str(min_calls)]
    return json.loads(subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--builds", nargs="+", default=[None])
    parser.add_argument("--min-calls", type=int, default=20, help="calls per size at least (more for small sizes)")
    args = parser.parse_args()
    runs: dict[str | None, list[dict[str, float]]] = {build: [] for build in args.builds}
    for r in range(args.rounds):
        for build in args.builds if r % 2 == 0 else args.builds[::-1]:
            runs[build].append(time_build(build, args.min_calls))
    for build, rounds in runs.items():
        cells = [f"{size} {statistics.median(t[size] for t in rounds):.2f} µs" for size in rounds[0]]
        print(f"{build or 'installed'}: " + ", ".join(cells))


if __name__ == "__main__":
    main()
