"""What fetching the updated weights costs the static seed step (64×1000×100×10): the reference
TF1 program fetches ``[loss, new_w1, new_w2]``, and ``Session.run`` returns each assign's value
as an array the caller owns (a copy of the 1000×100 w1, written by the update's product as a
second output); fetching ``[loss, tf.group(new_w1, new_w2)]`` runs the same update and returns
no weights.

    python benchmarks/static_fetches.py [--rounds 15] [--steps 200]

One session runs both fetch lists in alternating rounds; each round's figure is the median of
its steps' times (µs), and the script prints the median over the rounds and their range.
"""

from __future__ import annotations

import argparse
import statistics

import rustgrad.static as tf
from call_timing import median_step_us
from rustgrad._demo import Problem, build_static


def fetch_lists(graph: tf.Graph, t: dict) -> dict[str, list]:
    with graph.as_default():
        group = tf.group(*t["train"])
    return {"loss and both new weights (the reference)": [t["loss"], *t["train"]],
            "loss and a group of the assigns": [t["loss"], group]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    problem = Problem.make(0)
    graph, t = build_static(problem)
    session = tf.Session(graph=graph)
    session.run(t["init"])
    feed = {t["x"]: problem.x, t["y"]: problem.y}
    runs = {name: (lambda f=fetches: session.run(f, feed_dict=feed)) for name, fetches in fetch_lists(graph, t).items()}
    for run in runs.values():
        median_step_us(run, 20)
    rounds: dict[str, list[float]] = {name: [] for name in runs}
    for r in range(args.rounds):
        names = list(runs)[r % 2 :] + list(runs)[: r % 2]
        for name in names:
            rounds[name].append(median_step_us(runs[name], args.steps))
    print(f"static seed step, {args.rounds} rounds of {args.steps} steps, µs per step (median of each round's "
          "step medians, and their range)")
    for name, figures in rounds.items():
        print(f"  {name:44s} {statistics.median(figures):7.1f}  ({min(figures):.1f}–{max(figures):.1f})")


if __name__ == "__main__":
    main()
