"""Rows whose ratio to numpy worsened by more than 10% between two results files of
`benchmarks/report.py`, with rustgrad's and numpy's own times beside the ratios, so that a
worse ratio can be told apart from a faster numpy. Useful when the report's own comparison
(against the run before) crosses machines: compare with an earlier run on the same kind.

    python benchmarks/compare_reports.py OLD.json [NEW.json]   # NEW: benchmarks/results/last_report.json
    git show <commit>:benchmarks/results/last_report.json > old.json   # an earlier run
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

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


def shown(value: float | None, unit: str) -> str:
    """A figure in µs when the row times seconds, else in its own unit (MiB for memory rows)."""
    if value is None:
        return "–"
    return f"{1e6 * value:.1f} µs" if unit == "s" else f"{value:.1f} {unit}"


if __name__ == "__main__":
    main()
