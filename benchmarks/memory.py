"""Peak memory (max RSS) of the reference programs, rustgrad against numpy.

    python benchmarks/memory.py [--steps 500]

Each program runs in a fresh process: import, then the training loop.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

EAGER = """
import sys
from rustgrad._demo import Problem, train_eager
train_eager(Problem.make(0), int(sys.argv[1]))
"""

STATIC = """
import sys
from rustgrad._demo import Problem, train_static
train_static(Problem.make(0), int(sys.argv[1]))
"""

# The same data as rustgrad._demo.Problem.make(0), made with numpy alone (no rustgrad import).
NUMPY = f"""
import sys
import numpy as np
sys.path.insert(0, {str(HERE)!r})
from numpy_steps import InPlaceNumpyStep
rng = np.random.default_rng(0)
x, y, w1, w2 = (rng.standard_normal(s).astype(np.float32) for s in ((64, 1000), (64, 10), (1000, 100), (100, 10)))
step = InPlaceNumpyStep(x, y, w1, w2)
for _ in range(int(sys.argv[1])):
    step()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    args = parser.parse_args()
    # ru_maxrss of children is the maximum over all of them, so each program runs under its
    # own fresh interpreter, which reports the peak of its single child.
    results = {}
    for name, code in (("numpy in place", NUMPY), ("rustgrad eager", EAGER), ("rustgrad static", STATIC)):
        out = subprocess.run(
            [sys.executable, "-c",
             "import resource, subprocess, sys\n"
             "subprocess.run([sys.executable, '-c', sys.argv[1], sys.argv[2]], check=True)\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
             code, str(args.steps)],
            check=True, capture_output=True, text=True).stdout
        results[name] = int(out.split()[-1]) / 1024
    base = results["numpy in place"]
    print(f"peak RSS, import plus {args.steps} steps of the reference two-layer net")
    for name, mib in results.items():
        print(f"  {name:<18} {mib:7.1f} MiB   {mib / base:.2f}x numpy in place")


if __name__ == "__main__":
    main()
