"""What kernel_choice.py, row_bands.py and column_bands.py share: GFLOP/s of `a.mm(b)` for
float32 operands of given shapes, timed in their child processes, and the rounds of
alternating processes with their summary."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

Results = dict[str, list[float]]


def product_rates(shapes: list[list[int]], call_budget_macs: int, min_calls: int) -> Results:
    """For each (m, k, n): [GFLOP/s of the median call, of the best call], keyed "mxkxn"."""
    import numpy as np  # here, so that the parent scripts import neither numpy nor rustgrad

    import rustgrad

    rng = np.random.default_rng(0)
    rates = {}
    for m, k, n in shapes:
        a = rustgrad.from_numpy(rng.random((m, k), dtype=np.float32))
        b = rustgrad.from_numpy(rng.random((k, n), dtype=np.float32))
        a.mm(b)
        times = []
        for _ in range(max(min_calls, call_budget_macs // (m * k * n))):
            start = time.perf_counter()
            a.mm(b)
            times.append(time.perf_counter() - start)
        flops = 2 * m * k * n
        rates[f"{m}x{k}x{n}"] = [flops / statistics.median(times) / 1e9, flops / min(times) / 1e9]
    return rates


RATES_CHILD = """
import json, sys
import rustgrad
from product_rates import product_rates
rustgrad.set_num_threads(int(sys.argv[1]))
print(json.dumps(product_rates(json.loads(sys.argv[2]), int(sys.argv[3]), min_calls=int(sys.argv[4]))))
"""


def child_results(child: str, environment: dict[str, str], args: list[str]) -> Results:
    """The JSON that the Python source ``child`` prints, run with ``args`` in a fresh process
    whose environment adds ``environment`` and this folder to the module path."""
    env = dict(os.environ, **environment)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parent), env.get("PYTHONPATH")]))
    command = [sys.executable, "-c", child, *args]
    return json.loads(subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout)


def rates_in_child(environment: dict[str, str], threads: int, shapes: list, call_budget_macs: int,
                   min_calls: int = 20) -> Results:
    """`product_rates` of ``shapes`` on ``threads`` threads, in a fresh process (see `child_results`)."""
    args = [str(threads), json.dumps(shapes), str(call_budget_macs), str(min_calls)]
    return child_results(RATES_CHILD, environment, args)


def parse_rounds_and_threads(description: str, rounds: int, threads: list[int],
                             builds: bool = False) -> argparse.Namespace:
    """``--rounds`` and ``--threads`` (several counts allowed), with these defaults, and with
    ``builds`` also ``--build NAME=DIR`` (see `build_configurations`); prints the time."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--threads", type=int, nargs="+", default=threads)
    if builds:
        parser.add_argument("--build", action="append", default=[], metavar="NAME=DIR",
                            help="also time the rustgrad package in DIR/rustgrad (DIR holding, say, a copy "
                                 "of python/rustgrad made after `maturin develop` at an earlier commit), as "
                                 "configuration NAME")
    args = parser.parse_args()
    if builds:
        args.build = build_configurations(parser, args.build)
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), f"{args.rounds} rounds")
    return args


def build_configurations(parser: argparse.ArgumentParser, builds: list[str]) -> dict[str, dict[str, str]]:
    """``NAME=DIR`` options as configurations whose processes find DIR's rustgrad first on the module
    path; stops with a usage error when DIR holds no rustgrad package or a NAME repeats."""
    configurations: dict[str, dict[str, str]] = {}
    for build in builds:
        name, _, folder = build.partition("=")
        if not name or not (Path(folder) / "rustgrad" / "__init__.py").is_file():
            parser.error(f"--build {build!r}: expected NAME=DIR where DIR/rustgrad/__init__.py exists")
        if name in configurations:
            parser.error(f"--build {build!r}: the name {name!r} is given twice")
        configurations[name] = build_environment(folder)
    return configurations


def build_environment(folder: str) -> dict[str, str]:
    """The environment that puts ``folder`` (holding a rustgrad build) first on a child's module path."""
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(Path(folder).resolve()), os.environ.get("PYTHONPATH")]))}


def alternate(
    configurations: list[str], rounds: int, run: Callable[[str, int], Results], threads: int
) -> dict[str, list[Results]]:
    """`rounds` rounds, each running `run(configuration, threads)` (a process) for every configuration
    in turn, the order rotating from round to round so that no configuration always runs first."""
    runs: dict[str, list[Results]] = {name: [] for name in configurations}
    for r in range(rounds):
        shift = r % len(configurations)
        for name in configurations[shift:] + configurations[:shift]:
            runs[name].append(run(name, threads))
    return runs


def median_and_best(results: list[Results], row: str, better: Callable = max) -> str:
    """"median (best)": the median over the processes of their medians, and the best call."""
    median = statistics.median(r[row][0] for r in results)
    return f"{median:6.1f} ({better(r[row][1] for r in results):6.1f})"


def compare_builds_with_numpy(description: str, child: str, child_args: list[str]) -> None:
    """Runs ``child`` (Python source printing ``{row: [our µs, numpy's µs]}`` as JSON, given the
    thread count and then ``child_args``) in the installed build and in every ``--build NAME=DIR``,
    alternating for ``--rounds`` rounds on each of ``--threads``, and prints per row the median over
    the rounds of each build's µs and of numpy's."""
    args = parse_rounds_and_threads(description, rounds=3, threads=[2], builds=True)
    configurations = {"installed": {}, **args.build}
    names = list(configurations)

    def run(name: str, threads: int) -> Results:
        return child_results(child, configurations[name], [str(threads), *child_args])

    for threads in args.threads:
        runs = alternate(names, args.rounds, run, threads)
        print(f"\n{threads} thread(s), µs (median over {args.rounds} rounds)")
        print("| row | " + " | ".join(names) + " | numpy |")
        print("|---|" + "---|" * (len(names) + 1))
        for row in runs[names[0]][0]:
            ours = [statistics.median(r[row][0] for r in runs[name]) for name in names]
            numpy = statistics.median(r[row][1] for name in names for r in runs[name])
            print(f"| {row} | " + " | ".join(f"{v:.1f}" for v in ours) + f" | {numpy:.1f} |")
