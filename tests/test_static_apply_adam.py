"""TF1's ``ApplyAdam`` op: ``tf.train.AdamOptimizer`` updates each dense variable and its two
slots with one fused op, whose values follow TF1's algorithm (float64 numpy below)."""

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
from rustgrad.errors import InvalidArgumentError


@pytest.fixture
def graph():
    with tf.Graph().as_default() as g:
        yield g


def tf1_adam(w, grads, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    """TF1's ApplyAdam over the gradients ``grads(w)``, in float64: the values after each step."""
    m, v, out = np.zeros_like(w), np.zeros_like(w), []
    for t in range(1, 6):
        g = grads(w)
        lr_t = lr * np.sqrt(1 - beta2**t) / (1 - beta1**t)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        w = w - lr_t * m / (np.sqrt(v) + eps)
        out.append((w, m, v))
    return out


W0 = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.5]])
X = np.array([[0.5, -1.0], [2.0, 0.1], [-0.3, 0.7]])


def grads_of_loss(w):
    """d/dw of sum((w @ X)^2) / 2 + sum(w)."""
    return (w @ X) @ X.T + 1.0


def build(dtype, lr=0.01):
    w = tf.Variable(W0.astype(dtype), name="w")
    y = tf.matmul(w, tf.constant(X.astype(dtype)))
    loss = tf.reduce_sum(y * y) / 2 + tf.reduce_sum(w)
    opt = tf.train.AdamOptimizer(lr)
    return w, opt, opt.minimize(loss)


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_five_steps_match_tf1s_adam_in_float64_numpy(graph, dtype, rtol):
    w, opt, train = build(dtype)
    m, v = opt.get_slot(w, "Adam"), opt.get_slot(w, "Adam_1")
    expected = tf1_adam(W0, grads_of_loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for want_w, want_m, want_v in expected:
            sess.run(train)
            got_w, got_m, got_v = sess.run([w, m, v])
            assert got_w.dtype == dtype
            np.testing.assert_allclose(got_w, want_w, rtol=rtol, atol=rtol)
            np.testing.assert_allclose(got_m, want_m, rtol=rtol, atol=rtol)
            np.testing.assert_allclose(got_v, want_v, rtol=rtol, atol=rtol * 1e-3)
        powers = sess.run([graph.get_tensor_by_name("beta1_power:0"), graph.get_tensor_by_name("beta2_power:0")])
        np.testing.assert_allclose(powers, [0.9**6, 0.999**6], rtol=1e-6)


def test_each_dense_variable_gets_one_apply_adam_op_and_tf1s_slot_names(graph):
    w, opt, train = build(np.float32)
    b = tf.Variable(np.zeros(3, np.float32), name="b")
    loss2 = tf.reduce_sum(tf.matmul(tf.ones((1, 2)), w) + b)
    opt2 = tf.train.AdamOptimizer(0.1)
    train2 = opt2.minimize(loss2)
    adams = [op for op in graph.get_operations() if op.type == "ApplyAdam"]
    assert len(adams) == 3
    assert {op.type for op in train2.control_inputs} == {"ApplyAdam", "Assign"}
    names = {v.name for v in tf.global_variables()}
    assert {"w:0", "b:0", "beta1_power:0", "beta2_power:0", "w/Adam:0", "w/Adam_1:0", "b/Adam:0",
            "b/Adam_1:0"} <= names
    assert opt.get_slot_names() == ["Adam", "Adam_1"]


def test_the_apply_adam_value_is_the_variables_new_value_and_has_no_gradient(graph):
    w, opt, train = build(np.float64)
    apply = next(op for op in graph.get_operations() if op.type == "ApplyAdam")
    assert tf.gradients(apply.outputs[0], [w]) == [None]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        new_w = sess.run(apply.outputs[0])
        np.testing.assert_allclose(new_w, tf1_adam(W0, grads_of_loss)[0][0], rtol=1e-12)
        np.testing.assert_array_equal(sess.run(w), new_w)


def test_a_read_of_the_variable_ordered_after_apply_adam_sees_its_new_value(graph):
    w, opt, train = build(np.float64)
    with tf.control_dependencies([train]):
        after = tf.identity(w)
    before = tf.identity(w)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_after, got_before = sess.run([after, before])
        np.testing.assert_allclose(got_after, tf1_adam(W0, grads_of_loss)[0][0], rtol=1e-12)
        np.testing.assert_array_equal(got_before, W0)


def test_a_read_of_a_slot_ordered_after_apply_adam_is_refused_naming_the_op(graph):
    w, opt, train = build(np.float64)
    m = opt.get_slot(w, "Adam")
    with tf.control_dependencies([train]):
        after = tf.identity(m)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(InvalidArgumentError, match=r"after the ApplyAdam op 'ApplyAdam'.*slot"):
            sess.run(after)
        np.testing.assert_array_equal(sess.run(m), np.zeros_like(W0))


def test_a_run_that_fails_after_apply_adam_changes_nothing(graph):
    w = tf.Variable(W0, name="w")
    g = tf.placeholder(tf.float64, shape=None)
    opt = tf.train.AdamOptimizer(0.1)
    train = opt.apply_gradients([(g, w)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(InvalidArgumentError, match=r"ApplyAdam: var and grad must have the same dtype and shape"):
            sess.run(train, {g: np.ones(4)})
        np.testing.assert_array_equal(sess.run(w), W0)
        np.testing.assert_array_equal(sess.run(opt.get_slot(w, "Adam")), np.zeros_like(W0))
        assert sess.run(graph.get_tensor_by_name("beta1_power:0")) == pytest.approx(0.9)
        sess.run(train, {g: np.ones_like(W0)})
        assert not np.array_equal(sess.run(w), W0)


def test_adam_matches_the_composed_formula_with_a_tensor_learning_rate(graph):
    lr = tf.placeholder(tf.float64, shape=[])
    w = tf.Variable(W0, name="w")
    loss = tf.reduce_sum(tf.matmul(w, tf.constant(X)) ** 2) / 2 + tf.reduce_sum(w)
    train = tf.train.AdamOptimizer(lr).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(5):
            sess.run(train, {lr: 0.05})
        np.testing.assert_allclose(sess.run(w), tf1_adam(W0, grads_of_loss, lr=0.05)[-1][0], rtol=1e-12)
