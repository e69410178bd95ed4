"""Rows of the last report that read more than 10% worse than the report before, timed again in
two or more rustgrad builds, alternating processes: when a build that predates the change times
them as the current one does, the report's figure reflects the machine's state during the run,
not the change. Each build is a folder holding a built `rustgrad` package (for example a copy
of python/rustgrad after `maturin develop`), put first on the module path of its processes;
"" is the environment's own build. Prints each row's range of medians over the rounds, in µs.

    python benchmarks/worse_rows.py --builds "" /path/to/old/build [--rounds 3]
"""

from __future__ import annotations

import argparse
import time

from product_rates import build_environment, child_results

CHILD = """
import json, time
import numpy as np
import rustgrad as rg, rustgrad.nn.functional as F
rg.set_num_threads(2)
rng = np.random.default_rng(0)
def t(shape, grad=False):
    return rg.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=grad)
a1, b1 = t((1 << 20,)), t((1 << 20,))
m1, m2 = t((1024, 1024)), t((1024, 1024))
s = t((512, 1000), True); ln = t((256, 1024), True); mp = t((32, 16, 32, 32), True)
bn = t((32, 16, 32, 32), True); si = t((1024, 1024), True); srt = t((1024, 1024))
big = t((8192, 256)); rows = rg.tensor(rng.integers(0, 8192, 4096))
p1, p2 = t((64, 100)), t((100, 10))
def fb(f):
    def run():
        y = f(); y.sum().backward()
    return run
cases = {
    "add 1M": lambda: a1 + b1, "mul 1M": lambda: a1 * b1, "exp 1M": lambda: a1.exp(),
    "norm 1M": lambda: a1.norm(), "argmax dim0 1M": lambda: m1.argmax(0),
    "transposed view + matrix 1024²": lambda: m1.t() + m2,
    "softmax f+b 512×1000": fb(lambda: F.softmax(s, dim=1) * s),
    "layer_norm f+b 256×1024": fb(lambda: F.layer_norm(ln, (1024,))),
    "max_pool2d f+b": fb(lambda: F.max_pool2d(mp, 2)),
    "batch_norm f+b": fb(lambda: F.batch_norm(bn, None, None, training=True)),
    "silu f+b 1024²": fb(lambda: F.silu(si)),
    "sort dim1 1024²": lambda: srt.sort(dim=1),
    "x[rows] 4096 of 8192×256": lambda: big[rows],
    "matmul 1024² 2 threads": lambda: m1 @ m2,
    "matmul 64×100×10 2 threads": lambda: p1 @ p2,
}
out = {}
for name, f in cases.items():
    for _ in range(5): f()
    ts = []
    budget = time.perf_counter() + 0.6
    while time.perf_counter() < budget or len(ts) < 7:
        st = time.perf_counter(); f(); ts.append(time.perf_counter() - st)
    ts.sort(); out[name] = ts[len(ts) // 2] * 1e6
print(json.dumps(out))
"""


def timed_in(build: str) -> dict[str, float]:
    return child_results(CHILD, build_environment(build) if build else {}, [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", nargs="+", default=[""])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), f"{args.rounds} rounds, 2 threads, median µs")
    runs: dict[str, list[dict[str, float]]] = {build: [] for build in args.builds}
    for _ in range(args.rounds):
        for build in args.builds:
            runs[build].append(timed_in(build))
    names = [build or "this environment" for build in args.builds]
    print(f"{'row':34s} " + " ".join(f"{name[-24:]:>24s}" for name in names))
    for row in runs[args.builds[0]][0]:
        cells = []
        for build in args.builds:
            values = sorted(r[row] for r in runs[build])
            cells.append(f"{values[0]:10.1f}–{values[-1]:10.1f}")
        print(f"{row:34s} " + " ".join(f"{cell:>24s}" for cell in cells))


if __name__ == "__main__":
    main()
