"""``rustgrad.autograd.functional``: values against closed forms and finite differences, torch's
result nesting, and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
from rustgrad.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp
from rustgrad.errors import ArgumentTypeError, GradientError, RustgradError, ShapeError

RNG = np.random.default_rng(7)


def f64(a: np.ndarray) -> rustgrad.Tensor:
    return rustgrad.tensor(np.asarray(a, dtype=np.float64))


def numeric_jacobian(fn, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d fn / d x by central differences, shape fn(x).shape + x.shape."""
    base = np.asarray(fn(x), dtype=np.float64)
    columns = []
    for k in range(x.size):
        step = np.zeros(x.size)
        step[k] = eps
        step = step.reshape(x.shape)
        columns.append((np.asarray(fn(x + step)) - np.asarray(fn(x - step))) / (2 * eps))
    return np.stack(columns, axis=-1).reshape(base.shape + x.shape)


def test_submodule_imports_like_torch():
    import rustgrad.autograd.functional as functional

    assert functional.hessian is hessian
    assert rustgrad.autograd.functional is functional


def test_jacobian_of_exp_reducer_matches_closed_form():
    x = RNG.standard_normal((2, 3))
    got = jacobian(lambda a: a.exp().sum(1), f64(x))
    want = np.zeros((2, 2, 3))
    for i in range(2):
        want[i, i] = np.exp(x[i])
    assert got.shape == (2, 2, 3)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


def test_jacobian_nesting_follows_torch():
    a, b = f64(RNG.standard_normal(2)), f64(RNG.standard_normal(3))
    single_in_tuple_out = jacobian(lambda x: (x * 2, x.sum()), a)
    assert isinstance(single_in_tuple_out, tuple) and len(single_in_tuple_out) == 2
    assert single_in_tuple_out[0].shape == (2, 2) and single_in_tuple_out[1].shape == (2,)
    tuple_in_single_out = jacobian(lambda x, y: x.sum() * y, (a, b))
    assert isinstance(tuple_in_single_out, tuple)
    assert tuple_in_single_out[0].shape == (3, 2) and tuple_in_single_out[1].shape == (3, 3)
    both = jacobian(lambda x, y: (x * 3, y.sum()), (a, b))
    assert isinstance(both[0], tuple) and both[0][0].shape == (2, 2) and both[0][1].shape == (2, 3)
    np.testing.assert_array_equal(np.asarray(both[0][1]), np.zeros((2, 3)))
    np.testing.assert_array_equal(np.asarray(both[1][1]), np.ones(3))


def test_jacobian_forward_mode_strategy_gives_the_reverse_mode_values():
    x = f64(RNG.standard_normal((2, 2)))

    def fn(a):
        return (a.sin() * a).sum(0)

    reverse = np.asarray(jacobian(fn, x))
    forward = np.asarray(jacobian(fn, x, strategy="forward-mode"))
    np.testing.assert_allclose(forward, reverse, rtol=1e-12, atol=1e-15)


def test_vjp_matches_jacobian_transpose_times_v():
    x = RNG.standard_normal((3, 4))
    w = RNG.standard_normal((4, 2))
    v = RNG.standard_normal((3, 2))
    out, product = vjp(lambda a: a.matmul(f64(w)).tanh(), f64(x), f64(v))
    y = np.tanh(x @ w)
    np.testing.assert_allclose(np.asarray(out), y, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(product), (v * (1 - y**2)) @ w.T, rtol=1e-10)
    assert product.grad_fn is None and not product.requires_grad


def test_vjp_without_v_needs_a_single_element_output():
    x = f64(RNG.standard_normal(3))
    _, g = vjp(lambda a: (a**2).sum(), x)
    np.testing.assert_allclose(np.asarray(g), 2 * np.asarray(x), rtol=1e-12)
    with pytest.raises(GradientError, match="The vector v can only be None if the user-provided function returns"):
        vjp(lambda a: a * 2, x)


def test_v_of_the_wrong_size_is_refused():
    x = f64(RNG.standard_normal(3))
    with pytest.raises(ShapeError, match=r"v has invalid size: should be \(3,\) but got \(2,\)"):
        vjp(lambda a: a * 2, x, f64(np.ones(2)))
    with pytest.raises(ShapeError, match="v is a tuple of invalid length: should be 2 but got 1"):
        vjp(lambda a: (a, a), x, (f64(np.ones(3)),))


def test_non_tensor_inputs_are_refused_by_name():
    with pytest.raises(ArgumentTypeError, match="The inputs given to jacobian must be either a Tensor") as info:
        jacobian(lambda a: a, [1.0, 2.0])
    assert isinstance(info.value, TypeError) and isinstance(info.value, RustgradError)
    with pytest.raises(ArgumentTypeError, match="the value at index 1 has type"):
        vjp(lambda a, b: a, (f64(np.ones(1)), 3.0))


def test_unused_inputs_give_zeros_or_strict_errors():
    a, b = f64(RNG.standard_normal(2)), f64(RNG.standard_normal(2))
    _, (ga, gb) = vjp(lambda x, y: (x * 2).sum(), (a, b))
    np.testing.assert_array_equal(np.asarray(gb), np.zeros(2))
    with pytest.raises(GradientError, match="The output of the user-provided function is independent of input 1"):
        vjp(lambda x, y: (x * 2).sum(), (a, b), strict=True)
    with pytest.raises(GradientError, match="Output 0 of the user-provided function does not require gradients"):
        jacobian(lambda x: f64(np.ones(2)), a, strict=True)
    with pytest.raises(GradientError, match="Output 0 of the user-provided function is independent of input 1"):
        jacobian(lambda x, y: x * 2, (a, b), strict=True)


def test_unknown_strategy_is_refused():
    with pytest.raises(ArgumentTypeError, match='expected strategy to be either "forward-mode" or "reverse-mode"'):
        jacobian(lambda a: a, f64(np.ones(2)), strategy="sideways")


def test_hessian_of_a_quadratic_form_is_a_plus_a_transpose():
    a = RNG.standard_normal((4, 4))
    x = f64(RNG.standard_normal(4))
    got = hessian(lambda v: v.dot(f64(a).matmul(v)), x)
    np.testing.assert_allclose(np.asarray(got), a + a.T, rtol=1e-12, atol=1e-14)


def test_hessian_of_cubes_is_diagonal_six_x():
    x = RNG.standard_normal((2, 2))
    got = np.asarray(hessian(lambda v: (v**3).sum(), f64(x)))
    want = np.zeros((2, 2, 2, 2))
    for i in range(2):
        for j in range(2):
            want[i, j, i, j] = 6 * x[i, j]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_hessian_of_log_sum_exp_is_diag_p_minus_p_p_transpose():
    x = RNG.standard_normal(5)
    got = np.asarray(hessian(lambda v: v.exp().sum().log(), f64(x)))
    p = np.exp(x) / np.exp(x).sum()
    np.testing.assert_allclose(got, np.diag(p) - np.outer(p, p), rtol=1e-10, atol=1e-14)


def two_layer_loss(w1, w2, x, y):
    return ((x.matmul(w1).relu().matmul(w2) - y) ** 2).sum() * 0.5


def test_hessian_of_the_two_layer_net_matches_differences_of_its_gradient():
    x, y = RNG.standard_normal((6, 3)), RNG.standard_normal((6, 2))
    w1, w2 = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2))

    def loss(a, b):
        return two_layer_loss(a, b, f64(x), f64(y))

    blocks = hessian(loss, (f64(w1), f64(w2)))

    def grad_w2(b):
        b_t = f64(b).requires_grad_(True)
        (g,) = rustgrad.autograd.grad(loss(f64(w1), b_t), [b_t])
        return np.asarray(g)

    def grad_w1_wrt_w2(b):
        a_t = f64(w1).requires_grad_(True)
        (g,) = rustgrad.autograd.grad(loss(a_t, f64(b)), [a_t])
        return np.asarray(g)

    np.testing.assert_allclose(np.asarray(blocks[1][1]), numeric_jacobian(grad_w2, w2), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(blocks[0][1]), numeric_jacobian(grad_w1_wrt_w2, w2), rtol=1e-6,
                               atol=1e-8)
    assert blocks[0][0].shape == (3, 4, 3, 4) and blocks[1][0].shape == (4, 2, 3, 4)


def test_hessian_needs_a_single_element_output():
    x = f64(np.ones(2))
    with pytest.raises(GradientError, match="should contain a single element"):
        hessian(lambda v: v * 2, x)
    with pytest.raises(GradientError, match="The function given to hessian should return a single Tensor"):
        hessian(lambda v: (v.sum(), v.sum()), x)


def test_jvp_is_the_jacobian_times_v():
    x, v = RNG.standard_normal(3), RNG.standard_normal(3)
    w = RNG.standard_normal((2, 3))
    out, product = jvp(lambda a: f64(w).matmul(a.sin()), f64(x), f64(v))
    np.testing.assert_allclose(np.asarray(out), w @ np.sin(x), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(product), w @ (np.cos(x) * v), rtol=1e-12)


def test_hvp_and_vhp_equal_the_hessian_times_v():
    x, v = RNG.standard_normal(4), RNG.standard_normal(4)

    def fn(a):
        return (a.exp() * a.sin()).sum() + a.dot(a) ** 2

    h = np.asarray(hessian(fn, f64(x)))
    for product in (hvp, vhp):
        value, hv = product(fn, f64(x), f64(v))
        np.testing.assert_allclose(np.asarray(hv), h @ v, rtol=1e-10)
        np.testing.assert_allclose(value.item(), np.asarray(fn(f64(x))).item(), rtol=1e-14)
    with pytest.raises(GradientError, match="The function given to vhp should return a single Tensor"):
        vhp(lambda a: (a.sum(), a.sum()), f64(x), f64(v))


def test_create_graph_results_carry_history_and_differentiate_again():
    x = f64(RNG.standard_normal(3)).requires_grad_(True)
    _, g = vjp(lambda a: (a**3).sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    (third,) = rustgrad.autograd.grad(g.sum(), [x])
    np.testing.assert_allclose(np.asarray(third), 6 * np.asarray(x.detach()), rtol=1e-12)
    h = hessian(lambda a: (a**3).sum(), x, create_graph=True)
    assert h.requires_grad
    h_plain = hessian(lambda a: (a**3).sum(), x)
    assert not h_plain.requires_grad and h_plain.grad_fn is None
