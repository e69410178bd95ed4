"""The eager seed step (the reference PyTorch program, custom relu Function) timed part by part:
forward, backward, the update's temporary ``lr * w1.grad``, ``w1.sub_``, w2's update, and the
zeroing of both gradients.

    python benchmarks/eager_step_parts.py [--threads 2] [--steps 3000]

Each part's figure is the median over the timed steps, in µs. To compare two builds, run this
script from each build's environment in turn (alternating processes), as docs/performance.md does.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rustgrad  # noqa: E402
from steps import LEARNING_RATE, MyReLU, scaled_problem  # noqa: E402

PARTS = ["forward", "backward", "lr * w1.grad", "w1.sub_", "w2 update", "zero_ both grads"]


def timed_step(x, y, w1, w2) -> list[float]:
    """One step; the seconds each part took, in PARTS order."""
    marks = [time.perf_counter()]
    y_pred = MyReLU.apply(x.mm(w1)).mm(w2)
    loss = (y_pred - y).pow(2).sum()
    loss.item()
    marks.append(time.perf_counter())
    loss.backward()
    marks.append(time.perf_counter())
    with rustgrad.no_grad():
        scaled = LEARNING_RATE * w1.grad
        marks.append(time.perf_counter())
        w1.sub_(scaled)
        del scaled
        marks.append(time.perf_counter())
        w2.sub_(LEARNING_RATE * w2.grad)
        marks.append(time.perf_counter())
        w1.grad.zero_()
        w2.grad.zero_()
        marks.append(time.perf_counter())
    return [b - a for a, b in zip(marks, marks[1:])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3000)
    args = parser.parse_args()
    rustgrad.set_num_threads(args.threads)
    problem = scaled_problem((64, 1000, 100, 10))
    x, y = rustgrad.from_numpy(problem.x), rustgrad.from_numpy(problem.y)
    w1 = rustgrad.tensor(problem.w1, requires_grad=True)
    w2 = rustgrad.tensor(problem.w2, requires_grad=True)
    for _ in range(300):
        timed_step(x, y, w1, w2)
    rows = [timed_step(x, y, w1, w2) for _ in range(args.steps)]
    medians = [1e6 * statistics.median(row[i] for row in rows) for i in range(len(PARTS))]
    print(f"eager seed step, {args.threads} thread(s), rustgrad from {Path(rustgrad.__file__).parent}")
    for name, us in zip(PARTS, medians):
        print(f"  {name:18s} {us:7.1f} µs")
    print(f"  {'sum':18s} {sum(medians):7.1f} µs")


if __name__ == "__main__":
    main()
