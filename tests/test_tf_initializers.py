"""TF1's initializers: TF's names and defaults, the statistics of their samples (tolerances
from the sample size), fans of conv kernels (HWIO) as TF computes them, and seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
from rustgrad.errors import DTypeError, InvalidArgumentError, ShapeError

TRUNCATED_STD = 0.87962566103423978  # std of a unit normal truncated to [-2, 2]


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def sample(initializer, shape, dtype=None):
    value = initializer(shape, dtype=dtype)
    with tf.Session() as sess:
        return sess.run(value)


def check_mean_and_std(x, mean, std):
    """The sample mean within 6 standard errors; the sample variance within 6 of its standard
    errors (a normal's fourth moment bounds the truncated normal's and the uniform's)."""
    n = x.size
    assert abs(x.mean() - mean) < 6 * std / math.sqrt(n), (x.mean(), mean)
    assert abs(x.var() - std**2) < 6 * std**2 * math.sqrt(2 / n), (x.std(), std)


def check_uniform(x, low, high):
    assert x.min() >= low and x.max() <= high
    slack = 20 * (high - low) / x.size  # the extremes of n uniform samples are this close to the bounds
    assert x.min() < low + slack and x.max() > high - slack
    check_mean_and_std(x, (low + high) / 2, (high - low) / math.sqrt(12))


def check_truncated(x, mean, stddev):
    assert np.all(np.abs(x - mean) <= 2 * stddev * (1 + 1e-6))
    check_mean_and_std(x, mean, stddev * TRUNCATED_STD)


def test_glorot_uniform_bounds_and_moments():
    x = sample(tf.glorot_uniform_initializer(), [200, 300])
    limit = math.sqrt(6.0 / (200 + 300))
    check_uniform(x, -limit, limit)
    assert x.dtype == np.float32


def test_glorot_normal_is_truncated_with_fan_avg():
    x = sample(tf.glorot_normal_initializer(), [200, 300])
    check_truncated(x, 0.0, math.sqrt(1.0 / 250) / TRUNCATED_STD)


def test_conv_kernel_fans_count_the_receptive_field():
    # HWIO [5, 5, 64, 128]: fan_in = 5*5*64 = 1600, fan_out = 5*5*128 = 3200.
    shape = [5, 5, 64, 128]
    check_truncated(sample(tf.initializers.he_normal(), shape), 0.0, math.sqrt(2.0 / 1600) / TRUNCATED_STD)
    limit = math.sqrt(3.0 * 2.0 / 1600)
    check_uniform(sample(tf.initializers.he_uniform(), shape), -limit, limit)
    limit = math.sqrt(3.0 / 3200)
    check_uniform(sample(tf.variance_scaling_initializer(1.0, "fan_out", "uniform"), shape), -limit, limit)
    limit = math.sqrt(3.0 / 2400)
    check_uniform(sample(tf.glorot_uniform_initializer(), shape), -limit, limit)


def test_variance_scaling_distributions():
    x = sample(tf.variance_scaling_initializer(scale=2.0, mode="fan_in", distribution="untruncated_normal"),
               [100, 1000])
    check_mean_and_std(x, 0.0, math.sqrt(2.0 / 100))
    assert np.abs(x).max() > 2 * math.sqrt(2.0 / 100), "untruncated: some samples lie past two stddevs"
    y = sample(tf.variance_scaling_initializer(scale=3.0, mode="fan_avg", distribution="normal"), [100, 1000])
    check_truncated(y, 0.0, math.sqrt(3.0 / 550) / TRUNCATED_STD)
    z = sample(tf.variance_scaling_initializer(), [100000])  # a vector's fans are its length
    check_truncated(z, 0.0, math.sqrt(1.0 / 100000) / TRUNCATED_STD)


def test_scalar_shapes_have_fans_of_one():
    assert abs(float(sample(tf.glorot_uniform_initializer(), []))) <= math.sqrt(3.0)


def test_random_normal_truncated_normal_and_random_uniform_initializers():
    check_mean_and_std(sample(tf.random_normal_initializer(1.0, 2.0), [300, 300]), 1.0, 2.0)
    check_truncated(sample(tf.truncated_normal_initializer(mean=-1.0, stddev=0.5), [300, 300]), -1.0, 0.5)
    check_uniform(sample(tf.random_uniform_initializer(-1.0, 3.0), [300, 300]), -1.0, 3.0)
    check_uniform(sample(tf.random_uniform_initializer(), [300, 300]), 0.0, 1.0)
    ints = sample(tf.random_uniform_initializer(0, 5, dtype=tf.int32), [1000])
    assert ints.dtype == np.int32 and set(np.unique(ints)) == {0, 1, 2, 3, 4}


def test_tf1_default_arguments():
    assert (tf.random_normal_initializer().mean, tf.random_normal_initializer().stddev) == (0.0, 1.0)
    assert (tf.truncated_normal_initializer().mean, tf.truncated_normal_initializer().stddev) == (0.0, 1.0)
    assert (tf.random_uniform_initializer().minval, tf.random_uniform_initializer().maxval) == (0, None)
    vs = tf.variance_scaling_initializer()
    assert (vs.scale, vs.mode, vs.distribution, vs.seed) == (1.0, "fan_in", "truncated_normal", None)
    assert tf.constant_initializer().value == 0
    assert tf.zeros_initializer().dtype == tf.float32
    assert tf.glorot_uniform_initializer().get_config() == {"seed": None, "dtype": "float32"}


def test_zeros_ones_and_constant():
    np.testing.assert_array_equal(sample(tf.zeros_initializer(), [2, 3], tf.int64), np.zeros((2, 3)))
    assert sample(tf.zeros_initializer(), [2], tf.int64).dtype == np.int64
    np.testing.assert_array_equal(sample(tf.ones_initializer(), [2, 2]), np.ones((2, 2)))
    np.testing.assert_array_equal(sample(tf.constant_initializer(7), [2, 2], tf.int32), np.full((2, 2), 7))
    np.testing.assert_array_equal(sample(tf.constant_initializer([1, 2, 3, 4]), [2, 2]), [[1, 2], [3, 4]])


def test_constant_fills_with_its_last_value_and_refuses_too_many():
    np.testing.assert_array_equal(sample(tf.constant_initializer([1.0, 2.0]), [2, 2]), [[1, 2], [2, 2]])
    with pytest.raises(InvalidArgumentError, match="Too many elements provided. Needed at most 2, but received 3"):
        tf.constant_initializer([1.0, 2.0, 3.0])([2])
    with pytest.raises(ShapeError, match=r"Expected Tensor's shape: \(2, 2\), got \(4,\)."):
        tf.constant_initializer([1.0, 2.0, 3.0, 4.0], verify_shape=True)([2, 2])


def test_initializer_aliases_and_the_initializers_module():
    assert tf.initializers.glorot_uniform is tf.glorot_uniform_initializer
    assert tf.initializers.zeros is tf.zeros_initializer
    assert tf.initializers.truncated_normal is tf.truncated_normal_initializer
    assert tf.initializers.variance_scaling is tf.variance_scaling_initializer
    assert tf.initializers.global_variables is tf.global_variables_initializer
    assert type(tf.glorot_uniform_initializer()).__name__ == "GlorotUniform"
    assert isinstance(tf.initializers.he_normal(), tf.initializers.VarianceScaling)


def test_get_variable_defaults_to_glorot_uniform():
    k = tf.get_variable("kernel", [400, 600])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        x = sess.run(k)
    limit = math.sqrt(6.0 / 1000)
    check_uniform(x, -limit, limit)


def test_the_graph_seed_makes_initial_values_repeat():
    def build():
        g = tf.Graph()
        with g.as_default():
            tf.set_random_seed(42)
            v = tf.get_variable("v", [50])
            w = tf.get_variable("w", [50], initializer=tf.truncated_normal_initializer())
            init = tf.global_variables_initializer()
        return g, init, v, w

    values = []
    for _ in range(2):
        g, init, v, w = build()
        with tf.Session(graph=g) as sess:
            sess.run(init)
            values.append(sess.run([v, w]))
    np.testing.assert_array_equal(values[0][0], values[1][0])
    np.testing.assert_array_equal(values[0][1], values[1][1])
    assert not np.array_equal(values[0][0], values[0][1][:50])


def test_an_op_seed_makes_one_initializer_repeat():
    init = tf.random_normal_initializer(seed=7)
    a, b = sample(init, [20]), sample(init, [20])
    np.testing.assert_array_equal(a, b)


def test_initializer_argument_errors():
    with pytest.raises(InvalidArgumentError, match="`scale` must be positive float.") as info:
        tf.variance_scaling_initializer(scale=0.0)
    assert isinstance(info.value, ValueError)
    with pytest.raises(InvalidArgumentError, match="Invalid `mode` argument: 'fan_sum'"):
        tf.variance_scaling_initializer(mode="fan_sum")
    with pytest.raises(InvalidArgumentError, match="Invalid `distribution` argument: 'gamma'"):
        tf.variance_scaling_initializer(distribution="gamma")
    with pytest.raises(DTypeError, match="Expected floating point type, got int32."):
        tf.random_normal_initializer(dtype=tf.int32)
    with pytest.raises(DTypeError, match="Expected floating point type, got int64."):
        tf.glorot_uniform_initializer()([2, 2], dtype=tf.int64)
    with pytest.raises(ShapeError, match="fully known shape"):
        tf.zeros_initializer()([None, 2])
