"""rustgrad.compile: replays bitwise equal to eager, guards, fallback, fullgraph, the API."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rustgrad
from rustgrad import optim
from rustgrad._compile import CompileWarning
from rustgrad._demo import MyReLU, Problem
from rustgrad.errors import ArgumentTypeError, CompileError, RustgradError

LR = 1e-6


def _problem(seed=0, sizes=(16, 40, 12, 5)):
    return Problem.make(seed, sizes)


def _seed_state(problem):
    y = rustgrad.from_numpy(problem.y.copy())
    w1 = rustgrad.tensor(problem.w1, requires_grad=True)
    w2 = rustgrad.tensor(problem.w2, requires_grad=True)
    return y, w1, w2


def _seed_step(problem, custom_relu=True):
    """The reference loop body (as benchmarks/steps.py's eager_batch_step)."""
    y, w1, w2 = _seed_state(problem)
    relu = MyReLU.apply if custom_relu else rustgrad.relu

    def step(x):
        y_pred = relu(x.mm(w1)).mm(w2)
        loss = (y_pred - y).pow(2).sum()
        value = loss.item()
        loss.backward()
        with rustgrad.no_grad():
            w1.sub_(LR * w1.grad)
            w2.sub_(LR * w2.grad)
            w1.grad.zero_()
            w2.grad.zero_()
        return value

    return step, (w1, w2)


def _bits(t):
    a = t.detach().numpy().copy()
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        return fn(*args)


@pytest.mark.parametrize("custom_relu", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
def test_seed_step_replays_bitwise_equal_to_eager(custom_relu, threads):
    before = rustgrad.get_num_threads()
    rustgrad.set_num_threads(threads)
    try:
        problem = _problem()
        x = rustgrad.from_numpy(problem.x)
        eager, (e1, e2) = _seed_step(problem, custom_relu)
        step, (c1, c2) = _seed_step(problem, custom_relu)
        compiled = rustgrad.compile(step)
        for _ in range(8):
            assert _quiet(compiled, x) == eager(x)
            for a, b in [(e1, c1), (e2, c2), (e1.grad, c1.grad), (e2.grad, c2.grad)]:
                np.testing.assert_array_equal(_bits(a), _bits(b))
        assert compiled.stats["replayed"] >= 5
    finally:
        rustgrad.set_num_threads(before)


def test_compiled_step_changes_weights_and_loss_falls():
    problem = _problem(1)
    x = rustgrad.from_numpy(problem.x)
    step, (w1, _) = _seed_step(problem)
    compiled = rustgrad.compile(step)
    start = w1.detach().numpy().copy()
    losses = [_quiet(compiled, x) for _ in range(10)]
    assert losses[-1] < losses[0]
    assert not np.array_equal(start, w1.detach().numpy())
    assert all(type(v) is float for v in losses)


def _counting(fn):
    compiled = rustgrad.compile(fn)
    return compiled


def test_shape_change_retraces_and_matches_eager():
    w = rustgrad.tensor(np.arange(6.0).reshape(3, 2), dtype=rustgrad.float32)

    def f(x):
        return (x.mm(w) * 2.0).sum(0)

    compiled = rustgrad.compile(f)
    for n in (4, 4, 4, 5, 5, 5, 4):
        x = rustgrad.ones(n, 3)
        np.testing.assert_array_equal(compiled(x).numpy(), f(x).numpy())
    assert compiled.stats["replayed"] == 3


def test_dtype_and_requires_grad_are_guarded():
    def f(x):
        return x * 3

    compiled = rustgrad.compile(f)
    for x in [rustgrad.ones(3)] * 3 + [rustgrad.ones(3, dtype=rustgrad.float64)] * 3:
        out = compiled(x)
        assert out.dtype == x.dtype
        np.testing.assert_array_equal(out.numpy(), f(x).numpy())
    assert compiled.stats["replayed"] == 2
    leaf = rustgrad.ones(3, requires_grad=True)
    with pytest.warns(CompileWarning, match="requires grad"):
        for _ in range(2):
            out = compiled(leaf)
            assert out.requires_grad and out.grad_fn is not None


def test_grad_mode_is_guarded():
    w = rustgrad.ones(3, requires_grad=True)

    def f(x):
        return (x * w).sum().detach() if rustgrad.is_grad_enabled() else (x * w).sum()

    compiled = rustgrad.compile(f)
    x = rustgrad.ones(3)
    for _ in range(3):
        compiled(x)
    with rustgrad.no_grad():
        for _ in range(3):
            out = compiled(x)
            assert not out.requires_grad
    assert compiled.stats["replayed"] == 2


def test_python_scalar_argument_and_global_are_guarded():
    w = rustgrad.ones(4)

    def f(x, scale):
        return x * scale + w * OFFSET

    compiled = rustgrad.compile(f)
    x = rustgrad.arange(4, dtype=rustgrad.float32)
    global OFFSET
    for scale, offset in [(2.0, 1.0)] * 3 + [(3.0, 1.0)] * 3 + [(3.0, 0.5)] * 3:
        OFFSET = offset
        np.testing.assert_array_equal(compiled(x, scale).numpy(), f(x, scale).numpy())
    assert compiled.stats["replayed"] == 3


OFFSET = 1.0


def test_closure_scalar_change_is_seen():
    lr = 0.5
    w = rustgrad.ones(3)

    def f(x):
        return x * lr + w

    compiled = rustgrad.compile(f)
    x = rustgrad.ones(3)
    for _ in range(3):
        compiled(x)
    lr = 0.25
    np.testing.assert_array_equal(compiled(x).numpy(), np.full(3, 1.25, np.float32))


def test_cache_limit_warns_once_and_runs_eagerly():
    def f(x, k):
        return x + k

    compiled = rustgrad.compile(f)
    x = rustgrad.ones(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(12):
            assert compiled(x, float(k)).numpy().tolist() == [1.0 + k] * 2
    limit = [w for w in caught if "cache size limit (8)" in str(w.message)]
    assert len(limit) == 1 and issubclass(limit[0].category, CompileWarning)
    assert "last reason: positional arguments changed" in str(limit[0].message)
    assert compiled.stats["eager"] == 4


def test_data_dependent_branch_falls_back_with_one_warning():
    w = rustgrad.tensor([1.0, -2.0], requires_grad=True)

    def step(x):
        loss = (x * w).sum()
        if loss.item() > 0:
            loss = loss * 2
        loss.backward()
        with rustgrad.no_grad():
            w.sub_(0.1 * w.grad)
            w.grad.zero_()
        return loss.detach()

    compiled = rustgrad.compile(step)
    x = rustgrad.tensor([1.0, 1.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(4):
            compiled(x)
    assert [str(c.message) for c in caught] == [
        str(caught[0].message)
    ] and "data-dependent Python control flow" in str(caught[0].message)
    assert "Tensor.item() value used in Python" in str(caught[0].message)
    # Eager's weights: 4 steps of w -= 0.1 * grad, with the branch taken as loss says.
    ref = np.array([1.0, -2.0], np.float32)
    for _ in range(4):
        loss = np.float32(ref.sum())
        ref = ref - np.float32(0.1) * (np.float32(2) if loss > 0 else np.float32(1))
    np.testing.assert_array_equal(w.detach().numpy(), ref)


@pytest.mark.parametrize("read", ["bool", "item", "float", "numpy"])
def test_fullgraph_raises_on_data_dependent_python(read):
    def f(x):
        s = x.sum()
        if read == "bool":
            return x * 2 if s > 0 else x
        if read == "item":
            return x * 2 if s.item() > 0 else x
        if read == "float":
            return x * float(s)
        return x * s.numpy()

    compiled = rustgrad.compile(f, fullgraph=True)
    with pytest.raises(CompileError, match="Data-dependent branching") as info:
        compiled(rustgrad.ones(3))
    assert isinstance(info.value, RustgradError) and isinstance(info.value, RuntimeError)
    assert "from user code:" in str(info.value) and "test_compile.py" in str(info.value)


def test_fullgraph_allows_returning_item():
    w = rustgrad.ones(3, requires_grad=True)

    def f(x):
        loss = (x * w).sum()
        loss.backward()
        with rustgrad.no_grad():
            w.sub_(w.grad)
            w.grad.zero_()
        return loss.item()

    compiled = rustgrad.compile(f, fullgraph=True)
    values = [compiled(rustgrad.ones(3)) for _ in range(5)]
    assert values == [3.0, 0.0, -3.0, -6.0, -9.0]
    assert compiled.stats["replayed"] == 2


def test_random_op_falls_back():
    def f(x):
        return x + rustgrad.randn(3)

    compiled = rustgrad.compile(f)
    with pytest.warns(CompileWarning, match="an operation compile does not trace"):
        compiled(rustgrad.ones(3))
        compiled(rustgrad.ones(3))
    rustgrad.manual_seed(3)
    a = compiled(rustgrad.ones(3)).numpy()
    rustgrad.manual_seed(3)
    np.testing.assert_array_equal(a, f(rustgrad.ones(3)).numpy())


def test_hook_falls_back():
    w = rustgrad.ones(3, requires_grad=True)
    w.register_hook(lambda g: g * 2)

    def f(x):
        (x * w).sum().backward()
        return None

    compiled = rustgrad.compile(f)
    with pytest.warns(CompileWarning, match="hook"):
        compiled(rustgrad.ones(3))
        compiled(rustgrad.ones(3))
    compiled(rustgrad.ones(3))
    np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 6.0, np.float32))


def _optimizer_step(make_opt, seed=0):
    problem = _problem(seed)
    y, w1, w2 = _seed_state(problem)
    opt = make_opt([w1, w2])

    def step(x):
        opt.zero_grad()
        loss = (MyReLU.apply(x.mm(w1)).mm(w2) - y).pow(2).sum()
        loss.backward()
        opt.step()
        return loss.item()

    return step, (w1, w2), rustgrad.from_numpy(problem.x)


@pytest.mark.parametrize(
    "make_opt",
    [
        lambda p: optim.SGD(p, lr=1e-5),
        lambda p: optim.SGD(p, lr=1e-5, momentum=0.9),
        lambda p: optim.SGD(p, lr=1e-5, momentum=0.9, nesterov=True, weight_decay=0.01),
    ],
    ids=["sgd", "momentum", "nesterov"],
)
def test_optimizer_steps_replay_bitwise(make_opt):
    _replays_bitwise(make_opt, replayed_at_least=3)


def _replays_bitwise(make_opt, replayed_at_least):
    """Eight steps, eager and compiled, give the same losses and bitwise the same weights;
    returns the compiled step's function."""
    eager, (e1, e2), x = _optimizer_step(make_opt)
    step, (c1, c2), _ = _optimizer_step(make_opt)
    compiled = rustgrad.compile(step)
    for _ in range(8):
        assert _quiet(compiled, x) == eager(x)
    for a, b in [(e1, c1), (e2, c2)]:
        np.testing.assert_array_equal(_bits(a), _bits(b))
    assert compiled.stats["replayed"] >= replayed_at_least
    return step


def test_lr_change_on_the_optimizer_retraces():
    make = lambda p: optim.SGD(p, lr=1e-5)  # noqa: E731
    eager, (e1, _), x = _optimizer_step(make)
    step, (c1, _), _ = _optimizer_step(make)
    compiled = rustgrad.compile(step)
    opts = [eager.__closure__[i].cell_contents for i in range(len(eager.__closure__))]
    eager_opt = next(o for o in opts if isinstance(o, optim.Optimizer))
    compiled_opt = next(
        c.cell_contents for c in step.__closure__ if isinstance(c.cell_contents, optim.Optimizer)
    )
    for i in range(8):
        if i == 5:
            eager_opt.param_groups[0]["lr"] = compiled_opt.param_groups[0]["lr"] = 3e-5
        assert compiled(x) == eager(x)
    np.testing.assert_array_equal(_bits(e1), _bits(c1))


def test_adam_without_capturable_falls_back_with_a_warning():
    eager, (e1, _), x = _optimizer_step(lambda p: optim.Adam(p, lr=1e-3))
    step, (c1, _), _ = _optimizer_step(lambda p: optim.Adam(p, lr=1e-3))
    compiled = rustgrad.compile(step)
    with pytest.warns(CompileWarning, match="capturable=True"):
        for _ in range(4):
            assert compiled(x) == eager(x)
    np.testing.assert_array_equal(_bits(e1), _bits(c1))


@pytest.mark.parametrize(
    "make_opt",
    [
        lambda p: optim.Adam(p, lr=1e-3, capturable=True),
        lambda p: optim.AdamW(p, lr=1e-3, amsgrad=True, capturable=True),
    ],
    ids=["adam", "adamw-amsgrad"],
)
def test_capturable_adam_replays_bitwise(make_opt):
    step = _replays_bitwise(make_opt, replayed_at_least=4)
    opt = next(c.cell_contents for c in step.__closure__ if isinstance(c.cell_contents, optim.Optimizer))
    assert [float(s["step"]) for s in opt.state.values()] == [8.0, 8.0]


@pytest.mark.parametrize(
    "make_opt",
    [
        lambda p: optim.SGD(p, lr=rustgrad.tensor(2.0**-17)),
        lambda p: optim.SGD(p, lr=rustgrad.tensor(2.0**-17), momentum=0.9),
        lambda p: optim.Adam(p, lr=rustgrad.tensor(2.0**-10), capturable=True),
    ],
    ids=["sgd", "momentum", "adam"],
)
def test_a_scheduler_filling_a_tensor_lr_replays_without_retracing(make_opt):
    """torch's recipe for compiled steps with a scheduler: hold lr in a tensor, which the scheduler
    fills in place; the step reads it on every replay."""
    eager, (e1, e2), x = _optimizer_step(make_opt)
    step, (c1, c2), _ = _optimizer_step(make_opt)
    compiled = rustgrad.compile(step)
    schedulers = [
        optim.lr_scheduler.StepLR(next(c.cell_contents for c in fn.__closure__
                                       if isinstance(c.cell_contents, optim.Optimizer)), step_size=2, gamma=0.5)
        for fn in (eager, step)
    ]
    for _ in range(10):
        assert _quiet(compiled, x) == eager(x)
        for scheduler in schedulers:
            scheduler.step()
    for a, b in [(e1, c1), (e2, c2)]:
        np.testing.assert_array_equal(_bits(a), _bits(b))
    assert compiled.stats["traced"] <= 4 and compiled.stats["replayed"] >= 6
    group = schedulers[1].optimizer.param_groups[0]
    assert isinstance(group["lr"], rustgrad.Tensor)
    assert group["lr"].item() == group["initial_lr"].item() * 0.5**5  # filled in place, five halvings


def test_a_tensor_lr_gives_the_bits_of_the_same_float_lr():
    for make in (lambda lr: (lambda p: optim.SGD(p, lr=lr, momentum=0.5)),
                 lambda lr: (lambda p: optim.Adam(p, lr=lr, capturable=True))):
        as_float, (f1, _), x = _optimizer_step(make(2.0**-12))
        as_tensor, (t1, _), _ = _optimizer_step(make(rustgrad.tensor(2.0**-12)))
        for _ in range(3):
            assert as_float(x) == as_tensor(x)
        np.testing.assert_array_equal(_bits(f1), _bits(t1))


def test_capturable_adam_matches_plain_adam():
    plain, (p1, _), x = _optimizer_step(lambda p: optim.Adam(p, lr=1e-3))
    capt, (c1, _), _ = _optimizer_step(lambda p: optim.Adam(p, lr=1e-3, capturable=True))
    for _ in range(3):
        assert plain(x) == capt(x)
    np.testing.assert_array_equal(_bits(p1), _bits(c1))


def test_grad_set_to_none_between_calls_is_seen():
    problem = _problem(2)
    x = rustgrad.from_numpy(problem.x)
    eager, (e1, e2) = _seed_step(problem)
    step, (c1, c2) = _seed_step(problem)
    compiled = rustgrad.compile(step)
    for i in range(8):
        if i in (4, 6):
            e1.grad = c1.grad = None
        assert compiled(x) == eager(x)
    np.testing.assert_array_equal(_bits(e1), _bits(c1))


def test_a_failed_compiled_call_changes_nothing():
    problem = _problem(3)
    x = rustgrad.from_numpy(problem.x)
    step, (w1, w2) = _seed_step(problem)
    compiled = rustgrad.compile(step)
    for _ in range(4):
        compiled(x)
    before = [_bits(w1), _bits(w2), _bits(w1.grad)]
    with pytest.raises(ValueError, match="mm"):
        compiled(rustgrad.ones(x.shape[0], x.shape[1] + 1))
    for a, b in zip(before, [w1, w2, w1.grad]):
        np.testing.assert_array_equal(a, _bits(b))
    compiled(x)
    assert compiled.stats["replayed"] >= 2


def test_api_forms_modes_and_errors():
    def f(x):
        return x + 1

    assert isinstance(rustgrad.compile(f), rustgrad._compile.CompiledFunction)
    for mode in (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
        g = rustgrad.compile(mode=mode)(f)
        assert g(rustgrad.ones(2)).numpy().tolist() == [2.0, 2.0]

    @rustgrad.compile
    def h(x):
        return x * 2

    @rustgrad.compile(fullgraph=True, dynamic=False)
    def k(x):
        return x * 3

    assert h(rustgrad.ones(1)).item() == 2.0 and k(rustgrad.ones(1)).item() == 3.0
    assert h.__name__ == "h"
    with pytest.raises(CompileError, match="Unrecognized mode=fast, should be one of: default, reduce-overhead"):
        rustgrad.compile(f, mode="fast")
    with pytest.raises(RuntimeError, match="Either options or mode can be specified"):
        rustgrad.compile(f, mode="default", options={})
    with pytest.raises(CompileError, match="Invalid backend: 'tvm'"):
        rustgrad.compile(f, backend="tvm")
    with pytest.raises(ArgumentTypeError, match="expected a callable"):
        rustgrad.compile(3)
    assert rustgrad.compile(f, disable=True) is f
    eager = rustgrad.compile(f, backend="eager")
    for _ in range(4):
        eager(rustgrad.ones(1))
    assert eager.stats["replayed"] == 0


def test_torch_alias():
    import rustgrad as torch

    assert torch.compile is rustgrad.compile


def test_item_read_by_c_code_is_noticed():
    import math

    w = rustgrad.ones(2, requires_grad=True)

    def f(x):
        loss = (x * w).sum()
        if math.isnan(loss.item()):
            raise FloatingPointError("nan loss")
        return loss.detach()

    compiled = rustgrad.compile(f)
    with pytest.warns(CompileWarning, match="data-dependent"):
        for _ in range(3):
            compiled(rustgrad.ones(2))
    with pytest.raises(FloatingPointError, match="nan loss"):
        compiled(rustgrad.full((2,), float("nan")))
