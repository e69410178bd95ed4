"""The seed training step three ways, interleaved in one run: eager, ``rustgrad.compile``d eager,
and static (one ``Session.run``), and the ratios between them (issue 18 §1's target: compiled at
most 1.05× static).

    python benchmarks/compile_seed.py [--steps 200] [--repeats 7] [--threads N] [--relu builtin]
        [--numpy [--openblas-idle 0.3]]

Each repeat times ``--steps`` steps of each mode back to back, in rotating order; the figure per
mode is the median over the repeats. The compiled step is warmed up first (its first calls trace).
State the machine's load (``uptime``) with the figures: other processes change them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rustgrad  # noqa: E402
from best_blas import reexec_without_slowing_variables  # noqa: E402
from call_timing import median_call_us, median_step_us  # noqa: E402
from rustgrad._demo import Problem  # noqa: E402
from steps import compiled_batch_step, eager_batch_step, numpy_step, static_batch_step  # noqa: E402

OPENBLAS_IDLE = 0.3  # s; OpenBLAS's worker spins for 2**28 cycles (about 0.1 s) after its last job


def _time(step, arg, steps: int, per_call_median: bool = False) -> float:
    """µs per step over ``steps`` steps: their mean, or with ``per_call_median`` the median of the
    steps' own times (as pytest-benchmark reports the suite's rows)."""
    if per_call_median:
        return median_step_us(lambda: step(arg), steps)
    return median_call_us(lambda: step(arg), steps, rounds=1, warmup=0)


def interleaved_medians(problem: Problem, repeats: int = 7, steps: int = 200, custom: bool = True,
                        numpy: bool = False, openblas_idle: float | None = None) -> dict[str, float]:
    """The median of each mode's rounds of `interleaved_rounds`."""
    rounds = interleaved_rounds(problem, repeats, steps, custom, numpy, openblas_idle)
    return {name: statistics.median(t) for name, t in rounds.items()}


def interleaved_rounds(problem: Problem, repeats: int = 7, steps: int = 200, custom: bool = True,
                       numpy: bool = False, openblas_idle: float | None = None,
                       per_call_median: bool = False) -> dict[str, list[float]]:
    """µs per step of the eager, compiled and static seed step (and, with ``numpy``, of numpy's
    in-place step) in each of ``repeats`` rounds of ``steps`` steps per mode, the modes in rotating
    order (each round's figure as `_time` says). After numpy's round the next waits ``openblas_idle``
    seconds (default `OPENBLAS_IDLE`), so that OpenBLAS's worker has stopped spinning on the core
    our helper needs (docs/performance.md, "Mixed with numpy")."""
    idle = OPENBLAS_IDLE if openblas_idle is None else openblas_idle
    x = rustgrad.from_numpy(problem.x)
    eager = eager_batch_step(problem, custom)
    compiled = compiled_batch_step(problem, custom)
    static = static_batch_step(problem)
    modes = {"eager": (eager, x), "compiled": (compiled, x), "static": (static, problem.x)}
    if numpy:
        in_place = numpy_step(problem, in_place=True)
        modes["numpy"] = (lambda _: in_place(), None)
    times: dict[str, list[float]] = {name: [] for name in modes}
    names = list(modes)
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            step, arg = modes[name]
            times[name].append(_time(step, arg, steps, per_call_median))
            if name == "numpy":
                time.sleep(idle)
    return times


def main() -> None:
    reexec_without_slowing_variables()  # numpy's rounds (--numpy) on its best BLAS kernel
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--relu", choices=["custom", "builtin"], default="custom")
    parser.add_argument("--numpy", action="store_true", help="rotate numpy's in-place step in too")
    parser.add_argument("--openblas-idle", type=float, default=OPENBLAS_IDLE,
                        help="seconds to wait after numpy's round (default %(default)s)")
    args = parser.parse_args()
    if args.threads:
        rustgrad.set_num_threads(args.threads)
    med = interleaved_medians(Problem.make(0), args.repeats, args.steps, args.relu == "custom", args.numpy,
                              args.openblas_idle)
    names = list(med)
    print(f"seed step (64x1000x100x10 f32, {args.relu} relu), {rustgrad.get_num_threads()} threads, "
          f"load {os.getloadavg()[0]:.2f}, median of {args.repeats} x {args.steps} steps")
    for name in names:
        print(f"  {name:9s} {med[name]:8.1f} us/step")
    print(f"  compiled / static: {med['compiled'] / med['static']:.3f}x (target <= 1.05x)")
    print(f"  compiled / eager:  {med['compiled'] / med['eager']:.3f}x")
    print(f"  eager / static:    {med['eager'] / med['static']:.3f}x")


if __name__ == "__main__":
    main()
