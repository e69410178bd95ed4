"""tf.layers: values and gradients against TF1's (tests/fixtures/tf1/layer_values.json, written by
tools/tf_reference/make_tf1_fixtures.py) and float64 finite differences; variable sharing, the
UPDATE_OPS and REGULARIZATION_LOSSES collections, tf.losses' totals, and the errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
from rustgrad.errors import RustgradError

VALUES = json.loads((Path(__file__).parent / "fixtures" / "tf1" / "layer_values.json").read_text())


def arr(value, dtype=np.float32):
    return np.asarray(value, dtype=dtype)


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def run_with_weights(output, weights, feeds, extra=()):
    """Runs ``output`` (and ``extra``) after loading the fixture's weights by variable name."""
    by_name = {v.name: v for v in tf.global_variables()}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for name, value in weights.items():
            by_name[name].load(arr(value), sess)
        return sess.run([output, *extra], feeds)


# ----- values against TF1 -----

def test_dense_with_relu_matches_tf1(graph):
    case = VALUES["dense_relu"]
    x = tf.placeholder(tf.float32, [2, 3])
    y = tf.layers.dense(x, case["units"], activation=tf.nn.relu)
    (out,) = run_with_weights(y, case["weights"], {x: arr(case["input"])})
    np.testing.assert_allclose(out, arr(case["output"]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("key", ["conv2d_same", "conv2d_valid_stride2", "conv2d_same_stride2"])
def test_conv2d_matches_tf1(graph, key):
    case = VALUES[key]
    x = tf.placeholder(tf.float32, [1, 6, 6, 2])
    y = tf.layers.conv2d(x, case["filters"], case["kernel_size"], **case["kwargs"])
    (out,) = run_with_weights(y, case["weights"], {x: arr(case["input"])})
    assert out.shape == arr(case["output"]).shape
    np.testing.assert_allclose(out, arr(case["output"]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("key", ["max_pooling2d_valid", "max_pooling2d_same", "average_pooling2d_valid",
                                 "average_pooling2d_same"])
def test_pooling_matches_tf1(graph, key):
    case = VALUES[key]
    layer = tf.layers.max_pooling2d if key.startswith("max") else tf.layers.average_pooling2d
    x = tf.placeholder(tf.float32, [1, 5, 5, 1])
    y = layer(x, case["pool_size"], case["strides"], **case["kwargs"])
    (out,) = run_with_weights(y, {}, {x: arr(case["input"])})
    assert out.shape == arr(case["output"]).shape
    np.testing.assert_allclose(out, arr(case["output"]), rtol=1e-5, atol=1e-6)


def test_flatten_matches_tf1(graph):
    case = VALUES["flatten"]
    x = tf.placeholder(tf.float32, [None, 2, 3, 2])
    y = tf.layers.flatten(x)
    assert y.shape.as_list() == [None, 12]
    (out,) = run_with_weights(y, {}, {x: arr(case["input"])})
    np.testing.assert_array_equal(out, arr(case["output"]))


@pytest.mark.parametrize("key, rate, training", [("dropout_rate0_training", 0.0, True),
                                                 ("dropout_inference", 0.5, False)])
def test_dropout_that_drops_nothing_matches_tf1(graph, key, rate, training):
    case = VALUES[key]
    x = tf.placeholder(tf.float32, [2, 2, 3, 2])
    y = tf.layers.dropout(x, rate=rate, training=training)
    (out,) = run_with_weights(y, {}, {x: arr(case["input"])})
    np.testing.assert_array_equal(out, arr(case["output"]))


@pytest.mark.parametrize("key", ["batch_normalization_4d", "batch_normalization_2d_momentum"])
def test_batch_normalization_matches_tf1_in_training_inference_and_the_moving_averages(graph, key):
    case = VALUES[key]
    x_value = arr(case["input"])
    x = tf.placeholder(tf.float32, x_value.shape)
    train_out = tf.layers.batch_normalization(x, training=True, **case["kwargs"])
    infer_out = tf.layers.batch_normalization(x, training=False, reuse=True, name="batch_normalization",
                                              **case["kwargs"])
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(update_ops) == 2
    by_name = {v.name: v for v in tf.global_variables()}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for name, value in case["weights"].items():
            by_name[name].load(arr(value), sess)
        infer = sess.run(infer_out, {x: x_value})
        train, _ = sess.run([train_out, update_ops], {x: x_value})
        mean, var = sess.run([by_name["batch_normalization/moving_mean:0"],
                              by_name["batch_normalization/moving_variance:0"]])
    np.testing.assert_allclose(train, arr(case["training_output"]), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(infer, arr(case["inference_output"]), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mean, arr(case["moving_mean_after_update"]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, arr(case["moving_variance_after_update"]), rtol=1e-5, atol=1e-6)


def gradient_network(x, dtype=tf.float32):
    h = tf.layers.conv2d(x, 3, 3, padding="same", activation=tf.nn.relu,
                         kernel_regularizer=lambda w: 0.01 * tf.nn.l2_loss(w))
    h = tf.layers.batch_normalization(h, training=True)
    h = tf.layers.max_pooling2d(h, 2, 2)
    return tf.layers.dense(tf.layers.flatten(h), 3)


def test_gradients_through_conv_batch_norm_pool_and_dense_match_tf1(graph):
    case = VALUES["gradients"]
    x = tf.placeholder(tf.float32, [2, 4, 4, 2])
    logits = gradient_network(x)
    loss = tf.reduce_sum(logits * arr(case["target"])) + tf.losses.get_regularization_loss()
    variables = tf.trainable_variables()
    assert [v.name for v in variables] == list(case["gradients"])
    loss_value, *grads = run_with_weights(loss, case["weights"], {x: arr(case["input"])},
                                          tf.gradients(loss, variables))
    np.testing.assert_allclose(loss_value, case["loss"], rtol=1e-5)
    for v, g in zip(variables, grads):
        np.testing.assert_allclose(g, arr(case["gradients"][v.name]), rtol=1e-4, atol=1e-5, err_msg=v.name)


# ----- float64 finite differences -----

def test_layer_gradients_match_float64_finite_differences(graph):
    rng = np.random.RandomState(0)
    x_value = rng.uniform(-1, 1, (3, 4, 4, 2))
    target = rng.uniform(-1, 1, (3, 2))
    x = tf.placeholder(tf.float64, x_value.shape)
    h = tf.layers.conv2d(x, 2, 3, strides=2, padding="same", activation=tf.nn.tanh)
    h = tf.layers.batch_normalization(h, training=True, axis=-1)
    h = tf.layers.average_pooling2d(h, 2, 1, padding="same")
    out = tf.layers.dense(tf.layers.flatten(h), 2, activation=tf.nn.sigmoid)
    loss = tf.reduce_sum(out * target)
    variables = tf.trainable_variables()
    assert all(v.dtype == tf.float64 for v in variables)
    grads = tf.gradients(loss, variables)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = sess.run(variables)
        for v, value in zip(variables, values):  # gamma away from 1, beta away from 0
            v.load(value + rng.uniform(-0.3, 0.3, value.shape), sess)
        analytic = sess.run(grads, {x: x_value})
        eps = 1e-6
        for v, g in zip(variables, analytic):
            base = sess.run(v)
            numeric = np.zeros_like(base)
            for index in np.ndindex(base.shape):
                for sign in (1, -1):
                    moved = base.copy()
                    moved[index] += sign * eps
                    v.load(moved, sess)
                    numeric[index] += sign * sess.run(loss, {x: x_value}) / (2 * eps)
            v.load(base, sess)
            np.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-7, err_msg=v.name)


# ----- variables, scopes and sharing -----

def test_dense_creates_kernel_and_bias_under_its_scope_with_tf1s_initializers(graph):
    x = tf.placeholder(tf.float32, [None, 30])
    tf.layers.dense(x, 20)
    kernel, bias = tf.global_variables()
    assert (kernel.name, kernel.shape.as_list(), bias.name, bias.shape.as_list()) == \
        ("dense/kernel:0", [30, 20], "dense/bias:0", [20])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        k, b = sess.run([kernel, bias])
    limit = np.sqrt(6 / (30 + 20))  # glorot_uniform, get_variable's default
    assert np.abs(k).max() <= limit and np.abs(k).max() > 0.8 * limit
    np.testing.assert_array_equal(b, np.zeros(20, np.float32))


def test_the_variable_scopes_initializer_is_the_kernels_default(graph):
    x = tf.placeholder(tf.float32, [None, 3])
    with tf.variable_scope("net", initializer=tf.constant_initializer(0.5)):
        y = tf.layers.dense(x, 2, bias_initializer=tf.constant_initializer(0.25))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(y, {x: np.ones((1, 3), np.float32)})
    np.testing.assert_allclose(out, [[1.75, 1.75]])


def test_a_second_layer_with_the_same_name_raises_unless_reuse(graph):
    x = tf.placeholder(tf.float32, [None, 3])
    tf.layers.dense(x, 2, name="fc")
    count = len(tf.global_variables())
    with pytest.raises(ValueError, match=r"Variable fc/kernel already exists, disallowed") as info:
        tf.layers.dense(x, 2, name="fc")
    assert isinstance(info.value, RustgradError)
    assert len(tf.global_variables()) == count
    tf.layers.dense(x, 2, name="fc", reuse=True)
    with tf.variable_scope("", reuse=tf.AUTO_REUSE):
        tf.layers.dense(x, 2, name="fc")
        tf.layers.dense(x, 2, name="fc2")
    assert [v.name for v in tf.global_variables()] == ["fc/kernel:0", "fc/bias:0", "fc2/kernel:0", "fc2/bias:0"]


def test_reusing_a_layer_that_does_not_exist_raises(graph):
    x = tf.placeholder(tf.float32, [None, 3])
    with pytest.raises(ValueError, match=r"Variable missing/kernel does not exist"):
        tf.layers.dense(x, 2, name="missing", reuse=True)


def test_a_dense_object_shares_its_variables_across_calls(graph):
    layer = tf.layers.Dense(4, activation=tf.nn.relu)
    a = tf.placeholder(tf.float32, [None, 3])
    b = tf.placeholder(tf.float32, [None, 3])
    ya, yb = layer(a), layer(b)
    assert layer.name == "dense"
    assert [v.name for v in tf.global_variables()] == ["dense/kernel:0", "dense/bias:0"]
    assert layer.trainable_weights == [layer.kernel, layer.bias]
    assert ya.name.startswith("dense/") and yb.name.startswith("dense/")
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out_a, out_b = sess.run([ya, yb], {a: value, b: value})
    np.testing.assert_array_equal(out_a, out_b)


def test_conv2d_class_and_function_make_conv2d_then_conv2d_1(graph):
    x = tf.placeholder(tf.float32, [None, 5, 5, 1])
    y = tf.layers.Conv2D(2, (3, 3), padding="same")(x)
    z = tf.layers.conv2d(y, 4, 1)
    assert z.shape.as_list() == [None, 5, 5, 4]
    assert [v.name for v in tf.global_variables()] == ["conv2d/kernel:0", "conv2d/bias:0", "conv2d_1/kernel:0",
                                                       "conv2d_1/bias:0"]


def test_trainable_false_keeps_the_layers_variables_out_of_trainable_variables(graph):
    x = tf.placeholder(tf.float32, [None, 3])
    tf.layers.dense(x, 2, trainable=False)
    assert len(tf.global_variables()) == 2 and tf.trainable_variables() == []


def test_dense_on_a_3d_input_applies_to_the_last_dim(graph):
    x = tf.placeholder(tf.float32, [None, 4, 3])
    y = tf.layers.dense(x, 2, use_bias=False)
    assert y.shape.as_list() == [None, 4, 2] and len(tf.global_variables()) == 1
    value = np.random.RandomState(1).randn(2, 4, 3).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, kernel = sess.run([y, tf.global_variables()[0]], {x: value})
    np.testing.assert_allclose(out, value @ kernel, rtol=1e-5, atol=1e-6)


def test_channels_first_conv_and_pool_equal_the_channels_last_ones_transposed(graph):
    value = np.random.RandomState(2).randn(2, 6, 6, 3).astype(np.float32)
    last = tf.placeholder(tf.float32, [2, 6, 6, 3])
    first = tf.placeholder(tf.float32, [2, 3, 6, 6])
    init = tf.constant_initializer(np.linspace(-1, 1, 3 * 3 * 3 * 4).reshape(3, 3, 3, 4))
    a = tf.layers.max_pooling2d(tf.layers.conv2d(last, 4, 3, strides=2, padding="same", kernel_initializer=init),
                                2, 1)
    b = tf.layers.max_pooling2d(tf.layers.conv2d(first, 4, 3, strides=2, padding="same", kernel_initializer=init,
                                                 data_format="channels_first"), 2, 1, data_format="channels_first")
    assert b.shape.as_list() == [2, 4, 2, 2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out_a, out_b = sess.run([a, b], {last: value, first: value.transpose(0, 3, 1, 2)})
    np.testing.assert_allclose(out_b.transpose(0, 2, 3, 1), out_a, rtol=1e-5, atol=1e-5)


# ----- collections: UPDATE_OPS, REGULARIZATION_LOSSES, LOSSES -----

def test_batch_norm_in_inference_adds_no_update_ops(graph):
    x = tf.placeholder(tf.float32, [None, 3])
    tf.layers.batch_normalization(x)
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    names = [v.name for v in tf.global_variables()]
    assert names == ["batch_normalization/gamma:0", "batch_normalization/beta:0",
                     "batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"]
    assert [v.name for v in tf.trainable_variables()] == names[:2]


def test_batch_norm_with_a_training_placeholder_updates_only_when_fed_true(graph):
    x = tf.placeholder(tf.float32, [4, 2])
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(x, training=training, momentum=0.5)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    mean = tf.global_variables()[2]
    value = np.array([[1, 2], [3, 4], [5, 6], [7, 12]], np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        infer, _ = sess.run([y, updates], {x: value, training: False})
        np.testing.assert_allclose(sess.run(mean), [0, 0])
        np.testing.assert_allclose(infer, value / np.sqrt(1 + 1e-3), rtol=1e-5)
        train, _ = sess.run([y, updates], {x: value, training: True})
        np.testing.assert_allclose(sess.run(mean), 0.5 * value.mean(0), rtol=1e-6)
    expected = (value - value.mean(0)) / np.sqrt(value.var(0) + 1e-3)
    np.testing.assert_allclose(train, expected, rtol=1e-4, atol=1e-5)


def test_training_with_update_ops_grouped_moves_the_moving_mean(graph):
    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.layers.dense(tf.layers.batch_normalization(x, training=True), 1)
    loss = tf.reduce_mean(tf.square(y))
    step = tf.group(tf.train.GradientDescentOptimizer(0.1).minimize(loss), *tf.get_collection(tf.GraphKeys.UPDATE_OPS))
    value = np.array([[1.0, 10.0], [3.0, 14.0]], np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(step, {x: value})
        mean = sess.run(tf.global_variables()[2])
    np.testing.assert_allclose(mean, (1 - 0.99 ** 3) * value.mean(0), rtol=1e-5)


def test_regularizers_add_to_regularization_losses_once_per_variable(graph):
    x = tf.placeholder(tf.float32, [None, 3])
    layer = tf.layers.Dense(2, kernel_regularizer=lambda w: 0.1 * tf.reduce_sum(tf.abs(w)),
                            bias_regularizer=lambda b: tf.reduce_sum(b * b))
    layer(x)
    layer(x)
    tf.layers.dense(x, 2, name="dense", reuse=True, kernel_regularizer=lambda w: tf.reduce_sum(w))
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 2 and layer.losses == losses
    assert [t.name.split("/Regularizer/")[0] for t in losses] == ["dense/kernel", "dense/bias"]
    total = tf.losses.get_regularization_loss()
    assert total.name == "total_regularization_loss:0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        layer.bias.load(np.array([1.0, 2.0], np.float32), sess)
        kernel, value = sess.run([layer.kernel, total])
    np.testing.assert_allclose(value, 0.1 * np.abs(kernel).sum() + 5.0, rtol=1e-6)


def test_get_regularization_loss_is_zero_without_regularizers_and_filters_by_scope(graph):
    x = tf.placeholder(tf.float32, [None, 3])
    with tf.Session() as sess:
        assert sess.run(tf.losses.get_regularization_loss()) == 0.0
    tf.layers.dense(x, 2, name="a", kernel_regularizer=lambda w: tf.constant(1.0))
    tf.layers.dense(x, 2, name="b", kernel_regularizer=lambda w: tf.constant(10.0))
    with tf.Session() as sess:
        assert sess.run(tf.losses.get_regularization_loss(scope="b")) == 10.0
        assert sess.run(tf.losses.get_regularization_loss()) == 11.0


def test_get_total_loss_sums_the_losses_collection_and_the_regularization_losses(graph):
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.layers.dense(x, 1, kernel_initializer=tf.ones_initializer(), kernel_regularizer=lambda w: tf.reduce_sum(w))
    mse = tf.losses.mean_squared_error(tf.zeros_like(y), y)
    tf.losses.absolute_difference(tf.zeros_like(y), y, loss_collection=None)
    assert tf.get_collection(tf.GraphKeys.LOSSES) == [mse] == tf.losses.get_losses()
    total = tf.losses.get_total_loss()
    without = tf.losses.get_total_loss(add_regularization_losses=False, name="data_loss")
    assert total.name == "total_loss:0" and without.name == "data_loss:0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = sess.run([total, without], {x: np.array([[1.0, 2.0, 3.0]], np.float32)})
    np.testing.assert_allclose(values, [36.0 + 3.0, 36.0])


def test_get_total_loss_without_losses_raises(graph):
    with pytest.raises(ValueError, match="No losses found in collection") as info:
        tf.losses.get_total_loss()
    assert isinstance(info.value, RustgradError)


def test_activity_regularizer_adds_the_batch_mean_of_its_loss(graph):
    x = tf.placeholder(tf.float32, [None, 2])
    tf.layers.dense(x, 1, kernel_initializer=tf.ones_initializer(), activity_regularizer=tf.reduce_sum)
    (loss,) = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        value = sess.run(loss, {x: np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)})
    assert value == pytest.approx((3.0 + 7.0) / 2)


def test_dropout_in_training_drops_and_scales_and_follows_a_training_placeholder(graph):
    x = tf.ones([100, 100])
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.dropout(x, rate=0.25, training=training, seed=1)
    with tf.Session() as sess:
        dropped = sess.run(y, {training: True})
        kept = sess.run(y, {training: False})
    assert set(np.unique(dropped)) <= {0.0, np.float32(1 / 0.75)}
    assert 0.2 < (dropped == 0).mean() < 0.3
    np.testing.assert_array_equal(kept, np.ones((100, 100), np.float32))


# ----- errors -----

@pytest.mark.parametrize("build, error, message", [
    (lambda x: tf.layers.dense(tf.placeholder(tf.float32, [None, None]), 2), ValueError,
     r"The last dimension of the inputs to `Dense` should be defined. Found `None`."),
    (lambda x: tf.layers.dense(tf.placeholder(tf.float32, [3]), 2), ValueError, r"expected min_ndim=2, found ndim=1"),
    (lambda x: tf.layers.dense(x, 0), ValueError, r"units must be a positive integer, got 0"),
    (lambda x: tf.layers.dense(x, 2, activation="nope"), ValueError, r"unknown activation 'nope'"),
    (lambda x: tf.layers.conv2d(x, 2, 3), ValueError, r"expected ndim=4, found ndim=2"),
    (lambda x: tf.layers.conv2d(tf.placeholder(tf.float32, [1, 4, 4, 1]), 2, 3, padding="full"), ValueError,
     r'the `padding` argument must be one of "valid", "same". Received: \'full\''),
    (lambda x: tf.layers.conv2d(tf.placeholder(tf.float32, [1, 4, 4, 1]), 2, (3, 3, 3)), ValueError,
     r"the `kernel_size` argument must be a tuple of 2 integers"),
    (lambda x: tf.layers.conv2d(tf.placeholder(tf.float32, [1, 4, 4, None]), 2, 3), ValueError,
     r"The channel dimension of the inputs should be defined"),
    (lambda x: tf.layers.max_pooling2d(tf.placeholder(tf.float32, [1, 4, 4, 1]), 2, 2, data_format="NHWC"),
     ValueError, r'the `data_format` argument must be one of "channels_first", "channels_last"'),
    (lambda x: tf.layers.dropout(x, rate=1.0, training=True), ValueError, r"rate must be a float in the range"),
    (lambda x: tf.layers.dropout(x, training="yes"), TypeError, r"training must be a Python bool or a bool tensor"),
    (lambda x: tf.layers.batch_normalization(x, training=tf.placeholder(tf.float32, [])), TypeError,
     r"training must be a Python bool or a bool tensor, got a float32 tensor"),
    (lambda x: tf.layers.batch_normalization(x, axis=2), ValueError, r"Invalid axis: 2"),
    (lambda x: tf.layers.batch_normalization(x, fused=True), ValueError, r"fused=True needs 4-D inputs"),
    (lambda x: tf.layers.dense(x, 2, kernel_regularizer="l2"), TypeError, r"a regularizer must be a callable"),
])
def test_bad_layer_arguments_raise_and_change_nothing(graph, build, error, message):
    x = tf.placeholder(tf.float32, [None, 3])
    with pytest.raises(error, match=message) as info:
        build(x)
    assert isinstance(info.value, RustgradError)
    assert tf.global_variables() == []
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
