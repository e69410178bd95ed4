"""The last 1 to 4 columns of float32 products past their last whole panel of 16, on our
AVX2 kernel (the default on CPUs with AVX2 and FMA), against the `gemm` crate's half-filled
8-lane kernel, which `RUSTGRAD_GEMM_EDGE=crate` restores. See rust/kernels/edge_columns.rs.

Times products with such an edge (the seed step's 100 columns leave 4), one without
(96 columns, the control), and the seed step itself, static and eager. Each configuration
runs in its own process and the processes alternate, so that a change of the machine's
state reaches both sides. Prints, per row, the median over the rounds of each process's
median µs, and in brackets the best process's median.

    python benchmarks/edge_columns.py [--rounds 5] [--threads 1 2]
"""

from __future__ import annotations

from switch_timing import compare

# (m, k, n, A stored transposed): the seed step's two products first.
SHAPES = [(64, 1000, 100, False), (1000, 64, 100, True), (64, 1000, 96, False), (1000, 64, 96, True),
          (64, 100, 1000, False), (256, 256, 260, False), (512, 784, 100, True)]

CONFIGURATIONS = {"ours": {}, "crate": {"RUSTGRAD_GEMM_EDGE": "crate"}}


if __name__ == "__main__":
    compare(__doc__.splitlines()[0], CONFIGURATIONS, SHAPES)
