"""torch's in-place unary methods (``x.exp_()``, ``x.relu_()``, ``x.neg_()``...): one for every
unary op of the table that is a ``Tensor`` method, writing the out-of-place result's bits into
the tensor, recorded on the tape, and refused where torch refuses them."""

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
    np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-6, atol=1e-8)


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


def test_ops_that_keep_integers_run_in_place_on_integer_tensors():
    i = rustgrad.tensor([[1, -2], [3, -4]])
    i.neg_().abs_()
    assert i.dtype == rustgrad.int64
    np.testing.assert_array_equal(i.numpy(), [[1, 2], [3, 4]])
