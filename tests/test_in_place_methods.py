"""torch's in-place methods generated from the op table: ``x.exp_()``, ``x.relu_()``, ``x.neg_()``
(every unary method) and ``x.pow_(2)``, ``x.lerp_(end, w)``... (the ops whose declaration says torch
has ``Tensor.NAME_``). Each writes the out-of-place result's bits into the tensor, is recorded on
the tape, and is refused where torch refuses it."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
from rustgrad import errors
from rustgrad._rustgrad import ops

METHOD_UNARY = sorted(
    name for spec in ops.values() if spec.kind == "unary" and spec.torch_front[1]
    for name in [spec.name, *spec.torch_aliases]
)
# Inside every op's domain but acosh's (NaN there, compared bitwise like the rest), with a
# negative element, a zero and values either side of the rounding ties.
VALUES = np.array([[0.25, -0.5, 0.0], [0.75, 2.5, -1.5]], dtype=np.float32)


def bits(t: rustgrad.Tensor) -> np.ndarray:
    return t.detach().numpy().view(np.uint32)


def test_every_unary_method_has_its_in_place_form():
    assert {"exp", "relu", "sigmoid", "neg", "negative", "abs", "sqrt", "arcsin", "fix"} <= set(METHOD_UNARY)
    assert all(callable(getattr(rustgrad.Tensor, f"{name}_", None)) for name in METHOD_UNARY)


@pytest.mark.parametrize("name", METHOD_UNARY)
def test_the_in_place_form_writes_the_bits_of_the_out_of_place_one(name):
    x = rustgrad.tensor(VALUES)
    expected = bits(getattr(x, name)())
    version = x._version
    out = getattr(x, f"{name}_")()
    assert out is x
    assert x._version > version
    np.testing.assert_array_equal(bits(x), expected)


@pytest.mark.parametrize(("name", "reference"), [
    ("exp", np.exp), ("neg", np.negative), ("sqrt", np.sqrt), ("relu", lambda v: np.maximum(v, 0)),
    ("floor", np.floor), ("reciprocal", np.reciprocal),
])
def test_the_in_place_form_matches_numpy(name, reference):
    values = np.abs(VALUES) + 0.5 if name in ("sqrt", "reciprocal") else VALUES
    x = rustgrad.tensor(values)
    getattr(x, f"{name}_")()
    np.testing.assert_allclose(x.numpy(), reference(values.astype(np.float64)), rtol=2e-6)


def test_an_in_place_op_on_a_slice_writes_only_the_slice():
    x = rustgrad.tensor(VALUES)
    x[1].neg_()
    np.testing.assert_array_equal(x.numpy(), np.stack([VALUES[0], -VALUES[1]]))


CLOSE = {"rtol": 1e-6, "atol": 1e-8}  # float64 gradients against central differences


def elementwise_numeric_grad(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences of an elementwise numpy function, each element on its own."""
    return (f(x + eps) - f(x - eps)) / (2 * eps)


@pytest.mark.parametrize(("name", "numpy_op"), [
    ("sin", np.sin),  # its rule reads the input, which the write overwrites
    ("exp", np.exp),  # its rule reads the output
    ("tanh", np.tanh),
])
def test_gradients_flow_through_an_in_place_op_on_a_non_leaf(name, numpy_op):
    w0 = VALUES.astype(np.float64)
    w = rustgrad.tensor(w0, requires_grad=True)
    a = w * 3.0
    getattr(a, f"{name}_")()
    assert a.grad_fn is not None
    (a * a).sum().backward()
    expected = elementwise_numeric_grad(lambda v: numpy_op(v * 3.0) ** 2, w0)
    np.testing.assert_allclose(w.grad.numpy(), expected, **CLOSE)


def test_overwriting_a_value_saved_for_backward_fails_at_backward_as_in_torch():
    w = rustgrad.tensor(VALUES.astype(np.float64), requires_grad=True)
    a = w * 1.0
    b = a.sin()  # saves a
    a.exp_()
    with pytest.raises(errors.RustgradError, match="modified by an inplace operation"):
        b.sum().backward()


def test_a_leaf_that_requires_grad_is_refused_and_left_as_it_was():
    w = rustgrad.tensor(VALUES, requires_grad=True)
    with pytest.raises(errors.GradientError, match=r"relu_: a leaf Variable that requires grad"):
        w.relu_()
    np.testing.assert_array_equal(w.detach().numpy(), VALUES)
    with rustgrad.no_grad():
        w.relu_()
    np.testing.assert_array_equal(w.detach().numpy(), np.maximum(VALUES, 0))


def test_a_float_result_is_refused_for_an_integer_tensor_which_is_left_as_it_was():
    i = rustgrad.tensor([[1, -2], [3, 4]])
    with pytest.raises(errors.RustgradError, match=r"exp_: result type float32 can't be cast to the desired "
                                                    r"output type int64") as raised:
        i.exp_()
    assert isinstance(raised.value, TypeError)
    np.testing.assert_array_equal(i.numpy(), [[1, -2], [3, 4]])


TABLE_IN_PLACE = {
    # name: the other arguments, after this tensor
    "pow": (np.array([2.0, 0.5, 3.0], dtype=np.float32),),
    "atan2": (np.array([1.0, -2.0, 0.5], dtype=np.float32),),
    "hypot": (np.array([1.0, -2.0, 0.5], dtype=np.float32),),
    "fmod": (np.array([0.75, -2.0, 0.5], dtype=np.float32),),
    "copysign": (np.array([-1.0, 2.0, -0.0], dtype=np.float32),),
    "xlogy": (np.array([1.5, 2.0, 0.5], dtype=np.float32),),
    "clamp_min": (np.array([0.5, 0.5, 0.5], dtype=np.float32),),
    "clamp_max": (np.array([0.5, 0.5, 0.5], dtype=np.float32),),
    "lerp": (np.array([1.0, 2.0, 3.0], dtype=np.float32), 0.25),
    "nan_to_num": (0.0, 7.0, -7.0),
}
TABLE_VALUES = np.array([1.5, np.nan, -np.inf], dtype=np.float32)


def test_the_table_says_which_ops_have_an_in_place_method():
    flagged = {name for name, spec in ops.items() if spec.kind == "table" and spec.torch_front[3]}
    assert flagged == set(TABLE_IN_PLACE)
    assert all(callable(getattr(rustgrad.Tensor, f"{name}_", None)) for name in flagged | {"arctan2"})
    assert not hasattr(rustgrad.Tensor, "matmul_") and not hasattr(rustgrad.Tensor, "sum_")


def as_argument(value):
    return rustgrad.tensor(value) if isinstance(value, np.ndarray) else value


@pytest.mark.parametrize("name", sorted(TABLE_IN_PLACE))
def test_a_table_op_in_place_writes_the_bits_of_the_out_of_place_call(name):
    x = rustgrad.tensor(TABLE_VALUES)
    arguments = [as_argument(a) for a in TABLE_IN_PLACE[name]]
    expected = bits(getattr(x, name)(*arguments))
    assert getattr(x, f"{name}_")(*arguments) is x
    np.testing.assert_array_equal(bits(x), expected)


def test_pow_in_place_matches_numpy_with_a_number_or_a_tensor_exponent():
    base = np.array([0.5, 2.0, 3.0], dtype=np.float32)
    x = rustgrad.tensor(base)
    x.pow_(2)
    np.testing.assert_array_equal(bits(x), bits(rustgrad.tensor(base) ** 2))
    np.testing.assert_allclose(x.numpy(), base.astype(np.float64) ** 2, rtol=1e-7)
    exponent = np.array([1.5, -1.0, 0.5], dtype=np.float32)
    x.pow_(rustgrad.tensor(exponent))
    np.testing.assert_allclose(x.numpy(), (base.astype(np.float64) ** 2) ** exponent, rtol=2e-6)


def test_a_float_number_is_refused_for_an_integer_tensor_and_an_integer_one_is_not():
    i = rustgrad.tensor([4, 9])
    with pytest.raises(errors.DTypeError, match="pow_: result type float32 can't be cast to the desired output "
                                                "type int64"):
        i.pow_(0.5)
    np.testing.assert_array_equal(i.numpy(), [4, 9])
    i.pow_(2)
    assert i.dtype == rustgrad.int64
    np.testing.assert_array_equal(i.numpy(), [16, 81])


def test_an_in_place_result_must_keep_the_tensor_s_shape():
    x = rustgrad.ones(3)
    with pytest.raises(errors.ShapeError, match=r"pow_: output with shape \[3\] doesn't match the broadcast "
                                                r"shape \[2, 3\]") as raised:
        x.pow_(rustgrad.full((2, 3), 2.0))
    assert isinstance(raised.value, RuntimeError)
    np.testing.assert_array_equal(x.numpy(), np.ones(3))


def test_gradients_flow_through_pow_and_lerp_in_place():
    w0 = np.array([0.5, 1.25, 2.0])
    e0 = np.array([1.5, -0.5, 2.0])
    w = rustgrad.tensor(w0, requires_grad=True)
    end = rustgrad.tensor(e0, requires_grad=True)
    a = w * 1.0
    a.pow_(3).lerp_(end, 0.25)
    (a * a).sum().backward()
    f = lambda v, e: (0.75 * v ** 3 + 0.25 * e) ** 2  # noqa: E731
    np.testing.assert_allclose(w.grad.numpy(), elementwise_numeric_grad(lambda v: f(v, e0), w0), **CLOSE)
    np.testing.assert_allclose(end.grad.numpy(), elementwise_numeric_grad(lambda e: f(w0, e), e0), rtol=1e-6)


def test_scatter_with_a_float_value_still_casts_it_to_an_integer_tensor_s_dtype():
    x = rustgrad.zeros(3, dtype=rustgrad.int64)
    x.scatter_(0, rustgrad.tensor([1]), value=2.7)
    np.testing.assert_array_equal(x.numpy(), [0, 2, 0])
    x.scatter_(0, rustgrad.tensor([2]), -1.5)
    np.testing.assert_array_equal(x.numpy(), [0, 2, -1])


def test_ops_that_keep_integers_run_in_place_on_integer_tensors():
    i = rustgrad.tensor([[1, -2], [3, -4]])
    i.neg_().abs_()
    assert i.dtype == rustgrad.int64
    np.testing.assert_array_equal(i.numpy(), [[1, 2], [3, 4]])


T1 = np.array([[0.5, -1.25, 3.0], [2.0, 0.1, -0.7]], dtype=np.float32)
T2 = np.array([[1.5, 0.25, -2.0], [0.3, 4.0, 1.1]], dtype=np.float32)


@pytest.mark.parametrize("value", [1, 0.3, -2])
def test_addcmul_and_addcdiv_give_numpy_s_float32_bits_in_torch_s_order(value):
    base = VALUES
    scaled = T1 if value == 1 else T1 * np.float32(value)
    expected_mul = base + scaled * T2
    expected_div = base + scaled / T2
    x, t1, t2 = rustgrad.tensor(base), rustgrad.tensor(T1), rustgrad.tensor(T2)
    np.testing.assert_array_equal(bits(rustgrad.addcmul(x, t1, t2, value=value)), expected_mul.view(np.uint32))
    np.testing.assert_array_equal(bits(x.addcdiv(t1, t2, value=value)), expected_div.view(np.uint32))
    assert x.addcmul_(t1, t2, value=value) is x
    np.testing.assert_array_equal(bits(x), expected_mul.view(np.uint32))
    x.addcdiv_(t1, t2, value=value)
    np.testing.assert_array_equal(bits(x), (expected_mul + scaled / T2).view(np.uint32))


def test_gradients_flow_through_addcmul_and_addcdiv_to_every_tensor():
    x0, a0, b0 = VALUES.astype(np.float64), T1.astype(np.float64), T2.astype(np.float64)
    x, a, b = (rustgrad.tensor(v, requires_grad=True) for v in (x0, a0, b0))
    out = rustgrad.addcmul(x, a, b, value=0.5).addcdiv(a, b, value=-2)
    (out * out).sum().backward()

    def f(xv, av, bv):
        return (xv + 0.5 * av * bv - 2 * av / bv) ** 2

    np.testing.assert_allclose(x.grad.numpy(), elementwise_numeric_grad(lambda v: f(v, a0, b0), x0), **CLOSE)
    np.testing.assert_allclose(a.grad.numpy(), elementwise_numeric_grad(lambda v: f(x0, v, b0), a0), **CLOSE)
    np.testing.assert_allclose(b.grad.numpy(), elementwise_numeric_grad(lambda v: f(x0, a0, v), b0), **CLOSE)


def test_addcdiv_of_two_integer_tensors_and_a_value_that_is_not_a_number_are_refused():
    x = rustgrad.zeros(2)
    i = rustgrad.tensor([1, 2])
    with pytest.raises(errors.DTypeError, match="addcdiv_: integer division with addcdiv is not supported"):
        x.addcdiv_(i, i)
    with pytest.raises(errors.DTypeError, match="addcdiv: integer division"):
        rustgrad.addcdiv(x, i, i)
    np.testing.assert_array_equal(x.numpy(), [0, 0])
    with pytest.raises(errors.ArgumentTypeError, match="addcmul_: argument 'value' must be a number, got str"):
        x.addcmul_(i, i, value="2")
    np.testing.assert_array_equal(x.addcmul(i, i, value=np.float32(0.5)).numpy(), [0.5, 2.0])
