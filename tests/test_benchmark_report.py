"""The benchmark report's pure parts: FLOP counts against hand counts, the floor and ratio
arithmetic, the judging of the floor targets, the flag on a ratio that worsened, the FMA probe's
build (in a temporary directory) and the report without a C compiler. No timed asserts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import fma_probe  # noqa: E402
import report  # noqa: E402
from floor import (  # noqa: E402
    NUMPY_NEAR_FLOOR,
    TARGETS,
    Peaks,
    Row,
    apply_history,
    apply_peak,
    conv2d_step_flops,
    floor_seconds,
    judge,
    judge_all,
    lstm_step_flops,
    machine_state,
    matmul_flops,
    peak_scales,
    results_json,
    two_layer_step_flops,
)

# ---- FLOP counts against hand counts


def test_seed_step_flops_are_the_five_products():
    forward = 2 * 64 * 1000 * 100 + 2 * 64 * 100 * 10
    backward = 2 * 100 * 64 * 10 + 2 * 64 * 10 * 100 + 2 * 1000 * 64 * 100  # grad w2, grad h, grad w1
    assert two_layer_step_flops(64, 1000, 100, 10) == forward + backward == 25_984_000


def test_the_seed_step_floor_at_228_gflops_is_the_issues_114_us():
    assert floor_seconds(two_layer_step_flops(64, 1000, 100, 10), 228.0) == pytest.approx(114e-6, rel=1e-3)


def test_large_step_flops():
    n, d_in, h, d_out = 1024, 4096, 4096, 1000
    assert two_layer_step_flops(n, d_in, h, d_out) == 4 * n * d_in * h + 6 * n * h * d_out == 93_885_300_736


def test_matmul_flops_count_a_multiply_and_an_add_per_term():
    assert matmul_flops(1024, 1024, 1024) == 2 * 1024**3
    assert matmul_flops(128, 128, 128, batch=64) == 64 * 2 * 128**3
    assert matmul_flops(2, 3, 4) == 48


def test_conv2d_step_flops_are_three_im2col_products():
    # 64×16×16×16 input, 32 filters of 16×3×3, padding 1: each product is (N·H·W) × (C·k·k) × O
    one_product = 2 * (64 * 16 * 16) * (16 * 3 * 3) * 32
    assert conv2d_step_flops(64, 16, 16, 16, 32, 3) == 3 * one_product == 452_984_832


def test_lstm_flops_are_the_gate_products_once_forward_twice_backward():
    seq, batch, inputs, hidden = 50, 16, 32, 128
    per_step = 2 * batch * inputs * 4 * hidden + 2 * batch * hidden * 4 * hidden
    assert lstm_step_flops(seq, batch, inputs, hidden) == 3 * seq * per_step == 393_216_000


# ---- the floor and ratio arithmetic


def _row(key="k", seconds=200e-6, numpy_seconds=300e-6, flops=1_000_000, threads=0, previous=None) -> Row:
    row = Row("section", key, "label", seconds, numpy_seconds, flops, "f", threads)
    row.previous_ratio = previous
    return row


def test_floor_is_flops_over_the_peak_for_the_rows_thread_count():
    every, single, memory_bound = _row(threads=0), _row(threads=1), _row(flops=None)
    apply_peak([every, single, memory_bound], one_thread=100.0, all_threads=400.0)
    assert every.floor == pytest.approx(1e6 / 400e9)
    assert single.floor == pytest.approx(1e6 / 100e9)
    assert memory_bound.floor is None and memory_bound.multiple is None


def test_multiples_of_the_floor_and_ratio_to_numpy():
    row = _row(seconds=10e-6, numpy_seconds=25e-6, flops=1_000_000)
    apply_peak([row], one_thread=100.0, all_threads=200.0)  # floor: 5 µs
    assert row.ratio == pytest.approx(0.4)
    assert row.multiple == pytest.approx(2.0)
    assert row.numpy_multiple == pytest.approx(5.0)
    assert row.percent_of_peak == pytest.approx(50.0)


def test_without_a_peak_no_row_has_a_floor():
    row = _row()
    apply_peak([row], None, None)
    assert row.floor is None and row.numpy_multiple is None and row.ratio == pytest.approx(2 / 3)


# ---- judging


def _target(kind: str):
    return next(t for t in TARGETS if t.kind == kind)


def _floored(seconds: float, numpy_seconds: float | None) -> Row:
    row = _row(seconds=seconds, numpy_seconds=numpy_seconds, flops=1_000_000)
    apply_peak([row], 100.0, 100.0)  # floor: 10 µs
    return row


def test_floor_target_is_not_judged_when_numpy_is_beyond_2_6_times_its_floor():
    static = TARGETS[0]
    verdict = judge(static, _floored(seconds=30e-6, numpy_seconds=27e-6))  # numpy at 2.7× the floor
    assert verdict.status == "not judged"
    assert "numpy at 2.70× its floor, beyond 2.6×" in verdict.reason
    assert verdict.figure == "3.00× the floor"


def test_floor_target_is_judged_when_numpy_is_within_2_6_times_its_floor():
    static = TARGETS[0]  # at most 1.4× the floor
    assert judge(static, _floored(seconds=14e-6, numpy_seconds=26e-6)).status == "met"
    assert judge(static, _floored(seconds=15e-6, numpy_seconds=20e-6)).status == "missed"


def test_percent_of_peak_target():
    sgemm = _target("peak")  # at least 90% or 92% of peak
    assert judge(sgemm, _floored(seconds=10.5e-6, numpy_seconds=11e-6)).status == "met"  # 95%
    verdict = judge(sgemm, _floored(seconds=12.5e-6, numpy_seconds=11e-6))  # 80%
    assert (verdict.status, verdict.figure) == ("missed", "80% of peak")


def test_ratio_target_is_judged_in_every_state_and_needs_no_floor():
    overhead = _target("ratio")  # at most 1.1× numpy
    assert judge(overhead, _row(seconds=330e-9, numpy_seconds=300e-9, flops=None)).status == "met"
    assert judge(overhead, _row(seconds=400e-9, numpy_seconds=300e-9, flops=None)).status == "missed"


def test_relative_target_compares_two_rows_of_the_run_in_every_state():
    compiled = _target("relative")  # the compiled step at most 1.05× the static step
    static = _row(key=compiled.against, seconds=100e-6, numpy_seconds=None, flops=None)
    verdict = judge(compiled, _row(seconds=104e-6, numpy_seconds=None, flops=None), reference=static)
    assert (verdict.status, verdict.figure) == ("met", "1.040×")
    assert judge(compiled, _row(seconds=106e-6, numpy_seconds=None, flops=None), reference=static).status == "missed"
    assert judge(compiled, _row(seconds=1e-6, numpy_seconds=None, flops=None)).reason == (
        "interleaved_static did not run")


def test_targets_of_rows_that_did_not_run_or_without_a_peak_are_not_judged():
    verdicts = judge_all([])
    assert {v.status for v in verdicts} == {"not judged"}
    assert judge(TARGETS[0], _row()).reason == "no FMA peak measured"


def test_machine_state_from_numpys_multiple_of_the_floor():
    assert machine_state(2.4).startswith("normal state")
    assert machine_state(NUMPY_NEAR_FLOOR).startswith("normal state")
    assert machine_state(4.9).startswith("slow state (numpy at 4.90× the floor")
    assert machine_state(None).startswith("unknown")
    assert machine_state(4.9, peak_trusted=False).startswith("busy machine (other processes held cores), slow state")


# ---- the comparison with the previous report


def test_a_ratio_worse_by_more_than_ten_percent_is_flagged():
    assert _row(seconds=1.11, numpy_seconds=1.0, previous=1.0).worsened
    assert not _row(seconds=1.09, numpy_seconds=1.0, previous=1.0).worsened
    assert not _row(seconds=0.5, numpy_seconds=1.0, previous=1.0).worsened
    assert _row(seconds=1.2, numpy_seconds=1.0, previous=1.0).change == pytest.approx(0.2)


def test_history_round_trips_through_the_results_json():
    old = _row(key="a", seconds=1.0, numpy_seconds=1.0)
    previous = json.loads(json.dumps(results_json([old], Peaks(unavailable="none"), "s", [], {})))
    worse, new = _row(key="a", seconds=1.3, numpy_seconds=1.0), _row(key="b")
    apply_history([worse, new], previous)
    assert worse.previous_ratio == 1.0 and worse.worsened
    assert new.previous_ratio is None and new.change is None
    assert report.fmt_change(worse) == "**+30% worse**"
    assert report.fmt_change(new) == "new"
    assert "label: 1.00 → 1.30" in "\n".join(report.worsened_lines([worse, new]))


# ---- the rows the report builds


def _medians(*pairs: tuple[str, float]) -> dict:
    return {key: {"median": seconds, "extra": {}} for key, seconds in pairs}


def test_every_target_names_a_row_the_report_builds():
    m = _medians(("test_static_session", 1e-4), ("test_eager_custom_function", 2e-4), ("interleaved_eager", 2e-4),
                 ("interleaved_compiled", 1e-4), ("interleaved_static", 1e-4), ("test_numpy_in_place", 3e-4),
                 ("interleaved_numpy_in_place", 3e-4),
                 ("test_scaling_static[1024x4096x4096x1000]", 0.3),
                 ("test_scaling_numpy_in_place[1024x4096x4096x1000]", 0.3),
                 ("test_rustgrad_matmul[1024x1024x1024-2]", 0.01), ("test_numpy_matmul[1024x1024x1024-2]", 0.01),
                 ("test_rustgrad_matmul[2048x2048x2048-2]", 0.1), ("test_numpy_matmul[2048x2048x2048-2]", 0.1))
    one_element = {"numpy": 300e-9, "requires_grad": 330e-9, "no_grad": 250e-9}
    _, rows = report.build_rows(m, one_element, Peaks(100.0, 200.0, 2, "avx512f"), None, MIXED, MEMORY)
    by_key = {row.key: row for row in rows}
    assert {t.key for t in TARGETS} | {t.against for t in TARGETS if t.against} <= set(by_key)
    assert by_key["test_static_session"].flops == 25_984_000
    assert by_key["test_scaling_static[1024x4096x4096x1000]"].flops == 93_885_300_736
    assert by_key["one_element_add_requires_grad"].ratio == pytest.approx(1.1)
    assert by_key["test_static_session"].floor == pytest.approx(25_984_000 / 200e9)


# mixed_numpy.py's lines (µs) and memory.measure's result (MiB), as the report reads them
MIXED = [{"mode": "eager", "kind": "pipeline", "spin_us": 300, "alone": 280.0, "mixed": 350.0,
          "numpy_alone": 900.0, "numpy_mixed": 990.0},
         {"mode": "static", "kind": "pipeline", "spin_us": 300, "alone": 200.0, "mixed": 220.0,
          "numpy_alone": 900.0, "numpy_mixed": 930.0},
         {"mode": "static", "kind": "numpy-step", "spin_us": 300, "alone": 200.0, "mixed": 300.0,
          "numpy_alone": 250.0, "numpy_mixed": 260.0}]
MEMORY = {"steps": 500, "large_steps": 3,
          "seed": {"numpy in place": 34.0, "rustgrad eager": 35.7, "rustgrad static": 45.9},
          "large": {"numpy in place": 288.0, "rustgrad static, reference form": 492.0,
                    "rustgrad static, weights loaded": 345.6}}


def test_the_mixed_and_memory_targets_judge_the_rows_built_from_their_scripts():
    _, rows = report.build_rows({}, None, Peaks(100.0, 200.0, 2, "avx512f"), None, MIXED, MEMORY)
    by_key = {row.key: row for row in rows}
    assert "alone_numpy-step_static" not in by_key  # only the pipeline lines are the target's
    assert by_key["mixed_pipeline_eager"].seconds == pytest.approx(350e-6)
    assert by_key["mixed_pipeline_eager"].numpy_seconds is None  # numpy's batch preparation is not a baseline
    assert by_key["memory_large_static_loaded"].label.endswith("weights loaded, 3 steps")
    verdicts = {v.target.name: v for v in judge_all(rows, peak_trusted=False)}  # judged in every state
    eager, static = (verdicts[f"{mode} seed step mixed with a numpy pipeline ≤ 1.15× alone"]
                     for mode in ("eager", "static"))
    assert (eager.status, eager.figure) == ("missed", "1.250×")
    assert (static.status, static.figure) == ("met", "1.100×")
    program = verdicts["peak RSS of the reference eager program ≤ 1.2× numpy's"]
    assert (program.status, program.figure) == ("met", "1.05× numpy's peak RSS")
    large = verdicts["peak RSS of the static large step (weights loaded) ≤ 1.1× numpy in place"]
    assert (large.status, large.figure) == ("missed", "1.20× numpy's peak RSS")


def test_memory_rows_print_mib_and_no_floor():
    peaks = Peaks(100.0, 200.0, 2, "avx512f")
    sections, rows = report.build_rows({}, None, peaks, None, None, MEMORY)
    text = "\n".join(report.render({}, sections, rows, peaks, "s", judge_all(rows), "", None))
    assert ("| the reference PyTorch program (examples/two_layer_eager.py), 500 steps | 35.7 MiB | 34.0 MiB | 1.05 "
            "| new |") in text
    assert "× floor" not in text.split("## Peak memory (RSS)")[1]
    assert "## The seed step mixed" not in text  # no lines: no section


def test_one_thread_matmul_rows_use_the_one_thread_peak():
    m = _medians(("test_rustgrad_matmul[256x256x256-1]", 1e-3), ("test_numpy_matmul[256x256x256-1]", 1e-3))
    _, rows = report.build_rows(m, None, Peaks(100.0, 200.0, 2, "avx512f"), None)
    (row,) = rows
    assert row.threads == 1 and row.floor == pytest.approx(2 * 256**3 / 100e9)


def test_interleaved_seed_rows_are_judged_against_numpys_interleaved_rounds():
    """A suite row caught in a slow window must not decide the seed step's targets or the state."""
    m = _medians(("test_eager_custom_function", 300e-6), ("test_static_session", 150e-6),
                 ("test_numpy_in_place", 260e-6), ("interleaved_eager", 190e-6), ("interleaved_static", 150e-6),
                 ("interleaved_compiled", 148e-6), ("interleaved_numpy_in_place", 520e-6))
    peaks = Peaks(100.0, 200.0, 2, "avx512f")
    _, rows = report.build_rows(m, None, peaks, None)
    by_key = {row.key: row for row in rows}
    assert by_key["interleaved_eager"].numpy_seconds == 520e-6
    assert by_key["test_eager_custom_function"].numpy_seconds == 260e-6
    assert report.seed_state(rows, True).startswith("slow state (numpy at 4.00× the floor")
    eager = next(v for v in judge_all(rows) if v.target.key == "interleaved_eager")
    assert (eager.status, eager.figure) == ("not judged", "1.46× the floor")
    m["interleaved_numpy_in_place"] = {"median": 260e-6, "extra": {}}
    _, rows = report.build_rows(m, None, peaks, None)
    assert report.seed_state(rows, True).startswith("normal state (numpy at 2.00× the floor")
    eager = next(v for v in judge_all(rows) if v.target.key == "interleaved_eager")
    assert (eager.status, eager.figure) == ("met", "1.46× the floor")


def test_the_normal_state_rounds_are_those_with_numpy_near_its_floor():
    from floor import normal_rounds

    mixed = [250e-6, 520e-6, 259e-6, 261e-6, 240e-6, 600e-6, 255e-6, 230e-6]
    assert normal_rounds(mixed, 100e-6) == [0, 2, 4, 6, 7]  # 261 µs is beyond 2.6× the floor
    assert normal_rounds(mixed, None) == list(range(8))


@pytest.mark.parametrize("numpy_us, tries, kept, which", [
    ([250, 250, 250, 250, 250, 600], 1, 5, "the 5 of 6 rounds with numpy within 2.6× of its floor"),
    ([250] * 6, 1, 6, "all 6 rounds"),
    ([600, 250, 600, 250, 600, 600] * 2 + [250] * 6, 3, 10, "the 10 of 18 rounds with numpy within 2.6× of its floor"),
    ([600] * 24, 4, 24, "all 24 rounds (fewer than 5 with numpy near its floor)"),
])
def test_interleaved_seed_rounds_run_again_until_enough_are_normal(monkeypatch, numpy_us, tries, kept, which):
    """Sets of 6 rounds (up to 4) run until 5 rounds saw numpy in the normal state; the rows are the
    medians of those rounds, or of all when too few were."""
    sets = iter([numpy_us[i:i + 6] for i in range(0, len(numpy_us), 6)])
    calls = []

    def fake_rounds(problem, repeats, numpy, per_call_median):
        assert numpy and per_call_median
        calls.append(repeats)
        times = next(sets)
        return {"eager": [t - 50 for t in times], "static": [t - 100 for t in times], "numpy": times}

    monkeypatch.setattr(report.compile_seed, "interleaved_rounds", fake_rounds)
    # the seed step's floor at 200 GFLOP/s is 129.9 µs: numpy is in the normal state up to 337.8 µs
    medians, note = report.interleaved_seed_medians(6, Peaks(100.0, 200.0, 2, "avx512f"))
    assert len(calls) == tries and note == f"the interleaved seed-step rows are medians of {which}"
    expected = sorted(numpy_us)[: kept] if kept < len(numpy_us) else numpy_us
    assert medians["interleaved_numpy_in_place"]["median"] == pytest.approx(np.median(expected) * 1e-6)
    assert medians["interleaved_static"]["median"] == pytest.approx((np.median(expected) - 100) * 1e-6)


def test_without_a_peak_the_tables_have_no_floor_columns():
    m = _medians(("test_static_session", 1e-4), ("test_numpy_in_place", 3e-4))
    peaks = Peaks(unavailable="no C compiler found ($CC, cc, gcc or clang)")
    sections, rows = report.build_rows(m, None, peaks, None)
    text = "\n".join(report.render({}, sections, rows, peaks, machine_state(None), judge_all(rows), "", None))
    assert "FMA peak: not measured (no C compiler found" in text
    assert "× floor" not in text.split("## Seed")[1]


def test_sections_without_products_have_no_floor_columns():
    m = _medians(("test_static_session", 1e-4), ("test_numpy_in_place", 3e-4),
                 ("test_rustgrad_op[add-1M]", 1e-4), ("test_numpy_op[add-1M]", 2e-4))
    peaks = Peaks(100.0, 200.0, 2, "avx512f")
    sections, rows = report.build_rows(m, None, peaks, None)
    text = "\n".join(report.render({}, sections, rows, peaks, "s", judge_all(rows), "", None))
    seed, elementwise = text.split("## Seed")[1].split("## float32 elementwise")
    assert "| × floor | numpy × floor |" in seed and "× floor" not in elementwise
    assert "| rustgrad static, Session.run | 100.0 µs | 300.0 µs | 0.33 | new |" in text


def test_coverage_cases_compute_what_their_numpy_counterparts_compute():
    import coverage_cases

    for name, case in coverage_cases.CASES.items():
        if name in ("randn", "tf1_mlp_step"):
            continue  # different generators; the TF1 step is checked below
        ours, theirs = case.ours()(), case.theirs()()
        ours = ours.numpy() if hasattr(ours, "numpy") else ours
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-4, atol=1e-5, err_msg=name)


def test_the_tf1_mlp_step_follows_the_numpy_steps_loss_curve():
    import coverage_cases

    case = coverage_cases.CASES["tf1_mlp_step"]
    ours, theirs = case.ours(), case.theirs()
    curves = np.array([[ours(), theirs()] for _ in range(4)])
    assert curves[-1, 0] < curves[0, 0]
    np.testing.assert_allclose(curves[:, 0], curves[:, 1], rtol=1e-4)


# ---- the probe: build in a temporary directory, and without a compiler


def test_no_compiler_on_the_path_means_no_peak_and_no_crash(tmp_path):
    environ = {"PATH": str(tmp_path)}
    assert fma_probe.find_compiler(environ) is None
    with pytest.raises(fma_probe.ProbeUnavailable, match="no C compiler found"):
        fma_probe.build(tmp_path / "build", environ)
    peaks = report.measure_peaks(environ=environ, build_dir=tmp_path / "build")
    assert peaks.unavailable.startswith("no C compiler found") and peaks.all_threads is None


def test_a_failing_compile_is_reported_with_the_compilers_message(tmp_path):
    fake = tmp_path / "fakecc"
    fake.write_text("#!/bin/sh\necho 'fakecc: error: unsupported option' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(fma_probe.ProbeUnavailable, match="failed on fma_probe.c: fakecc: error: unsupported option"):
        fma_probe.build(tmp_path / "build", {"PATH": os.environ.get("PATH", ""), "CC": str(fake)})


@pytest.mark.skipif(fma_probe.find_compiler() is None, reason="no C compiler")
def test_the_probe_builds_once_and_uses_avx512_where_the_cpu_has_it(tmp_path):
    path = fma_probe.build(tmp_path)
    assert path.parent == tmp_path and path.name.startswith("fma_probe-")
    built = path.stat().st_mtime_ns
    assert fma_probe.build(tmp_path) == path and path.stat().st_mtime_ns == built  # cached
    peak = fma_probe.measure(threads=2, runs=1, seconds=0.002, build_dir=tmp_path)
    assert peak.one_thread > 0 and peak.all_threads > 0 and peak.threads == 2
    expected = "avx512f" if "avx512f" in fma_probe.cpu_flags() else ("avx2+fma", "scalar")
    assert peak.isa in expected


@pytest.mark.skipif(fma_probe.find_compiler() is None or not sys.platform.startswith("linux"),
                    reason="no C compiler, or not Linux (the wake probe uses futexes)")
def test_the_wake_probe_builds_beside_the_fma_probe_and_times_both_kinds_of_waiter(tmp_path):
    import wake_latency

    path = fma_probe.build(tmp_path, source=wake_latency.SOURCE)
    assert path.name.startswith("wake_latency-") and path != fma_probe.build(tmp_path)
    for mode in wake_latency.MODES:
        caller, started = wake_latency.measure(mode, rounds=20, gap_us=50, build_dir=tmp_path)
        assert 0 <= caller < 1e4 and 0 < started < 1e6, (mode, caller, started)


def test_the_report_runs_without_a_compiler(tmp_path):
    """End to end on a small suite result, with an empty PATH: the report says why there is no floor."""
    suite = {"machine_info": {}, "benchmarks": [
        {"name": "test_static_session", "stats": {"median": 1e-4}},
        {"name": "test_numpy_in_place", "stats": {"median": 3e-4}}]}
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    (tmp_path / "docs").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "CC"}
    env.update(PATH=str(tmp_path), MPLBACKEND="Agg")
    (tmp_path / "earlier.json").write_text(json.dumps({"rows": [{"key": "test_static_session", "ratio": 0.25}]}))
    args = ["--json", str(tmp_path / "suite.json"), "--results", str(tmp_path / "last.json"),
            "--previous", str(tmp_path / "earlier.json"), "--docs", str(tmp_path / "docs" / "b.md"),
            "--overhead-rounds", "1", "--interleaved-repeats", "1", "--mixed-steps", "3", "--mixed-repeats", "1",
            "--memory-steps", "2", "--large-memory-steps", "0"]
    result = subprocess.run([sys.executable, str(BENCHMARKS / "report.py"), *args],
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "FMA peak: not measured (no C compiler found" in result.stdout
    saved = json.loads((tmp_path / "last.json").read_text())
    assert saved["peak_gflops"]["all_threads"] is None
    assert {r["key"] for r in saved["rows"]} >= {"test_static_session", "one_element_add_requires_grad",
                                                "interleaved_compiled", "interleaved_static", "alone_pipeline_eager",
                                                "mixed_pipeline_static", "memory_eager_reference"}
    rss = next(r for r in saved["rows"] if r["key"] == "memory_eager_reference")
    assert rss["unit"] == "MiB" and 10 < rss["numpy_seconds"] < 1000  # MiB of a real process
    assert any(t["target"].startswith("compiled eager seed step") and t["status"] in ("met", "missed")
               for t in saved["targets"])
    docs = (tmp_path / "docs" / "b.md").read_text()
    assert "| rustgrad static, Session.run | 100.0 µs | 300.0 µs | 0.33 | **+33% worse** |" in docs
    assert "- Seed two-layer step (64×1000×100×10, float32): rustgrad static, Session.run: 0.25 → 0.33" in docs


def test_a_busy_machines_all_thread_peak_is_flagged():
    busy = "\n".join(report.peak_lines(Peaks(240.0, 250.0, 2, "avx512f")))
    assert "Warning: the 2-thread peak is only 1.04× the one-thread peak" in busy
    assert "Warning" not in "\n".join(report.peak_lines(Peaks(240.0, 480.0, 2, "avx512f")))


def test_floor_targets_are_not_judged_on_a_peak_measured_with_cores_busy():
    assert peak_scales(240.0, 470.0, 2) and not peak_scales(240.0, 250.0, 2) and peak_scales(240.0, 240.0, 1)
    assert not peak_scales(None, None, 2)
    static, add = _floored(seconds=12e-6, numpy_seconds=20e-6), _floored(seconds=12e-6, numpy_seconds=20e-6)
    static.key, add.key = TARGETS[0].key, _target("ratio").key
    verdicts = judge_all([static, add], [TARGETS[0], _target("ratio")], peak_trusted=False)
    assert verdicts[0].status == "not judged" and "other processes held cores" in verdicts[0].reason
    assert verdicts[1].status == "met"  # 0.6× numpy: ratios are judged whatever the peak


def test_parametrised_rows_are_read_from_the_suites_keys():
    m = _medians(("test_rustgrad_op[amax(dim)-16M]", 2e-3), ("test_numpy_op[amax(dim)-16M]", 1e-3),
                 ("test_reduction_rustgrad[1M-cumsum_rows]", 1e-3), ("test_reduction_numpy[1M-cumsum_rows]", 4e-3),
                 ("test_cross_entropy_rustgrad[64x10]", 1e-5))
    _, rows = report.build_rows(m, None, Peaks(), None)
    assert [(r.label, r.ratio) for r in rows] == [("`amax(dim)` 16M", 2.0), ("`cumsum_rows` 1M", 0.25),
                                                   ("cross_entropy 64x10", None)]


def test_mixed_costs_times_the_step_after_every_kind_of_work():
    result = subprocess.run([sys.executable, str(BENCHMARKS / "mixed_costs.py"), "--modes", "static", "--steps", "3",
                             "--repeats", "1", "--threads", "1"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = [line.split() for line in result.stdout.splitlines()[1:]]
    assert [line[0] for line in lines] == ["static"] * 6, result.stdout
    assert lines[0][-1] == "+0.0"  # the steps back to back are the baseline
    assert all(float(line[-2]) > 0 for line in lines), result.stdout
    assert "1 thread(s)" in result.stdout.splitlines()[0]


def test_compare_reports_times_the_worse_suite_rows_again(tmp_path):
    """--rerun runs the worse row's pytest test in the build given and prints its median; rows the
    suite does not time are named as such."""
    def results(ratio: float) -> dict:
        rows = [{"section": "s", "key": "test_rustgrad_matmul[64x100x10-1]", "label": "small product",
                 "seconds": ratio * 1e-5, "numpy_seconds": 1e-5, "ratio": ratio},
                {"section": "s", "key": "interleaved_eager", "label": "interleaved eager",
                 "seconds": ratio * 1e-4, "numpy_seconds": 1e-4, "ratio": ratio}]
        return {"date": "d", "machine_state": "m", "rows": rows}

    (tmp_path / "old.json").write_text(json.dumps(results(1.0)))
    (tmp_path / "new.json").write_text(json.dumps(results(1.5)))
    result = subprocess.run([sys.executable, str(BENCHMARKS / "compare_reports.py"), str(tmp_path / "old.json"),
                             str(tmp_path / "new.json"), "--rerun", "", "--rounds", "1"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "2 rows in both; 2 with a ratio to numpy more than 10% worse" in result.stdout
    assert "not in the pytest suite (timed by the report itself): interleaved eager" in result.stdout
    line = next(line for line in result.stdout.splitlines() if line.startswith("| test_rustgrad_matmul[64x100x10-1]"))
    low, high = (float(v) for v in line.split("|")[2].strip().split("–"))
    assert 0.1 < low == high < 1000  # µs of one real 64×100×10 product


def test_worse_rows_timed_again_say_whether_they_stayed_worse():
    stayed = _row(key="a", seconds=1.3, numpy_seconds=1.0, previous=1.0)
    stayed.ratio_timed_again = 1.25
    recovered = _row(key="b", seconds=1.4, numpy_seconds=1.0, previous=1.0)
    recovered.ratio_timed_again = 1.02
    untimed = _row(key="c", seconds=1.5, numpy_seconds=1.0, previous=1.0)
    text = "\n".join(report.worsened_lines([stayed, recovered, untimed]))
    assert ("3 ratio(s) to numpy worsened by more than 10% against the previous report; 2 of them were timed "
            "again at the end of the run (rustgrad's test and numpy's, side by side, in 3 rounds: the median "
            "ratio), and 1 of those were still worse") in text
    assert "label: 1.00 → 1.40 (timed again: 1.02)" in text and "label: 1.00 → 1.50\n" in text


def test_a_worse_suite_row_is_timed_again_with_its_numpy_test():
    m = _medians(("test_rustgrad_matmul[64x100x10-1]", 1e-3), ("test_numpy_matmul[64x100x10-1]", 1e-6),
                 ("interleaved_static", 1e-3), ("interleaved_numpy_in_place", 1e-6))
    previous = {"rows": [{"key": "test_rustgrad_matmul[64x100x10-1]", "ratio": 1.0},
                         {"key": "interleaved_static", "ratio": 1.0}]}
    _, rows = report.build_rows(m, None, Peaks(unavailable="none"), previous)
    by_key = {row.key: row for row in rows}
    product, interleaved = by_key["test_rustgrad_matmul[64x100x10-1]"], by_key["interleaved_static"]
    assert product.numpy_key == "test_numpy_matmul[64x100x10-1]" and product.worsened and interleaved.worsened
    report.time_worse_rows_again(rows)
    assert 0.05 < product.ratio_timed_again < 20  # both real timings now, not the 1000× of the first
    assert interleaved.ratio_timed_again is None  # not a suite test


def test_worse_rows_are_timed_again_in_rounds_beside_their_numpy_test(monkeypatch):
    """Each round times every worse row's two tests next to each other, rustgrad's first in every other
    round; the row keeps the median of its rounds' ratios."""
    rows = [_row(key="r1", seconds=2.0, numpy_seconds=1.0, previous=1.0),
            _row(key="r2", seconds=2.0, numpy_seconds=1.0, previous=1.0)]
    rows[0].numpy_key, rows[1].numpy_key = "n1", "n2"
    monkeypatch.setattr(report.suite, "node_ids", lambda: {k: f"file.py::{k}" for k in ("r1", "n1", "r2", "n2")})
    rounds = iter([{"r1": 3.0, "n1": 1.0, "r2": 1.0, "n2": 1.0}, {"r1": 1.0, "n1": 1.0, "r2": 4.0, "n2": 2.0},
                   {"r1": 1.2, "n1": 1.0, "r2": 9.0, "n2": 1.0}])
    orders = []

    def fake_medians_of(ids, env):
        orders.append([node.split("::")[1] for node in ids])
        return {key: {"median": value, "extra": {}} for key, value in next(rounds).items()}

    monkeypatch.setattr(report.suite, "medians_of", fake_medians_of)
    report.time_worse_rows_again(rows, rounds=3)
    assert orders == [["r1", "n1", "r2", "n2"], ["n1", "r1", "n2", "r2"], ["r1", "n1", "r2", "n2"]]
    assert rows[0].ratio_timed_again == pytest.approx(1.2)  # of 3.0, 1.0 and 1.2
    assert rows[1].ratio_timed_again == pytest.approx(2.0)  # of 1.0, 2.0 and 9.0


def test_static_fetches_times_both_fetch_lists():
    result = subprocess.run([sys.executable, str(BENCHMARKS / "static_fetches.py"), "--rounds", "2", "--steps", "3"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    figures = {line.split("  ")[1].strip(): float(line.split()[-2]) for line in result.stdout.splitlines()[1:]}
    assert set(figures) == {"loss and both new weights (the reference)", "loss and a group of the assigns"}
    assert all(10 < us < 100_000 for us in figures.values())  # µs of a real step


def test_edge_widths_times_each_width_and_the_seed_step():
    result = subprocess.run([sys.executable, str(BENCHMARKS / "edge_widths.py"), "--rounds", "1", "--threads", "1"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0] for line in result.stdout.splitlines()[2:]}
    assert {"64x1000x97", "64x1000x100", "64x1000x112", "1000x64x100ᵀ", "seed"} <= rows


def test_switch_timing_gives_each_build_its_ratio_to_the_first_round_by_round():
    from switch_timing import cell

    first = [{"row": 10.0}, {"row": 20.0}, {"row": 10.0}]  # the second round in a slow state
    other = [{"row": 9.0}, {"row": 16.0}, {"row": 12.0}]
    assert cell(first, first, "row", False) == "  10.0 (  10.0)"
    # Round by round 0.9, 0.8 and 1.2: median 0.9, where the medians' quotient would read 1.2.
    assert cell(other, first, "row", True) == "  12.0 (   9.0) ×0.900"


def test_relu_backward_times_the_three_sizes():
    result = subprocess.run([sys.executable, str(BENCHMARKS / "relu_backward.py"), "--rounds", "1", "--min-calls", "2"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    name, cells = result.stdout.strip().split(": ", 1)
    figures = {cell.split()[0]: float(cell.split()[1]) for cell in cells.split(", ")}
    assert name == "installed" and set(figures) == {"64x100", "256x1024", "1024x4096"}
    assert 0 < figures["64x100"] < figures["1024x4096"]  # a mask of 64× the elements takes longer


def _half_unit(printed: str) -> float:
    decimals = len(printed.partition(".")[2])
    return 0.5 * 10.0 ** -decimals


def _assert_ratio_is_of_the_printed_times(ours: str, theirs: str, ratio: str) -> None:
    """The ratio is computed before the times are rounded for printing, so it must lie within what the
    rounded times allow, plus its own rounding: not within a fixed tolerance (259/89 printed as 2.89)."""
    ours_half, theirs_half, ratio_half = _half_unit(ours), _half_unit(theirs), _half_unit(ratio)
    lowest = (float(ours) - ours_half) / (float(theirs) + theirs_half) - ratio_half
    highest = (float(ours) + ours_half) / (float(theirs) - theirs_half) + ratio_half
    assert lowest <= float(ratio) <= highest, (ours, theirs, ratio)


def test_ratio_check_allows_only_the_rounding_of_the_printed_times():
    _assert_ratio_is_of_the_printed_times("259", "89", "2.89")
    _assert_ratio_is_of_the_printed_times("1.25", "0.50", "2.50")
    with pytest.raises(AssertionError):
        _assert_ratio_is_of_the_printed_times("259", "89", "2.95")
    with pytest.raises(AssertionError):
        _assert_ratio_is_of_the_printed_times("1.25", "0.50", "2.60")


def test_slow_rows_times_only_the_rows_asked_for_beside_numpy():
    result = subprocess.run([sys.executable, str(BENCHMARKS / "slow_rows.py"), "--rounds", "1", "--only", "prod"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = result.stdout.strip().splitlines()[1:]
    labels = [row.split("`")[1] for row in rows]
    assert labels == ["prod(0)", "prod(0)", "prod(1)", "prod", "cumprod(0)"]
    for row in rows:
        ours, numpy_us, ratio = re.search(r"([\d.]+) µs\s+numpy\s+([\d.]+) µs\s+([\d.]+)×", row).groups()
        _assert_ratio_is_of_the_printed_times(ours, numpy_us, ratio)


def test_view_calls_times_only_the_rows_asked_for_beside_numpy():
    result = subprocess.run([sys.executable, str(BENCHMARKS / "view_calls.py"), "--rounds", "1", "--only", "x[5]"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = result.stdout.strip().splitlines()
    assert [row.split(",")[0].strip() for row in rows] == ["x[5]", "x[5]"]
    for row in rows:
        ours, numpy_ns, ratio = re.search(r"([\d.]+) ns\s+numpy\s+([\d.]+) ns\s+([\d.]+)x numpy", row).groups()
        _assert_ratio_is_of_the_printed_times(ours, numpy_ns, ratio)
