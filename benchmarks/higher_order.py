"""A Hessian-vector product against one gradient, on the seed net (64x1000x100x10, float32).

    python benchmarks/higher_order.py [--rounds 5]

Times, in one process and interleaved: the gradient of the seed step's loss with respect to
(w1, w2) (one forward and one backward), and the Hessian-vector product H·v with respect to the
same weights (``autograd.functional.hvp``: the forward, a backward recorded with
``create_graph=True``, and a backward through that backward). Prints the best of each round's
median and their ratio; the issue's target is at most 3x.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import rustgrad
from rustgrad.autograd.functional import hvp

SIZES = (64, 1000, 100, 10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    n, d_in, hidden, d_out = SIZES
    rng = np.random.default_rng(0)
    x = rustgrad.tensor(rng.standard_normal((n, d_in)), dtype=rustgrad.float32)
    y = rustgrad.tensor(rng.standard_normal((n, d_out)), dtype=rustgrad.float32)
    w1 = rustgrad.tensor(rng.standard_normal((d_in, hidden)) / np.sqrt(d_in), dtype=rustgrad.float32)
    w2 = rustgrad.tensor(rng.standard_normal((hidden, d_out)) / np.sqrt(hidden), dtype=rustgrad.float32)
    v = (rustgrad.randn(d_in, hidden), rustgrad.randn(hidden, d_out))

    def loss(a: rustgrad.Tensor, b: rustgrad.Tensor) -> rustgrad.Tensor:
        return (x.mm(a).relu().mm(b) - y).pow(2).sum()

    leaves = (w1.detach().requires_grad_(True), w2.detach().requires_grad_(True))

    def gradient() -> None:
        rustgrad.autograd.grad(loss(*leaves), list(leaves))

    def hessian_vector() -> None:
        hvp(loss, (w1, w2), v)

    best = {"gradient": float("inf"), "hvp": float("inf")}
    for _ in range(args.rounds):
        for name, fn in (("gradient", gradient), ("hvp", hessian_vector)):
            for _ in range(10):
                fn()
            times = []
            for _ in range(args.calls):
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
            best[name] = min(best[name], statistics.median(times))
    print(f"seed net {'x'.join(map(str, SIZES))}, float32, {rustgrad.get_num_threads()} thread(s)")
    print(f"  gradient (forward + backward)         {best['gradient'] * 1e6:8.1f} us")
    print(f"  Hessian-vector product (hvp)          {best['hvp'] * 1e6:8.1f} us")
    print(f"  ratio                                 {best['hvp'] / best['gradient']:8.2f}x  (target: at most 3x)")


if __name__ == "__main__":
    main()
