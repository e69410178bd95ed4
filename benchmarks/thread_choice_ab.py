"""Does the per-shape thread choice (`RUSTGRAD_THREAD_CHOICE=measure`, rust/kernels/thread_choice.rs)
beat always using every thread (the default, `fixed`)? Runs the seed step (benchmarks/step_times.py)
and the digits CNN step (benchmarks/digits_modes.py) under both settings, alternating processes,
and prints each run's step times and the median ratio measure / fixed (below 1: measuring wins).

    python benchmarks/thread_choice_ab.py [--rounds 4]

digits_modes.py needs scikit-learn; without it only the seed step runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHOICES = ("fixed", "measure")
SEED_ROWS = {"seed eager": "rustgrad eager (custom Function)", "seed static": "rustgrad static (Session.run)",
             "seed numpy": "numpy in-place"}
DIGITS_ROWS = {"digits eager": "eager  step:", "digits static": "static step:"}


def run(script: str, choice: str, extra: list[str]) -> str:
    env = dict(os.environ, RUSTGRAD_THREAD_CHOICE=choice)
    done = subprocess.run([sys.executable, str(HERE / script), *extra], env=env, capture_output=True, text=True,
                          check=True)
    return done.stdout


def number_after(text: str, label: str) -> float:
    match = re.search(re.escape(label) + r"\s+([0-9.]+) µs", text)
    if match is None:
        raise RuntimeError(f"no {label!r} in:\n{text}")
    return float(match.group(1))


def one_run(choice: str, digits: bool) -> dict[str, float]:
    out = run("step_times.py", choice, ["--steps", "400", "--repeats", "5"])
    times = {row: number_after(out, label) for row, label in SEED_ROWS.items()}
    if digits:
        out = run("digits_modes.py", choice, ["--steps", "60", "--rounds", "5", "--warmup", "20"])
        times.update({row: number_after(out, label) for row, label in DIGITS_ROWS.items()})
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="pairs of runs (default 4)")
    args = parser.parse_args()
    digits = importlib.util.find_spec("sklearn") is not None
    results: dict[str, list[dict[str, float]]] = {c: [] for c in CHOICES}
    for r in range(args.rounds):
        for choice in CHOICES if r % 2 == 0 else CHOICES[::-1]:
            times = one_run(choice, digits)
            results[choice].append(times)
            print(f"round {r + 1} {choice:<7} " + ", ".join(f"{k} {v:.0f}" for k, v in times.items()), flush=True)
    print("\nmedian µs per step and ratio measure / fixed (per round, then median)")
    for row in results["fixed"][0]:
        fixed = [t[row] for t in results["fixed"]]
        measured = [t[row] for t in results["measure"]]
        ratios = [m / f for m, f in zip(measured, fixed)]
        print(f"  {row:<14} fixed {statistics.median(fixed):8.1f}  measure {statistics.median(measured):8.1f}  "
              f"ratio {statistics.median(ratios):.3f} (rounds: {', '.join(f'{x:.2f}' for x in ratios)})")


if __name__ == "__main__":
    main()
