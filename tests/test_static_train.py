"""rustgrad.static.train optimizers and Saver, losses and nn.softmax against numpy formulas."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
import rustgrad.static as rs
from rustgrad.errors import FailedPreconditionError, InvalidArgumentError

RUNS = 4


@pytest.fixture
def problem(rng):
    """A float64 linear regression: loss = mean((x @ w + b - y)^2), with its numpy gradient."""
    x = rng.standard_normal((6, 3))
    y = rng.standard_normal((6, 2))
    w0 = rng.standard_normal((3, 2))
    b0 = rng.standard_normal(2)
    with tf.Graph().as_default() as graph:
        xp = tf.placeholder(tf.float64, (None, 3))
        yp = tf.placeholder(tf.float64, (None, 2))
        w = tf.Variable(w0, name="w")
        b = tf.Variable(b0, name="b")
        loss = tf.reduce_mean(tf.square(tf.matmul(xp, w) + b - yp))

        def grads(wv, bv):
            d = 2 * (x @ wv + bv - y) / y.size
            return [x.T @ d, d.sum(0)]

        def np_loss(wv, bv):
            return np.mean((x @ wv + bv - y) ** 2)

        yield dict(graph=graph, w=w, b=b, loss=loss, feed={xp: x, yp: y}, init=[w0, b0], grads=grads,
                   np_loss=np_loss)


def _train(problem, opt, reference):
    """Runs the training op RUNS times, checking the loss and the variables after every run."""
    w, b, loss = problem["w"], problem["b"], problem["loss"]
    train_op = opt.minimize(loss)
    assert isinstance(train_op, rs.Operation)
    values = [v.copy() for v in problem["init"]]
    state: dict = {}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for t in range(1, RUNS + 1):
            loss_value, none = sess.run([loss, train_op], feed_dict=problem["feed"])
            assert none is None
            # The fetched loss is computed from the start-of-run values.
            np.testing.assert_allclose(loss_value, problem["np_loss"](*values), rtol=1e-12)
            values = reference(values, problem["grads"](*values), state, t)
            got = sess.run([w, b])
            for g, r in zip(got, values):
                np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-12)
    return train_op


def test_gradient_descent(problem):
    def reference(values, grads, state, t):
        return [v - 0.1 * g for v, g in zip(values, grads)]

    with problem["graph"].as_default():
        _train(problem, tf.train.GradientDescentOptimizer(0.1), reference)


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum(problem, nesterov):
    lr, mu = 0.05, 0.9

    def reference(values, grads, state, t):
        out = []
        for i, (v, g) in enumerate(zip(values, grads)):
            accum = mu * state.get(i, 0.0) + g
            state[i] = accum
            out.append(v - lr * g - lr * mu * accum if nesterov else v - lr * accum)
        return out

    with problem["graph"].as_default():
        opt = tf.train.MomentumOptimizer(lr, mu, use_nesterov=nesterov)
        _train(problem, opt, reference)
        slots = [v for v in tf.global_variables() if v.name.endswith("/Momentum:0")]
        assert sorted(v.name for v in slots) == ["b/Momentum:0", "w/Momentum:0"]
        assert all(not v.trainable for v in slots)
        assert opt.get_slot(problem["w"], "Momentum") is not None


def test_adam(problem):
    lr, b1, b2, eps = 0.01, 0.8, 0.95, 1e-7

    def reference(values, grads, state, t):
        lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        out = []
        for i, (v, g) in enumerate(zip(values, grads)):
            m, s = state.get(i, (0.0, 0.0))
            m = b1 * m + (1 - b1) * g
            s = b2 * s + (1 - b2) * g * g
            state[i] = (m, s)
            out.append(v - lr_t * m / (np.sqrt(s) + eps))
        return out

    with problem["graph"].as_default():
        _train(problem, tf.train.AdamOptimizer(lr, b1, b2, eps), reference)
        names = sorted(v.name for v in tf.global_variables())
        assert names == ["b/Adam:0", "b/Adam_1:0", "b:0", "beta1_power:0", "beta2_power:0", "w/Adam:0",
                         "w/Adam_1:0", "w:0"]
        assert [v.name for v in tf.trainable_variables()] == ["w:0", "b:0"]


def test_adam_defaults():
    opt = tf.train.AdamOptimizer()
    assert (opt._lr, opt._beta1, opt._beta2, opt._epsilon) == (0.001, 0.9, 0.999, 1e-8)


def test_compute_and_apply_gradients_and_var_list(problem):
    w, b = problem["w"], problem["b"]
    with problem["graph"].as_default():
        opt = tf.train.GradientDescentOptimizer(0.5)
        pairs = opt.compute_gradients(problem["loss"], var_list=[w])
        assert len(pairs) == 1 and pairs[0][1] is w
        step = tf.Variable(0.0, trainable=False, name="global_step")
        train_op = opt.apply_gradients(pairs, global_step=step)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train_op, feed_dict=problem["feed"])
            sess.run(train_op, feed_dict=problem["feed"])
            w0, b0 = problem["init"]
            w1 = w0 - 0.5 * problem["grads"](w0, b0)[0]
            w2 = w1 - 0.5 * problem["grads"](w1, b0)[0]
            np.testing.assert_allclose(sess.run(w), w2, rtol=1e-10)
            np.testing.assert_array_equal(sess.run(b), b0)
            assert sess.run(step) == 2.0


def test_no_gradients_is_an_error(problem):
    with problem["graph"].as_default():
        unrelated = tf.Variable(np.ones(2), name="unrelated")
        with pytest.raises(ValueError, match="No gradients"):
            tf.train.GradientDescentOptimizer(0.1).minimize(problem["loss"], var_list=[unrelated])


def test_float32_adam_graph():
    with tf.Graph().as_default():
        v = tf.Variable(np.array([1.0, -2.0], dtype=np.float32))
        train_op = tf.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(v * v))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train_op)
            # The first Adam step moves every coordinate by lr (up to epsilon) against the gradient's sign.
            np.testing.assert_allclose(sess.run(v), [0.9, -1.9], rtol=1e-6)


def test_saver_round_trip_across_sessions(problem, tmp_path):
    with problem["graph"].as_default():
        train_op = tf.train.AdamOptimizer(0.05).minimize(problem["loss"])
        saver = tf.train.Saver()
        path = str(tmp_path / "model.ckpt")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(2):
                sess.run(train_op, feed_dict=problem["feed"])
            assert saver.save(sess, path) == path
            saved = {v.op.name: sess.run(v) for v in tf.global_variables()}
            sess.run(train_op, feed_dict=problem["feed"])
            continued = sess.run([problem["w"], problem["b"]])
        with np.load(path) as archive:
            assert sorted(archive.files) == sorted(saved)
        with tf.Session() as sess:
            saver.restore(sess, path)  # no initializer: restore sets every variable, slots included
            for v in tf.global_variables():
                np.testing.assert_array_equal(sess.run(v), saved[v.op.name])
            sess.run(train_op, feed_dict=problem["feed"])
            for got, want in zip(sess.run([problem["w"], problem["b"]]), continued):
                np.testing.assert_allclose(got, want, rtol=1e-12)


def test_saver_var_list_global_step_and_errors(problem, tmp_path):
    w, b = problem["w"], problem["b"]
    with problem["graph"].as_default():
        saver = tf.train.Saver(var_list=[w])
        with tf.Session() as sess:
            with pytest.raises(FailedPreconditionError, match="uninitialized"):
                saver.save(sess, str(tmp_path / "early"))
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "ckpt"), global_step=3)
            assert path.endswith("ckpt-3")
            with np.load(path) as archive:
                assert archive.files == ["w"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(w.assign(np.zeros((3, 2))))
            sess.run(b.assign(np.zeros(2)))
            saver.restore(sess, path)
            np.testing.assert_array_equal(sess.run(w), problem["init"][0])
            np.testing.assert_array_equal(sess.run(b), np.zeros(2))  # not in var_list
            with pytest.raises(InvalidArgumentError, match="not a valid checkpoint"):
                saver.restore(sess, str(tmp_path / "missing"))
            with pytest.raises(InvalidArgumentError, match="Key b not found"):
                tf.train.Saver([w, b]).restore(sess, path)


def test_mean_squared_error(rng):
    labels = rng.standard_normal((4, 3))
    preds = rng.standard_normal((4, 3))
    weights = np.array([[1.0], [0.0], [2.0], [0.5]])
    with tf.Graph().as_default():
        loss = tf.losses.mean_squared_error(tf.constant(labels), tf.constant(preds))
        weighted = tf.losses.mean_squared_error(labels, tf.constant(preds), weights=weights)
        summed = tf.losses.mean_squared_error(labels, tf.constant(preds), reduction=tf.losses.Reduction.SUM)
        all_zero = tf.losses.mean_squared_error(labels, tf.constant(preds), weights=0.0)
        with tf.Session() as sess:
            value, weighted_value, summed_value, zero_value = sess.run([loss, weighted, summed, all_zero])
    assert zero_value == 0.0  # TF1's safe division: no NaN when every weight is zero
    sq = (preds - labels) ** 2
    np.testing.assert_allclose(value, sq.mean(), rtol=1e-12)
    # SUM_BY_NONZERO_WEIGHTS: the weighted sum over the number of elements with a nonzero weight.
    np.testing.assert_allclose(weighted_value, (sq * weights).sum() / 9, rtol=1e-12)
    np.testing.assert_allclose(summed_value, sq.sum(), rtol=1e-12)
    with pytest.raises(ValueError, match="incompatible"):
        tf.losses.mean_squared_error(tf.constant(np.ones((2, 3))), tf.constant(np.ones((3, 2))))


@pytest.mark.parametrize("axis", [None, 0, -1])
def test_static_softmax_values_and_gradient(rng, axis):
    logits = rng.standard_normal((3, 4)) * 3
    logits[0, 0] = 500.0  # stability: no overflow
    c = rng.standard_normal((3, 4))
    ax = -1 if axis is None else axis
    with tf.Graph().as_default():
        x = tf.constant(logits)
        s = tf.nn.softmax(x, axis=axis)
        ls = tf.nn.log_softmax(x, axis=axis)
        grad, = tf.gradients(tf.reduce_sum(s * c), [x])
        with tf.Session() as sess:
            sv, lsv, gv = sess.run([s, ls, grad])
    shifted = logits - logits.max(ax, keepdims=True)
    expected = np.exp(shifted) / np.exp(shifted).sum(ax, keepdims=True)
    np.testing.assert_allclose(sv, expected, rtol=1e-12, atol=1e-300)
    # log(1 + the others): -exp(-497.8) where 500 dominates, which log(sum) would round to 0
    others = np.where(shifted == 0, 0.0, np.exp(shifted)).sum(ax, keepdims=True)
    np.testing.assert_allclose(lsv, shifted - np.log1p(others), rtol=1e-12)
    np.testing.assert_allclose(gv, expected * (c - (expected * c).sum(ax, keepdims=True)), rtol=1e-9, atol=1e-12)


def test_static_nn_activations_and_exports(rng):
    values = rng.standard_normal((2, 3))
    with tf.Graph().as_default():
        x = tf.constant(values)
        with tf.Session() as sess:
            r, sg, th = sess.run([tf.nn.relu(x), tf.nn.sigmoid(x), tf.nn.tanh(x)])
    np.testing.assert_allclose(r, np.maximum(values, 0))
    np.testing.assert_allclose(sg, 1 / (1 + np.exp(-values)), rtol=1e-12)
    np.testing.assert_allclose(th, np.tanh(values), rtol=1e-12)
    assert tf.train is rs.train and tf.losses is rs.losses
    assert "train" in rs.__all__ and "losses" in rs.__all__
