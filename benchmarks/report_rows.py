"""The report's rows: each section turns the suite's medians into ``floor.Row``s, rustgrad against
numpy in the same run, with the FLOP count of the rows that run products."""

from __future__ import annotations

from dataclasses import dataclass, field

from floor import (
    CONV2D_FORMULA,
    LSTM_FORMULA,
    TWO_LAYER_FORMULA,
    Row,
    conv2d_step_flops,
    lstm_step_flops,
    matmul_flops,
    two_layer_step_flops,
)

Medians = dict[str, dict]


@dataclass
class Section:
    title: str
    note: str
    rows: list[Row] = field(default_factory=list)


def _shape(text: str) -> list[int]:
    return [int(v) for v in text.split("x")]


SEED_SIZES = (64, 1000, 100, 10)  # N, D_in, H, D_out of the seed step


def _pair(section: Section, m: Medians, key: str, label: str, numpy_key: str, **row: object) -> None:
    """Adds the row for ``key`` against ``numpy_key`` if the first ran (numpy's time is optional)."""
    if key in m:
        ref = m[numpy_key]["median"] if numpy_key in m else None
        section.rows.append(Row(section.title, key, label, m[key]["median"], ref, numpy_key=numpy_key,
                                **row))  # type: ignore[arg-type]


def seed_step(m: Medians) -> Section:
    s = Section("Seed two-layer step (64×1000×100×10, float32)",
                "Against numpy by hand, preallocated in place. The `interleaved` rows time the three rustgrad "
                "steps and numpy's in-place step in rotating rounds of 200 steps in the report's own process "
                "(benchmarks/compile_seed.py). Each round gives the median of its steps' times; each row is "
                "the median over the rounds in which numpy's round was in the normal state (the note above "
                "says which), against numpy's median over the same rounds. The machine's state changes within "
                "seconds, and each suite row is one window of half a second, so the seed step's targets are "
                "judged on these rows. "
                "FLOPs: the five products, "
                f"{TWO_LAYER_FORMULA} (N=64, D_in=1000, H=100, D_out=10).")
    flops = two_layer_step_flops(*SEED_SIZES)
    for label, key in [("rustgrad eager, custom Function ReLU (the reference program)", "test_eager_custom_function"),
                       ("rustgrad eager, built-in relu", "test_eager_builtin_relu"),
                       ("rustgrad.compile of the reference program", "test_compiled_custom_function"),
                       ("rustgrad static, Session.run", "test_static_session"),
                       ("numpy by hand, one array per op", "test_numpy_one_array_per_op"),
                       ("PyTorch eager", "test_pytorch")]:
        _pair(s, m, key, label, "test_numpy_in_place", flops=flops, formula=TWO_LAYER_FORMULA)
    for label, key in [("interleaved: rustgrad eager (reference program)", "interleaved_eager"),
                       ("interleaved: rustgrad.compile of the reference program", "interleaved_compiled"),
                       ("interleaved: rustgrad static, Session.run", "interleaved_static")]:
        _pair(s, m, key, label, "interleaved_numpy_in_place", flops=flops, formula=TWO_LAYER_FORMULA)
    return s


def matmul(m: Medians) -> Section:
    s = Section("float32 matmul", "`a.mm(b)` against `np.matmul` on the same number of threads; the floor of a "
                                  "one-thread row uses the one-thread peak. FLOPs: 2·m·k·n.")
    shapes = sorted({k.split("[")[1].split("-")[0] for k in m if k.startswith("test_rustgrad_matmul[")}, key=_shape)
    for shape in shapes:
        for threads in (1, 2):
            key = f"test_rustgrad_matmul[{shape}-{threads}]"
            _pair(s, m, key, f"{shape}, {threads} thread{'s' * (threads > 1)}",
                  f"test_numpy_matmul[{shape}-{threads}]", flops=matmul_flops(*_shape(shape)), formula="2·m·k·n",
                  threads=threads)
    return s


def batched_products(m: Medians) -> Section:
    s = Section("float32 batched products (all threads)",
                "`bmm`, `@` and `einsum('bij,bjk->bik')` against numpy's `matmul`. FLOPs: 2·b·m·k·n.")
    for shape in sorted({k.split("[")[1].rstrip("]") for k in m if k.startswith("test_numpy_batched_matmul[")},
                        key=_shape):
        b, mm, k, n = _shape(shape)
        for spelling, label in (("bmm", "`bmm`"), ("at", "`@`")):
            _pair(s, m, f"test_rustgrad_batched_matmul[{shape}-{spelling}]", f"{label} {shape}",
                  f"test_numpy_batched_matmul[{shape}]", flops=matmul_flops(mm, k, n, b), formula="2·b·m·k·n")
    for shape in sorted({k.split("[")[1].split("-")[0] for k in m if k.startswith("test_rustgrad_einsum_batched")},
                        key=_shape):
        b, mm, k, n = _shape(shape)
        _pair(s, m, f"test_rustgrad_einsum_batched_matmul[{shape}-einsum]", f"`einsum` {shape}",
              f"test_numpy_einsum_batched_matmul[{shape}-matmul]", flops=matmul_flops(mm, k, n, b),
              formula="2·b·m·k·n")
    return s


def conv(m: Medians) -> Section:
    s = Section("float32 conv2d forward + backward, padding 1 (all threads)",
                "Against numpy's im2col by strided views and one matmul per product over the batch. FLOPs: the "
                f"forward, input-gradient and weight-gradient products, {CONV2D_FORMULA}.")
    for shape in sorted({k.split("[")[1].rstrip("]") for k in m if k.startswith("test_rustgrad_conv2d_step[")}):
        n, c, h, w, o, k = _shape(shape)
        _pair(s, m, f"test_rustgrad_conv2d_step[{shape}]", f"{n}×{c}×{h}×{w}, {o}×{k}×{k}",
              f"test_numpy_conv2d_step[{shape}]", flops=conv2d_step_flops(n, c, h, w, o, k), formula=CONV2D_FORMULA)
    return s


def framework(m: Medians) -> Section:
    s = Section("Framework layer: MLP step and LSTM (float32)",
                "MLP: `Sequential(Linear(784, 256), ReLU, Linear(256, 10))`, `CrossEntropyLoss`, `Adam`, batch 64; "
                "the bare-ops step runs the same functions on plain tensors. LSTM: one layer, input 32, hidden 128, "
                "batch 16, 50 steps, forward and backward. Each against numpy by hand.")
    mlp = two_layer_step_flops(64, 784, 256, 10)
    for label, key in [("MLP, modules + optimizer", "test_mlp_modules_and_optimizer"),
                       ("MLP, bare ops", "test_mlp_bare_ops")]:
        _pair(s, m, key, label, "test_mlp_numpy", flops=mlp, formula=TWO_LAYER_FORMULA)
    _pair(s, m, "test_rustgrad_lstm", "LSTM forward + backward", "test_numpy_lstm",
          flops=lstm_step_flops(50, 16, 32, 128), formula=LSTM_FORMULA)
    return s


def _params(m: Medians, test: str) -> list[str]:
    """The parameter ids of ``test`` that ran, in the order they ran (the suite's JSON order)."""
    prefix = f"{test}["
    return [key[len(prefix):-1] for key in m if key.startswith(prefix)]


def elementwise(m: Medians) -> Section:
    s = Section("float32 elementwise ops and reductions (all threads)", "Memory-bound: no FMA floor.")
    for param in _params(m, "test_rustgrad_op"):
        op, size = param.rsplit("-", 1)
        _pair(s, m, f"test_rustgrad_op[{param}]", f"`{op}` {size}", f"test_numpy_op[{param}]")
    return s


def reductions(m: Medians) -> Section:
    s = Section("float32 reductions and scans (all threads)",
                "`_dim0`/`_dim1`/`_rows`: along one dim of an (n/1024, 1024) matrix; otherwise over all elements. "
                "Memory-bound: no FMA floor.")
    for param in _params(m, "test_reduction_rustgrad"):
        size, name = param.split("-", 1)
        _pair(s, m, f"test_reduction_rustgrad[{param}]", f"`{name}` {size}", f"test_reduction_numpy[{param}]")
    return s


def losses(m: Medians) -> Section:
    s = Section("float32 cross-entropy forward and backward (all threads)",
                "`F.cross_entropy` of (N, C) logits, mean, then `backward()`, against the hand-written stable "
                "log-softmax and softmax − one-hot. No products: no FMA floor.")
    for size in _params(m, "test_cross_entropy_rustgrad"):
        _pair(s, m, f"test_cross_entropy_rustgrad[{size}]", f"cross_entropy {size}",
              f"test_cross_entropy_numpy[{size}]")
    return s


def strided(m: Medians) -> Section:
    s = Section("Strided views (float32, all threads)",
                "A view read in place, and the same op after `.contiguous()`, against numpy's strided op. "
                "Memory-bound: no FMA floor.")
    for label, view, copied, ref in [
            ("transposed view + matrix", "test_transposed_view_plus_matrix",
             "test_transposed_view_copied_then_plus_matrix", "test_numpy_transposed_plus_matrix"),
            ("expanded row + matrix", "test_expanded_row_plus_matrix",
             "test_expanded_row_copied_then_plus_matrix", "test_numpy_row_plus_matrix")]:
        for side in ("1024x1024", "4096x4096"):
            _pair(s, m, f"{view}[{side}]", f"{label} {side}, view", f"{ref}[{side}]")
            _pair(s, m, f"{copied}[{side}]", f"{label} {side}, copy then op", f"{ref}[{side}]")
    return s


def overhead(m: Medians, one_element: dict[str, float] | None) -> Section:
    s = Section("Per-op overhead",
                "Against numpy's one-element `a + b`. The first two rows time a bare `a + b` with timeit in the "
                "report's own process (best of several repeats); the others are the suite's medians of one call, "
                "which include pytest-benchmark's own call of the op (tens of ns). No FMA floor.")
    if one_element:
        base = one_element["numpy"]
        s.rows += [Row(s.title, "one_element_add_requires_grad", "one-element add, requires_grad (timeit)",
                       one_element["requires_grad"], base),
                   Row(s.title, "one_element_add_no_grad", "one-element add, no grad (timeit)",
                       one_element["no_grad"], base)]
    for label, key in [("one-element add, no grad", "test_one_element_add_without_grad"),
                       ("one-element add, requires_grad", "test_one_element_add_with_grad"),
                       ("tiny `(a*b).sum().backward()`", "test_tiny_backward"),
                       ("tiny custom Function forward + backward", "test_tiny_custom_function"),
                       ("`Session.run` of a tiny cached graph", "test_tiny_session_run")]:
        _pair(s, m, key, label, "test_numpy_one_element_add")
    return s


def scaling(m: Medians) -> Section:
    s = Section("Scaling: the two-layer step at larger sizes",
                f"Against numpy in place. FLOPs: {TWO_LAYER_FORMULA}. 1024×4096×4096×1000 is the large step.")
    for size in ("256x4096x1024x10", "1024x4096x4096x1000"):
        for way in ("eager", "static"):
            _pair(s, m, f"test_scaling_{way}[{size}]", f"{way} {size}", f"test_scaling_numpy_in_place[{size}]",
                  flops=two_layer_step_flops(*_shape(size)), formula=TWO_LAYER_FORMULA)
    return s


def coverage(m: Medians) -> Section:
    import coverage_cases

    s = Section("Other op and module families (all threads)",
                "One row per family the op-breadth, PyTorch-framework and TF1-framework issues added that the "
                "sections above do not time (`benchmarks/test_bench_coverage.py`), at one mid size each, against "
                "the same work in numpy.")
    for name, case in coverage_cases.CASES.items():
        _pair(s, m, f"test_coverage_rustgrad[{name}]", case.label, f"test_coverage_numpy[{name}]",
              flops=case.flops, formula=case.formula)
    return s


MIXED_MODES = {"eager": "eager (custom Function ReLU)", "static": "static (Session.run)"}


def mixed(lines: list[dict] | None) -> Section:
    """benchmarks/mixed_numpy.py's pipeline lines (µs): each step alone and with numpy's work between steps."""
    s = Section("The seed step mixed with a numpy pipeline",
                "benchmarks/mixed_numpy.py in its own process, at the default spin: the seed step fed a new batch "
                "each step, back to back (alone) and with numpy's batch preparation between steps (mixed: 64 rows "
                "of a 4096×1000 data set drawn, standardised and whitened by a 1000×1000 product). Medians of "
                "alternating repeats; the targets compare each mixed row with its alone row. No numpy column "
                "(the script also prints numpy's own time alone and mixed) and no FMA floor.")
    for line in lines or []:
        if line["kind"] != "pipeline":
            continue
        mode = line["mode"]
        for way in ("alone", "mixed"):
            s.rows.append(Row(s.title, f"{way}_pipeline_{mode}", f"{MIXED_MODES[mode]}, {way}", line[way] * 1e-6))
    return s


def memory(peaks: dict | None) -> Section:
    """benchmarks/memory.py's peak RSS (MiB) of each program (``memory.measure``'s result), each against
    numpy's in-place program of the same step."""
    s = Section("Peak memory (RSS)",
                "benchmarks/memory.py: each program in a fresh interpreter, import and training loop, against "
                "numpy's in-place program of the same step. The large step in the reference form keeps TF1's "
                "three copies of the weights (the initial value, the updated variables, the fetched assigns; see "
                "docs/performance.md); with its weights loaded through a placeholder it holds one. No FMA floor.")
    if not peaks:
        return s
    programs = [("seed", "memory_eager_reference", "rustgrad eager",
                 "the reference PyTorch program (examples/two_layer_eager.py)"),
                ("seed", "memory_static_reference", "rustgrad static",
                 "the reference TF1 program (examples/two_layer_static.py)"),
                ("large", "memory_large_static_reference", "rustgrad static, reference form",
                 "the large step 1024×4096×4096×1000, static, reference form"),
                ("large", "memory_large_static_loaded", "rustgrad static, weights loaded",
                 "the large step 1024×4096×4096×1000, static, weights loaded")]
    for size, key, name, label in programs:
        measured = peaks.get(size, {})
        if name in measured:
            steps = peaks["steps" if size == "seed" else "large_steps"]
            s.rows.append(Row(s.title, key, f"{label}, {steps} steps", measured[name],
                              measured.get("numpy in place"), unit="MiB"))
    return s


def all_sections(m: Medians, one_element: dict[str, float] | None, mixed_lines: list[dict] | None = None,
                 memory_peaks: dict | None = None) -> list[Section]:
    return [seed_step(m), matmul(m), batched_products(m), conv(m), framework(m), scaling(m), elementwise(m),
            reductions(m), losses(m), strided(m), coverage(m), overhead(m, one_element), mixed(mixed_lines),
            memory(memory_peaks)]
