"""The report's rows that ran slower than numpy in the 22:34 report of 2026-12-03 (reductions
along a dim, ``norm``, ``cat``, ``layer_norm``/``batch_norm`` and the ``DataLoader`` epoch), the
other ``prod`` rows, the ``embedding`` and ``max_pool2d`` cases, and the cross-entropy of
512×1000 logits (slower than numpy in the report of 2026-12-06 17:48) with the log-softmax
inside it, and scans of a matrix along each dim, timed in one process beside numpy's equivalents.

    python benchmarks/slow_rows.py [--label new] [--rounds 15] [--threads 1] [--only prod]

Each figure is the fastest of ``--rounds`` rounds, in µs per call, with the ratio to numpy from
the same run. To compare two builds, run this script from each build's environment in turn
(alternating processes), as docs/performance.md does.
"""

from __future__ import annotations

import argparse
import sys
import timeit
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rustgrad  # noqa: E402
from coverage_cases import CASES  # noqa: E402

Row = tuple[str, Callable[[], Any], Callable[[], Any]]


def reduction_rows() -> list[Row]:
    # Values near 1, as in test_bench_reductions.py.
    flat = np.random.default_rng(0).uniform(0.999, 1.001, 1 << 20).astype(np.float32)
    tall = np.random.default_rng(0).uniform(0.999, 1.001, 1 << 24).astype(np.float32).reshape(-1, 1024)
    t, t_tall = rustgrad.from_numpy(flat), rustgrad.from_numpy(tall)
    m, a = t.reshape(-1, 1024), flat.reshape(-1, 1024)
    return [
        ("`max(dim)` 1M", lambda: m.max(1), lambda: np.max(a, 1)),
        ("`argmax(1)` 1M", lambda: m.argmax(1), lambda: np.argmax(a, 1)),
        ("`amax(1)` 1M", lambda: m.amax(1), lambda: np.max(a, 1)),
        ("`amax(0)` 1M", lambda: m.amax(0), lambda: np.max(a, 0)),
        ("`sum(0)` 1M", lambda: m.sum(0), lambda: np.sum(a, 0)),
        ("`sum(0)` 16M", lambda: t_tall.sum(0), lambda: np.sum(tall, 0)),
        ("`prod(0)` 1M", lambda: m.prod(0), lambda: np.prod(a, 0)),
        ("`prod(0)` 16M", lambda: t_tall.prod(0), lambda: np.prod(tall, 0)),
        ("`prod(1)` 1M", lambda: m.prod(1), lambda: np.prod(a, 1)),
        ("`prod` 1M", lambda: t.prod(), lambda: np.prod(flat)),
        ("`norm(dim=0)` 1M", lambda: m.norm(dim=0), lambda: np.linalg.norm(a, axis=0)),
        ("`sum` 1M", lambda: t.sum(), lambda: np.sum(flat)),
        ("`norm` 1M", lambda: t.norm(), lambda: np.linalg.norm(flat)),
    ]


def case_rows() -> list[Row]:
    rows = []
    for name in ["cat", "layer_norm", "batch_norm", "data_loader", "embedding", "max_pool2d"]:
        case = CASES[name]
        rows.append((case.label, case.ours(), case.theirs()))
    return rows


def loss_rows() -> list[Row]:
    import rustgrad.nn.functional as F
    from test_bench_losses import cross_entropy_step, numpy_cross_entropy_step

    rng = np.random.default_rng(0)
    logits = rng.standard_normal((512, 1000)).astype(np.float32)
    target = rng.integers(0, 1000, 512)
    x, t = rustgrad.tensor(logits, requires_grad=True), rustgrad.tensor(target, dtype=rustgrad.int64)
    plain = rustgrad.tensor(logits)

    def numpy_log_softmax() -> np.ndarray:
        shifted = logits - logits.max(1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(1, keepdims=True))

    return [
        (
            "cross_entropy 512x1000, forward + backward",
            lambda: cross_entropy_step(x, t),
            lambda: numpy_cross_entropy_step(logits, target),
        ),
        ("`log_softmax(1)` 512x1000", lambda: F.log_softmax(plain, 1), numpy_log_softmax),
    ]


def scan_rows() -> list[Row]:
    matrix = np.random.default_rng(0).uniform(0.999, 1.001, (1024, 1024)).astype(np.float32)
    m = rustgrad.from_numpy(matrix)
    return [
        ("`cumsum(0)` 1024x1024", lambda: m.cumsum(0), lambda: np.cumsum(matrix, 0)),
        ("`cumsum(1)` 1024x1024", lambda: m.cumsum(1), lambda: np.cumsum(matrix, 1)),
        ("`cumprod(0)` 1024x1024", lambda: m.cumprod(0), lambda: np.cumprod(matrix, 0)),
    ]


def fastest(call: Callable[[], Any], rounds: int, calls: int = 10) -> float:
    return min(timeit.repeat(call, number=calls, repeat=rounds)) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="", help="a tag printed on every line (say, old or new)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, help="rustgrad's kernel threads (default: all cores)")
    parser.add_argument("--only", default="", help="only the rows whose label contains this text")
    args = parser.parse_args()
    if args.threads:
        rustgrad.set_num_threads(args.threads)
    print(f"rustgrad from {Path(rustgrad.__file__).parent}, {rustgrad.get_num_threads()} threads")
    rows = [row for row in reduction_rows() + case_rows() + loss_rows() + scan_rows() if args.only in row[0]]
    for label, ours, theirs in rows:
        us, numpy_us = fastest(ours, args.rounds), fastest(theirs, args.rounds)
        print(f"{args.label} {label:52s} {us:9.1f} µs   numpy {numpy_us:9.1f} µs   {us / numpy_us:5.2f}×")


if __name__ == "__main__":
    main()
