"""Elementwise ops of several inputs, logical ops, float tests and comparison helpers: the behaviour
the shared op-table tests (tests/test_op_table.py with tests/references_elementwise.py) do not
cover: Python numbers as operands, the scalar fast paths, torch's and TF1's special cases, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import rustgrad
import rustgrad.static as tf
from rustgrad import errors

NAN, INF = float("nan"), float("inf")


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed or {})


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


# ---------------------------------------------------------------- numbers as operands


@pytest.mark.parametrize("dtype", [rustgrad.float32, rustgrad.float64])
def test_a_python_number_operand_takes_the_tensor_dtype(dtype):
    x = rustgrad.tensor([1.0, -2.0], dtype=dtype)
    for out in (rustgrad.atan2(x, 2), rustgrad.remainder(x, 1.5), x.hypot(3.0), rustgrad.lerp(x, 0.0, 0.25)):
        assert out.dtype == dtype
    np.testing.assert_allclose(rustgrad.atan2(x, 2).numpy(), np.arctan2([1.0, -2.0], 2.0), rtol=1e-6)


def test_a_number_beside_a_bool_tensor_is_compared_as_a_number_as_torch():
    b = rustgrad.tensor([True, False])
    assert rustgrad.eq(b, 0.5).tolist() == [False, False]
    assert b.ne(1).tolist() == [False, True]
    assert rustgrad.logical_or(b, 0.0).tolist() == [True, False]
    assert rustgrad.logical_xor(b, True).tolist() == [False, True]
    assert rustgrad.pow(b, 2.0).tolist() == [1.0, 0.0]


def test_a_number_may_be_the_first_operand():
    x = rustgrad.tensor([3.0, -4.0], dtype=rustgrad.float64)
    np.testing.assert_array_equal(rustgrad.remainder(5.0, x).numpy(), [5.0 % 3.0, 5.0 % -4.0])
    np.testing.assert_allclose(rustgrad.pow(2, x).numpy(), [8.0, 2.0 ** -4])


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.int64])
def test_a_number_on_the_left_matches_numpy_for_every_op(np_dtype):
    # Each op with the number first has its own loop (they shared one that matched on the op per
    # element); large enough for the parallel chunks, with an odd tail.
    values = np.random.default_rng(3).uniform(0.5, 9.0, 70_001)
    x_np = values.astype(np_dtype) if np_dtype != np.int64 else np.ceil(values).astype(np_dtype)
    x = rustgrad.from_numpy(x_np)
    for got, want in [(1 - x, 1 - x_np), (7 / x, 7 / x_np), (7 // x, 7 // x_np), (7 % x, 7 % x_np),
                      (2 ** x, 2.0 ** x_np if np_dtype != np.int64 else 2 ** x_np),
                      (rustgrad.maximum(x, rustgrad.tensor(4, dtype=x.dtype)), np.maximum(x_np, 4))]:
        # An integer divided is float32, as in torch.
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-6 if got.dtype == rustgrad.float32 else 1e-12)


def test_binary_ops_read_narrowed_rows_in_place_with_numpy_s_values():
    # Gates of an LSTM: (T, N, 4H) narrowed along the last dim, rows of 128 contiguous elements
    # 512 apart; against a dense operand, another view, a broadcast row, and compared.
    gates_np = np.random.default_rng(4).standard_normal((50, 16, 512)).astype(np.float32)
    dense_np = np.random.default_rng(5).standard_normal((50, 16, 128)).astype(np.float32)
    gates, dense = rustgrad.from_numpy(gates_np), rustgrad.from_numpy(dense_np)
    i, f = gates.narrow(2, 0, 128), gates.narrow(2, 384, 128)
    i_np, f_np = gates_np[:, :, :128], gates_np[:, :, 384:]
    row, row_np = dense[0, 0], dense_np[0, 0]
    np.testing.assert_array_equal((i * f).numpy(), i_np * f_np)
    np.testing.assert_array_equal((i - dense).numpy(), i_np - dense_np)
    np.testing.assert_array_equal((dense / f).numpy(), dense_np / f_np)
    np.testing.assert_array_equal((f + row).numpy(), f_np + row_np)
    np.testing.assert_array_equal((i < f).numpy(), i_np < f_np)
    np.testing.assert_array_equal(rustgrad.maximum(i, dense).numpy(), np.maximum(i_np, dense_np))


def test_an_operand_that_is_neither_a_tensor_nor_a_number_names_the_op_and_the_argument():
    x = rustgrad.ones(2)
    with pytest.raises(errors.ArgumentTypeError,
                       match="atan2: argument 'other' must be a Tensor or a number, got str"):
        rustgrad.atan2(x, "a")
    # As torch: sequences are not converted.
    with pytest.raises(errors.ArgumentTypeError,
                       match="hypot: argument 'other' must be a Tensor or a number, got list"):
        x.hypot([1.0, 2.0])


def test_two_numbers_are_refused_as_torch_does():
    with pytest.raises(errors.ArgumentTypeError, match="atan2: argument 'input' must be a Tensor, got a number"):
        rustgrad.atan2(1.0, 2.0)
    with pytest.raises(TypeError, match="isnan: argument 'input' must be a Tensor, got float"):
        rustgrad.isnan(1.0)


def test_a_number_operand_in_a_graph_takes_the_tensor_dtype():
    x = tf.placeholder(tf.float64, [2])
    y = tf.math.floormod(x, 1.5)
    assert y.dtype == tf.float64
    np.testing.assert_array_equal(run(y, {x: [4.0, -4.0]}), [4.0 % 1.5, -4.0 % 1.5])
    np.testing.assert_allclose(run(x.atan2(2.0), {x: [1.0, -1.0]}), np.arctan2([1.0, -1.0], 2.0))


# ---------------------------------------------------------------- pow


def test_pow_with_a_tensor_exponent_broadcasts_and_differentiates_both_operands():
    a, b = np.array([[0.5], [1.5], [2.0]]), np.array([-1.0, 0.5, 2.0, 3.0])
    for power in (lambda x, y: x ** y, rustgrad.pow, lambda x, y: x.pow(y)):
        x = rustgrad.tensor(a, requires_grad=True)
        y = rustgrad.tensor(b, requires_grad=True)
        out = power(x, y)
        assert out.shape == (3, 4) and out.grad_fn.name() == "PowBackward0"
        np.testing.assert_allclose(out.detach().numpy(), a ** b)
        out.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), (b * a ** (b - 1)).sum(axis=1, keepdims=True))
        np.testing.assert_allclose(y.grad.numpy(), (a ** b * np.log(a)).sum(axis=0))


def test_a_number_raised_to_a_tensor_and_an_array_exponent():
    x = rustgrad.tensor([1.0, 2.0], dtype=rustgrad.float64, requires_grad=True)
    assert (2 ** x).grad_fn.name() == "RpowBackward0"  # the scalar path
    np.testing.assert_allclose((x ** np.array([2.0, 3.0])).detach().numpy(), [1.0, 8.0])
    np.testing.assert_allclose((np.array([3.0, 3.0]) ** x.detach()), [3.0, 9.0])


def test_pow_gradients_at_a_zero_base_follow_torch():
    """d/dx is 0 where the exponent is 0; d/dy is 0 where the base is 0 and the exponent is >= 0."""
    x = rustgrad.tensor([0.0, 0.0, 0.0], dtype=rustgrad.float64, requires_grad=True)
    y = rustgrad.tensor([0.0, 2.0, 1.0], dtype=rustgrad.float64, requires_grad=True)
    (x ** y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 0.0, 0.0])


def test_tf_pow_with_a_number_is_one_scalar_node_and_with_a_tensor_a_pow_node_of_both():
    x = tf.placeholder(tf.float32, [3])
    y = tf.placeholder(tf.float32, [3])
    squared = tf.pow(x, 2.0)
    assert len(squared.op.inputs) == 1
    for power in (tf.pow(x, y), tf.math.pow(x, y), x ** y, x.pow(y)):
        assert [t.name for t in power.op.inputs] == [x.name, y.name]
    gx, gy = tf.gradients(tf.reduce_sum(tf.pow(x, y)), [x, y])
    a, b = np.array([0.5, 1.0, 2.0], np.float32), np.array([2.0, -1.0, 0.5], np.float32)
    got = run([squared, gx, gy], {x: a, y: b})
    np.testing.assert_allclose(got[0], a ** 2)
    np.testing.assert_allclose(got[1], b * a ** (b - 1), rtol=1e-6)
    np.testing.assert_allclose(got[2], a ** b * np.log(a), rtol=1e-6)


def test_pow_differentiates_twice_in_a_graph():
    x = tf.placeholder(tf.float64, [2])
    y = tf.constant(np.array([3.0, 2.5]))
    (first,) = tf.gradients(tf.pow(x, y), [x])
    (second,) = tf.gradients(first, [x])
    a = np.array([1.5, 2.0])
    np.testing.assert_allclose(run(second, {x: a}), [3.0 * 2.0 * 1.5, 2.5 * 1.5 * 2.0 ** 0.5])


# ---------------------------------------------------------------- remainders


def test_remainder_has_the_sign_of_the_divisor_as_python():
    pairs = [(5.0, 3.0), (-5.0, 3.0), (5.0, -3.0), (-5.0, -3.0), (-4.0, 2.0), (4.0, -2.0), (0.5, INF), (-0.5, INF)]
    a, b = (np.array(v) for v in zip(*pairs))
    got = rustgrad.remainder(rustgrad.tensor(a, dtype=rustgrad.float64), rustgrad.tensor(b, dtype=rustgrad.float64))
    expected = [np.remainder(p, q) for p, q in pairs]
    np.testing.assert_array_equal(got.numpy(), expected)
    np.testing.assert_array_equal(np.signbit(got.numpy()), np.signbit(expected))  # -4 % 2 is +0.0, 4 % -2 is -0.0
    assert (-5.0) % 3.0 == got.numpy()[1]


def test_fmod_has_the_sign_of_the_dividend():
    a, b = np.array([5.0, -5.0, 5.0, -5.0]), np.array([3.0, 3.0, -3.0, -3.0])
    got = rustgrad.fmod(rustgrad.tensor(a, dtype=rustgrad.float64), rustgrad.tensor(b, dtype=rustgrad.float64))
    np.testing.assert_array_equal(got.numpy(), [math.fmod(p, q) for p, q in zip(a, b)])
    x = tf.placeholder(tf.float64, [4])
    np.testing.assert_array_equal(run(tf.truncatemod(x, b), {x: a}), got.numpy())


def test_a_remainder_by_zero_is_nan():
    x = rustgrad.tensor([1.0, -1.0])
    assert np.isnan(rustgrad.remainder(x, 0.0).numpy()).all()
    assert np.isnan(rustgrad.fmod(x, 0.0).numpy()).all()


# ---------------------------------------------------------------- clamp with tensor bounds


def test_clamp_with_tensor_bounds_matches_numpy_with_the_max_winning_where_min_exceeds_it():
    a = np.array([-3.0, -1.0, 0.5, 2.0, 5.0])
    lo, hi = np.array([-2.0, 0.0, 0.0, 3.0, 1.0]), np.array([2.0, 2.0, 1.0, 1.0, 4.0])
    expected = np.minimum(np.maximum(a, lo), hi)
    x = rustgrad.tensor(a)
    for clamped in (x.clamp(min=rustgrad.tensor(lo), max=rustgrad.tensor(hi)),
                    rustgrad.clamp(x, rustgrad.tensor(lo), rustgrad.tensor(hi)),
                    x.clip(rustgrad.tensor(lo), rustgrad.tensor(hi)),
                    rustgrad.clip(x, min=rustgrad.tensor(lo), max=rustgrad.tensor(hi))):
        np.testing.assert_array_equal(clamped.numpy(), expected.astype(np.float32))
    np.testing.assert_array_equal(x.clamp(min=0.0, max=rustgrad.tensor(hi)).numpy(), np.minimum(np.maximum(a, 0), hi))
    np.testing.assert_array_equal(x.clamp(min=rustgrad.tensor(lo), max=1.0).numpy(), np.minimum(np.maximum(a, lo), 1))


def test_clamp_with_tensor_bounds_sends_each_gradient_to_what_was_selected():
    x = rustgrad.tensor([-3.0, 0.5, 5.0], requires_grad=True)
    lo = rustgrad.tensor([-2.0, -2.0, -2.0], requires_grad=True)
    hi = rustgrad.tensor([2.0, 2.0, 2.0], requires_grad=True)
    x.clamp(lo, hi).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]
    assert lo.grad.tolist() == [1.0, 0.0, 0.0]
    assert hi.grad.tolist() == [0.0, 0.0, 1.0]


def test_clamp_with_a_broadcast_tensor_bound_sums_its_gradient_back():
    x = rustgrad.tensor([[-1.0, 3.0], [0.5, -4.0]], requires_grad=True)
    lo = rustgrad.tensor([0.0], requires_grad=True)
    x.clamp(min=lo).sum().backward()
    assert lo.grad.shape == (1,) and lo.grad.tolist() == [2.0]


def test_clamp_with_number_bounds_stays_the_fused_op():
    x = rustgrad.tensor([1.0], requires_grad=True)
    assert x.clamp(0.0, 2.0).grad_fn.name() == "ClampBackward0"
    assert rustgrad.clamp_min(x, 0.0).grad_fn.name() == "ClampBackward0"
    assert rustgrad.clamp_min(x, rustgrad.zeros(1)).grad_fn.name() == "ClampMinBackward0"


def test_a_nan_tensor_bound_gives_nan_as_torch():
    x = rustgrad.tensor([1.0, NAN])
    assert np.isnan(x.clamp(min=rustgrad.tensor([NAN, 0.0])).numpy()).all()
    assert np.isnan(rustgrad.clamp_max(x, NAN).numpy()).all()


def test_tf_clip_by_value_with_tensor_bounds_applies_the_max_first_as_tf():
    x = tf.placeholder(tf.float32, [3])
    lo = tf.constant([2.0, 0.0, 0.0])
    clipped = tf.clip_by_value(x, lo, 1.0)
    np.testing.assert_array_equal(run(clipped, {x: [5.0, -1.0, 0.5]}), [2.0, 0.0, 0.5])
    (g,) = tf.gradients(tf.reduce_sum(tf.clip_by_value(x, -1.0, tf.constant([0.0, 0.0, 1.0]))), [x])
    np.testing.assert_array_equal(run(g, {x: [0.5, -0.5, 0.5]}), [0.0, 1.0, 1.0])


def test_graph_tensor_clamp_takes_tensor_bounds_as_torch():
    x = tf.placeholder(tf.float32, [3])
    hi = tf.constant([0.0, 0.0, 0.0])
    np.testing.assert_array_equal(run(x.clamp(min=1.0, max=hi), {x: [5.0, -1.0, 0.5]}), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(run(x.clip(max=hi), {x: [5.0, -1.0, 0.5]}), [0.0, -1.0, 0.0])


# ---------------------------------------------------------------- lerp


def test_lerp_takes_a_number_or_a_tensor_weight_and_differentiates_a_tensor_one():
    x = rustgrad.tensor([0.0, 1.0], dtype=rustgrad.float64, requires_grad=True)
    end = rustgrad.tensor([10.0, 3.0], dtype=rustgrad.float64, requires_grad=True)
    w = rustgrad.tensor([0.25, 0.75], dtype=rustgrad.float64, requires_grad=True)
    np.testing.assert_allclose(rustgrad.lerp(x, end, 0.5).detach().numpy(), [5.0, 2.0])
    out = x.lerp(end, w)
    np.testing.assert_allclose(out.detach().numpy(), [2.5, 2.5])
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.75, 0.25])
    np.testing.assert_allclose(end.grad.numpy(), [0.25, 0.75])
    np.testing.assert_allclose(w.grad.numpy(), [10.0, 2.0])


def test_lerp_is_exact_at_both_ends():
    x, end = rustgrad.tensor([0.1, -7.3]), rustgrad.tensor([0.7, 1e30])
    assert rustgrad.lerp(x, end, 0.0).tolist() == x.tolist()
    assert rustgrad.lerp(x, end, 1.0).tolist() == end.tolist()


# ---------------------------------------------------------------- fmax, fmin, logaddexp


def test_fmax_and_fmin_ignore_a_nan_and_send_the_gradient_to_the_number():
    x = rustgrad.tensor([NAN, 1.0, NAN], requires_grad=True)
    y = rustgrad.tensor([2.0, NAN, NAN], requires_grad=True)
    out = rustgrad.fmax(x, y)
    np.testing.assert_array_equal(out.detach().numpy(), [2.0, 1.0, NAN])
    out.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0] and y.grad.tolist() == [1.0, 0.0, 0.0]
    np.testing.assert_array_equal(x.detach().fmin(y.detach()).numpy(), [2.0, 1.0, NAN])
    assert np.isnan(rustgrad.maximum(x, y).detach().numpy()).all()


def test_logaddexp_does_not_overflow_and_keeps_infinities():
    x = rustgrad.tensor([1000.0, -INF, INF, 0.0], dtype=rustgrad.float64)
    y = rustgrad.tensor([1000.0, -INF, 5.0, -INF], dtype=rustgrad.float64)
    np.testing.assert_array_equal(rustgrad.logaddexp(x, y).numpy(), np.logaddexp(x.numpy(), y.numpy()))


# ---------------------------------------------------------------- logical ops and tests


def test_eager_logical_ops_take_nonzero_floats_as_true():
    a = rustgrad.tensor([0.0, 2.0, NAN, -0.0])
    b = rustgrad.tensor([1.0, 0.0, 0.5, 0.0])
    assert rustgrad.logical_and(a, b).tolist() == [False, False, True, False]
    assert a.logical_or(b).tolist() == [True, True, True, False]
    assert rustgrad.logical_xor(a, rustgrad.tensor([True, True, False, False])).tolist() == [True, False, True, False]
    assert a.logical_not().tolist() == [True, False, False, True]
    assert rustgrad.logical_and(a, 1).dtype == rustgrad.bool


def test_static_logical_ops_take_bool_tensors_only_as_tf():
    x = tf.placeholder(tf.float32, [2])
    with pytest.raises(errors.DTypeError,
                       match="logical_and: Input 'x' has type float32 that does not match expected type of bool"):
        tf.logical_and(x, x > 0)
    with pytest.raises(TypeError, match="logical_not: Input 'x' has type float32"):
        tf.logical_not(x)
    both = tf.math.logical_xor(x > 0, x < 1)
    assert run(both, {x: [0.5, 2.0]}).tolist() == [False, True]


def test_float_tests_of_a_bool_tensor_find_nothing_as_torch():
    b = rustgrad.tensor([True, False])
    assert rustgrad.isnan(b).tolist() == [False, False]
    assert b.isinf().tolist() == [False, False]
    assert rustgrad.isfinite(b).tolist() == [True, True]


def test_static_float_tests_take_float_tensors_only_as_tf():
    b = tf.placeholder(tf.bool, [2])
    with pytest.raises(errors.DTypeError, match="has DataType bool not in list of allowed values: float32, float64"):
        tf.is_nan(b)
    x = tf.placeholder(tf.float64, [4])
    got = run([tf.math.is_nan(x), tf.is_inf(x), tf.math.is_finite(x), x.isposinf(), tf.isneginf(x)],
              {x: [NAN, INF, -INF, 1.0]})
    assert [g.tolist() for g in got] == [[True, False, False, False], [False, True, True, False],
                                         [False, False, False, True], [False, True, False, False],
                                         [False, False, True, False]]


def test_tests_and_logical_ops_have_no_gradient():
    x = rustgrad.tensor([1.0, NAN], requires_grad=True)
    for out in (x.isnan(), rustgrad.logical_not(x), x.eq(1.0), rustgrad.isclose(x, x)):
        assert out.dtype == rustgrad.bool and not out.requires_grad and out.grad_fn is None


@pytest.mark.parametrize(("dtype", "np_dtype"), [(rustgrad.float32, np.float32), (rustgrad.float64, np.float64)])
def test_nan_to_num_replaces_infinities_by_the_dtype_extremes_by_default(dtype, np_dtype):
    x = rustgrad.tensor([NAN, INF, -INF, 1.5], dtype=dtype)
    np.testing.assert_array_equal(x.nan_to_num().numpy(), np.nan_to_num(np.array([NAN, INF, -INF, 1.5], np_dtype)))
    assert rustgrad.nan_to_num(x, nan=7.0, posinf=8.0).tolist() == [7.0, 8.0, np.finfo(np_dtype).min, 1.5]


def test_nan_to_num_passes_the_gradient_where_the_input_is_finite():
    x = rustgrad.tensor([NAN, INF, 2.0], requires_grad=True)
    rustgrad.nan_to_num(x, 0.0, 1.0, -1.0).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0]
    p = tf.placeholder(tf.float32, [3])
    (g,) = tf.gradients(tf.reduce_sum(tf.nan_to_num(p, posinf=1.0)), [p])
    assert run(g, {p: [NAN, -INF, 2.0]}).tolist() == [0.0, 0.0, 1.0]


# ---------------------------------------------------------------- comparisons


def test_comparisons_are_functions_and_methods_on_both_fronts():
    x = rustgrad.tensor([1.0, 2.0, 3.0])
    assert rustgrad.eq(x, 2.0).tolist() == [False, True, False]
    assert x.ne(2).tolist() == [True, False, True]
    assert x.lt(rustgrad.tensor([2.0])).tolist() == [True, False, False]
    assert rustgrad.less_equal(x, 2.0).tolist() == [True, True, False]
    assert x.greater(2.0).tolist() == [False, False, True]
    assert rustgrad.ge(x, 2.0).tolist() == x.greater_equal(2.0).tolist() == [False, True, True]
    p = tf.placeholder(tf.float32, [3])
    outs = [tf.math.equal(p, 2.0), tf.math.not_equal(p, 2.0), tf.math.less(p, 2.0), tf.less_equal(p, 2.0),
            p.gt(2.0), tf.math.greater_equal(p, 2.0), tf.equal(p, p)]
    got = run(outs, {p: [1.0, 2.0, 3.0]})
    assert [g.tolist() for g in got] == [[False, True, False], [True, False, True], [True, False, False],
                                         [True, True, False], [False, False, True], [False, True, True],
                                         [True, True, True]]


def test_a_graph_comparison_of_two_dtypes_raises_as_tf():
    a, b = tf.placeholder(tf.float32, [2]), tf.placeholder(tf.float64, [2])
    with pytest.raises(errors.DTypeError, match="Input 'y' has type float64 that does not match type float32"):
        tf.equal(a, b)


def test_isclose_follows_torch():
    a = rustgrad.tensor([1.0, INF, -INF, NAN, 1.0, 0.0], dtype=rustgrad.float64)
    b = rustgrad.tensor([1.0 + 1e-6, INF, INF, NAN, 1.1, 1e-9], dtype=rustgrad.float64)
    assert rustgrad.isclose(a, b).tolist() == [True, True, False, False, False, True]
    assert a.isclose(b, equal_nan=True).tolist()[3] is True
    assert rustgrad.isclose(a, b, rtol=0.2).tolist()[4] is True
    assert rustgrad.isclose(a, b, rtol=0.0, atol=0.0).tolist() == [False, True, False, False, False, False]


def test_isclose_refuses_a_negative_tolerance():
    x = rustgrad.ones(2)
    with pytest.raises(errors.InvalidArgumentError, match="isclose: rtol must be greater than or equal to zero"):
        rustgrad.isclose(x, x, rtol=-1.0)
    with pytest.raises(errors.InvalidArgumentError, match="isclose: atol must be greater than or equal to zero"):
        tf.isclose(tf.constant([1.0]), 1.0, atol=NAN)


def test_allclose_and_equal_return_python_bools():
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    assert rustgrad.allclose(x, x + 1e-7) is True
    assert x.allclose(x + 1e-3) is False
    assert rustgrad.allclose(x, rustgrad.tensor([[1.0, 2.0]]))  # broadcasts, as torch
    assert rustgrad.equal(x, x.detach().clone()) is True
    assert x.equal(rustgrad.tensor([[1.0, 2.0]])) is False  # another shape
    assert rustgrad.equal(rustgrad.tensor([NAN]), rustgrad.tensor([NAN])) is False
    assert rustgrad.equal(x, x.double())  # values compare as numbers across float dtypes


def test_allclose_and_equal_refuse_non_tensors():
    with pytest.raises(errors.ArgumentTypeError, match="equal: argument 'other' must be a Tensor, got list"):
        rustgrad.equal(rustgrad.ones(1), [1.0])
    with pytest.raises(errors.ArgumentTypeError, match="allclose: argument 'input' must be a Tensor, got float"):
        rustgrad.allclose(1.0, rustgrad.ones(1))


def test_allclose_in_a_graph_is_a_bool_tensor():
    x = tf.placeholder(tf.float32, [None])
    close = tf.allclose(x, tf.constant([1.0, 2.0]))
    assert close.dtype == tf.bool and close.shape.as_list() == []
    assert run(close, {x: [1.0, 2.0]}) and not run(close, {x: [1.0, 2.5]})


# ---------------------------------------------------------------- dtypes and shapes


def test_eager_binary_ops_promote_float32_with_float64_as_torch():
    a = rustgrad.tensor([1.0], dtype=rustgrad.float32)
    b = rustgrad.tensor([2.0], dtype=rustgrad.float64)
    assert rustgrad.atan2(a, b).dtype == rustgrad.float64
    assert rustgrad.lerp(a, a, b).dtype == rustgrad.float64


def test_float_binary_ops_refuse_bool_tensors():
    b = rustgrad.tensor([True])
    with pytest.raises(errors.DTypeError, match="hypot: expected a float tensor but got bool"):
        rustgrad.hypot(b, b)
    with pytest.raises(errors.DTypeError, match="hypot: Value passed to parameter 'x' has DataType bool"):
        tf.hypot(tf.constant([True]), tf.constant([False]))


def test_graph_binary_ops_of_two_float_dtypes_raise_as_tf():
    a, b = tf.placeholder(tf.float32, [2]), tf.placeholder(tf.float64, [2])
    with pytest.raises(errors.DTypeError, match="atan2: Input 'x' has type float64 that does not match type float32 "
                                                "of argument 'y'"):
        tf.atan2(a, b)


def test_shapes_that_do_not_broadcast_raise_in_both_modes():
    with pytest.raises(errors.ShapeError, match=r"\[3\].*\[4\]"):
        rustgrad.hypot(rustgrad.ones(3), rustgrad.ones(4))
    with pytest.raises(errors.ShapeError, match="Dimensions must be equal, but are 3 and 4"):
        tf.math.floormod(tf.placeholder(tf.float32, [3]), tf.placeholder(tf.float32, [4]))
    with pytest.raises(errors.ShapeError, match="Dimensions must be equal, but are 2 and 5"):
        tf.lerp(tf.placeholder(tf.float32, [2]), 0.0, tf.placeholder(tf.float32, [5]))


def test_unknown_dims_are_checked_when_the_graph_runs():
    x, y = tf.placeholder(tf.float32, [None]), tf.placeholder(tf.float32, [None])
    out = tf.atan2(x, y)
    assert out.shape.as_list() == [None]
    with pytest.raises(errors.ShapeError):
        run(out, {x: [1.0, 2.0], y: [1.0, 2.0, 3.0]})
