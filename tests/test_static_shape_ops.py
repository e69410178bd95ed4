"""TF1's shape introspection in static graphs (`tf.shape`, `tf.size`, `tf.rank`), the shape
arguments that take their values at run time (`tf.reshape`, `tf.zeros`, `tf.ones`, `tf.fill`,
`tf.random_normal`), static `bmm`, and TF's node type names for the op table's ops."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
import rustgrad.compat.v1 as tf
import rustgrad.static as static
from rustgrad import errors


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed or {})


# ------------------------------------------------------------------ shape, size, rank


def test_shape_of_a_placeholder_is_computed_from_the_fed_value():
    x = tf.placeholder(tf.float32, [None, None, 3])
    s = tf.shape(x)
    assert s.dtype == tf.int32
    assert s.shape.as_list() == [3]
    assert s.op.type == "Shape"
    value = run(s, {x: np.zeros((4, 2, 3), np.float32)})
    assert value.dtype == np.int32
    np.testing.assert_array_equal(value, [4, 2, 3])
    np.testing.assert_array_equal(run(s, {x: np.zeros((1, 5, 3), np.float32)}), [1, 5, 3])


def test_shape_of_an_unknown_rank_has_an_unknown_length():
    x = tf.placeholder(tf.float64)
    s = tf.shape(x)
    assert s.shape.as_list() == [None]
    np.testing.assert_array_equal(run(s, {x: np.zeros((2, 0, 7))}), [2, 0, 7])
    np.testing.assert_array_equal(run(s, {x: np.float64(1.0)}), np.zeros(0, np.int32))


def test_shape_with_out_type_int64():
    x = tf.placeholder(tf.float32, [None, 2])
    s = tf.shape(x, out_type=tf.int64)
    assert s.dtype == tf.int64
    value = run(s, {x: np.zeros((3, 2), np.float32)})
    assert value.dtype == np.int64
    np.testing.assert_array_equal(value, [3, 2])


def test_shape_of_a_fully_known_tensor_is_still_a_node():
    x = tf.constant(np.ones((2, 3), np.float32))
    s = tf.shape(x, name="dims")
    assert s.op.type == "Shape"
    assert s.name == "dims:0"
    np.testing.assert_array_equal(run(s), [2, 3])


def test_shape_refuses_a_float_out_type():
    x = tf.placeholder(tf.float32, [2])
    with pytest.raises(errors.DTypeError, match=r"shape: out_type must be int32 or int64, got float32"):
        tf.shape(x, out_type=tf.float32)
    with pytest.raises(TypeError, match="size: out_type"):
        tf.size(x, out_type=tf.bool)


def test_size_and_rank_of_a_placeholder():
    x = tf.placeholder(tf.int64, [None, None])
    n, r = tf.size(x), tf.rank(x)
    assert (n.dtype, r.dtype) == (tf.int32, tf.int32)
    assert n.shape.as_list() == [] and r.shape.as_list() == []
    assert (n.op.type, r.op.type) == ("Size", "Rank")
    size, rank = run([n, r], {x: np.zeros((3, 5), np.int64)})
    assert (int(size), int(rank)) == (15, 2)
    assert size.dtype == np.int32 and rank.dtype == np.int32
    assert run(tf.size(x, out_type=tf.int64), {x: np.zeros((0, 5), np.int64)}).dtype == np.int64


def test_shape_size_and_rank_are_in_compat_v1_and_static_but_not_eager():
    for name in ("shape", "size", "rank"):
        assert getattr(static, name) is getattr(tf, name)
        assert name in static.__all__
        assert not callable(getattr(rustgrad, name, None))


def test_no_gradient_flows_through_shape_size_and_rank():
    x = tf.placeholder(tf.float64, [None, 3])
    counted = tf.cast(tf.reduce_sum(tf.shape(x)) + tf.size(x) + tf.rank(x), tf.float64)
    assert tf.gradients(counted, [x]) == [None]
    (grad,) = tf.gradients(tf.reduce_sum(x) * counted, [x])
    value = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(run(grad, {x: value}), np.full((2, 3), 2 + 3 + 6 + 2.0))


def test_shape_feeds_indexing_and_range():
    x = tf.placeholder(tf.float32, [None, 4])
    rows = tf.range(tf.shape(x)[0])
    np.testing.assert_array_equal(run(rows, {x: np.zeros((3, 4), np.float32)}), [0, 1, 2])


# ------------------------------------------------------------------ shapes given as tensors


def test_reshape_to_the_shape_of_another_tensor():
    x = tf.placeholder(tf.float64, [None])
    y = tf.placeholder(tf.float64, [None, None])
    r = tf.reshape(x, tf.shape(y))
    assert r.op.type == "Reshape"
    assert r.shape.as_list() == [None, None]
    value = np.arange(6.0)
    out = run(r, {x: value, y: np.zeros((2, 3))})
    np.testing.assert_array_equal(out, value.reshape(2, 3))


def test_reshape_to_a_list_holding_a_shape_element_and_minus_one():
    x = tf.placeholder(tf.float32, [None, 2, 3])
    flat = tf.reshape(x, [tf.shape(x)[0], -1])
    assert flat.shape.rank == 2
    value = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    np.testing.assert_array_equal(run(flat, {x: value}), value.reshape(4, 6))


def test_reshape_to_a_tensor_shape_is_differentiable():
    x = tf.placeholder(tf.float64, [None, 3])
    w = tf.placeholder(tf.float64, [None])
    y = tf.reduce_sum(tf.reshape(x, tf.shape(w)) * w)
    (grad,) = tf.gradients(y, [x])
    wv = np.arange(6.0) - 2.5
    np.testing.assert_allclose(run(grad, {x: np.ones((2, 3)), w: wv}), wv.reshape(2, 3))


def test_reshape_to_a_tensor_shape_that_does_not_fit_raises_at_run_time():
    x = tf.placeholder(tf.float32, [None])
    y = tf.placeholder(tf.float32, [None, None])
    r = tf.reshape(x, tf.shape(y))
    with pytest.raises(errors.InvalidArgumentError, match=r"reshape: Input to reshape is a tensor with 5 values"):
        run(r, {x: np.zeros(5, np.float32), y: np.zeros((2, 3), np.float32)})


def test_reshape_refuses_a_float_shape_tensor():
    x = tf.placeholder(tf.float32, [None])
    with pytest.raises(errors.DTypeError, match=r"reshape: the shape must be int32 or int64, got float32"):
        tf.reshape(x, tf.placeholder(tf.float32, [2]))


@pytest.mark.parametrize("make, fill_value", [(tf.zeros, 0), (tf.ones, 1)])
@pytest.mark.parametrize("dtype", [tf.float32, tf.int32, tf.bool])
def test_zeros_and_ones_take_a_shape_tensor(make, fill_value, dtype):
    x = tf.placeholder(tf.float32, [None, 3])
    z = make(tf.shape(x), dtype=dtype)
    assert z.dtype == dtype
    assert z.shape.rank == 2
    assert z.op.type == "Fill"
    out = run(z, {x: np.zeros((2, 3), np.float32)})
    expected = np.full((2, 3), fill_value, dtype=dtype.as_numpy_dtype)
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


def test_fill_and_random_normal_take_a_shape_tensor():
    x = tf.placeholder(tf.float32, [None, 2])
    filled = tf.fill(tf.shape(x), 7.0)
    noise = tf.random_normal(tf.shape(x), seed=1)
    stacked = tf.fill([tf.shape(x)[0], 1], 2)
    a, b, c = run([filled, noise, stacked], {x: np.zeros((3, 2), np.float32)})
    np.testing.assert_array_equal(a, np.full((3, 2), 7.0, np.float32))
    assert b.shape == (3, 2) and b.dtype == np.float32
    np.testing.assert_array_equal(c, np.full((3, 1), 2, np.int32))


def test_a_shape_list_mixing_dtypes_of_tensors_raises():
    x = tf.placeholder(tf.float32, [None, 2])
    with pytest.raises(errors.InvalidArgumentError, match=r"zeros: a shape given as a list must hold ints and 0-d"):
        tf.zeros([tf.shape(x)[0], tf.size(x, out_type=tf.int64)])


# ------------------------------------------------------------------ bmm and matmul node types


def test_static_bmm_matches_numpy_and_is_a_batch_matmul_node():
    rng = np.random.default_rng(0)
    a_value, b_value = rng.standard_normal((4, 2, 3)), rng.standard_normal((4, 3, 5))
    a = tf.placeholder(tf.float64, [None, 2, 3])
    b = tf.placeholder(tf.float64, [None, 3, 5])
    c = tf.bmm(a, b)
    assert c.op.type == "BatchMatMulV2"
    assert c.shape.as_list() == [None, 2, 5]
    np.testing.assert_allclose(run(c, {a: a_value, b: b_value}), np.matmul(a_value, b_value), rtol=1e-12)


def test_static_bmm_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    a_value, b_value, w = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 2)), rng.standard_normal((2, 3, 2))
    a = tf.placeholder(tf.float64, [None, 3, 4])
    b = tf.placeholder(tf.float64, [None, 4, 2])
    loss = tf.reduce_sum(tf.bmm(a, b) * w)
    grad_a, grad_b = run(tf.gradients(loss, [a, b]), {a: a_value, b: b_value})

    def f(p, q):
        return float(np.sum(np.matmul(p, q) * w))

    def numeric(values, i):
        out, eps = np.zeros_like(values[i]), 1e-6
        for idx in np.ndindex(values[i].shape):
            up, down = [v.copy() for v in values], [v.copy() for v in values]
            up[i][idx] += eps
            down[i][idx] -= eps
            out[idx] = (f(*up) - f(*down)) / (2 * eps)
        return out

    np.testing.assert_allclose(grad_a, numeric([a_value, b_value], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grad_b, numeric([a_value, b_value], 1), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(
    "a_shape, b_shape, message",
    [
        ([3, 4], [2, 4, 5], r"bmm: batch1 must be a 3D tensor, got shape \[3, 4\]"),
        ([2, 3, 4], [1, 2, 4, 5], r"bmm: batch2 must be a 3D tensor"),
        ([2, 3, 4], [3, 4, 5], r"to be: \[2, 4\] but got: \[3, 4\]"),
        ([None, 3, 4], [2, 5, 6], r"to be: \[\?, 4\] but got: \[2, 5\]"),
    ],
)
def test_static_bmm_refuses_what_torch_refuses_when_the_graph_is_built(a_shape, b_shape, message):
    a, b = tf.placeholder(tf.float32, a_shape), tf.placeholder(tf.float32, b_shape)
    with pytest.raises(errors.ShapeError, match=message):
        tf.bmm(a, b)


def test_static_bmm_refuses_broadcasting_batches_at_run_time():
    a = tf.placeholder(tf.float32, [None, 2, 3])
    b = tf.placeholder(tf.float32, [None, 3, 4])
    c = tf.bmm(a, b)
    with pytest.raises(errors.ShapeError, match=r"to be: \[2, 3\] but got: \[1, 3\]"):
        run(c, {a: np.zeros((2, 2, 3), np.float32), b: np.zeros((1, 3, 4), np.float32)})


def test_matmul_node_type_is_matmul_for_matrices_and_batch_matmul_v2_for_batches():
    m = tf.placeholder(tf.float32, [2, 3])
    batch = tf.placeholder(tf.float32, [None, 3, 4])
    assert tf.matmul(m, tf.transpose(m)).op.type == "MatMul"
    assert tf.matmul(m, batch).op.type == "BatchMatMulV2"
    assert tf.matmul(tf.placeholder(tf.float32), m).op.type == "BatchMatMulV2"
    assert tf.matmul(batch, batch, transpose_a=True).op.name == "BatchMatMulV2_2"


# ------------------------------------------------------------------ TF node type names

def _placeholders():
    return {
        "x": tf.placeholder(tf.float32, [None, 3]),
        "b": tf.placeholder(tf.bool, [None, 3]),
        "i": tf.placeholder(tf.int32, [None]),
        "m": tf.placeholder(tf.float32, [None, 3, 3]),
    }


TF_TYPES = [
    ("IsNan", lambda p: tf.math.is_nan(p["x"])),
    ("IsInf", lambda p: tf.math.is_inf(p["x"])),
    ("IsFinite", lambda p: tf.is_finite(p["x"])),
    ("LogicalAnd", lambda p: tf.logical_and(p["b"], p["b"])),
    ("LogicalNot", lambda p: tf.logical_not(p["b"])),
    ("Atan2", lambda p: tf.atan2(p["x"], p["x"])),
    ("SquaredDifference", lambda p: tf.math.squared_difference(p["x"], p["x"])),
    ("Cumsum", lambda p: tf.cumsum(p["x"], axis=1)),
    ("Prod", lambda p: tf.reduce_prod(p["x"])),
    ("ArgMax", lambda p: tf.argmax(p["x"], 1)),
    ("ArgMin", lambda p: tf.argmin(p["x"], 1)),
    ("GatherV2", lambda p: tf.gather(p["x"], p["i"])),
    ("GatherNd", lambda p: tf.gather_nd(p["x"], [[0, 1]])),
    ("ScatterNd", lambda p: tf.scatter_nd([[1], [3]], [1.0, 2.0], [5])),
    ("OneHot", lambda p: tf.one_hot(p["i"], 4)),
    ("ConcatV2", lambda p: tf.concat([p["x"], p["x"]], 0)),
    ("Pack", lambda p: tf.stack([p["x"], p["x"]])),
    ("Tile", lambda p: tf.tile(p["x"], [1, 2])),
    ("Pad", lambda p: tf.pad(p["x"], [[1, 1], [0, 0]])),
    ("PadV2", lambda p: tf.pad(p["x"], [[1, 1], [0, 0]], constant_values=2.0)),
    ("MirrorPad", lambda p: tf.pad(p["x"], [[0, 0], [1, 1]], mode="REFLECT")),
    ("Transpose", lambda p: tf.transpose(p["x"])),
    ("ExpandDims", lambda p: tf.expand_dims(p["x"], 0)),
    ("Squeeze", lambda p: tf.squeeze(p["x"])),
    ("ReverseV2", lambda p: tf.reverse(p["x"], [0])),
    ("BroadcastTo", lambda p: tf.broadcast_to(p["x"], [2, 2, 3])),
    ("Fill", lambda p: tf.fill(tf.shape(p["x"]), 1.0)),
    ("Where", lambda p: tf.where(p["b"])),
    ("Equal", lambda p: tf.equal(p["x"], p["x"])),
    ("NotEqual", lambda p: tf.not_equal(p["x"], p["x"])),
    ("Less", lambda p: tf.less(p["x"], p["x"])),
    ("GreaterEqual", lambda p: tf.greater_equal(p["x"], p["x"])),
    ("TruncateMod", lambda p: tf.truncatemod(p["x"], p["x"])),
    ("MatrixDiag", lambda p: tf.linalg.diag(p["x"])),
    ("MatrixDiagPart", lambda p: tf.linalg.diag_part(p["m"])),
    ("MatrixBandPart", lambda p: tf.linalg.band_part(p["m"], 0, -1)),
    ("Sin", lambda p: tf.sin(p["x"])),
    ("Neg", lambda p: tf.negative(p["x"])),
    ("Log1p", lambda p: tf.math.log1p(p["x"])),
    ("Relu", lambda p: tf.nn.relu(p["x"])),
]


@pytest.mark.parametrize("tf_type, build", TF_TYPES, ids=[t for t, _ in TF_TYPES])
def test_op_table_nodes_have_tf_type_names_and_default_names(tf_type, build):
    p = _placeholders()
    first, second = build(p), build(p)
    assert first.op.type == tf_type
    assert (first.op.name, second.op.name) == (tf_type, f"{tf_type}_1")
    graph = tf.get_default_graph()
    assert graph.get_operation_by_name(f"{tf_type}_1").type == tf_type


def test_range_node_is_a_range_named_range_as_in_tf1():
    r = tf.range(tf.size(tf.placeholder(tf.int32, [None])))
    assert (r.op.type, r.op.name) == ("Range", "range")
