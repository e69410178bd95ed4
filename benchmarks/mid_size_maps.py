"""Special functions of mid-size float32 tensors (16K to 256K elements), where a map runs on one
thread or on all of them: `exp`, `tanh`, `sigmoid` and `log` against numpy, and `abs` (a cheap map)
beside them. Each ``--build NAME=DIR`` and the installed build run in processes of their own,
alternating (see `product_rates.alternate`); numpy runs in each process, after ours.

    python benchmarks/mid_size_maps.py [--rounds 3] [--threads 2] [--build NAME=DIR ...]

Prints, per row, the median over the rounds of each process's median µs, and numpy's.
"""

from __future__ import annotations

import json

from product_rates import compare_builds_with_numpy

SIZES = [1 << 14, 1 << 15, 1 << 16, 1 << 17, 1 << 18]

CHILD = """
import json, sys
import numpy as np
import rustgrad
from call_timing import median_call_us

rustgrad.set_num_threads(int(sys.argv[1]))
calls = {}
for n in json.loads(sys.argv[2]):
    a = np.random.default_rng(n).uniform(-4, 4, n).astype(np.float32)
    x = rustgrad.from_numpy(a)
    positive_np = np.abs(a) + 0.01
    positive = rustgrad.from_numpy(positive_np)
    for name, ours, theirs in [
        ("exp", lambda x=x: x.exp(), lambda a=a: np.exp(a)),
        ("tanh", lambda x=x: x.tanh(), lambda a=a: np.tanh(a)),
        ("sigmoid", lambda x=x: x.sigmoid(), lambda a=a: 1 / (1 + np.exp(-a))),
        ("log", lambda p=positive: p.log(), lambda p=positive_np: np.log(p)),
        ("abs", lambda x=x: x.abs(), lambda a=a: np.abs(a)),
    ]:
        calls[f"{name} {n // 1024}K"] = (ours, theirs)
ours = {name: median_call_us(pair[0], 200, warmup=20) for name, pair in calls.items()}
theirs = {name: median_call_us(pair[1], 200, warmup=20) for name, pair in calls.items()}
print(json.dumps({name: [ours[name], theirs[name]] for name in calls}))
"""


def main() -> None:
    compare_builds_with_numpy(__doc__.splitlines()[0], CHILD, [json.dumps(SIZES)])


if __name__ == "__main__":
    main()
