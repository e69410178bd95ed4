"""Fused steps of static plans: each fires where it should (seen in the run's
trace), gives the values of the unfused graph (checked against numpy), and
leaves the caller owning what it fetches."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rustgrad
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


def activation_graph(dtype, activation, a_value, b_value):
    graph = tf.Graph()
    with graph.as_default():
        a = tf.placeholder(dtype, a_value.shape)
        b = tf.constant(b_value)
        product = tf.matmul(a, b)
        out = activation(product)
    return graph, a, product, out


def max_with(c):
    return lambda p: tf.maximum(p, tf.constant([c], dtype=p.dtype))


# name: (graph activation, numpy reference, the fused step's op in traces)
ACTIVATIONS = {
    "maximum with 0": (max_with(0.0), lambda h: np.maximum(h, 0), "fused_mm_maximum"),
    "maximum with -0.5": (max_with(-0.5), lambda h: np.maximum(h, -0.5), "fused_mm_maximum"),
    "relu": (tf.nn.relu, lambda h: np.where((h > 0) | np.isnan(h), h, 0), "fused_mm_relu"),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
@pytest.mark.parametrize("dtype, rtol", [(np.float32, 1e-5), (np.float64, 1e-12)])
# The last shape (2^31 multiply-adds) is large enough for the packed AVX-512 kernel.
@pytest.mark.parametrize("shape", [(64, 1000, 100), (7, 5, 37), (300, 3, 17), (256, 2048, 4096)])
def test_matmul_and_activation_are_one_step_with_the_unfused_values(name, dtype, rtol, shape):
    m, k, n = shape
    rng = np.random.default_rng(3)
    a_value, b_value = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    activation, reference, fused_op = ACTIVATIONS[name]
    graph, a, product, out = activation_graph(dtype, activation, a_value, b_value)
    (seen_product, activated), ops = traced_run(tf.Session(graph=graph), [product, out], {a: a_value})
    assert fused_op in ops and "mm" not in ops and "maximum" not in ops and "relu" not in ops
    want = a_value.astype(np.float64) @ b_value
    np.testing.assert_allclose(seen_product, want, rtol=rtol, atol=rtol * np.sqrt(k))
    np.testing.assert_array_equal(activated, reference(seen_product))


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_fused_activation_keeps_nan_and_the_sign_of_zero_like_the_unfused_op(name):
    # Rows of a·b: a NaN, +0, -0 and values on both sides of the constants.
    a_value = np.array([[np.nan], [0.0], [-1.0], [1.0], [-0.25]], np.float32)
    b_value = np.array([[1.0, 0.0, 2.0]], np.float32)
    activation, _, fused_op = ACTIVATIONS[name]
    graph, a, product, out = activation_graph(np.float32, activation, a_value, b_value)
    (fused,), ops = traced_run(tf.Session(graph=graph), [out], {a: a_value})
    assert fused_op in ops
    unfused_graph = tf.Graph()
    with unfused_graph.as_default():
        h = tf.placeholder(tf.float32, (5, 3))
        unfused_out = activation(h)
    # The unfused op applied to our own product: the sign of a zero product may differ
    # from numpy's BLAS (the gemm crate, which runs where our AVX-512 kernel does not,
    # gives -1·0 = -0 for a one-term sum, where BLAS adds it to +0).
    h_value = (rustgrad.from_numpy(a_value) @ rustgrad.from_numpy(b_value)).numpy()
    unfused = tf.Session(graph=unfused_graph).run(unfused_out, feed_dict={h: h_value})
    np.testing.assert_array_equal(fused, unfused)
    np.testing.assert_array_equal(np.signbit(fused), np.signbit(unfused))


def test_the_reference_step_fuses_its_first_product_with_the_relu():
    sess, x, w, new_w, x_value, w_value = sgd_graph(np.float32, np.random.default_rng(4))
    (fetched,), ops = traced_run(sess, [new_w], {x: x_value})
    assert "fused_mm_maximum" in ops and "maximum" not in ops
    np.testing.assert_allclose(fetched, numpy_step(x_value.astype(np.float64), w_value), rtol=1e-5, atol=1e-5)


def squared_error_graph(dtype, y_first, grad_ys=None, fetch_squares=False):
    rng = np.random.default_rng(5)
    y_value, p_value = rng.standard_normal((9, 4)).astype(dtype), rng.standard_normal((9, 4)).astype(dtype)
    graph = tf.Graph()
    with graph.as_default():
        y = tf.placeholder(dtype, (None, 4))
        y_pred = tf.placeholder(dtype, (None, 4))
        # y_pred must not be fed for its gradient to be computed: route it through an identity.
        prediction = tf.identity(y_pred)
        diff = y - prediction if y_first else prediction - y
        squares = diff**2.0
        loss = tf.reduce_sum(squares)
        grads = tf.gradients(loss, [prediction], grad_ys=None if grad_ys is None else [tf.constant(grad_ys, dtype)])
    fetches = [loss, grads[0]] + ([squares] if fetch_squares else [])
    values, ops = traced_run(tf.Session(graph=graph), fetches, {y: y_value, y_pred: p_value})
    return values, ops, y_value, p_value


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("y_first", [True, False])
@pytest.mark.parametrize("grad_ys", [None, -1.5])
def test_squared_error_loss_and_gradient_are_fused_with_the_unfused_values(dtype, y_first, grad_ys):
    (loss, grad), ops, y_value, p_value = squared_error_graph(dtype, y_first, grad_ys)
    assert "fused_sum_of_squares" in ops and "fused_squared_error_grad" in ops
    assert not {"pow", "expand_reduced", "neg"} & set(ops)
    diff = (y_value - p_value) if y_first else (p_value - y_value)
    np.testing.assert_allclose(loss, np.sum(diff.astype(np.float64) ** 2), rtol=1e-6)
    upstream = 1.0 if grad_ys is None else grad_ys
    # d/dprediction of sum(diff²) is ∓2·diff·upstream; both forms round the same single product.
    sign = -1.0 if y_first else 1.0
    np.testing.assert_array_equal(grad, diff * dtype(sign * 2 * upstream))


def test_fetched_squares_are_still_computed_and_the_loss_still_fused():
    (loss, grad, squares), ops, y_value, p_value = squared_error_graph(np.float32, True, fetch_squares=True)
    assert "pow" in ops and "fused_sum_of_squares" in ops
    diff = y_value - p_value
    np.testing.assert_array_equal(squares, diff * diff)
    np.testing.assert_allclose(loss, np.sum(squares.astype(np.float64)), rtol=1e-7)
    np.testing.assert_array_equal(grad, diff * np.float32(-2.0))


def test_each_fusion_can_be_turned_off_for_measurement():
    script = textwrap.dedent("""
        import numpy as np
        from rustgrad import static as tf
        from rustgrad._demo import Problem, build_static
        problem = Problem.make(0)
        graph, t = build_static(problem)
        sess = tf.Session(graph=graph)
        sess.run(t["init"])
        for _ in range(2):  # the first update still shares the initial value's memory
            metadata = tf.RunMetadata()
            sess.run([t["loss"], *t["train"]], feed_dict={t["x"]: problem.x, t["y"]: problem.y},
                     options=tf.RunOptions(trace=True), run_metadata=metadata)
        print(" ".join(sorted({op for _, op, _ in metadata.node_times if op.startswith("fused")})))
    """)

    def fused_ops(disabled):
        env = {**os.environ, "RUSTGRAD_DISABLE_FUSION": disabled} if disabled else dict(os.environ)
        if not disabled:
            env.pop("RUSTGRAD_DISABLE_FUSION", None)
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        return set(out.stdout.split())

    all_fused = {"fused_mm_maximum", "fused_sum_of_squares", "fused_squared_error_grad", "fused_masked_grad",
                 "fused_sgd_update_in_place"}
    assert fused_ops("") == all_fused
    assert fused_ops("in_place") == all_fused - {"fused_sgd_update_in_place"} | {"fused_sgd_update"}
    assert fused_ops("activation,mask") == all_fused - {"fused_mm_maximum", "fused_masked_grad"}
    assert fused_ops("squared_error") == all_fused - {"fused_sum_of_squares", "fused_squared_error_grad"}
    assert fused_ops("1") == set()
    assert fused_ops("activaton") == set(), "a word it does not know turns every fusion off"
