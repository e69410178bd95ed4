"""Integer dtypes (int64, int32, uint8) and bool in eager mode, which promotes as PyTorch
does (docs/dtypes.md).

The promotion tables below are written out entry by entry, for every pair of dtypes; values
are checked against numpy, which wraps integers around and rounds ``//`` and ``%`` as
Python does, exactly as rustgrad must. Conversion in and out and the factories are tested
in test_int_conversions.py, static graphs (which follow TF1) in test_static_int_dtypes.py,
with this module's dtype names and samples.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import rustgrad
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
