"""rustgrad's seed training step in a loop that prepares each batch with numpy, as a data
pipeline does, against the same steps alone: does each library's threads get in the other's way?

    python benchmarks/mixed_numpy.py [--steps 300] [--repeats 5] [--spins 300,0] [--threads N] [--json PATH]

The seed step is the reference two-layer net (64×1000×100×10, float32), eager (custom
Function ReLU) and static (one Session.run), each fed a new batch per step. Two kinds of
numpy work run between steps:

- ``pipeline``: draw 64 rows of a 4096×1000 data set at random, standardise them with the
  data set's mean and std, and project them through a 1000×1000 matrix (a whitening: a BLAS
  product, so numpy's threads run too);
- ``numpy-step``: one step of the same net in numpy (in place), as the issue measured.

"alone" runs rustgrad's steps back to back on batches prepared beforehand (and numpy's work
back to back), "mixed" alternates them; each figure is the median over the repeats, which
alternate alone and mixed. It prints rustgrad's step time alone and mixed and their ratio
(the target: mixed ≤ 1.15× alone), and the same for numpy's work between the steps,
for every spin setting in ``--spins`` (``rustgrad.set_spin_us``). numpy runs on its best
BLAS kernel: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are removed from this process's
environment (the script re-executes itself). ``--json`` also writes the lines to a file
(benchmarks/report.py reads it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from best_blas import reexec_without_slowing_variables  # noqa: E402

reexec_without_slowing_variables()

import numpy as np  # noqa: E402

import rustgrad  # noqa: E402
from numpy_steps import InPlaceNumpyStep  # noqa: E402
from rustgrad._demo import Problem  # noqa: E402
from steps import eager_batch_step, static_batch_step  # noqa: E402

DATA_ROWS = 4096
PREPARED = 32  # batches prepared up front for the "alone" loops

Step = Callable[[np.ndarray], float]


class Pipeline:
    """numpy's side: the next batch of a shuffled, standardised, whitened data set."""

    def __init__(self, problem: Problem, seed: int = 1) -> None:
        self.rng = np.random.default_rng(seed)
        d_in = problem.x.shape[1]
        self.data = self.rng.standard_normal((DATA_ROWS, d_in)).astype(np.float32) * 3 + 1
        self.mean = self.data.mean(axis=0)
        self.std = self.data.std(axis=0)
        q, _ = np.linalg.qr(self.rng.standard_normal((d_in, d_in)))
        self.whitening = q.astype(np.float32)
        self.batch = problem.x.shape[0]

    def next_batch(self) -> np.ndarray:
        rows = self.rng.integers(0, DATA_ROWS, self.batch)
        x = self.data[rows]
        x -= self.mean
        x /= self.std
        return x @ self.whitening


def eager_step(problem: Problem) -> Step:
    train_on = eager_batch_step(problem)
    return lambda batch: train_on(rustgrad.from_numpy(batch))


def between_steps(kind: str, problem: Problem) -> Callable[[], np.ndarray]:
    """The numpy work done before each mixed step; returns the batch the step trains on."""
    pipeline = Pipeline(problem)
    if kind == "pipeline":
        return pipeline.next_batch
    numpy_step = InPlaceNumpyStep(problem.x, problem.y, problem.w1.copy(), problem.w2.copy())
    batches = [pipeline.next_batch() for _ in range(PREPARED)]
    count = iter(range(1 << 62))

    def numpy_then_batch() -> np.ndarray:
        numpy_step()
        return batches[next(count) % PREPARED]

    return numpy_then_batch


def time_alone(step: Step, batches: list[np.ndarray], steps: int) -> float:
    """µs per step, steps back to back."""
    start = time.perf_counter()
    for i in range(steps):
        step(batches[i % len(batches)])
    return 1e6 * (time.perf_counter() - start) / steps


def time_numpy_alone(prepare: Callable[[], np.ndarray], steps: int) -> float:
    """µs per call of numpy's work, calls back to back."""
    start = time.perf_counter()
    for _ in range(steps):
        prepare()
    return 1e6 * (time.perf_counter() - start) / steps


def time_mixed(step: Step, prepare: Callable[[], np.ndarray], steps: int) -> tuple[float, float]:
    """µs per rustgrad step and per numpy call, alternating with no pause."""
    in_step = in_numpy = 0.0
    for _ in range(steps):
        start = time.perf_counter()
        batch = prepare()
        middle = time.perf_counter()
        step(batch)
        in_step += time.perf_counter() - middle
        in_numpy += middle - start
    return 1e6 * in_step / steps, 1e6 * in_numpy / steps


def settle() -> None:
    """Lets spinning threads (numpy's and ours) park before the next measurement."""
    time.sleep(0.2)


def warmed_up(mode: str, kind: str) -> tuple[Step, Callable[[], np.ndarray], list[np.ndarray]]:
    """The step, numpy's work between steps and the batches prepared for "alone", each run
    30 times (plans, buffer pool, helpers)."""
    problem = Problem.make(0)
    step = (eager_step if mode == "eager" else static_batch_step)(problem)
    prepare = between_steps(kind, problem)
    source = Pipeline(problem, seed=2)
    batches = [source.next_batch() for _ in range(PREPARED)]
    time_alone(step, batches, 30)
    time_mixed(step, prepare, 30)
    return step, prepare, batches


def measure(mode: str, kind: str, spin: int, args: argparse.Namespace) -> tuple[float, float, float, float]:
    """Median µs per step: rustgrad alone, rustgrad mixed, numpy alone, numpy mixed."""
    rustgrad.set_spin_us(spin)
    step, prepare, batches = warmed_up(mode, kind)
    alone, mixed, numpy_alone, numpy_mixed = [], [], [], []
    for _ in range(args.repeats):
        settle()
        alone.append(time_alone(step, batches, args.steps))
        settle()
        numpy_alone.append(time_numpy_alone(prepare, args.steps))
        settle()
        ours, theirs = time_mixed(step, prepare, args.steps)
        mixed.append(ours)
        numpy_mixed.append(theirs)
    return tuple(statistics.median(t) for t in (alone, mixed, numpy_alone, numpy_mixed))  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="steps per timed loop (default 300)")
    parser.add_argument("--repeats", type=int, default=5, help="alone/mixed pairs per line (default 5)")
    parser.add_argument("--spins", default=f"{rustgrad.get_spin_us()},0",
                        help="spin settings in µs (default: current,0)")
    parser.add_argument("--modes", default="eager,static")
    parser.add_argument("--kinds", default="pipeline,numpy-step")
    parser.add_argument("--threads", type=int, default=None, help="kernel threads (default: all cores)")
    parser.add_argument("--json", type=Path, help="also write the lines here, as a list of objects (µs)")
    args = parser.parse_args()
    if args.threads is not None:
        rustgrad.set_num_threads(args.threads)
    spins = [int(s) for s in args.spins.split(",")]
    print(f"rustgrad {rustgrad.__version__}, {rustgrad.get_num_threads()} thread(s); numpy {np.__version__}; "
          f"{args.repeats} x {args.steps} steps per loop; µs per rustgrad step (median)")
    print(f"  {'':<7} {'':<20} {'':>7} {'rustgrad step':^30}  {'numpy between steps':^30}")
    print(f"  {'mode':<7} {'numpy between steps':<20} {'spin µs':>7} {'alone':>8} {'mixed':>8}  mixed/alone"
          f"  {'alone':>8} {'mixed':>8}  mixed/alone")
    lines = []
    for kind in args.kinds.split(","):
        for mode in args.modes.split(","):
            for spin in spins:
                alone, mixed, np_alone, np_mixed = measure(mode, kind, spin, args)
                print(f"  {mode:<7} {kind:<20} {spin:>7} {alone:8.1f} {mixed:8.1f}  {mixed / alone:11.2f}"
                      f"  {np_alone:8.1f} {np_mixed:8.1f}  {np_mixed / np_alone:11.2f}", flush=True)
                lines.append({"mode": mode, "kind": kind, "spin_us": spin, "alone": alone, "mixed": mixed,
                              "numpy_alone": np_alone, "numpy_mixed": np_mixed})
    if args.json is not None:
        args.json.write_text(json.dumps(lines, indent=1) + "\n")


if __name__ == "__main__":
    main()
