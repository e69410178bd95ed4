"""A 10,000-iteration static ``while_loop`` whose body is one scalar add, beside the same
loop written in Python over eager tensors: the static loop runs in Rust, with no Python per
iteration (issue 16's target: under 20 ms in total, under 2 µs per iteration); and the loop run
with its gradient (``tf.gradients``: a gradient loop of as many iterations, also in Rust).

    python benchmarks/control_flow.py [--iterations 10000] [--rounds 7]

Each figure is the best of ``--rounds`` runs (after one warm-up run), the two interleaved.
Timings on a shared machine are noisy: repeat, and compare the ratio from one run.
"""

from __future__ import annotations

import argparse
import time

import rustgrad
import rustgrad.compat.v1 as tf


def static_loop(iterations: int) -> tuple[object, object, object]:
    """The session, the loop's outputs, and the gradient of its sum with respect to its start
    (a gradient loop of as many iterations, also run in Rust)."""
    graph = tf.Graph()
    with graph.as_default():
        start = tf.constant(0.0)
        out = tf.while_loop(lambda i, s: i < iterations, lambda i, s: (i + 1, s + 1.0), (tf.constant(0), start))
        (grad,) = tf.gradients(out[1], [start])
    return tf.Session(graph=graph), out, grad


def eager_loop(iterations: int) -> float:
    """The same loop over eager tensors: the counter, its test and both adds are tensor ops."""
    i, s = rustgrad.tensor(0, dtype=rustgrad.int32), rustgrad.tensor(0.0)
    while bool(i < iterations):
        i, s = i + 1, s + 1.0
    return float(s)


def best_seconds(fn: object, rounds: int) -> float:
    fn()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    sess, out, grad = static_loop(args.iterations)
    assert sess.run(out)[1] == args.iterations
    assert sess.run(grad) == 1.0
    assert eager_loop(args.iterations) == args.iterations
    static = best_seconds(lambda: sess.run(out), args.rounds)
    eager = best_seconds(lambda: eager_loop(args.iterations), args.rounds)
    both = best_seconds(lambda: sess.run([out, grad]), args.rounds)
    n = args.iterations
    print(f"while_loop, {n} iterations of one scalar add (best of {args.rounds}):")
    print(f"  static tf.while_loop (Rust) : {static * 1e3:8.2f} ms total, {static / n * 1e6:6.3f} us/iteration")
    print(f"  eager Python loop           : {eager * 1e3:8.2f} ms total, {eager / n * 1e6:6.3f} us/iteration")
    print(f"  the Python loop takes {eager / static:.1f}x the static loop's time (target: static < 20 ms, < 2 us/it)")
    print(f"  loop + its tf.gradients     : {both * 1e3:8.2f} ms total ({(both - static) / n * 1e6:6.3f} us per "
          "gradient iteration)")


if __name__ == "__main__":
    main()
