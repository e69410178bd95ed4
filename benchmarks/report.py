"""Runs the benchmark suite and writes docs/benchmarks.md and docs/benchmarks.png.

    python benchmarks/report.py            # the whole suite (a few minutes)
    python benchmarks/report.py --quick    # fewer rounds, skips the largest scaling size

numpy runs on its best BLAS kernel: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are
removed from the environment of the benchmark process only. Every figure in the
report is a median from this one run, and every ratio compares medians from it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import best_blas

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def run_suite(json_path: Path, quick: bool) -> None:
    env = best_blas.environment()
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "benchmarks"), "-q", "-p", "no:cacheprovider",
           f"--benchmark-json={json_path}", "--benchmark-disable-gc", "--benchmark-warmup=on"]
    if quick:
        cmd += ["--benchmark-max-time=0.2", "-k", "not 1024x4096x4096x1000"]
    subprocess.run(cmd, check=True, env=env, cwd=ROOT)


def medians(data: dict) -> dict[str, dict]:
    # pytest-benchmark's statistics are per call, also for pedantic(iterations=N). JSON files written
    # before the overhead benchmarks used pedantic hold the time of `calls_per_round` calls instead.
    return {b["name"]: {"median": b["stats"]["median"] / b.get("extra_info", {}).get("calls_per_round", 1),
                        "extra": b.get("extra_info", {})}
            for b in data["benchmarks"]}


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
    import threadpoolctl

    import rustgrad

    blas = [f"{p.get('internal_api')} {p.get('version')} ({p.get('architecture')}, {p.get('num_threads')} threads)"
            for p in threadpoolctl.threadpool_info() if p.get("user_api") == "blas"]
    return [
        f"- CPU: {cpu.get('brand_raw', platform.processor())}, {os.cpu_count()} cores",
        f"- Python {platform.python_version()}, numpy {numpy.__version__}, rustgrad {rustgrad.__version__}",
        f"- numpy BLAS: {', '.join(blas) or 'unknown'} (with {', '.join(best_blas.SLOWING_VARIABLES)} unset)",
        f"- Date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
    ]


def section_step(m: dict) -> tuple[list[str], dict[str, float]]:
    base = m["test_numpy_in_place"]["median"]
    rows = [("rustgrad eager, custom Function ReLU (the reference program)", "test_eager_custom_function"),
            ("rustgrad eager, built-in relu", "test_eager_builtin_relu"),
            ("rustgrad static, Session.run", "test_static_session"),
            ("numpy by hand, preallocated in place", "test_numpy_in_place"),
            ("numpy by hand, one array per op", "test_numpy_one_array_per_op"),
            ("PyTorch eager", "test_pytorch")]
    lines = ["## Seed two-layer step (64×1000×100×10, float32)", "",
             "| way | median per step | × numpy in place |", "|---|---|---|"]
    chart = {}
    for label, key in rows:
        if key in m:
            t = m[key]["median"]
            lines.append(f"| {label} | {fmt_time(t)} | {t / base:.2f} |")
            chart[label] = t * 1e6
    return lines + [""], chart


def section_matmul(m: dict) -> list[str]:
    lines = ["## float32 matmul (GFLOP/s)", "",
             "| m×k×n | rustgrad 1 thread | numpy 1 thread | rustgrad 2 threads | numpy 2 threads "
             "| ratio (2 threads) |",
             "|---|---|---|---|---|---|"]
    shapes = sorted({k.split("[")[1].split("-")[0] for k in m if k.startswith("test_rustgrad_matmul")},
                    key=lambda s: [int(v) for v in s.split("x")])
    for shape in shapes:
        cells = []
        rates = {}
        for threads in ("1", "2"):
            for who in ("rustgrad", "numpy"):
                key = f"test_{who}_matmul[{shape}-{threads}]"
                if key not in m:
                    cells.append("–")
                    continue
                flops = m[key]["extra"].get("flops", 0)
                rate = flops / m[key]["median"] / 1e9
                rates[(who, threads)] = rate
                cells.append(f"{rate:.0f}")
        ratio = rates.get(("rustgrad", "2"), 0) / rates.get(("numpy", "2"), 1)
        lines.append(f"| {shape} | " + " | ".join(cells) + f" | {ratio:.2f} |")
    return lines + [""]


def ratio_rows(m: dict, rows: list[tuple[str, str, str, str]]) -> list[str]:
    """``| op | size | rustgrad | numpy | × numpy |`` rows for each (op, size, our key, numpy key) that ran."""
    lines = ["| op | size | rustgrad | numpy | × numpy |", "|---|---|---|---|---|"]
    for op, size, ours_key, ref_key in rows:
        if ours_key in m and ref_key in m:
            ours, ref = m[ours_key]["median"], m[ref_key]["median"]
            lines.append(f"| `{op}` | {size} | {fmt_time(ours)} | {fmt_time(ref)} | {ours / ref:.2f} |")
    return lines + [""]


def section_ops(m: dict) -> list[str]:
    import test_bench_ops

    rows = [(op, size, f"test_rustgrad_op[{op}-{size}]", f"test_numpy_op[{op}-{size}]")
            for op in test_bench_ops.OPS for size in test_bench_ops.SIZES]
    return ["## float32 elementwise ops and reductions (all threads)", "", *ratio_rows(m, rows)]


def section_reductions(m: dict) -> list[str]:
    import test_bench_reductions

    rows = [(name, size, f"test_reduction_rustgrad[{size}-{name}]", f"test_reduction_numpy[{size}-{name}]")
            for name, _, _ in test_bench_reductions.OPS for size in test_bench_reductions.IDS]
    return ["## float32 reductions and scans (all threads)", "",
            "`_dim0`/`_dim1`/`_rows`: along one dim of an (n/1024, 1024) matrix; otherwise over all elements.", "",
            *ratio_rows(m, rows)]


def section_losses(m: dict) -> list[str]:
    import test_bench_losses

    rows = [("cross_entropy fwd+bwd", size, f"test_cross_entropy_rustgrad[{size}]", f"test_cross_entropy_numpy[{size}]")
            for size in test_bench_losses.IDS]
    return ["## float32 cross-entropy forward and backward (all threads)", "",
            "`F.cross_entropy` of (N, C) logits and int64 targets, mean, then `backward()`; numpy: the "
            "hand-written stable log-softmax and softmax − one-hot.", "", *ratio_rows(m, rows)]


def section_strided(m: dict) -> list[str]:
    lines = ["## Strided views (float32, all threads)", "",
             "A view read in place against the same op after `.contiguous()`, and numpy's strided op.", "",
             "| operands | side | view | copy, then op | numpy | view × numpy |", "|---|---|---|---|---|---|"]
    rows = [("transposed view + matrix", "test_transposed_view_plus_matrix",
             "test_transposed_view_copied_then_plus_matrix", "test_numpy_transposed_plus_matrix"),
            ("expanded row + matrix", "test_expanded_row_plus_matrix",
             "test_expanded_row_copied_then_plus_matrix", "test_numpy_row_plus_matrix")]
    for label, *names in rows:
        for side in ("1024x1024", "4096x4096"):
            keys = [f"{n}[{side}]" for n in names]
            if all(k in m for k in keys):
                view, copied, ref = (m[k]["median"] for k in keys)
                lines.append(f"| {label} | {side} | {fmt_time(view)} | {fmt_time(copied)} | {fmt_time(ref)} "
                             f"| {view / ref:.2f} |")
    return lines + [""]


def section_batched_matmul(m: dict) -> list[str]:
    lines = ["## float32 batched matmul (all threads)", "",
             "| batch×m×k×n | rustgrad `bmm` | rustgrad `@` | numpy `matmul` | `bmm` × numpy | `@` × numpy |",
             "|---|---|---|---|---|---|"]
    shapes = sorted({k.split("[")[1].rstrip("]") for k in m if k.startswith("test_numpy_batched_matmul[")},
                    key=lambda s: [int(v) for v in s.split("x")])
    for shape in shapes:
        keys = [f"test_rustgrad_batched_matmul[{shape}-bmm]", f"test_rustgrad_batched_matmul[{shape}-at]",
                f"test_numpy_batched_matmul[{shape}]"]
        if not all(k in m for k in keys):
            continue
        bmm, at, ref = (m[k]["median"] for k in keys)
        lines.append(f"| {shape} | {fmt_time(bmm)} | {fmt_time(at)} | {fmt_time(ref)} | {bmm / ref:.2f} "
                     f"| {at / ref:.2f} |")
    return lines + [""]


def section_einsum(m: dict) -> list[str]:
    lines = ["## float32 einsum `bij,bjk->bik` (all threads)", "",
             "| batch×m×k×n | rustgrad `einsum` | rustgrad `bmm` | numpy `einsum(optimize=True)` | numpy `matmul` "
             "| `einsum` × `bmm` | `einsum` × numpy `matmul` |",
             "|---|---|---|---|---|---|---|"]
    shapes = sorted({k.split("[")[1].split("-")[0] for k in m if k.startswith("test_numpy_einsum_batched_matmul[")},
                    key=lambda s: [int(v) for v in s.split("x")])
    for shape in shapes:
        ours_key = f"test_rustgrad_einsum_batched_matmul[{shape}"
        numpy_key = f"test_numpy_einsum_batched_matmul[{shape}"
        keys = [f"{ours_key}-einsum]", f"{ours_key}-bmm]", f"{numpy_key}-einsum]", f"{numpy_key}-matmul]"]
        if not all(k in m for k in keys):
            continue
        ours, bmm, np_einsum, np_matmul = (m[k]["median"] for k in keys)
        lines.append(f"| {shape} | {fmt_time(ours)} | {fmt_time(bmm)} | {fmt_time(np_einsum)} | {fmt_time(np_matmul)} "
                     f"| {ours / bmm:.2f} | {ours / np_matmul:.2f} |")
    return lines + [""]


def section_conv(m: dict) -> list[str]:
    lines = ["## float32 conv2d forward + backward, padding 1 (all threads)", "",
             "The three products (forward, input and weight gradients); numpy: im2col by strided views and "
             "one matmul per product over the whole batch.", "",
             "| N×C×H×W, O×k×k | rustgrad | numpy im2col + matmul | × numpy | rustgrad GFLOP/s |",
             "|---|---|---|---|---|"]
    shapes = sorted({k.split("[")[1].rstrip("]") for k in m if k.startswith("test_numpy_conv2d_step[")})
    for shape in shapes:
        keys = [f"test_rustgrad_conv2d_step[{shape}]", f"test_numpy_conv2d_step[{shape}]"]
        if not all(k in m for k in keys):
            continue
        ours, ref = (m[k]["median"] for k in keys)
        n, c, h, w, o, k = (int(v) for v in shape.split("x"))
        gflops = 3 * 2 * n * o * h * w * c * k * k / ours / 1e9
        lines.append(f"| {n}×{c}×{h}×{w}, {o}×{k}×{k} | {fmt_time(ours)} | {fmt_time(ref)} | {ours / ref:.2f} "
                     f"| {gflops:.0f} |")
    return lines + [""]


def section_nn(m: dict) -> list[str]:
    """The framework layer's steps: the MLP step three ways and the LSTM, each against numpy by hand."""
    lines = ["## Framework layer: MLP step and LSTM (float32)", "",
             "MLP: `Sequential(Linear(784, 256), ReLU, Linear(256, 10))`, `CrossEntropyLoss`, `Adam`, batch 64 "
             "(`benchmarks/nn_steps.py`); the bare-ops step calls the same functions and Adam's kernel on plain "
             "tensors, so the difference is what the module and optimizer layers cost. LSTM: one layer, input 32, "
             "hidden 128, batch 16, 50 steps, forward and backward.", "",
             "| step | rustgrad | numpy by hand | × numpy |", "|---|---|---|---|"]
    rows = [("MLP, modules + optimizer", "test_mlp_modules_and_optimizer", "test_mlp_numpy"),
            ("MLP, bare ops", "test_mlp_bare_ops", "test_mlp_numpy"),
            ("LSTM forward + backward", "test_rustgrad_lstm", "test_numpy_lstm")]
    for label, ours_key, ref_key in rows:
        if ours_key in m and ref_key in m:
            ours, ref = m[ours_key]["median"], m[ref_key]["median"]
            lines.append(f"| {label} | {fmt_time(ours)} | {fmt_time(ref)} | {ours / ref:.2f} |")
    layer, bare = m.get("test_mlp_modules_and_optimizer"), m.get("test_mlp_bare_ops")
    if layer and bare:
        lines += ["", f"The module and optimizer layers cost {(layer['median'] - bare['median']) * 1e6:.0f} µs per "
                      "MLP step over the bare ops."]
    return lines + [""]


def section_overhead(m: dict) -> list[str]:
    base = m["test_numpy_one_element_add"]["median"]
    rows = [("numpy one-element `a + b`", "test_numpy_one_element_add"),
            ("one-element add, no grad", "test_one_element_add_without_grad"),
            ("one-element add, requires_grad", "test_one_element_add_with_grad"),
            ("tiny `(a*b).sum().backward()`", "test_tiny_backward"),
            ("tiny custom Function forward + backward", "test_tiny_custom_function"),
            ("`Session.run` of a tiny cached graph", "test_tiny_session_run")]
    lines = ["## Per-op overhead", "",
             "Medians of one call. A one-element add is timed 1,000 calls at a time, and its figure includes "
             "pytest-benchmark's own call of the op (tens of ns); `python benchmarks/one_element_add.py` "
             "times a bare `a + b`.", "",
             "| operation | median | × numpy one-element add |", "|---|---|---|"]
    for label, key in rows:
        if key in m:
            t = m[key]["median"]
            lines.append(f"| {label} | {fmt_time(t)} | {t / base:.2f} |")
    return lines + [""]


def section_scaling(m: dict) -> list[str]:
    lines = ["## Scaling: the two-layer step at larger sizes", "",
             "| N×D_in×H×D_out | eager | static | numpy in place | eager × numpy | static × numpy |",
             "|---|---|---|---|---|---|"]
    for size in ("256x4096x1024x10", "1024x4096x4096x1000"):
        keys = [f"test_scaling_{w}[{size}]" for w in ("eager", "static", "numpy_in_place")]
        if not all(k in m for k in keys):
            continue
        e, s, n = (m[k]["median"] for k in keys)
        lines.append(f"| {size} | {fmt_time(e)} | {fmt_time(s)} | {fmt_time(n)} | {e / n:.2f} | {s / n:.2f} |")
    return lines + [""]


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, help="reuse a pytest-benchmark JSON file instead of running")
    args = parser.parse_args()
    json_path = args.json
    if json_path is None:
        json_path = Path(tempfile.mkdtemp()) / "benchmarks.json"
        run_suite(json_path, args.quick)
    data = json.loads(json_path.read_text())
    m = medians(data)
    step_lines, step_chart = section_step(m)
    has_chart = chart(step_chart, DOCS / "benchmarks.png")
    lines = ["# Benchmarks", "",
             "Written by `python benchmarks/report.py` (medians from one run; ratios compare medians "
             "from the same run). Do not edit by hand.", "", *machine(data), ""]
    if has_chart:
        lines += ["![seed step](benchmarks.png)", ""]
    lines += (step_lines + section_matmul(m) + section_batched_matmul(m) + section_einsum(m) + section_conv(m)
              + section_nn(m) + section_ops(m) + section_reductions(m) + section_losses(m) + section_strided(m)
              + section_overhead(m) + section_scaling(m))
    (DOCS / "benchmarks.md").write_text("\n".join(lines))
    print(f"wrote {DOCS / 'benchmarks.md'}")


if __name__ == "__main__":
    main()
