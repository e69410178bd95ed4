"""What limits the static seed step: its two large products, each timed alone as a share of the
FMA peak measured in the same run, beside shapes that differ in one dimension, and the step's
nodes as ``python -m rustgrad profile`` times them.

    python benchmarks/seed_products.py [--threads 1 2] [--calls 400]

The seed step (64×1000×100×10) spends most of its time in ``x @ w1`` (64×1000×100) and in the
weight gradient ``x.T @ g`` (1000×64×100, fused with the SGD step in the static plan). The
shapes beside them vary the columns (96, 128: whole 16-lane vectors; 100 leaves a 4-column edge
that runs a 16-lane vector) and k (64, 256), and transpose A or not, so the table shows which
dimension costs the time. Each product is timed as ``a @ b`` through the eager API (a few µs
of call overhead included).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fma_probe  # noqa: E402
from call_timing import median_call_us  # noqa: E402

# (m, k, n, A stored transposed): the seed step's two products first.
SHAPES = [(64, 1000, 100, False), (1000, 64, 100, True), (1000, 64, 96, True), (1000, 64, 128, True),
          (1000, 256, 100, True), (1000, 64, 100, False)]


def product_rows(threads: int, peak: float, calls: int) -> list[str]:
    import numpy as np

    import rustgrad

    rustgrad.set_num_threads(threads)
    rng = np.random.default_rng(0)
    rows = []
    for m, k, n, transposed in SHAPES:
        if transposed:
            a = rustgrad.from_numpy(rng.standard_normal((k, m), dtype=np.float32)).t()
        else:
            a = rustgrad.from_numpy(rng.standard_normal((m, k), dtype=np.float32))
        b = rustgrad.from_numpy(rng.standard_normal((k, n), dtype=np.float32))
        us = median_call_us(lambda a=a, b=b: a @ b, calls)
        gflops = 2 * m * k * n / us / 1e3
        layout = "Aᵀ" if transposed else "A"
        rows.append(f"| {threads} | {m}×{k}×{n} | {layout} | {us:.1f} | {gflops:.0f} | {100 * gflops / peak:.0f}% |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--calls", type=int, default=400)
    args = parser.parse_args()
    # The best of three probes: the first run on an idle vCPU can read low.
    probes = [fma_probe.measure(max(args.threads)) for _ in range(3)]
    peaks = {threads: max(p.one_thread if threads == 1 else p.all_threads for p in probes) for threads in args.threads}
    print("FMA peak: " + ", ".join(f"{peak:.0f} GFLOP/s on {t} thread(s)" for t, peak in peaks.items()))
    print()
    print("| threads | m×k×n | A | µs | GFLOP/s | share of peak |")
    print("|---|---|---|---|---|---|")
    for threads in args.threads:
        print("\n".join(product_rows(threads, peaks[threads], args.calls)))
    print()
    for threads in args.threads:
        print(f"Static seed step's nodes on {threads} thread(s):")
        subprocess.run([sys.executable, "-c", f"import rustgrad; rustgrad.set_num_threads({threads}); "
                        "from rustgrad.__main__ import main; main(['profile', '--steps', '1000', '--top', '4'])"],
                       check=True)


if __name__ == "__main__":
    main()
