"""tf.Assert, the tf.assert_* checks and tf.check_numerics: TF1's errors, at graph construction
when the answer is known statically, else InvalidArgumentError when the run reaches them.

Expected messages come from tests/fixtures/tf1/debug_ops.json, written by TF's tf.compat.v1
(tools/tf_reference/make_debug_fixtures.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import rustgrad.compat.v1 as tf
from rustgrad.errors import DTypeError, InvalidArgumentError, RustgradError

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "tf1" / "debug_ops.json").read_text())["assert"]
CLASSES = {"InvalidArgumentError": InvalidArgumentError, "TypeError": TypeError, "ValueError": ValueError}


def ph(dtype, shape=None, name=None):
    return tf.placeholder(dtype, shape, name=name)


# name -> (build, feed by placeholder name); the same cases as the fixture script's.
CASES = {
    "assert_false_mixed": (
        lambda: tf.Assert(ph(tf.bool, [], "cond"), ["x is", ph(tf.float32, [None], "x"), "and", 3]),
        {"cond": False, "x": np.array([1.0, 0.5, 2.0, 4.0], np.float32)}),
    "assert_false_summarize_1": (
        lambda: tf.Assert(ph(tf.bool, [], "cond"), [ph(tf.int32, [None], "x")], summarize=1),
        {"cond": False, "x": np.array([1, 2, 3], np.int32)}),
    "assert_true": (lambda: tf.Assert(ph(tf.bool, [], "cond"), ["never"]), {"cond": True}),
    "assert_condition_vector": (
        lambda: tf.Assert(ph(tf.bool, [None], "cond"), ["v"]), {"cond": np.array([True, False])}),
    "assert_condition_int": (lambda: tf.Assert(ph(tf.int32, [], "cond"), ["v"]), {}),
    "assert_equal_runtime": (
        lambda: tf.assert_equal(ph(tf.int32, [None], "x"), ph(tf.int32, [None], "y")),
        {"x": np.array([1, 2], np.int32), "y": np.array([1, 3], np.int32)}),
    "assert_equal_runtime_message": (
        lambda: tf.assert_equal(ph(tf.int32, [None], "x"), ph(tf.int32, [None], "y"), message="hello"),
        {"x": np.array([1, 2], np.int32), "y": np.array([1, 3], np.int32)}),
    "assert_equal_static": (lambda: tf.assert_equal(tf.constant([1, 2]), tf.constant([1, 3])), {}),
    "assert_none_equal_runtime": (
        lambda: tf.assert_none_equal(ph(tf.float32, [None], "x"), ph(tf.float32, [None], "y")),
        {"x": np.array([1, 2], np.float32), "y": np.array([1, 3], np.float32)}),
    "assert_less_runtime": (
        lambda: tf.assert_less(ph(tf.float32, [None], "x"), ph(tf.float32, [None], "y"), summarize=1),
        {"x": np.array([1, 4], np.float32), "y": np.array([2, 3], np.float32)}),
    "assert_less_equal_static": (
        lambda: tf.assert_less_equal(tf.constant([1.5, 4.0]), tf.constant(3.0), message="m"), {}),
    "assert_greater_runtime": (
        lambda: tf.assert_greater(ph(tf.int32, [None], "x"), 2), {"x": np.array([3, 1], np.int32)}),
    "assert_greater_equal_runtime": (
        lambda: tf.assert_greater_equal(ph(tf.int32, [None], "x"), 2), {"x": np.array([3, 1], np.int32)}),
    "assert_positive_runtime": (
        lambda: tf.assert_positive(ph(tf.float32, [None], "x")), {"x": np.array([1, -1], np.float32)}),
    "assert_positive_runtime_message": (
        lambda: tf.assert_positive(ph(tf.float32, [None], "x"), message="must be positive"),
        {"x": np.array([1, -1], np.float32)}),
    "assert_positive_static": (lambda: tf.assert_positive(tf.constant([1.0, -1.0])), {}),
    "assert_negative_runtime": (
        lambda: tf.assert_negative(ph(tf.int32, [None], "x")), {"x": np.array([-1, 0], np.int32)}),
    "assert_non_negative_runtime": (
        lambda: tf.assert_non_negative(ph(tf.int32, [None], "x")), {"x": np.array([-1, 0], np.int32)}),
    "assert_non_positive_runtime": (
        lambda: tf.assert_non_positive(ph(tf.int32, [None], "x")), {"x": np.array([1, 0], np.int32)}),
    "assert_rank_static": (lambda: tf.assert_rank(ph(tf.float32, [2, 3], "x"), 1), {}),
    "assert_rank_static_message": (lambda: tf.assert_rank(ph(tf.float32, [2, 3], "x"), 3, message="bad"), {}),
    "assert_rank_runtime": (
        lambda: tf.assert_rank(ph(tf.float32, None, "x"), 1), {"x": np.zeros((2, 3), np.float32)}),
    "assert_rank_at_least_static": (lambda: tf.assert_rank_at_least(ph(tf.float32, [2], "x"), 2), {}),
    "assert_rank_at_least_runtime": (
        lambda: tf.assert_rank_at_least(ph(tf.float32, None, "x"), 3), {"x": np.zeros((2, 3), np.float32)}),
    "assert_type": (lambda: tf.assert_type(ph(tf.float32, [2], "x"), tf.int32), {}),
    "assert_type_message": (lambda: tf.assert_type(ph(tf.float32, [2], "x"), tf.int32, message="m"), {}),
    "check_numerics_nan": (
        lambda: tf.check_numerics(ph(tf.float32, [None], "x"), "bad x"), {"x": np.array([1, np.nan], np.float32)}),
    "check_numerics_inf": (
        lambda: tf.check_numerics(ph(tf.float32, [None], "x"), "bad x"), {"x": np.array([1, np.inf], np.float32)}),
    "check_numerics_both": (
        lambda: tf.check_numerics(ph(tf.float64, [None], "x"), "both"), {"x": np.array([np.inf, np.nan])}),
    "verify_tensor_all_finite_nan": (
        lambda: tf.verify_tensor_all_finite(ph(tf.float32, [None], "x"), "msg"),
        {"x": np.array([np.nan], np.float32)}),
    "assert_summarize_invalid": (
        lambda: tf.Assert(ph(tf.bool, [], "cond"), ["v"], summarize=-2), {"cond": False}),
}


def _run_case(name: str):
    build, feed = CASES[name]
    g = tf.Graph()
    with g.as_default():
        op = build()
        feed_dict = {g.get_tensor_by_name(f"{k}:0"): v for k, v in feed.items()}
        with tf.Session() as sess:
            return op, sess.run(op, feed_dict)


@pytest.mark.parametrize("name", [n for n in CASES if FIXTURE[n]["type"] is not None])
def test_failed_checks_raise_tf1_errors(name):
    want = FIXTURE[name]
    with pytest.raises(RustgradError) as info:
        _run_case(name)
    assert isinstance(info.value, CLASSES[want["type"]]), (type(info.value), want["type"])
    assert str(info.value) == want["message"]


def test_an_assert_whose_condition_holds_gives_none():
    op, value = _run_case("assert_true")
    assert value is None
    assert op.type == FIXTURE["assert_true"]["op_type"] == "Assert"
    assert op.name == "Assert/Assert"
    assert op.outputs == []


def test_a_statically_right_rank_gives_a_no_op():
    with tf.Graph().as_default():
        op = tf.assert_rank(ph(tf.float32, [2, 3], "x"), 2)
        assert op.type == FIXTURE["assert_rank_static_true_type"]["op_type"] == "NoOp"
        assert op.name == "assert_rank/static_checks_determined_all_ok"
        with tf.Session() as sess:
            assert sess.run(op) is None


def test_statically_equal_constants_still_give_an_assert_op():
    with tf.Graph().as_default():
        op = tf.assert_equal(tf.constant([1, 2]), tf.constant([1, 2]))
        assert op.type == FIXTURE["assert_equal_static_true_type"]["op_type"]
        with tf.Session() as sess:
            assert sess.run(op) is None


def test_assert_ops_are_named_as_tf1_names_them():
    with tf.Graph().as_default():
        eq = tf.assert_equal(ph(tf.int32, [None], "x"), ph(tf.int32, [None], "y"))
        pos = tf.assert_negative(ph(tf.int32, [None], "z"))
    assert eq.name == "assert_equal_1/Assert/Assert"
    assert pos.name == "assert_negative/assert_less/Assert/Assert"


def test_a_failed_assert_changes_no_variable():
    with tf.Graph().as_default():
        v = tf.Variable(np.float32(1.0), name="v")
        ok = tf.placeholder(tf.bool, [], name="ok")
        check = tf.Assert(ok, ["not ok"])
        bump = tf.assign_add(v, 1.0)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(InvalidArgumentError, match=r"^assertion failed: \[not ok\]$"):
                sess.run([bump, check], {ok: False})
            assert sess.run(v) == 1.0
            sess.run([bump, check], {ok: True})
            assert sess.run(v) == 2.0


def test_check_numerics_passes_finite_values_and_their_gradient_through():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [3], name="x")
        checked = tf.check_numerics(x * x, "x squared")
        y = tf.reduce_sum(checked * x)
        (g,) = tf.gradients(y, [x])
        value = np.array([0.5, -2.0, 3.0])
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(checked, {x: value}), value * value)
            got = sess.run(g, {x: value})
            eps = 1e-6
            numeric = np.array([
                (sess.run(y, {x: value + eps * e}) - sess.run(y, {x: value - eps * e})) / (2 * eps)
                for e in np.eye(3)
            ])
    assert checked.op.type == "CheckNumerics"
    np.testing.assert_allclose(got, numeric, rtol=1e-6)
    np.testing.assert_allclose(got, 3 * value**2, rtol=1e-12)


def test_check_numerics_refuses_integer_tensors():
    want = FIXTURE["check_numerics_int"]
    with tf.Graph().as_default():
        with pytest.raises(DTypeError) as info:
            tf.check_numerics(ph(tf.int32, [None], "x"), "int")
    assert isinstance(info.value, TypeError)
    # TF lists its half-precision dtypes too, which rustgrad does not have.
    prefix = want["message"].split(":")[0]
    assert str(info.value).startswith(prefix + ": float32, float64"), str(info.value)


def test_an_assert_summarize_must_be_an_int():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="'summarize' must be an int, got 2.5"):
            tf.Assert(tf.constant(True), ["v"], summarize=2.5)


def test_assert_data_must_be_a_list():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="'data' must be a list of tensors, got str"):
            tf.Assert(tf.constant(True), "v")


def test_debugging_namespace_has_the_checks():
    for name in ("Assert", "assert_equal", "assert_positive", "assert_rank", "assert_type", "check_numerics"):
        assert getattr(tf.debugging, name) is getattr(tf, name)
    assert re.match(r"^assertion failed", FIXTURE["assert_equal_runtime"]["message"])


def test_the_gradient_through_check_numerics_is_checked_too():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        w = tf.placeholder(tf.float32, [2], name="w")
        checked = tf.check_numerics(x, "x checked")
        (g,) = tf.gradients(tf.reduce_sum(checked * w), [x])
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(g, {x: [1, 2], w: [3, 4]}), [3, 4])
            with pytest.raises(InvalidArgumentError) as info:
                sess.run(g, {x: [1, 2], w: [1, np.inf]})
    # TF 1.15 on Python 3 writes the message as bytes (b'x checked'); rustgrad writes the text.
    assert str(info.value) == (
        "Not a number (NaN) or infinity (Inf) values detected in gradient. x checked : Tensor had Inf values"
    )


SHAPES_CASES = {
    "assert_shapes_static": (
        lambda: tf.debugging.assert_shapes([(ph(tf.float32, [2, 3], "x"), ("N", "Q")),
                                            (ph(tf.float32, [3], "y"), ("N",))]), {}),
    "assert_shapes_rank_static": (lambda: tf.debugging.assert_shapes([(ph(tf.float32, [2, 3], "x"), ("N",))]), {}),
    "assert_shapes_runtime": (
        lambda: tf.debugging.assert_shapes([(ph(tf.float32, [None, 3], "x"), ("N", "Q")),
                                            (ph(tf.float32, [None], "y"), ("N",))]),
        {"x": np.zeros((2, 3), np.float32), "y": np.zeros((3,), np.float32)}),
}
CASES.update(SHAPES_CASES)


@pytest.mark.parametrize("name", list(SHAPES_CASES))
def test_assert_shapes_raises_tf1_errors(name):
    want = FIXTURE[name]
    with pytest.raises(RustgradError) as info:
        _run_case(name)
    assert isinstance(info.value, CLASSES[want["type"]]), (type(info.value), want["type"])
    assert str(info.value) == want["message"]


def test_assert_shapes_that_hold_run_without_error():
    with tf.Graph().as_default():
        x = ph(tf.float32, [None, 3], "x")
        y = ph(tf.float32, None, "y")
        op = tf.debugging.assert_shapes({x: ("N", 3), y: (..., "N")})
        with tf.Session() as sess:
            assert sess.run(op, {x: np.zeros((2, 3), np.float32), y: np.zeros((4, 2), np.float32)}) is None
            with pytest.raises(InvalidArgumentError, match=r"Tensor y:0 dimension\] \[-1\] \[must have size\] \[2\]"):
                sess.run(op, {x: np.zeros((2, 3), np.float32), y: np.zeros((2, 4), np.float32)})


def test_assert_rank_in_accepts_any_listed_rank():
    with tf.Graph().as_default():
        x = ph(tf.float32, None, "x")
        op = tf.assert_rank_in(x, [1, 3])
        with tf.Session() as sess:
            assert sess.run(op, {x: np.zeros((2,), np.float32)}) is None
            with pytest.raises(InvalidArgumentError,
                               match=r"^assertion failed: \[\] \[Tensor x:0 must have rank in\] \[1\] \[3\] "
                                     r"\[Received shape: \] \[2 2\]$"):
                sess.run(op, {x: np.zeros((2, 2), np.float32)})
