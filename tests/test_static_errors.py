"""Errors of the static API: type, message, and that nothing is left broken afterwards."""

from __future__ import annotations

import re

import numpy as np
import pytest

import rustgrad
import rustgrad.compat.v1 as tf
import rustgrad.errors as rg_errors
from rustgrad.static import errors
from rustgrad.static.errors import (
    DTypeError,
    FailedPreconditionError,
    InvalidArgumentError,
    OpError,
    RustgradError,
    ShapeError,
)


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


# ---------------------------------------------------------------- the classes


def test_error_classes_importable_and_hierarchy():
    assert tf.errors is errors
    for name in ("OpError", "InvalidArgumentError", "FailedPreconditionError", "RustgradError",
                 "ShapeError", "DTypeError"):
        assert hasattr(errors, name), name
        assert name in errors.__all__
        assert issubclass(getattr(errors, name), rg_errors.RustgradError)
    assert issubclass(InvalidArgumentError, OpError)
    assert issubclass(FailedPreconditionError, OpError)
    assert issubclass(OpError, rg_errors.RustgradError)
    assert issubclass(InvalidArgumentError, ValueError)
    assert issubclass(FailedPreconditionError, RuntimeError)
    assert issubclass(ShapeError, ValueError)
    assert issubclass(DTypeError, TypeError)
    # Same class objects as rustgrad.errors: one hierarchy.
    assert InvalidArgumentError is rg_errors.InvalidArgumentError
    assert FailedPreconditionError is rg_errors.FailedPreconditionError
    assert RustgradError is rg_errors.RustgradError


@pytest.fixture
def net():
    x = tf.placeholder(tf.float32, shape=(None, 3), name="x")
    w = tf.Variable(np.ones((3, 2), np.float32), name="w")
    y = tf.matmul(x, w)
    inc = w.assign_add(tf.ones((3, 2)))
    init = tf.global_variables_initializer()
    return x, w, y, inc, init


def assert_still_usable(sess, x, w, y, expected_w=None):
    """A valid run works after an error, and w holds expected_w."""
    out = sess.run(y, {x: np.ones((2, 3))})
    assert out.shape == (2, 2)
    if expected_w is not None:
        np.testing.assert_array_equal(sess.run(w), expected_w)
        np.testing.assert_array_equal(out, np.ones((2, 3)) @ expected_w)


# ---------------------------------------------------------------- feeds


def test_missing_feed_names_placeholder_dtype_and_shape(net):
    x, w, y, inc, init = net
    with tf.Session() as sess:
        sess.run(init)
        with pytest.raises(InvalidArgumentError) as info:
            sess.run(y)
        msg = str(info.value)
        assert "You must feed a value for placeholder tensor" in msg
        assert "'x'" in msg
        assert "float32" in msg
        assert "(?, 3)" in msg
        assert isinstance(info.value, OpError)
        assert_still_usable(sess, x, w, y, np.ones((3, 2)))


def test_missing_feed_of_second_placeholder_names_that_one():
    a = tf.placeholder(tf.float32, shape=(2,), name="first")
    b = tf.placeholder(tf.float64, shape=(None, None, 4), name="second")
    out = tf.reduce_sum(a) + tf.cast(tf.reduce_sum(b), tf.float32)
    with tf.Session() as sess:
        with pytest.raises(InvalidArgumentError, match="placeholder tensor 'second'") as info:
            sess.run(out, {a: [1.0, 2.0]})
        assert "float64" in str(info.value) and "(?, ?, 4)" in str(info.value)
        assert sess.run(out, {a: [1.0, 2.0], b: np.ones((1, 1, 4))}) == 7.0


def test_feed_shape_mismatch(net):
    x, w, y, inc, init = net
    with tf.Session() as sess:
        sess.run(init)
        with pytest.raises(InvalidArgumentError) as info:
            sess.run(y, {x: np.ones((2, 4))})
        msg = str(info.value)
        assert "Cannot feed value of shape (2, 4) for Tensor" in msg
        assert "x:0" in msg
        assert "which has shape '(?, 3)'" in msg
        assert_still_usable(sess, x, w, y, np.ones((3, 2)))


@pytest.mark.parametrize("value, shown", [
    (np.ones(3), "(3,)"),
    (np.ones((1, 2, 3)), "(1, 2, 3)"),
    (1.0, "()"),
])
def test_feed_rank_mismatch(value, shown):
    x = tf.placeholder(tf.float32, shape=(None, 3))
    with tf.Session() as sess:
        with pytest.raises(InvalidArgumentError, match=re.escape(f"Cannot feed value of shape {shown} ")):
            sess.run(x * 2.0, {x: value})


def test_feed_shape_mismatch_with_fully_known_shape():
    x = tf.placeholder(tf.float64, shape=(2, 2))
    with tf.Session() as sess:
        with pytest.raises(InvalidArgumentError, match=r"which has shape '\(2, 2\)'"):
            sess.run(x + 1.0, {x: np.ones((2, 3))})


@pytest.mark.parametrize("value", ["abc", object(), [[1.0, 2.0, 3.0], [4.0]], {"a": 1}],
                         ids=["str", "object", "ragged", "dict"])
def test_non_numeric_feed(net, value):
    x, w, y, inc, init = net
    with tf.Session() as sess:
        sess.run(init)
        with pytest.raises(InvalidArgumentError) as info:
            sess.run(y, {x: value})
        assert "x:0" in str(info.value) or "Cannot feed" in str(info.value)
        assert_still_usable(sess, x, w, y, np.ones((3, 2)))


def test_feed_key_of_invalid_type():
    x = tf.placeholder(tf.float32, shape=(2,))
    with tf.Session() as sess:
        with pytest.raises(InvalidArgumentError):
            sess.run(x * 1.0, {3: [1.0, 2.0]})
        with pytest.raises(InvalidArgumentError):
            sess.run(x * 1.0, {x.op: [1.0, 2.0]})


# ---------------------------------------------------------------- other graphs


def test_fetching_a_tensor_from_another_graph():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        a = tf.constant(1.0) + 1.0
    with g2.as_default():
        b = tf.constant(2.0) + 1.0
    with tf.Session(graph=g1) as sess:
        with pytest.raises(InvalidArgumentError, match="not an element of this graph"):
            sess.run(b)
        with pytest.raises(InvalidArgumentError, match="not an element of this graph"):
            sess.run([a, {"k": b}])
        with pytest.raises(InvalidArgumentError, match="not an element of this graph"):
            sess.run(b.op)
        assert sess.run(a) == 2.0


def test_feeding_a_tensor_from_another_graph():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        x1 = tf.placeholder(tf.float32, shape=(2,))
        out = x1 * 2.0
    with g2.as_default():
        x2 = tf.placeholder(tf.float32, shape=(2,))
    with tf.Session(graph=g1) as sess:
        with pytest.raises(InvalidArgumentError, match="not an element of this graph"):
            sess.run(out, {x1: [1.0, 1.0], x2: [1.0, 2.0]})
        np.testing.assert_array_equal(sess.run(out, {x1: [1.0, 2.0]}), [2.0, 4.0])


def test_building_an_op_from_two_graphs():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        a = tf.placeholder(tf.float32, shape=(2,))
    with g2.as_default():
        b = tf.placeholder(tf.float32, shape=(2,))
    with pytest.raises(InvalidArgumentError, match="same graph"):
        tf.add(a, b)
    with pytest.raises(InvalidArgumentError, match="same graph"):
        _ = a * b
    with pytest.raises(InvalidArgumentError):
        tf.gradients(tf.reduce_sum(a), [b])


# ---------------------------------------------------------------- variables and sessions


def test_reading_uninitialised_variable(net):
    x, w, y, inc, init = net
    with tf.Session() as sess:
        with pytest.raises(FailedPreconditionError) as info:
            sess.run(w)
        assert "uninitialized" in str(info.value)
        assert "w" in str(info.value)
        with pytest.raises(FailedPreconditionError, match="Attempting to use uninitialized value w"):
            sess.run(y, {x: np.ones((1, 3))})
        sess.run(init)
        assert_still_usable(sess, x, w, y, np.ones((3, 2)))


def test_uninitialised_variable_named_among_others():
    a = tf.Variable(np.float32(1.0), name="alpha")
    b = tf.Variable(np.float32(2.0), name="beta")
    with tf.Session() as sess:
        sess.run(a.initializer)
        with pytest.raises(FailedPreconditionError, match="beta"):
            sess.run(a + b)
        assert sess.run(a * 3.0) == 3.0


def test_run_after_close(net):
    x, w, y, inc, init = net
    sess = tf.Session()
    sess.run(init)
    sess.close()
    with pytest.raises(FailedPreconditionError, match="closed Session"):
        sess.run(y, {x: np.ones((1, 3))})
    with pytest.raises(FailedPreconditionError, match="closed Session"):
        sess.run(init)
    # The graph itself is fine: a new session runs it.
    with tf.Session() as other:
        other.run(init)
        assert_still_usable(other, x, w, y, np.ones((3, 2)))


def test_close_twice_is_harmless():
    sess = tf.Session()
    sess.close()
    sess.close()
    assert sess.closed


def test_fetch_of_invalid_type_and_unknown_name():
    c = tf.constant(1.0)
    with tf.Session() as sess:
        with pytest.raises(InvalidArgumentError, match="invalid type"):
            sess.run(3)
        with pytest.raises(InvalidArgumentError, match="invalid type"):
            sess.run([c, None])
        with pytest.raises(InvalidArgumentError):
            sess.run("does_not_exist:0")
        with pytest.raises(InvalidArgumentError):
            sess.run("does_not_exist")
        assert sess.run(c) == 1.0


# ---------------------------------------------------------------- build-time shape and dtype errors


def test_matmul_inner_dim_mismatch_at_build_time():
    x = tf.placeholder(tf.float32, shape=(None, 3))
    w = tf.placeholder(tf.float32, shape=(4, 5))
    n_before = len(tf.get_default_graph().get_operations())
    with pytest.raises(ShapeError) as info:
        tf.matmul(x, w)
    msg = str(info.value)
    assert "(?, 3)" in msg and "(4, 5)" in msg
    assert "3 and 4" in msg
    assert isinstance(info.value, ValueError)
    with pytest.raises(ValueError):
        x @ w
    # No node was added by the failed builds, and the graph still builds and runs.
    assert len(tf.get_default_graph().get_operations()) == n_before
    ok = tf.matmul(x, tf.ones((3, 5)))
    with tf.Session() as sess:
        assert sess.run(ok, {x: np.ones((2, 3))}).shape == (2, 5)


def test_matmul_transpose_mismatch_names_shapes():
    a = tf.placeholder(tf.float32, shape=(None, 3))
    a2 = tf.placeholder(tf.float32, shape=(4, 3))
    b = tf.placeholder(tf.float32, shape=(3, 5))
    with pytest.raises(ShapeError, match=r"\(4, 3\)") as info:
        tf.matmul(a2, b, transpose_a=True)  # (3, 4) @ (3, 5)
    assert "(3, 5)" in str(info.value) and "4 and 3" in str(info.value)
    with pytest.raises(ShapeError, match=r"\(3, 5\)") as info:
        tf.matmul(a, b, transpose_b=True)  # (?, 3) @ (5, 3)
    assert "(?, 3)" in str(info.value) and "3 and 5" in str(info.value)
    assert tf.matmul(a, b).shape.as_list() == [None, 5]
    # The unknown dim of a transposed (?, 3) is the inner one: only known at run time.
    assert tf.matmul(a, b, transpose_a=True).shape.as_list() == [3, 5]


def test_matmul_rank_error():
    a = tf.placeholder(tf.float32, shape=(3,))
    b = tf.placeholder(tf.float32, shape=(3, 5))
    with pytest.raises(ShapeError, match="rank"):
        tf.matmul(a, b)


@pytest.mark.parametrize("op", [tf.add, tf.subtract, tf.multiply, tf.divide, tf.maximum, tf.minimum])
def test_broadcast_mismatch_at_build_time(op):
    x = tf.placeholder(tf.float32, shape=(None, 3))
    y = tf.placeholder(tf.float32, shape=(2, 4))
    with pytest.raises(ShapeError) as info:
        op(x, y)
    msg = str(info.value)
    assert "(?, 3)" in msg and "(2, 4)" in msg
    assert "3 and 4" in msg
    assert isinstance(info.value, ValueError)


def test_broadcast_mismatch_via_operator_and_constant():
    x = tf.placeholder(tf.float32, shape=(None, 3))
    with pytest.raises(ShapeError, match=r"\(\?, 3\)"):
        x + np.ones(4)
    with pytest.raises(ShapeError, match=r"\(2,\)"):
        x * tf.ones(2)


def test_dtype_mismatch_at_build_time():
    a = tf.placeholder(tf.float32, shape=(2,))
    b = tf.placeholder(tf.float64, shape=(2,))
    with pytest.raises(DTypeError, match="float32.*float64|float64.*float32"):
        tf.add(a, b)
    with pytest.raises(TypeError):
        tf.matmul(tf.reshape(a, [1, 2]), tf.reshape(b, [2, 1]))


def test_reshape_impossible_at_build_time():
    x = tf.placeholder(tf.float32, shape=(2, 3))
    with pytest.raises(ShapeError):
        tf.reshape(x, [4, 2])


def test_bad_reduction_axis_at_build_time():
    x = tf.placeholder(tf.float32, shape=(2, 3))
    with pytest.raises(RustgradError):
        tf.reduce_sum(x, axis=2)


def test_assign_shape_and_dtype_mismatch_at_build_time():
    v = tf.Variable(np.zeros((2, 2), np.float32), name="v")
    with pytest.raises(ShapeError, match="v"):
        v.assign(np.zeros((3, 2), np.float32))
    with pytest.raises(DTypeError):
        v.assign(tf.placeholder(tf.float64, shape=(2, 2)))


def test_tensor_truth_value_is_an_error():
    x = tf.placeholder(tf.float32, shape=(2,))
    with pytest.raises(TypeError, match="bool"):
        if x:
            pass


def test_pow_with_a_tensor_exponent_of_another_dtype_is_rejected():
    x = tf.placeholder(tf.float32, shape=(2,))
    y = tf.placeholder(tf.float64, shape=(2,))
    with pytest.raises(DTypeError, match="pow: Input 'y' has type float64 that does not match type float32"):
        x ** y
    with pytest.raises(DTypeError, match="pow: Input 'y' has type float64 that does not match type float32"):
        tf.pow(x, y)


# ---------------------------------------------------------------- runtime errors leave state unchanged


def test_failed_run_with_assign_leaves_variable_unchanged_runtime_shape_error():
    """The assign runs before the failing op in the plan; its result must be discarded."""
    v = tf.Variable(np.array([1.0, 2.0], np.float32), name="v")
    inc = v.assign_add([10.0, 10.0])
    x = tf.placeholder(tf.float32, shape=(None, None))
    bad = tf.matmul(x, tf.ones((3, 2)))  # inner dim only known when fed
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(RustgradError):
            sess.run([inc, bad], {x: np.ones((2, 4))})
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
        out_inc, out_bad = sess.run([inc, bad], {x: np.ones((2, 3))})
        np.testing.assert_array_equal(out_inc, [11.0, 12.0])
        np.testing.assert_array_equal(out_bad, np.full((2, 2), 3.0))
        np.testing.assert_array_equal(sess.run(v), [11.0, 12.0])


def test_failed_run_with_assign_leaves_variable_unchanged_uninitialised_read():
    v = tf.Variable(np.array([1.0, 2.0], np.float32), name="v")
    inc = v.assign_add([1.0, 1.0])
    u = tf.Variable(np.array([5.0], np.float32), name="u")
    read_u = u * 1.0
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(FailedPreconditionError, match="u"):
            sess.run([inc, read_u])
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


def test_failed_run_with_assign_leaves_variable_unchanged_missing_feed(net):
    x, w, y, inc, init = net
    with tf.Session() as sess:
        sess.run(init)
        with pytest.raises(InvalidArgumentError):
            sess.run([inc, y])
        with pytest.raises(InvalidArgumentError):
            sess.run([inc, y], {x: np.ones((2, 5))})
        np.testing.assert_array_equal(sess.run(w), np.ones((3, 2)))
        sess.run(inc)
        assert_still_usable(sess, x, w, y, np.full((3, 2), 2.0))


def test_runtime_reshape_error_then_recovery():
    x = tf.placeholder(tf.float32, shape=(None,))
    r = tf.reshape(x, [2, 3])
    with tf.Session() as sess:
        with pytest.raises(ShapeError):
            sess.run(r, {x: np.ones(5)})
        np.testing.assert_array_equal(sess.run(r, {x: np.arange(6.0)}), np.arange(6.0).reshape(2, 3))


def test_failed_initializer_run_leaves_other_variable_state():
    a = tf.Variable(np.float32(1.0), name="a")
    p = tf.placeholder(tf.float32, shape=(), name="p")
    b = tf.Variable(p * 2.0, name="b")  # initial value needs a feed
    inc = a.assign_add(1.0)
    with tf.Session() as sess:
        sess.run(a.initializer)
        sess.run(inc)
        with pytest.raises(InvalidArgumentError, match="placeholder tensor 'p'"):
            sess.run(tf.global_variables_initializer())
        assert sess.run(a) == 2.0  # the failed initializer run did not reset a
        sess.run(tf.global_variables_initializer(), {p: 4.0})
        assert sess.run([a, b]) == [1.0, 8.0]


def test_error_in_one_session_does_not_affect_another(net):
    x, w, y, inc, init = net
    s1, s2 = tf.Session(), tf.Session()
    try:
        s1.run(init)
        s2.run(init)
        with pytest.raises(InvalidArgumentError):
            s1.run([inc, y], {x: np.ones((1, 2))})
        s2.run(inc)
        np.testing.assert_array_equal(s1.run(w), np.ones((3, 2)))
        np.testing.assert_array_equal(s2.run(w), np.full((3, 2), 2.0))
    finally:
        s1.close()
        s2.close()


def test_graph_usable_after_build_errors():
    x = tf.placeholder(tf.float32, shape=(None, 3))
    for bad in (lambda: tf.matmul(x, tf.ones((2, 2))), lambda: x + tf.ones((4,)),
                lambda: tf.reduce_sum(x, axis=5)):
        with pytest.raises(RustgradError):
            bad()
    y = tf.reduce_sum(tf.matmul(x, tf.ones((3, 1))))
    with tf.Session() as sess:
        assert sess.run(y, {x: np.ones((2, 3))}) == 6.0


def test_rustgrad_errors_are_not_internal_errors():
    """None of the above is a panic turned InternalError."""
    x = tf.placeholder(tf.float32, shape=(None, 3))
    with pytest.raises(RustgradError) as info:
        tf.matmul(x, tf.ones((4, 4)))
    assert not isinstance(info.value, rustgrad.errors.InternalError)
