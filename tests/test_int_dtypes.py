"""Integer dtypes (int64, int32, uint8) and bool, in both fronts.

Eager mode promotes as PyTorch does and static graphs follow TF1 (docs/dtypes.md). The
promotion tables below are written out entry by entry, for every pair of dtypes; values
are checked against numpy, which wraps integers around and rounds ``//`` and ``%`` as
Python does, exactly as rustgrad must.
"""

from __future__ import annotations

import pickle
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import rustgrad
import rustgrad.compat.v1 as tf
from rustgrad import errors

NAMES = ["float32", "float64", "int64", "int32", "uint8", "bool"]
INTS = ["int64", "int32", "uint8"]
NUMPY = {name: (np.bool_ if name == "bool" else getattr(np, name)) for name in NAMES}


def dt(name: str) -> Any:
    return getattr(rustgrad, name)


def table(text: str) -> dict[tuple[str, str], str]:
    """A promotion table written as rows of the left operand's dtype, columns in NAMES order."""
    rows = [line.split() for line in text.strip().splitlines()]
    return {(row[0], col): cell for row in rows for col, cell in zip(NAMES, row[1:])}


# ---------------------------------------------------------------- the eager (torch) tables

EAGER_ADD = table("""
float32 float32 float64 float32 float32 float32 float32
float64 float64 float64 float64 float64 float64 float64
int64   float32 float64 int64   int64   int64   int64
int32   float32 float64 int64   int32   int32   int32
uint8   float32 float64 int64   int32   uint8   uint8
bool    float32 float64 int64   int32   uint8   bool
""")

EAGER_DIV = table("""
float32 float32 float64 float32 float32 float32 float32
float64 float64 float64 float64 float64 float64 float64
int64   float32 float64 float32 float32 float32 float32
int32   float32 float64 float32 float32 float32 float32
uint8   float32 float64 float32 float32 float32 float32
bool    float32 float64 float32 float32 float32 float32
""")

EAGER_FLOOR_DIVIDE = table("""
float32 float32 float64 float32 float32 float32 float32
float64 float64 float64 float64 float64 float64 float64
int64   float32 float64 int64   int64   int64   int64
int32   float32 float64 int64   int32   int32   int32
uint8   float32 float64 int64   int32   uint8   uint8
bool    float32 float64 int64   int32   uint8   error
""")

# Every comparison of two dtypes gives bool.
EAGER_COMPARE = {(a, b): "bool" for a in NAMES for b in NAMES}

EAGER_OPS: dict[str, tuple[Callable[[Any, Any], Any], dict]] = {
    "add": (lambda a, b: a + b, EAGER_ADD),
    "div": (lambda a, b: a / b, EAGER_DIV),
    "floor_divide": (lambda a, b: rustgrad.floor_divide(a, b), EAGER_FLOOR_DIVIDE),
    "lt": (lambda a, b: a < b, EAGER_COMPARE),
}

NUMPY_OPS = {"add": np.add, "div": np.true_divide, "floor_divide": np.floor_divide, "lt": np.less}


def sample(name: str) -> np.ndarray:
    """Small values every dtype holds."""
    return np.array([3, 1, 2, 5] if name != "bool" else [True, True, False, True], dtype=NUMPY[name])


def divisor(name: str) -> np.ndarray:
    """Small values every dtype holds, none of them zero (so that integers can divide by them)."""
    return np.array([5, 2, 1, 3] if name != "bool" else [True] * 4, dtype=NUMPY[name])


@pytest.mark.parametrize("op", list(EAGER_OPS))
@pytest.mark.parametrize("a", NAMES)
@pytest.mark.parametrize("b", NAMES)
def test_eager_promotion_table(op, a, b):
    fn, expected_table = EAGER_OPS[op]
    expected = expected_table[(a, b)]
    x, y = rustgrad.tensor(sample(a)), rustgrad.tensor(divisor(b))
    if expected == "error":
        with pytest.raises(errors.DTypeError, match="bool"):
            fn(x, y)
        return
    out = fn(x, y)
    assert out.dtype is dt(expected), (op, a, b, out.dtype)
    other = divisor(b).astype(NUMPY[expected] if op != "lt" else np.float64)
    with np.errstate(all="ignore"):
        reference = NUMPY_OPS[op](sample(a).astype(other.dtype), other)
    np.testing.assert_allclose(out.numpy().astype(np.float64), reference.astype(np.float64), rtol=1e-6)


# A Python number does not widen a tensor of its kind or above (torch's rule for numbers).
EAGER_WITH_NUMBER = {
    # dtype: (with a bool, with an int, with a float)
    "float32": ("float32", "float32", "float32"),
    "float64": ("float64", "float64", "float64"),
    "int64": ("int64", "int64", "float32"),
    "int32": ("int32", "int32", "float32"),
    "uint8": ("uint8", "uint8", "float32"),
    "bool": ("bool", "int64", "float32"),
}


@pytest.mark.parametrize("name", NAMES)
def test_a_python_number_promotes_as_in_torch(name):
    x = rustgrad.tensor(sample(name))
    for number, expected in zip((True, 2, 0.5), EAGER_WITH_NUMBER[name]):
        assert (x * number).dtype is dt(expected), (name, number)
        assert (number * x).dtype is dt(expected), (name, number)
    assert (x / 2).dtype is (dt(name) if name.startswith("float") else rustgrad.float32)


def test_zero_dim_tensors_count_as_numbers_within_their_kind():
    f32 = rustgrad.ones(2)
    assert (f32 + rustgrad.tensor(1.0, dtype=rustgrad.float64)).dtype is rustgrad.float32
    i32 = rustgrad.ones(2, dtype=rustgrad.int32)
    assert (i32 + rustgrad.tensor(1)).dtype is rustgrad.int32
    assert (i32 + rustgrad.tensor(1.0, dtype=rustgrad.float64)).dtype is rustgrad.float64


# ---------------------------------------------------------------- eager values against numpy


def int_arrays(dtype: Any, shape: Any, nonzero: bool = False) -> st.SearchStrategy:
    info = np.iinfo(dtype)
    values = st.integers(int(info.min), int(info.max))
    if nonzero:
        values = values.filter(lambda v: v != 0)
    return hnp.arrays(dtype, shape, elements=values)


@st.composite
def int_pairs(draw, nonzero: bool = False):
    """Two broadcastable integer arrays of two (possibly different) dtypes, the second maybe
    a transposed (non-contiguous) view."""
    a_dtype, b_dtype = draw(st.sampled_from(INTS)), draw(st.sampled_from(INTS))
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4))
    a = draw(int_arrays(NUMPY[a_dtype], shapes.input_shapes[0]))
    b = draw(int_arrays(NUMPY[b_dtype], shapes.input_shapes[1][::-1], nonzero)).T
    return a, b


def expected_dtype(a: np.ndarray, b: np.ndarray) -> Any:
    """The table's dtype; a 0-d integer tensor with a dimensioned one takes the latter's (torch)."""
    if (a.ndim == 0) != (b.ndim == 0):
        return b.dtype if a.ndim == 0 else a.dtype
    return np.dtype(EAGER_ADD[(a.dtype.name, b.dtype.name)])


INT_OPS = {
    "add": (lambda x, y: x + y, np.add),
    "sub": (lambda x, y: x - y, np.subtract),
    "mul": (lambda x, y: x * y, np.multiply),
    "maximum": (rustgrad.maximum, np.maximum),
    "minimum": (rustgrad.minimum, np.minimum),
}


@pytest.mark.parametrize("op", list(INT_OPS))
@given(pair=int_pairs())
def test_integer_arithmetic_wraps_as_numpy_does(op, pair):
    a, b = pair
    fn, ref = INT_OPS[op]
    out = fn(rustgrad.tensor(a), rustgrad.tensor(b))
    target = expected_dtype(a, b)
    with np.errstate(all="ignore"):
        expected = ref(a.astype(target), b.astype(target))
    assert out.dtype.name == target.name
    np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize("op", ["floor_divide", "remainder"])
@given(pair=int_pairs(nonzero=True))
def test_integer_floor_division_and_remainder_round_as_python(op, pair):
    a, b = pair
    out = getattr(rustgrad, op)(rustgrad.tensor(a), rustgrad.tensor(b))
    target = expected_dtype(a, b)
    with np.errstate(all="ignore"):
        expected = getattr(np, op)(a.astype(target), b.astype(target))
    np.testing.assert_array_equal(out.numpy(), expected)
    assert out.dtype.name == target.name


@given(a=hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=5),
                    elements=st.floats(-1e6, 1e6)),
       b=st.floats(-100, 100).filter(lambda v: abs(v) > 1e-3))
def test_float_floor_division_and_remainder_match_numpy(a, b):
    x = rustgrad.tensor(a)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal((x // b).numpy(), np.floor_divide(a, b))
        np.testing.assert_array_equal((x % b).numpy(), np.remainder(a, b))
        np.testing.assert_array_equal((b // x[x != 0]).numpy(), np.floor_divide(b, a[a != 0]))


@given(pair=int_pairs())
def test_integer_comparisons_give_bool(pair):
    a, b = pair
    x, y = rustgrad.tensor(a), rustgrad.tensor(b)
    target = expected_dtype(a, b)  # compared in the promoted dtype, as torch compares
    comparisons = ((lambda p, q: p < q, np.less), (lambda p, q: p == q, np.equal),
                   (lambda p, q: p >= q, np.greater_equal))
    for fn, ref in comparisons:
        out = fn(x, y)
        assert out.dtype is rustgrad.bool
        np.testing.assert_array_equal(out.numpy(), ref(a.astype(target), b.astype(target)))


@pytest.mark.parametrize("name", INTS)
@given(data=st.data())
def test_integer_numbers_keep_the_tensor_dtype_and_wrap(name, data):
    a = data.draw(int_arrays(NUMPY[name], hnp.array_shapes(min_dims=0, max_dims=2, max_side=4)))
    n = data.draw(st.integers(1, 100))
    x = rustgrad.tensor(a)
    with np.errstate(all="ignore"):
        for got, expected in ((x + n, a + NUMPY[name](n)), (x * n, a * NUMPY[name](n)),
                              (n - x, NUMPY[name](n) - a), (x // n, a // NUMPY[name](n)),
                              (x % n, a % NUMPY[name](n)), (x ** 2, a * a)):
            assert got.dtype is dt(name)
            np.testing.assert_array_equal(got.numpy(), expected)


def test_div_rounding_modes_and_the_function_forms():
    a, b = rustgrad.tensor([7, -7, 6]), rustgrad.tensor([2, 2, -4])
    assert rustgrad.div(a, b, rounding_mode="floor").tolist() == [3, -4, -2]
    assert rustgrad.div(a, b, rounding_mode="trunc").tolist() == [3, -3, -1]
    assert rustgrad.div(a, b, rounding_mode="trunc").dtype is rustgrad.int64
    assert rustgrad.div(a.float(), 2, rounding_mode="trunc").tolist() == [3.0, -3.0, 3.0]
    assert rustgrad.div(a, b).dtype is rustgrad.float32
    assert rustgrad.remainder(5, rustgrad.tensor([3, -3])).tolist() == [2, -1]
    assert rustgrad.floor_divide(rustgrad.tensor([5.5]), 2).tolist() == [2.0]
    with pytest.raises(errors.InvalidArgumentError, match="rounding_mode"):
        rustgrad.div(a, b, rounding_mode="ceil")


def test_integer_matmul_and_random_integers_are_refused_clearly():
    x = rustgrad.tensor([[1, 2]])
    with pytest.raises(errors.DTypeError, match="mm: expected a float tensor but got int64"):
        x @ x.t()
    with pytest.raises(errors.DTypeError, match="normal and uniform samples are floats, not int64"):
        rustgrad.randn(2, dtype=rustgrad.int64)


def test_overflow_wraps_around():
    assert (rustgrad.tensor([2**31 - 1], dtype=rustgrad.int32) + 1).tolist() == [-(2**31)]
    assert (rustgrad.tensor([255], dtype=rustgrad.uint8) + 1).tolist() == [0]
    assert (rustgrad.tensor([2**63 - 1]) + 1).tolist() == [-(2**63)]
    assert (-rustgrad.tensor([1], dtype=rustgrad.uint8)).tolist() == [255]


@pytest.mark.parametrize("name", INTS + ["bool"])
def test_float_ops_of_the_table_compute_integers_in_float32(name):
    a = sample(name)
    for op in ("sin", "exp", "sqrt", "log1p", "sigmoid", "floor"):
        out = getattr(rustgrad, op)(rustgrad.tensor(a))
        assert out.dtype is rustgrad.float32, op
        reference = (lambda v: 1 / (1 + np.exp(-v))) if op == "sigmoid" else getattr(np, op)
        np.testing.assert_allclose(out.numpy(), reference(a.astype(np.float64)), rtol=1e-6)


@pytest.mark.parametrize("name", INTS)
@given(data=st.data())
def test_abs_neg_sign_square_and_relu_keep_the_integer_dtype(name, data):
    a = data.draw(int_arrays(NUMPY[name], hnp.array_shapes(min_dims=0, max_dims=2, max_side=5)))
    x = rustgrad.tensor(a)
    with np.errstate(all="ignore"):
        expected = {"abs": np.abs(a), "neg": np.negative(a), "sign": np.sign(a), "square": a * a,
                    "relu": np.maximum(a, NUMPY[name](0))}
    for op, reference in expected.items():
        out = getattr(x, op)()
        assert out.dtype is dt(name), op
        np.testing.assert_array_equal(out.numpy(), reference, err_msg=op)


def test_sums_of_bools_and_integers_are_int64_and_extremes_keep_the_dtype():
    mask = rustgrad.tensor([[True, False, True], [True, True, True]])
    assert mask.sum().dtype is rustgrad.int64 and mask.sum().item() == 5
    assert mask.sum(dim=1).tolist() == [2, 3]
    small = rustgrad.tensor([200, 100], dtype=rustgrad.uint8)
    assert small.sum().item() == 300 and small.sum().dtype is rustgrad.int64
    big = rustgrad.tensor([2**62, 2**62, 2**62])
    assert big.sum().item() == np.array([2**62] * 3).sum()  # wraps as numpy's int64 sum
    x = rustgrad.tensor([[4, -9], [7, 2]], dtype=rustgrad.int32)
    assert x.max().item() == 7 and x.min().item() == -9 and x.max().dtype is rustgrad.int32
    assert x.amax(dim=0).tolist() == [7, 2] and x.amin(dim=1).tolist() == [-9, 2]


def test_mean_of_an_integer_tensor_raises_as_torch():
    with pytest.raises(errors.DTypeError, match=r"mean\(\): could not infer output dtype.*Got: int64"):
        rustgrad.tensor([1, 2]).mean()


def test_item_tolist_and_repr_show_integers():
    big = rustgrad.tensor([2**62 + 1])
    assert big.item() == 2**62 + 1 and isinstance(big.item(), int)
    assert int(big) == 2**62 + 1
    assert rustgrad.tensor([[1, 2]]).tolist() == [[1, 2]]
    assert repr(rustgrad.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(rustgrad.tensor([1, 2], dtype=rustgrad.int32)) == "tensor([1, 2], dtype=rustgrad.int32)"
    assert [10, 20, 30][rustgrad.tensor(2)] == 30
    assert rustgrad.arange(6).reshape(2, 3)[rustgrad.tensor(1), rustgrad.tensor(2)].item() == 5
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        [10, 20][rustgrad.tensor(1.0)]


# ---------------------------------------------------------------- conversion in and out


def test_dtype_objects_and_torch_aliases():
    assert rustgrad.long is rustgrad.int64 and rustgrad.int is rustgrad.int32
    assert rustgrad.int64.is_signed and not rustgrad.uint8.is_signed
    assert not rustgrad.int32.is_floating_point and rustgrad.int32.itemsize == 4
    assert pickle.loads(pickle.dumps(rustgrad.uint8)) is rustgrad.uint8
    assert rustgrad.zeros(2, dtype=np.int64).dtype is rustgrad.int64
    assert rustgrad.zeros(2, dtype=int).dtype is rustgrad.int64
    assert rustgrad.zeros(2, dtype="long").dtype is rustgrad.int64


def test_tensor_keeps_the_dtype_of_its_data_as_torch():
    assert rustgrad.tensor([1, 2]).dtype is rustgrad.int64
    assert rustgrad.tensor([1.0, 2]).dtype is rustgrad.float32
    assert rustgrad.tensor([True]).dtype is rustgrad.bool
    assert rustgrad.tensor(np.array([1, 2], np.int64)).dtype is rustgrad.int64
    assert rustgrad.tensor(np.array([1, 2], np.uint8)).dtype is rustgrad.uint8
    assert rustgrad.as_tensor(np.array([1], np.int32)).dtype is rustgrad.int32
    # Other widths are copied into int64, which holds all their values.
    for other in (np.int8, np.int16, np.uint16, np.uint32):
        data = np.array([-1 if np.dtype(other).kind == "i" else 7, 2], other)
        t = rustgrad.tensor(data)
        assert t.dtype is rustgrad.int64 and t.tolist() == data.tolist()
    assert rustgrad.tensor(np.array([5], np.uint64)).tolist() == [5]
    with pytest.raises(errors.DTypeError, match="does not fit in int64"):
        rustgrad.tensor(np.array([2**64 - 1], np.uint64))


@pytest.mark.parametrize("name", INTS)
def test_from_numpy_shares_integer_memory(name):
    array = np.arange(6, dtype=NUMPY[name]).reshape(2, 3)
    t = rustgrad.from_numpy(array)
    assert t.dtype is dt(name)
    t[0, 0] = 9
    array[1, 2] = 7
    assert array[0, 0] == 9 and t[1, 2].item() == 7
    shared = np.asarray(t)
    shared[0, 1] = 4
    assert t[0, 1].item() == 4


def test_from_numpy_refuses_other_integer_widths():
    with pytest.raises(errors.DTypeError, match="can't convert np.ndarray of type int16.*int64, int32, uint8"):
        rustgrad.from_numpy(np.arange(3, dtype=np.int16))


@pytest.mark.parametrize("name", NAMES)
def test_dlpack_round_trips_every_dtype(name):
    a = sample(name)
    t = rustgrad.tensor(a)
    back = np.from_dlpack(t)
    assert back.dtype == NUMPY[name]
    np.testing.assert_array_equal(back, a)
    again = rustgrad.from_dlpack(a)
    assert again.dtype is dt(name) and again.tolist() == a.tolist()


@pytest.mark.parametrize("name", NAMES)
def test_save_load_and_pickle_keep_integer_dtypes(name, tmp_path):
    t = rustgrad.tensor(sample(name))
    rustgrad.save({"t": t}, tmp_path / "t.npz")
    loaded = rustgrad.load(tmp_path / "t.npz")["t"]
    assert loaded.dtype is t.dtype and loaded.tolist() == t.tolist()
    again = pickle.loads(pickle.dumps(t))
    assert again.dtype is t.dtype and again.tolist() == t.tolist()


@pytest.mark.parametrize("source", NAMES)
@pytest.mark.parametrize("target", NAMES)
def test_casts_between_every_pair_match_numpy(source, target):
    a = np.array([0, 1, 2, 100, 7], dtype=NUMPY[source]) if source != "bool" else sample(source)
    if source.startswith("float"):
        a = np.array([0.0, 1.9, -1.9, 100.5, 7.25], dtype=NUMPY[source])
        if target == "uint8":
            a = np.abs(a)  # numpy's cast of a negative float to uint8 is undefined
    t = rustgrad.tensor(a)
    for out in (t.to(dt(target)), t.type(dt(target)), rustgrad.tensor(t, dtype=dt(target))):
        assert out.dtype is dt(target)
        np.testing.assert_array_equal(out.numpy(), a.astype(NUMPY[target]))
    named = {"int64": t.long(), "int32": t.int(), "uint8": t.byte(), "bool": t.bool(),
             "float32": t.float(), "float64": t.double()}[target]
    np.testing.assert_array_equal(named.numpy(), a.astype(NUMPY[target]))


def test_integer_to_integer_casts_wrap_exactly():
    x = rustgrad.tensor([2**40 + 3, -1, 2**31])
    assert x.int().tolist() == np.array([2**40 + 3, -1, 2**31]).astype(np.int32).tolist()
    assert x.byte().tolist() == [3, 255, 0]
    assert rustgrad.tensor([2**62 + 1]).double().long().item() == 2**62  # via float64, which rounds


@pytest.mark.parametrize("name", NAMES)
def test_data_moving_ops_work_for_every_dtype(name):
    a = np.arange(12).reshape(3, 4).astype(NUMPY[name])
    x = rustgrad.tensor(a)
    np.testing.assert_array_equal(x.t().reshape(-1).numpy(), a.T.reshape(-1))
    np.testing.assert_array_equal(x[1:, ::-2].numpy(), a[1:, ::-2])
    np.testing.assert_array_equal(x.transpose(0, 1).contiguous().numpy(), a.T)
    mask = a.astype(np.float64) > 4
    np.testing.assert_array_equal(x[rustgrad.tensor(mask)].numpy(), a[mask])
    np.testing.assert_array_equal(rustgrad.where(rustgrad.tensor(mask), x, x.t().t()).numpy(), a)
    np.testing.assert_array_equal(x.clone().numpy(), a)
    y = rustgrad.zeros(3, 4, dtype=dt(name))
    y[1] = x[2]
    y[:, 0] = x[:, 3]
    expected = np.zeros((3, 4), NUMPY[name])
    expected[1] = a[2]
    expected[:, 0] = a[:, 3]
    np.testing.assert_array_equal(y.numpy(), expected)
    y.copy_(x.t().t())
    np.testing.assert_array_equal(y.numpy(), a)
    y.fill_(1)
    np.testing.assert_array_equal(y.numpy(), np.ones((3, 4), NUMPY[name]))
    y.zero_()
    assert not y.numpy().any()
    assert x[1, 2].item() == a[1, 2].item()


# ---------------------------------------------------------------- factories


def test_factories_take_integer_dtypes_and_infer_them_as_torch():
    assert rustgrad.zeros(2, 3, dtype=rustgrad.int32).tolist() == [[0, 0, 0], [0, 0, 0]]
    assert rustgrad.ones(2, dtype=rustgrad.uint8).dtype is rustgrad.uint8
    assert rustgrad.empty(2, dtype=rustgrad.long).tolist() == [0, 0]
    assert rustgrad.full((2,), 3).dtype is rustgrad.int64
    assert rustgrad.full((2,), 3.0).dtype is rustgrad.float32
    assert rustgrad.full((2,), True).dtype is rustgrad.bool
    assert rustgrad.full((1,), 2**62 + 1).item() == 2**62 + 1
    assert rustgrad.arange(5).dtype is rustgrad.int64 and rustgrad.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert rustgrad.arange(10, 0, -3).tolist() == [10, 7, 4, 1]
    assert rustgrad.arange(0, 1, 0.5).dtype is rustgrad.float32
    assert rustgrad.arange(5, dtype=rustgrad.float64).dtype is rustgrad.float64
    assert rustgrad.arange(0.0, 3.0, dtype=rustgrad.int32).tolist() == [0, 1, 2]
    x = rustgrad.tensor([1, 2], dtype=rustgrad.int32)
    for like in (rustgrad.zeros_like(x), rustgrad.ones_like(x), rustgrad.full_like(x, 7)):
        assert like.dtype is rustgrad.int32
    assert rustgrad.eye(2, dtype=rustgrad.int64).tolist() == [[1, 0], [0, 1]]


REQUIRES_GRAD_ON_INTEGERS = [
    lambda: rustgrad.zeros(2, dtype=rustgrad.long, requires_grad=True),
    lambda: rustgrad.tensor([1, 2], requires_grad=True),
    lambda: rustgrad.arange(3, requires_grad=True),
    lambda: rustgrad.tensor([1, 2]).requires_grad_(),
    lambda: setattr(rustgrad.tensor([True]), "requires_grad", True),
]


@pytest.mark.parametrize("call", REQUIRES_GRAD_ON_INTEGERS)
def test_requires_grad_on_an_integer_or_bool_tensor_raises_as_torch(call):
    with pytest.raises(errors.GradientError, match="(?i)only Tensors of floating point and complex dtype can "
                                                   "require gradients") as info:
        call()
    assert isinstance(info.value, RuntimeError)


def test_gradients_reach_floats_mixed_with_integers():
    w = rustgrad.tensor([0.5, 2.0], requires_grad=True)
    n = rustgrad.tensor([3, 4])
    (w * n + w / n).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [3 + 1 / 3, 4 + 1 / 4], rtol=1e-6)
    assert not n.requires_grad and n.grad is None
    assert not w.long().requires_grad  # an integer result is not differentiable


# ---------------------------------------------------------------- division by zero and in-place rules

DIVISIONS_BY_ZERO = [
    lambda: rustgrad.tensor([1, 2]) // 0,
    lambda: rustgrad.tensor([1, 2]) % 0,
    lambda: rustgrad.floor_divide(rustgrad.tensor([1, 2]), rustgrad.tensor([1, 0])),
    lambda: rustgrad.remainder(rustgrad.tensor([1, 2], dtype=rustgrad.uint8),
                               rustgrad.tensor([0], dtype=rustgrad.uint8)),
    lambda: 5 // rustgrad.tensor([1, 0], dtype=rustgrad.int32),
    lambda: rustgrad.tensor([1, 2]).floor_divide_(0),
    lambda: rustgrad.tensor([True]) // rustgrad.tensor([0]),
]


@pytest.mark.parametrize("call", DIVISIONS_BY_ZERO)
def test_integer_division_by_zero_raises_zero_division_error(call):
    with pytest.raises(errors.DivisionByZeroError, match="ZeroDivisionError: integer division or remainder by zero"):
        call()
    with pytest.raises(ZeroDivisionError):
        call()
    with pytest.raises(RuntimeError):
        call()


def test_float_division_by_zero_gives_infinities_as_numpy():
    out = rustgrad.tensor([1.0, -1.0, 0.0]) // 0.0
    with np.errstate(all="ignore"):
        expected = np.floor_divide(np.array([1.0, -1.0, 0.0], np.float32), np.float32(0.0))
    np.testing.assert_array_equal(out.numpy(), expected)
    assert (rustgrad.tensor([1, 2]) / 0).tolist() == [float("inf"), float("inf")]


def test_in_place_ops_keep_the_dtype_and_refuse_a_float_result():
    x = rustgrad.tensor([5, 7])
    x += 1
    x *= rustgrad.tensor([2, 3], dtype=rustgrad.int32)
    x //= 4
    x %= 3
    assert x.tolist() == [0, 0] and x.dtype is rustgrad.int64
    for update in (lambda t: t.__iadd__(0.5), lambda t: t.div_(2), lambda t: t.add_(rustgrad.ones(2)),
                   lambda t: t.clamp_(0.5, 2)):
        t = rustgrad.tensor([1, 2])
        with pytest.raises(errors.DTypeError, match="result type float32 can't be cast to the desired output "
                                                    "type int64"):
            update(t)
        assert t.tolist() == [1, 2]
    f = rustgrad.tensor([1.0, 2.0])
    f += rustgrad.tensor([1, 1])
    assert f.tolist() == [2.0, 3.0] and f.dtype is rustgrad.float32


def test_scalar_operands_out_of_range_or_negative_powers_raise():
    with pytest.raises(errors.InvalidArgumentError, match="cannot be converted to type int32 without overflow"):
        rustgrad.tensor([1], dtype=rustgrad.int32) + 2**40
    with pytest.raises(errors.InvalidArgumentError, match="Integers to negative integer powers are not allowed"):
        rustgrad.tensor([2]) ** -1
    with pytest.raises(errors.NumericOverflowError, match="int64 without overflow"):
        rustgrad.tensor([1]) + 2**70
    assert (2 ** rustgrad.tensor([0, 3, -1])).tolist() == [1, 8, 0]


def test_bool_arithmetic_follows_torch():
    a, b = rustgrad.tensor([True, False]), rustgrad.tensor([True, True])
    assert (a + b).tolist() == [True, True] and (a * b).tolist() == [True, False]
    with pytest.raises(errors.DTypeError, match="Subtraction, the `-` operator, with two bool tensors"):
        a - b
    with pytest.raises(errors.DTypeError, match="abs: expected an integer tensor but got bool"):
        a.abs()
    assert (a + True).tolist() == [True, True] and (a * False).tolist() == [False, False]
    with pytest.raises(errors.DTypeError, match="pow: not supported for bool tensors"):
        a ** True


def test_where_and_masks_with_integers():
    x = rustgrad.tensor([3, -1, 4])
    assert rustgrad.where(x > 0, 1, 0).dtype is rustgrad.int64
    assert rustgrad.where(x > 0, x, 0.5).dtype is rustgrad.float32
    assert x[x > 0].tolist() == [3, 4]
    x[x < 0] = 0
    assert x.tolist() == [3, 0, 4]
    x.fill_(7)
    assert x.tolist() == [7, 7, 7]
    assert x.clamp(0, 5).dtype is rustgrad.int64 and x.clamp(0, 5.5).dtype is rustgrad.float32


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
