"""Time per training step of the reference two-layer net: rustgrad eager and
static against hand-written numpy, measured in one process, same data.

    python benchmarks/step_times.py [--steps 500] [--repeats 5]

numpy runs on its best BLAS kernel: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are
removed from this process's environment (the script re-executes itself).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from best_blas import reexec_without_slowing_variables  # noqa: E402

reexec_without_slowing_variables()

sys.path.insert(0, str(Path(__file__).resolve().parent))

from numpy_steps import InPlaceNumpyStep, SimpleNumpyStep  # noqa: E402
from rustgrad._demo import Problem, train_eager, train_static  # noqa: E402


def settle() -> None:
    """Lets spinning BLAS threads (numpy's and ours) park before the next system runs."""
    time.sleep(0.3)


def time_numpy(step_class: type, problem: Problem, steps: int) -> float:
    settle()
    step = step_class(problem.x, problem.y, problem.w1, problem.w2)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return 1e6 * (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    problem = Problem.make(0)
    results: dict[str, list[float]] = {"rustgrad eager (custom Function)": [],
                                       "rustgrad static (Session.run)": [],
                                       "numpy in-place": [], "numpy one array per op": []}
    for _ in range(args.repeats):
        settle()
        results["rustgrad eager (custom Function)"].append(train_eager(problem, args.steps).us_per_step)
        settle()
        results["rustgrad static (Session.run)"].append(train_static(problem, args.steps).us_per_step)
        results["numpy in-place"].append(time_numpy(InPlaceNumpyStep, problem, args.steps))
        results["numpy one array per op"].append(time_numpy(SimpleNumpyStep, problem, args.steps))
    baseline = statistics.median(results["numpy in-place"])
    print(f"median µs per step over {args.repeats} runs of {args.steps} steps (64x1000x100x10, float32)")
    for name, samples in results.items():
        median = statistics.median(samples)
        print(f"  {name:<34} {median:8.1f} µs   {median / baseline:5.2f}x numpy in-place")


if __name__ == "__main__":
    main()
