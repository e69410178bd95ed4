"""Tensor hooks: ``register_hook`` (sees and may replace a gradient during backward) and
``register_post_accumulate_grad_hook`` (runs once a leaf's ``.grad`` is written)."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
from rustgrad import errors


def leaf(values: list[float]) -> rustgrad.Tensor:
    return rustgrad.tensor(values, dtype=rustgrad.float64, requires_grad=True)


def test_a_leaf_hook_sees_the_whole_gradient_once_and_its_result_replaces_it():
    x = leaf([1.0, 2.0, 3.0])
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 10)
    # x is used twice: the hook runs once, on the sum of both paths (2x + 3).
    (x * x + 3 * x).sum().backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], [5.0, 7.0, 9.0])
    np.testing.assert_array_equal(x.grad.numpy(), [50.0, 70.0, 90.0])


def test_a_non_leaf_hook_changes_what_flows_to_the_inputs():
    x = leaf([1.0, -2.0])
    y = x * x  # dy = 1 from the sum; the hook makes it 1 + 1
    y.register_hook(lambda g: g + 1)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * 2 * np.array([1.0, -2.0]))


def test_hooks_run_in_registration_order_each_on_the_previous_result():
    x = leaf([1.0])
    x.register_hook(lambda g: g + 1)
    x.register_hook(lambda g: g * 3)
    (2 * x).sum().backward()
    assert x.grad.item() == (2 + 1) * 3


def test_a_hook_returning_none_keeps_the_gradient_and_may_only_observe():
    x = leaf([4.0])
    calls = []
    x.register_hook(lambda g: calls.append(g.item()))
    (x * 5).sum().backward()
    assert calls == [5.0] and x.grad.item() == 5.0


def test_retain_grad_and_autograd_grad_see_the_hooked_gradient():
    x = leaf([1.0, 2.0])
    y = x * 3
    y.retain_grad()
    y.register_hook(lambda g: g * 2)
    y.sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0])
    z = leaf([1.0])
    z.register_hook(lambda g: -g)
    (grad,) = rustgrad.autograd.grad((z * 7).sum(), z)
    assert grad.item() == -7.0


def test_a_removed_hook_no_longer_runs_and_removing_twice_is_harmless():
    x = leaf([1.0])
    handle = x.register_hook(lambda g: g * 100)
    handle.remove()
    handle.remove()
    (x * 2).sum().backward()
    assert x.grad.item() == 2.0
    y = x * 1
    with y.register_hook(lambda g: g * 100):
        pass
    y.sum().backward()
    assert x.grad.item() == 3.0


def test_a_hook_that_raises_stops_backward_and_changes_no_gradient():
    x, w = leaf([1.0]), leaf([2.0])
    w.grad = rustgrad.tensor([5.0], dtype=rustgrad.float64)

    def boom(g: rustgrad.Tensor) -> None:
        raise ValueError("boom from the hook")

    x.register_hook(boom)
    with pytest.raises(ValueError, match="boom from the hook"):
        (x * w).sum().backward()
    assert x.grad is None and w.grad.item() == 5.0


def test_a_hook_may_not_change_the_gradients_shape_or_dtype():
    x = leaf([1.0, 2.0])
    x.register_hook(lambda g: rustgrad.ones(3, dtype=rustgrad.float64))
    with pytest.raises(errors.GradientError, match=r"changed the size or dtype.*shape \[2\].*shape \[3\]"):
        x.sum().backward()
    y = leaf([1.0])
    y.register_hook(lambda g: "not a tensor")
    with pytest.raises(errors.GradientError, match="returned 'not a tensor'; it must return a Tensor or None"):
        (y * 1).sum().backward()


def test_hooks_are_refused_where_torch_refuses_them():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        rustgrad.ones(2).register_hook(print)
    x = leaf([1.0])
    with pytest.raises(errors.GradientError, match="cannot be registered on non-leaf tensors"):
        (x * 2).register_post_accumulate_grad_hook(print)
    with pytest.raises(TypeError, match="register_hook: the hook must be callable, got 3"):
        x.register_hook(3)


def test_post_accumulate_hooks_run_after_every_grad_is_written():
    a, b = leaf([1.0]), leaf([2.0])
    seen = []
    for t in (a, b):
        t.register_post_accumulate_grad_hook(lambda t: seen.append((a.grad.item(), b.grad.item(), t.grad.item())))
    (a * b).sum().backward()
    assert sorted(seen) == [(2.0, 1.0, 1.0), (2.0, 1.0, 2.0)]
    # On the next backward the hook sees the accumulated .grad, and may update the leaf in place.
    a.register_post_accumulate_grad_hook(lambda t: t.grad.mul_(0.5))
    seen.clear()
    (a * b).sum().backward()
    assert a.grad.item() == (2.0 + 2.0) * 0.5


def test_post_accumulate_hooks_do_not_run_for_autograd_grad():
    x = leaf([1.0])
    calls = []
    x.register_post_accumulate_grad_hook(calls.append)
    rustgrad.autograd.grad((x * 2).sum(), x)
    assert calls == [] and x.grad is None


def test_hooks_on_the_outputs_of_a_multi_output_function_go_to_the_right_output():
    x = leaf([1.0, 2.0, 3.0, 4.0])
    first, second = x.split(2)
    second.register_hook(lambda g: g * 10)
    (first.sum() + second.sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 10.0, 10.0])
