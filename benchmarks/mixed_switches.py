"""Which thread runs when: each thread's context switches and CPU time over the seed step
alone and mixed with a numpy pipeline (the loop of ``mixed_numpy.py``).

    python benchmarks/mixed_switches.py [--spin 300] [--mode static|eager] [--steps 200]

For each loop it prints µs per step and, per thread that ran, its voluntary and
involuntary context switches and its CPU time (from ``/proc/self/task``, so Linux only).
The caller is the thread that runs the loop; ``rustgrad-spin-*`` are our helpers, and the
other threads are numpy's (OpenBLAS's workers). A helper with few switches and little CPU
time in the mixed loop, beside a worker with much, was held off its core: the caller then
ran the helper's parts itself.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mixed_numpy  # noqa: E402  (re-executes without the variables that slow OpenBLAS)
import rustgrad  # noqa: E402
from thread_counters import thread_counters  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spin", type=int, default=rustgrad.get_spin_us(), help="rustgrad.set_spin_us")
    parser.add_argument("--mode", choices=("static", "eager"), default="static")
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    rustgrad.set_spin_us(args.spin)
    step, prepare, batches = mixed_numpy.warmed_up(args.mode, "pipeline")
    caller = threading.get_native_id()
    loops = {
        "alone": lambda: mixed_numpy.time_alone(step, batches, args.steps),
        "mixed": lambda: mixed_numpy.time_mixed(step, prepare, args.steps)[0],
    }
    for label, loop in loops.items():
        mixed_numpy.settle()
        before = thread_counters(caller)
        started = time.perf_counter()
        per_step = loop()
        wall_ms = 1e3 * (time.perf_counter() - started)
        after = thread_counters(caller)
        print(f"{args.mode} step {label}, spin {args.spin} µs: {per_step:.0f} µs per step, {wall_ms:.0f} ms in all")
        for thread, (voluntary, involuntary, cpu_ms) in after.items():
            if thread not in before:
                continue
            was = before[thread]
            moved = (voluntary - was[0], involuntary - was[1], cpu_ms - was[2])
            if any(moved):
                switches = f"{moved[0]:5d} voluntary {moved[1]:5d} involuntary"
                print(f"  {thread:24} switches: {switches}   CPU {moved[2]:4.0f} ms")


if __name__ == "__main__":
    main()
