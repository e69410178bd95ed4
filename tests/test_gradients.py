"""Gradients of every differentiable op, verified with rustgrad.autograd.gradcheck (float64).

Also proves gradcheck itself is not a rubber stamp: it must reject wrong backwards.
"""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
from rustgrad.autograd import Function, GradcheckError, gradcheck


def leaf(a):
    a = np.asarray(a, dtype=np.float64)
    return rustgrad.tensor(a, dtype=rustgrad.float64, requires_grad=True)


def uniform(shape, low=-2.0, high=2.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def away_from(shape, points=(0.0,), margin=0.15, seed=0):
    """Values in [-2, 2] at least `margin` away from each of `points` (kinks of abs/relu/clamp)."""
    a = uniform(shape, seed=seed)
    for p in points:
        close = np.abs(a - p) < margin
        a[close] = p + np.where(a[close] >= p, margin, -margin) * 2
    return a


def positive(shape, seed=0):
    return uniform(shape, 0.3, 2.0, seed)


MASK = np.array(
    [[True, False, True, False], [False, False, True, True], [True, True, False, False]]
)


def arange_3x2():
    return rustgrad.arange(0.0, 6.0, 1.0, dtype=rustgrad.float64).reshape(3, 2)


# name -> (fn, list of numpy input arrays)
CASES = {
    # elementwise binary, same shape and broadcast
    "add": (lambda a, b: a + b, [uniform((3, 4)), uniform((3, 4), seed=1)]),
    "sub": (lambda a, b: a - b, [uniform((3, 4)), uniform((3, 4), seed=1)]),
    "mul": (lambda a, b: a * b, [uniform((3, 4)), uniform((3, 4), seed=1)]),
    "div": (lambda a, b: a / b, [uniform((3, 4)), away_from((3, 4), seed=1)]),
    "add_bcast_3x1_1x4": (lambda a, b: a + b, [uniform((3, 1)), uniform((1, 4), seed=1)]),
    "sub_bcast_2x3_3": (lambda a, b: a - b, [uniform((2, 3)), uniform((3,), seed=1)]),
    "mul_bcast_3x1_1x4": (lambda a, b: a * b, [uniform((3, 1)), uniform((1, 4), seed=1)]),
    "div_bcast_2x3_3": (lambda a, b: a / b, [uniform((2, 3)), away_from((3,), seed=1)]),
    "mul_bcast_0d": (lambda a, b: a * b, [uniform(()), uniform((2, 3), seed=1)]),
    "div_bcast_by_0d": (lambda a, b: a / b, [uniform((2, 3)), np.array(1.7)]),
    "mul_bcast_3d": (lambda a, b: a * b, [uniform((2, 1, 3)), uniform((4, 1), seed=1)]),
    "same_input_twice": (lambda a: a * a + a, [uniform((3,))]),
    # python scalars on either side
    "add_scalar": (lambda a: a + 2.5, [uniform((2, 3))]),
    "radd_scalar": (lambda a: 2.5 + a, [uniform((2, 3))]),
    "sub_scalar": (lambda a: a - 2.5, [uniform((2, 3))]),
    "rsub_scalar": (lambda a: 2.5 - a, [uniform((2, 3))]),
    "mul_scalar": (lambda a: a * 3.0, [uniform((2, 3))]),
    "rmul_scalar": (lambda a: 3.0 * a, [uniform((2, 3))]),
    "div_scalar": (lambda a: a / 3.0, [uniform((2, 3))]),
    "rdiv_scalar": (lambda a: 3.0 / a, [away_from((2, 3))]),
    "neg": (lambda a: -a, [uniform((2, 3))]),
    # pow
    "pow_2": (lambda a: a**2, [uniform((2, 3))]),
    "pow_3_method": (lambda a: a.pow(3), [uniform((2, 3))]),
    "pow_half": (lambda a: a**0.5, [positive((2, 3))]),
    "pow_neg_1_5": (lambda a: a.pow(-1.5), [positive((2, 3))]),
    "rpow_2": (lambda a: 2.0**a, [uniform((2, 3))]),
    "rpow_0_7": (lambda a: 0.7**a, [uniform((2, 3))]),
    # unary math
    "exp": (lambda a: a.exp(), [uniform((3, 4))]),
    "log": (lambda a: a.log(), [positive((3, 4))]),
    "sqrt": (lambda a: a.sqrt(), [positive((3, 4))]),
    "tanh": (lambda a: a.tanh(), [uniform((3, 4))]),
    "sigmoid": (lambda a: a.sigmoid(), [uniform((3, 4))]),
    "abs": (lambda a: a.abs(), [away_from((3, 4))]),
    "relu": (lambda a: a.relu(), [away_from((3, 4))]),
    "clamp_min": (lambda a: a.clamp(min=0), [away_from((3, 4))]),
    "clamp_max": (lambda a: a.clamp(max=0.5), [away_from((3, 4), points=(0.5,))]),
    "clamp_both": (lambda a: a.clamp(min=-0.5, max=0.5), [away_from((3, 4), points=(-0.5, 0.5))]),
    "fn_exp": (lambda a: rustgrad.exp(a), [uniform((3,))]),
    "fn_log": (lambda a: rustgrad.log(a), [positive((3,))]),
    "fn_sqrt": (lambda a: rustgrad.sqrt(a), [positive((3,))]),
    "fn_tanh": (lambda a: rustgrad.tanh(a), [uniform((3,))]),
    "fn_sigmoid": (lambda a: rustgrad.sigmoid(a), [uniform((3,))]),
    "fn_abs": (lambda a: rustgrad.abs(a), [away_from((3,))]),
    "fn_relu": (lambda a: rustgrad.relu(a), [away_from((3,))]),
    "fn_clamp": (
        lambda a: rustgrad.clamp(a, min=-0.5, max=0.5),
        [away_from((3, 4), points=(-0.5, 0.5))],
    ),
    # matmul and shapes
    "mm": (lambda a, b: a.mm(b), [uniform((2, 3)), uniform((3, 4), seed=1)]),
    "matmul": (lambda a, b: a.matmul(b), [uniform((2, 3)), uniform((3, 4), seed=1)]),
    "matmul_operator": (lambda a, b: a @ b, [uniform((4, 3)), uniform((3, 2), seed=1)]),
    "fn_mm": (lambda a, b: rustgrad.mm(a, b), [uniform((2, 3)), uniform((3, 4), seed=1)]),
    "fn_matmul": (lambda a, b: rustgrad.matmul(a, b), [uniform((2, 3)), uniform((3, 4), seed=1)]),
    "mm_transposed_operands": (
        lambda a, b: a.t() @ b.T,
        [uniform((3, 2)), uniform((4, 3), seed=1)],
    ),
    "t": (lambda a: a.t() * arange_3x2(), [uniform((2, 3))]),
    "T": (lambda a: a.T * arange_3x2(), [uniform((2, 3))]),
    "transpose_3d": (lambda a: a.transpose(0, 2), [uniform((2, 3, 4))]),
    "reshape": (lambda a: a.reshape(4, -1), [uniform((2, 6))]),
    "reshape_tuple": (lambda a: a.reshape((3, 4)), [uniform((2, 6))]),
    "view": (lambda a: a.view(12), [uniform((3, 4))]),
    "clone": (lambda a: a.clone() * 2.0, [uniform((3,))]),
    # reductions
    "sum_all": (lambda a: a.sum(), [uniform((2, 3, 4))]),
    "sum_dim0": (lambda a: a.sum(dim=0), [uniform((2, 3, 4))]),
    "sum_dim_neg1_keepdim": (lambda a: a.sum(dim=-1, keepdim=True), [uniform((2, 3, 4))]),
    "sum_dim_tuple": (lambda a: a.sum(dim=(0, 2)), [uniform((2, 3, 4))]),
    "mean_all": (lambda a: a.mean(), [uniform((2, 3, 4))]),
    "mean_dim1": (lambda a: a.mean(dim=1), [uniform((2, 3, 4))]),
    "mean_dim_tuple_keepdim": (lambda a: a.mean(dim=(-1, 0), keepdim=True), [uniform((2, 3, 4))]),
    "fn_sum": (lambda a: rustgrad.sum(a, dim=1), [uniform((3, 4))]),
    "fn_mean": (lambda a: rustgrad.mean(a), [uniform((3, 4))]),
    # indexing
    "index_int": (lambda a: a[1], [uniform((3, 4))]),
    "index_neg_int": (lambda a: a[-1] * 2.0, [uniform((3, 4))]),
    "index_slice": (lambda a: a[1:3], [uniform((4, 3))]),
    "index_slice_step": (lambda a: a[1:3, ::2], [uniform((4, 5))]),
    "index_bool_mask": (lambda a: a[rustgrad.tensor(MASK)], [uniform((3, 4))]),
    "index_bool_mask_from_compare": (lambda a: (a * 2.0)[a > 0].exp(), [away_from((3, 4))]),
    # compositions
    "two_layer_net": (
        lambda x, w1, w2: (x.mm(w1).clamp(min=0).mm(w2) - 1.0).pow(2).sum(),
        [uniform((5, 4)), away_from((4, 3), seed=1) / 2.0, uniform((3, 2), seed=2)],
    ),
    "softplus_like": (lambda a: (1.0 + a.exp()).log().mean(dim=0), [uniform((3, 4))]),
    "diamond": (lambda a: a.tanh() * a.sigmoid() + a.sqrt() / a, [positive((5,))]),
    "logistic_loss": (
        lambda x, w: ((x @ w).sigmoid() - 0.3).abs().mean(),
        [uniform((6, 3)), uniform((3, 1), seed=1)],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck_op(name):
    fn, arrays = CASES[name]
    inputs = tuple(leaf(a) for a in arrays)
    before = [x.detach().numpy().copy() for x in inputs]
    assert gradcheck(fn, inputs) is True
    for x, b in zip(inputs, before):
        np.testing.assert_array_equal(x.detach().numpy(), b)


def test_gradcheck_with_some_inputs_not_requiring_grad():
    a = leaf(uniform((2, 3)))
    b = rustgrad.tensor(uniform((3, 4), seed=1), dtype=rustgrad.float64)
    assert gradcheck(lambda p, q: (p @ q).tanh(), (a, b)) is True


def test_gradcheck_with_custom_kwargs():
    a = leaf(uniform((3,)))
    assert gradcheck(lambda x: x.exp(), (a,), eps=1e-5, atol=1e-4, rtol=1e-2) is True


# ---------------------------------------------------------------- gradients against numpy formulas


def test_broadcast_gradient_is_reduced_to_input_shape():
    a = leaf(uniform((3, 1)))
    b = leaf(uniform((1, 4), seed=1))
    (a * b).sum().backward()
    assert tuple(a.grad.shape) == (3, 1)
    assert tuple(b.grad.shape) == (1, 4)
    a_sum, b_sum = a.detach().numpy().sum(), b.detach().numpy().sum()
    np.testing.assert_allclose(a.grad.numpy(), np.full((3, 1), b_sum), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), np.full((1, 4), a_sum), rtol=1e-12)


def test_mean_gradient_value():
    a = leaf(uniform((2, 5)))
    a.mean().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full((2, 5), 0.1), rtol=1e-12)


def test_mask_index_gradient_flows_back_to_selected_entries():
    a = leaf(uniform((3, 4)))
    a[rustgrad.tensor(MASK)].sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), MASK.astype(np.float64))


def test_float32_gradients_have_float32_dtype():
    x = rustgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.dtype == rustgrad.float32
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0], rtol=1e-6)


# ---------------------------------------------------------------- gradcheck must catch bad grads


class SquareMissingFactorTwo(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * x  # wrong: should be 2 * x


class SquareSlightlyOff(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * x * 2.02  # 1% off: well outside rtol=1e-3


class MulWrongSecondGrad(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        return grad_output * b, grad_output * b  # second should be grad_output * a


class CorrectSquare(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 2.0 * x


def test_gradcheck_error_is_runtime_error():
    assert issubclass(GradcheckError, RuntimeError)
    assert rustgrad.autograd.GradcheckError is GradcheckError


def test_gradcheck_accepts_correct_custom_function():
    assert gradcheck(CorrectSquare.apply, (leaf(uniform((3, 2))),)) is True


@pytest.mark.parametrize(
    "bad", [SquareMissingFactorTwo, SquareSlightlyOff], ids=lambda c: c.__name__
)
def test_gradcheck_raises_on_wrong_backward(bad):
    x = leaf(uniform((3, 2)))
    before = x.detach().numpy().copy()
    with pytest.raises(GradcheckError) as excinfo:
        gradcheck(bad.apply, (x,))
    assert isinstance(excinfo.value, RuntimeError)
    # the process is still usable and the input untouched
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert gradcheck(CorrectSquare.apply, (x,)) is True


def test_gradcheck_catches_wrong_gradient_of_second_input():
    a = leaf(uniform((2, 3)))
    b = leaf(uniform((2, 3), seed=1))
    with pytest.raises(GradcheckError):
        gradcheck(MulWrongSecondGrad.apply, (a, b))


def test_gradcheck_returns_false_without_raising():
    x = leaf(uniform((4,)))
    result = gradcheck(SquareMissingFactorTwo.apply, (x,), raise_exception=False)
    assert result is False
    assert gradcheck(CorrectSquare.apply, (x,), raise_exception=False) is True
