"""The Python side of `Session.run`: what a run costs beyond the one call into Rust.

    python benchmarks/session_overhead.py [--rounds 3]

Two graphs: a tiny one (`x * 2 + 1` of one element, fetched alone and with a variable's
assign), and the reference TF1 seed step (fetching the loss and both assigns, fed x and y).
For each it prints the time of `sess.run`, of the bare `SessionCore.run` it makes, and of
`sess.run` with `SessionCore.run` replaced by a stub that returns the results at once (the
Python side alone). Best of several timeit repeats, the rounds interleaved. Run it with
PYTHONPATH pointing at two builds to compare them.
"""

from __future__ import annotations

import argparse
import timeit
from typing import Any, Callable

import numpy as np

import rustgrad
import rustgrad.compat.v1 as tf
from rustgrad._demo import Problem, build_static


class StubCore:
    """Stands in for a session's SessionCore: every run returns the same results at once."""

    closed = False

    def __init__(self, results: list[Any]) -> None:
        self.results = results

    def run(self, *args: Any) -> list[Any]:
        return self.results


def best_us(call: Callable[[], Any], number: int) -> float:
    return min(timeit.repeat(call, number=number, repeat=5)) / number * 1e6


def cases(sess: Any, fetches: Any, feed: dict, number: int) -> dict[str, Callable[[], float]]:
    """The three timings of one ``sess.run(fetches, feed)``."""
    fetched = fetches if isinstance(fetches, list) else [fetches]
    ids = [f._id for f in fetched]
    fed = sorted((key._id, value) for key, value in feed.items())
    fed_ids, fed_values = [i for i, _ in fed], [v for _, v in fed]
    core = sess._core
    stub = StubCore(core.run(ids, fed_ids, fed_values, None, None))

    def stubbed() -> float:
        sess._core = stub
        try:
            return best_us(lambda: sess.run(fetches, feed), number)
        finally:
            sess._core = core

    return {"sess.run": lambda: best_us(lambda: sess.run(fetches, feed), number),
            "SessionCore.run": lambda: best_us(lambda: core.run(ids, fed_ids, fed_values, None, None), number),
            "Python side alone": stubbed}


def tiny() -> dict[str, dict[str, Callable[[], float]]]:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, shape=(1,))
        y = x * 2.0 + 1.0
        w = tf.Variable(np.ones((1,), np.float32))
        train = w.assign(w - 0.1 * y)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    sess.run(init)
    feed = {x: np.array([1.0], np.float32)}
    return {"tiny graph, fetch y": cases(sess, y, feed, 20_000),
            "tiny graph, fetch [y, assign]": cases(sess, [y, train], feed, 20_000)}


def seed() -> dict[str, dict[str, Callable[[], float]]]:
    problem = Problem.make(0)
    graph, t = build_static(problem)
    sess = tf.Session(graph=graph)
    sess.run(t["init"])
    feed = {t["x"]: problem.x, t["y"]: problem.y}
    return {"seed step, fetch [loss, assign, assign]": cases(sess, [t["loss"], *t["train"]], feed, 300)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs = tiny() | seed()
    best: dict[tuple[str, str], float] = {}
    for _ in range(args.rounds):
        for run, timings in runs.items():
            for name, timing in timings.items():
                best[run, name] = min(best.get((run, name), float("inf")), timing())
    print(f"rustgrad from {rustgrad.__file__}; µs per call, best of {args.rounds} rounds")
    for run, timings in runs.items():
        print(f"  {run}: " + ", ".join(f"{name} {best[run, name]:.2f}" for name in timings))


if __name__ == "__main__":
    main()
