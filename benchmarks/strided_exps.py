"""Float32 ops whose special functions ran outside the vectorised loops until 2026-12-07: softmax
and log-softmax along a dim other than the last (many short rows side by side) and their backward,
log-softmax's backward along the last dim, cross-entropy of (N, C, H, W) logits (a batch of 32,
and one image's forward), and the binary special ops against a row or a number (broadcast).
Float32, timed in one process beside numpy's equivalents.

    python benchmarks/strided_exps.py [--rounds 7] [--threads 2] [--only softmax]

Each figure is the fastest of ``--rounds`` rounds of 10 calls, in µs per call, with the ratio to
numpy from the same run. To compare two builds, run it with each build first on ``PYTHONPATH``,
in turn.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

import rustgrad
import rustgrad.nn.functional as F
from special_functions import Row, run


def log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - x.max(axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis, keepdims=True))


def softmax_rows(x: np.ndarray, g: np.ndarray) -> list[Row]:
    leaf = rustgrad.tensor(x, requires_grad=True)
    grad = rustgrad.from_numpy(g)

    def step(fn: Callable[..., rustgrad.Tensor], dim: int) -> Callable[[], None]:
        def run() -> None:
            leaf.grad = None
            fn(leaf, dim).backward(grad)
        return run

    def numpy_step(log: bool, axis: int) -> Callable[[], np.ndarray]:
        def run() -> np.ndarray:
            y = log_softmax(x, axis)
            if log:
                return g - np.exp(y) * g.sum(axis, keepdims=True)
            p = np.exp(y)
            return p * (g - (g * p).sum(axis, keepdims=True))
        return run

    shape = "×".join(map(str, x.shape))
    rows: list[Row] = []
    for dim in (1, 0):
        rows += [
            (f"softmax {shape}, dim {dim}", lambda d=dim: F.softmax(leaf.detach(), d),
             lambda d=dim: np.exp(log_softmax(x, d))),
            (f"softmax {shape}, dim {dim}, + backward", step(F.softmax, dim), numpy_step(False, dim)),
            (f"log_softmax {shape}, dim {dim}", lambda d=dim: F.log_softmax(leaf.detach(), d),
             lambda d=dim: log_softmax(x, d)),
            (f"log_softmax {shape}, dim {dim}, + backward", step(F.log_softmax, dim), numpy_step(True, dim)),
        ]
    return rows


def training_steps(label: str, logits: np.ndarray, g: np.ndarray, target: np.ndarray
                   ) -> tuple[list[Row], rustgrad.Tensor, rustgrad.Tensor]:
    """Log-softmax along dim 1 and cross-entropy of ``logits``, each with its backward, and numpy's
    equivalents; with the leaf and the labels, for rows of the forwards."""
    leaf = rustgrad.tensor(logits, requires_grad=True)
    grad, labels = rustgrad.from_numpy(g), rustgrad.tensor(target, dtype=rustgrad.int64)

    def log_softmax_step() -> None:
        leaf.grad = None
        F.log_softmax(leaf, 1).backward(grad)

    def cross_entropy_step() -> None:
        leaf.grad = None
        F.cross_entropy(leaf, labels).backward()

    def numpy_log_softmax_step() -> np.ndarray:
        return g - np.exp(log_softmax(logits, 1)) * g.sum(1, keepdims=True)

    def numpy_cross_entropy_step() -> np.ndarray:
        grad = np.exp(log_softmax(logits, 1))
        if logits.ndim == 2:
            grad[np.arange(target.size), target] -= 1
        else:
            np.put_along_axis(grad, target[:, None], np.take_along_axis(grad, target[:, None], 1) - 1, 1)
        return grad / target.size

    steps: list[Row] = [
        (f"log_softmax {label}, dim 1, + backward", log_softmax_step, numpy_log_softmax_step),
        (f"cross_entropy {label} + backward", cross_entropy_step, numpy_cross_entropy_step),
    ]
    return steps, leaf, labels


def short_rows(rng: np.random.Generator, classes: int) -> list[Row]:
    """Many short contiguous rows, as a classifier's (batch, classes) logits, 2M elements: a fixed
    cost per row dominated them until 2026-12-07 (200000×10 took 7× the time of 10×200000 along
    dim 0). Rows of up to 32 classes are transposed and run side by side; 64 shows the other path.
    Two classes (a binary classifier's logits) show what a class loss costs per position."""
    n = 2_000_000 // classes
    logits = rng.standard_normal((n, classes)).astype(np.float32)
    g = rng.standard_normal((n, classes)).astype(np.float32)
    target = rng.integers(0, classes, n)
    shape = f"{n}×{classes}"
    steps, leaf, labels = training_steps(shape, logits, g, target)

    def numpy_cross_entropy() -> float:
        return float(-log_softmax(logits, 1)[np.arange(target.size), target].mean())

    if classes not in (2, 10):
        return steps
    return [
        (f"log_softmax {shape}, dim 1", lambda: F.log_softmax(leaf.detach(), 1), lambda: log_softmax(logits, 1)),
        (f"softmax {shape}, dim 1", lambda: F.softmax(leaf.detach(), 1), lambda: np.exp(log_softmax(logits, 1))),
        (f"cross_entropy {shape}, forward", lambda: F.cross_entropy(leaf.detach(), labels), numpy_cross_entropy),
    ] + steps


def narrow_block_rows(rng: np.random.Generator) -> list[Row]:
    """A class dim strided by a few positions, (100000, 3, 2): until 2026-12-07 each (3, 2) block's
    two rows ran side by side alone, paying for its shifts', sums' and factors' vectors; now a task's
    blocks are gathered class-major and run side by side together."""
    logits = rng.standard_normal((100_000, 3, 2)).astype(np.float32)
    g = rng.standard_normal(logits.shape).astype(np.float32)
    target = rng.integers(0, 3, (100_000, 2))
    (log_softmax_step, cross_entropy_step), leaf, labels = training_steps("100000×3×2", logits, g, target)

    def numpy_cross_entropy() -> float:
        return float(-np.take_along_axis(log_softmax(logits, 1), target[:, None], 1).mean())

    forward: Row = ("cross_entropy 100000×3×2, forward", lambda: F.cross_entropy(leaf.detach(), labels),
                    numpy_cross_entropy)
    return [log_softmax_step, forward, cross_entropy_step]


def cross_entropy_rows(rng: np.random.Generator) -> list[Row]:
    logits = rng.standard_normal((32, 10, 32, 32)).astype(np.float32)
    target = rng.integers(0, 10, (32, 32, 32))
    leaf = rustgrad.tensor(logits, requires_grad=True)
    labels = rustgrad.tensor(target, dtype=rustgrad.int64)

    def step() -> None:
        leaf.grad = None
        F.cross_entropy(leaf, labels).backward()

    def numpy_step() -> np.ndarray:
        lp = log_softmax(logits, 1)
        grad = np.exp(lp)
        np.put_along_axis(grad, target[:, None], np.take_along_axis(grad, target[:, None], 1) - 1, 1)
        return grad / target.size

    one_image = rng.standard_normal((1, 21, 128, 128)).astype(np.float32)
    one_target = rng.integers(0, 21, (1, 128, 128))
    image, image_labels = rustgrad.from_numpy(one_image), rustgrad.tensor(one_target, dtype=rustgrad.int64)

    def numpy_forward() -> float:
        lp = log_softmax(one_image, 1)
        return float(-np.take_along_axis(lp, one_target[:, None], 1).mean())

    return [("cross_entropy 32×10×32×32 + backward", step, numpy_step),
            ("cross_entropy 1×21×128×128, forward", lambda: F.cross_entropy(image, image_labels), numpy_forward)]


def broadcast_rows(rng: np.random.Generator) -> list[Row]:
    x = (np.abs(rng.standard_normal((1024, 1024))) + 0.5).astype(np.float32)
    row = (np.abs(rng.standard_normal(1024)) + 0.5).astype(np.float32)
    tx, trow = rustgrad.from_numpy(x), rustgrad.from_numpy(row)
    number = rustgrad.tensor(np.float32(1.7))
    return [
        ("pow 1024×1024 by a row", lambda: rustgrad.pow(tx, trow), lambda: np.power(x, row)),
        ("atan2 1024×1024 by a row", lambda: rustgrad.atan2(tx, trow), lambda: np.arctan2(x, row)),
        ("maximum 1024×1024 by a row", lambda: rustgrad.maximum(tx, trow), lambda: np.maximum(x, row)),
        ("pow 1024×1024 by a 0-d tensor", lambda: rustgrad.pow(tx, number), lambda: np.power(x, np.float32(1.7))),
    ]


def rows() -> list[Row]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((512, 1000)).astype(np.float32)
    g = rng.standard_normal((512, 1000)).astype(np.float32)
    # Many short columns, each dominated by one class (as a trained model's outputs are): a
    # second pass counts the exps equal to 1 apart.
    dominated = rng.standard_normal((10, 200_000)).astype(np.float32)
    dominated[3] += 30
    tdom = rustgrad.from_numpy(dominated)
    dominated_row: Row = ("log_softmax 10×200000, dim 0, one class dominant", lambda: F.log_softmax(tdom, 0),
                          lambda: log_softmax(dominated, 0))
    short = [row for classes in (2, 10, 32, 64) for row in short_rows(rng, classes)]
    narrow = narrow_block_rows(rng)
    return softmax_rows(x, g) + [dominated_row] + short + narrow + cross_entropy_rows(rng) + broadcast_rows(rng)


def main() -> None:
    run(rows, __doc__ or "", width=48)


if __name__ == "__main__":
    main()
