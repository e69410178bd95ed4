"""Variable semantics of the static (TF1-shaped) API: assign, assign_add and assign_sub
(reads in a run see the value from its start), read_value and load, each session's own
variable values, and initializers."""

from __future__ import annotations

import numpy as np
import pytest
from test_static_semantics import _fresh_default_graph  # noqa: F401 - a fresh default graph for every test

import rustgrad.compat.v1 as tf
from rustgrad.static.errors import FailedPreconditionError

# ---------------------------------------------------------------- assign semantics


def test_reads_in_a_run_see_the_value_from_the_start():
    v = tf.Variable(np.array([1.0, 2.0], np.float32))
    before = v * 10.0
    a = v.assign(v + 1.0)
    after_in_graph = a * 10.0  # depends on the assign's output: sees the new value
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        bv, av, vv, aa = sess.run([before, a, v, after_in_graph])
        np.testing.assert_array_equal(bv, [10.0, 20.0])
        np.testing.assert_array_equal(av, [2.0, 3.0])  # the assign's output is the new value
        np.testing.assert_array_equal(vv, [1.0, 2.0])  # reads see the start-of-run value
        np.testing.assert_array_equal(aa, [20.0, 30.0])
        # The assignment took effect when the run ended.
        np.testing.assert_array_equal(sess.run(v), [2.0, 3.0])
        np.testing.assert_array_equal(sess.run(before), [20.0, 30.0])
        # Order within the fetch list does not matter.
        vv2, av2 = sess.run([v, a])
        np.testing.assert_array_equal(vv2, [2.0, 3.0])
        np.testing.assert_array_equal(av2, [3.0, 4.0])
        np.testing.assert_array_equal(sess.run(v), [3.0, 4.0])


def test_assign_constant_value_and_repeat():
    v = tf.Variable(np.float32(0.0))
    a = v.assign(5.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(a) == 5.0
        assert sess.run(v) == 5.0
        assert sess.run(a) == 5.0


def test_assign_from_placeholder():
    v = tf.Variable(np.zeros((2, 2), np.float32))
    p = tf.placeholder(tf.float32, shape=(2, 2))
    a = v.assign(p)
    with tf.Session() as sess:
        sess.run(v.initializer)
        fed = np.array([[1.0, 2.0], [3.0, 4.0]])
        sess.run(a, {p: fed})
        fed[0, 0] = -99.0  # the session copied the feed
        np.testing.assert_array_equal(sess.run(v), [[1.0, 2.0], [3.0, 4.0]])


def test_assign_add_and_assign_sub():
    v = tf.Variable(np.array([1.0, 2.0], np.float32))
    inc = v.assign_add([10.0, 20.0])
    dec = v.assign_sub(tf.constant([1.0, 1.0]))
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(inc), [11.0, 22.0])
        np.testing.assert_array_equal(sess.run(v), [11.0, 22.0])
        np.testing.assert_array_equal(sess.run(inc), [21.0, 42.0])
        np.testing.assert_array_equal(sess.run(dec), [20.0, 41.0])
        np.testing.assert_array_equal(sess.run(v), [20.0, 41.0])
    assert inc.op.type == "AssignAdd" and dec.op.type == "AssignSub"


def test_two_assigns_in_one_run_both_read_the_start_value():
    v = tf.Variable(np.float32(1.0))
    a1 = v.assign_add(1.0)
    a2 = v.assign_add(10.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        r1, r2 = sess.run([a1, a2])
        assert r1 == 2.0 and r2 == 11.0
        # Documented: when one run assigns a variable twice, they take effect in graph order.
        assert sess.run(v) == 11.0


def test_read_value():
    v = tf.Variable(np.array([1.0, 2.0], np.float32))
    r = v.read_value()
    a = v.assign([7.0, 8.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(r), [1.0, 2.0])
        ra, aa = sess.run([r, a])
        np.testing.assert_array_equal(ra, [1.0, 2.0])
        np.testing.assert_array_equal(aa, [7.0, 8.0])
        np.testing.assert_array_equal(sess.run(r), [7.0, 8.0])
    assert r.dtype == tf.float32 and r.shape.as_list() == [2]


def test_gradient_step_graph_updates_variable():
    w = tf.Variable(np.array([1.0, -2.0], np.float64))
    loss = tf.reduce_sum(tf.square(w))
    (g,) = tf.gradients(loss, [w])
    step = w.assign(w - 0.25 * g)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(step)
        np.testing.assert_allclose(sess.run(w), np.array([1.0, -2.0]) * 0.5 ** 3)


def test_variable_load():
    v = tf.Variable(np.zeros(3, np.float32))
    with tf.Session() as sess:
        v.load([1.0, 2.0, 3.0], sess)
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0, 3.0])


# ---------------------------------------------------------------- per-session state


def test_two_sessions_do_not_share_variable_values():
    v = tf.Variable(np.array([1.0], np.float32))
    inc = v.assign_add([1.0])
    s1, s2 = tf.Session(), tf.Session()
    try:
        s1.run(v.initializer)
        s2.run(v.initializer)
        s1.run(inc)
        s1.run(inc)
        np.testing.assert_array_equal(s1.run(v), [3.0])
        np.testing.assert_array_equal(s2.run(v), [1.0])
        s2.run(inc)
        np.testing.assert_array_equal(s1.run(v), [3.0])
        np.testing.assert_array_equal(s2.run(v), [2.0])
    finally:
        s1.close()
        s2.close()


def test_new_session_starts_uninitialised():
    v = tf.Variable(np.array([1.0], np.float32))
    with tf.Session() as s1:
        s1.run(v.initializer)
        np.testing.assert_array_equal(s1.run(v), [1.0])
    with tf.Session() as s2:
        with pytest.raises(FailedPreconditionError):
            s2.run(v)


def test_closing_one_session_leaves_the_other_usable():
    v = tf.Variable(np.array([4.0], np.float32))
    s1, s2 = tf.Session(), tf.Session()
    s1.run(v.initializer)
    s2.run(v.initializer)
    s1.close()
    np.testing.assert_array_equal(s2.run(v), [4.0])
    s2.close()


# ---------------------------------------------------------------- initializers


def test_initializer_variables_initializer_and_global():
    v1 = tf.Variable(np.float32(1.0), name="v1")
    v2 = tf.Variable(np.float32(2.0), name="v2")
    v3 = tf.Variable(tf.constant(3.0) * 2.0, name="v3")
    with tf.Session() as sess:
        sess.run(v1.initializer)
        assert sess.run(v1) == 1.0
        with pytest.raises(FailedPreconditionError, match="v2"):
            sess.run(v2)
        sess.run(tf.variables_initializer([v2]))
        assert sess.run(v2) == 2.0
        with pytest.raises(FailedPreconditionError, match="v3"):
            sess.run(v3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run([v1, v2, v3]) == [1.0, 2.0, 6.0]
    assert tf.global_variables() == [v1, v2, v3]
    assert tf.trainable_variables() == [v1, v2, v3]


def test_initializer_resets_a_variable():
    v = tf.Variable(np.float32(1.0))
    inc = v.assign_add(1.0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(inc)
        assert sess.run(v) == 2.0
        sess.run(tf.global_variables_initializer())
        assert sess.run(v) == 1.0


def test_trainable_false_and_initial_value():
    v = tf.Variable(np.float32(1.0), trainable=False)
    w = tf.Variable(np.float32(2.0))
    assert tf.trainable_variables() == [w]
    assert tf.global_variables() == [v, w]
    with tf.Session() as sess:
        assert sess.run(w.initial_value) == 2.0


def test_variable_from_seeded_random_is_reproducible_across_sessions():
    v = tf.Variable(tf.random_normal((4, 3), seed=7))
    with tf.Session() as s1:
        s1.run(tf.global_variables_initializer())
        a = s1.run(v)
    with tf.Session() as s2:
        s2.run(tf.global_variables_initializer())
        b = s2.run(v)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (4, 3) and a.dtype == np.float32
    assert np.std(a) > 0
