"""Advanced indexing (integer tensors, lists, numpy arrays and masks in a key) and the index
ops' behaviour beyond the shared table tests: reads and writes against numpy on both fronts,
gradients, errors (type and message), duplicates, determinism across thread counts, and the
torch/TF1 differences of one_hot, gather and where."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import rustgrad as torch
import rustgrad.nn.functional as F
import rustgrad.static as tf
from rustgrad.autograd import gradcheck
from rustgrad.errors import DTypeError, GradientError, IndexOutOfRangeError, InvalidArgumentError, ShapeError

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

# ---------------------------------------------------------------- keys drawn against numpy


@st.composite
def index_arrays(draw, size: int, shape: tuple) -> np.ndarray:
    """Integer positions into a dim of ``size`` (negative ones too), of ``shape``."""
    if size == 0:
        shape = shape + (0,) if not shape or 0 not in shape else shape
        return np.zeros(shape, np.int64)
    return draw(hnp.arrays(np.int64, shape, elements=st.integers(-size, size - 1)))


@st.composite
def mixed_keys(draw, shape: tuple, unique: bool = False) -> tuple:
    """A numpy key for an array of ``shape``: ints, slices, None, at most one ``...``, integer
    arrays (broadcasting to one shape) and bool masks, in any order. ``unique``: no position is
    picked twice (assignment of different values to one element is then defined)."""
    rank = len(shape)
    covered = draw(st.integers(0, rank))  # dims the key names one by one; `...` may stand for the rest
    ellipsis_at = draw(st.one_of(st.none(), st.integers(0, covered))) if covered < rank else None
    b_shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    items: list[Any] = []
    d, arrays, mask_used, skipped = 0, 0, False, 0
    while d < covered:
        if ellipsis_at is not None and len(items) == ellipsis_at and not skipped_done(items):
            items.append(Ellipsis)
            skipped = rank - covered  # the dims `...` stands for
        kind = draw(st.sampled_from(["int", "slice", "array", "array", "mask", "none"]))
        size = shape[d + skipped]
        if kind == "none":
            items.append(None)
            continue
        if kind == "int" and size and not unique:
            items.append(draw(st.integers(-size, size - 1)))
        elif kind == "array" and not mask_used and (not unique or arrays == 0):
            sub = b_shape[len(b_shape) - draw(st.integers(0, len(b_shape))):]
            sub = tuple(1 if draw(st.booleans()) else n for n in sub)
            if unique:
                picks = draw(st.permutations(range(size))) if size else []
                sub = (min(len(picks), draw(st.integers(0, 3))),)
                values = np.array(picks[:sub[0]], np.int64)
            else:
                values = draw(index_arrays(size, sub))
            items.append(values)
            arrays += 1
        elif kind == "mask" and arrays == 0 and not mask_used:
            k = draw(st.integers(1, covered - d))
            items.append(draw(hnp.arrays(np.bool_, shape[d + skipped:d + skipped + k])))
            mask_used, d = True, d + k
            continue
        else:
            start = draw(st.one_of(st.none(), st.integers(-4, 4)))
            stop = draw(st.one_of(st.none(), st.integers(-4, 4)))
            step = draw(st.one_of(st.none(), st.sampled_from([1, 2, -1, 3])))
            items.append(slice(start, stop, step))
        d += 1
    if ellipsis_at is not None and not skipped_done(items):
        items.append(Ellipsis)
    return tuple(items)


def skipped_done(items: list) -> bool:
    """Whether the key has its `...` (compared by identity: arrays have no truth value)."""
    return any(item is Ellipsis for item in items)


def rustgrad_key(draw, key: tuple) -> tuple:
    """The numpy key as rustgrad takes it: each index array as a list, an array or a tensor."""
    out = []
    for item in key:
        if isinstance(item, np.ndarray):
            form = draw(st.sampled_from(["array", "list", "tensor", "int32"]))
            if form == "list" and item.dtype != np.bool_ and item.ndim > 0:
                out.append(item.tolist())
            elif form == "tensor":
                out.append(torch.tensor(item))
            elif form == "int32" and item.dtype != np.bool_:
                out.append(torch.tensor(item.astype(np.int32)))
            else:
                out.append(item)
        else:
            out.append(item)
    return tuple(out)


def has_array(key: tuple) -> bool:
    return any(isinstance(item, np.ndarray) for item in key)


def static_run(build, *feeds: np.ndarray, shapes: Any = None):
    """``build(*placeholders)`` run in a fresh graph with ``feeds`` (placeholders of unknown dims)."""
    with tf.Graph().as_default():
        phs = [tf.placeholder(tf.as_dtype(a.dtype.name), shape=[None] * a.ndim) for a in feeds]
        out = build(*phs)
        with tf.Session() as sess:
            return sess.run(out, dict(zip(phs, feeds)))


@settings(deadline=None)
@given(data=st.data())
def test_reads_match_numpy_for_mixed_keys_in_both_modes(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=4))
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    key = data.draw(mixed_keys(shape))
    expected = x[key]
    given_key = rustgrad_key(data.draw, key)
    eager = torch.tensor(x)[given_key].numpy()
    assert eager.shape == expected.shape
    np.testing.assert_array_equal(eager, expected)
    static = static_run(lambda p: p[given_key], x)
    np.testing.assert_array_equal(static, expected)


@settings(deadline=None)
@given(data=st.data())
def test_static_shapes_of_mixed_keys_hold_what_numpy_gives(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=4))
    key = data.draw(mixed_keys(shape))
    expected = np.zeros(shape)[key].shape
    with tf.Graph().as_default():
        inferred = tf.placeholder(tf.float32, shape)[key].shape
    assert inferred.rank == len(expected)
    assert all(d is None or d == e for d, e in zip(inferred.as_list(), expected))


@settings(deadline=None)
@given(data=st.data())
def test_assignment_matches_numpy_for_mixed_keys_in_both_modes(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=4))
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    key = data.draw(mixed_keys(shape, unique=True))
    target = x[key].shape
    value_shape = target[len(target) - data.draw(st.integers(0, len(target))):]
    value = data.draw(hnp.arrays(np.float32, value_shape, elements=st.floats(-100, -1, width=32)))
    expected = x.copy()
    expected[key] = value
    given_key = rustgrad_key(data.draw, key)
    eager = torch.tensor(x)
    eager[given_key] = torch.tensor(value)
    np.testing.assert_array_equal(eager.numpy(), expected)

    def assign(p, v):
        q = p + 0.0
        q[given_key] = v
        return q

    np.testing.assert_array_equal(static_run(assign, x, value), expected)


@settings(deadline=None)
@given(data=st.data())
def test_augmented_assignment_matches_numpy_even_with_repeated_indices(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    key = data.draw(mixed_keys(shape))
    expected = x.copy()
    expected[key] += 10.0  # numpy (and torch) read once and write once: repeats add once
    eager = torch.tensor(x)
    eager[rustgrad_key(data.draw, key)] += 10.0
    np.testing.assert_array_equal(eager.numpy(), expected)


@settings(deadline=None, max_examples=25)
@given(data=st.data())
def test_gradients_of_reads_and_recorded_writes_match_finite_differences(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
    key = data.draw(mixed_keys(shape, unique=True))
    x = np.random.default_rng(0).uniform(-1, 1, shape)
    given_key = rustgrad_key(data.draw, key)
    target = x[key].shape
    value = np.random.default_rng(1).uniform(-1, 1, target)

    def read(t):
        return t[given_key] * 2.0

    def write(t, v):
        out = t * 1.0
        out[given_key] = v * 3.0
        return out

    assert gradcheck(read, [torch.tensor(x, requires_grad=True)])
    assert gradcheck(write, [torch.tensor(x, requires_grad=True), torch.tensor(value, requires_grad=True)])
    # Static gradients equal the eager ones.
    weights = np.random.default_rng(2).uniform(0.5, 1.5, x.shape)
    xt, vt = torch.tensor(x, requires_grad=True), torch.tensor(value, requires_grad=True)
    (write(xt, vt) * torch.tensor(weights)).sum().backward()

    def grads(p, v):
        return tf.gradients(tf.reduce_sum(write(p, v) * weights), [p, v])

    static_x, static_v = static_run(grads, x, value)
    np.testing.assert_allclose(static_x, xt.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(static_v, vt.grad.numpy(), rtol=1e-12)


# ---------------------------------------------------------------- reading, writing and their gradients


def test_repeated_indices_add_their_gradients_in_both_modes():
    x = torch.zeros(3, requires_grad=True)
    x[[0, 2, 0, 0]].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]
    (grad,) = static_run(lambda p: tf.gradients(tf.reduce_sum(p[[0, 2, 0, 0]]), [p]), np.zeros(3))
    assert grad.tolist() == [3.0, 0.0, 1.0]


def test_assignment_with_repeated_indices_keeps_the_last_value_in_both_modes():
    x = torch.zeros(3)
    x[torch.tensor([1, 1, 1])] = torch.tensor([5.0, 6.0, 7.0])
    assert x.tolist() == [0.0, 7.0, 0.0]

    def assign(p):
        q = p + 0.0
        q[[1, 1, 1]] = tf.constant([5.0, 6.0, 7.0], dtype=tf.float64)
        return q

    assert static_run(assign, np.zeros(3)).tolist() == [0.0, 7.0, 0.0]


def test_a_recorded_write_passes_the_gradient_to_the_value_and_zero_to_what_it_replaced():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = torch.tensor([10.0, 20.0], requires_grad=True)
    y = x * 1.0
    y[[2, 0]] = v
    assert y.tolist() == [20.0, 2.0, 10.0]
    assert y.grad_fn.name() == "IndexPutBackward0"
    (y * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 0.0]
    assert v.grad.tolist() == [3.0, 1.0]


def test_a_read_records_index_backward_as_torch_names_it():
    x = torch.ones(3, requires_grad=True)
    assert x[[0]].grad_fn.name() == "IndexBackward0"


def test_a_basic_key_assignment_is_recorded_too():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = torch.tensor(5.0, requires_grad=True)
    y = x * 2.0
    y[1:] = v
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 0.0, 0.0] and v.grad.item() == 2.0


def test_writing_into_a_leaf_that_requires_grad_is_refused():
    x = torch.zeros(3, requires_grad=True)
    with pytest.raises(GradientError, match="index_put_: a leaf Variable that requires grad"):
        x[[0]] = 1.0


def test_writes_go_through_views_into_their_base():
    base = torch.zeros(3, 4)
    base.t()[[1, 3], 0] = torch.tensor([7.0, 8.0])
    assert base[0].tolist() == [0.0, 7.0, 0.0, 8.0]


def test_an_index_of_the_tensor_itself_reads_before_it_writes():
    x, expected = torch.tensor([2, 0, 1]), np.array([2, 0, 1])
    x[x] = x * 10
    expected[expected] = expected * 10
    assert x.tolist() == expected.tolist() == [0, 10, 20]


def test_a_value_that_does_not_fit_the_picked_shape_is_refused_and_changes_nothing():
    x = torch.zeros(3, 4)
    with pytest.raises(ShapeError, match=r"value tensor of shape \[3\] cannot be broadcast to indexing result of "
                                         r"shape \[2, 4\]"):
        x[[0, 1]] = torch.ones(3)
    assert x.sum().item() == 0.0


def test_a_key_of_five_index_tensors_sends_each_gradient_to_its_element():
    x = np.random.default_rng(0).standard_normal((2, 3, 2, 3, 2))
    index = (np.array([1, 0]), np.array([2, 2]), np.array([0, 1]), np.array([1, 1]), np.array([0, 0]))
    t = torch.tensor(x, requires_grad=True)
    (t[tuple(torch.tensor(i) for i in index)] * torch.tensor([1.0, 2.0])).sum().backward()
    expected = np.zeros_like(x)
    np.add.at(expected, index, [1.0, 2.0])
    np.testing.assert_array_equal(t.grad.numpy(), expected)


def test_a_value_with_extra_leading_ones_is_assigned_as_numpy_does():
    x, expected = torch.zeros(3, requires_grad=True), np.zeros(3)
    value = torch.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    y = x * 1.0
    y[[2, 1, 0]] = value
    expected[[2, 1, 0]] = value.detach().numpy()
    assert y.tolist() == expected.tolist()
    (y * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert value.grad.tolist() == [[3.0, 2.0, 1.0]]


def test_a_static_value_that_cannot_fit_the_key_fails_when_the_node_is_built():
    p = tf.placeholder(tf.float32, [3, 4])
    with pytest.raises(ShapeError, match=r"value tensor of shape \(3,\) cannot be broadcast to indexing result of "
                                         r"shape \(2, 4\)"):
        p[[0, 1]] = tf.ones([3])


def test_lists_of_bools_are_masks_and_empty_lists_pick_nothing():
    x = torch.tensor(A)
    assert x[[True, False]].tolist() == A[[True, False]].tolist()
    assert x[[]].shape == (0, 3, 4)
    assert x[:, []].shape == (2, 0, 4)


def test_nested_lists_and_tuples_inside_a_key_are_index_arrays():
    x = torch.tensor(A)
    assert x[[[0, 1], [1, 0]]].shape == (2, 2, 3, 4)
    assert x[(1, 0), :, 2].tolist() == A[(1, 0), :, 2].tolist()


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("mode", ["eager", "static"])
def test_an_index_out_of_range_names_the_index_the_dim_and_its_size(mode):
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(IndexOutOfRangeError, match=r"^index 5 is out of bounds for dimension 1 with size 3$"):
        if mode == "eager":
            torch.tensor(x)[:, [0, 5]]
        else:
            static_run(lambda p: p[:, [0, 5]], x)
    with pytest.raises(IndexError, match=r"index -3 is out of bounds for dimension 0 with size 2"):
        if mode == "eager":
            torch.tensor(x)[torch.tensor([-3])]
        else:
            static_run(lambda p: p[tf.constant([-3])], x)


def test_an_index_out_of_range_is_reported_before_anything_is_written():
    x = torch.zeros(3)
    with pytest.raises(IndexOutOfRangeError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x[[0, 3]] = 1.0
    assert x.tolist() == [0.0, 0.0, 0.0]


def test_float_index_tensors_and_arrays_are_refused_in_both_modes():
    with pytest.raises(IndexOutOfRangeError, match="tensors used as indices must be long, int, byte or bool tensors"):
        torch.tensor(A)[torch.tensor([0.0])]
    with pytest.raises(IndexError, match=r"arrays used as indices must be of integer \(or boolean\) type"):
        torch.tensor(A)[np.array([0.0])]
    with pytest.raises(IndexOutOfRangeError, match="tensors used as indices must be long, int, byte or bool tensors"):
        tf.placeholder(tf.float32, [2])[tf.placeholder(tf.float32, [1])]


def test_index_tensors_that_do_not_broadcast_together_raise_as_torch_does():
    with pytest.raises(IndexOutOfRangeError, match=r"shape mismatch: indexing tensors could not be broadcast "
                                                    r"together with shapes \[2\], \[3\]"):
        torch.tensor(A)[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="shape mismatch"):
        tf.placeholder(tf.float32, [2, 3, 4])[[0, 1], [0, 1, 2]]


def test_a_mask_that_does_not_fit_its_dims_raises_in_both_modes():
    message = r"The shape of the mask \[3\] at index 0 does not match the shape of the indexed tensor \[2\] at index 0"
    with pytest.raises(IndexOutOfRangeError, match=message):
        torch.tensor(A)[np.array([True, False, True]), 0]
    with pytest.raises(IndexOutOfRangeError, match=message):
        tf.placeholder(tf.float32, [2, 3, 4])[np.array([True, False, True]), 0]


def test_too_many_indices_are_refused():
    with pytest.raises(IndexOutOfRangeError, match=r"too many indices for tensor of dimension 3 \(got 4\)"):
        torch.tensor(A)[[0], 0, 0, 0]


def test_a_uint8_index_tensor_is_a_mask_with_torchs_deprecation_warning():
    mask = torch.tensor([1, 0], dtype=torch.uint8)
    with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
        picked = torch.tensor(A)[mask]
    np.testing.assert_array_equal(picked.numpy(), A[[True, False]])


def test_numpy_integer_arrays_of_any_width_are_indices():
    for dtype in (np.int8, np.uint8, np.int16, np.uint32, np.int64):
        assert torch.tensor(A)[np.array([1, 0], dtype)].tolist() == A[[1, 0]].tolist()


def test_a_graph_tensor_index_of_an_eager_tensor_says_to_run_it_first():
    with pytest.raises(IndexOutOfRangeError, match="static graph tensor cannot index an eager tensor"):
        torch.tensor(A)[:, tf.placeholder(tf.int64, [2])]


# ---------------------------------------------------------------- static graphs: sizes known at run time


def test_static_index_tensors_fed_at_run_time_read_and_differentiate_at_any_size():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float64, [None, None])
        i = tf.placeholder(tf.int64, [None])
        y = p[i, 1:]
        assert y.shape.as_list() == [None, None]
        (grad,) = tf.gradients(tf.reduce_sum(y), [p])
        with tf.Session() as sess:
            for rows, picks in ((3, [2, 2, 0]), (5, [4, 1])):
                x = np.arange(rows * 3.0).reshape(rows, 3)
                got, g = sess.run([y, grad], {p: x, i: picks})
                np.testing.assert_array_equal(got, x[picks, 1:])
                expected = np.zeros_like(x)
                np.add.at(expected, (picks, slice(1, None)), 1.0)
                np.testing.assert_array_equal(g, expected)


def test_static_gather_with_placeholder_indices_has_run_time_gradients():
    with tf.Graph().as_default():
        params = tf.placeholder(tf.float64, None)
        indices = tf.placeholder(tf.int32, None)
        out = tf.gather(params, indices, axis=1)
        (grad,) = tf.gradients(tf.reduce_sum(out * 2.0), [params])
        with tf.Session() as sess:
            x = np.arange(12.0).reshape(3, 4)
            got, g = sess.run([out, grad], {params: x, indices: [[3, 3], [0, 1]]})
    np.testing.assert_array_equal(got, np.take(x, [[3, 3], [0, 1]], axis=1))
    expected = np.zeros_like(x)
    np.add.at(expected, (slice(None), [3, 3, 0, 1]), 2.0)
    np.testing.assert_array_equal(g, expected)


# ---------------------------------------------------------------- the ops: errors and front differences


def test_gather_and_scatter_out_of_range_name_the_op_the_index_and_the_size():
    x = torch.zeros(2, 3)
    with pytest.raises(IndexOutOfRangeError, match=r"^gather: index 3 is out of bounds for dimension 1 with size 3$"):
        torch.gather(x, 1, torch.tensor([[3]]))
    with pytest.raises(IndexOutOfRangeError, match="scatter: index -1 is out of bounds for dimension 0 with size 2"):
        x.scatter(0, torch.tensor([[-1]]), 1.0)
    with pytest.raises(IndexOutOfRangeError, match="index_select: index -1 is out of bounds for dimension 0"):
        x.index_select(0, torch.tensor([-1]))  # torch refuses negative indices here, unlike indexing
    with pytest.raises(IndexOutOfRangeError, match="take: index 6 is out of bounds for a tensor of 6 elements"):
        torch.take(x, torch.tensor([6]))
    with pytest.raises(IndexOutOfRangeError, match="gather: index 2 is out of bounds for dimension 0 with size 2"):
        static_run(lambda p: tf.gather(p, [0, 2]), np.zeros((2, 3)))
    with pytest.raises(IndexOutOfRangeError, match="gather_nd: index 4 is out of bounds for dimension 1 with size 3"):
        static_run(lambda p: tf.gather_nd(p, [[1, 4]]), np.zeros((2, 3)))


def test_gather_along_the_last_dim_matches_numpy_and_names_the_first_bad_index():
    # An index with the input's leading sizes, along the last dim, is gathered line by line.
    rng = np.random.default_rng(5)
    for shape, k in [((7, 300), 40), ((3, 4, 5), 9), ((6,), 11), ((2, 0, 3), 4)]:
        x = rng.standard_normal(shape).astype(np.float32)
        index = rng.integers(0, shape[-1], (*shape[:-1], k))
        np.testing.assert_array_equal(torch.gather(torch.tensor(x), -1, torch.tensor(index)).numpy(),
                                      np.take_along_axis(x, index, -1))
    x = torch.zeros(4, 3)
    index = torch.tensor([[0, 1], [2, 2], [5, -1], [-2, 0]])
    with pytest.raises(IndexOutOfRangeError, match=r"^gather: index 5 is out of bounds for dimension 1 with size 3$"):
        torch.gather(x, 1, index)
    with pytest.raises(IndexOutOfRangeError, match=r"^gather: index -1 is out of bounds for dimension 1 with size 3$"):
        torch.gather(x, 1, torch.tensor([[0, 1], [2, 2], [1, -1], [-2, 0]]))
    with pytest.raises(IndexOutOfRangeError, match=r"^gather: index 0 is out of bounds for dimension 1 with size 0$"):
        torch.gather(torch.zeros(2, 0), 1, torch.zeros(2, 1, dtype=torch.int64))


def test_index_ops_take_int64_and_int32_indices_and_refuse_others():
    x = torch.arange(6.0).reshape(2, 3)
    for dtype in (torch.int64, torch.int32):
        assert torch.gather(x, 1, torch.tensor([[2], [0]], dtype=dtype)).tolist() == [[2.0], [3.0]]
    with pytest.raises(DTypeError, match="gather: expected an int64 or int32 index tensor, got float32"):
        torch.gather(x, 1, torch.tensor([[0.0]]))
    with pytest.raises(DTypeError, match="expected an int64 or int32 index tensor, got float32"):
        tf.gather(tf.placeholder(tf.float32, [2]), tf.placeholder(tf.float32, [1]))


def test_gather_refuses_an_index_of_another_rank_or_larger_than_the_input():
    x = torch.zeros(2, 3)
    with pytest.raises(ShapeError, match="Index tensor must have the same number of dimensions as input tensor"):
        torch.gather(x, 1, torch.tensor([0]))
    with pytest.raises(ShapeError, match="Size does not match at dimension 0"):
        torch.gather(x, 1, torch.zeros(3, 1, dtype=torch.int64))


def test_torch_index_select_takes_a_vector_and_tf_gather_any_shape():
    x = np.arange(12.0).reshape(3, 4)
    with pytest.raises(IndexOutOfRangeError, match=r"index_select\(\): Index is supposed to be a vector"):
        torch.tensor(x).index_select(0, torch.tensor([[0]]))
    assert torch.tensor(x).index_select(1, torch.tensor(2)).shape == (3, 1)  # one index keeps the dim, as torch
    got = static_run(lambda p: tf.gather(p, [[2, 0], [1, 1]]), x)
    np.testing.assert_array_equal(got, x[[[2, 0], [1, 1]]])


def test_tf_gather_with_batch_dims_picks_within_each_batch():
    x = np.arange(24.0).reshape(2, 3, 4)
    indices = np.array([[2, 0], [1, 1]])
    expected = np.stack([x[b][:, indices[b]] for b in range(2)])
    got = static_run(lambda p: tf.gather(p, indices, axis=2, batch_dims=1), x)
    np.testing.assert_array_equal(got, expected)
    axis_default = static_run(lambda p: tf.gather(p, indices, batch_dims=1), x)  # axis None: batch_dims
    np.testing.assert_array_equal(axis_default, np.stack([x[b][indices[b]] for b in range(2)]))


def test_scatter_writes_a_number_and_reduces_when_asked():
    index = torch.tensor([[1, 1], [0, 2]])
    assert torch.zeros(2, 3).scatter(1, index, 2.5).tolist() == [[0.0, 2.5, 0.0], [2.5, 0.0, 2.5]]
    src = torch.tensor([[2.0, 3.0], [4.0, 5.0]])
    assert torch.ones(2, 3).scatter(1, index, src, reduce="multiply").tolist() == [[1, 6, 1], [4, 1, 5]]
    assert torch.ones(2, 3).scatter(1, index, src, reduce="add").tolist() == [[1, 6, 1], [5, 1, 6]]
    with pytest.raises(InvalidArgumentError, match="reduce argument must be either add or multiply, got 'max'"):
        torch.ones(2, 3).scatter(1, index, src, reduce="max")


def test_scatter_with_multiply_has_no_gradient():
    x = torch.ones(2, 3, requires_grad=True)
    out = (x * 1.0).scatter(1, torch.tensor([[0]]), torch.tensor([[2.0]]), reduce="multiply")
    with pytest.raises(GradientError, match="reduce='multiply'"):
        out.sum().backward()


def test_scatter_gives_a_larger_source_gradient_only_where_it_was_read():
    src = torch.arange(6.0).reshape(2, 3).requires_grad_()
    out = torch.zeros(2, 3).scatter(0, torch.tensor([[1, 0]]), src)
    assert out.tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    (out * torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    assert src.grad.tolist() == [[4.0, 2.0, 0.0], [0.0, 0.0, 0.0]]


def test_in_place_forms_write_into_the_tensor_and_return_it():
    x = torch.zeros(2, 3)
    assert x.masked_fill_(torch.tensor([True, False, True]), 1.0) is x
    x.scatter_(1, torch.tensor([[1], [1]]), value=4.0)
    x.scatter_add_(0, torch.tensor([[0, 0, 0]]), torch.ones(1, 3))
    x.index_add_(1, torch.tensor([2, 2]), torch.ones(2, 2), alpha=0.5)
    assert x.tolist() == [[2.0, 5.0, 3.0], [1.0, 4.0, 2.0]]
    with pytest.raises(Exception, match="give exactly one of src"):
        x.scatter_(1, torch.tensor([[1]]))


def test_index_put_writes_or_accumulates_and_records_the_gradient():
    x = torch.zeros(3)
    assert x.index_put_((torch.tensor([0, 0, 2]),), torch.tensor([1.0, 2.0, 3.0]), accumulate=True) is x
    assert x.tolist() == [3.0, 0.0, 3.0]
    copy = torch.index_put(x, (torch.tensor([1]),), torch.tensor(9.0))
    assert (x.tolist(), copy.tolist()) == ([3.0, 0.0, 3.0], [3.0, 9.0, 3.0])
    w = torch.ones(2, 3, requires_grad=True)
    v = torch.tensor([1.0, 2.0], requires_grad=True)
    z = (w * 2).index_put((torch.tensor([0, 0]), torch.tensor([1, 1])), v, accumulate=True)
    assert z.tolist() == [[2.0, 5.0, 2.0], [2.0, 2.0, 2.0]]
    (z * torch.arange(6.0).reshape(2, 3)).sum().backward()
    assert w.grad.tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]] and v.grad.tolist() == [1.0, 1.0]


def test_in_place_forms_are_recorded_on_non_leaves():
    w = torch.ones(3, requires_grad=True)
    y = w * 2.0
    y.masked_fill_(torch.tensor([False, True, False]), 0.0)
    y.sum().backward()
    assert w.grad.tolist() == [2.0, 0.0, 2.0]


def test_masked_fill_takes_only_bool_masks_as_torch():
    with pytest.raises(DTypeError, match="masked_fill only supports boolean masks, but got mask with dtype uint8"):
        torch.zeros(2).masked_fill(torch.tensor([1, 0], dtype=torch.uint8), 1.0)


def test_nonzero_as_tuple_indexes_the_non_zero_elements():
    x = torch.tensor([[0.0, 1.5], [-2.0, 0.0]])
    assert torch.nonzero(x).tolist() == [[0, 1], [1, 0]]
    assert torch.nonzero(x).dtype is torch.int64
    assert x[x.nonzero(as_tuple=True)].tolist() == [1.5, -2.0]
    assert torch.argwhere(torch.tensor(3.0)).shape == (1, 0)
    assert [t.tolist() for t in torch.nonzero(torch.tensor(3.0), as_tuple=True)] == [[0]]


def test_tf_where_with_a_condition_alone_gives_int64_coordinates():
    with tf.Graph().as_default():
        cond = tf.placeholder(tf.bool, [None, 2])
        coordinates = tf.where(cond)
        assert coordinates.dtype is tf.int64 and coordinates.shape.as_list() == [None, 2]
        with tf.Session() as sess:
            assert sess.run(coordinates, {cond: [[True, False], [True, True]]}).tolist() == [[0, 0], [1, 0], [1, 1]]
        with pytest.raises(InvalidArgumentError, match="x and y must both be non-None or both be None"):
            tf.where(cond, x=cond)


def test_torch_one_hot_is_int64_and_refuses_classes_out_of_range():
    labels = torch.tensor([0, 2, 1])
    assert F.one_hot(labels).tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0]]  # num_classes=-1: max + 1
    assert F.one_hot(labels, 4).dtype is torch.int64 and F.one_hot(labels, 4).shape == (3, 4)
    with pytest.raises(IndexOutOfRangeError, match="Class values must be smaller than num_classes"):
        F.one_hot(labels, 2)
    with pytest.raises(IndexOutOfRangeError, match="Class values must be non-negative"):
        F.one_hot(torch.tensor([-1]), 2)
    with pytest.raises(DTypeError, match="one_hot is only applicable to index tensor of type int64"):
        F.one_hot(torch.tensor([0], dtype=torch.int32), 2)


def test_tf_one_hot_is_float32_with_off_rows_for_classes_out_of_range():
    with tf.Graph().as_default():
        plain = tf.one_hot([0, 3, -1], 3)
        custom = tf.one_hot(tf.constant([[1], [0]]), 2, on_value=5.0, off_value=-1.0, axis=0, dtype=tf.float64)
        assert plain.dtype is tf.float32 and plain.shape.as_list() == [3, 3]
        assert custom.dtype is tf.float64 and custom.shape.as_list() == [2, 2, 1]
        with tf.Session() as sess:
            got_plain, got_custom = sess.run([plain, custom])
    assert got_plain.tolist() == [[1, 0, 0], [0, 0, 0], [0, 0, 0]]
    assert got_custom[:, :, 0].tolist() == [[-1, 5], [5, -1]]


def test_boolean_mask_and_scatter_nd_follow_tf1():
    x = np.arange(12.0).reshape(3, 4)
    got = static_run(lambda p: tf.boolean_mask(p, [True, False, True, True], axis=1), x)
    np.testing.assert_array_equal(got, x[:, [True, False, True, True]])
    with tf.Graph().as_default():
        out = tf.scatter_nd([[0], [2], [0]], [1.0, 2.0, 3.0], [4])
        with tf.Session() as sess:
            assert sess.run(out).tolist() == [4.0, 0.0, 2.0, 0.0]  # repeated coordinates add up


def test_torch_names_call_index_ops_with_torchs_argument_order():
    x = torch.arange(6.0).reshape(2, 3)
    index = torch.tensor([[0, 0], [2, 1]])
    assert torch.gather(x, 1, index).tolist() == x.gather(1, index).tolist() == [[0.0, 0.0], [5.0, 4.0]]
    assert x.index_add(0, torch.tensor([1]), torch.ones(1, 3), alpha=2).tolist() == [[0, 1, 2], [5, 6, 7]]
    with tf.Graph().as_default():  # graph tensors have the torch-named methods too
        p = tf.constant(x.numpy())
        with tf.Session() as sess:
            assert sess.run(p.gather(1, tf.constant(index.numpy()))).tolist() == [[0.0, 0.0], [5.0, 4.0]]


# ---------------------------------------------------------------- determinism


def _set_threads(n: int) -> int:
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    return before


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_scatter_adds_are_bitwise_the_same_at_every_thread_count(threads):
    rng = np.random.default_rng(7)
    n, size = 600_000, 97
    index = rng.integers(0, size, n)
    values = rng.standard_normal(n).astype(np.float32) * np.float32(1e3)
    start = rng.standard_normal(size).astype(np.float32)
    expected = start.copy()
    np.add.at(expected, index, values)  # one element after another, in order, in float32
    before = _set_threads(threads)
    try:
        got = torch.tensor(start).index_add(0, torch.tensor(index), torch.tensor(values)).numpy()
        via_scatter = torch.tensor(start).scatter_add(0, torch.tensor(index), torch.tensor(values)).numpy()
        x = torch.tensor(np.zeros(size, np.float32), requires_grad=True)
        (x[torch.tensor(index)] * torch.tensor(values)).sum().backward()
        grad = x.grad.numpy()
    finally:
        torch.set_num_threads(before)
        torch.empty_cache()  # later tests measure memory: leave no large buffers in the reuse pool
    assert got.tobytes() == expected.tobytes()
    assert via_scatter.tobytes() == expected.tobytes()
    zero_start = np.zeros(size, np.float32)
    np.add.at(zero_start, index, values)
    assert grad.tobytes() == zero_start.tobytes()


def test_large_gathers_match_numpy():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((700, 800)).astype(np.float32)
    rows, cols = rng.integers(-700, 700, 400_000), rng.integers(0, 800, 400_000)
    np.testing.assert_array_equal(torch.tensor(x)[rows, cols].numpy(), x[rows, cols])
    t = torch.tensor(x).t()
    np.testing.assert_array_equal(t[:, [5, 1, 5]].numpy(), x.T[:, [5, 1, 5]])
    torch.empty_cache()  # later tests measure memory: leave no large buffers in the reuse pool
