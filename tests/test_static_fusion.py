"""Fused steps of static plans: each fires where it should (seen in the run's
trace), gives the values of the unfused graph (checked against numpy), and
leaves the caller owning what it fetches."""

from __future__ import annotations

import numpy as np
import pytest

from rustgrad import static as tf

LR = 0.01


def traced_run(sess, fetches, feed):
    metadata = tf.RunMetadata()
    values = sess.run(fetches, feed_dict=feed, options=tf.RunOptions(trace=True), run_metadata=metadata)
    return values, [op for _, op, _ in metadata.node_times]


def sgd_graph(dtype, rng):
    x_value = rng.standard_normal((6, 5)).astype(dtype)
    w_value = rng.standard_normal((5, 4)).astype(dtype)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(dtype, (None, 5))
        w = tf.Variable(w_value)
        h = tf.matmul(x, w)
        h_relu = tf.maximum(h, tf.zeros(1, dtype=dtype))
        loss = tf.reduce_sum(h_relu**2.0)
        (grad_w,) = tf.gradients(loss, [w])
        new_w = w.assign(w - LR * grad_w)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    sess.run(init)
    return sess, x, w, new_w, x_value, w_value


def numpy_step(x, w):
    h = x @ w
    grad_h = np.where(h >= 0, 2.0 * np.maximum(h, 0), 0)
    return w - LR * (x.T @ grad_h)


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 1e-5), (np.float64, 1e-12)])
def test_fused_update_and_mask_give_the_unfused_values(dtype, rtol):
    sess, x, w, new_w, x_value, w_value = sgd_graph(dtype, np.random.default_rng(0))
    (fetched,), ops = traced_run(sess, [new_w], {x: x_value})
    assert "fused_sgd_update" in ops and "fused_masked_grad" in ops
    assert "where" not in ops and "ge" not in ops
    np.testing.assert_allclose(fetched, numpy_step(x_value.astype(np.float64), w_value), rtol=rtol, atol=rtol)
    np.testing.assert_array_equal(sess.run(w), fetched)


def test_mask_sends_ties_to_x_and_zeroes_nan_inputs_like_where():
    graph = tf.Graph()
    with graph.as_default():
        h = tf.placeholder(tf.float32, (5,))
        g = tf.placeholder(tf.float32, (5,))
        out = tf.maximum(h, tf.zeros(1))
        (grad_h,) = tf.gradients(out, [h], grad_ys=[g])
    h_value = np.array([-1.0, 0.0, -0.0, np.nan, 2.0], np.float32)
    g_value = np.array([1.0, 2.0, 3.0, 4.0, np.inf], np.float32)
    (value,), ops = traced_run(tf.Session(graph=graph), [grad_h], {h: h_value, g: g_value})
    assert "fused_masked_grad" in ops
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(value, np.where(h_value >= 0, g_value, 0))


def test_hand_written_mask_with_swapped_branches_is_fused_too():
    graph = tf.Graph()
    with graph.as_default():
        h = tf.placeholder(tf.float32, (4,))
        g = tf.placeholder(tf.float32, (4,))
        out = tf.where(h < tf.constant([0.5]), tf.zeros_like(g), g)
    h_value = np.array([0.0, 0.5, 1.0, -3.0], np.float32)
    g_value = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    (value,), ops = traced_run(tf.Session(graph=graph), [out], {h: h_value, g: g_value})
    assert ops.count("fused_masked_grad") == 1
    np.testing.assert_array_equal(value, [0.0, 2.0, 3.0, 0.0])


def test_fetched_assign_value_is_the_callers_own_copy():
    sess, x, w, new_w, x_value, _ = sgd_graph(np.float32, np.random.default_rng(1))
    first, second = sess.run([new_w, new_w], feed_dict={x: x_value})
    np.testing.assert_array_equal(first, second)
    assert not np.shares_memory(first, second)
    stored = sess.run(w)
    np.testing.assert_array_equal(stored, first)
    first[...] = 123.0
    second[...] = -7.0
    np.testing.assert_array_equal(sess.run(w), stored)


def test_product_with_another_reader_is_not_fused():
    rng = np.random.default_rng(2)
    a_value, b_value = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    graph = tf.Graph()
    with graph.as_default():
        a = tf.placeholder(tf.float64, (3, 4))
        w = tf.Variable(np.zeros((3, 2)))
        product = tf.matmul(a, tf.constant(b_value))
        new_w = w.assign(w - 0.5 * product)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    sess.run(init)
    (updated, seen), ops = traced_run(sess, [new_w, product], {a: a_value})
    assert "fused_sgd_update" not in ops
    np.testing.assert_allclose(seen, a_value @ b_value, rtol=1e-12)
    np.testing.assert_allclose(updated, -0.5 * (a_value @ b_value), rtol=1e-12)
