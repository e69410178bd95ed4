"""Forward values of every eager op, checked against numpy (float32 and float64)."""

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


# ---------------------------------------------------------------- creation


def test_tensor_from_python_floats_defaults_to_float32():
    t = rustgrad.tensor([[1.0, 2.5], [3.0, -4.0]])
    assert t.dtype == rustgrad.float32
    assert tuple(t.shape) == (2, 2)
    assert t.tolist() == [[1.0, 2.5], [3.0, -4.0]]
    assert t.requires_grad is False
    assert t.is_leaf
    assert t.grad is None
    assert t.grad_fn is None


def test_tensor_from_scalar_is_zero_dim():
    t = rustgrad.tensor(3.5)
    assert tuple(t.shape) == ()
    assert t.dim() == 0
    assert t.numel() == 1
    assert t.item() == 3.5
    assert isinstance(t.item(), float)
    assert t.tolist() == 3.5
    assert tuple(rustgrad.tensor(np.array(2.0)).shape) == ()


def test_tensor_from_numpy_keeps_float64():
    a = np.arange(6, dtype=np.float64).reshape(2, 3) / 7.0
    t = rustgrad.tensor(a)
    assert t.dtype == rustgrad.float64
    np.testing.assert_array_equal(t.numpy(), a)


def test_tensor_from_numpy_float32_keeps_float32():
    a = np.arange(6, dtype=np.float32).reshape(3, 2) / 7.0
    t = rustgrad.tensor(a)
    assert t.dtype == rustgrad.float32
    np.testing.assert_array_equal(t.numpy(), a)


def test_tensor_explicit_dtype_overrides_numpy_dtype():
    a = np.array([1.0 / 3.0, 2.0], dtype=np.float64)
    t = rustgrad.tensor(a, dtype=rustgrad.float32)
    assert t.dtype == rustgrad.float32
    np.testing.assert_array_equal(t.numpy(), a.astype(np.float32))


def test_tensor_requires_grad_keyword():
    t = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    assert t.requires_grad is True
    assert t.is_leaf
    assert t.grad_fn is None


def test_tensor_does_not_alias_source_numpy_array():
    a = np.ones(3)
    t = rustgrad.tensor(a)
    a[0] = 5.0
    assert t.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("np_dtype, rg_dtype", [(np.float32, "float32"), (np.float64, "float64")])
def test_from_numpy_preserves_dtype_and_values(np_dtype, rg_dtype):
    a = np.linspace(-1, 1, 12).reshape(3, 4).astype(np_dtype)
    t = rustgrad.from_numpy(a)
    assert t.dtype == getattr(rustgrad, rg_dtype)
    assert tuple(t.shape) == (3, 4)
    np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.parametrize("fn, value", [("zeros", 0.0), ("ones", 1.0)])
@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_zeros_ones_with_varargs_and_tuple_sizes(fn, value, rg_dtype, np_dtype):
    factory = getattr(rustgrad, fn)
    for t in (factory(2, 3, dtype=rg_dtype), factory((2, 3), dtype=rg_dtype)):
        assert t.dtype == rg_dtype
        check(t, np.full((2, 3), value), np_dtype)


def test_zeros_default_dtype_is_float32_and_device_cpu():
    t = rustgrad.zeros(4)
    assert t.dtype == rustgrad.float32
    assert t.device == rustgrad.device("cpu")
    assert str(t.device) == "cpu"
    t2 = rustgrad.zeros(2, device="cpu")
    assert t2.device.type == "cpu"


def test_zeros_requires_grad_keyword():
    t = rustgrad.zeros(2, 2, requires_grad=True)
    assert t.requires_grad and t.is_leaf


@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_full(rg_dtype, np_dtype):
    check(rustgrad.full((2, 3), 7.5, dtype=rg_dtype), np.full((2, 3), 7.5), np_dtype)


def test_empty_has_requested_shape_and_dtype():
    t = rustgrad.empty(3, 4, dtype=rustgrad.float64)
    assert tuple(t.shape) == (3, 4)
    assert t.dtype == rustgrad.float64
    assert tuple(rustgrad.empty((5,)).shape) == (5,)


@pytest.mark.parametrize(
    "args, expected",
    [
        ((0.0, 1.0, 0.25), np.arange(0.0, 1.0, 0.25)),
        ((2, 8, 2), np.arange(2, 8, 2)),
        ((-1.0, 1.0, 0.5), np.arange(-1.0, 1.0, 0.5)),
        ((5,), np.arange(5)),
    ],
)
def test_arange(args, expected):
    t = rustgrad.arange(*args)
    assert tuple(t.shape) == expected.shape
    np.testing.assert_allclose(t.numpy().astype(np.float64), expected, rtol=1e-6)


def test_arange_with_dtype():
    t = rustgrad.arange(0, 3, 1, dtype=rustgrad.float64)
    assert t.dtype == rustgrad.float64
    assert t.tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("n, m", [(3, None), (2, 4), (4, 2)])
def test_eye(n, m):
    t = rustgrad.eye(n) if m is None else rustgrad.eye(n, m)
    np.testing.assert_array_equal(t.numpy(), np.eye(n, m))


@pytest.mark.parametrize("rg_dtype, np_dtype", DTYPES)
def test_zeros_like_ones_like_keep_shape_and_dtype(rg_dtype, np_dtype):
    src = rustgrad.full((2, 5), 3.0, dtype=rg_dtype)
    check(rustgrad.zeros_like(src), np.zeros((2, 5)), np_dtype)
    check(rustgrad.ones_like(src), np.ones((2, 5)), np_dtype)


def test_randn_like_keeps_shape_and_dtype():
    src = rustgrad.zeros(3, 7, dtype=rustgrad.float64)
    r = rustgrad.randn_like(src)
    assert tuple(r.shape) == (3, 7)
    assert r.dtype == rustgrad.float64
    assert np.all(np.isfinite(r.numpy()))
    assert np.unique(r.numpy()).size > 1


def test_randn_statistics_and_shape():
    t = rustgrad.randn(200, 100)
    assert tuple(t.shape) == (200, 100)
    assert t.dtype == rustgrad.float32
    a = t.numpy().astype(np.float64)
    assert abs(a.mean()) < 0.05
    assert abs(a.std() - 1.0) < 0.05


def test_rand_is_in_unit_interval():
    t = rustgrad.rand(100, 100, dtype=rustgrad.float64)
    assert t.dtype == rustgrad.float64
    a = t.numpy()
    assert a.min() >= 0.0 and a.max() < 1.0
    assert abs(a.mean() - 0.5) < 0.05


@pytest.mark.parametrize("fn", ["randn", "rand"])
def test_manual_seed_makes_random_reproducible(fn):
    rustgrad.manual_seed(42)
    a = getattr(rustgrad, fn)(3, 4).numpy()
    b = getattr(rustgrad, fn)(3, 4).numpy()
    rustgrad.manual_seed(42)
    c = getattr(rustgrad, fn)(3, 4).numpy()
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b)
    rustgrad.manual_seed(43)
    assert not np.array_equal(a, getattr(rustgrad, fn)(3, 4).numpy())


def test_random_creation_accepts_tuple_size_and_requires_grad():
    t = rustgrad.randn((2, 3), dtype=rustgrad.float64, requires_grad=True)
    assert tuple(t.shape) == (2, 3)
    assert t.requires_grad and t.is_leaf


# ---------------------------------------------------------------- dtypes / device / attributes


def test_dtype_aliases():
    assert rustgrad.float == rustgrad.float32
    assert rustgrad.double == rustgrad.float64
    assert rustgrad.float32 != rustgrad.float64
    assert rustgrad.bool != rustgrad.float32


def test_device_and_cuda_availability():
    assert rustgrad.cuda.is_available() is False
    dev = rustgrad.device("cpu")
    assert dev.type == "cpu"
    assert dev == rustgrad.device("cpu")


def test_shape_size_dim_numel():
    t = rustgrad.zeros(2, 3, 4)
    assert tuple(t.shape) == (2, 3, 4)
    assert tuple(t.size()) == (2, 3, 4)
    assert t.size(0) == 2
    assert t.size(-1) == 4
    assert t.dim() == 3
    assert t.ndim == 3
    assert t.numel() == 24
    assert len(t.shape) == 3
    assert t.shape[1] == 3


def test_requires_grad_underscore_returns_self_and_sets_flag():
    t = rustgrad.ones(3)
    assert t.requires_grad is False
    out = t.requires_grad_()
    assert out is t
    assert t.requires_grad is True
    t.requires_grad_(False)
    assert t.requires_grad is False


def test_repr_looks_like_pytorch():
    t = rustgrad.tensor([1.0, 2.0])
    r = repr(t)
    assert r.startswith("tensor(")
    assert "requires_grad" not in r
    assert "dtype=" not in r
    assert "1." in r and "2." in r


def test_repr_shows_requires_grad_grad_fn_and_float64():
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    assert "requires_grad=True" in repr(x)
    y = x * 2
    assert "grad_fn=<" in repr(y)
    assert "requires_grad=True" not in repr(y)
    d = rustgrad.tensor([1.0, 2.0], dtype=rustgrad.float64)
    assert repr(d).startswith("tensor(")
    assert "dtype=rustgrad.float64" in repr(d)


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


# ---------------------------------------------------------------- conversion

def test_item_tolist_numpy_roundtrip():
    data = [[1.0, -2.0, 0.5], [4.25, 0.0, 3.0]]
    t = rustgrad.tensor(data, dtype=rustgrad.float64)
    assert t.tolist() == data
    assert t[1, 0].item() == 4.25
    assert rustgrad.tensor([7.0]).item() == 7.0
    arr = t.numpy()
    assert isinstance(arr, np.ndarray)
    assert arr.dtype == np.float64
    np.testing.assert_array_equal(arr, np.array(data))


def test_clone_is_independent_copy():
    t = rustgrad.tensor([1.0, 2.0, 3.0])
    c = t.clone()
    assert c is not t
    assert c.dtype == t.dtype
    c.add_(1.0)
    assert t.tolist() == [1.0, 2.0, 3.0]
    assert c.tolist() == [2.0, 3.0, 4.0]


def test_detach_drops_graph_and_shares_storage():
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    d = y.detach()
    assert d.requires_grad is False
    assert d.grad_fn is None
    assert d.is_leaf
    assert d.tolist() == [3.0, 6.0]
    d.zero_()
    assert y.detach().tolist() == [0.0, 0.0]


def test_numpy_of_reshaped_arange():
    t = rustgrad.arange(0.0, 6.0, 1.0).reshape(2, 3)
    np.testing.assert_array_equal(t.numpy(), np.arange(6.0).reshape(2, 3))


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
