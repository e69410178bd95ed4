"""Reductions beyond what the shared op-table tests check: gradients at zeros (prod, cumprod)
and at flat points (std, the 2-norm), torch's ``correction``/``unbiased``, the norms' orders
on both fronts, bool results, TF1's argument spellings and the errors for what does not fit.
Values and gradients in general are checked by tests/test_op_table.py through
tests/references_reductions.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

import rustgrad as torch
import rustgrad.static as tf
from rustgrad import errors

INF = float("inf")


def eager_grad(fn, values):
    x = torch.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)
    fn(x).sum().backward()
    return x.grad.numpy()


def static_grad(fn, values, shape=None):
    """tf.gradients of sum(fn(x)), with ``shape`` for the placeholder (None dims: known at run time only)."""
    values = np.asarray(values, dtype=np.float64)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, shape=[None] * values.ndim if shape is None else shape)
        (g,) = tf.gradients(tf.reduce_sum(fn(x)), [x])
        with tf.Session() as sess:
            return sess.run(g, {x: values})


def static_value(fn, values, dtype=tf.float64):
    with tf.Graph().as_default():
        x = tf.placeholder(dtype, shape=None)
        y = fn(x)
        with tf.Session() as sess:
            return sess.run(y, {x: values})


def others_product(row):
    """d prod / d x_i: the product of the other elements."""
    return np.array([np.prod(np.delete(row, i)) for i in range(len(row))])


# ---------------------------------------------------------------- prod


@pytest.mark.parametrize("values", [[2.0, 0.0, 3.0, -1.5], [0.0, 3.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0]],
                         ids=["one zero", "two zeros", "all zeros"])
def test_the_gradient_of_prod_with_zeros_is_the_product_of_the_others(values):
    expected = others_product(np.array(values))
    np.testing.assert_array_equal(eager_grad(torch.prod, values), expected)
    np.testing.assert_array_equal(static_grad(tf.reduce_prod, values), expected)


def test_the_gradient_of_prod_over_a_dim_treats_each_slice_alone():
    values = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 4.0], [1.5, 2.0, -1.0]])
    expected = np.stack([others_product(row) for row in values])
    np.testing.assert_array_equal(eager_grad(lambda x: x.prod(1), values), expected)
    np.testing.assert_array_equal(static_grad(lambda x: tf.reduce_prod(x, axis=1, keepdims=True), values), expected)
    np.testing.assert_array_equal(eager_grad(lambda x: torch.prod(x.t(), 0, keepdim=True), values), expected)


def test_prod_does_not_overflow_on_the_way_to_a_representable_product():
    x = torch.tensor([1e30, 1e30, 1e-30, 1e-30, 4.0])
    assert x.prod().item() == 4.0
    assert torch.tensor([1e30, 1e30]).prod().item() == INF


def test_prod_of_nothing_is_one():
    np.testing.assert_array_equal(torch.zeros(0, 3).prod(0).numpy(), [1.0, 1.0, 1.0])


# ---------------------------------------------------------------- cumprod


def cumprod_grad(values, exclusive=False, reverse=False):
    """d Σ cumprod(x) / dx_k from the definition: Σ over the outputs that include x_k of the other factors."""
    x = np.array(values, dtype=np.float64)
    n = len(x)
    order = list(range(n))[::-1] if reverse else list(range(n))
    grad = np.zeros(n)
    for j in range(n):
        factors = order[:j] if exclusive else order[: j + 1]
        for k in factors:
            grad[k] += np.prod([x[i] for i in factors if i != k])
    return grad


@pytest.mark.parametrize("values", [[2.0, 0.0, 3.0, 0.5], [0.0, 3.0, 0.0, 2.0], [1.5, -2.0, 0.0, 0.0]],
                         ids=["one zero", "two zeros", "trailing zeros"])
def test_the_gradient_of_cumprod_with_zeros_matches_its_definition(values):
    np.testing.assert_allclose(eager_grad(lambda x: torch.cumprod(x, 0), values), cumprod_grad(values))
    for exclusive in (False, True):
        for reverse in (False, True):
            got = static_grad(lambda x, e=exclusive, r=reverse: tf.math.cumprod(x, 0, exclusive=e, reverse=r), values)
            np.testing.assert_allclose(got, cumprod_grad(values, exclusive, reverse), err_msg=f"{exclusive} {reverse}")


def test_cumprod_runs_along_a_middle_dim_with_tf_orders():
    x = np.arange(1.0, 25.0).reshape(2, 3, 4)
    np.testing.assert_allclose(torch.tensor(x).cumprod(1).numpy(), np.cumprod(x, 1))
    got = static_value(lambda t: tf.cumprod(t, axis=1, exclusive=True, reverse=True), x)
    expected = np.flip(np.cumprod(np.flip(x, 1), 1), 1) / x
    np.testing.assert_allclose(got, expected)


# ---------------------------------------------------------------- var and std


X = np.array([[1.0, 2.0, 4.0, 7.0], [3.0, -1.0, 0.5, 2.0]])


def test_var_is_the_sample_variance_by_default_as_in_torch_2():
    np.testing.assert_allclose(torch.var(torch.tensor(X)).item(), np.var(X, ddof=1))
    np.testing.assert_allclose(torch.tensor(X).std(1).numpy(), np.std(X, 1, ddof=1))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's, for correction 2 over 2 elements (inf)
@pytest.mark.parametrize("kwargs, ddof", [({"unbiased": False}, 0), ({"unbiased": True}, 1), ({"correction": 0}, 0),
                                          ({"correction": 2}, 2), ({"correction": 0.5}, 0.5)])
def test_unbiased_and_correction_set_the_divisor(kwargs, ddof):
    np.testing.assert_allclose(torch.var(torch.tensor(X), 1, **kwargs).numpy(), np.var(X, 1, ddof=ddof))
    np.testing.assert_allclose(torch.tensor(X).std(dim=0, keepdim=True, **kwargs).numpy(),
                               np.std(X, 0, ddof=ddof, keepdims=True))


def test_unbiased_and_correction_together_raise():
    with pytest.raises(errors.InvalidArgumentError, match="var: cannot specify both 'unbiased' and 'correction'"):
        torch.var(torch.tensor(X), unbiased=True, correction=1)
    with pytest.raises(ValueError, match="std: cannot specify both"):
        torch.tensor(X).std(unbiased=False, correction=0)


def test_a_positional_bool_is_not_taken_for_a_dim():
    with pytest.raises(errors.ArgumentTypeError, match="var: argument 'dim' .* got bool; pass flags by keyword"):
        torch.var(torch.tensor(X), True)


def test_fewer_elements_than_the_correction_give_inf_or_nan_as_numpy():
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        expected = np.var(X, 1, ddof=5)
    np.testing.assert_array_equal(torch.var(torch.tensor(X), 1, correction=5).numpy(), expected)
    assert math.isnan(torch.tensor([3.0]).var().item())
    assert math.isnan(torch.zeros(0).var(correction=0).item())


def test_tf_variance_and_std_are_the_population_ones():
    got = static_value(lambda t: [tf.math.reduce_variance(t, axis=1), tf.math.reduce_std(t, keepdims=True)], X)
    np.testing.assert_allclose(got[0], np.var(X, 1))
    np.testing.assert_allclose(got[1], np.std(X, keepdims=True))


def test_the_gradient_of_std_of_equal_elements_is_zero_not_nan():
    flat = [[2.0, 2.0, 2.0], [1.0, 3.0, 5.0]]
    expected_row = (np.array([1.0, 3.0, 5.0]) - 3.0) / (2 * 2.0)  # (x - mean) / ((N - 1) std)
    for got in (eager_grad(lambda x: x.std(1), flat), static_grad(lambda x: tf.math.reduce_std(x, 1), flat)):
        assert not np.isnan(got).any()
        np.testing.assert_array_equal(got[0], [0.0, 0.0, 0.0])
    np.testing.assert_allclose(eager_grad(lambda x: x.std(1), flat)[1], expected_row)


def test_var_mean_and_std_mean_return_both():
    var, mean = torch.var_mean(torch.tensor(X), 1, keepdim=True)
    np.testing.assert_allclose(var.numpy(), np.var(X, 1, ddof=1, keepdims=True))
    np.testing.assert_allclose(mean.numpy(), np.mean(X, 1, keepdims=True))
    std, mean = torch.std_mean(torch.tensor(X), correction=0)
    np.testing.assert_allclose([std.item(), mean.item()], [np.std(X), np.mean(X)])


def test_tf_moments_are_the_mean_and_the_population_variance():
    mean, variance = static_value(lambda t: list(tf.nn.moments(t, axes=[0], keep_dims=True)), X)
    np.testing.assert_allclose(mean, np.mean(X, 0, keepdims=True))
    np.testing.assert_allclose(variance, np.var(X, 0, keepdims=True))


# ---------------------------------------------------------------- norm


@pytest.mark.parametrize("p", [2, "fro", 1, INF, -INF, 0, 3, 0.5, -1])
def test_norm_orders_match_numpy(p):
    x = torch.tensor(X)
    order = 2 if p == "fro" else p
    np.testing.assert_allclose(torch.norm(x, p, dim=1).numpy(), np.linalg.norm(X, order, axis=1))
    np.testing.assert_allclose(x.norm(p).item(), np.linalg.norm(X.ravel(), order))


def test_the_gradient_of_the_2_norm_at_zero_is_zero_as_in_torch():
    zeros = np.zeros((2, 3))
    np.testing.assert_array_equal(eager_grad(torch.norm, zeros), zeros)
    np.testing.assert_array_equal(eager_grad(lambda x: x.norm(2, dim=1), zeros), zeros)
    np.testing.assert_array_equal(static_grad(tf.norm, zeros), zeros)
    np.testing.assert_array_equal(static_grad(lambda x: tf.norm(x, ord=1.5, axis=0), zeros), zeros)


def test_the_inf_norm_shares_its_gradient_among_ties():
    np.testing.assert_allclose(eager_grad(lambda x: x.norm(INF), [1.0, -3.0, 3.0, 2.0]), [0.0, -0.5, 0.5, 0.0])


def test_tf_norm_over_two_axes_is_a_matrix_norm():
    got = static_value(lambda t: [tf.norm(t, ord=1, axis=[0, 1]), tf.norm(t, ord=np.inf, axis=(0, 1), keep_dims=True),
                                  tf.norm(t, ord="fro", axis=[-2, -1]), tf.norm(t)], X)
    np.testing.assert_allclose(got[0], np.linalg.norm(X, 1))  # the largest column sum
    np.testing.assert_allclose(got[1], np.linalg.norm(X, np.inf, keepdims=True))  # the largest row sum
    np.testing.assert_allclose(got[2], np.linalg.norm(X, "fro"))
    np.testing.assert_allclose(got[3], np.linalg.norm(X.ravel()))


def test_the_gradient_of_tf_matrix_norms_reaches_the_largest_sum():
    largest = np.abs(X).sum(0).argmax()  # the column with the largest sum of |x|
    expected = np.zeros_like(X)
    expected[:, largest] = np.sign(X[:, largest])
    np.testing.assert_array_equal(static_grad(lambda x: tf.norm(x, ord=1, axis=[0, 1]), X, shape=[None, 4]), expected)


@pytest.mark.parametrize("call, message", [
    (lambda t: tf.norm(t, ord="fro", axis=0), "'ord' must be a supported vector norm, got 'fro'"),
    (lambda t: tf.norm(t, ord=-1), "'ord' must be a supported vector norm, got -1"),
    (lambda t: tf.norm(t, ord=0.0), "'ord' must be a supported vector norm, got 0"),
    (lambda t: tf.norm(t, axis=[0, 1, 2]), "'axis' must be None, an integer, or a tuple of 2 unique integers"),
    (lambda t: tf.norm(t, axis=[1, 1]), "'axis' must be None, an integer, or a tuple of 2 unique integers"),
    (lambda t: tf.norm(t, ord=2, axis=[0, 1]), "the matrix 2-norm .* is not supported"),
    (lambda t: tf.norm(t, ord=3, axis=[0, 1]), "'ord' must be a supported matrix norm"),
])
def test_tf_norm_refuses_what_tf1_refuses(call, message):
    with tf.Graph().as_default():
        t = tf.placeholder(tf.float32, [None, 3])
        with pytest.raises(errors.InvalidArgumentError, match=message):
            call(t)


def test_torch_norm_refuses_nuc_and_unknown_names():
    x = torch.tensor(X)
    with pytest.raises(errors.InvalidArgumentError, match="the nuclear norm .* is not supported"):
        torch.norm(x, "nuc")
    with pytest.raises(ValueError, match="norm: p must be a number, 'fro' or 'nuc', got 'euclidean'"):
        x.norm("euclidean")
    with pytest.raises(ValueError, match="p='fro' is a norm over at most 2 dims"):
        torch.norm(torch.zeros(2, 2, 2), "fro", dim=(0, 1, 2))


def test_the_inf_norm_of_an_empty_slice_raises():
    with pytest.raises(errors.InvalidArgumentError, match="norm: cannot compute the inf norm over dimension 1 of "):
        torch.zeros(3, 0).norm(INF, dim=1)
    np.testing.assert_array_equal(torch.zeros(3, 0).norm(dim=1).numpy(), [0.0, 0.0, 0.0])


def test_norm_of_a_bool_tensor_raises():
    with pytest.raises(errors.DTypeError, match="norm: expected a float tensor but got bool"):
        torch.tensor([True, False]).norm()


# ---------------------------------------------------------------- all and any


def test_all_and_any_read_nonzero_and_nan_as_true_and_give_bool():
    x = torch.tensor([[0.0, 2.0, float("nan")], [1.0, -1.0, 3.0]])
    assert torch.all(x).dtype is torch.bool and torch.all(x).item() is False
    np.testing.assert_array_equal(x.all(1).numpy(), [False, True])
    np.testing.assert_array_equal(x.any(0, keepdim=True).numpy(), [[True, True, True]])
    np.testing.assert_array_equal(torch.tensor([[True, False]]).any(dim=1).numpy(), [True])


def test_all_of_nothing_is_true_and_any_false():
    assert torch.zeros(0).all().item() is True
    assert torch.zeros(0).any().item() is False


def test_all_and_any_are_not_differentiable():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    assert not torch.all(x).requires_grad and torch.any(x).grad_fn is None


def test_tf_reduce_all_takes_bool_only():
    with tf.Graph().as_default():
        with pytest.raises(errors.DTypeError, match="reduce_all: expected a bool tensor, got float32"):
            tf.reduce_all(tf.placeholder(tf.float32, [2]))
        with pytest.raises(TypeError, match="reduce_any: expected a bool tensor, got float64"):
            tf.math.reduce_any(tf.constant([1.0], dtype=tf.float64))


def test_tf_reduce_all_and_any_take_tf1_spellings():
    b = np.array([[True, False], [True, True]])
    got = static_value(lambda t: [tf.reduce_all(t, reduction_indices=1, keep_dims=True), tf.reduce_any(t, axis=0)],
                       b, dtype=tf.bool)
    np.testing.assert_array_equal(got[0], [[False], [True]])
    np.testing.assert_array_equal(got[1], [True, True])


# ---------------------------------------------------------------- TF1's deprecated spellings


@pytest.mark.parametrize("name, reference", [("reduce_sum", np.sum), ("reduce_mean", np.mean),
                                             ("reduce_max", np.max), ("reduce_min", np.min),
                                             ("reduce_prod", np.prod), ("reduce_logsumexp", np.logaddexp.reduce)])
def test_tf1_reductions_take_reduction_indices_and_keep_dims(name, reference):
    fn = getattr(tf, name)
    got = static_value(lambda t: [fn(t, reduction_indices=[1], keep_dims=True), fn(t, reduction_indices=0),
                                  fn(t, axis=1, keepdims=False)], X)
    np.testing.assert_allclose(got[0], reference(X, axis=1, keepdims=True))
    np.testing.assert_allclose(got[1], reference(X, axis=0))
    np.testing.assert_allclose(got[2], reference(X, axis=1))


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
                                  "reduce_all", "reduce_any"])
def test_naming_both_axis_and_reduction_indices_raises(name):
    with tf.Graph().as_default():
        t = tf.placeholder(tf.bool if name in ("reduce_all", "reduce_any") else tf.float32, [2, 2])
        with pytest.raises(ValueError, match=f"{name}: cannot specify both 'axis' and 'reduction_indices'"):
            getattr(tf, name)(t, axis=0, reduction_indices=0)
        with pytest.raises(errors.InvalidArgumentError, match="cannot specify both 'keepdims' and 'keep_dims'"):
            getattr(tf, name)(t, keepdims=True, keep_dims=True)


# ---------------------------------------------------------------- static shapes known at run time only


@pytest.mark.parametrize("fn", [
    lambda x: tf.reduce_prod(x, axis=1),
    lambda x: tf.math.cumprod(x, axis=1, exclusive=True),
    lambda x: tf.math.reduce_variance(x, axis=0),
    lambda x: tf.math.reduce_std(x),
    lambda x: tf.norm(x, ord=3, axis=1),
    lambda x: x.var(1, correction=2),
], ids=["prod", "cumprod", "var", "std", "norm", "method"])
def test_static_gradients_need_no_shapes_at_build_time(fn):
    values = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 2.0]])
    unknown = static_grad(fn, values, shape=None)
    known = static_grad(fn, values, shape=[2, 3])
    np.testing.assert_allclose(unknown, known)
    assert static_grad(fn, values, shape=[None, 3]).shape == (2, 3)


def test_static_shape_inference_of_reductions():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4, 5])
        assert tf.reduce_prod(x, axis=[1, 2]).shape.as_list() == [None]
        assert tf.norm(x, axis=[1, 2], keepdims=True).shape.as_list() == [None, 1, 1]
        assert tf.math.reduce_variance(x, axis=-1).shape.as_list() == [None, 4]
        assert tf.math.cumprod(x, axis=2).shape.as_list() == [None, 4, 5]
        with pytest.raises(errors.IndexOutOfRangeError, match="dimension out of range"):
            tf.math.cumprod(x, axis=3)


# ---------------------------------------------------------------- the parallel paths of large inputs


def test_large_reductions_and_scans_match_numpy():
    rng = np.random.default_rng(0)
    big = rng.uniform(0.99, 1.01, size=(600, 700))
    x = torch.tensor(big)
    for dim in (None, 0, 1):
        kwargs = {} if dim is None else {"dim": dim}
        np.testing.assert_allclose(x.prod(**kwargs).numpy(), np.prod(big, axis=dim), rtol=1e-10)
        np.testing.assert_allclose(x.var(**kwargs).numpy(), np.var(big, axis=dim, ddof=1), rtol=1e-10)
        np.testing.assert_allclose(x.norm(3, **kwargs).numpy(), np.sum(big**3, axis=dim) ** (1 / 3), rtol=1e-10)
    for dim in (0, 1):
        np.testing.assert_allclose(x.cumsum(dim).numpy(), np.cumsum(big, dim), rtol=1e-10)
        np.testing.assert_allclose(x.cumprod(dim).numpy(), np.cumprod(big, dim), rtol=1e-10)
    flat = torch.tensor(big.ravel())
    np.testing.assert_allclose(flat.cumsum(0).numpy(), np.cumsum(big.ravel()), rtol=1e-10)
    np.testing.assert_array_equal(x.all(1).numpy(), np.ones(600, bool))
    for dim in (0, 1):
        np.testing.assert_array_equal(x.argmax(dim).numpy(), np.argmax(big, dim))
        np.testing.assert_array_equal(x.argmin(dim).numpy(), np.argmin(big, dim))
    np.testing.assert_array_equal(x.argsort(1)[:5].numpy(), np.argsort(big[:5], 1, kind="stable"))


# ---------------------------------------------------------------- integer inputs


def test_torch_sums_and_products_of_integers_are_int64():
    x = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.int32)
    assert x.prod().dtype is torch.int64 and x.prod().item() == 720
    np.testing.assert_array_equal(x.cumsum(1).numpy(), np.cumsum(x.numpy(), 1))
    assert x.cumsum(1).dtype is torch.int64 and torch.cumprod(x, 0).dtype is torch.int64
    assert torch.tensor([True, True, False]).cumsum(0).tolist() == [1, 2, 2]
    assert torch.tensor([2**40, 2**40]).prod().item() == (2**80) % 2**64  # wraps, as torch


def test_tf1_sums_and_products_keep_the_integer_dtype_and_refuse_bool():
    values = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    got = static_value(lambda t: [tf.reduce_prod(t, 1), tf.cumprod(t, 1, exclusive=True), tf.cumsum(t, 0)],
                       values, dtype=tf.int32)
    assert [g.dtype for g in got] == [np.int32] * 3
    np.testing.assert_array_equal(got[0], [6, 120])
    np.testing.assert_array_equal(got[1], [[1, 1, 2], [1, 4, 20]])
    with tf.Graph().as_default():
        with pytest.raises(errors.DTypeError, match="Prod: Value passed to parameter 'input' has DataType bool"):
            tf.reduce_prod(tf.placeholder(tf.bool, [2]))


def test_var_and_norm_of_integers_raise_as_in_torch():
    with pytest.raises(errors.DTypeError, match="var: expected a float tensor but got int64"):
        torch.tensor([1, 2, 3]).var()
    with pytest.raises(errors.DTypeError, match="norm: expected a float tensor but got int64"):
        torch.tensor([1, 2, 3]).norm()


def test_all_and_any_of_integers_read_nonzero_as_true():
    x = torch.tensor([[0, 3], [1, 2]], dtype=torch.uint8)
    assert x.all(1).tolist() == [False, True] and x.any(0).tolist() == [True, True]


# ---------------------------------------------------------------- indices: argmax, max(dim), topk, sort


def test_max_along_a_dim_is_a_named_tuple_of_values_and_int64_indices():
    x = torch.tensor([[1.0, 5.0, 5.0], [7.0, 2.0, -1.0]])
    result = torch.max(x, 1)
    assert isinstance(result, torch.return_types.max) and result.indices.dtype is torch.int64
    assert result.values.tolist() == [5.0, 7.0] and result.indices.tolist() == [1, 0]
    values, indices = x.min(dim=0, keepdim=True)
    assert values.tolist() == [[1.0, 2.0, -1.0]] and indices.tolist() == [[0, 1, 1]]
    assert torch.max(x).item() == 7.0 and x.min().item() == -1.0
    np.testing.assert_array_equal(torch.max(x, torch.zeros(3)).numpy(), np.maximum(x.numpy(), 0))
    assert torch.max(torch.tensor(2.5), 0).indices.item() == 0


def test_the_gradient_of_max_along_a_dim_goes_to_the_index_only():
    x = torch.tensor([[1.0, 5.0, 5.0], [7.0, 2.0, 7.0]], requires_grad=True)
    x.max(1).values.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]  # ties: the first index, as torch
    y = torch.tensor([[1.0, 5.0, 5.0]], requires_grad=True)
    y.amax(1).sum().backward()
    assert y.grad.tolist() == [[0.0, 0.5, 0.5]]  # amax shares among ties


def test_max_with_keepdim_but_no_dim_raises():
    with pytest.raises(errors.InvalidArgumentError, match="max: keepdim needs a dim"):
        torch.max(torch.ones(2), keepdim=True)


def test_argmax_flattens_without_a_dim_and_picks_nan():
    x = torch.tensor([[1.0, 9.0], [float("nan"), 9.0]])
    assert torch.argmax(x).item() == 2 and torch.argmin(x).item() == 2
    assert x.argmax(dim=1).tolist() == [1, 0]
    assert torch.argmax(torch.tensor([[3, 1], [4, 4]]), keepdim=True).shape == (1, 1)


def test_tf_argmax_reads_axis_none_as_zero_and_takes_output_type():
    values = np.array([[1.0, 9.0, 3.0], [4.0, 2.0, 8.0]], np.float32)
    got = static_value(lambda t: [tf.argmax(t), tf.math.argmin(t, dimension=1), tf.argmax(t, 1, output_type=tf.int32)],
                       values, dtype=tf.float32)
    np.testing.assert_array_equal(got[0], [1, 0, 1])
    np.testing.assert_array_equal(got[1], [0, 1])
    assert got[0].dtype == np.int64 and got[2].dtype == np.int32
    with tf.Graph().as_default():
        t = tf.placeholder(tf.float32, [2, 3])
        with pytest.raises(ValueError, match="argmax: cannot specify both 'axis' and 'dimension'"):
            tf.argmax(t, axis=0, dimension=0)
        with pytest.raises(errors.DTypeError, match="argmax: output_type must be int32 or int64, got float32"):
            tf.argmax(t, output_type=tf.float32)


def test_argmax_over_an_empty_slice_or_of_bools_raises():
    with pytest.raises(errors.IndexOutOfRangeError, match="argmax: cannot take the argmax over dimension 1 of size 0"):
        torch.zeros(2, 0).argmax(1)
    with pytest.raises(errors.DTypeError, match="argmin: not supported for bool tensors"):
        torch.tensor([True]).argmin()


def test_topk_gives_the_largest_and_routes_the_gradient_to_them():
    x = torch.tensor([[1.0, 5.0, 3.0, 5.0], [0.0, -2.0, 4.0, 1.0]], requires_grad=True)
    values, indices = torch.topk(x, 2)
    assert values.tolist() == [[5.0, 5.0], [4.0, 1.0]] and indices.tolist() == [[1, 3], [2, 3]]
    values.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 1.0]]
    smallest = x.topk(1, dim=0, largest=False)
    assert smallest.values.tolist() == [[0.0, -2.0, 3.0, 1.0]] and smallest.indices.tolist() == [[1, 1, 0, 1]]


def test_topk_refuses_k_past_the_size_or_negative():
    with pytest.raises(errors.InvalidArgumentError, match=r"topk: k \(5\) is larger than the 4 elements"):
        torch.topk(torch.ones(4), 5)
    with pytest.raises(errors.InvalidArgumentError, match="topk: k must be a non-negative int"):
        torch.topk(torch.ones(4), -1)
    with tf.Graph().as_default():
        with pytest.raises(errors.InvalidArgumentError, match="input must have at least k columns. Had 3, needed 4"):
            tf.math.top_k(tf.placeholder(tf.float32, [2, 3]), 4)
        unknown = tf.placeholder(tf.float32, [2, None])
        late = tf.math.top_k(unknown, 4)
        with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError, match=r"k \(4\) is larger than"):
            sess.run(late.values, {unknown: np.ones((2, 3), np.float32)})


def test_tf_top_k_has_int32_indices_and_a_gradient():
    values = np.array([[1.0, 5.0, 3.0], [4.0, 4.0, 0.0]])
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [None, 3])
        top = tf.nn.top_k(x, k=2)
        (grad,) = tf.gradients(tf.reduce_sum(top.values), [x])
        with tf.Session() as sess:
            got_values, got_indices, got_grad = sess.run([top.values, top.indices, grad], {x: values})
    np.testing.assert_array_equal(got_values, [[5.0, 3.0], [4.0, 4.0]])
    assert got_indices.dtype == np.int32 and got_indices.tolist() == [[1, 2], [0, 1]]
    np.testing.assert_array_equal(got_grad, [[0.0, 1.0, 1.0], [1.0, 1.0, 0.0]])


def test_sort_is_stable_with_nan_last_and_first_descending():
    x = torch.tensor([3.0, float("nan"), 1.0, 3.0, -0.5])
    values, indices = torch.sort(x)
    assert indices.tolist() == [4, 2, 0, 3, 1] and math.isnan(values[-1].item())
    assert x.sort(descending=True).indices.tolist() == [1, 0, 3, 2, 4]
    assert torch.argsort(x, descending=True).tolist() == [1, 0, 3, 2, 4]


def test_tf_sort_and_argsort_take_a_direction():
    values = np.array([[3.0, 1.0, 2.0]], np.float32)
    got = static_value(lambda t: [tf.sort(t, direction="DESCENDING"), tf.argsort(t)], values, dtype=tf.float32)
    np.testing.assert_array_equal(got[0], [[3.0, 2.0, 1.0]])
    np.testing.assert_array_equal(got[1], [[1, 2, 0]])
    with tf.Graph().as_default():
        with pytest.raises(errors.InvalidArgumentError, match="direction should be one of ASCENDING, DESCENDING"):
            tf.argsort(tf.placeholder(tf.float32, [3]), direction="UP")


def test_count_nonzero_counts_in_int64_or_tf_dtype():
    x = torch.tensor([[0.0, 1.0, float("nan")], [0.0, 0.0, 2.0]])
    assert torch.count_nonzero(x).item() == 3 and x.count_nonzero(1).tolist() == [2, 1]
    assert torch.count_nonzero(x).dtype is torch.int64
    got = static_value(lambda t: [tf.count_nonzero(t, axis=0, keepdims=True), tf.math.count_nonzero(t, dtype=tf.int32)],
                       x.numpy(), dtype=tf.float32)
    np.testing.assert_array_equal(got[0], [[0, 1, 2]])
    assert got[1].dtype == np.int32 and got[1] == 3


def test_take_along_dim_checks_its_indices():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(errors.IndexOutOfRangeError, match="take_along_dim: index 2 is out of bounds for a dimension "
                                                          "of size 2"):
        torch.take_along_dim(x, torch.tensor([[2]]), 1)
    with pytest.raises(errors.DTypeError, match="take_along_dim: the indices must be an integer tensor"):
        torch.take_along_dim(x, torch.tensor([[0.0]]), 1)
    with pytest.raises(errors.ShapeError, match="must have one rank"):
        torch.take_along_dim(x, torch.tensor([0, 1]), 1)


def test_take_along_dim_adds_the_gradients_of_repeated_indices():
    x = torch.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    taken = torch.take_along_dim(x, torch.tensor([[2, 2, 0]]), dim=1)
    assert taken.tolist() == [[3.0, 3.0, 1.0]]
    taken.sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0, 2.0]]
    assert torch.take_along_dim(x.detach(), torch.tensor([2, 0])).tolist() == [3.0, 1.0]


@pytest.mark.parametrize("length", [1, 31, 32, 33, 100, 1024, 1 << 19])
def test_float32_max_min_and_arg_along_rows_match_numpy_with_ties_and_nan(length):
    rows = max(1, (1 << 19) // length)
    x = (np.random.default_rng(length).integers(-20, 20, (rows, length))).astype(np.float32)  # many ties
    x[0, length // 3] = np.nan
    t = torch.from_numpy(x)
    for largest, np_arg, np_best in [(True, np.argmax, np.max), (False, np.argmin, np.min)]:
        best = t.amax(1) if largest else t.amin(1)
        np.testing.assert_array_equal(best.numpy(), np_best(x, 1))
        arg = t.argmax(1) if largest else t.argmin(1)
        np.testing.assert_array_equal(arg.numpy(), np_arg(x, 1))  # numpy: the first of ties, NaN first
        values, indices = t.max(1) if largest else t.min(1)
        np.testing.assert_array_equal(indices.numpy(), np_arg(x, 1))
        np.testing.assert_array_equal(values.numpy(), np_best(x, 1))


def test_column_reductions_of_tall_matrices_match_numpy_and_every_thread_count():
    # Past the parallel size, with row blocks of unequal lengths.
    x = np.random.default_rng(5).standard_normal((4099, 300)).astype(np.float32)
    x[2500, 7] = np.nan
    t = torch.from_numpy(x)
    before = torch.get_num_threads()
    try:
        results = []
        for threads in (1, 2):
            torch.set_num_threads(threads)
            results.append((t.sum(0).numpy(), t.amax(0).numpy(), t.amin(0).numpy(), t.mean(0).numpy()))
    finally:
        torch.set_num_threads(before)
    for a, b in zip(*results):
        assert a.tobytes() == b.tobytes()
    sums, largest, smallest, means = results[0]
    np.testing.assert_allclose(sums, x.astype(np.float64).sum(0), rtol=1e-6, atol=1e-3)
    np.testing.assert_allclose(means, x.astype(np.float64).mean(0), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(largest, x.max(0))
    np.testing.assert_array_equal(smallest, x.min(0))
    assert np.isnan(sums[7]) and np.isnan(largest[7])
