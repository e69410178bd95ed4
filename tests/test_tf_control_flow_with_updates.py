"""Control flow in a training step whose weight updates are fused and run last (the plan's
commit phase): moving those updates to the end renumbers the plan's steps, and a Cond's or
loop's outputs must still land in their own slots."""

from __future__ import annotations

import numpy as np
import pytest

from rustgrad import static as tf

LR = 0.01


def numpy_step(x, y, w1, w2, scale):
    h = x @ w1
    c = h * scale
    pred = c @ w2
    g = 2.0 * (pred - y)
    grad_w2 = c.T @ g
    grad_w1 = x.T @ ((g @ w2.T) * scale)
    return ((pred - y) ** 2).sum(), w1 - LR * grad_w1, w2 - LR * grad_w2


def problem():
    rng = np.random.default_rng(3)
    return (rng.standard_normal((8, 5)), rng.standard_normal((8, 3)),
            rng.standard_normal((5, 4)) / 3, rng.standard_normal((4, 3)) / 3)


@pytest.mark.parametrize("taken", [True, False])
def test_cond_in_a_step_with_fused_in_place_updates(taken):
    x0, y0, w10, w20 = problem()
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, shape=(None, 5))
        y = tf.placeholder(tf.float64, shape=(None, 3))
        flag = tf.placeholder(tf.bool, shape=())
        w1, w2 = tf.Variable(w10), tf.Variable(w20)
        h = tf.matmul(x, w1)
        c = tf.cond(flag, lambda: h * 2.0, lambda: h * 3.0)
        pred = tf.matmul(c, w2)
        loss = tf.reduce_sum((pred - y) ** 2.0)
        g1, g2 = tf.gradients(loss, [w1, w2])
        train = tf.group(w1.assign(w1 - LR * g1), w2.assign(w2 - LR * g2))
        # Made after the updates, so its steps come after them before they move to the end.
        metric = tf.cond(flag, lambda: loss + 1.0, lambda: loss - 1.0)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w1_np, w2_np = w10, w20
            for _ in range(3):
                got_loss, got_metric, _ = sess.run([loss, metric, train], feed_dict={x: x0, y: y0, flag: taken})
                want_loss, w1_np, w2_np = numpy_step(x0, y0, w1_np, w2_np, 2.0 if taken else 3.0)
                np.testing.assert_allclose(got_loss, want_loss, rtol=1e-12)
                np.testing.assert_allclose(got_metric, want_loss + (1.0 if taken else -1.0), rtol=1e-12)
            got_w1, got_w2 = sess.run([w1, w2])
    np.testing.assert_allclose(got_w1, w1_np, rtol=1e-12)
    np.testing.assert_allclose(got_w2, w2_np, rtol=1e-12)


def test_while_loop_in_a_step_with_fused_in_place_updates():
    x0, y0, w10, w20 = problem()
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, shape=(None, 5))
        y = tf.placeholder(tf.float64, shape=(None, 3))
        w1, w2 = tf.Variable(w10), tf.Variable(w20)
        h = tf.matmul(x, w1)
        # Doubles h three times: scale 8.
        _, c = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 2.0), [tf.constant(0), h])
        pred = tf.matmul(c, w2)
        loss = tf.reduce_sum((pred - y) ** 2.0)
        g1, g2 = tf.gradients(loss, [w1, w2])
        train = tf.group(w1.assign(w1 - LR * g1), w2.assign(w2 - LR * g2))
        # Made after the updates: the loop's outputs and trip count come after them in the plan.
        trips, metric = tf.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, v + loss), [tf.constant(0), loss])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w1_np, w2_np = w10, w20
            for _ in range(3):
                got_loss, got_trips, got_metric, _ = sess.run([loss, trips, metric, train], feed_dict={x: x0, y: y0})
                want_loss, w1_np, w2_np = numpy_step(x0, y0, w1_np, w2_np, 8.0)
                np.testing.assert_allclose(got_loss, want_loss, rtol=1e-12)
                assert got_trips == 2
                np.testing.assert_allclose(got_metric, 3 * want_loss, rtol=1e-12)
            got_w1, got_w2 = sess.run([w1, w2])
    np.testing.assert_allclose(got_w1, w1_np, rtol=1e-12)
    np.testing.assert_allclose(got_w2, w2_np, rtol=1e-12)
