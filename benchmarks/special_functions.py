"""Float32 special functions (the ones that were a C library call per element until
2026-12-06, and powers until 2026-12-07) and the activations built on them, 1M elements, timed in one process
beside numpy's equivalents where numpy has one (numpy has no erf, so `erf` and `gelu` print their
time alone).

    python benchmarks/special_functions.py [--rounds 7] [--threads 2] [--only gelu]

Each figure is the fastest of ``--rounds`` rounds of 10 calls, in µs per call, with the ratio to
numpy from the same run. To compare two builds, run this script from each build's environment in
turn (alternating processes), as docs/performance.md does.
"""

from __future__ import annotations

import argparse
import timeit
from typing import Any, Callable, Optional

import numpy as np

import rustgrad
import rustgrad.nn.functional as F

Row = tuple[str, Callable[[], Any], Optional[Callable[[], Any]]]


def rows() -> list[Row]:
    rng = np.random.default_rng(0)
    normal = rng.standard_normal(1 << 20).astype(np.float32)
    above_one = (np.abs(normal) + 1.0).astype(np.float32)
    inside_one = np.clip(normal / 4, -0.99, 0.99).astype(np.float32)
    other = rng.standard_normal(1 << 20).astype(np.float32)
    x, x_above, x_inside, y = (rustgrad.from_numpy(a) for a in (normal, above_one, inside_one, other))
    grad = rustgrad.tensor(normal, requires_grad=True)
    ones = rustgrad.ones(1 << 20)

    def step(activation: Callable[[Any], Any]) -> Callable[[], None]:
        def forward_and_backward() -> None:
            grad.grad = None
            activation(grad).backward(ones)

        return forward_and_backward

    def numpy_gelu_tanh() -> np.ndarray:
        inner = np.float32(0.7978846) * (normal + np.float32(0.044715) * normal**3)
        return np.float32(0.5) * normal * (np.float32(1) + np.tanh(inner))

    return [
        ("`exp`", lambda: x.exp(), lambda: np.exp(normal)),
        ("`log`", lambda: x_above.log(), lambda: np.log(above_one)),
        ("`sin`", lambda: x.sin(), lambda: np.sin(normal)),
        ("`exp2`", lambda: x.exp2(), lambda: np.exp2(normal)),
        ("`log2`", lambda: x_above.log2(), lambda: np.log2(above_one)),
        ("`log10`", lambda: x_above.log10(), lambda: np.log10(above_one)),
        ("`expm1`", lambda: x.expm1(), lambda: np.expm1(normal)),
        ("`log1p`", lambda: x_above.log1p(), lambda: np.log1p(above_one)),
        ("`sinh`", lambda: x.sinh(), lambda: np.sinh(normal)),
        ("`cosh`", lambda: x.cosh(), lambda: np.cosh(normal)),
        ("`asinh`", lambda: x.asinh(), lambda: np.arcsinh(normal)),
        ("`acosh`", lambda: x_above.acosh(), lambda: np.arccosh(above_one)),
        ("`atanh`", lambda: x_inside.atanh(), lambda: np.arctanh(inside_one)),
        ("`cos`", lambda: x.cos(), lambda: np.cos(normal)),
        ("`tanh`", lambda: x.tanh(), lambda: np.tanh(normal)),
        ("`tan`", lambda: x.tan(), lambda: np.tan(normal)),
        ("`atan`", lambda: x.atan(), lambda: np.arctan(normal)),
        ("`asin`", lambda: x_inside.asin(), lambda: np.arcsin(inside_one)),
        ("`acos`", lambda: x_inside.acos(), lambda: np.arccos(inside_one)),
        ("`atan2`", lambda: rustgrad.atan2(x, y), lambda: np.arctan2(normal, other)),
        ("`xlogy`", lambda: rustgrad.xlogy(x, x_above), lambda: normal * np.log(above_one)),
        ("`logaddexp`", lambda: rustgrad.logaddexp(x, y), lambda: np.logaddexp(normal, other)),
        ("`erf`", lambda: x.erf(), None),
        ("`gelu`", lambda: F.gelu(x), None),
        ("`gelu` forward + backward", step(F.gelu), None),
        ("`gelu(approximate='tanh')`", lambda: F.gelu(x, approximate="tanh"), numpy_gelu_tanh),
        ("`x ** 2`", lambda: x**2, lambda: normal**2),
        ("`x ** 3`", lambda: x_above**3, lambda: above_one ** np.float32(3)),
        ("`x ** -1`", lambda: x_above**-1, lambda: above_one ** np.float32(-1)),
        ("`x ** 1.5`", lambda: x_above**1.5, lambda: above_one ** np.float32(1.5)),
        ("`2 ** x`", lambda: 2**x, lambda: np.float32(2) ** normal),
        ("`pow(x, y)`", lambda: rustgrad.pow(x_above, y), lambda: np.power(above_one, other)),
        ("`elu`", lambda: F.elu(x), lambda: np.where(normal > 0, normal, np.expm1(normal))),
        ("`softplus`", lambda: F.softplus(x), lambda: np.log1p(np.exp(normal))),
        ("`logsigmoid`", lambda: F.logsigmoid(x), lambda: -np.logaddexp(0, -normal)),
        ("`sigmoid`", lambda: x.sigmoid(), lambda: np.float32(1) / (np.float32(1) + np.exp(-normal))),
        ("`silu`", lambda: F.silu(x), lambda: normal / (np.float32(1) + np.exp(-normal))),
        ("`selu`", lambda: F.selu(x), lambda: np.where(normal > 0, normal, np.expm1(normal))),
        ("`silu` forward + backward", step(F.silu), None),
        ("`softplus` forward + backward", step(F.softplus), None),
        ("`elu` forward + backward", step(F.elu), None),
    ]


def fastest(call: Callable[[], Any], rounds: int, calls: int = 10) -> float:
    return min(timeit.repeat(call, number=calls, repeat=rounds)) / calls * 1e6


def run(rows: Callable[[], list[Row]], description: str, width: int = 28) -> None:
    """Times each row of ``rows()`` beside numpy's equivalent (where it has one), with the command
    line of these scripts: ``--rounds``, ``--threads``, ``--only``."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None, help="rustgrad's threads (default: all)")
    parser.add_argument("--only", default="", help="only rows whose label contains this")
    args = parser.parse_args()
    if args.threads:
        rustgrad.set_num_threads(args.threads)
    print(f"rustgrad from {rustgrad.__file__}")
    for label, ours, theirs in rows():
        if args.only not in label:
            continue
        mine = fastest(ours, args.rounds)
        if theirs is None:
            print(f"{label:{width}s} {mine:9.1f} µs")
            continue
        numpy_time = fastest(theirs, args.rounds)
        print(f"{label:{width}s} {mine:9.1f} µs   numpy {numpy_time:9.1f} µs   {mine / numpy_time:5.2f}×")


def main() -> None:
    run(rows, __doc__ or "", width=30)


if __name__ == "__main__":
    main()
