"""Eager tensors made and read back, checked against numpy (float32 and float64): creation
(tensor, from_numpy, the factories and the random factories), dtypes, device and the other
attributes, repr, and conversion (item, tolist, numpy, clone, detach)."""

from __future__ import annotations

import numpy as np
import pytest
from test_tensor_ops import DTYPES, check

import rustgrad

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
