"""Runs the benchmark suite, measures the machine's FMA peak in the same run, and writes
docs/benchmarks.md, docs/benchmarks.png and benchmarks/results/last_report.json.

    python benchmarks/report.py            # the whole suite (a few minutes)
    python benchmarks/report.py --quick    # fewer rounds
    python benchmarks/report.py --note "two Rust builds were running"

numpy runs on its best BLAS kernel: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are
removed from the environment of the benchmark process only. Every figure in the
report is a median from this one run, and every ratio compares medians from it.
Every row is printed against numpy and, where it runs products, against its floor:
its FLOPs ÷ the FMA peak (benchmarks/fma_probe.c, compiled on first use; without a
C compiler the floor columns are left out). Each row's ratio to numpy is compared
with the previous report's (the results file), and a ratio that worsened by more
than 10% is flagged. After the suite, the report also runs benchmarks/mixed_numpy.py
(the seed step with a numpy pipeline between steps) and benchmarks/memory.py (the
programs' peak RSS), so that every target of the performance issue is judged in
this one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import timeit
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import best_blas
import compile_seed
import fma_probe
import memory
import report_rows
import suite
from floor import (
    MIN_NORMAL_ROUNDS,
    NUMPY_NEAR_FLOOR,
    WORSENING,
    Peaks,
    Row,
    Verdict,
    apply_history,
    apply_peak,
    floor_seconds,
    judge_all,
    machine_state,
    normal_rounds,
    peak_scales,
    results_json,
    two_layer_step_flops,
)
from report_rows import Section

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RESULTS = ROOT / "benchmarks" / "results" / "last_report.json"


def run_suite(json_path: Path, quick: bool) -> None:
    cmd = suite.command(json_path, 0.2 if quick else 0.5)
    if subprocess.run(cmd, env=best_blas.environment(), cwd=ROOT).returncode != 0 and not json_path.exists():
        sys.exit("the benchmark suite failed before writing its results")


def fmt_time(seconds: float) -> str:
    if seconds < 1e-6:
        return f"{seconds * 1e9:.0f} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    return f"{seconds * 1e3:.2f} ms"


def machine(data: dict) -> list[str]:
    info = data.get("machine_info", {})
    cpu = info.get("cpu", {})
    import numpy

    import rustgrad

    try:
        import threadpoolctl
    except ImportError:  # the bench extra is not installed: the BLAS line says unknown
        pools: list[dict] = []
    else:
        pools = threadpoolctl.threadpool_info()
    blas = [f"{p.get('internal_api')} {p.get('version')} ({p.get('architecture')}, {p.get('num_threads')} threads)"
            for p in pools if p.get("user_api") == "blas"]
    return [
        f"- CPU: {cpu.get('brand_raw', platform.processor())}, {os.cpu_count()} cores",
        f"- Python {platform.python_version()}, numpy {numpy.__version__}, rustgrad {rustgrad.__version__}",
        f"- numpy BLAS: {', '.join(blas) or 'unknown'} (with {', '.join(best_blas.SLOWING_VARIABLES)} unset)",
        f"- Date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
    ]


def fmt_flops(flops: int) -> str:
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if flops >= scale:
            return f"{flops / scale:.3g} {unit}"
    return str(flops)


def fmt_change(row: Row) -> str:
    """The ratio's change against the previous report's: ``+4%``, or flagged when worse by more than 10%."""
    change = row.change
    if change is None:
        return "new" if row.ratio is not None and row.previous_ratio is None else "–"
    text = f"{change:+.0%}"
    return f"**{text} worse**" if row.worsened else text


def fmt_multiple(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def fmt_value(value: float, unit: str) -> str:
    """A row's figure: a time, or a peak RSS in MiB."""
    return f"{value:.1f} MiB" if unit == "MiB" else fmt_time(value)


def row_cells(row: Row, with_floor: bool) -> list[str]:
    numpy_value = "–" if row.numpy_seconds is None else fmt_value(row.numpy_seconds, row.unit)
    cells = [row.label, fmt_value(row.seconds, row.unit), numpy_value, fmt_multiple(row.ratio), fmt_change(row)]
    if with_floor:
        flops = f"{row.formula} = {fmt_flops(row.flops)}" if row.flops else "–"
        floor = "–" if row.floor is None else fmt_time(row.floor)
        cells += [flops, floor, fmt_multiple(row.multiple), fmt_multiple(row.numpy_multiple)]
    return cells


def section_lines(section: Section, with_floor: bool) -> list[str]:
    """A section as a markdown table: every row against numpy and, with a peak, against the floor."""
    if not section.rows:
        return []
    with_floor = with_floor and any(row.flops for row in section.rows)
    header = ["row", "rustgrad", "numpy", "× numpy", "× numpy vs last report"]
    if with_floor:
        header += ["FLOPs", "floor", "× floor", "numpy × floor"]
    lines = [f"## {section.title}", "", section.note, "", "| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row_cells(row, with_floor)) + " |" for row in section.rows]
    return lines + [""]


def peak_lines(peaks: Peaks) -> list[str]:
    if peaks.unavailable:
        return [f"- FMA peak: not measured ({peaks.unavailable}); the rows are printed without floor columns."]
    lines = [f"- FMA peak (float32, {peaks.isa}, `benchmarks/fma_probe.c`, best of the runs before and after the "
             f"suite): {peaks.one_thread:.0f} GFLOP/s on 1 thread, {peaks.all_threads:.0f} GFLOP/s on "
             f"{peaks.threads} threads"]
    if not peak_scales(peaks.one_thread, peaks.all_threads, peaks.threads):
        scaling = (peaks.all_threads or 0) / (peaks.one_thread or 1)
        lines.append(f"- Warning: the {peaks.threads}-thread peak is only {scaling:.2f}× the one-thread peak (about "
                     f"{peaks.threads}× on an idle machine): other processes held cores while it was measured, so "
                     "the all-thread floors are too high, the multiples of them too low, and the floor targets are "
                     "not judged")
    return lines


def target_lines(verdicts: list[Verdict], state: str) -> list[str]:
    lines = ["## Targets", "",
             f"Machine state: {state}. The floor targets are judged only where numpy's own row is within "
             f"{NUMPY_NEAR_FLOOR}× of its floor; ratios to numpy are judged in every state.", "",
             "| target | figure | verdict |", "|---|---|---|"]
    for v in verdicts:
        verdict = v.status if not v.reason else f"{v.status}: {v.reason}"
        lines.append(f"| {v.target.name} | {v.figure} | {verdict} |")
    return lines + [""]


def worsened_lines(rows: list[Row]) -> list[str]:
    worse = [r for r in rows if r.worsened]
    if not worse:
        return ["No ratio to numpy worsened by more than 10% against the previous report.", ""]
    head = f"{len(worse)} ratio(s) to numpy worsened by more than 10% against the previous report"
    timed_again = [r for r in worse if r.ratio_timed_again is not None]
    if timed_again:
        still = sum(r.ratio_timed_again > (1 + WORSENING) * r.previous_ratio for r in timed_again)
        head += (f"; {len(timed_again)} of them were timed again at the end of the run (rustgrad's test and "
                 f"numpy's, side by side, in {RETIME_ROUNDS} rounds: the median ratio), and {still} of those "
                 "were still worse by more than 10%")
    lines = [head + ":", ""]
    lines += [f"- {r.section}: {r.label}: {r.previous_ratio:.2f} → {r.ratio:.2f}" + again(r) for r in worse]
    return lines + [""]


def again(row: Row) -> str:
    return "" if row.ratio_timed_again is None else f" (timed again: {row.ratio_timed_again:.2f})"


RETIME_ROUNDS = 3


def time_worse_rows_again(rows: list[Row], rounds: int = RETIME_ROUNDS) -> None:
    """Times the suite tests of each row that worsened by more than 10%, rustgrad's and numpy's, once
    more in each of ``rounds`` processes, the two side by side (rustgrad's first in every other round),
    and keeps the median over the rounds of the row's ratio beside the row's. The machine's state
    changes within seconds, and each suite row is one window of half a second: two tests timed next
    to each other, in rounds, mostly share a state."""
    worse = [r for r in rows if r.worsened and r.numpy_key]
    ids = suite.node_ids() if worse else {}
    worse = [r for r in worse if r.key in ids and r.numpy_key in ids]
    ratios: dict[str, list[float]] = {r.key: [] for r in worse}
    for round_number in range(rounds if worse else 0):
        pairs = [(r.key, r.numpy_key) if round_number % 2 == 0 else (r.numpy_key, r.key) for r in worse]
        tests = list(dict.fromkeys(ids[key] for pair in pairs for key in pair))
        timed = suite.medians_of(tests, best_blas.environment())
        for row in worse:
            if row.key in timed and row.numpy_key in timed:
                ratios[row.key].append(timed[row.key]["median"] / timed[row.numpy_key]["median"])
    for row in worse:
        if ratios[row.key]:
            row.ratio_timed_again = statistics.median(ratios[row.key])


def measure_peaks(runs: int = 5, environ: dict[str, str] | None = None, build_dir: Path | None = None) -> Peaks:
    """The FMA peak now, or why there is none (never raises for a missing compiler)."""
    try:
        peak = fma_probe.measure(runs=runs, environ=environ, build_dir=build_dir or fma_probe.BUILD_DIR)
    except fma_probe.ProbeUnavailable as err:
        return Peaks(unavailable=str(err))
    return Peaks(peak.one_thread, peak.all_threads, peak.threads, peak.isa,
                 samples=[{"one_thread": peak.one_thread, "all_threads": peak.all_threads}])


def best_peaks(first: Peaks, second: Peaks) -> Peaks:
    if first.unavailable or second.unavailable:
        return first if first.unavailable else second
    return Peaks(max(first.one_thread or 0, second.one_thread or 0), max(first.all_threads or 0,
                 second.all_threads or 0), first.threads, first.isa, samples=first.samples + second.samples)


def one_element_add_seconds(rounds: int = 5, adds: int = 100_000) -> dict[str, float]:
    """Seconds per bare one-element ``a + b``: numpy's, and rustgrad's with and without requires_grad;
    the best of ``rounds`` interleaved rounds of three repeats each."""
    import numpy as np

    import rustgrad

    operands = {"numpy": (np.array([1.0]), np.array([2.0])),
                "requires_grad": (rustgrad.tensor([1.0], requires_grad=True),
                                  rustgrad.tensor([2.0], requires_grad=True)),
                "no_grad": (rustgrad.tensor([1.0]), rustgrad.tensor([2.0]))}
    best = dict.fromkeys(operands, float("inf"))
    for _ in range(rounds):
        for name, (a, b) in operands.items():
            timing = timeit.repeat("a + b", globals={"a": a, "b": b}, number=adds, repeat=3)
            best[name] = min(best[name], min(timing) / adds)
    return best


INTERLEAVED_KEYS = {"eager": "interleaved_eager", "compiled": "interleaved_compiled", "static": "interleaved_static",
                    "numpy": "interleaved_numpy_in_place"}


def interleaved_seed_medians(repeats: int, peaks: Peaks, tries: int = 4) -> tuple[dict[str, dict], str]:
    """The eager, compiled and static seed steps and numpy's in-place step timed in rotating rounds
    (benchmarks/compile_seed.py), as suite medians, and a line that says which rounds they are the
    medians of. The machine's state changes within seconds: each suite row is one window of half a
    second, and a round of 200 steps is shorter than most states. Each round's figure is the median
    of its steps' times, as in the suite's rows. The medians are those of the rounds in which numpy's
    step was in the normal state, if at least `MIN_NORMAL_ROUNDS` were; while fewer were, up to
    ``tries`` sets of ``repeats`` rounds run."""
    from rustgrad._demo import Problem

    peak = None if peaks.unavailable else peaks.all_threads
    floor = floor_seconds(two_layer_step_flops(*report_rows.SEED_SIZES), peak) if peak else None
    rounds: dict[str, list[float]] = {}
    for _ in range(tries):
        sets = compile_seed.interleaved_rounds(Problem.make(0), repeats=repeats, numpy=True, per_call_median=True)
        for name, times in sets.items():
            rounds.setdefault(name, []).extend(times)
        normal = normal_rounds([us * 1e-6 for us in rounds["numpy"]], floor)
        if len(normal) >= MIN_NORMAL_ROUNDS:
            break
    total = len(rounds["numpy"])
    kept = normal if len(normal) >= MIN_NORMAL_ROUNDS else list(range(total))
    medians = {INTERLEAVED_KEYS[name]: {"median": statistics.median(t[i] for i in kept) * 1e-6, "extra": {}}
               for name, t in rounds.items()}
    if floor is None:
        which = f"all {total} rounds (no FMA peak to tell the state by)"
    elif len(normal) < MIN_NORMAL_ROUNDS:
        which = f"all {total} rounds (fewer than {MIN_NORMAL_ROUNDS} with numpy near its floor)"
    elif len(normal) < total:
        which = f"the {len(normal)} of {total} rounds with numpy within {NUMPY_NEAR_FLOOR}× of its floor"
    else:
        which = f"all {total} rounds"
    return medians, f"the interleaved seed-step rows are medians of {which}"


def mixed_lines(steps: int, repeats: int) -> list[dict]:
    """benchmarks/mixed_numpy.py's pipeline lines at the default spin, run in its own process (which
    removes the variables that slow numpy's BLAS kernel)."""
    import rustgrad

    out = Path(tempfile.mkdtemp()) / "mixed.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "mixed_numpy.py"), "--steps", str(steps), "--repeats",
           str(repeats), "--kinds", "pipeline", "--spins", str(rustgrad.get_spin_us()), "--json", str(out)]
    subprocess.run(cmd, check=True, cwd=ROOT)
    return json.loads(out.read_text())


def build_rows(m: dict, one_element: dict[str, float] | None, peaks: Peaks, previous: dict[str, Any] | None,
               mixed: list[dict] | None = None, memory_peaks: dict | None = None) -> tuple[list[Section], list[Row]]:
    sections = report_rows.all_sections(m, one_element, mixed, memory_peaks)
    rows = [row for section in sections for row in section.rows]
    apply_peak(rows, peaks.one_thread, peaks.all_threads)
    apply_history(rows, previous)
    return sections, rows


def seed_chart(seed: Section) -> dict[str, float]:
    """µs per step of each way of the seed step, numpy in place (every row's baseline) after rustgrad's."""
    values = {r.label: r.seconds * 1e6 for r in seed.rows if not r.key.startswith("interleaved_")}
    baseline = next((r.numpy_seconds for r in seed.rows if r.numpy_seconds is not None), None)
    if baseline is None:
        return values
    items = list(values.items())
    ours = sum(label.startswith("rustgrad") for label in values)
    return dict(items[:ours] + [("numpy by hand, preallocated in place", baseline * 1e6)] + items[ours:])


def seed_state(rows: list[Row], peak_trusted: bool) -> str:
    """The state from numpy's interleaved rounds, which judge the seed step's floor targets (or from
    the suite's numpy row, in a report without them)."""
    by_key = {r.key: r for r in rows}
    seed = by_key.get("interleaved_static") or by_key.get("test_static_session")
    return machine_state(seed.numpy_multiple if seed else None, peak_trusted)


def render(data: dict, sections: list[Section], rows: list[Row], peaks: Peaks, state: str,
           verdicts: list[Verdict], note: str, chart_name: str | None) -> list[str]:
    with_floor = not peaks.unavailable
    lines = ["# Benchmarks", "",
             "Written by `python benchmarks/report.py` (medians from one run; ratios compare medians "
             "from the same run; the floor of a row is its FLOPs ÷ the FMA peak measured in the same run). "
             "Do not edit by hand.", "", *machine(data), *peak_lines(peaks), f"- Machine state: {state}"]
    if note:
        lines.append(f"- Note: {note}")
    lines += ["", "Columns: `× numpy` is rustgrad's time ÷ numpy's; `× numpy vs last report` is the change of "
              "that ratio against the previous report's (its results file), in bold when "
              "it worsened by more than 10%; `× floor` is rustgrad's time ÷ the floor, `numpy × floor` numpy's.",
              ""]
    lines += target_lines(verdicts, state) + worsened_lines(rows)
    if chart_name:
        lines += [f"![seed step]({chart_name})", ""]
    for section in sections:
        lines += section_lines(section, with_floor)
    return lines


def print_summary(rows: list[Row], peaks: Peaks, state: str, verdicts: list[Verdict]) -> None:
    print("\n".join(peak_lines(peaks)))
    print(f"machine state: {state}")
    for row in rows:
        floor = "" if row.multiple is None else (f"  {row.multiple:6.2f}× floor (numpy "
                                                 f"{fmt_multiple(row.numpy_multiple)}×)")
        ratio = "" if row.ratio is None else f"  {row.ratio:5.2f}× numpy ({fmt_change(row)})"
        print(f"{row.section[:28]:<28} {row.label[:48]:<48} {fmt_value(row.seconds, row.unit):>10}{ratio}{floor}")
    for v in verdicts:
        print(f"target: {v.target.name}: {v.figure}: {v.status}{': ' + v.reason if v.reason else ''}")


def step_figure(values: dict[str, float], plt: Any) -> Any:
    """Horizontal bars of µs per step, each labelled with its value; the title spans the figure."""
    labels = list(values)[::-1]  # the first row on top
    times = [values[k] for k in labels]
    fig, ax = plt.subplots(figsize=(9, 0.55 * len(labels) + 1.6))
    bars = ax.barh(labels, times, color="#4C72B0")
    ax.bar_label(bars, labels=[f"{t:.1f} µs" for t in times], padding=4)
    ax.set_xlim(0, max(times, default=1) * 1.25)  # room for the value labels
    ax.set_xlabel("µs per step (median, lower is better)")
    fig.suptitle("Seed two-layer step, 64×1000×100×10 float32")
    fig.tight_layout()
    return fig


def chart(values: dict[str, float], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig = step_figure(values, plt)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main() -> None:
    best_blas.reexec_without_slowing_variables()  # numpy's interleaved rounds run in this process
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, help="reuse a pytest-benchmark JSON file instead of running")
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="where to write this report's results (and read the previous report's)")
    parser.add_argument("--previous", type=Path, help="the report to compare the ratios with (default: --results)")
    parser.add_argument("--docs", type=Path, default=DOCS / "benchmarks.md")
    parser.add_argument("--note", default="", help="a line for the report's header (e.g. what else was running)")
    parser.add_argument("--overhead-rounds", type=int, default=5, help="rounds of the one-element add timing")
    parser.add_argument("--interleaved-repeats", type=int, default=15,
                        help="rounds per set of the interleaved eager/compiled/static/numpy seed-step timing")
    parser.add_argument("--mixed-steps", type=int, default=300,
                        help="steps per loop of benchmarks/mixed_numpy.py (0 leaves those rows out)")
    parser.add_argument("--mixed-repeats", type=int, default=5, help="alone/mixed pairs of benchmarks/mixed_numpy.py")
    parser.add_argument("--memory-steps", type=int, default=500,
                        help="steps of the reference programs for their peak RSS (0 leaves the memory rows out)")
    parser.add_argument("--large-memory-steps", type=int, default=3,
                        help="steps of the large step for its peak RSS (0 leaves those rows out)")
    args = parser.parse_args()
    peaks_before = measure_peaks()
    json_path = args.json
    note = args.note
    if json_path is not None:
        note = (f"{note}; " if note else "") + (f"the suite's medians were read from {json_path.name}; the FMA peak "
                                                 "and the one-element adds were measured when the report was written")
    else:
        json_path = Path(tempfile.mkdtemp()) / "benchmarks.json"
        run_suite(json_path, args.quick)
    data = json.loads(json_path.read_text())
    one_element = one_element_add_seconds(args.overhead_rounds)
    interleaved, which_rounds = interleaved_seed_medians(args.interleaved_repeats, peaks_before)
    note = (f"{note}; " if note else "") + which_rounds
    mixed = mixed_lines(args.mixed_steps, args.mixed_repeats) if args.mixed_steps else None
    memory_peaks = memory.measure(args.memory_steps, args.large_memory_steps) if args.memory_steps else None
    peaks = best_peaks(peaks_before, measure_peaks())
    previous_path = args.previous or args.results
    previous = json.loads(previous_path.read_text()) if previous_path.exists() else None
    sections, rows = build_rows(suite.medians(data) | interleaved, one_element, peaks, previous, mixed, memory_peaks)
    if args.json is None:
        time_worse_rows_again(rows)
    peak_trusted = peak_scales(peaks.one_thread, peaks.all_threads, peaks.threads)
    state = seed_state(rows, peak_trusted)
    verdicts = judge_all(rows, peak_trusted=peak_trusted)
    image = args.docs.with_suffix(".png")
    chart_name = image.name if chart(seed_chart(sections[0]), image) else None
    args.docs.write_text("\n".join(render(data, sections, rows, peaks, state, verdicts, note, chart_name)))
    meta = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "note": note,
            "quick": args.quick, "cpu_count": os.cpu_count()}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results_json(rows, peaks, state, verdicts, meta), indent=1) + "\n")
    print_summary(rows, peaks, state, verdicts)
    print(f"wrote {args.docs} and {args.results}")


if __name__ == "__main__":
    main()
