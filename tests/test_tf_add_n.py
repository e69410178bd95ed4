"""tf.add_n (and tf.math.add_n): the sum of a list of tensors, its gradient, and TF's errors."""

from __future__ import annotations

import numpy as np
import pytest

from rustgrad import static as tf
from rustgrad.errors import InvalidArgumentError


def test_add_n_sums_left_to_right_and_names_the_last_node():
    rng = np.random.default_rng(0)
    values = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(4)]
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, shape=(None, 3))
        total = tf.add_n([x, *[tf.constant(v) for v in values[1:]]])
        named = tf.math.add_n([x, x], name="twice")
        assert total.name == "AddN:0" and named.name == "twice:0"
        with tf.Session() as sess:
            got, doubled = sess.run([total, named], feed_dict={x: values[0]})
    expected = ((values[0] + values[1]) + values[2]) + values[3]
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(doubled, values[0] + values[0])


def test_add_n_of_one_tensor_is_that_tensor_and_its_gradient_is_one_per_input():
    with tf.Graph().as_default():
        a = tf.constant([1.0, 2.0])
        b = tf.constant([3.0, 4.0])
        single = tf.add_n([a])
        grads = tf.gradients(tf.reduce_sum(tf.add_n([a, b, a]) * 3.0), [a, b])
        with tf.Session() as sess:
            got_single, (ga, gb) = sess.run([single, grads])
    np.testing.assert_array_equal(got_single, [1.0, 2.0])
    np.testing.assert_array_equal(ga, [6.0, 6.0])
    np.testing.assert_array_equal(gb, [3.0, 3.0])


def test_add_n_rejects_an_empty_list_and_mismatched_inputs():
    with tf.Graph().as_default():
        with pytest.raises(InvalidArgumentError, match="inputs must be a list of at least one Tensor"):
            tf.add_n([])
        with pytest.raises(ValueError, match="inputs must be a list of at least one Tensor"):
            tf.add_n(tf.constant([1.0]))
        with pytest.raises(InvalidArgumentError, match=r"dtype: inputs\[0\] is float32 but inputs\[1\] is float64"):
            tf.add_n([tf.constant([1.0]), tf.constant([1.0], dtype=tf.float64)])
        with pytest.raises(InvalidArgumentError, match=r"same shape: inputs\[0\] has shape .*2.* but inputs\[1\]"):
            tf.add_n([tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0, 3.0])])
