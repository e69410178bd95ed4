"""Forward values of every eager op, checked against numpy (float32 and float64).

Making tensors, their attributes and converting them back are tested in
test_tensor_creation.py, with this module's checks."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import rustgrad

DTYPES = [
    pytest.param(rustgrad.float32, np.float32, id="f32"),
    pytest.param(rustgrad.float64, np.float64, id="f64"),
]


def tol(np_dtype):
    return {"rtol": 1e-5, "atol": 1e-6} if np_dtype == np.float32 else {"rtol": 1e-6, "atol": 1e-12}


def to_np(t):
    return t.detach().numpy()


def check(t, expected, np_dtype):
    """t must have expected's shape, the given dtype, and values close to expected."""
    expected = np.asarray(expected)
    assert tuple(t.shape) == expected.shape
    out = to_np(t)
    assert out.dtype == np_dtype
    np.testing.assert_allclose(out, expected.astype(np_dtype), **tol(np_dtype))


def make(rng, shape, np_dtype, low=-2.0, high=2.0):
    a = rng.uniform(low, high, size=shape).astype(np_dtype)
    return rustgrad.tensor(a), a


def away_from_zero(rng, shape, np_dtype):
    a = rng.uniform(0.3, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    a = a.astype(np_dtype)
    return rustgrad.tensor(a), a


# ---------------------------------------------------------------- elementwise arithmetic

BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / b, np.divide),
}

BROADCAST_SHAPES = [
    ((2, 3), (2, 3)),
    ((3, 1), (1, 4)),
    ((2, 3), (3,)),
    ((3,), (2, 3)),
    ((2, 1, 3), (4, 1)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((), ()),
]


def _shape_id(shapes):
    return "+".join("x".join(map(str, s)) or "0d" for s in shapes)


@pytest.mark.parametrize("op", list(BINARY))
@pytest.mark.parametrize("shape_a, shape_b", BROADCAST_SHAPES, ids=[_shape_id(s) for s in BROADCAST_SHAPES])
@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_binary_ops_with_broadcasting(op, shape_a, shape_b, rg_dtype, np_dtype, rng):
    rg_op, np_op = BINARY[op]
    ta, a = make(rng, shape_a, np_dtype)
    tb, b = away_from_zero(rng, shape_b, np_dtype)
    out = rg_op(ta, tb)
    assert out.dtype == rg_dtype
    check(out, np_op(a.astype(np.float64), b.astype(np.float64)), np_dtype)


@pytest.mark.parametrize("op", list(BINARY))
def test_zero_dim_result_of_reduction_broadcasts(op, rng):
    rg_op, np_op = BINARY[op]
    t, a = away_from_zero(rng, (2, 3), np.float64)
    s = t.sum()
    assert tuple(s.shape) == ()
    check(rg_op(t, s), np_op(a, a.sum()), np.float64)
    check(rg_op(s, t), np_op(a.sum(), a), np.float64)
    check(rg_op(s, s), np_op(a.sum(), a.sum()), np.float64)


@pytest.mark.parametrize("op", list(BINARY))
@pytest.mark.parametrize("scalar", [2.5, 3, -0.5])
@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_binary_ops_with_python_scalar_on_both_sides(op, scalar, rg_dtype, np_dtype, rng):
    rg_op, np_op = BINARY[op]
    t, a = away_from_zero(rng, (2, 3), np_dtype)
    a64 = a.astype(np.float64)
    right = rg_op(t, scalar)
    left = rg_op(scalar, t)
    assert right.dtype == rg_dtype and left.dtype == rg_dtype
    check(right, np_op(a64, scalar), np_dtype)
    check(left, np_op(scalar, a64), np_dtype)


@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_unary_minus(rg_dtype, np_dtype, rng):
    t, a = make(rng, (3, 2), np_dtype)
    check(-t, -a, np_dtype)


@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_binary_ops_do_not_modify_inputs(rg_dtype, np_dtype, rng):
    ta, a = make(rng, (2, 3), np_dtype)
    tb, b = away_from_zero(rng, (3,), np_dtype)
    _ = ta + tb, ta - tb, ta * tb, ta / tb, -ta
    np.testing.assert_array_equal(ta.numpy(), a)
    np.testing.assert_array_equal(tb.numpy(), b)


# ---------------------------------------------------------------- pow

@pytest.mark.parametrize("exponent", [2, 3, 0.5, -1.0, 2.5, 0])
@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_pow_tensor_to_scalar(exponent, rg_dtype, np_dtype, rng):
    t, a = make(rng, (3, 4), np_dtype, low=0.2, high=2.0)
    expected = np.power(a.astype(np.float64), exponent)
    check(t.pow(exponent), expected, np_dtype)
    check(t**exponent, expected, np_dtype)


@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_pow_integer_exponent_of_negative_base(rg_dtype, np_dtype, rng):
    t, a = make(rng, (5,), np_dtype, low=-2.0, high=-0.1)
    check(t**2, a.astype(np.float64) ** 2, np_dtype)
    check(t.pow(3), a.astype(np.float64) ** 3, np_dtype)


@pytest.mark.parametrize("base", [2.0, 0.5, 3])
@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_pow_scalar_to_tensor(base, rg_dtype, np_dtype, rng):
    t, a = make(rng, (2, 3), np_dtype)
    out = base**t
    assert out.dtype == rg_dtype
    check(out, np.power(float(base), a.astype(np.float64)), np_dtype)


# ---------------------------------------------------------------- unary math

UNARY = {
    "exp": (np.exp, -3.0, 3.0),
    "log": (np.log, 0.1, 5.0),
    "sqrt": (np.sqrt, 0.0, 5.0),
    "tanh": (np.tanh, -3.0, 3.0),
    "sigmoid": (lambda x: 1.0 / (1.0 + np.exp(-x)), -6.0, 6.0),
    "abs": (np.abs, -3.0, 3.0),
    "relu": (lambda x: np.maximum(x, 0.0), -3.0, 3.0),
}


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_unary_method_and_function(name, rg_dtype, np_dtype, rng):
    np_fn, low, high = UNARY[name]
    t, a = make(rng, (4, 5), np_dtype, low=low, high=high)
    expected = np_fn(a.astype(np.float64))
    method_out = getattr(t, name)()
    assert method_out.dtype == rg_dtype
    check(method_out, expected, np_dtype)
    check(getattr(rustgrad, name)(t), expected, np_dtype)


def test_sigmoid_is_stable_for_large_inputs():
    a = np.array([-200.0, -50.0, 0.0, 50.0, 200.0])
    out = rustgrad.tensor(a).sigmoid().numpy()
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, 1.0 / (1.0 + np.exp(-a)), rtol=1e-6, atol=0)


def test_relu_and_abs_on_zero_dim():
    assert rustgrad.tensor(-2.0).relu().item() == 0.0
    assert rustgrad.tensor(-2.0).abs().item() == 2.0


@pytest.mark.parametrize(
    "kwargs, np_min, np_max",
    [
        ({"min": 0}, 0.0, None),
        ({"max": 0.5}, None, 0.5),
        ({"min": -0.5, "max": 0.5}, -0.5, 0.5),
    ],
)
@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_clamp(kwargs, np_min, np_max, rg_dtype, np_dtype, rng):
    t, a = make(rng, (3, 4), np_dtype)
    expected = np.clip(a, np_min, np_max)
    check(t.clamp(**kwargs), expected, np_dtype)
    check(rustgrad.clamp(t, **kwargs), expected, np_dtype)


def test_clamp_positional_min_max():
    t = rustgrad.tensor([-2.0, -0.2, 0.3, 4.0])
    np.testing.assert_allclose(t.clamp(-1.0, 1.0).numpy(), [-1.0, -0.2, 0.3, 1.0], rtol=1e-6)


# ---------------------------------------------------------------- matmul & shape

@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_mm_matmul_and_operator(rg_dtype, np_dtype, rng):
    ta, a = make(rng, (5, 3), np_dtype)
    tb, b = make(rng, (3, 4), np_dtype)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    check(ta.mm(tb), expected, np_dtype)
    check(ta.matmul(tb), expected, np_dtype)
    check(ta @ tb, expected, np_dtype)
    check(rustgrad.mm(ta, tb), expected, np_dtype)
    check(rustgrad.matmul(ta, tb), expected, np_dtype)


@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (1, 7, 1), (64, 100, 10), (33, 17, 65)])
def test_mm_various_sizes_float64(m, k, n, rng):
    ta, a = make(rng, (m, k), np.float64)
    tb, b = make(rng, (k, n), np.float64)
    check(ta @ tb, a @ b, np.float64)


@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_mm_with_transposed_operands(rg_dtype, np_dtype, rng):
    ta, a = make(rng, (3, 5), np_dtype)
    tb, b = make(rng, (4, 3), np_dtype)
    expected = a.T.astype(np.float64) @ b.T.astype(np.float64)
    check(ta.t() @ tb.t(), expected, np_dtype)
    check(ta.T.mm(tb.T), expected, np_dtype)


@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_transpose_t_and_T(rg_dtype, np_dtype, rng):
    t, a = make(rng, (2, 3), np_dtype)
    check(t.t(), a.T, np_dtype)
    check(t.T, a.T, np_dtype)
    check(t.transpose(0, 1), a.T, np_dtype)
    t3, a3 = make(rng, (2, 3, 4), np_dtype)
    check(t3.transpose(0, 2), np.swapaxes(a3, 0, 2), np_dtype)
    check(t3.transpose(-1, 1), np.swapaxes(a3, -1, 1), np_dtype)


@pytest.mark.parametrize(
    "new_shape, np_shape",
    [
        ((6, 4), (6, 4)),
        ((-1,), (24,)),
        ((4, -1), (4, 6)),
        ((2, 3, 4), (2, 3, 4)),
        ((-1, 2, 2), (6, 2, 2)),
    ],
)
@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_reshape_and_view(new_shape, np_shape, rg_dtype, np_dtype, rng):
    t, a = make(rng, (2, 12), np_dtype)
    expected = a.reshape(np_shape)
    check(t.reshape(*new_shape), expected, np_dtype)
    check(t.reshape(new_shape), expected, np_dtype)
    check(t.view(*new_shape), expected, np_dtype)


def test_reshape_of_transposed_tensor_uses_logical_order(rng):
    t, a = make(rng, (3, 4), np.float64)
    check(t.t().reshape(-1), a.T.reshape(-1), np.float64)


# ---------------------------------------------------------------- reductions

REDUCTION_CASES = [
    ({}, {}),
    ({"dim": 0}, {"axis": 0}),
    ({"dim": 1}, {"axis": 1}),
    ({"dim": -1}, {"axis": -1}),
    ({"dim": (0, 2)}, {"axis": (0, 2)}),
    ({"dim": (-1, -2)}, {"axis": (-1, -2)}),
    ({"dim": 1, "keepdim": True}, {"axis": 1, "keepdims": True}),
    ({"dim": (0, 2), "keepdim": True}, {"axis": (0, 2), "keepdims": True}),
]


@pytest.mark.parametrize("name", ["sum", "mean"])
@pytest.mark.parametrize("rg_kwargs, np_kwargs", REDUCTION_CASES)
@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_reductions(name, rg_kwargs, np_kwargs, rg_dtype, np_dtype, rng):
    t, a = make(rng, (2, 3, 4), np_dtype)
    expected = getattr(np, name)(a.astype(np.float64), **np_kwargs)
    out = getattr(t, name)(**rg_kwargs)
    assert out.dtype == rg_dtype
    check(out, expected, np_dtype)
    check(getattr(rustgrad, name)(t, **rg_kwargs), expected, np_dtype)


@pytest.mark.parametrize("name", ["sum", "mean"])
def test_reduction_positional_dim(name, rng):
    t, a = make(rng, (3, 4), np.float64)
    check(getattr(t, name)(1), getattr(np, name)(a, axis=1), np.float64)
    check(getattr(t, name)(0, True), getattr(np, name)(a, axis=0, keepdims=True), np.float64)


def test_full_sum_is_zero_dim_and_item():
    t = rustgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    s = t.sum()
    assert tuple(s.shape) == ()
    assert s.item() == 10.0
    assert t.mean().item() == 2.5


def test_sum_of_zero_dim():
    assert rustgrad.tensor(2.0).sum().item() == 2.0


# ---------------------------------------------------------------- comparisons

CMP = {
    "lt": (lambda a, b: a < b, np.less),
    "le": (lambda a, b: a <= b, np.less_equal),
    "gt": (lambda a, b: a > b, np.greater),
    "ge": (lambda a, b: a >= b, np.greater_equal),
    "eq": (lambda a, b: a == b, np.equal),
}


@pytest.mark.parametrize("op", list(CMP))
@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_comparisons_tensor_tensor_with_broadcast(op, rg_dtype, np_dtype):
    a = np.array([[0.0, 1.0, 2.0], [3.0, 1.0, -1.0]], dtype=np_dtype)
    b = np.array([1.0, 1.0, 2.0], dtype=np_dtype)
    rg_op, np_op = CMP[op]
    out = rg_op(rustgrad.tensor(a), rustgrad.tensor(b))
    assert out.dtype == rustgrad.bool
    assert tuple(out.shape) == (2, 3)
    np.testing.assert_array_equal(out.numpy(), np_op(a, b))
    assert out.numpy().dtype == np.bool_


@pytest.mark.parametrize("op", list(CMP))
def test_comparisons_with_scalar_on_both_sides(op):
    a = np.array([-1.0, 0.0, 0.5, 1.0, 2.0], dtype=np.float32)
    t = rustgrad.tensor(a)
    rg_op, np_op = CMP[op]
    right = rg_op(t, 0.5)
    left = rg_op(0.5, t)
    assert right.dtype == rustgrad.bool and left.dtype == rustgrad.bool
    np.testing.assert_array_equal(right.numpy(), np_op(a, 0.5))
    np.testing.assert_array_equal(left.numpy(), np_op(0.5, a))


def test_comparison_result_does_not_require_grad():
    x = rustgrad.tensor([1.0, -1.0], requires_grad=True)
    m = x < 0
    assert m.requires_grad is False
    assert m.tolist() == [False, True]


# ---------------------------------------------------------------- in-place ops

@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_zero_and_fill_return_self(rg_dtype, np_dtype):
    t = rustgrad.ones(2, 3, dtype=rg_dtype)
    assert t.zero_() is t
    check(t, np.zeros((2, 3)), np_dtype)
    assert t.fill_(2.5) is t
    check(t, np.full((2, 3), 2.5), np_dtype)


@pytest.mark.parametrize(
    "method, np_op",
    [("add_", np.add), ("sub_", np.subtract), ("mul_", np.multiply)],
)
@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_inplace_methods_with_tensor_scalar_and_broadcast(method, np_op, rg_dtype, np_dtype, rng):
    t, a = make(rng, (2, 3), np_dtype)
    other_t, other = make(rng, (2, 3), np_dtype)
    row_t, row = make(rng, (3,), np_dtype)
    assert getattr(t, method)(other_t) is t
    expected = np_op(a.astype(np.float64), other)
    check(t, expected, np_dtype)
    assert getattr(t, method)(1.5) is t
    expected = np_op(expected, 1.5)
    check(t, expected, np_dtype)
    assert getattr(t, method)(row_t) is t
    check(t, np_op(expected, row), np_dtype)
    np.testing.assert_array_equal(other_t.numpy(), other)


@pytest.mark.parametrize(
    "iop, np_op",
    [
        (operator.iadd, np.add),
        (operator.isub, np.subtract),
        (operator.imul, np.multiply),
        (operator.itruediv, np.divide),
    ],
    ids=["+=", "-=", "*=", "/="],
)
@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_augmented_assignment_keeps_identity(iop, np_op, rg_dtype, np_dtype, rng):
    # operator.iadd(t, o) is exactly what `t += o` evaluates before rebinding t.
    t, a = make(rng, (2, 3), np_dtype)
    other_t, other = away_from_zero(rng, (2, 3), np_dtype)
    assert iop(t, other_t) is t
    expected = np_op(a.astype(np.float64), other)
    check(t, expected, np_dtype)
    assert iop(t, 2.0) is t
    check(t, np_op(expected, 2.0), np_dtype)


def test_minus_equals_statement_keeps_identity():
    w = rustgrad.ones(3)
    alias = w
    w -= 0.5 * rustgrad.ones(3)
    assert w is alias
    assert alias.tolist() == [0.5, 0.5, 0.5]


# ---------------------------------------------------------------- indexing

@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_basic_indexing(rg_dtype, np_dtype, rng):
    t, a = make(rng, (4, 6), np_dtype)
    check(t[1], a[1], np_dtype)
    check(t[-1], a[-1], np_dtype)
    check(t[1:3], a[1:3], np_dtype)
    check(t[1:3, ::2], a[1:3, ::2], np_dtype)
    check(t[:, 2], a[:, 2], np_dtype)
    check(t[0:4:3], a[0:4:3], np_dtype)
    check(t[2, 3], a[2, 3], np_dtype)


def test_indexing_1d_and_3d(rng):
    t, a = make(rng, (5,), np.float64)
    check(t[2], a[2], np.float64)
    check(t[1:], a[1:], np.float64)
    t3, a3 = make(rng, (3, 4, 5), np.float64)
    check(t3[1, 1:3, ::2], a3[1, 1:3, ::2], np.float64)


@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_bool_mask_indexing(rg_dtype, np_dtype, rng):
    t, a = make(rng, (3, 4), np_dtype)
    mask = t > 0
    out = t[mask]
    check(out, a[a > 0], np_dtype)
    assert out.dim() == 1
    assert mask.dtype == rustgrad.bool


def test_bool_tensor_from_numpy_bool_array():
    m = rustgrad.tensor(np.array([True, False, True]))
    assert m.dtype == rustgrad.bool
    assert m.tolist() == [True, False, True]


def test_bool_mask_over_leading_dim_selects_rows(rng):
    # PyTorch accepts a mask whose shape matches the leading dims of the tensor.
    t, a = make(rng, (3, 4), np.float64)
    row_mask = rustgrad.tensor(np.array([True, False, True]))
    check(t[row_mask], a[[0, 2]], np.float64)


@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_setitem_bool_mask_scalar(rg_dtype, np_dtype, rng):
    t, a = make(rng, (3, 4), np_dtype)
    t[t < 0] = 0
    check(t, np.where(a < 0, 0.0, a), np_dtype)


@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_setitem_slice_scalar_and_tensor(rg_dtype, np_dtype, rng):
    t, a = make(rng, (4, 3), np_dtype)
    expected = a.astype(np.float64).copy()
    t[1:3] = 5.0
    expected[1:3] = 5.0
    check(t, expected, np_dtype)
    v, va = make(rng, (2, 3), np_dtype)
    t[0:2] = v
    expected[0:2] = va
    check(t, expected, np_dtype)
    row, ra = make(rng, (3,), np_dtype)
    t[2:4] = row
    expected[2:4] = ra
    check(t, expected, np_dtype)
    t[3] = -1.0
    expected[3] = -1.0
    check(t, expected, np_dtype)


def test_setitem_with_mask_in_reference_relu_backward_style():
    inp = rustgrad.tensor([[-1.0, 2.0], [3.0, -4.0]])
    grad = rustgrad.ones(2, 2)
    g = grad.clone()
    g[inp < 0] = 0
    assert g.tolist() == [[0.0, 1.0], [1.0, 0.0]]
    assert grad.tolist() == [[1.0, 1.0], [1.0, 1.0]]
