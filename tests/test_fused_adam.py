"""Adam's fused step (rust/kernels/optim.rs) against the same step composed of tensor ops.

The fused kernel rounds exactly where the composed ops do, so the two agree bitwise in
float32; the float64 formulas are checked in test_optim.py."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
from rustgrad import optim
from rustgrad.errors import ShapeError


def _composed_adam_step(p, grad, state, lr, betas, eps, weight_decay, decoupled, amsgrad, maximize):
    """The update written with ordinary in-place tensor ops, one pass per op."""
    beta1, beta2 = betas
    if maximize:
        grad = -grad
    state["step"] += 1
    step = state["step"]
    if weight_decay != 0:
        if decoupled:
            p.mul_(1 - lr * weight_decay)
        else:
            grad = grad + p * weight_decay
    state["exp_avg"].mul_(beta1).add_(grad, alpha=1 - beta1)
    state["exp_avg_sq"].mul_(beta2).add_(grad * grad, alpha=1 - beta2)
    second = state["exp_avg_sq"]
    if amsgrad:
        state["max"].copy_(state["max"].maximum(second))
        second = state["max"]
    denom = second.sqrt().div_((1 - beta2 ** step) ** 0.5).add_(eps)
    p.add_(state["exp_avg"] / denom, alpha=-lr / (1 - beta1 ** step))


@pytest.mark.parametrize("cls", [optim.Adam, optim.AdamW])
@pytest.mark.parametrize("amsgrad,maximize", [(False, False), (True, True)])
@pytest.mark.parametrize("size", [7, 300_001])  # the large one runs in parallel chunks
def test_the_fused_step_equals_the_composed_ops_bitwise(cls, amsgrad, maximize, size):
    rng = np.random.default_rng(size)
    start = rng.standard_normal(size).astype(np.float32)
    fused = rustgrad.tensor(start, requires_grad=True)
    composed = rustgrad.tensor(start)
    opt = cls([fused], lr=0.01, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1, amsgrad=amsgrad, maximize=maximize)
    zeros = lambda: rustgrad.zeros(size)  # noqa: E731
    state = {"step": 0, "exp_avg": zeros(), "exp_avg_sq": zeros(), "max": zeros()}
    for _ in range(3):
        grad = rng.standard_normal(size).astype(np.float32)
        fused.grad = rustgrad.tensor(grad)
        opt.step()
        _composed_adam_step(composed, rustgrad.tensor(grad), state, 0.01, (0.8, 0.95), 1e-6, 0.1,
                            cls is optim.AdamW, amsgrad, maximize)
        np.testing.assert_array_equal(fused.detach().numpy(), composed.numpy())
    assert opt.state[fused]["step"] == 3
    np.testing.assert_array_equal(opt.state[fused]["exp_avg_sq"].numpy(), state["exp_avg_sq"].numpy())


def test_a_strided_parameter_is_updated_in_place_like_a_contiguous_one():
    rng = np.random.default_rng(1)
    values = rng.standard_normal((4, 6))
    strided = rustgrad.tensor(values).t().requires_grad_()
    assert not strided.is_contiguous()
    dense = rustgrad.tensor(values.T.copy(), requires_grad=True)
    grad = rng.standard_normal((6, 4))
    opts = [optim.AdamW([p], lr=0.1) for p in (strided, dense)]
    for p, opt in zip((strided, dense), opts):
        for _ in range(2):
            p.grad = rustgrad.tensor(grad)
            opt.step()
    np.testing.assert_array_equal(strided.detach().numpy(), dense.detach().numpy())
    assert not np.array_equal(strided.detach().numpy(), values.T)


def test_a_mismatched_state_raises_and_changes_nothing():
    a = rustgrad.ones(3, requires_grad=True)
    b = rustgrad.ones(2, requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad, b.grad = rustgrad.ones(3), rustgrad.ones(2)
    opt.step()
    opt.state[b]["exp_avg"] = rustgrad.zeros(5)  # load_state_dict refuses this; a direct write does not
    before = [t.detach().numpy().copy() for t in (a, b, opt.state[a]["exp_avg"])]
    with pytest.raises(ShapeError, match=r"Adam: parameter 1 is float32 \[2\] but its exp_avg is float32 \[5\]"):
        opt.step()
    for t, old in zip((a, b, opt.state[a]["exp_avg"]), before):
        np.testing.assert_array_equal(t.detach().numpy(), old)
    assert opt.state[a]["step"] == 1


def test_a_state_sharing_memory_with_its_parameter_is_refused():
    p = rustgrad.ones(3, requires_grad=True)
    opt = optim.Adam([p])
    p.grad = rustgrad.ones(3)
    opt.step()
    opt.state[p]["exp_avg_sq"] = opt.state[p]["exp_avg"]
    with pytest.raises(rustgrad.errors.InvalidArgumentError, match="exp_avg and exp_avg_sq share memory"):
        opt.step()
