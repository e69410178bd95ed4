"""The neural-network ops beyond what the shared op-table tests check: batch-norm running
statistics, dropout's randomness, embedding's padding row and index errors, layer and group norm
with and without their affine, TF1's bias_add, moments, batch_normalization, fused_batch_norm,
embedding_lookup and dropout, and the errors (type and message)."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
import rustgrad.nn.functional as F
import rustgrad.static as tf
from rustgrad._norm import update_running_stats
from rustgrad.errors import DTypeError, IndexOutOfRangeError, InvalidArgumentError, RustgradError, ShapeError

RNG = np.random.default_rng(7)


def numeric_grad(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """d sum(f(x) * w) / dx by central differences, for the fixed weights ``w`` f applies itself."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        grad[i] = (f(up) - f(down)) / (2 * h)
    return grad


def t(a, requires_grad=False):
    return rustgrad.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


# ---------------------------------------------------------------- batch norm


def bn_numpy(x, mean, var, w, b, eps):
    along = (1, -1) + (1,) * (x.ndim - 2)
    return (x - mean.reshape(along)) / np.sqrt(var.reshape(along) + eps) * w.reshape(along) + b.reshape(along)


def test_batch_norm_in_training_moves_the_running_stats_by_momentum_toward_the_unbiased_variance():
    x = RNG.normal(size=(4, 3, 5))
    rm, rv = t([0.5, -1.0, 2.0]), t([1.0, 2.0, 0.5])
    out = F.batch_norm(t(x), rm, rv, training=True, momentum=0.1, eps=1e-5)
    mean, var = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    np.testing.assert_allclose(out.detach().numpy(), bn_numpy(x, mean, var, np.ones(3), np.zeros(3), 1e-5), rtol=1e-10)
    np.testing.assert_allclose(rm.numpy(), 0.9 * np.array([0.5, -1.0, 2.0]) + 0.1 * mean, rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.9 * np.array([1.0, 2.0, 0.5]) + 0.1 * x.var(axis=(0, 2), ddof=1),
                               rtol=1e-12)
    assert rm.grad_fn is None and rv.grad_fn is None


def test_batch_norm_in_evaluation_normalises_by_the_running_stats_and_leaves_them():
    x = RNG.normal(size=(2, 3, 2, 2))
    rm0, rv0 = np.array([0.1, -0.2, 0.3]), np.array([0.5, 1.5, 2.5])
    w0, b0 = np.array([1.5, -0.5, 2.0]), np.array([0.1, 0.2, -0.3])
    rm, rv = t(rm0), t(rv0)
    xt, w, b = t(x, True), t(w0, True), t(b0, True)
    out = F.batch_norm(xt, rm, rv, w, b, training=False, eps=1e-3)
    np.testing.assert_allclose(out.detach().numpy(), bn_numpy(x, rm0, rv0, w0, b0, 1e-3), rtol=1e-12)
    np.testing.assert_array_equal(rm.numpy(), rm0)
    np.testing.assert_array_equal(rv.numpy(), rv0)
    g = RNG.normal(size=x.shape)
    (out * t(g)).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), g * (w0 / np.sqrt(rv0 + 1e-3)).reshape(1, 3, 1, 1), rtol=1e-12)
    xhat = (x - rm0.reshape(1, 3, 1, 1)) / np.sqrt(rv0 + 1e-3).reshape(1, 3, 1, 1)
    np.testing.assert_allclose(w.grad.numpy(), (g * xhat).sum(axis=(0, 2, 3)), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), g.sum(axis=(0, 2, 3)), rtol=1e-12)


def test_batch_norm_training_gradients_match_finite_differences_with_the_default_eps():
    x = RNG.normal(size=(3, 2, 4))
    w0, b0 = np.array([1.5, -0.5]), np.array([0.1, 0.2])
    g = RNG.normal(size=x.shape)
    xt, w = t(x, True), t(w0, True)
    (F.batch_norm(xt, None, None, w, t(b0), training=True) * t(g)).sum().backward()

    def f(v):
        mean, var = v.mean(axis=(0, 2)), v.var(axis=(0, 2))
        return np.sum(bn_numpy(v, mean, var, w0, b0, 1e-5) * g)

    np.testing.assert_allclose(xt.grad.numpy(), numeric_grad(f, x), rtol=1e-5, atol=1e-7)


def test_the_tf_momentum_convention_weights_the_old_value():
    rm, rv = t([1.0]), t([2.0])
    update_running_stats(rm, rv, t([3.0]), t([4.0]), 0.99, "tf")
    np.testing.assert_allclose(rm.numpy(), [0.99 * 1.0 + 0.01 * 3.0])
    np.testing.assert_allclose(rv.numpy(), [0.99 * 2.0 + 0.01 * 4.0])
    with pytest.raises(ValueError, match="momentum convention must be 'torch' or 'tf'"):
        update_running_stats(rm, rv, t([3.0]), t([4.0]), 0.99, "keras")


def test_batch_norm_training_with_one_value_per_channel_is_refused():
    with pytest.raises(InvalidArgumentError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(t(np.ones((1, 3))), None, None, training=True)


def test_batch_norm_running_stats_of_the_wrong_size_are_refused():
    with pytest.raises(ShapeError, match="running_mean should contain 3 elements"):
        F.batch_norm(t(np.ones((2, 3))), t([0.0, 0.0]), t([1.0, 1.0]))


# ---------------------------------------------------------------- layer and group norm


def test_layer_norm_with_weight_and_bias_matches_numpy_and_finite_differences():
    x = RNG.normal(size=(2, 3, 4))
    w0, b0 = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    xt, w, b = t(x, True), t(w0, True), t(b0, True)
    out = F.layer_norm(xt, (3, 4), w, b)

    def ref(v, w0=w0, b0=b0):
        mean = v.mean(axis=(1, 2), keepdims=True)
        var = v.var(axis=(1, 2), keepdims=True)
        return (v - mean) / np.sqrt(var + 1e-5) * w0 + b0

    np.testing.assert_allclose(out.detach().numpy(), ref(x), rtol=1e-10)
    g = RNG.normal(size=x.shape)
    (out * t(g)).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), numeric_grad(lambda v: np.sum(ref(v) * g), x), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(w.grad.numpy(), numeric_grad(lambda v: np.sum(ref(x, w0=v) * g), w0), rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), g.sum(axis=0), rtol=1e-12)


def test_layer_norm_without_affine_is_the_plain_normalisation_and_takes_an_int_shape():
    x = RNG.normal(size=(3, 5)).astype(np.float32)
    out = F.layer_norm(rustgrad.tensor(x), 5)
    assert out.dtype is rustgrad.float32
    expected = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_layer_norm_with_a_shape_that_is_not_the_trailing_dims_names_both():
    with pytest.raises(ShapeError, match=r"layer_norm: Given normalized_shape=\[4\].*got input of size \[2, 3\]"):
        F.layer_norm(t(np.ones((2, 3))), [4])


def test_group_norm_with_weight_and_bias_matches_numpy_and_finite_differences():
    x = RNG.normal(size=(2, 4, 3))
    w0, b0 = RNG.normal(size=4), RNG.normal(size=4)
    xt, w = t(x, True), t(w0, True)

    def ref(v, w0=w0):
        sets = v.reshape(2, 2, -1)
        normed = ((sets - sets.mean(2, keepdims=True)) / np.sqrt(sets.var(2, keepdims=True) + 1e-5)).reshape(v.shape)
        return normed * w0.reshape(1, 4, 1) + b0.reshape(1, 4, 1)

    out = F.group_norm(xt, 2, w, t(b0))
    np.testing.assert_allclose(out.detach().numpy(), ref(x), rtol=1e-10)
    g = RNG.normal(size=x.shape)
    (out * t(g)).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), numeric_grad(lambda v: np.sum(ref(v) * g), x), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(w.grad.numpy(), numeric_grad(lambda v: np.sum(ref(x, w0=v) * g), w0), rtol=1e-6)


def test_group_norm_with_channels_not_divisible_by_the_groups_is_refused():
    with pytest.raises(ShapeError, match=r"group_norm: .*divisible by num_groups.*\[2, 3, 4\] and num_groups=2"):
        F.group_norm(t(np.ones((2, 3, 4))), 2)


# ---------------------------------------------------------------- dropout


def test_dropout_outside_training_or_with_p_zero_returns_the_input_itself():
    x = t(np.ones(4))
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x


def test_dropout_zeroes_about_p_of_the_elements_and_scales_the_rest():
    rustgrad.manual_seed(0)
    out = F.dropout(t(np.ones(100_000)), p=0.3).numpy()
    kept = out != 0
    assert abs(1 - kept.mean() - 0.3) < 0.01
    np.testing.assert_allclose(out[kept], 1 / 0.7)


def test_dropout_repeats_under_the_same_seed_and_differs_otherwise():
    x = t(np.ones(1000))
    rustgrad.manual_seed(5)
    first = F.dropout(x).numpy()
    second = F.dropout(x).numpy()
    rustgrad.manual_seed(5)
    np.testing.assert_array_equal(F.dropout(x).numpy(), first)
    assert not np.array_equal(first, second)


def test_dropout_gradient_is_the_scaled_mask():
    x = t(RNG.normal(size=500), True)
    out = F.dropout(x, p=0.25)
    out.sum().backward()
    mask = (out.detach().numpy() != 0) / 0.75
    np.testing.assert_allclose(x.grad.numpy(), mask)


def test_dropout_with_p_one_zeroes_everything_and_the_gradient():
    x = t(np.ones(5), True)
    out = F.dropout(x, p=1.0)
    np.testing.assert_array_equal(out.detach().numpy(), np.zeros(5))
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(5))


def test_dropout_with_p_out_of_range_or_an_integer_tensor_is_refused():
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(t(np.ones(3)), p=1.5)
    with pytest.raises(TypeError, match="dropout: expected a float tensor"):
        F.dropout(rustgrad.tensor([1, 2]))


# ---------------------------------------------------------------- embedding and linear


def test_embedding_accumulates_repeated_rows_and_leaves_the_padding_row_without_gradient():
    w0 = RNG.normal(size=(4, 3))
    w = t(w0, True)
    index = rustgrad.tensor([[0, 2, 2], [1, 0, 3]])
    out = F.embedding(index, w, padding_idx=2)
    np.testing.assert_array_equal(out.detach().numpy(), w0[[[0, 2, 2], [1, 0, 3]]])
    g = RNG.normal(size=(2, 3, 3))
    (out * t(g)).sum().backward()
    expected = np.zeros((4, 3))
    for (i, j), row in np.ndenumerate(np.array([[0, 2, 2], [1, 0, 3]])):
        if row != 2:
            expected[row] += g[i, j]
    np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-12)


def test_embedding_with_an_index_out_of_range_names_it():
    w = t(np.ones((3, 2)))
    with pytest.raises(IndexOutOfRangeError, match="embedding: index 3 is out of range for a weight of 3 rows"):
        F.embedding(rustgrad.tensor([0, 3]), w)
    with pytest.raises(IndexOutOfRangeError, match="index -1 is out of range"):
        F.embedding(rustgrad.tensor([-1]), w)
    with pytest.raises(DTypeError, match="'indices' to have one of the following scalar types: int64, int32"):
        F.embedding(t([0.0]), w)
    with pytest.raises(InvalidArgumentError, match="padding_idx 5 must be within num_embeddings"):
        F.embedding(rustgrad.tensor([0]), w, padding_idx=5)


def test_embedding_max_norm_renormalises_the_rows_looked_up_in_place():
    w0 = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    w = t(w0)
    out = F.embedding(rustgrad.tensor([0, 1]), w, max_norm=1.0)
    np.testing.assert_allclose(w.numpy()[0], [0.6, 0.8], rtol=1e-6)
    np.testing.assert_array_equal(w.numpy()[1:], w0[1:])  # row 2 was not looked up
    np.testing.assert_allclose(out.detach().numpy(), [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)


def test_linear_over_batched_inputs_with_and_without_bias():
    x0, w0, b0 = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(5, 4)), RNG.normal(size=5)
    x, w, b = t(x0, True), t(w0, True), t(b0, True)
    out = F.linear(x, w, b)
    np.testing.assert_allclose(out.detach().numpy(), x0 @ w0.T + b0, rtol=1e-12)
    g = RNG.normal(size=(2, 3, 5))
    (out * t(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), g @ w0, rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), np.einsum("abo,abi->oi", g, x0), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), g.sum(axis=(0, 1)), rtol=1e-12)
    np.testing.assert_allclose(F.linear(t(x0), t(w0)).numpy(), x0 @ w0.T, rtol=1e-12)


def test_linear_with_mismatched_features_names_both_shapes():
    with pytest.raises(ShapeError, match=r"linear: .*input of shape \[2, 3\] and weight of shape \[4, 2\]"):
        F.linear(t(np.ones((2, 3))), t(np.ones((4, 2))), t(np.ones(4)))


# ---------------------------------------------------------------- activations


def test_activation_parameters_follow_each_front():
    x = np.array([-2.0, 3.0])
    np.testing.assert_allclose(F.leaky_relu(t(x)).numpy(), [-0.02, 3.0])
    a = tf.constant(x)
    np.testing.assert_allclose(run(tf.nn.leaky_relu(a)), [-0.4, 3.0])
    np.testing.assert_allclose(run(tf.nn.swish(a)), x / (1 + np.exp(-x)))
    np.testing.assert_allclose(run(tf.math.log_sigmoid(a)), -np.logaddexp(0, -x))


def test_gelu_with_an_unknown_approximation_is_refused():
    with pytest.raises(InvalidArgumentError, match="gelu: approximate must be 'none' or 'tanh', got 'fast'"):
        F.gelu(t([1.0]), approximate="fast")


def test_activations_refuse_integer_tensors_naming_the_op():
    with pytest.raises(DTypeError, match="elu: expected a float tensor but got int64"):
        F.elu(rustgrad.tensor([1, 2]))


def test_hardtanh_with_min_above_max_is_refused():
    with pytest.raises(InvalidArgumentError, match=r"hardtanh: min_val \(2\) must not be greater than max_val \(1\)"):
        F.hardtanh(t([1.0]), 2.0, 1.0)


# ---------------------------------------------------------------- TF1


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW", None])
def test_bias_add_adds_along_the_channels_and_sums_the_gradient_over_the_other_dims(data_format):
    x0 = RNG.normal(size=(2, 3, 4, 3))
    b0 = RNG.normal(size=3 if data_format != "NCHW" else 3)
    with tf.Graph().as_default():
        x, b = tf.constant(x0), tf.constant(b0)
        y = tf.nn.bias_add(x, b, data_format=data_format)
        g = RNG.normal(size=x0.shape)
        (grad_b,) = tf.gradients(tf.reduce_sum(y * tf.constant(g)), [b])
        got, got_grad = run([y, grad_b])
    along = (1, 3, 1, 1) if data_format == "NCHW" else (1, 1, 1, 3)
    axes = (0, 2, 3) if data_format == "NCHW" else (0, 1, 2)
    np.testing.assert_allclose(got, x0 + b0.reshape(along))
    np.testing.assert_allclose(got_grad, g.sum(axis=axes))


def test_bias_add_with_a_bias_of_the_wrong_size_is_refused():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Must provide as many biases as the channel dimension"):
            tf.nn.bias_add(tf.constant(np.ones((2, 3))), tf.constant(np.ones(4)))


def test_moments_and_batch_normalization_match_numpy_and_give_gradients_to_all_inputs():
    x0 = RNG.normal(size=(4, 3))
    s0, o0 = np.array([1.5, 0.5, -1.0]), np.array([0.1, 0.0, 0.3])
    with tf.Graph().as_default():
        x = tf.constant(x0)
        mean, var = tf.nn.moments(x, [0])
        scale, offset = tf.constant(s0), tf.constant(o0)
        y = tf.nn.batch_normalization(x, mean, var, offset, scale, 1e-3)
        grads = tf.gradients(tf.reduce_sum(y * y), [x, scale, offset])
        got_mean, got_var, got, gx, gs, go = run([mean, var, y, *grads])
    np.testing.assert_allclose(got_mean, x0.mean(0))
    np.testing.assert_allclose(got_var, x0.var(0))

    def ref(v, s=s0, o=o0):
        return (v - v.mean(0)) / np.sqrt(v.var(0) + 1e-3) * s + o

    np.testing.assert_allclose(got, ref(x0), rtol=1e-12)
    np.testing.assert_allclose(gx, numeric_grad(lambda v: np.sum(ref(v) ** 2), x0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gs, numeric_grad(lambda v: np.sum(ref(x0, s=v) ** 2), s0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(go, numeric_grad(lambda v: np.sum(ref(x0, o=v) ** 2), o0), rtol=1e-6, atol=1e-7)


def test_fused_batch_norm_normalises_nhwc_by_the_batch_and_returns_the_unbiased_variance():
    x0 = RNG.normal(size=(2, 3, 3, 2))
    with tf.Graph().as_default():
        y, mean, var = tf.nn.fused_batch_norm(tf.constant(x0), np.array([1.0, 2.0]), np.array([0.0, 1.0]))
        got, got_mean, got_var = run([y, mean, var])
    m, v = x0.mean(axis=(0, 1, 2)), x0.var(axis=(0, 1, 2))
    np.testing.assert_allclose(got, (x0 - m) / np.sqrt(v + 1e-3) * [1.0, 2.0] + [0.0, 1.0], rtol=1e-10)
    np.testing.assert_allclose(got_mean, m)
    np.testing.assert_allclose(got_var, x0.var(axis=(0, 1, 2), ddof=1))


def test_embedding_lookup_picks_rows_and_sums_their_gradients():
    p0 = RNG.normal(size=(5, 2))
    with tf.Graph().as_default():
        params = tf.constant(p0)
        ids = tf.constant(np.array([[4, 0], [4, 1]], dtype=np.int32))
        rows = tf.nn.embedding_lookup(params, ids)
        (grad,) = tf.gradients(tf.reduce_sum(rows), [params])
        got, got_grad = run([rows, grad])
    np.testing.assert_array_equal(got, p0[[[4, 0], [4, 1]]])
    np.testing.assert_array_equal(got_grad, np.array([[1, 1], [1, 1], [0, 0], [0, 0], [2, 2]]))


def test_embedding_lookup_max_norm_clips_the_rows_looked_up():
    with tf.Graph().as_default():
        rows = tf.nn.embedding_lookup([tf.constant([[3.0, 4.0], [0.3, 0.4]])], tf.constant([0, 1]), max_norm=1.0)
        np.testing.assert_allclose(run(rows), [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)


def test_static_dropout_draws_a_new_mask_each_run_and_scales_by_the_keep_probability():
    with tf.Graph().as_default():
        x = tf.constant(np.ones(2000))
        y = tf.nn.dropout(x, rate=0.25, seed=1)
        with tf.Session() as sess:
            first, second = sess.run(y), sess.run(y)
    assert not np.array_equal(first, second)
    for out in (first, second):
        kept = out != 0
        assert abs(kept.mean() - 0.75) < 0.05
        np.testing.assert_allclose(out[kept], 1 / 0.75)


def test_static_dropout_keep_prob_and_its_errors():
    with tf.Graph().as_default():
        x = tf.constant(np.ones(4))
        assert tf.nn.dropout(x, rate=0.0) is x
        kept = run(tf.nn.dropout(x, keep_prob=1.0 - 1e-12))
        np.testing.assert_allclose(kept, np.ones(4), rtol=1e-9)
        with pytest.raises(ValueError, match=r"rate must be a scalar tensor or a float in the range \[0, 1\), got 1"):
            tf.nn.dropout(x, rate=1.0)
        with pytest.raises(ValueError, match="pass exactly one of keep_prob and rate"):
            tf.nn.dropout(x)


def test_errors_are_rustgrad_errors():
    with pytest.raises(RustgradError):
        F.layer_norm(t(np.ones((2, 3))), [4])
