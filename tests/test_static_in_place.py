"""SGD updates that write into their variable's memory (the plan's commit phase).

An update `v.assign(v - lr * matmul(a, b))` runs in place only when nothing but
the session holds v's value; traces name such a step `fused_sgd_update_in_place`.
Every test checks values against numpy and that nothing the caller or another
reader holds is changed."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from rustgrad import static as tf

LR = 0.002
IN_PLACE = "fused_sgd_update_in_place"


def traced_run(sess, fetches, feed=None):
    metadata = tf.RunMetadata()
    values = sess.run(fetches, feed_dict=feed, options=tf.RunOptions(trace=True), run_metadata=metadata)
    return values, [op for _, op, _ in metadata.node_times]


def linear_model(dtype, rng, init_from_random=False):
    """Two weight matrices trained on a squared error, as the reference program does."""
    x_value = rng.standard_normal((7, 5)).astype(dtype)
    y_value = rng.standard_normal((7, 3)).astype(dtype)
    w1_value = rng.standard_normal((5, 4)).astype(dtype)
    w2_value = rng.standard_normal((4, 3)).astype(dtype)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(dtype, (None, 5))
        y = tf.placeholder(dtype, (None, 3))
        if init_from_random:
            w1 = tf.Variable(tf.random_normal((5, 4), dtype=dtype, seed=1))
        else:
            w1 = tf.Variable(w1_value)
        w2 = tf.Variable(w2_value)
        h = tf.maximum(tf.matmul(x, w1), tf.zeros(1, dtype=dtype))
        loss = tf.reduce_sum((tf.matmul(h, w2) - y) ** 2.0)
        grad_w1, grad_w2 = tf.gradients(loss, [w1, w2])
        new_w1 = w1.assign(w1 - LR * grad_w1)
        new_w2 = w2.assign(w2 - LR * grad_w2)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    sess.run(init)
    names = dict(x=x, y=y, w1=w1, w2=w2, loss=loss, new_w1=new_w1, new_w2=new_w2, init=init)
    return sess, names, (x_value, y_value, w1_value, w2_value)


def numpy_step(x, y, w1, w2):
    x, y, w1, w2 = (v.astype(np.float64) for v in (x, y, w1, w2))
    h_pre = x @ w1
    h = np.maximum(h_pre, 0)
    grad_pred = 2.0 * (h @ w2 - y)
    grad_w2 = h.T @ grad_pred
    grad_h = np.where(h_pre >= 0, grad_pred @ w2.T, 0)
    return w1 - LR * (x.T @ grad_h), w2 - LR * grad_w2


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 2e-5), (np.float64, 1e-12)])
def test_updates_write_in_place_from_the_second_run_and_match_numpy(dtype, rtol):
    sess, t, (x, y, w1, w2) = linear_model(dtype, np.random.default_rng(0))
    for step in range(4):
        (new_w1, new_w2), ops = traced_run(sess, [t["new_w1"], t["new_w2"]], {t["x"]: x, t["y"]: y})
        # The first run's weights still share memory with the initial constants.
        assert ops.count(IN_PLACE) == (0 if step == 0 else 2), ops
        w1, w2 = numpy_step(x, y, w1, w2)
        np.testing.assert_allclose(new_w1, w1, rtol=rtol, atol=rtol)
        np.testing.assert_allclose(new_w2, w2, rtol=rtol, atol=rtol)
        np.testing.assert_array_equal(sess.run(t["w1"]), new_w1)


def test_initial_values_are_not_overwritten_by_in_place_updates():
    sess, t, (x, y, w1, w2) = linear_model(np.float32, np.random.default_rng(1))
    for _ in range(3):
        sess.run([t["new_w1"], t["new_w2"]], feed_dict={t["x"]: x, t["y"]: y})
    assert not np.array_equal(sess.run(t["w1"]), w1)
    sess.run(t["init"])
    np.testing.assert_array_equal(sess.run(t["w1"]), w1)
    np.testing.assert_array_equal(sess.run(t["w2"]), w2)


def test_randomly_initialised_weights_are_updated_in_place_from_the_first_run():
    sess, t, (x, y, _, w2) = linear_model(np.float32, np.random.default_rng(2), init_from_random=True)
    w1 = sess.run(t["w1"])
    (new_w1,), ops = traced_run(sess, [t["new_w1"]], {t["x"]: x, t["y"]: y})
    assert ops.count(IN_PLACE) == 1, ops
    np.testing.assert_allclose(new_w1, numpy_step(x, y, w1, w2)[0], rtol=2e-5, atol=2e-5)


def test_a_variable_fetched_in_the_same_run_keeps_its_old_value_there():
    sess, t, (x, y, w1, w2) = linear_model(np.float64, np.random.default_rng(3))
    sess.run([t["new_w1"], t["new_w2"]], feed_dict={t["x"]: x, t["y"]: y})
    w1, w2 = numpy_step(x, y, w1, w2)
    (old_w1, new_w1), ops = traced_run(sess, [t["w1"], t["new_w1"]], {t["x"]: x, t["y"]: y})
    assert IN_PLACE not in ops, "the fetched old value must not be written over"
    np.testing.assert_allclose(old_w1, w1, rtol=1e-12)
    np.testing.assert_allclose(new_w1, numpy_step(x, y, w1, w2)[0], rtol=1e-12)


def test_arrays_fetched_earlier_are_not_changed_by_later_updates():
    sess, t, (x, y, _, _) = linear_model(np.float32, np.random.default_rng(4))
    feed = {t["x"]: x, t["y"]: y}
    sess.run([t["new_w1"], t["new_w2"]], feed_dict=feed)
    read_w1 = sess.run(t["w1"])
    new_w1, _ = sess.run([t["new_w1"], t["new_w2"]], feed_dict=feed)
    kept = (read_w1.copy(), new_w1.copy())
    for _ in range(3):
        _, ops = traced_run(sess, [t["new_w1"], t["new_w2"]], feed)
        assert ops.count(IN_PLACE) == 2
    np.testing.assert_array_equal(read_w1, kept[0])
    np.testing.assert_array_equal(new_w1, kept[1])


def test_loaded_and_fed_values_are_copied_before_updates_write_into_them():
    sess, t, (x, y, _, w2) = linear_model(np.float32, np.random.default_rng(5))
    loaded = np.random.default_rng(6).standard_normal((5, 4)).astype(np.float32)
    kept = loaded.copy()
    t["w1"].load(loaded, sess)
    for _ in range(2):
        sess.run([t["new_w1"], t["new_w2"]], feed_dict={t["x"]: x, t["y"]: y})
    np.testing.assert_array_equal(loaded, kept)

    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable(np.zeros((2, 2), np.float32))
        fed = tf.placeholder(tf.float32, (2, 2))
        a = tf.placeholder(tf.float32, (2, 2))
        set_v = v.assign(fed)
        step = v.assign(v - 1.0 * tf.matmul(a, a))
    sess = tf.Session(graph=graph)
    value = np.arange(4, dtype=np.float32).reshape(2, 2)
    sess.run(set_v, feed_dict={fed: value})
    eye = np.eye(2, dtype=np.float32)
    for _ in range(2):
        _, ops = traced_run(sess, [step], {a: eye})
    assert IN_PLACE in ops
    np.testing.assert_array_equal(value, np.arange(4).reshape(2, 2))
    np.testing.assert_array_equal(sess.run(v), value - 2 * eye)


def test_a_failed_commit_changes_no_variable():
    graph = tf.Graph()
    with graph.as_default():
        a = tf.placeholder(tf.float64, (None, 3))
        g1 = tf.placeholder(tf.float64, (None, 2))
        g2 = tf.placeholder(tf.float64, (None, 2))
        v1 = tf.Variable(np.ones((3, 2)))
        v2 = tf.Variable(np.ones((3, 2)))
        step1 = v1.assign(v1 - 0.5 * tf.matmul(a, g1, transpose_a=True))
        step2 = v2.assign(v2 - 0.5 * tf.matmul(a, g2, transpose_a=True))
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    sess.run(init)
    a_value, g_value = np.ones((4, 3)), np.ones((4, 2))
    sess.run([step1, step2], feed_dict={a: a_value, g1: g_value, g2: g_value})
    before = sess.run([v1, v2])
    # The second product's operands disagree (4 rows against 5): the run fails
    # after the first update was checked, and must not have applied it.
    with pytest.raises(ValueError, match=r"fused update: cannot add a 3x4 by 5x2 product"):
        sess.run([step1, step2], feed_dict={a: a_value, g1: g_value, g2: np.ones((5, 2))})
    after = sess.run([v1, v2])
    np.testing.assert_array_equal(after[0], before[0])
    np.testing.assert_array_equal(after[1], before[1])
    _, ops = traced_run(sess, [step1, step2], {a: a_value, g1: g_value, g2: g_value})
    assert ops.count(IN_PLACE) == 2
    np.testing.assert_array_equal(sess.run(v1), before[0] - 0.5 * a_value.T @ g_value)


def test_updates_read_by_other_ops_or_assigned_twice_stay_out_of_place():
    rng = np.random.default_rng(7)
    a_value, b_value = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    graph = tf.Graph()
    with graph.as_default():
        a = tf.placeholder(tf.float64, (3, 4))
        w = tf.Variable(np.ones((3, 2)))
        new_w = w.assign(w - 0.5 * tf.matmul(a, tf.constant(b_value)))
        total = tf.reduce_sum(new_w)
        bump = w.assign_add(np.ones((3, 2)))
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    sess.run(init)
    sess.run(new_w, feed_dict={a: a_value})
    expected = np.ones((3, 2)) - 0.5 * (a_value @ b_value)
    (seen_total,), ops = traced_run(sess, [total], {a: a_value})
    assert "fused_sgd_update" in ops and IN_PLACE not in ops
    np.testing.assert_allclose(seen_total, np.sum(expected - 0.5 * (a_value @ b_value)), rtol=1e-12)
    w_before = sess.run(w)
    (_, _), ops = traced_run(sess, [new_w, bump], {a: a_value})
    assert IN_PLACE not in ops
    # Both assignments read the value from the start of the run; the later one in graph order wins.
    np.testing.assert_allclose(sess.run(w), w_before + 1.0, rtol=1e-12)


def test_groups_of_groups_run_with_updates_in_the_commit_phase():
    sess, t, (x, y, w1, w2) = linear_model(np.float64, np.random.default_rng(8))
    with sess.graph.as_default():
        train = tf.group(tf.group(t["new_w1"]), t["new_w2"])
    feed = {t["x"]: x, t["y"]: y}
    for _ in range(2):
        assert sess.run(train, feed_dict=feed) is None
        w1, w2 = numpy_step(x, y, w1, w2)
    np.testing.assert_allclose(sess.run(t["w1"]), w1, rtol=1e-12)
    np.testing.assert_allclose(sess.run(t["w2"]), w2, rtol=1e-12)


def test_concurrent_runs_never_see_a_half_written_update():
    """One thread trains while another reads the weights; every read must be a
    value some whole number of updates produced."""
    sess, t, (x, y, w1, w2) = linear_model(np.float64, np.random.default_rng(9))
    feed = {t["x"]: x, t["y"]: y}
    sess.run([t["new_w1"], t["new_w2"]], feed_dict=feed)
    history = [sess.run(t["w1"])]
    reads = []
    done = threading.Event()

    def read_weights():
        while not done.is_set():
            reads.append(sess.run(t["w1"]))

    reader = threading.Thread(target=read_weights)
    reader.start()
    try:
        for _ in range(30):
            new_w1, _ = sess.run([t["new_w1"], t["new_w2"]], feed_dict=feed)
            history.append(new_w1)
    finally:
        done.set()
        reader.join()
    assert reads and np.isfinite(history[-1]).all()
    for value in reads:
        assert any(np.array_equal(value, h) for h in history), "a read saw a half-applied update"


def test_a_variable_whose_value_is_a_view_is_updated_without_error():
    graph = tf.Graph()
    with graph.as_default():
        plain = tf.Variable(np.ones((2, 3), np.float32))
        transposed = tf.Variable(tf.transpose(tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2))))
        x = tf.placeholder(tf.float32, (2, 4))
        y = tf.placeholder(tf.float32, (4, 3))
        step = tf.group(plain.assign(plain - 0.1 * tf.matmul(x, y)),
                        transposed.assign(transposed - 0.1 * tf.matmul(x, y)))
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    sess.run(init)
    feed = {x: np.ones((2, 4), np.float32), y: np.ones((4, 3), np.float32)}
    expected_plain = np.ones((2, 3), np.float32)
    expected_transposed = np.arange(6, dtype=np.float32).reshape(3, 2).T
    for _ in range(3):
        _, ops = traced_run(sess, [step], feed)
        expected_plain = expected_plain - np.float32(0.4)
        expected_transposed = expected_transposed - np.float32(0.4)
    # The first update of the view writes a new (contiguous) value; later ones go in place.
    assert ops.count(IN_PLACE) == 2
    np.testing.assert_allclose(sess.run(plain), expected_plain, rtol=1e-6)
    np.testing.assert_allclose(sess.run(transposed), expected_transposed, rtol=1e-6)
