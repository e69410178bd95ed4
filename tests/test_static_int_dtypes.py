"""Integer dtypes (int64, int32, uint8) and bool in static graphs, which follow TF1
(docs/dtypes.md): the promotion table written out entry by entry (two different dtypes are
refused when the node is built), tf.cast between every pair, TF1's dtypes of constants and
numbers, an integer variable, integer division against numpy, and no gradient into integers.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from test_int_dtypes import NAMES, NUMPY, divisor, dt, int_arrays, sample

import rustgrad.compat.v1 as tf
from rustgrad import errors

# ---------------------------------------------------------------- the static (TF1) tables

# Same dtype: the result; different dtypes: refused when the node is built.
STATIC_ADD = {"float32": "float32", "float64": "float64", "int64": "int64", "int32": "int32", "uint8": "uint8",
              "bool": "error"}
STATIC_TRUEDIV = {"float32": "float32", "float64": "float64", "int64": "float64", "int32": "float64",
                  "uint8": "float32", "bool": "error"}
STATIC_FLOORDIV = {"float32": "float32", "float64": "float64", "int64": "int64", "int32": "int32",
                   "uint8": "uint8", "bool": "error"}
STATIC_EQUAL = {name: "bool" for name in NAMES}

STATIC_OPS = {
    "add": (tf.add, STATIC_ADD, np.add),
    "truediv": (tf.truediv, STATIC_TRUEDIV, np.true_divide),
    "floordiv": (tf.floordiv, STATIC_FLOORDIV, np.floor_divide),
    "equal": (tf.equal, STATIC_EQUAL, np.equal),
}


@pytest.mark.parametrize("op", list(STATIC_OPS))
@pytest.mark.parametrize("a", NAMES)
@pytest.mark.parametrize("b", NAMES)
def test_static_promotion_table(op, a, b):
    fn, same_dtype_table, reference = STATIC_OPS[op]
    expected = same_dtype_table[a] if a == b else "error"
    with tf.Graph().as_default():
        x, y = tf.placeholder(dt(a), shape=(4,)), tf.placeholder(dt(b), shape=(4,))
        if expected == "error":
            with pytest.raises(errors.DTypeError):
                fn(x, y)
            return
        out = fn(x, y)
        assert out.dtype is dt(expected)
        with tf.Session() as sess:
            value = sess.run(out, {x: sample(a), y: divisor(b)})
    assert value.dtype == NUMPY[expected]
    exact = reference(sample(a).astype(np.float64), divisor(b).astype(np.float64))
    np.testing.assert_allclose(value.astype(np.float64), exact.astype(NUMPY[expected]).astype(np.float64),
                               rtol=1e-7)


def test_static_mixed_dtypes_raise_tf_errors_at_build():
    with tf.Graph().as_default():
        i, f = tf.placeholder(tf.int32, shape=(2,)), tf.placeholder(tf.float32, shape=(2,))
        with pytest.raises(errors.DTypeError, match="Input 'y' of 'AddV2' Op has type float32 that does not match "
                                                    "type int32 of argument 'x'"):
            tf.add(i, f)
        with pytest.raises(errors.DTypeError, match="Tensor conversion requested dtype int32 for Tensor with dtype "
                                                    "float32"):
            i + f
        with pytest.raises(errors.DTypeError, match="Input 'e' of 'Select' Op has type float32 that does not match "
                                                    "type int32 of argument 't'"):
            tf.where(tf.equal(i, i), i, f)
        with pytest.raises(errors.DTypeError, match="Expected int32, got 0.5 of type 'float' instead."):
            i * 0.5
        with pytest.raises(errors.DTypeError, match="Sin: Value passed to parameter 'x' has DataType int32"):
            tf.sin(i)


@pytest.mark.parametrize("source", NAMES)
@pytest.mark.parametrize("target", NAMES)
def test_tf_cast_between_every_pair(source, target):
    a = sample(source) if source != "float32" else np.array([0.0, 1.9, 2.5, 7.25], np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(dt(source), shape=(None,))
        out = tf.cast(x, dt(target))
        assert out.dtype is dt(target)
        with tf.Session() as sess:
            value = sess.run(out, {x: a})
    np.testing.assert_array_equal(value, a.astype(NUMPY[target]))


def test_static_constants_and_numbers_take_tf1_dtypes():
    with tf.Graph().as_default():
        assert tf.constant(1).dtype is tf.int32
        assert tf.constant([1, 2**40]).dtype is tf.int64
        assert tf.constant([1.0]).dtype is tf.float32
        assert tf.constant(np.array([1], np.int64)).dtype is tf.int64
        assert tf.constant(np.array([1], np.uint8)).dtype is tf.uint8
        assert tf.constant(True).dtype is tf.bool
        assert tf.constant(3, dtype=tf.float64).dtype is tf.float64
        assert tf.constant(1, shape=(2, 2)).dtype is tf.int32 and tf.constant(0.5, shape=(2,)).dtype is tf.float32
        with pytest.raises(errors.DTypeError, match="Expected int32, got 2.5 of type 'float' instead."):
            tf.constant(2.5, dtype=tf.int32)
        i = tf.placeholder(tf.int64, shape=(3,))
        assert (i + 1).dtype is tf.int64 and (2 * i).dtype is tf.int64 and (i ** 2).dtype is tf.int64
        assert tf.abs(i).dtype is tf.int64 and tf.nn.relu(i).dtype is tf.int64
        assert tf.int32.is_integer and not tf.int32.is_floating and tf.float32.is_floating
        assert tf.as_dtype("int64") is tf.int64 and tf.int32.base_dtype is tf.int32
        assert tf.uint8.as_numpy_dtype is np.uint8 and tf.int64.name == "int64"


def test_an_integer_variable_counter_stays_an_integer():
    with tf.Graph().as_default():
        step = tf.Variable(0)
        increment = step.assign_add(1)
        assert step.dtype is tf.int32
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(increment)
            sess.run(increment)
            value = sess.run(step)
    assert value == 2 and value.dtype == np.int32 and repr(value.item()) == "2"


@given(a=int_arrays(np.int32, (5,)), b=int_arrays(np.int32, (5,), nonzero=True))
def test_static_integer_division_values_match_numpy(a, b):
    with tf.Graph().as_default():
        x, y = tf.placeholder(tf.int32, shape=(5,)), tf.placeholder(tf.int32, shape=(5,))
        outs = [x // y, x % y, x / y, tf.floormod(x, 3), tf.div(x, y), tf.reduce_sum(x), tf.reduce_mean(x)]
        with tf.Session() as sess:
            floor, mod, true, mod3, div, total, mean = sess.run(outs, {x: a, y: b})
    np.testing.assert_array_equal(floor, a // b)
    np.testing.assert_array_equal(mod, a % b)
    np.testing.assert_allclose(true, a.astype(np.float64) / b, rtol=1e-15)
    assert true.dtype == np.float64
    np.testing.assert_array_equal(mod3, a % 3)
    np.testing.assert_array_equal(div, a // b)
    with np.errstate(all="ignore"):
        assert total == a.sum(dtype=np.int32)
    assert mean == int(np.int64(a.astype(np.int64).sum().astype(np.int32)) / 5)  # truncated, as TF


def test_tf1_division_names():
    with tf.Graph().as_default():
        x = tf.constant([7, -7])
        outs = [tf.math.floordiv(x, 2), tf.math.floormod(x, 2), tf.mod(x, 2), tf.div(x, 2), tf.math.truediv(x, 2),
                tf.div(tf.constant([7.0]), 2.0)]
        with tf.Session() as sess:
            floor, mod, mod2, div, true, real = sess.run(outs)
    assert floor.tolist() == [3, -4] and mod.tolist() == [1, 1] and mod2.tolist() == [1, 1]
    assert div.tolist() == [3, -4] and div.dtype == np.int32
    assert true.tolist() == [3.5, -3.5] and true.dtype == np.float64 and real.tolist() == [3.5]


def test_static_integer_division_by_zero_raises_at_run():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, shape=(2,))
        out = x // tf.constant([1, 0])
        with tf.Session() as sess, pytest.raises(errors.DivisionByZeroError, match="ZeroDivisionError"):
            sess.run(out, {x: [3, 4]})


def test_gradients_never_flow_into_integer_tensors():
    with tf.Graph().as_default():
        f = tf.placeholder(tf.float32, shape=(3,))
        i = tf.placeholder(tf.int32, shape=(3,))
        through_cast = tf.cast(tf.cast(f, tf.int32), tf.float32)
        y = tf.reduce_sum(f * tf.cast(i, tf.float32) + through_cast)
        grad_f, grad_i = tf.gradients(y, [f, i])
        assert grad_i is None
        with tf.Session() as sess:
            value = sess.run(grad_f, {f: [0.5, 1.5, 2.5], i: [1, 2, 3]})
    np.testing.assert_array_equal(value, [1.0, 2.0, 3.0])  # nothing flows back through the cast to int
