"""In-place ops decided in the core: fill_/zero_/copy_ on tensors with history,
the leaf checks they share with add_, and torch.matmul's 1-D promotion."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
from rustgrad import errors


def numeric_grad(f, x, eps=1e-6):
    """Central finite differences of the scalar numpy function f at x (float64)."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        grad[i] = (f(up) - f(down)) / (2 * eps)
    return grad


def check_grad(actual, f, x):
    np.testing.assert_allclose(actual.numpy(), numeric_grad(f, x), rtol=1e-6, atol=1e-8)


X0 = np.array([[0.5, -1.25, 2.0], [1.5, 0.75, -0.5]])


def test_zero_on_a_non_leaf_records_it_and_passes_no_gradient_to_the_old_values():
    x = rustgrad.tensor(X0, requires_grad=True)
    y = x * x
    version = y._version
    out = y.zero_()
    assert out is y
    assert y._version > version
    assert y.requires_grad and y.grad_fn is not None and not y.is_leaf
    np.testing.assert_array_equal(y.detach().numpy(), np.zeros_like(X0))
    loss = ((y + 1.0) * x).sum()
    loss.backward()
    np.testing.assert_allclose(loss.item(), np.sum(X0))
    check_grad(x.grad, lambda v: np.sum((np.zeros_like(v * v) + 1.0) * v), X0)


def test_zero_on_a_non_leaf_gives_a_zero_gradient_when_it_is_the_only_path():
    x = rustgrad.tensor(X0, requires_grad=True)
    y = x * 2.0
    y.zero_()
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros_like(X0))


def test_fill_on_a_non_leaf_records_it_with_the_new_constant_values():
    x = rustgrad.tensor(X0, requires_grad=True)
    y = x + 1.0
    y.fill_(2.5)
    assert y.grad_fn is not None
    np.testing.assert_array_equal(y.detach().numpy(), np.full_like(X0, 2.5))
    loss = (y * x * x).sum()
    loss.backward()
    np.testing.assert_allclose(loss.item(), np.sum(2.5 * X0 * X0))
    check_grad(x.grad, lambda v: np.sum(np.full_like(v + 1.0, 2.5) * v * v), X0)


def test_fill_with_a_one_element_tensor_on_a_non_leaf():
    x = rustgrad.tensor(X0, requires_grad=True)
    y = x * 3.0
    y.fill_(rustgrad.tensor(-1.5, dtype=rustgrad.float64))
    (y * x).sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), np.full_like(X0, -1.5))
    np.testing.assert_allclose(x.grad.numpy(), np.full_like(X0, -1.5))


@pytest.mark.parametrize("saved_by", ["input", "output"])
def test_zero_of_a_tensor_saved_for_backward_is_caught_by_the_version_check(saved_by):
    x = rustgrad.tensor(X0, requires_grad=True)
    if saved_by == "input":
        y = x * 2.0
        z = y * y  # saves y
    else:
        y = x.exp()  # saves its output, y
        z = y * 2.0
    y.zero_()
    with pytest.raises(errors.GradientError, match="modified by an inplace operation"):
        z.sum().backward()


def test_copy_into_a_non_leaf_sends_the_gradient_to_the_source():
    x = rustgrad.tensor(X0, requires_grad=True)
    y = x * x
    src_np = np.array([0.25, -2.0, 1.0])
    src = rustgrad.tensor(src_np, requires_grad=True)
    y.copy_(src)
    np.testing.assert_array_equal(y.detach().numpy(), np.broadcast_to(src_np, X0.shape))
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros_like(X0))
    check_grad(src.grad, lambda s: np.sum(np.broadcast_to(s, X0.shape) ** 2), src_np)


def test_copy_of_another_dtype_into_a_non_leaf_gives_the_source_its_own_dtype_of_gradient():
    x = rustgrad.tensor(X0.astype(np.float32), requires_grad=True)
    y = x * 2.0
    src = rustgrad.tensor(X0, requires_grad=True)
    y.copy_(src)
    assert y.dtype == rustgrad.float32
    (y * 3.0).sum().backward()
    assert src.grad.dtype == rustgrad.float64
    np.testing.assert_allclose(src.grad.numpy(), np.full_like(X0, 3.0))


def test_copy_of_a_shape_that_does_not_broadcast_into_a_non_leaf_raises_and_changes_nothing():
    x = rustgrad.tensor(X0, requires_grad=True)
    y = x * 1.0
    src = rustgrad.tensor(np.ones((3, 1)), requires_grad=True)
    with pytest.raises(errors.ShapeError, match=r"copy_: .*\[3, 1\]"):
        y.copy_(src)
    np.testing.assert_array_equal(y.detach().numpy(), X0)


IN_PLACE_ON_LEAF = {
    "zero_": lambda t: t.zero_(),
    "fill_": lambda t: t.fill_(1.0),
    "copy_": lambda t: t.copy_(rustgrad.ones(2, 3, dtype=rustgrad.float64)),
    "add_": lambda t: t.add_(1.0),
}


@pytest.mark.parametrize("name", list(IN_PLACE_ON_LEAF))
def test_in_place_on_a_leaf_requiring_grad_raises_torchs_error_naming_the_op(name):
    x = rustgrad.tensor(X0, requires_grad=True)
    with pytest.raises(
        errors.GradientError,
        match=rf"^{name}: a leaf Variable that requires grad is being used in an in-place operation\.",
    ) as info:
        IN_PLACE_ON_LEAF[name](x)
    assert isinstance(info.value, RuntimeError)
    np.testing.assert_array_equal(x.detach().numpy(), X0)
    assert x.is_leaf and x.requires_grad and x.grad_fn is None


@pytest.mark.parametrize("name", ["zero_", "fill_"])
def test_fill_on_a_leaf_requiring_grad_is_allowed_under_no_grad(name):
    x = rustgrad.tensor(X0, requires_grad=True)
    with rustgrad.no_grad():
        IN_PLACE_ON_LEAF[name](x)
    expected = 0.0 if name == "zero_" else 1.0
    np.testing.assert_array_equal(x.detach().numpy(), np.full_like(X0, expected))
    assert x.is_leaf and x.requires_grad


MATMUL_SHAPES = [((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)), ((2, 3), (3, 4))]


@pytest.mark.parametrize(("shape_a", "shape_b"), MATMUL_SHAPES, ids=["vv", "vm", "mv", "mm"])
@pytest.mark.parametrize("spelling", ["operator", "function", "method"])
def test_matmul_promotes_vectors_as_torch_does(shape_a, shape_b, spelling):
    rng = np.random.default_rng(7)
    a_np, b_np = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    a = rustgrad.tensor(a_np, requires_grad=True)
    b = rustgrad.tensor(b_np, requires_grad=True)
    product = {
        "operator": lambda: a @ b,
        "function": lambda: rustgrad.matmul(a, b),
        "method": lambda: a.matmul(b),
    }[spelling]()
    expected = np.matmul(a_np, b_np)
    assert tuple(product.shape) == expected.shape
    np.testing.assert_allclose(product.detach().numpy(), expected, rtol=1e-12, atol=1e-12)
    weights = rng.standard_normal(expected.shape)
    (product * rustgrad.tensor(weights)).sum().backward()
    check_grad(a.grad, lambda v: np.sum(np.matmul(v, b_np) * weights), a_np)
    check_grad(b.grad, lambda v: np.sum(np.matmul(a_np, v) * weights), b_np)


def test_matmul_of_a_0d_operand_raises_a_shape_error():
    with pytest.raises(errors.ShapeError, match=r"matmul: .*at least 1D, but they are 0D and 2D.*\[\]"):
        rustgrad.tensor(2.0) @ rustgrad.ones(2, 2)


# ----- writes the tape cannot follow, and static mask assignment -----


def test_fill_with_a_tensor_that_requires_grad_passes_it_the_summed_gradient():
    x = rustgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    value = rustgrad.tensor(2.5, requires_grad=True)
    y = x * 1.0
    y.fill_(value)
    (y * rustgrad.tensor([1.0, 2.0, 4.0])).sum().backward()
    assert y.tolist() == [2.5, 2.5, 2.5]
    assert value.grad.item() == 7.0
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "write",
    [
        lambda view, w: view.copy_(w),
        lambda view, w: view.add_(w),
        lambda view, w: view.__setitem__(view > -1, w),
    ],
    ids=["copy_", "add_", "mask assignment"],
)
def test_recording_a_write_into_a_view_is_refused_rather_than_lost(write):
    base = rustgrad.zeros(4)
    w = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(errors.GradientError, match="into a view is not supported while recording"):
        write(base[0:2], w)
    assert base.tolist() == [0.0, 0.0, 0.0, 0.0]
    assert base.grad_fn is None


def test_a_bad_index_is_reported_before_the_autograd_checks():
    y = rustgrad.ones(3, requires_grad=True) * 2.0
    with pytest.raises(errors.IndexOutOfRangeError):
        y[10] = 0.0


def test_static_mask_assignment_needs_a_mask_of_the_whole_shape():
    import rustgrad.compat.v1 as tf

    graph = tf.Graph()
    with graph.as_default():
        t = tf.constant(np.zeros((3, 3), np.float32))
        with pytest.raises(errors.IndexOutOfRangeError, match=r"mask of shape \[3\] for a tensor of shape \[3, 3\]"):
            t[np.array([True, False, True])] = 1.0
        with pytest.raises(errors.ShapeError, match=r"value of shape \[2, 3, 3\] does not broadcast"):
            t[np.ones((3, 3), bool)] = np.ones((2, 3, 3), np.float32)
        t[np.eye(3, dtype=bool)] = 5.0
        with tf.Session() as sess:
            assert sess.run(t).tolist() == (np.eye(3) * 5).tolist()


def test_an_in_place_add_large_enough_to_be_split_among_threads_gives_numpy_s_bits():
    rng = np.random.default_rng(3)
    start = rng.standard_normal(3 * 32768 + 5).astype(np.float32)
    other = rng.standard_normal(start.size).astype(np.float32)
    x = rustgrad.tensor(start)
    x.add_(rustgrad.tensor(other), alpha=-0.3)
    np.testing.assert_array_equal(x.numpy().view(np.uint32), (start + np.float32(-0.3) * other).view(np.uint32))
    x -= rustgrad.tensor(other)
    expected = (start + np.float32(-0.3) * other) - other
    np.testing.assert_array_equal(x.numpy().view(np.uint32), expected.view(np.uint32))
