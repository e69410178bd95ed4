"""Side effects inside tf.cond branches and tf.while_loop bodies, and tf.map_fn, tf.scan,
tf.foldl and tf.foldr built on while_loop."""

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_a_loop_body_sees_its_own_assignments():
    v = tf.Variable(1.0)

    def body(i):
        with tf.control_dependencies([v.assign(v * 2.0)]):
            return i + 1

    out = tf.while_loop(lambda i: i < 5, body, [tf.constant(0)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(out) == 5
        assert sess.run(v) == 32.0
        sess.run(out)
        assert sess.run(v) == 1024.0, "the second run starts from the stored value"


def test_assign_add_in_a_body_accumulates_across_iterations():
    total = tf.Variable(0)

    def body(i):
        with tf.control_dependencies([total.assign_add(i)]):
            return i + 1

    out = tf.while_loop(lambda i: i < 10, body, [tf.constant(0)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(out)
        assert sess.run(total) == 45


def test_a_body_reads_the_variable_as_updated_by_earlier_iterations():
    v = tf.Variable(0.0)

    def body(i, seen):
        with tf.control_dependencies([v.assign_add(1.0)]):
            return i + 1, seen + tf.identity(v)

    _, seen = tf.while_loop(lambda i, s: i < 4, body, (tf.constant(0), tf.constant(0.0)))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(seen) == 1.0 + 2.0 + 3.0 + 4.0


def test_print_in_a_branch_runs_only_when_its_branch_does(capfd):
    x = tf.placeholder(tf.float32, [])
    out = tf.cond(x > 0.0, lambda: tf.Print(x, [x], "positive: "), lambda: tf.Print(x, [x], "negative: "))
    with tf.Session() as sess:
        sess.run(out, {x: 2.0})
        err = capfd.readouterr().err
        assert "positive: [2]" in err and "negative" not in err


def test_print_in_a_body_runs_once_per_iteration(capfd):
    def body(i):
        return tf.Print(i + 1, [i], "step ")

    out = tf.while_loop(lambda i: i < 3, body, [tf.constant(0)])
    with tf.Session() as sess:
        sess.run(out)
    assert capfd.readouterr().err.count("step ") == 3


def test_map_fn_applies_fn_to_each_row():
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    x = tf.placeholder(tf.float32, [None, 3])
    doubled = tf.map_fn(lambda r: r * 2.0 + tf.reduce_sum(r), x)
    pairs = tf.map_fn(lambda r: (r[0], tf.cast(r[1], tf.int32)), x, dtype=(tf.float32, tf.int32))
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(doubled, {x: a}), a * 2 + a.sum(1, keepdims=True))
        first, second = sess.run(pairs, {x: a})
        np.testing.assert_allclose(first, a[:, 0])
        np.testing.assert_array_equal(second, a[:, 1].astype(np.int32))
        assert sess.run(doubled, {x: a[:0]}).shape == (0, 3)


def test_map_fn_over_a_nested_structure():
    a, b = np.ones((3, 2), np.float32), np.arange(3, dtype=np.float32)
    out = tf.map_fn(lambda e: e["a"] * e["b"], {"a": tf.constant(a), "b": tf.constant(b)}, dtype=tf.float32)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(out), a * b[:, None])


def test_scan_stacks_the_running_values():
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    x = tf.constant(a)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(tf.scan(lambda s, r: s + r, x)), np.cumsum(a, 0))
        np.testing.assert_allclose(sess.run(tf.scan(lambda s, r: s + r, x, initializer=tf.ones([3]))),
                                   1 + np.cumsum(a, 0))
        np.testing.assert_allclose(sess.run(tf.scan(lambda s, r: s + r, x, reverse=True)),
                                   np.cumsum(a[::-1], 0)[::-1])


def test_foldl_and_foldr_fold_in_their_order():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.Session() as sess:
        assert sess.run(tf.foldl(lambda a, r: a * 10.0 + r, x)) == 123.0
        assert sess.run(tf.foldr(lambda a, r: a * 10.0 + r, x)) == 321.0
        assert sess.run(tf.foldl(lambda a, r: a - r, x, initializer=tf.constant(0.0))) == -6.0
        assert sess.run(tf.foldr(lambda a, r: a * 10.0 + r, x, initializer=tf.constant(5.0))) == 5321.0


def test_higher_order_function_errors():
    with pytest.raises(ArgumentTypeError, match="^fn must be callable.$"):
        tf.map_fn(3, tf.constant([1.0]))
    with pytest.raises(InvalidArgumentError, match="elems is empty and there is no initializer"):
        tf.foldl(lambda a, r: a + r, tf.zeros([0]))
    with pytest.raises(InvalidArgumentError, match="fn returned .* of dtype int32 where float32 is expected"):
        tf.map_fn(lambda r: tf.cast(r, tf.int32), tf.constant([1.0, 2.0]))
