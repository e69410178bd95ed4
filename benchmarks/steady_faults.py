"""Page faults per call of each workload once it is warm: a large output that is made in new
memory each call (rather than taken from the buffer pool) pays a page fault per page it
touches, every call, and fills the pool with buffers nothing takes.

    python benchmarks/steady_faults.py [--warm 60] [--calls 20] [--only softmax]

Runs rustgrad's side of every case of ``coverage_cases.py`` and ``slow_rows.py``, plus the
conv, pooling and loss steps below, ``--warm`` times, then counts the process's minor page
faults over ``--calls`` more calls. A warm workload should fault (close to) never.
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rustgrad  # noqa: E402
import rustgrad.nn.functional as F  # noqa: E402
from coverage_cases import CASES  # noqa: E402
from slow_rows import loss_rows, reduction_rows  # noqa: E402


def backward_rows() -> list[tuple[str, Callable[[], Any]]]:
    rng = np.random.default_rng(0)
    images = rustgrad.tensor(rng.standard_normal((32, 16, 32, 32), dtype=np.float32), requires_grad=True)
    kernel = rustgrad.tensor(rng.standard_normal((32, 16, 3, 3), dtype=np.float32), requires_grad=True)
    matrix = rustgrad.tensor(rng.standard_normal((1024, 1024), dtype=np.float32), requires_grad=True)
    rows = rustgrad.tensor(rng.integers(0, 1024, 4096))
    table = rustgrad.tensor(rng.standard_normal((50000, 64), dtype=np.float32), requires_grad=True)
    tokens = rustgrad.tensor(rng.integers(0, 50000, (64, 128)))

    def backward_of(make: Callable[[], rustgrad.Tensor], *leaves: rustgrad.Tensor) -> Callable[[], None]:
        def step() -> None:
            for leaf in leaves:
                leaf.grad = None
            make().sum().backward()

        return step

    return [
        ("conv2d forward + backward", backward_of(lambda: F.conv2d(images, kernel, padding=1), images, kernel)),
        ("max_pool2d(2) forward + backward", backward_of(lambda: F.max_pool2d(images, 2), images)),
        ("x[rows] forward + backward", backward_of(lambda: matrix[rows], matrix)),
        ("embedding forward + backward", backward_of(lambda: F.embedding(tokens, table), table)),
        ("cumsum(1) forward + backward", backward_of(lambda: matrix.cumsum(1), matrix)),
        ("sort(1) forward + backward", backward_of(lambda: matrix.sort(1)[0], matrix)),
        ("softmax(1) forward + backward", backward_of(lambda: F.softmax(matrix, 1) * matrix, matrix)),
        ("gelu, tanh, sigmoid forward + backward", backward_of(lambda: F.gelu(matrix).tanh().sigmoid(), matrix)),
        ("x * row + x.t() forward + backward", backward_of(lambda: matrix * matrix[0] + matrix.t(), matrix)),
        ("x @ x forward + backward", backward_of(lambda: matrix @ matrix, matrix)),
        (
            "mse_loss and l1_loss forward + backward",
            backward_of(lambda: F.mse_loss(matrix, matrix.detach() * 2) + F.l1_loss(matrix, matrix.detach()), matrix),
        ),
        ("dropout forward + backward", backward_of(lambda: F.dropout(matrix, 0.5), matrix)),
        (
            "avg_pool2d and adaptive_avg_pool2d forward + backward",
            backward_of(lambda: F.avg_pool2d(images, 2).sum() + F.adaptive_avg_pool2d(images, 4).sum(), images),
        ),
        (
            "conv_transpose2d forward + backward",
            backward_of(lambda: F.conv_transpose2d(images[:, :, :16, :16], kernel.transpose(0, 1)), images, kernel),
        ),
        (
            "pad and cat forward + backward",
            backward_of(lambda: rustgrad.cat([F.pad(matrix, (1, 1)), F.pad(matrix, (2, 0))], 0), matrix),
        ),
        ("cumprod(1) forward + backward", backward_of(lambda: (matrix * 0.001 + 1).cumprod(1), matrix)),
        (
            "gather and index_select forward + backward",
            backward_of(
                lambda: matrix.gather(1, rows.reshape(4, 1024) % 1024).sum() + matrix.index_select(0, rows).sum(),
                matrix,
            ),
        ),
        (
            "one_hot and nll_loss forward + backward",
            backward_of(
                lambda: F.nll_loss(F.log_softmax(matrix, 1), rows[:1024] % 1024) + F.one_hot(rows % 10, 10).sum(),
                matrix,
            ),
        ),
        (
            "where, clamp, abs forward + backward",
            backward_of(lambda: rustgrad.where(matrix > 0, matrix, -matrix).clamp(-1, 1).abs(), matrix),
        ),
    ]


def workloads() -> list[tuple[str, Callable[[], Any]]]:
    cases = [(case.label, case.ours()) for case in CASES.values()]
    rows = [(label, ours) for label, ours, _ in reduction_rows() + loss_rows()]
    return cases + rows + backward_rows()


def faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", type=int, default=60)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--only", default="", help="only the workloads whose label contains this text")
    args = parser.parse_args()
    print(f"rustgrad from {Path(rustgrad.__file__).parent}, {rustgrad.get_num_threads()} threads")
    for label, call in workloads():
        if args.only not in label:
            continue
        for _ in range(args.warm):
            call()
        before = faults()
        for _ in range(args.calls):
            call()
        print(f"{label:70s} {(faults() - before) / args.calls:9.1f} faults per call")


if __name__ == "__main__":
    main()
