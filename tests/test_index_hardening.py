"""Indexing, reductions and in-place updates on the edge cases a hostile user tries:
bool scalars as indices, huge and negative slice steps, zero-size dims, repeated
reduction dims, empty sums, overlapping in-place operands, and large in-place
kernels that must let other Python threads run."""

from __future__ import annotations

import numpy as np
import pytest
from _gil_probe import GilProbe, python_busy_loop

import rustgrad
import rustgrad.compat.v1 as tf
from rustgrad import errors

S = slice(None)


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def data(shape=(2, 3, 4)):
    return np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)


def assert_same(result, expected):
    got = np.asarray(result.detach() if isinstance(result, rustgrad.Tensor) else result)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def run_static(build, array):
    """Builds `build(placeholder)` over a placeholder of array's shape and runs it on array."""
    p = tf.placeholder(tf.float64, array.shape)
    out = build(p)
    with tf.Session() as sess:
        return sess.run(out, {p: array})


# ---------------------------------------------------------------- bool scalars index like numpy

BOOL_KEYS = [
    True,
    False,
    (0, True),
    (True, 0),
    (S, 0, True),
    (0, S, True),
    (True, S, 0),
    (Ellipsis, True),
    (True, Ellipsis, 0),
    (None, True),
    (S, True, None, 0),
    (True, False),
    (True, True, 1),
    np.True_,
    np.False_,
    (0, np.True_),
    np.array(True),
    (S, np.array(False)),
]


@pytest.mark.parametrize("key", BOOL_KEYS, ids=repr)
def test_bool_scalar_index_adds_a_dim_of_size_one_or_zero(key):
    a = data()
    assert_same(rustgrad.tensor(a)[key], a[key])


@pytest.mark.parametrize("key", BOOL_KEYS, ids=repr)
def test_bool_scalar_index_in_a_static_graph_matches_numpy(key):
    a = data()
    assert_same(run_static(lambda p: p[key], a), a[key])


@pytest.mark.parametrize("value", [True, False])
def test_zero_dim_bool_tensor_index_matches_a_bool_scalar(value):
    a = data()
    x = rustgrad.tensor(a)
    assert_same(x[rustgrad.tensor(value)], a[value])
    assert_same(x[0, rustgrad.tensor(value)], a[0, value])


def test_bool_scalar_index_of_a_zero_dim_tensor():
    x = rustgrad.tensor(5.0)
    assert x[True].shape == (1,)
    assert x[False].shape == (0,)
    assert x[True, None].shape == (1, 1)


@pytest.mark.parametrize("key", [True, (0, True), (S, 1, np.True_), np.array(True)], ids=repr)
def test_assigning_through_a_true_index_writes_like_numpy(key):
    a = data()
    x = rustgrad.tensor(a)
    x[key] = -1.0
    a[key] = -1.0
    assert_same(x, a)


@pytest.mark.parametrize("key", [False, (0, False), (S, 1, np.False_)], ids=repr)
def test_assigning_through_a_false_index_writes_nothing(key):
    a = data()
    x = rustgrad.tensor(a)
    x[key] = -1.0
    x[key] = rustgrad.ones(4)
    assert_same(x, data())


def test_gradient_flows_through_a_bool_scalar_index():
    a = data()
    x = rustgrad.tensor(a, requires_grad=True)
    weights = rustgrad.tensor(np.arange(4.0))
    (x[0, True] * weights).sum().backward()
    expected = np.zeros_like(a)
    expected[0] = np.arange(4.0)
    assert_same(x.grad, expected)
    x.grad = None
    x[False].sum().backward()
    assert_same(x.grad, np.zeros_like(a))


# ---------------------------------------------------------------- slice steps and bounds as Python computes them

HUGE_SLICES = [
    slice(None, None, 2**63 - 1),
    slice(None, None, 2**70),
    slice(None, None, -(2**63)),
    slice(None, None, -(2**70)),
    slice(2**70, None),
    slice(None, -(2**70)),
    slice(-(2**70), 2**70),
    slice(2**70, -(2**70), -1),
    slice(-(2**63), 2**63 - 1, 2**62),
    slice(None, None, -1),
    slice(-2, None, -2),
    slice(1, -1, -1),
]


@pytest.mark.parametrize("key", HUGE_SLICES, ids=repr)
def test_slice_with_huge_or_negative_step_has_the_python_length(key):
    a = np.arange(3.0)
    x = rustgrad.tensor(a)[key]
    assert x.shape == a[key].shape
    assert_same(x, a[key])
    # The view must be usable by every later op (a wrong length made them fail).
    assert_same(x.exp(), np.exp(a[key]))
    assert x.sum().item() == a[key].sum()
    assert_same(x.clone(), a[key])


@pytest.mark.parametrize("key", HUGE_SLICES, ids=repr)
def test_static_slice_with_huge_or_negative_step_has_the_python_length(key):
    a = np.arange(3.0)
    p = tf.placeholder(tf.float64, [3])
    out = p[key]
    assert tuple(out.shape) == a[key].shape
    with tf.Session() as sess:
        assert_same(sess.run(out, {p: a}), a[key])


def test_writing_through_a_reversed_view_writes_the_base():
    a = data((3, 4))
    x = rustgrad.tensor(a)
    x[::-1, ::-2] = rustgrad.tensor(np.arange(6.0).reshape(3, 2))
    a[::-1, ::-2] = np.arange(6.0).reshape(3, 2)
    assert_same(x, a)


def test_gradient_through_a_reversed_slice():
    a = data((3, 4))
    x = rustgrad.tensor(a, requires_grad=True)
    w = np.linspace(-1.0, 1.0, 6).reshape(3, 2)
    (x[::-1, 2::-2] * rustgrad.tensor(w)).sum().backward()
    expected = np.zeros_like(a)
    expected[::-1, 2::-2] = w
    assert_same(x.grad, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("left", [np.s_[::-1], np.s_[:, ::-1], np.s_[::-1, ::-2]], ids=repr)
def test_matmul_of_reversed_views_matches_numpy(dtype, left):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 300)).astype(dtype), rng.standard_normal((300, 100)).astype(dtype)
    b = b[: a[left].shape[1]]  # the inner dim of the sliced a
    got = rustgrad.tensor(a)[left] @ rustgrad.tensor(b)[::-1]
    expected = a[left].astype(np.float64) @ b[::-1].astype(np.float64)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-3)


def test_zero_slice_step_raises_value_error():
    x = rustgrad.arange(3.0)
    with pytest.raises(errors.RustgradError, match="slice step cannot be zero") as info:
        x[::0]
    assert isinstance(info.value, ValueError)
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        x[::0] = 1.0
    p = tf.placeholder(tf.float32, [3])
    with pytest.raises(errors.RustgradError, match="slice step cannot be zero") as info:
        p[::0]
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("index", [2**63, -(2**63) - 1, 2**70])
def test_integer_index_beyond_64_bits_raises_index_error(index):
    with pytest.raises(errors.IndexOutOfRangeError, match="out of bounds"):
        rustgrad.arange(3.0)[index]
    with pytest.raises(errors.IndexOutOfRangeError, match="out of bounds"):
        tf.placeholder(tf.float32, [3])[index]


def test_non_integer_slice_bound_raises_type_error():
    with pytest.raises(errors.RustgradError, match="slice indices must be integers") as info:
        rustgrad.arange(3.0)[1.5:]
    assert isinstance(info.value, TypeError)
    with pytest.raises(TypeError, match="slice indices must be integers"):
        tf.placeholder(tf.float32, [3])[:"a"]


def test_two_ellipses_raise_index_error_in_both_modes():
    with pytest.raises(errors.IndexOutOfRangeError, match="single ellipsis"):
        rustgrad.zeros(2, 3)[..., ...]
    with pytest.raises(errors.IndexOutOfRangeError, match="single ellipsis"):
        tf.placeholder(tf.float32, [2, 3])[..., 0, ...]


def test_float_index_raises_index_error_in_static_graphs():
    with pytest.raises(errors.IndexOutOfRangeError, match="valid indices"):
        tf.placeholder(tf.float32, [3])[1.5]


# ---------------------------------------------------------------- views of zero-size tensors


@pytest.mark.parametrize("key", [slice(1, None), 2, -1, (slice(1, None), slice(None)), slice(5, None)], ids=repr)
def test_assigning_into_a_view_of_a_zero_size_tensor(key):
    x = rustgrad.zeros(3, 0)
    x[key] = 1.0
    x[key] = rustgrad.ones(0)
    assert x.shape == (3, 0)
    assert x[key].clone().shape == np.zeros((3, 0))[key].shape


def test_in_place_ops_on_a_view_of_a_zero_size_tensor():
    x = rustgrad.zeros(4, 0)
    v = x[2:]
    v.add_(rustgrad.ones(2, 0))
    v.mul_(2.0)
    v.copy_(rustgrad.ones(0))
    v.clamp_(0, 1)
    v.fill_(3.0)
    assert v.sum().item() == 0.0


@pytest.mark.parametrize(
    "shape, key",
    [
        ((3, 0), slice(1, None)),
        ((3, 0), 2),
        ((0, 3), (slice(None), 1)),
        ((3, 4), slice(1, None)),
        ((3, 4), (slice(None, None, -2), 1)),
        ((2, 3, 4), (Ellipsis, slice(3, 0, -1))),
    ],
    ids=repr,
)
def test_backward_through_a_slice_gives_numpys_gradient(shape, key):
    a = data(shape)
    x = rustgrad.tensor(a, requires_grad=True)
    w = np.linspace(0.5, 1.5, a[key].size).reshape(a[key].shape)
    (x[key] * rustgrad.tensor(w)).sum().backward()
    expected = np.zeros_like(a)
    expected[key] = w
    assert_same(x.grad, expected)


# ---------------------------------------------------------------- reductions


@pytest.mark.parametrize("method", ["sum", "mean", "amax", "amin"])
@pytest.mark.parametrize("dims", [(0, 0), (1, -1), [0, 1, 0]], ids=repr)
def test_reducing_over_a_repeated_dim_raises(method, dims):
    x = rustgrad.ones(2, 3)
    with pytest.raises(errors.ShapeError, match="appears multiple times in the list of dims") as info:
        getattr(x, method)(dim=dims)
    assert isinstance(info.value, RuntimeError)


@pytest.mark.parametrize("reduce", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min"])
def test_static_reduction_over_a_repeated_axis_raises_invalid_argument(reduce):
    p = tf.placeholder(tf.float32, [2, 3])
    with pytest.raises(errors.InvalidArgumentError, match="appears multiple times"):
        getattr(tf, reduce)(p, axis=[1, -1])


@pytest.mark.parametrize("dtype", [rustgrad.float32, rustgrad.float64])
@pytest.mark.parametrize("shape, dim", [((0,), None), ((3, 0), 1), ((0, 3), 0), ((0, 5000), None)], ids=repr)
def test_sum_of_no_elements_is_positive_zero(dtype, shape, dim):
    out = rustgrad.zeros(*shape, dtype=dtype).sum(dim=dim).numpy()
    expected = np.zeros(shape).sum(axis=dim)
    assert out.shape == expected.shape
    assert not np.signbit(out).any()
    np.testing.assert_array_equal(out, expected)


def test_mean_of_no_elements_is_nan():
    assert np.isnan(rustgrad.zeros(0).mean().item())
    assert np.isnan(rustgrad.zeros(3, 0).mean(dim=1).numpy()).all()


def test_static_sum_of_no_elements_is_positive_zero():
    p = tf.placeholder(tf.float32, [None])
    total = tf.reduce_sum(p)
    with tf.Session() as sess:
        value = sess.run(total, {p: np.zeros(0, np.float32)})
    assert value == 0.0 and not np.signbit(value)


# ---------------------------------------------------------------- in-place ops read overlapping inputs first

IN_PLACE = {
    "add_": (lambda t, o: t.add_(o), lambda a, b: a + b),
    "sub_": (lambda t, o: t.sub_(o), lambda a, b: a - b),
    "mul_": (lambda t, o: t.mul_(o), lambda a, b: a * b),
    "div_": (lambda t, o: t.div_(o), lambda a, b: a / b),
    "add_alpha": (lambda t, o: t.add_(o, alpha=2.0), lambda a, b: a + 2.0 * b),
    "iadd": (lambda t, o: t.__iadd__(o), lambda a, b: a + b),
    "isub": (lambda t, o: t.__isub__(o), lambda a, b: a - b),
    "copy_": (lambda t, o: t.copy_(o), lambda a, b: b),
    "setitem": (lambda t, o: t.__setitem__(slice(None), o), lambda a, b: b),
}


@pytest.mark.parametrize("op", IN_PLACE)
@pytest.mark.parametrize("shift", [1, -1, 2])
def test_in_place_op_on_overlapping_numpy_views_reads_the_old_values(op, shift):
    apply, reference = IN_PLACE[op]
    a = np.arange(1.0, 9.0)
    dst, src = (slice(shift, None), slice(None, -shift)) if shift > 0 else (slice(None, shift), slice(-shift, None))
    expected = a.copy()
    expected[dst] = reference(expected[dst], expected[src].copy())
    apply(rustgrad.from_numpy(a[dst]), rustgrad.from_numpy(a[src]))
    np.testing.assert_array_equal(a, expected)


@pytest.mark.parametrize("op", IN_PLACE)
def test_in_place_op_on_overlapping_views_of_one_tensor_reads_the_old_values(op):
    apply, reference = IN_PLACE[op]
    a = np.arange(1.0, 9.0)
    x = rustgrad.tensor(a)
    apply(x[1:], x[:-1])
    a[1:] = reference(a[1:], a[:-1].copy())
    assert_same(x, a)


def test_assigning_a_view_into_an_overlapping_slice_reads_the_old_values():
    a = np.arange(6.0)
    x = rustgrad.from_numpy(a)
    x[1:] = x[:-1]
    np.testing.assert_array_equal(a, [0, 0, 1, 2, 3, 4])
    x[:-1] = rustgrad.from_numpy(a[1:])
    np.testing.assert_array_equal(a, [0, 1, 2, 3, 4, 4])


def test_in_place_add_of_a_reversed_view_of_itself_reads_the_old_values():
    a = np.arange(6.0)
    x = rustgrad.from_numpy(a)
    x.add_(rustgrad.from_numpy(a[::-1]))
    np.testing.assert_array_equal(a, [5.0] * 6)


def test_in_place_add_of_disjoint_numpy_views_is_exact():
    a = np.arange(8.0)
    rustgrad.from_numpy(a[:4]).add_(rustgrad.from_numpy(a[4:]))
    np.testing.assert_array_equal(a, [4, 6, 8, 10, 4, 5, 6, 7])


# ---------------------------------------------------------------- large in-place kernels release the GIL

BIG = 8_000_000
SMALL = 16_383  # below the 16384 elements from which an in-place kernel releases the GIL (rust/python/tensor/mod.rs)


BIG_IN_PLACE = {
    "add_": lambda x, y, mask: x.add_(y),
    "sub_": lambda x, y, mask: x.sub_(y),
    "iadd": lambda x, y, mask: x.__iadd__(y),
    "clamp_": lambda x, y, mask: x.clamp_(-1.0, 1.0),
    "copy_": lambda x, y, mask: x.copy_(y),
    "setitem_tensor": lambda x, y, mask: x.__setitem__(slice(None), y),
    "setitem_number": lambda x, y, mask: x.__setitem__(slice(None), 2.0),
    "setitem_mask": lambda x, y, mask: x.__setitem__(mask, 0.5),
    "fill_": lambda x, y, mask: x.fill_(3.0),
    "zero_": lambda x, y, mask: x.zero_(),
    "mul_number": lambda x, y, mask: x.mul_(0.5),
}


@pytest.mark.parametrize("op", BIG_IN_PLACE)
def test_large_in_place_kernel_lets_other_threads_run(op):
    """A kernel holding the GIL leaves the other thread's counter where it was, however long it runs."""
    previous = rustgrad.get_num_threads()
    rustgrad.set_num_threads(1)
    try:
        apply = BIG_IN_PLACE[op]
        small_x, small_y = rustgrad.ones(SMALL, dtype=rustgrad.float64), rustgrad.ones(SMALL, dtype=rustgrad.float64)
        small_mask = small_y > 0
        x = rustgrad.ones(BIG, dtype=rustgrad.float64)
        y = rustgrad.ones(BIG, dtype=rustgrad.float64)
        mask = y > 0
        apply(x, y, mask)  # warm-up
        with GilProbe() as probe:
            assert probe.count_during(python_busy_loop) == 0, "the counter moved in pure Python: the probe is broken"
            assert probe.count_during(lambda: apply(small_x, small_y, small_mask)) == 0, (
                f"the counter moved during {op} on {SMALL} elements, which keeps the GIL")
            counts = probe.releases_the_gil(lambda: apply(x, y, mask))
        assert counts[-1] > 0, f"the other thread never ran during {len(counts)} calls of {op}: the GIL was held"
    finally:
        rustgrad.set_num_threads(previous)
