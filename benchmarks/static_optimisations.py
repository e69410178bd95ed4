"""Before/after figures for each optimisation of the seed step (64×1000×100×10).

    python benchmarks/static_optimisations.py [--steps 300] [--repeats 5]

Each configuration runs in its own process. RUSTGRAD_DISABLE_FUSION turns off
the static plan's optimisations: `1` turns off all of them, or a list such as
`activation,mask` turns off the ones it names. RUSTGRAD_GEMM=crate uses the
`gemm` crate for every product instead of rustgrad's own AVX-512 matmul kernel.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

import best_blas

CHILD = """
import sys
from rustgrad._demo import Problem, train_eager, train_static
steps, repeats, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
train = train_static if mode == "static" else train_eager
problem = Problem.make(0)
train(problem, 20)
print(" ".join(str(train(problem, steps).us_per_step) for _ in range(repeats)))
"""

CONFIGS = [
    ("static, all optimisations", "static", {}),
    ("static, without the matmul+relu fusion", "static", {"RUSTGRAD_DISABLE_FUSION": "activation"}),
    ("static, without the squared-error fusion", "static", {"RUSTGRAD_DISABLE_FUSION": "squared_error"}),
    ("static, without the relu-mask fusion", "static", {"RUSTGRAD_DISABLE_FUSION": "mask"}),
    ("static, without the fetch copies of updates", "static", {"RUSTGRAD_DISABLE_FUSION": "fetch_copy"}),
    ("static, without updates in place", "static", {"RUSTGRAD_DISABLE_FUSION": "in_place"}),
    ("static, without the memory plan", "static", {"RUSTGRAD_DISABLE_FUSION": "memory_plan"}),
    ("static, without the fused SGD update", "static", {"RUSTGRAD_DISABLE_FUSION": "update"}),
    ("static, with all of these off", "static", {"RUSTGRAD_DISABLE_FUSION": "1"}),
    ("static, with the gemm crate for every matmul", "static", {"RUSTGRAD_GEMM": "crate"}),
    ("eager, all optimisations", "eager", {}),
    ("eager, with the gemm crate for every matmul", "eager", {"RUSTGRAD_GEMM": "crate"}),
]


def median_us(mode: str, extra_env: dict[str, str], steps: int, repeats: int) -> float:
    env = best_blas.environment()
    env.update(extra_env)
    out = subprocess.run([sys.executable, "-c", CHILD, str(steps), str(repeats), mode],
                         check=True, capture_output=True, text=True, env=env).stdout
    return statistics.median(float(v) for v in out.split())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"median µs per step, {args.repeats} runs of {args.steps} steps each")
    for label, mode, env in CONFIGS:
        print(f"  {label:<46} {median_us(mode, env, args.steps, args.repeats):8.1f}")


if __name__ == "__main__":
    main()
