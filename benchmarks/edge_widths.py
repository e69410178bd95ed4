"""The last, narrow panel of a product: what its columns cost beside whole 32-column panels.

The seed step's forward product (64×1000×100) and weight gradient (1000×64×100, A
transposed) end in a tile of 4 columns. This script times those shapes with 96 to 128
columns, so each row shows what a last tile of 1, 4, 8 or 16 columns adds to 96 (three whole
panels), and the seed step itself, static and eager. Each configuration and each
``--build NAME=DIR`` runs in its own process and the processes alternate (see
`switch_timing.compare`).

    python benchmarks/edge_widths.py [--rounds 5] [--threads 1 2] [--build NAME=DIR ...]

(DIR/rustgrad: another build, e.g. a copy of python/rustgrad made on a `tried/...` branch.)
"""

from __future__ import annotations

from switch_timing import compare

# (m, k, n, A stored transposed)
SHAPES = [(64, 1000, n, False) for n in (96, 97, 100, 104, 112, 128)] + [
    (1000, 64, n, True) for n in (96, 100, 104, 128)
]

CONFIGURATIONS: dict[str, dict[str, str]] = {"installed": {}}


if __name__ == "__main__":
    compare(__doc__.splitlines()[0], CONFIGURATIONS, SHAPES)
