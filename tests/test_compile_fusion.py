"""compile's exact fusion of a plain SGD step (rust/compile/fuse.rs): each leaf's
accumulate, ``w.sub_(lr * w.grad)`` and ``w.grad.zero_()`` run in one pass, with the bits
of the eager step, also when something writes ``.grad`` between calls (through rustgrad,
through a numpy view, by replacing it) and when the fused pass cannot apply."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
from rustgrad._demo import Problem

LR = 1e-3


def _bits(t):
    a = t.detach().numpy().copy()
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _weights(problem, dtype, shared):
    w1, w2 = problem.w1.astype(dtype), problem.w2.astype(dtype)
    if not shared:
        return rustgrad.tensor(w1, requires_grad=True), rustgrad.tensor(w2, requires_grad=True)
    # Both weights are views of one storage: the fused pass must not run (it would reorder
    # writes to shared memory); the block runs its original instructions.
    flat = rustgrad.tensor(np.concatenate([w1.ravel(), w2.ravel()]))
    a = flat[: w1.size].view(*w1.shape).detach().requires_grad_()
    b = flat[w1.size :].view(*w2.shape).detach().requires_grad_()
    return a, b


def _step(problem, dtype=np.float32, shared=False, scaled=lambda grad: LR * grad):
    y = rustgrad.tensor(problem.y.astype(dtype))
    w1, w2 = _weights(problem, dtype, shared)

    def step(x):
        loss = (x.mm(w1).clamp(min=0).mm(w2) - y).pow(2).sum()
        loss.backward()
        with rustgrad.no_grad():
            w1.sub_(scaled(w1.grad))
            w2.sub_(scaled(w2.grad))
            w1.grad.zero_()
            w2.grad.zero_()
        return loss.item()

    return step, (w1, w2)


def _program(compiled):
    (entry,) = compiled._entries.values()
    return entry.programs[0][0]


def _fused(compiled):
    return _program(compiled).fused_leaf_steps


def _lockstep(dtype=np.float32, shared=False, between=None, calls=10, **step_options):
    """Runs the step eagerly and compiled side by side; ``between(i, w1, w2)`` acts on both
    sides' leaves before call i. Returns the compiled function."""
    problem = Problem.make(4, (16, 40, 12, 5))
    x = rustgrad.tensor(problem.x.astype(dtype))
    eager, (e1, e2) = _step(problem, dtype, shared, **step_options)
    step, (c1, c2) = _step(problem, dtype, shared, **step_options)
    compiled = rustgrad.compile(step)
    for i in range(calls):
        if between is not None:
            between(i, e1, e2)
            between(i, c1, c2)
        assert compiled(x) == eager(x)
        for a, b in [(e1, c1), (e2, c2), (e1.grad, c1.grad), (e2.grad, c2.grad)]:
            np.testing.assert_array_equal(_bits(a), _bits(b))
        if e1.grad is not None:
            assert c1.grad._version - e1.grad._version == c2.grad._version - e2.grad._version
    assert compiled.stats["replayed"] >= calls - 4
    return compiled


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_both_leaf_steps_fuse_and_replay_bitwise(dtype):
    program = _program(_lockstep(dtype))
    assert program.fused_leaf_steps == 2
    # w1's gradient xᵀ·g is the last product of the backward pass: its kernel applies the
    # step as it stores (float32 on AVX-512; elsewhere the run computes it apart, same bits).
    assert program.fused_products == 1


@pytest.mark.parametrize("update", ["mul", "div", "rmul"])
def test_a_step_inside_the_weight_gradient_product_keeps_the_eager_bits(update):
    def between(i, w1, w2):
        if i == 6:
            with rustgrad.no_grad():
                w1[0].zero_()  # exact zeros meet the fused product too
                w1[1].mul_(-1.0)

    scaled = {"mul": lambda g: g * LR, "div": lambda g: g / 1000.0, "rmul": lambda g: 7e-4 * g}[update]
    compiled = _lockstep(between=between, calls=12, scaled=scaled)
    assert _program(compiled).fused_products == 1


def test_grad_versions_advance_as_eagerly():
    problem = Problem.make(5, (16, 40, 12, 5))
    x = rustgrad.from_numpy(problem.x)
    eager, (e1, _) = _step(problem)
    step, (c1, _) = _step(problem)
    compiled = rustgrad.compile(step)
    for _ in range(3):
        eager(x), compiled(x)
    before = (e1.grad._version, c1.grad._version, e1._version, c1._version)
    for _ in range(4):
        eager(x), compiled(x)
    after = (e1.grad._version, c1.grad._version, e1._version, c1._version)
    assert after[0] - before[0] == after[1] - before[1] == 8  # accumulate and zero_, each call
    assert after[2] - before[2] == after[3] - before[3] == 4


def test_a_grad_written_in_place_between_calls_is_read():
    def between(i, w1, w2):
        if i in (5, 7) and w1.grad is not None:
            with rustgrad.no_grad():
                w1.grad.add_(0.25)

    _lockstep(between=between)


def test_a_grad_written_through_a_numpy_view_is_read():
    def between(i, w1, w2):
        if i in (5, 7) and w2.grad is not None:
            w2.grad.numpy()[:] = 0.5  # numpy bumps no version: the view marks the storage

    _lockstep(between=between)


def test_a_replaced_grad_is_read():
    def between(i, w1, w2):
        if i in (5, 8) and w1.grad is not None:
            w1.grad = rustgrad.full(tuple(w1.shape), -0.125)

    _lockstep(between=between)


def test_leaves_sharing_memory_run_unfused_with_the_same_bits():
    compiled = _lockstep(shared=True)
    assert _fused(compiled) == 2  # fused in the program, but the run falls back to its instructions


def test_a_grad_read_between_update_and_zero_leaves_the_zeroing_unfused():
    problem = Problem.make(6, (16, 40, 12, 5))
    x = rustgrad.from_numpy(problem.x)

    def make():
        w = rustgrad.tensor(problem.w1, requires_grad=True)

        def step(x):
            x.mm(w).pow(2).sum().backward()
            with rustgrad.no_grad():
                w.sub_(LR * w.grad)
                total = w.grad.sum()  # reads .grad between the update and zero_
                w.grad.zero_()
            return total

        return step, w

    eager, e = make()
    step, c = make()
    compiled = rustgrad.compile(step)
    for _ in range(6):
        assert compiled(x).item() == eager(x).item()
    assert compiled.stats["replayed"] >= 2
    assert _fused(compiled) == 1  # accumulate and update; the zeroing stays after the read
    np.testing.assert_array_equal(_bits(e), _bits(c))
