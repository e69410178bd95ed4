"""Which state the machine is in now, by the benchmark report's own rule: numpy's in-place
seed step (64×1000×100×10, float32) as a multiple of its floor (its FLOPs ÷ the FMA peak
measured now on all cores). Within 2.6× is the normal state; beyond, the slow state in which
memory-heavy steps take about twice as long while the FMA peak stays the same.

    python benchmarks/machine_state.py [--rounds 7] [--series 40]

It takes a few seconds, so it can run before and after a measurement to say which state
that measurement was in (the state can change within seconds). ``--series N`` then times N
rounds of 200 steps back to back and prints each round's µs per step, which shows how long
each state lasts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from best_blas import reexec_without_slowing_variables  # noqa: E402

reexec_without_slowing_variables()

import fma_probe  # noqa: E402
from call_timing import median_call_us  # noqa: E402
from floor import NUMPY_NEAR_FLOOR, floor_seconds, machine_state, two_layer_step_flops  # noqa: E402
from rustgrad._demo import Problem  # noqa: E402
from steps import numpy_step  # noqa: E402

STEPS_PER_ROUND = 200


def numpy_seed_step_seconds(problem: Problem, rounds: int) -> float:
    """Median seconds per in-place numpy step (the report's baseline) over ``rounds`` rounds of 200."""
    step = numpy_step(problem, in_place=True)
    return median_call_us(step, STEPS_PER_ROUND, rounds=rounds, warmup=STEPS_PER_ROUND) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds of 200 steps (default 7)")
    parser.add_argument("--series", type=int, default=0, help="then print N rounds' µs per step, back to back")
    args = parser.parse_args()
    peak = fma_probe.measure()
    problem = Problem.make(0)  # the report's seed problem
    seconds = numpy_seed_step_seconds(problem, args.rounds)
    (n, d_in), (hidden, d_out) = problem.x.shape, problem.w2.shape
    floor = floor_seconds(two_layer_step_flops(n, d_in, hidden, d_out), peak.all_threads)
    print(f"numpy in-place seed step: {seconds * 1e6:.0f} µs; floor {floor * 1e6:.0f} µs "
          f"(FMA peak {peak.all_threads:.0f} GFLOP/s on {peak.threads} threads, {peak.isa})")
    print(machine_state(seconds / floor))
    if args.series:
        step = numpy_step(problem, in_place=True)
        rounds = [median_call_us(step, STEPS_PER_ROUND, rounds=1, warmup=0) for _ in range(args.series)]
        print(f"µs per step in {args.series} rounds of {STEPS_PER_ROUND} steps, in order (normal state up to "
              f"{NUMPY_NEAR_FLOOR * floor * 1e6:.0f}): " + " ".join(f"{us:.0f}" for us in rounds))


if __name__ == "__main__":
    main()
