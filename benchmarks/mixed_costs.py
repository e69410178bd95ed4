"""What the work between two seed steps costs the next step: rustgrad's seed step after
different kinds of work in the same process, against the steps back to back.

    python benchmarks/mixed_costs.py [--modes eager,static] [--threads N] [--steps 300] [--repeats 3]

It splits the mixed loop's cost (``mixed_numpy.py``) into its causes. Before each step runs:

- ``nothing``: the steps back to back (the "alone" of ``mixed_numpy.py``);
- ``busy 800 µs``: a Python loop for 800 µs, which touches no memory: the cost of the pause
  alone (our spin helpers park after ``get_spin_us()``, 300 µs by default, and must be woken);
- ``sleep 800 µs``: the same pause asleep (both cores idle);
- ``read 16 MB``: numpy sums a 16 MB array on one thread: our data leave the caches;
- ``pipeline``: ``mixed_numpy.py``'s batch preparation (a gather, a standardisation and a
  64×1000×1000 product on numpy's BLAS threads);
- ``pipeline, BLAS on 1 thread``: the same with numpy's BLAS limited to one thread
  (threadpoolctl), so that no OpenBLAS worker spins on the other core.

Each line is rustgrad's µs per step (median of the repeats, which alternate the kinds) and
its excess over ``nothing``. ``--threads 1`` runs our kernels on the calling thread only (no
helper to wake), which separates the cost of the caches from that of the wake-ups.
numpy runs on its best BLAS kernel: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are removed from
this process's environment (the script re-executes itself).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from best_blas import reexec_without_slowing_variables  # noqa: E402

reexec_without_slowing_variables()

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import rustgrad  # noqa: E402
from mixed_numpy import PREPARED, Pipeline, Step, eager_step, settle  # noqa: E402
from rustgrad._demo import Problem  # noqa: E402
from steps import static_batch_step  # noqa: E402

PAUSE_US = 800
READ_BYTES = 16 << 20


def busy(us: float) -> None:
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass


def kinds_of_work(problem: Problem) -> dict[str, Callable[[], object]]:
    pipeline = Pipeline(problem)
    big = np.ones(READ_BYTES // 4, np.float32)

    def pipeline_on_one_blas_thread() -> object:
        with threadpool_limits(1, user_api="blas"):
            return pipeline.next_batch()

    return {
        "nothing": lambda: None,
        f"busy {PAUSE_US} µs": lambda: busy(PAUSE_US),
        f"sleep {PAUSE_US} µs": lambda: time.sleep(PAUSE_US * 1e-6),
        "read 16 MB": big.sum,
        "pipeline": pipeline.next_batch,
        "pipeline, BLAS on 1 thread": pipeline_on_one_blas_thread,
    }


def step_time(step: Step, before: Callable[[], object], batches: list[np.ndarray], steps: int) -> float:
    """µs per step, each step after one call of ``before`` (not timed)."""
    total = 0.0
    for i in range(steps):
        before()
        start = time.perf_counter()
        step(batches[i % len(batches)])
        total += time.perf_counter() - start
    return 1e6 * total / steps


def measure(mode: str, steps: int, repeats: int) -> dict[str, float]:
    problem = Problem.make(0)
    step = (eager_step if mode == "eager" else static_batch_step)(problem)
    source = Pipeline(problem, seed=2)
    batches = [source.next_batch() for _ in range(PREPARED)]
    kinds = kinds_of_work(problem)
    for before in kinds.values():
        step_time(step, before, batches, 30)
    times: dict[str, list[float]] = {name: [] for name in kinds}
    for _ in range(repeats):
        for name, before in kinds.items():
            settle()
            times[name].append(step_time(step, before, batches, steps))
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="eager,static")
    parser.add_argument("--threads", type=int, default=None, help="kernel threads (default: all cores)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.threads is not None:
        rustgrad.set_num_threads(args.threads)
    print(f"rustgrad {rustgrad.__version__} on {rustgrad.get_num_threads()} thread(s), "
          f"spin {rustgrad.get_spin_us()} µs; µs per seed step, median of {args.repeats} x {args.steps} steps")
    for mode in args.modes.split(","):
        medians = measure(mode, args.steps, args.repeats)
        alone = medians["nothing"]
        for name, us in medians.items():
            print(f"  {mode:<7} after {name:<28} {us:7.1f}  {us - alone:+7.1f}", flush=True)


if __name__ == "__main__":
    main()
