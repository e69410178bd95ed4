"""Products beyond what the shared op-table tests cover: einsum's spellings, implicit outputs,
broadcasting and errors on both fronts; tensordot's dims; the fixed products' checks; static
shape inference and gradients with shapes unknown until run time."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
import rustgrad.static as tf
from rustgrad.autograd import gradcheck
from rustgrad.errors import DTypeError, InvalidArgumentError, RustgradError, ShapeError

RNG = np.random.default_rng(0)


def arr(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def run(fetch, feed=None):
    with tf.Session() as sess:
        return sess.run(fetch, feed)


# ---------------------------------------------------------------- einsum, eager


def test_einsum_takes_operands_one_by_one_or_as_one_list():
    a, b = arr(2, 3), arr(3, 4)
    ta, tb = rustgrad.tensor(a), rustgrad.tensor(b)
    np.testing.assert_allclose(rustgrad.einsum("ij,jk->ik", ta, tb).numpy(), a @ b)
    np.testing.assert_allclose(rustgrad.einsum("ij,jk->ik", [ta, tb]).numpy(), a @ b)
    np.testing.assert_allclose(rustgrad.einsum("ij,jk->ik", (ta, tb)).numpy(), a @ b)


@pytest.mark.parametrize("equation, shapes", [
    ("ba", [(2, 3)]),                # implicit output: the labels in alphabetical order, so a transpose
    ("Ba", [(2, 3)]),                # upper case sorts first, as numpy
    ("ij,jk", [(2, 3), (3, 4)]),     # repeated labels are summed
    ("ii", [(3, 3)]),                # trace
    ("ii->i", [(3, 3)]),             # diagonal
    ("...ij->...ji", [(2, 1, 2, 3)]),
    ("i j , j k -> i k", [(2, 3), (3, 4)]),  # spaces are ignored
    ("ij,jk,kl,lm->im", [(2, 3), (3, 4), (4, 2), (2, 5)]),
    ("bij,bjk->bik", [(4, 2, 3), (1, 3, 5)]),  # the batch label broadcasts
])
def test_einsum_forms_match_numpy(equation, shapes):
    arrays = [arr(*s) for s in shapes]
    got = rustgrad.einsum(equation, *[rustgrad.tensor(a) for a in arrays]).numpy()
    np.testing.assert_allclose(got, np.einsum(equation, *arrays), rtol=1e-12, atol=1e-12)


def test_einsum_broadcasts_a_contracted_label_of_size_one():
    # torch's rule: a label of size 1 in one operand broadcasts against the other's size.
    a, b = arr(2, 1), arr(3)
    got = rustgrad.einsum("ij,j->i", rustgrad.tensor(a), rustgrad.tensor(b)).numpy()
    np.testing.assert_allclose(got, a[:, 0] * b.sum())
    inputs = [rustgrad.tensor(a, requires_grad=True), rustgrad.tensor(b, requires_grad=True)]
    assert gradcheck(lambda x, y: rustgrad.einsum("ij,j->i", x, y), inputs, eps=1e-6, atol=1e-6)


def test_einsum_gradient_of_a_label_only_one_operand_has_spreads_over_it():
    x = rustgrad.tensor(arr(2, 3), requires_grad=True)
    y = rustgrad.tensor(arr(4), requires_grad=True)
    rustgrad.einsum("ij,k->i", x, y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 3), y.detach().numpy().sum()))
    np.testing.assert_allclose(y.grad.numpy(), np.full(4, x.detach().numpy().sum()))


def test_einsum_gradient_of_a_diagonal_is_zero_off_it():
    x = rustgrad.tensor(arr(3, 3), requires_grad=True)
    rustgrad.einsum("ii->i", x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.eye(3))


def test_einsum_of_integers_keeps_their_dtype():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    b = np.arange(12, dtype=np.int64).reshape(3, 4)
    got = rustgrad.einsum("ij,jk->ik", rustgrad.tensor(a), rustgrad.tensor(b))
    assert got.dtype == rustgrad.int64
    np.testing.assert_array_equal(got.numpy(), a @ b)


def test_einsum_result_is_not_a_view_of_its_operand():
    x = rustgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    for equation in ["ij->ij", "ij->ji", "ii->i"]:
        y = rustgrad.einsum(equation, x)
        y.add_(10.0)
        np.testing.assert_array_equal(x.numpy(), [[1.0, 2.0], [3.0, 4.0]])


def test_einsum_names_its_node():
    x = rustgrad.tensor(arr(2, 2), requires_grad=True)
    assert rustgrad.einsum("ij->ji", x).grad_fn.name() == "EinsumBackward0"


@pytest.mark.parametrize("call, error, message", [
    (lambda a, b: rustgrad.einsum("ij,jk", a), InvalidArgumentError,
     r"einsum\(\): fewer operands were provided than specified in the equation"),
    (lambda a, b: rustgrad.einsum("ij", a, b), InvalidArgumentError,
     r"einsum\(\): more operands were provided than specified in the equation"),
    (lambda a, b: rustgrad.einsum("i", a), ShapeError,
     r"einsum\(\): the number of subscripts in the equation \(1\) does not match the number of dimensions \(2\) "
     r"for operand 0 and no ellipsis was given"),
    (lambda a, b: rustgrad.einsum("ijk...", a), ShapeError,
     r"the number of subscripts in the equation \(3\) is more than the number of dimensions \(2\) for operand 0"),
    (lambda a, b: rustgrad.einsum("ij,jk", a, a), ShapeError,
     r"einsum\(\): operands do not broadcast with remapped shapes .*\[2, 3\] \[2, 3\].*subscript j"),
    (lambda a, b: rustgrad.einsum("ii", a), ShapeError,
     r"einsum\(\): subscript i is repeated for operand 0 but the sizes don't match, 2 != 3"),
    (lambda a, b: rustgrad.einsum("i1", a), InvalidArgumentError,
     r"einsum\(\): invalid subscript given at index 1 in the equation string, subscripts must be in \[a-zA-Z\]"),
    (lambda a, b: rustgrad.einsum("i.j", a), InvalidArgumentError, r"found '\.' for operand 0 that is not part"),
    (lambda a, b: rustgrad.einsum("......", a), InvalidArgumentError, r"for which an ellipsis was already found"),
    (lambda a, b: rustgrad.einsum("ij->k", a), InvalidArgumentError,
     r"output subscript k does not appear in the equation for any input operand"),
    (lambda a, b: rustgrad.einsum("ij->ii", a), InvalidArgumentError,
     r"output subscript i appears more than once in the output"),
    (lambda a, b: rustgrad.einsum("ij"), RustgradError, r"at least one operand"),
])
def test_einsum_errors_name_the_problem(call, error, message):
    a, b = rustgrad.tensor(arr(2, 3)), rustgrad.tensor(arr(3, 4))
    with pytest.raises(error, match=message):
        call(a, b)


# ---------------------------------------------------------------- einsum, static


def test_static_einsum_infers_shapes_from_the_equation_even_of_unknown_rank():
    a = tf.placeholder(tf.float32, [None, 3])
    b = tf.placeholder(tf.float32, None)
    assert tf.einsum("ij,jk->ik", a, b).shape.as_list() == [None, None]
    c = tf.placeholder(tf.float32, [5, 3, 4])
    d = tf.placeholder(tf.float32, [None, 4, 2])
    assert tf.einsum("bij,bjk->bik", c, d).shape.as_list() == [5, 3, 2]
    assert tf.linalg.einsum("...ij->...ji", c).shape.as_list() == [5, 4, 3]
    assert tf.einsum("...ij->...ji", b).shape.ndims is None  # an ellipsis of unknown rank


def test_static_einsum_gradients_with_shapes_known_only_at_run_time():
    a = tf.placeholder(tf.float64, None)
    b = tf.placeholder(tf.float64, None)
    y = tf.einsum("...ij,jk->...ik", a, b)
    ga, gb = tf.gradients(tf.reduce_sum(y), [a, b])
    x1, x2 = arr(2, 3, 4), arr(4, 5)
    got_a, got_b = run([ga, gb], {a: x1, b: x2})
    np.testing.assert_allclose(got_a, np.broadcast_to(x2.sum(1), (2, 3, 4)))
    np.testing.assert_allclose(got_b, np.broadcast_to(x1.sum((0, 1))[:, None], (4, 5)))


@pytest.mark.parametrize("build, error, message", [
    (lambda a, b: tf.einsum("ij,jk->ik", a), InvalidArgumentError,
     r'einsum: Got 1 arguments for equation "ij,jk->ik", expecting 2'),
    (lambda a, b: tf.einsum("i1,jk", a, b), InvalidArgumentError, r"einsum: Indices have incorrect format: i1,jk"),
    (lambda a, b: tf.einsum("ij,jk->ik", a, a), ShapeError,
     r"einsum: Dimensions must be equal, but are 3 and 2 for subscript j"),
    (lambda a, b: tf.einsum("ij,jk->ik", a, tf.cast(b, tf.float64)), DTypeError,
     r"einsum: input 1 has type float64 that does not match type float32 of input 0"),
])
def test_static_einsum_errors_are_tf1s(build, error, message):
    a, b = tf.placeholder(tf.float32, [2, 3]), tf.placeholder(tf.float32, [3, 4])
    with pytest.raises(error, match=message):
        build(a, b)


# ---------------------------------------------------------------- tensordot


@pytest.mark.parametrize("dims, axes", [
    (2, 2), (0, 0), (([1, 2], [0, 1]), ([1, 2], [0, 1])), (([2, 1], [1, 0]), ([2, 1], [1, 0])),
    ((2, 1), (2, 1)), (([-1], [1]), ([-1], [1])),
])
def test_tensordot_dims_on_both_fronts(dims, axes):
    a, b = arr(2, 3, 4), arr(3, 4, 5)
    expected = np.tensordot(a, b, axes=axes)
    got = rustgrad.tensordot(rustgrad.tensor(a), rustgrad.tensor(b), dims=dims).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    static = tf.tensordot(tf.constant(a), tf.constant(b), axes)
    assert static.shape.as_list() == list(expected.shape)
    np.testing.assert_allclose(run(static), expected, rtol=1e-12)


@pytest.mark.parametrize("dims, error, message", [
    (([1], [1]), ShapeError, r"contracted dimensions need to match, but first has size 3 in dim 1 and second has "
                             r"size 4 in dim 1"),
    (-1, InvalidArgumentError, r"tensordot expects dims >= 0, but got dims=-1"),
    (4, ShapeError, r"tensordot expects dims <= the rank of both operands"),
    (([0, 1], [0]), ShapeError, r"both dimension lists should have same length"),
    (([0], [0], [1]), InvalidArgumentError, r"must hold two lists of dims"),
    ("x", RustgradError, r"argument 'dims' must be an int or a pair of sequences of ints"),
])
def test_tensordot_errors(dims, error, message):
    a, b = rustgrad.tensor(arr(2, 3)), rustgrad.tensor(arr(3, 4))
    with pytest.raises(error, match=message):
        rustgrad.tensordot(a, b, dims=dims)


# ---------------------------------------------------------------- fixed products


def test_outer_dot_mv_and_their_aliases():
    u, v, m = arr(3), arr(3), arr(2, 3)
    tu, tv, tm = rustgrad.tensor(u), rustgrad.tensor(v), rustgrad.tensor(m)
    np.testing.assert_allclose(rustgrad.ger(tu, tv).numpy(), np.outer(u, v))
    np.testing.assert_allclose(tu.outer(tv).numpy(), np.outer(u, v))
    np.testing.assert_allclose(rustgrad.vdot(tu, tv).numpy(), u @ v)
    np.testing.assert_allclose(tu.dot(tv).numpy(), u @ v)
    np.testing.assert_allclose(tm.mv(tv).numpy(), m @ v)


@pytest.mark.parametrize("call, message", [
    (lambda m, v: rustgrad.dot(m, v), r"dot: expected two 1-D tensors, got shapes \[2, 3\] and \[3\]"),
    (lambda m, v: rustgrad.dot(v, rustgrad.tensor(arr(4))),
     r"dot: shapes \[3\] and \[4\] cannot be multiplied: the sizes 3 and 4 must be equal"),
    (lambda m, v: rustgrad.outer(m, v), r"outer: expected two 1-D tensors, got shapes \[2, 3\] and \[3\]"),
    (lambda m, v: rustgrad.mv(m, m), r"mv: expected a matrix and a 1-D vector, got shapes \[2, 3\] and \[2, 3\]"),
    (lambda m, v: rustgrad.addmm(rustgrad.tensor(arr(3)), m, m.t()),
     r"addmm: the input of shape \[3\] does not broadcast to the product's shape \[2, 2\]"),
    (lambda m, v: rustgrad.baddbmm(m, m, m), r"baddbmm: expected two 3-D tensors"),
])
def test_fixed_products_refuse_operands_that_do_not_fit(call, message):
    m, v = rustgrad.tensor(arr(2, 3)), rustgrad.tensor(arr(3))
    with pytest.raises(ShapeError, match=message):
        call(m, v)


def test_addmm_with_beta_zero_ignores_the_input_nan_and_all():
    m1, m2 = arr(2, 3), arr(3, 4)
    nan = rustgrad.tensor(np.full((2, 4), np.nan))
    got = rustgrad.addmm(nan, rustgrad.tensor(m1), rustgrad.tensor(m2), beta=0, alpha=2)
    np.testing.assert_allclose(got.numpy(), 2 * m1 @ m2)


def test_addmm_addmv_baddbmm_as_methods_with_scales():
    inp, m1, m2 = arr(4), arr(2, 3), arr(3, 4)
    got = rustgrad.tensor(inp).addmm(rustgrad.tensor(m1), rustgrad.tensor(m2), beta=0.5, alpha=3)
    np.testing.assert_allclose(got.numpy(), 0.5 * inp + 3 * m1 @ m2)
    v = arr(3)
    got = rustgrad.tensor(arr(2) * 0 + 1).addmv(rustgrad.tensor(m1), rustgrad.tensor(v))
    np.testing.assert_allclose(got.numpy(), 1 + m1 @ v)
    b1, b2 = arr(5, 2, 3), arr(5, 3, 4)
    got = rustgrad.baddbmm(rustgrad.tensor(np.zeros((2, 4))), rustgrad.tensor(b1), rustgrad.tensor(b2), alpha=2)
    np.testing.assert_allclose(got.numpy(), 2 * b1 @ b2)


def test_the_fixed_products_are_static_extensions_under_torch_names():
    u, v, m = arr(3), arr(3), arr(2, 3)
    assert run(tf.outer(tf.constant(u), tf.constant(v))).shape == (3, 3)
    np.testing.assert_allclose(run(tf.dot(tf.constant(u), tf.constant(v))), u @ v)
    np.testing.assert_allclose(run(tf.mv(tf.constant(m), tf.constant(v))), m @ v)
    with pytest.raises(ShapeError, match=r"mv: expected a matrix and a 1-D vector"):
        tf.mv(tf.constant(v), tf.constant(v))


@pytest.mark.parametrize("call, name", [
    (lambda t: rustgrad.einsum("i,i->", t, t), "einsum"),
    (lambda t: rustgrad.tensordot(t, t, dims=1), "tensordot"),
    (lambda t: rustgrad.dot(t, t), "dot"),
    (lambda t: rustgrad.outer(t, t), "outer"),
])
def test_products_of_bool_tensors_are_refused_naming_the_op(call, name):
    with pytest.raises(DTypeError, match=rf"{name}: expected numeric tensors, got bool"):
        call(rustgrad.tensor([True, False]))


def test_static_einsum_gradients_can_be_differentiated_again():
    # einsum_backward is linear in the output's gradient and in the other operands: its own rule
    # is einsum again, so a static graph can take gradients of gradients.
    a_value, b_value, g_value, h_value = arr(2, 3), arr(3, 4), arr(2, 4), arr(2, 3)
    a, b, g = (tf.placeholder(tf.float64, None) for _ in range(3))
    (ga,) = tf.gradients(tf.einsum("ij,jk->ik", a, b), [a], grad_ys=[g])  # g @ b.T
    gb, gg = tf.gradients(ga, [b, g], grad_ys=[tf.constant(h_value)])
    got_b, got_g = run([gb, gg], {a: a_value, b: b_value, g: g_value})
    np.testing.assert_allclose(got_b, h_value.T @ g_value, rtol=1e-12)
    np.testing.assert_allclose(got_g, h_value @ b_value, rtol=1e-12)
    x, gz = tf.placeholder(tf.float64, [3, 3]), tf.placeholder(tf.float64, [3])
    (gx,) = tf.gradients(tf.einsum("ii->i", x), [x], grad_ys=[gz])
    (ggz,) = tf.gradients(gx, [gz], grad_ys=[tf.constant(np.arange(9.0).reshape(3, 3))])
    np.testing.assert_array_equal(run(ggz, {x: np.eye(3), gz: np.ones(3)}), [0.0, 4.0, 8.0])
