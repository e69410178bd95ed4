"""Batched and broadcasting matrix products: eager `@`/`matmul`/`bmm` and static
`tf.matmul`, against numpy's `matmul` (values) and float64 finite differences (gradients)."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
from _child import child_env
from hypothesis import given
from hypothesis import strategies as st

import rustgrad
import rustgrad.compat.v1 as tf
from rustgrad import errors

DTYPES = {np.float32: rustgrad.float32, np.float64: rustgrad.float64}
LAYOUTS = ["c", "mT", "permuted", "strided"]


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def tolerance(dtype, k):
    return dict(rtol=1e-4, atol=1e-5 * max(k, 1)) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)


def as_layout(a: np.ndarray, layout: str, requires_grad: bool = False):
    """(leaf, view): a rustgrad tensor holding `a`'s values, read through the named layout."""
    dtype = DTYPES[a.dtype.type]
    if a.ndim < 2 or layout == "c":
        leaf = rustgrad.tensor(a, dtype=dtype, requires_grad=requires_grad)
        return leaf, leaf
    if layout == "mT":  # the matrices stored column-major
        leaf = rustgrad.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype=dtype, requires_grad=requires_grad)
        return leaf, leaf.transpose(-1, -2)
    if layout == "permuted":  # the first and last dims swapped in memory
        leaf = rustgrad.tensor(np.ascontiguousarray(np.swapaxes(a, 0, -1)), dtype=dtype, requires_grad=requires_grad)
        return leaf, leaf.transpose(0, -1)
    big = np.zeros(tuple(2 * d for d in a.shape), dtype=a.dtype)
    every_other = tuple(slice(None, None, 2) for _ in a.shape)
    big[every_other] = a
    leaf = rustgrad.tensor(big, dtype=dtype, requires_grad=requires_grad)
    return leaf, leaf[every_other]


@st.composite
def broadcast_batches(draw, max_rank: int = 3):
    """Two batch shapes that broadcast: some dims dropped from the front, some set to 1."""
    common = draw(st.lists(st.integers(0, 3), min_size=0, max_size=max_rank))
    if 0 in common and draw(st.booleans()):
        common = [max(d, 1) for d in common]

    def side():
        dims = common[draw(st.integers(0, len(common))):]
        return tuple(1 if draw(st.integers(0, 3)) == 0 else d for d in dims)

    return side(), side()


@st.composite
def operands(draw, vectors: bool = True):
    """(a, b, ta, tb): numpy operands with broadcastable batches; ta/tb say a or b is stored transposed."""
    batch_a, batch_b = draw(broadcast_batches())
    m, k, n = draw(st.integers(1, 5)), draw(st.integers(0, 5)), draw(st.integers(1, 5))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    shape_a = batch_a + ((k, m) if ta else (m, k))
    shape_b = batch_b + ((n, k) if tb else (k, n))
    if not batch_a and not batch_b:  # at least one batch, or this is a 2-D product
        shape_a = (draw(st.integers(1, 3)),) + shape_a
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = rng.uniform(-1, 1, shape_a).astype(dtype)
    b = rng.uniform(-1, 1, shape_b).astype(dtype)
    return a, b, ta, tb


def mT(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2)


def numeric_grad(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences of the scalar f at x (float64)."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (f(up) - f(down)) / (2 * eps)
    return grad


# ---------------------------------------------------------------- eager values


@given(operands(), st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS), st.sampled_from(["@", "method", "function"]))
def test_eager_batched_matmul_matches_numpy(ops, layout_a, layout_b, spelling):
    a, b, ta, tb = ops
    a, b = (mT(a) if ta else a), (mT(b) if tb else b)
    _, x = as_layout(a, layout_a)
    _, y = as_layout(b, layout_b)
    product = {"@": lambda: x @ y, "method": lambda: x.matmul(y), "function": lambda: rustgrad.matmul(x, y)}[spelling]()
    expected = np.matmul(a, b)
    assert tuple(product.shape) == expected.shape
    assert product.dtype == DTYPES[a.dtype.type]
    np.testing.assert_allclose(product.numpy(), expected, **tolerance(a.dtype.type, a.shape[-1]))


PROMOTIONS = [
    ((4,), (5, 4, 6)),
    ((4,), (2, 1, 4, 3)),
    ((5, 3, 4), (4,)),
    ((2, 1, 3, 4), (4,)),
    ((4,), (0, 4, 3)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("shape_a", "shape_b"), PROMOTIONS, ids=str)
def test_vectors_are_promoted_against_batches_as_in_torch(shape_a, shape_b, dtype):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(shape_a).astype(dtype), rng.standard_normal(shape_b).astype(dtype)
    product = rustgrad.tensor(a) @ rustgrad.tensor(b)
    expected = np.matmul(a, b)
    assert tuple(product.shape) == expected.shape
    np.testing.assert_allclose(product.numpy(), expected, **tolerance(dtype, 4))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_bmm_matches_numpy(dtype, layout):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((6, 3, 5)).astype(dtype), rng.standard_normal((6, 5, 4)).astype(dtype)
    x, y = as_layout(a, layout)[1], as_layout(b, layout)[1]
    for product in (x.bmm(y), rustgrad.bmm(x, y)):
        np.testing.assert_allclose(product.numpy(), np.matmul(a, b), **tolerance(dtype, 5))


@pytest.mark.parametrize(("shape_a", "shape_b"), [((40, 48, 40), (40, 40, 56)), ((3, 40, 48, 40), (40, 56)),
                                                   ((40, 56), (30, 56, 24)), ((2, 1, 40, 48), (1, 9, 48, 40))])
@pytest.mark.parametrize("threads", [1, 2])
def test_batches_of_mid_size_products_on_one_or_all_threads_match_numpy(shape_a, shape_b, threads):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(shape_a).astype(np.float32), rng.standard_normal(shape_b).astype(np.float32)
    before = rustgrad.get_num_threads()
    rustgrad.set_num_threads(threads)
    try:
        product = rustgrad.from_numpy(a) @ rustgrad.from_numpy(b)
    finally:
        rustgrad.set_num_threads(before)
    np.testing.assert_allclose(product.numpy(), np.matmul(a, b), rtol=1e-4, atol=1e-4)


def test_a_batch_of_thousands_of_tiny_products_matches_numpy():
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((3, 3000, 2, 3)), rng.standard_normal((3000, 3, 4))
    # (3000, 3, 2, 3) @ (3000, 1, 3, 4): 9000 products, the first operand read through a transposed batch
    product = rustgrad.tensor(a).transpose(0, 1) @ rustgrad.tensor(b).unsqueeze(1)
    np.testing.assert_allclose(product.numpy(), np.matmul(np.swapaxes(a, 0, 1), b[:, None]), rtol=1e-12)


def test_each_product_of_a_batch_on_all_threads_in_turn_matches_numpy():
    # RUSTGRAD_BATCH_SPLIT=bands turns splitting by matrix off: every product runs on the 2-D kernels' threads.
    code = (
        "import numpy as np, rustgrad\n"
        "rng = np.random.default_rng(3)\n"
        "a = rng.standard_normal((7, 130, 90)).astype(np.float32)\n"
        "b = rng.standard_normal((7, 90, 70)).astype(np.float32)\n"
        "p = (rustgrad.from_numpy(a) @ rustgrad.from_numpy(b)).numpy()\n"
        "np.testing.assert_allclose(p, np.matmul(a, b), rtol=1e-4, atol=1e-4)\n"
        "print('ok')\n"
    )
    env = dict(child_env(), RUSTGRAD_BATCH_SPLIT="bands")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


# ---------------------------------------------------------------- eager gradients


GRAD_CASES = [
    ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)),
    ((1, 3, 4), (3, 4, 2)),
    ((4,), (2, 4, 3)),
    ((2, 2, 3, 4), (4,)),
]


def weighted_sum(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> float:
    return float(np.sum(np.matmul(a, b) * w))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(("shape_a", "shape_b"), GRAD_CASES, ids=str)
def test_eager_gradients_match_finite_differences(shape_a, shape_b, layout):
    rng = np.random.default_rng(4)
    a, b = rng.uniform(-1, 1, shape_a), rng.uniform(-1, 1, shape_b)
    w = rng.uniform(-1, 1, np.matmul(a, b).shape)
    _, x = as_layout(a, layout, requires_grad=True)
    _, y = as_layout(b, layout, requires_grad=True)
    if not x.is_leaf:
        x.retain_grad()
    if not y.is_leaf:
        y.retain_grad()
    (rustgrad.matmul(x, y) * rustgrad.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), numeric_grad(lambda v: weighted_sum(v, b, w), a), atol=1e-7)
    np.testing.assert_allclose(y.grad.numpy(), numeric_grad(lambda v: weighted_sum(a, v, w), b), atol=1e-7)


def test_bmm_gradients_match_finite_differences():
    rng = np.random.default_rng(5)
    a, b, w = rng.uniform(-1, 1, (3, 2, 4)), rng.uniform(-1, 1, (3, 4, 5)), rng.uniform(-1, 1, (3, 2, 5))
    x = rustgrad.tensor(a, requires_grad=True)
    y = rustgrad.tensor(b, requires_grad=True)
    (x.bmm(y) * rustgrad.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), numeric_grad(lambda v: weighted_sum(v, b, w), a), atol=1e-7)
    np.testing.assert_allclose(y.grad.numpy(), numeric_grad(lambda v: weighted_sum(a, v, w), b), atol=1e-7)


def test_gradient_of_only_one_operand_of_a_broadcast_product():
    rng = np.random.default_rng(6)
    a, b = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (2, 4, 5))
    x = rustgrad.tensor(a, requires_grad=True)
    (rustgrad.tensor(b).__rmatmul__(x)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), numeric_grad(lambda v: float(np.sum(v @ b)), a), atol=1e-7)


def test_gradcheck_accepts_a_broadcast_batched_product():
    rng = np.random.default_rng(7)
    x = rustgrad.tensor(rng.uniform(-1, 1, (2, 1, 3, 2)), requires_grad=True)
    y = rustgrad.tensor(rng.uniform(-1, 1, (3, 2, 2)), requires_grad=True)
    assert rustgrad.autograd.gradcheck(rustgrad.matmul, (x, y))


# ---------------------------------------------------------------- static values and gradients


def placeholder_shape(shape: tuple, kind: str):
    if kind == "exact":
        return shape
    if kind == "unknown_dims":
        return tuple(None for _ in shape)
    return None  # unknown rank


@given(operands(), st.sampled_from(["exact", "unknown_dims", "unknown_rank"]), st.booleans())
def test_static_batched_matmul_matches_numpy(ops, kind, use_operator):
    a, b, ta, tb = ops
    tf.reset_default_graph()
    tf_dtype = tf.float32 if a.dtype == np.float32 else tf.float64
    pa = tf.placeholder(tf_dtype, placeholder_shape(a.shape, kind))
    pb = tf.placeholder(tf_dtype, placeholder_shape(b.shape, kind))
    if use_operator and not (ta or tb):
        product = pa @ pb
    else:
        product = tf.matmul(pa, pb, transpose_a=ta, transpose_b=tb)
    expected = np.matmul(mT(a) if ta else a, mT(b) if tb else b)
    if kind == "exact":
        assert product.shape.as_list() == list(expected.shape)
    with tf.Session() as sess:
        got = sess.run(product, {pa: a, pb: b})
    assert got.shape == expected.shape and got.dtype == a.dtype
    np.testing.assert_allclose(got, expected, **tolerance(a.dtype.type, expected.shape[-1]))


def test_static_shape_inference_broadcasts_batches_and_keeps_unknown_dims():
    a = tf.placeholder(tf.float32, (None, 1, 3, 4))
    b = tf.placeholder(tf.float32, (5, 4, 6))
    assert tf.matmul(a, b).shape.as_list() == [None, 5, 3, 6]
    c = tf.placeholder(tf.float32, (2, 4, 3))
    assert tf.matmul(c, tf.placeholder(tf.float32, (6, 4)), transpose_a=True, transpose_b=True).shape.as_list() == [
        2, 3, 6]
    assert (c @ tf.placeholder(tf.float32, (3, 7))).shape.as_list() == [2, 4, 7]


STATIC_GRAD_CASES = [
    ((2, 3, 4), (2, 4, 5), False, False),
    ((2, 1, 3, 4), (5, 4, 2), False, False),
    ((3, 4), (2, 4, 5), False, False),
    ((2, 4, 3), (5, 4), True, True),
    ((1, 4, 3), (3, 2, 4), True, True),
    ((2, 3, 4), (2, 5, 4), False, True),
]


@pytest.mark.parametrize("kind", ["exact", "unknown_dims", "unknown_rank"])
@pytest.mark.parametrize(("shape_a", "shape_b", "ta", "tb"), STATIC_GRAD_CASES, ids=str)
def test_static_gradients_match_finite_differences(shape_a, shape_b, ta, tb, kind):
    rng = np.random.default_rng(8)
    a, b = rng.uniform(-1, 1, shape_a), rng.uniform(-1, 1, shape_b)

    def f(a, b):
        return np.matmul(mT(a) if ta else a, mT(b) if tb else b)

    w = rng.uniform(-1, 1, f(a, b).shape)
    pa = tf.placeholder(tf.float64, placeholder_shape(shape_a, kind))
    pb = tf.placeholder(tf.float64, placeholder_shape(shape_b, kind))
    loss = tf.reduce_sum(tf.matmul(pa, pb, transpose_a=ta, transpose_b=tb) * tf.constant(w))
    ga, gb = tf.gradients(loss, [pa, pb])
    with tf.Session() as sess:
        got_a, got_b = sess.run([ga, gb], {pa: a, pb: b})
    np.testing.assert_allclose(got_a, numeric_grad(lambda v: float(np.sum(f(v, b) * w)), a), atol=1e-7)
    np.testing.assert_allclose(got_b, numeric_grad(lambda v: float(np.sum(f(a, v) * w)), b), atol=1e-7)


def test_static_relu_of_a_batched_product_matches_numpy():
    # relu(matmul(...)) is fused for matrices; a batched product takes the unfused way.
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((3, 4, 5)).astype(np.float32), rng.standard_normal((5, 6)).astype(np.float32)
    out = tf.nn.relu(tf.matmul(tf.constant(a), tf.constant(b)))
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(out), np.maximum(a @ b, 0), rtol=1e-5, atol=1e-5)


def test_static_update_of_a_3d_variable_by_a_batched_product():
    # `w - c * matmul(a, b)` is fused into one kernel for matrices; a batched product is not.
    rng = np.random.default_rng(10)
    w0, a, b = rng.standard_normal((2, 3, 5)), rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    w = tf.Variable(w0)
    new_value = w - 0.5 * tf.matmul(tf.constant(a), tf.constant(b))
    step = w.assign(new_value)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(new_value), w0 - 0.5 * np.matmul(a, b), rtol=1e-12)
        sess.run(step)
        np.testing.assert_allclose(sess.run(w), w0 - 0.5 * np.matmul(a, b), rtol=1e-12)


# ---------------------------------------------------------------- errors


def test_batched_inner_dimension_mismatch_names_both_shapes():
    a, b = rustgrad.ones(2, 3, 4), rustgrad.ones(2, 5, 6, requires_grad=True)
    with pytest.raises(errors.ShapeError, match=re.escape("cannot be multiplied (3x4 and 5x6)")) as info:
        a @ b
    assert "[2, 3, 4] and [2, 5, 6]" in str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert b.grad is None


def test_batch_dims_that_do_not_broadcast_raise_a_shape_error():
    with pytest.raises(errors.ShapeError, match=r"batch dimensions .*\[2, 3, 4\] and \[3, 4, 5\] do not broadcast"):
        rustgrad.ones(2, 3, 4) @ rustgrad.ones(3, 4, 5)


def test_a_0d_operand_raises_as_in_torch():
    with pytest.raises(errors.ShapeError, match="at least 1D, but they are 2D and 0D"):
        rustgrad.matmul(rustgrad.ones(2, 2), rustgrad.tensor(1.0))


def test_mm_stays_2d_only():
    with pytest.raises(errors.ShapeError, match=r"mm: expected 2-D matrices, got shapes \[2, 3, 4\] and \[4, 5\]"):
        rustgrad.ones(2, 3, 4).mm(rustgrad.ones(4, 5))
    with pytest.raises(errors.ShapeError, match=r"mm: expected 2-D matrices"):
        rustgrad.mm(rustgrad.ones(3, 4), rustgrad.ones(4))


@pytest.mark.parametrize(("shape_a", "shape_b", "message"), [
    ((3, 4), (2, 4, 5), "batch1 must be a 3D tensor"),
    ((2, 3, 4), (1, 2, 4, 5), "batch2 must be a 3D tensor"),
    ((2, 3, 4), (3, 4, 5), "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4]."),
    ((2, 3, 4), (2, 5, 6), "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5]."),
    ((1, 3, 4), (2, 4, 5), "Expected size for first two dimensions of batch2 tensor to be: [1, 4] but got: [2, 4]."),
], ids=str)
def test_bmm_raises_torchs_errors(shape_a, shape_b, message):
    for call in (lambda a, b: a.bmm(b), rustgrad.bmm):
        with pytest.raises(errors.ShapeError, match=re.escape(message)):
            call(rustgrad.ones(*shape_a), rustgrad.ones(*shape_b))


def test_batched_product_of_a_bool_tensor_raises_a_dtype_error():
    with pytest.raises(errors.DTypeError, match="matmul"):
        rustgrad.ones(2, 3, 4).bool() @ rustgrad.ones(2, 4, 5).bool()


def test_static_batched_inner_mismatch_raises_at_build_naming_both_shapes():
    a, b = tf.placeholder(tf.float32, (None, 3, 4)), tf.placeholder(tf.float32, (2, 5, 6))
    before = len(tf.get_default_graph().get_operations())
    with pytest.raises(errors.ShapeError, match=re.escape("but are 4 and 5 for 'MatMul'")) as info:
        tf.matmul(a, b)
    assert "(?, 3, 4), (2, 5, 6)" in str(info.value) and isinstance(info.value, ValueError)
    assert len(tf.get_default_graph().get_operations()) == before


def test_static_batch_dims_that_do_not_broadcast_raise_at_build():
    with pytest.raises(errors.ShapeError, match=r"but are 2 and 3 for 'MatMul' .*\(2, 3, 4\), \(3, 4, 5\)"):
        tf.matmul(tf.placeholder(tf.float32, (2, 3, 4)), tf.placeholder(tf.float32, (3, 4, 5)))


def test_static_vector_operand_raises_tfs_rank_errors():
    vector = tf.placeholder(tf.float32, (4,))
    with pytest.raises(errors.ShapeError, match="Shape must be at least rank 2 but is rank 1"):
        tf.matmul(vector, tf.placeholder(tf.float32, (3, 4, 6)))
    with pytest.raises(errors.ShapeError, match="Shape must be rank 2 but is rank 1"):
        tf.matmul(vector, tf.placeholder(tf.float32, (4, 6)))


def test_static_mismatch_known_only_at_run_time_raises_a_shape_error():
    a, b = tf.placeholder(tf.float32, (None, None, None)), tf.placeholder(tf.float32, (None, None, None))
    product = tf.matmul(a, b)
    with tf.Session() as sess:
        with pytest.raises(errors.ShapeError, match=r"\[2, 2, 3\] and \[3, 4, 5\] do not broadcast"):
            sess.run(product, {a: np.ones((2, 2, 3)), b: np.ones((3, 4, 5))})
        with pytest.raises(errors.ShapeError, match=re.escape("(2x3 and 4x5)")):
            sess.run(product, {a: np.ones((2, 2, 3)), b: np.ones((2, 4, 5))})


def test_static_vector_fed_to_an_unknown_rank_placeholder_raises_at_run_time():
    a, b = tf.placeholder(tf.float32), tf.placeholder(tf.float32)
    product = tf.matmul(a, b)
    with tf.Session() as sess:
        with pytest.raises(errors.ShapeError, match=r"at least 2 dimensions, got shapes \[3\] and \[2, 3, 4\]"):
            sess.run(product, {a: np.ones(3), b: np.ones((2, 3, 4))})
