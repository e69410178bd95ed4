"""Rows whose ratio to numpy worsened by more than 10% between two results files of
`benchmarks/report.py`, with rustgrad's and numpy's own times beside the ratios, so that a
worse ratio can be told apart from a faster numpy. Useful when the report's own comparison
(against the run before) crosses machines: compare with an earlier run on the same kind.

    python benchmarks/compare_reports.py OLD.json [NEW.json]   # NEW: benchmarks/results/last_report.json
    git show <commit>:benchmarks/results/last_report.json > old.json   # an earlier run
    python benchmarks/compare_reports.py OLD.json --rerun "" /path/to/old/build [--rounds 2]

With ``--rerun``, the worse rows that the pytest suite times are timed again, as the report times
them, in each build (a folder holding a built `rustgrad` package, put first on the module path;
"" is this environment's), the builds alternating: when the build of the old report times a row
as the current one does, the worse ratio reflects the machine during the run, not a change.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import best_blas
import suite
from product_rates import build_environment

WORSE = 1.10


def worse_rows(old: dict, new: dict) -> tuple[int, list[tuple[float, dict, dict]]]:
    """How many rows both runs have, and those whose ratio grew by more than 10%, worst first."""
    before = {(row["section"], row["label"]): row for row in old["rows"] if row.get("ratio")}
    pairs = [(before[(row["section"], row["label"])], row) for row in new["rows"]
             if row.get("ratio") and (row["section"], row["label"]) in before]
    worse = [(row["ratio"] / was["ratio"], was, row) for was, row in pairs if row["ratio"] > WORSE * was["ratio"]]
    return len(pairs), sorted(worse, key=lambda item: -item[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path, nargs="?",
                        default=Path(__file__).parent / "results" / "last_report.json")
    parser.add_argument("--rerun", nargs="+", metavar="BUILD", help="time the worse suite rows again in each build")
    parser.add_argument("--rounds", type=int, default=2, help="alternations of the builds with --rerun")
    args = parser.parse_args()
    old, new = (json.loads(path.read_text()) for path in (args.old, args.new))
    compared, worse = worse_rows(old, new)
    print(f"{old['date']} ({old['machine_state']}) -> {new['date']} ({new['machine_state']})")
    print(f"{compared} rows in both; {len(worse)} with a ratio to numpy more than 10% worse")
    print("| section | row | × numpy | rustgrad | numpy |")
    print("|---|---|---|---|---|")
    for _, was, row in worse:
        unit = row.get("unit", "s")  # older results files name no unit: they timed seconds
        rustgrad = f"{shown(was['seconds'], unit)} → {shown(row['seconds'], unit)}"
        numpy = f"{shown(was.get('numpy_seconds'), unit)} → {shown(row.get('numpy_seconds'), unit)}"
        print(f"| {row['section']} | {row['label']} | {was['ratio']:.2f} → {row['ratio']:.2f} | {rustgrad} | {numpy} |")
    if args.rerun:
        rerun([row for _, _, row in worse], args.rerun, args.rounds)


def rerun(rows: list[dict], builds: list[str], rounds: int) -> None:
    ids = suite.node_ids()
    keys = [row["key"] for row in rows if row.get("key") in ids]
    skipped = [row["label"] for row in rows if row.get("key") not in ids]
    if skipped:
        print(f"not in the pytest suite (timed by the report itself): {', '.join(skipped)}")
    runs: dict[str, list[dict[str, float]]] = {build: [] for build in builds}
    for r in range(rounds):
        shift = r % len(builds)
        for build in builds[shift:] + builds[:shift]:
            env = best_blas.environment() | (build_environment(build) if build else {})
            timed = suite.medians_of([ids[key] for key in keys], env)
            runs[build].append({name: 1e6 * m["median"] for name, m in timed.items()})
    names = [build or "this environment" for build in builds]
    print(f"\n{rounds} round(s), each build's range of medians, µs")
    print("| row | " + " | ".join(names) + " |")
    print("|---" * (len(builds) + 1) + "|")
    for key in keys:
        cells = [f"{min(r[key] for r in runs[b]):.1f}–{max(r[key] for r in runs[b]):.1f}" for b in builds]
        print(f"| {key} | " + " | ".join(cells) + " |")


def shown(value: float | None, unit: str) -> str:
    """A figure in µs when the row times seconds, else in its own unit (MiB for memory rows)."""
    if value is None:
        return "–"
    return f"{1e6 * value:.1f} µs" if unit == "s" else f"{value:.1f} {unit}"


if __name__ == "__main__":
    main()
