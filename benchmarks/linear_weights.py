"""Products x·Wᵀ with W stored (out, in) by rows, as a torch ``Linear`` holds its weight, against
numpy's ``x @ W.T``: small batches against large weights, where the product used to go to the
`gemm` crate, and an LSTM step's h·W_hhᵀ (16×128 by 512×128) with its projected input added
(``addmm``). Each ``--build NAME=DIR`` and the installed build run in processes of their own,
alternating (see `product_rates.alternate`); numpy runs in each process.

    python benchmarks/linear_weights.py [--rounds 3] [--threads 2] [--build NAME=DIR ...]

Prints, per row, the median over the rounds of each process's median µs, and numpy's.
"""

from __future__ import annotations

import json

from product_rates import compare_builds_with_numpy

# (batch m, in_features k, out_features n)
SHAPES = [(1, 512, 512), (2, 512, 512), (4, 1024, 256), (8, 512, 512), (16, 128, 512), (16, 512, 128),
          (32, 512, 512), (64, 128, 512), (64, 784, 256), (256, 256, 256)]

CHILD = """
import json, sys
import numpy as np
import rustgrad
from call_timing import median_call_us

rustgrad.set_num_threads(int(sys.argv[1]))
rng = np.random.default_rng(0)
calls = {}
with rustgrad.no_grad():
    for m, k, n in json.loads(sys.argv[2]):
        x_np, w_np = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((n, k), dtype=np.float32)
        x, w_t = rustgrad.from_numpy(x_np), rustgrad.from_numpy(w_np).t()
        calls[f"x @ Wᵀ {m}x{k}x{n}"] = (lambda x=x, w_t=w_t: x @ w_t, lambda x=x_np, w=w_np: x @ w.T)
    h_np, w_np = rng.standard_normal((16, 128), dtype=np.float32), rng.standard_normal((512, 128), dtype=np.float32)
    xp_np = rng.standard_normal((16, 512), dtype=np.float32)
    h, w_t, xp = rustgrad.from_numpy(h_np), rustgrad.from_numpy(w_np).t(), rustgrad.from_numpy(xp_np)
    calls["addmm(xp, h, W_hhᵀ) 16x128x512"] = (lambda: rustgrad.addmm(xp, h, w_t), lambda: xp_np + h_np @ w_np.T)
    # All of ours first: after a product of numpy's, OpenBLAS's worker spins on for about 0.1 s
    # and takes the core our second thread needs (docs/performance.md, "Mixed with numpy").
    ours = {name: median_call_us(pair[0], 300, warmup=50) for name, pair in calls.items()}
    theirs = {name: median_call_us(pair[1], 300, warmup=50) for name, pair in calls.items()}
result = {name: [ours[name], theirs[name]] for name in calls}
print(json.dumps(result))
"""


def main() -> None:
    compare_builds_with_numpy(__doc__.splitlines()[0], CHILD, [json.dumps(SHAPES)])


if __name__ == "__main__":
    main()
