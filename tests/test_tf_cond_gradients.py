"""tf.gradients through nested tf.cond, and through a branch holding a random draw: the gradient
reads the values the forward branch computed (the dropout mask that was drawn, not a new one)."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
from rustgrad.errors import GradientError


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_nested_conds_match_finite_differences_in_every_region():
    x = tf.placeholder(tf.float64, [])

    def positive():
        return tf.cond(x > 2.0, lambda: tf.sin(x) * x, lambda: x * x * x) * x + x

    y = tf.cond(x > 0.0, positive, lambda: tf.exp(x))
    (g,) = tf.gradients(y, [x])

    def f(v):
        if v > 0.0:
            return (np.sin(v) * v if v > 2.0 else v ** 3) * v + v
        return np.exp(v)

    with tf.Session() as sess:
        for v in (3.0, 1.2, -0.7):
            numeric = (f(v + 1e-6) - f(v - 1e-6)) / 2e-6
            np.testing.assert_allclose(sess.run(g, {x: v}), numeric, rtol=1e-6)


def test_dropout_in_a_branch_is_differentiated_with_the_mask_drawn_forward():
    x = tf.placeholder(tf.float64, [64])
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: tf.nn.dropout(x * 3.0, rate=0.5), lambda: x)
    (g,) = tf.gradients(tf.reduce_sum(y), [x])
    with tf.Session() as sess:
        for _ in range(3):
            y_value, g_value = sess.run([y, g], {x: np.ones(64), p: True})
            assert 0 < np.count_nonzero(y_value) < 64
            np.testing.assert_array_equal(g_value, y_value), "dy/dx = 3 * mask / 0.5 = y where x = 1"
        np.testing.assert_array_equal(sess.run(g, {x: np.ones(64), p: False}), np.ones(64))


def test_a_second_derivative_through_a_value_kept_from_a_branch_is_refused():
    x = tf.placeholder(tf.float64, [])
    y = tf.cond(x > 0.0, lambda: tf.cond(x > 1.0, lambda: x * x, lambda: x) * x, lambda: x)
    (g,) = tf.gradients(y, [x])
    with tf.Session() as sess:
        assert sess.run(g, {x: 2.0}) == 12.0
    with pytest.raises(GradientError, match=r"^gradients: the gradient of 'cond/If' reads a value its branch computed "
                                            r"\(a random draw or a nested cond's output\), and differentiating that "
                                            r"value again is not supported$"):
        tf.gradients(g, [x])
