"""Instructions per one-element `a + b` (rustgrad with and without requires_grad, and
numpy), and per tiny reverse pass (`(a * b).sum().backward()` of one-element leaves),
counted with valgrind's callgrind: a loop of N calls minus a loop of none, over N.
Unlike wall-clock time, the count does not move with the machine's state, so it judges
small changes to the per-op path; the figures in docs/performance.md come from it.

    python benchmarks/op_instructions.py [--adds 20000] [--kinds numpy,no_grad,requires_grad,backward]

Needs `valgrind` on the PATH (Debian: `apt install valgrind`); takes about a minute.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

LOOP = """
import sys
kind, n = sys.argv[1], int(sys.argv[2])
if kind == "numpy":
    import numpy as np
    a, b = np.array([1.0]), np.array([2.0])
else:
    import rustgrad
    grad = kind in ("requires_grad", "backward")
    a, b = rustgrad.tensor([1.0], requires_grad=grad), rustgrad.tensor([2.0], requires_grad=grad)
def loop(a, b, n):
    for _ in range(n):
        a + b
def backward_loop(a, b, n):
    for _ in range(n):
        (a * b).sum().backward()
(backward_loop if kind == "backward" else loop)(a, b, n)
"""


def instructions(script: str, kind: str, adds: int) -> int:
    with tempfile.TemporaryDirectory() as scratch:
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={scratch}/out",
                   sys.executable, script, kind, str(adds)]
        result = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    found = re.search(r"Collected : (\d+)", result.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no total:\n{result.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adds", type=int, default=20_000, help="calls per counted loop")
    parser.add_argument("--kinds", default="numpy,no_grad,requires_grad,backward")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("op_instructions.py needs valgrind on the PATH")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(LOOP)
    try:
        for kind in args.kinds.split(","):
            per_call = (instructions(f.name, kind, args.adds) - instructions(f.name, kind, 0)) / args.adds
            what = "reverse pass" if kind == "backward" else "add"
            print(f"  {kind:<14} {per_call:7.0f} instructions per {what}")
    finally:
        os.unlink(f.name)


if __name__ == "__main__":
    main()
