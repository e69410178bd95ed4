"""Short, deep products as two halves of their depth (the default), against bands of rows on two
threads and one call on one thread, which `RUSTGRAD_GEMM_THREADING=rows` restores: on the `gemm`
crate (machines without AVX-512) and on our own AVX-512 kernel, where `rows` keeps the shares of
rows per thread. See `always_in_depth_halves` in rust/kernels/crate_gemm.rs.

Times the seed step's forward product (64×1000×100) and others of its kind, the weight gradient
(1000×64×100 from xᵀ, the control: bands of rows in both), and the seed step itself, static and
eager, where the forward product reads a weight that the weight gradient's bands of rows
updated. Each configuration runs in its own process and the processes alternate, so that a
change of the machine's state reaches both sides. Prints, per row, the median over the rounds
of each process's median µs, and in brackets the best process's median.

    python benchmarks/depth_halves.py [--rounds 5] [--threads 1 2] [--build before=DIR]

(DIR/rustgrad: an earlier build, e.g. a copy of python/rustgrad.)
"""

from __future__ import annotations

from switch_timing import compare

# (m, k, n, A stored transposed): the seed step's two products first.
SHAPES = [(64, 1000, 100, False), (1000, 64, 100, True), (64, 1000, 96, False), (64, 1000, 64, False),
          (32, 2000, 128, False)]

CONFIGURATIONS = {"halves": {}, "rows": {"RUSTGRAD_GEMM_THREADING": "rows"}}


if __name__ == "__main__":
    compare(__doc__.splitlines()[0], CONFIGURATIONS, SHAPES)
