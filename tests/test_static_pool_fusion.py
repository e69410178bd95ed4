"""Max pooling's gradient reads the indices of the window maxima. In a static plan that also
runs the pooling, the pooling's pass stores those indices (``fused_max_pool_with_indices``), so
the backward pass does not search the input again. Checked against a numpy reference of the
pooling and its gradient (first maximum of a window wins ties, as in torch and TF), fused and
unfused, NCHW and NHWC, with windows clipped by SAME padding."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from rustgrad import static as tf


def numpy_max_pool(x_nchw, k, s, out_hw):
    """Pooled values and the gradient of sum(pooled * g) for NCHW input, windows clipped at the end."""
    n, c, h, w = x_nchw.shape
    pooled = np.zeros((n, c) + out_hw)
    argmax = np.zeros((n, c) + out_hw + (2,), dtype=int)
    for i in range(out_hw[0]):
        for j in range(out_hw[1]):
            window = x_nchw[:, :, i * s:min(i * s + k, h), j * s:min(j * s + k, w)]
            flat = window.reshape(n, c, -1)
            first = flat.argmax(axis=2)  # numpy's argmax takes the first of equal maxima
            pooled[:, :, i, j] = np.take_along_axis(flat, first[..., None], 2)[..., 0]
            width = window.shape[3]
            argmax[:, :, i, j, 0] = i * s + first // width
            argmax[:, :, i, j, 1] = j * s + first % width
    return pooled, argmax


def numpy_grad(x_shape, argmax, g):
    gx = np.zeros(x_shape)
    n, c, oh, ow = g.shape
    for b in range(n):
        for ch in range(c):
            for i in range(oh):
                for j in range(ow):
                    r, q = argmax[b, ch, i, j]
                    gx[b, ch, r, q] += g[b, ch, i, j]
    return gx


def pool_graph(data_format, x_shape, padding):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, x_shape)
        g = tf.placeholder(tf.float64, None)
        if data_format == "NCHW":
            pooled = tf.nn.max_pool(x, ksize=[1, 1, 2, 2], strides=[1, 1, 2, 2], padding=padding, data_format="NCHW")
        else:
            pooled = tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding=padding)
        (grad_x,) = tf.gradients(tf.reduce_sum(pooled * g), [x])
    return graph, x, g, pooled, grad_x


def traced(sess, fetches, feed):
    metadata = tf.RunMetadata()
    values = sess.run(fetches, feed_dict=feed, options=tf.RunOptions(trace=True), run_metadata=metadata)
    return values, [op for _, op, _ in metadata.node_times]


@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
@pytest.mark.parametrize("size, padding", [(6, "VALID"), (5, "SAME")])
def test_the_fused_pooling_and_its_gradient_match_numpy_with_ties(data_format, size, padding):
    rng = np.random.default_rng(1)
    # Few distinct values, so many windows hold equal maxima: the first one must get the gradient.
    x_nchw = rng.integers(0, 3, size=(2, 3, size, size)).astype(np.float64)
    out = -(-size // 2) if padding == "SAME" else size // 2
    expected, argmax = numpy_max_pool(x_nchw, 2, 2, (out, out))
    g_nchw = rng.standard_normal(expected.shape)
    expected_grad = numpy_grad(x_nchw.shape, argmax, g_nchw)
    to_layout = (lambda a: a) if data_format == "NCHW" else (lambda a: a.transpose(0, 2, 3, 1))
    graph, x, g, pooled, grad_x = pool_graph(data_format, to_layout(x_nchw).shape, padding)
    with tf.Session(graph=graph) as sess:
        (values, grad), ops = traced(sess, [pooled, grad_x], {x: to_layout(x_nchw), g: to_layout(g_nchw)})
    assert "fused_max_pool_with_indices" in ops and "max_pool2d_indices" not in ops
    assert "pool_grad" not in ops and "max_pool_grad" in ops
    np.testing.assert_array_equal(values, to_layout(expected))
    np.testing.assert_allclose(grad, to_layout(expected_grad), rtol=1e-15, atol=1e-15)


def test_a_plan_with_only_the_gradient_still_fuses_and_a_forward_only_plan_does_not():
    rng = np.random.default_rng(2)
    x_value = rng.standard_normal((1, 2, 4, 4))
    g_value = rng.standard_normal((1, 2, 2, 2))
    graph, x, g, pooled, grad_x = pool_graph("NCHW", x_value.shape, "VALID")
    _, argmax = numpy_max_pool(x_value, 2, 2, (2, 2))
    with tf.Session(graph=graph) as sess:
        (grad,), ops = traced(sess, [grad_x], {x: x_value, g: g_value})
        assert "fused_max_pool_with_indices" in ops
        np.testing.assert_allclose(grad, numpy_grad(x_value.shape, argmax, g_value), rtol=1e-15)
        _, ops = traced(sess, [pooled], {x: x_value})
        assert ops.count("max_pool2d") == 1 and "fused_max_pool_with_indices" not in ops
        assert "max_pool2d_indices" not in ops


def test_turning_the_fusion_off_gives_the_same_bits():
    script = textwrap.dedent("""
        import numpy as np
        from rustgrad import static as tf
        rng = np.random.default_rng(3)
        graph = tf.Graph()
        with graph.as_default():
            x = tf.placeholder(tf.float32, (4, 8, 8, 3))
            pooled = tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
            loss = tf.reduce_sum(tf.square(pooled))
            (grad_x,) = tf.gradients(loss, [x])
        metadata = tf.RunMetadata()
        with tf.Session(graph=graph) as sess:
            values = sess.run([pooled, grad_x], feed_dict={x: rng.standard_normal((4, 8, 8, 3)).astype(np.float32)},
                              options=tf.RunOptions(trace=True), run_metadata=metadata)
        print(sorted({op for _, op, _ in metadata.node_times if "pool" in op}))
        print(np.concatenate([v.ravel() for v in values]).tobytes().hex())
    """)

    def run(disabled):
        env = {k: v for k, v in os.environ.items() if k != "RUSTGRAD_DISABLE_FUSION"}
        if disabled:
            env["RUSTGRAD_DISABLE_FUSION"] = disabled
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        return out.stdout.splitlines()

    fused_ops, fused_bits = run("")
    unfused_ops, unfused_bits = run("pool_indices")
    assert fused_ops == "['fused_max_pool_with_indices', 'max_pool_grad']"
    assert unfused_ops == "['max_pool2d', 'max_pool2d_indices', 'max_pool_grad']"
    assert fused_bits == unfused_bits


@pytest.mark.parametrize("shape", [(64, 16, 8, 8), (3, 5, 40, 40)])
def test_poolings_split_over_threads_give_the_one_thread_bits(shape):
    """Large poolings run their planes on the spin helpers, one contiguous run of planes each."""
    import rustgrad
    import rustgrad.nn.functional as F

    x_value = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    expected, argmax = numpy_max_pool(x_value.astype(np.float64), 2, 2, (shape[2] // 2, shape[3] // 2))
    g_value = np.random.default_rng(5).standard_normal(expected.shape).astype(np.float32)

    def run(threads):
        rustgrad.set_num_threads(threads)
        x = rustgrad.tensor(x_value, requires_grad=True)
        pooled, averaged = F.max_pool2d(x, 2), F.avg_pool2d(x, 2)
        ((pooled + averaged) * rustgrad.tensor(g_value)).sum().backward()
        return pooled.detach().numpy(), averaged.detach().numpy(), x.grad.numpy()

    before = rustgrad.get_num_threads()
    try:
        one, two = run(1), run(2)
    finally:
        rustgrad.set_num_threads(before)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(one[0], expected.astype(np.float32))
    average_grad = np.repeat(np.repeat(g_value, 2, axis=2), 2, axis=3) / 4
    expected_grad = numpy_grad(shape, argmax, g_value.astype(np.float64)) + average_grad
    np.testing.assert_allclose(one[2], expected_grad, rtol=1e-6, atol=1e-6)
