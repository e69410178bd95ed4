"""The pure parts of the benchmark report: FLOP counts, the floor and ratio arithmetic, the
judging of the floor targets, the machine state, and the comparison with the previous report.

The floor of a row is its FLOPs divided by the FMA peak measured in the same run (on one
thread for one-thread rows, on all threads otherwise). Only products are counted (2·m·k·n
per product): the elementwise work of a step is a few percent of its FLOPs at most, and rows
with no products (elementwise ops, reductions, losses, views, per-op overhead) are bound by
memory or by overhead, so they get no FMA floor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NUMPY_NEAR_FLOOR = 2.6  # floor targets are judged only when numpy is within this multiple of the floor
WORSENING = 0.10  # a ratio to numpy that grows by more than this against the previous report is flagged


def matmul_flops(m: int, k: int, n: int, batch: int = 1) -> int:
    """An (m, k) @ (k, n) product, ``batch`` times: one multiply and one add per term."""
    return 2 * batch * m * k * n


def two_layer_step_flops(n: int, d_in: int, h: int, d_out: int) -> int:
    """The two-layer step: x@w1 and h@w2 forward; grad w2, grad h and grad w1 backward (x needs no grad)."""
    return 2 * matmul_flops(n, d_in, h) + 3 * matmul_flops(n, h, d_out)


TWO_LAYER_FORMULA = "4·N·D_in·H + 6·N·H·D_out"


def conv2d_step_flops(n: int, c: int, h: int, w: int, o: int, k: int) -> int:
    """conv2d with padding 1 (same size out): the forward, input-gradient and weight-gradient products."""
    return 3 * matmul_flops(n * h * w, c * k * k, o)


CONV2D_FORMULA = "6·N·O·H·W·C·k²"


def lstm_step_flops(seq: int, batch: int, inputs: int, hidden: int) -> int:
    """One LSTM layer over ``seq`` steps, forward and backward, with gradients for x, the weights and h:
    each of the gate products x·W_ihᵀ and h·W_hhᵀ runs once forward and twice backward."""
    return 3 * seq * matmul_flops(batch, inputs + hidden, 4 * hidden)


LSTM_FORMULA = "24·T·B·H·(I+H)"


def floor_seconds(flops: float, peak_gflops: float) -> float:
    return flops / (peak_gflops * 1e9)


@dataclass
class Row:
    """One line of the report: rustgrad's median time against numpy's in the same run (or, with
    ``unit="MiB"``, rustgrad's peak memory against numpy's, in ``seconds`` and ``numpy_seconds``)."""

    section: str
    key: str  # stable across reports: the history is matched on it
    label: str
    seconds: float
    numpy_seconds: float | None = None
    flops: int | None = None
    formula: str = ""
    threads: int = 0  # 0: all threads
    unit: str = "s"  # "s", or "MiB" for the peak-memory rows
    floor: float | None = None  # filled in by apply_peak
    previous_ratio: float | None = None  # filled in by apply_history
    numpy_key: str = ""  # the suite's numpy benchmark beside this row, if any
    ratio_timed_again: float | None = None  # a worse row's ratio when both its tests ran again in the run

    @property
    def ratio(self) -> float | None:
        return None if self.numpy_seconds is None else self.seconds / self.numpy_seconds

    @property
    def multiple(self) -> float | None:
        """The row's time as a multiple of its floor."""
        return None if self.floor is None else self.seconds / self.floor

    @property
    def numpy_multiple(self) -> float | None:
        return None if self.floor is None or self.numpy_seconds is None else self.numpy_seconds / self.floor

    @property
    def percent_of_peak(self) -> float | None:
        return None if self.floor is None else 100 * self.floor / self.seconds

    @property
    def change(self) -> float | None:
        """The relative change of the ratio to numpy against the previous report's (0.12: 12% worse)."""
        if self.ratio is None or not self.previous_ratio:
            return None
        return self.ratio / self.previous_ratio - 1

    @property
    def worsened(self) -> bool:
        return self.change is not None and self.change > WORSENING


def apply_peak(rows: list[Row], one_thread: float | None, all_threads: float | None) -> None:
    """Sets each row's floor from the peak for its thread count (none without a peak or FLOP count)."""
    for row in rows:
        peak = one_thread if row.threads == 1 else all_threads
        row.floor = floor_seconds(row.flops, peak) if row.flops and peak else None


def apply_history(rows: list[Row], previous: dict[str, Any] | None) -> None:
    """Sets each row's previous ratio from a previous report's JSON (``results_json``'s form)."""
    ratios = {r["key"]: r.get("ratio") for r in (previous or {}).get("rows", [])}
    for row in rows:
        row.previous_ratio = ratios.get(row.key)


MIN_NORMAL_ROUNDS = 5  # with fewer interleaved rounds in the normal state, the report keeps them all


def normal_rounds(numpy_seconds: list[float], floor: float | None) -> list[int]:
    """The rounds in which numpy's own step was within `NUMPY_NEAR_FLOOR` × its ``floor`` (the normal
    state, in which the floor targets are judged); every round when there is no floor."""
    if floor is None:
        return list(range(len(numpy_seconds)))
    return [i for i, seconds in enumerate(numpy_seconds) if seconds <= NUMPY_NEAR_FLOOR * floor]


def machine_state(numpy_multiple: float | None, peak_trusted: bool = True) -> str:
    """The state the run looks like, from numpy's own multiple of the floor on the seed step (and whether
    other processes held cores while the peak was measured)."""
    if numpy_multiple is None:
        return "unknown (no floor measured)"
    if numpy_multiple <= NUMPY_NEAR_FLOOR:
        state = f"normal state (numpy at {numpy_multiple:.2f}× the floor, within {NUMPY_NEAR_FLOOR}×)"
    else:
        state = f"slow state (numpy at {numpy_multiple:.2f}× the floor, beyond {NUMPY_NEAR_FLOOR}×)"
    return state if peak_trusted else f"busy machine (other processes held cores), {state}"


@dataclass(frozen=True)
class Target:
    """``kind``: "multiple" (at most ``limit`` × the floor), "peak" (at least ``limit`` % of peak),
    "ratio" (at most ``limit`` × numpy, judged in every state) or "relative" (at most ``limit`` × the
    time of the row ``against``, judged in every state)."""

    name: str
    key: str
    kind: str
    limit: float
    against: str = ""


TARGETS = [
    Target("static seed step ≤ 1.4× the floor (interleaved)", "interleaved_static", "multiple", 1.4),
    Target("eager seed step ≤ 2.0× the floor (interleaved)", "interleaved_eager", "multiple", 2.0),
    Target("large step ≥ 90% of peak", "test_scaling_static[1024x4096x4096x1000]", "peak", 90.0),
    Target("1024² sgemm ≥ 92% of peak", "test_rustgrad_matmul[1024x1024x1024-2]", "peak", 92.0),
    Target("2048² sgemm ≥ 92% of peak", "test_rustgrad_matmul[2048x2048x2048-2]", "peak", 92.0),
    Target("compiled eager seed step ≤ 1.05× the static Session step (interleaved)", "interleaved_compiled",
           "relative", 1.05, against="interleaved_static"),
    Target("one-element op with requires_grad ≤ 1.1× numpy's one-element add", "one_element_add_requires_grad",
           "ratio", 1.1),
    Target("eager seed step mixed with a numpy pipeline ≤ 1.15× alone", "mixed_pipeline_eager", "relative", 1.15,
           against="alone_pipeline_eager"),
    Target("static seed step mixed with a numpy pipeline ≤ 1.15× alone", "mixed_pipeline_static", "relative", 1.15,
           against="alone_pipeline_static"),
    Target("peak RSS of the reference eager program ≤ 1.2× numpy's", "memory_eager_reference", "ratio", 1.2),
    Target("peak RSS of the static large step (weights loaded) ≤ 1.1× numpy in place", "memory_large_static_loaded",
           "ratio", 1.1),
]


@dataclass(frozen=True)
class Verdict:
    target: Target
    status: str  # "met", "missed" or "not judged"
    figure: str
    reason: str = ""


def peak_scales(one_thread: float | None, all_threads: float | None, threads: int) -> bool:
    """Whether the all-thread peak is at least 90% of ``threads`` × the one-thread peak, as on an idle
    machine; when other processes hold cores, it is lower, and so are the floors' multiples."""
    if not one_thread or not all_threads:
        return False
    return threads <= 1 or all_threads >= 0.9 * threads * one_thread


def judge(target: Target, row: Row | None, peak_trusted: bool = True, reference: Row | None = None) -> Verdict:
    if row is None:
        return Verdict(target, "not judged", "–", "the row did not run")
    if target.kind == "relative":
        if reference is None:
            return Verdict(target, "not judged", "–", f"{target.against} did not run")
        relative = row.seconds / reference.seconds
        return Verdict(target, "met" if relative <= target.limit else "missed", f"{relative:.3f}×")
    if target.kind == "ratio":
        ratio = row.ratio
        if ratio is None:
            return Verdict(target, "not judged", "–", "no numpy time")
        figure = f"{ratio:.2f}× numpy" + ("'s peak RSS" if row.unit == "MiB" else "")
        return Verdict(target, "met" if ratio <= target.limit else "missed", figure)
    if row.multiple is None:
        return Verdict(target, "not judged", "–", "no FMA peak measured")
    figure = f"{row.multiple:.2f}× the floor" if target.kind == "multiple" else f"{row.percent_of_peak:.0f}% of peak"
    if not peak_trusted:
        return Verdict(target, "not judged", figure, "the all-thread FMA peak did not scale with the threads "
                                                     "(other processes held cores)")
    numpy_multiple = row.numpy_multiple
    if numpy_multiple is None or numpy_multiple > NUMPY_NEAR_FLOOR:
        seen = "no numpy time" if numpy_multiple is None else f"numpy at {numpy_multiple:.2f}× its floor"
        return Verdict(target, "not judged", figure, f"{seen}, beyond {NUMPY_NEAR_FLOOR}×")
    met = row.multiple <= target.limit if target.kind == "multiple" else row.percent_of_peak >= target.limit
    return Verdict(target, "met" if met else "missed", figure)


def judge_all(rows: list[Row], targets: list[Target] = TARGETS, peak_trusted: bool = True) -> list[Verdict]:
    by_key = {row.key: row for row in rows}
    return [judge(target, by_key.get(target.key), peak_trusted, by_key.get(target.against)) for target in targets]


@dataclass
class Peaks:
    """The FMA peak in GFLOP/s, or why there is none."""

    one_thread: float | None = None
    all_threads: float | None = None
    threads: int = 0
    isa: str = ""
    unavailable: str = ""  # the reason, when there is no peak
    samples: list[dict[str, float]] = field(default_factory=list)


def results_json(rows: list[Row], peaks: Peaks, state: str, verdicts: list[Verdict],
                 meta: dict[str, Any]) -> dict[str, Any]:
    return {
        **meta,
        "peak_gflops": {"one_thread": peaks.one_thread, "all_threads": peaks.all_threads, "threads": peaks.threads,
                        "isa": peaks.isa, "unavailable": peaks.unavailable, "samples": peaks.samples},
        "machine_state": state,
        "targets": [{"target": v.target.name, "status": v.status, "figure": v.figure, "reason": v.reason}
                    for v in verdicts],
        "rows": [{"section": r.section, "key": r.key, "label": r.label, "seconds": r.seconds, "unit": r.unit,
                  "numpy_seconds": r.numpy_seconds, "ratio": r.ratio, "flops": r.flops, "formula": r.formula,
                  "threads": r.threads, "floor_seconds": r.floor, "multiple_of_floor": r.multiple,
                  "numpy_multiple_of_floor": r.numpy_multiple, "previous_ratio": r.previous_ratio,
                  "worsened": r.worsened, "ratio_timed_again": r.ratio_timed_again}
                 for r in rows],
    }
