"""Where the time of one large static training step goes, node by node.

    python benchmarks/large_step_trace.py [--sizes 1024,4096,4096,1000] [--runs 7]

Runs the reference TF1 step (rustgrad._demo.build_static) on a problem of the
given sizes (N, D_in, H, D_out), prints the median time per step, then the
median time of every node over `--runs` traced runs (at least three;
RunOptions(trace=True)).
RUSTGRAD_BUFFER_POOL=0 turns the reuse of freed buffers off for the process,
RUSTGRAD_DISABLE_FUSION=1 the plan's fusions, RAYON_NUM_THREADS=1 the second
thread. `--sizes 64,1000,100,10 --runs 300` traces the seed step.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rustgrad.static as tf  # noqa: E402
from rustgrad._demo import build_static  # noqa: E402
from steps import scaled_problem  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1024,4096,4096,1000")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    sizes = tuple(int(v) for v in args.sizes.split(","))
    problem = scaled_problem(sizes)  # type: ignore[arg-type]
    graph, t = build_static(problem)
    sess = tf.Session(graph=graph)
    sess.run(t["init"])
    feed = {t["x"]: problem.x, t["y"]: problem.y}
    fetches = [t["loss"], *t["train"]]
    for _ in range(2):
        sess.run(fetches, feed_dict=feed)
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        sess.run(fetches, feed_dict=feed)
        times.append(time.perf_counter() - start)
    print(f"static step {'x'.join(map(str, sizes))}: {1e3 * statistics.median(times):.2f} ms (median of {args.runs})")
    per_node: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    for _ in range(max(3, args.runs)):
        metadata = tf.RunMetadata()
        sess.run(fetches, feed_dict=feed, options=tf.RunOptions(trace=True), run_metadata=metadata)
        for name, op, seconds in metadata.node_times:
            per_node[(name, op)].append(seconds)
    for (name, op), seconds in per_node.items():
        print(f"  {1e6 * statistics.median(seconds):10.1f} µs  {op:<25} {name}")


if __name__ == "__main__":
    main()
