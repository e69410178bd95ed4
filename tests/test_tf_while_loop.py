"""tf.while_loop with TF 1.15's semantics, run in Rust without Python per iteration."""

import collections
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_a_loop_sums_like_python():
    n = tf.placeholder(tf.int32, [])
    i, total = tf.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + i * i), (tf.constant(0), tf.constant(0)))
    assert total.name == "while/Exit_1:0"
    with tf.Session() as sess:
        for k in (0, 1, 7, 100):
            assert sess.run([i, total], {n: k}) == [k, sum(j * j for j in range(k))]


def test_loop_vars_may_be_nested_lists_tuples_dicts_and_namedtuples():
    State = collections.namedtuple("State", "x y")
    x = tf.constant(np.array([1.0, 2.0], np.float32))

    def body(i, parts):
        return i + 1, {"s": State(parts["s"].x * 2.0, parts["s"].y + 1.0), "t": [parts["t"][0] - 1.0]}

    out = tf.while_loop(lambda i, parts: i < 3, body,
                        [tf.constant(0), {"s": State(x, tf.constant(0.0)), "t": [tf.constant(0.0)]}])
    assert isinstance(out, list) and isinstance(out[1]["s"], State)
    with tf.Session() as sess:
        i, parts = sess.run(out)
        assert i == 3
        np.testing.assert_allclose(parts["s"].x, [8.0, 16.0])
        assert parts["s"].y == 3.0 and parts["t"] == [-3.0]


def test_a_single_loop_variable_comes_back_bare_unless_return_same_structure():
    i = tf.constant(0)
    assert isinstance(tf.while_loop(lambda i: i < 3, lambda i: i + 1, [i]), tf.Tensor)
    assert isinstance(tf.while_loop(lambda i: i < 3, lambda i: i + 1, i), tf.Tensor)
    same = tf.while_loop(lambda i: i < 3, lambda i: [i + 1], [i], return_same_structure=True)
    assert isinstance(same, list) and len(same) == 1


def test_a_shape_that_changes_without_an_invariant_gets_tfs_error():
    x = tf.constant([1.0, 2.0])
    with pytest.raises(ValueError, match=r"^Input tensor 'Const:0' enters the loop with shape \(2,\), but has shape "
                                         r"\(3,\) after one iteration\. To allow the shape to vary across iterations, "
                                         r"use the `shape_invariants` argument of tf\.while_loop to specify a "
                                         r"less-specific shape\.$"):
        tf.while_loop(lambda x: tf.size(x) < 10, lambda x: tf.concat([x, [0.0]], 0), [x])


def test_shape_invariants_let_a_dim_grow():
    x = tf.constant([1.0, 2.0])
    out = tf.while_loop(lambda x: tf.size(x) < 5, lambda x: tf.concat([x, tf.reduce_sum(x, keepdims=True)], 0), [x],
                        shape_invariants=[tf.TensorShape([None])])
    assert out.shape.as_list() == [None]
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(out), [1.0, 2.0, 3.0, 6.0, 12.0])


def test_an_invariant_that_the_initial_value_does_not_have_is_refused():
    with pytest.raises(ValueError, match=r"^The shape invariant specified for Const:0 is not compatible with the "
                                         r"initial shape of the loop variable\. It enters the loop with shape \(2,\), "
                                         r"but the specified shape invariant is \(3,\)\.$"):
        tf.while_loop(lambda x: True, lambda x: x, [tf.constant([1.0, 2.0])], shape_invariants=[tf.TensorShape([3])])


def test_maximum_iterations_stops_the_loop():
    limit = tf.placeholder(tf.int32, [])
    forever = tf.while_loop(lambda i: tf.constant(True), lambda i: i + 2, [tf.constant(0)], maximum_iterations=limit)
    fixed = tf.while_loop(lambda i: i < 5, lambda i: i + 1, [tf.constant(0)], maximum_iterations=100)
    with tf.Session() as sess:
        assert [sess.run(forever, {limit: k}) for k in (0, 3, -1)] == [0, 6, 0]
        assert sess.run(fixed) == 5


def test_parallel_iterations_and_swap_memory_are_accepted():
    out = tf.while_loop(lambda i: i < 4, lambda i: i + 1, [tf.constant(0)], parallel_iterations=32,
                        swap_memory=True, back_prop=False)
    with tf.Session() as sess:
        assert sess.run(out) == 4


def test_the_body_reads_outer_tensors_once_as_captures():
    x = tf.placeholder(tf.float32, [2])
    w = tf.constant([[0.5, 0.0], [0.0, 2.0]])
    out = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, tf.reduce_sum(w * v, axis=1) + x),
                        (tf.constant(0), x))[1]
    a = np.array([1.0, 1.0], np.float32)
    want = a.copy()
    for _ in range(3):
        want = np.array([[0.5, 0.0], [0.0, 2.0]]) @ want + a
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(out, {x: a}), want)


def test_nested_loops_and_conds_inside_a_body():
    def outer_body(i, total):
        inner = tf.while_loop(lambda j, s: j < i, lambda j, s: (j + 1, s + j), (tf.constant(0), tf.constant(0)))[1]
        even = tf.cond(tf.equal(i % 2, 0), lambda: inner, lambda: -inner)
        return i + 1, total + even

    out = tf.while_loop(lambda i, t: i < 6, outer_body, (tf.constant(0), tf.constant(0)))[1]
    want = sum((1 if i % 2 == 0 else -1) * sum(range(i)) for i in range(6))
    with tf.Session() as sess:
        assert sess.run(out) == want


def test_a_tensor_made_in_a_body_cannot_be_used_outside():
    kept = []

    def body(i):
        kept.append(i + 1)
        return kept[0]

    tf.while_loop(lambda i: i < 3, body, [tf.constant(0)])
    with pytest.raises(InvalidArgumentError,
                       match="^Cannot use 'while/Add' as input to 'Mul' because 'while/Add' is in a while loop.$"):
        kept[0] * 2


def test_while_loop_argument_errors_have_tf1s_texts():
    i = tf.constant(0)
    with pytest.raises(ValueError, match="^No loop variables provided$"):
        tf.while_loop(lambda: True, lambda: 1, [])
    with pytest.raises(TypeError, match="^cond must be callable.$"):
        tf.while_loop(1, lambda i: i, [i])
    with pytest.raises(TypeError, match="^body must be callable.$"):
        tf.while_loop(lambda i: i < 1, 1, [i])
    with pytest.raises(TypeError, match="^parallel_iterations must be a positive integer.$"):
        tf.while_loop(lambda i: i < 1, lambda i: i, [i], parallel_iterations=0)
    with pytest.raises(ValueError, match=r"^maximum_iterations must be a scalar, saw shape: \(2,\)$"):
        tf.while_loop(lambda i: i < 1, lambda i: i, [i], maximum_iterations=[1, 2])
    with pytest.raises(ValueError, match="enters the loop as int32, but the body returns"):
        tf.while_loop(lambda i: i < 1, lambda i: tf.cast(i, tf.float32), [i])
    with pytest.raises(ValueError, match="The two structures don't have the same nested structure"):
        tf.while_loop(lambda i, j: i < 1, lambda i, j: i, [i, i])


def test_a_failed_while_loop_adds_nothing_to_the_graph():
    before = len(tf.get_default_graph().get_operations())
    with pytest.raises(ValueError):
        tf.while_loop(lambda x: True, lambda x: tf.concat([x, x], 0), [tf.constant([1.0])])
    assert len(tf.get_default_graph().get_operations()) == before + 1  # the constant made by the test


def test_gradients_flow_through_a_while_loop():
    """More in test_tf_while_gradients.py."""
    x = tf.placeholder(tf.float32, [])
    y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x), (tf.constant(0), x))[1]
    with tf.Session() as sess:
        assert sess.run(tf.gradients(y, x)[0], {x: 2.0}) == 4 * 2.0 ** 3


def test_a_running_loop_stops_on_ctrl_c():
    code = textwrap.dedent("""
        import signal, threading, os, time
        import rustgrad.compat.v1 as tf
        out = tf.while_loop(lambda i: tf.constant(True), lambda i: i + 1, [tf.constant(0, tf.int64)])
        threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        with tf.Session() as sess:
            try:
                sess.run(out)
            except KeyboardInterrupt:
                print("interrupted")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "interrupted" in done.stdout, done.stderr


def test_a_loop_of_ten_thousand_iterations_gives_the_count():
    out = tf.while_loop(lambda i: i < 10000, lambda i: i + 1, [tf.constant(0)])
    with tf.Session() as sess:
        assert sess.run(out) == 10000


def test_while_loop_rejects_a_non_bool_condition():
    with pytest.raises((ValueError, ArgumentTypeError), match="cond must return a scalar bool"):
        tf.while_loop(lambda i: i, lambda i: i + 1, [tf.constant(0)])
