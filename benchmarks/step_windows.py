"""The seed step (or the MLP step) back to back in one process, timed in windows of steps: how
steady is it, and how often do the spin helpers park? A helper that parks must be woken by the
next product, which costs the step tens of µs, so windows with parks show up as slower windows.

    python benchmarks/step_windows.py [--builds "" DIR ...] [--rounds 2] [--windows 50] [--steps 300]

Each build is a folder holding a built `rustgrad` package (for example a copy of
python/rustgrad after `maturin develop`), first on the module path of its processes; "" is
the environment's own build. The builds alternate, one process per build and mode per round.
For each, it prints the median, 90th percentile and slowest of the windows' median step
times (µs), how many windows were more than 10% slower than the median window, and the
helpers' parks per step (their voluntary context switches, read from /proc: Linux only).
"""

from __future__ import annotations

import argparse
import statistics
import time

from product_rates import build_environment, child_results

CHILD = """
import json, statistics, sys, time
import rustgrad
from rustgrad._demo import Problem
from steps import eager_step, static_step
from thread_counters import thread_counters

mode, windows, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if mode == "mlp":
    from nn_steps import MlpProblem, bare_step
    step = bare_step(MlpProblem.make(0))
else:
    problem = Problem.make(0)
    step = eager_step(problem, custom_relu=True) if mode == "eager" else static_step(problem)
for _ in range(50):
    step()

def helper_parks():
    counters = thread_counters(caller=-1).items()
    return sum(voluntary for name, (voluntary, _, _) in counters if name.startswith("rustgrad-spin"))

medians, parks = [], []
for _ in range(windows):
    before, times = helper_parks(), []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    medians.append(statistics.median(times) * 1e6)
    parks.append(helper_parks() - before)
print(json.dumps({"medians": medians, "parks": parks}))
"""


def summary(medians: list[float], parks: list[int], steps: int) -> str:
    ordered = sorted(medians)
    middle = statistics.median(ordered)
    slow = sum(m > 1.1 * middle for m in medians)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    return (f"median {middle:6.1f}  p90 {p90:6.1f}  slowest {ordered[-1]:6.1f}  "
            f"windows >10% slower {slow:3d}/{len(medians)}  parks per step {sum(parks) / steps / len(parks):5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", nargs="+", default=[""])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--windows", type=int, default=50)
    parser.add_argument("--steps", type=int, default=300, help="steps per window")
    parser.add_argument("--modes", default="eager,static",
                        help="eager, static (the seed step) or mlp (the MLP step of nn_steps.py, bare ops)")
    args = parser.parse_args()
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
          f"{args.windows} windows of {args.steps} steps per process, window medians in µs")
    for r in range(args.rounds):
        for mode in args.modes.split(","):
            for build in args.builds:
                environment = build_environment(build) if build else {}
                result = child_results(CHILD, environment, [mode, str(args.windows), str(args.steps)])
                name = (build or "this environment")[-20:]
                figures = summary(result["medians"], result["parks"], args.steps)
                print(f"round {r + 1}  {mode:6s} {name:>20s}  {figures}")


if __name__ == "__main__":
    main()
