"""Details of each front: Python numbers that do not fit a static op's dtype raise TF1's
TypeError naming the op; in-place fills name their tape nodes as torch does; integer inputs
of float-only table ops compute in float32 on torch's front and raise on TF1's."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
import rustgrad.compat.v1 as tf
from rustgrad import errors


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


# ------------------------------------------------------------------ Python numbers in static ops


def _bool():
    return tf.placeholder(tf.bool, [2])


def _int32():
    return tf.placeholder(tf.int32, [2])


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: tf.equal(_bool(), 0.5), r"equal: Expected bool, got 0\.5 of type 'float' instead.*parameter 'y'"),
        (lambda: tf.not_equal(_bool(), 1), r"not_equal: Expected bool, got 1 of type 'int' instead"),
        (lambda: tf.logical_and(_bool(), 0.5), r"logical_and: Expected bool, got 0\.5"),
        (lambda: tf.add(_int32(), 0.5), r"add: Expected int32, got 0\.5 of type 'float' instead.*parameter 'y'"),
        (lambda: tf.subtract(0.5, _int32()), r"subtract: Expected int32, got 0\.5.*parameter 'x'"),
        (lambda: _int32() + 0.5, r"add: Expected int32, got 0\.5"),
        (lambda: 2.5 * _int32(), r"multiply: Expected int32, got 2\.5.*parameter 'x'"),
        (lambda: tf.equal(_int32(), 2.0), r"equal: Expected int32, got 2\.0 of type 'float'"),
        (lambda: tf.maximum(_int32(), 1.5), r"maximum: Expected int32, got 1\.5"),
        (lambda: tf.pow(_int32(), 0.5), r"pow: Expected int32, got 0\.5"),
        (lambda: tf.where(_bool(), _int32(), 0.5), r"where: Expected int32, got 0\.5"),
        (lambda: tf.clip_by_value(_int32(), 0.5, 2), r"clip_by_value: Expected int32, got 0\.5.*'clip_value_min'"),
        (lambda: tf.add(_int32(), 2**40), r"add: Expected int32, got 1099511627776 of type 'int'"),
    ],
)
def test_a_python_number_that_does_not_fit_the_op_dtype_raises_type_error(build, message):
    with pytest.raises(errors.DTypeError, match=message) as info:
        build()
    assert isinstance(info.value, TypeError)
    assert "cast the tensor with tf.cast" in str(info.value)


def test_python_numbers_that_fit_take_the_tensor_dtype():
    b, i = _bool(), _int32()
    eq, plus = tf.equal(b, True), tf.add(i, 2)
    assert (eq.dtype, plus.dtype) == (tf.bool, tf.int32)
    with tf.Session() as sess:
        got_eq, got_plus = sess.run([eq, plus], {b: [True, False], i: [1, 2]})
    np.testing.assert_array_equal(got_eq, [True, False])
    np.testing.assert_array_equal(got_plus, np.array([3, 4], np.int32))


def test_a_failed_conversion_adds_no_node():
    b = _bool()
    before = len(tf.get_default_graph().get_operations())
    with pytest.raises(TypeError):
        tf.equal(b, 0.5)
    assert len(tf.get_default_graph().get_operations()) == before


# ------------------------------------------------------------------ in-place fills on the tape


def test_zero_on_a_non_leaf_records_zero_backward_and_passes_zeros_back():
    x = rustgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y.zero_()
    assert y.grad_fn.name() == "ZeroBackward0"
    (y + x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(y.detach().numpy(), [0.0, 0.0, 0.0])


def test_fill_with_a_number_records_fill_backward():
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.fill_(3.5)
    assert y.grad_fn.name() == "FillBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(y.detach().numpy(), [3.5, 3.5])


def test_fill_with_a_tensor_value_passes_it_the_summed_gradient():
    x = rustgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    value = rustgrad.tensor(4.0, requires_grad=True)
    y = x * 2
    y.fill_(value)
    assert y.grad_fn.name() == "FillBackward0"
    (y * rustgrad.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert value.grad.item() == 6.0
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])


def test_fill_of_a_float_tensor_with_an_int_tensor_casts_the_value():
    y = rustgrad.zeros(3)
    y.fill_(rustgrad.tensor(2))
    assert y.dtype == rustgrad.float32
    np.testing.assert_array_equal(y.numpy(), [2.0, 2.0, 2.0])


# ------------------------------------------------------------------ integer inputs of float-only ops

PROMOTING = [
    ("atan2", np.arctan2),
    ("arctan2", np.arctan2),
    ("xlogy", lambda a, b: np.where(a == 0, 0.0, a * np.log(b.astype(np.float64)))),
    ("copysign", np.copysign),
]


@pytest.mark.parametrize("name, reference", PROMOTING, ids=[n for n, _ in PROMOTING])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_torch_front_computes_integer_operands_of_float_ops_in_float32(name, reference, dtype):
    a_np = np.array([[0, 1, 2], [3, 1, 0]]).astype(dtype)
    b_np = np.array([1, 2, 1]).astype(dtype)
    a, b = rustgrad.from_numpy(a_np), rustgrad.from_numpy(b_np)
    for result in (getattr(rustgrad, name)(a, b), getattr(a, name)(b)):
        assert result.dtype == rustgrad.float32
        expected = reference(a_np.astype(np.float64), b_np.astype(np.float64))
        np.testing.assert_allclose(result.numpy(), expected.astype(np.float32), rtol=1e-6)


def test_an_integer_and_a_float_operand_promote_to_the_float_dtype():
    out = rustgrad.atan2(rustgrad.tensor([1, 2]), rustgrad.tensor([1.0, 1.0], dtype=rustgrad.float64))
    assert out.dtype == rustgrad.float64
    np.testing.assert_allclose(out.numpy(), np.arctan2([1, 2], [1.0, 1.0]))


@pytest.mark.parametrize("name", ["hypot", "logaddexp", "lerp"])
def test_float_ops_torch_refuses_for_integers_still_raise(name):
    i = rustgrad.tensor([3, 4])
    args = (i, i, i) if name == "lerp" else (i, i)
    with pytest.raises(errors.DTypeError, match=rf"{name}: expected a float tensor but got int64"):
        getattr(rustgrad, name)(*args)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda x: tf.atan2(x, x), r"Input 'y' has type int32|int32"),
        (lambda x: tf.math.xlogy(x, x), r"int32"),
    ],
)
def test_tf1_front_refuses_integer_operands_of_float_ops(build, message):
    x = tf.placeholder(tf.int32, [2])
    with pytest.raises(errors.DTypeError, match=message):
        build(x)
