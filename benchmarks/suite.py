"""How benchmarks/report.py runs the pytest-benchmark suite, and reads the medians of its JSON file
(also used by compare_reports.py to time rows again)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def command(json_path: Path, max_time: float, tests: list[str] | None = None) -> list[str]:
    """The pytest command that runs ``tests`` (node ids; default: the whole suite) and writes ``json_path``."""
    return [sys.executable, "-m", "pytest", *(tests or [str(ROOT / "benchmarks")]), "-q", "-p", "no:cacheprovider",
            f"--benchmark-json={json_path}", "--benchmark-disable-gc", "--benchmark-warmup=on",
            # pytest-benchmark's warmup would otherwise run up to as many rounds as the timing itself
            f"--benchmark-max-time={max_time}", "--benchmark-warmup-iterations=20"]


def medians(data: dict) -> dict[str, dict]:
    # pytest-benchmark's statistics are per call, also for pedantic(iterations=N). JSON files written
    # before the overhead benchmarks used pedantic hold the time of `calls_per_round` calls instead.
    return {b["name"]: {"median": b["stats"]["median"] / b.get("extra_info", {}).get("calls_per_round", 1),
                        "extra": b.get("extra_info", {})}
            for b in data["benchmarks"]}


def node_ids() -> dict[str, str]:
    """The suite's pytest node ids by test name (a row's key)."""
    listing = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-p", "no:cacheprovider",
                              str(ROOT / "benchmarks")], capture_output=True, text=True, cwd=ROOT).stdout
    return {line.split("::", 1)[1]: line.strip() for line in listing.splitlines() if "::" in line}


def medians_of(ids: list[str], env: dict[str, str], max_time: float = 0.5) -> dict[str, dict]:
    """`medians` of the tests ``ids`` (node ids), timed as the report's suite times them, in a process
    with the environment ``env``."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "timed_again.json"
        subprocess.run(command(path, max_time, ids), env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
        if not path.exists():  # a failing test still leaves the others' results
            raise RuntimeError(f"pytest wrote no results for {len(ids)} benchmark(s), starting with {ids[0]}")
        return medians(json.loads(path.read_text()))
