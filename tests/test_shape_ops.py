"""Shape ops beyond what the shared op-table tests check (tests/references_shape.py has their
numpy references): which results are views, errors (type and message), each front's own
semantics, the multi-output compositions (torch's split/chunk/unbind, TF1's split/unstack),
gradients in static graphs whose shapes are unknown when they are built, and second derivatives
through the internal gradient ops.
"""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad as torch
import rustgrad.nn.functional as F
import rustgrad.static as tf
from rustgrad import errors


def arange(*shape: int) -> torch.Tensor:
    return torch.tensor(np.arange(float(np.prod(shape))).reshape(shape))


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


# ---------------------------------------------------------------- views and copies


@pytest.mark.parametrize(
    "view",
    [
        lambda x: x.permute(2, 0, 1),
        lambda x: x.movedim(0, -1),
        lambda x: x.swapaxes(0, 2),
        lambda x: x[:, :1].expand(2, 4, 4),
        lambda x: x.narrow(1, 1, 2),
        lambda x: x.select(2, 3),
        lambda x: x.diagonal(0, 1, 2),
        lambda x: x.unsqueeze(1),
        lambda x: x[:, :1].squeeze(1),
        lambda x: x.flatten(1),
        lambda x: x.unflatten(2, (2, 2)),
        lambda x: x.mT,
    ],
    ids=["permute", "movedim", "swapaxes", "expand", "narrow", "select", "diagonal", "unsqueeze", "squeeze",
         "flatten", "unflatten", "mT"],
)
def test_reordering_and_window_ops_return_views_that_see_writes_to_the_base(view):
    x = arange(2, 3, 4)
    v = view(x)
    before = v.numpy().copy()
    x.add_(100.0)
    np.testing.assert_array_equal(v.numpy(), before + 100.0)


@pytest.mark.parametrize(
    "copy",
    [lambda x: x.flip(0), lambda x: x.roll(1, 0), lambda x: x.repeat(1, 1, 1), lambda x: x.tile((1,)),
     lambda x: torch.pad(x, (0, 0)), lambda x: x.tril(5), lambda x: torch.stack([x])],
    ids=["flip", "roll", "repeat", "tile", "pad", "tril", "stack"],
)
def test_ops_that_reorder_elements_return_copies_as_torch_does(copy):
    x = arange(2, 3, 4)
    c = copy(x)
    before = c.numpy().copy()
    x.add_(100.0)
    np.testing.assert_array_equal(c.numpy(), before)


@pytest.mark.parametrize(
    "make, copies",
    [(lambda x: x.repeat(2), 2), (lambda x: x.tile((2,)), 2), (lambda x: x.roll(1), 1),
     (lambda x: x.expand(2, 3).t().flatten(), 2), (lambda x: torch.diag(x), 1)],
    ids=["repeat", "tile", "roll", "flatten_copy", "diag"],
)
def test_results_that_are_copies_are_no_views_and_take_recorded_in_place_ops(make, copies):
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = make(x)
    y.mul_(2.0)  # refused for views of a tensor that requires grad
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0 * copies] * 3)


def test_flatten_of_a_permuted_tensor_copies_the_values_in_order():
    x = arange(2, 3, 4).permute(2, 0, 1)
    want = np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1)
    np.testing.assert_array_equal(x.flatten(1).numpy(), want.reshape(4, 6))
    np.testing.assert_array_equal(torch.flatten(x, 0, 1).numpy(), want.reshape(8, 3))
    np.testing.assert_array_equal(x.flatten().numpy(), want.ravel())  # no arguments still works


def test_view_as_refuses_a_layout_that_needs_a_copy_and_reshape_as_copies():
    x = arange(3, 4).t()
    with pytest.raises(errors.ShapeError, match="view_as: view size is not compatible.*use reshape_as"):
        x.view_as(torch.zeros(12))
    np.testing.assert_array_equal(x.reshape_as(torch.zeros(12)).numpy(), np.arange(12.0).reshape(3, 4).T.ravel())


def test_writing_into_an_expanded_view_is_refused():
    e = torch.zeros(3).expand(2, 3)
    for write in (lambda: e.add_(1.0), lambda: e.fill_(1.0), lambda: e.__setitem__(0, 1.0), lambda: e.zero_()):
        with pytest.raises(errors.ShapeError, match="more than one element of the written-to tensor refers to a "
                                                    "single memory location"):
            write()
    assert e.contiguous().add_(1.0).numpy().tolist() == [[1.0] * 3] * 2


def test_bool_tensors_move_like_float_ones():
    b = torch.tensor([[True, False, True]])
    assert b.permute(1, 0).numpy().ravel().tolist() == [True, False, True]
    assert b.flip(1).numpy().tolist() == [[True, False, True]]
    assert b.expand(2, 3).numpy().tolist() == [[True, False, True]] * 2
    assert torch.stack([b, b]).shape == (2, 1, 3)
    assert torch.pad(b, (1, 0)).numpy().tolist() == [[False, True, False, True]]
    assert torch.triu(b.repeat(3, 1)).numpy().tolist() == [[True, False, True], [False, False, True],
                                                           [False, False, True]]


# ---------------------------------------------------------------- arguments


def test_methods_take_a_list_of_ints_one_by_one_as_a_sequence_or_by_name():
    x = arange(2, 3, 4)
    for permuted in (x.permute(2, 0, 1), x.permute((2, 0, 1)), x.permute([2, 0, 1]), x.permute(dims=(2, 0, 1))):
        assert permuted.shape == (4, 2, 3)
    assert x[:1].expand(5, -1, -1).shape == x[:1].expand((5, 3, 4)).shape == (5, 3, 4)
    assert x.repeat(2, 1, 1).shape == (4, 3, 4)
    assert x.flip(0, 2).numpy()[0, 0, 0] == 15.0
    with pytest.raises(errors.ArgumentTypeError, match="permute\\(\\) got argument 'dims' both by position"):
        x.permute(0, 1, 2, dims=(0, 1, 2))
    with pytest.raises(errors.ArgumentTypeError, match="permute\\(\\) missing required argument 'dims'"):
        x.permute()
    with pytest.raises(errors.ArgumentTypeError, match="expand: argument 'size' must be an int or a sequence"):
        x.expand("abc")


def test_graph_tensors_have_the_torch_named_methods_with_the_same_argument_forms():
    with tf.Graph().as_default():
        a = tf.constant(np.arange(24.0).reshape(2, 3, 4))
        got = run([a.permute(2, 0, 1), a.flip(0), a.narrow(2, 1, 2), a.mT, a.expand(2, 2, 3, 4), a.unsqueeze(-1)])
    want = np.arange(24.0).reshape(2, 3, 4)
    for g, w in zip(got, [want.transpose(2, 0, 1), want[::-1], want[:, :, 1:3], want.swapaxes(-1, -2),
                          np.broadcast_to(want, (2, 2, 3, 4)), want[..., None]]):
        np.testing.assert_array_equal(g, w)


def test_graph_tensors_split_chunk_and_unbind_with_torch_semantics():
    want = np.arange(12.0).reshape(2, 6)
    with tf.Graph().as_default():
        a = tf.constant(want)
        pieces = [*a.split(4, dim=1), *a.chunk(2), *a.unbind(1), a.T]
        assert [p.shape.as_list() for p in pieces[:2]] == [[2, 4], [2, 2]]
        got = run(pieces)
        with pytest.raises(errors.ShapeError, match="split: the size of dim 0 must be known when the graph is built"):
            tf.placeholder(tf.float32, [None]).split(2)
    for g, w in zip(got, [want[:, :4], want[:, 4:], want[:1], want[1:], *want.T, want.T]):
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda x: x.permute(0, 1), errors.ShapeError, "number of dims in the input \\(3\\) does not match"),
        (lambda x: x.permute(0, 1, 1), errors.ShapeError, "dim 1 appears multiple times"),
        (lambda x: x.permute(0, 1, 3), errors.IndexOutOfRangeError, "permute: dimension out of range"),
        (lambda x: x.expand(2, 5, 4), errors.ShapeError, "expanded size \\(5\\) must match the existing size \\(3\\)"),
        (lambda x: x.expand(3, 4), errors.ShapeError, "number of sizes \\(2\\) must be at least the number of dims"),
        (lambda x: x.expand(-1, 2, 3, 4), errors.ShapeError, "not allowed in a new leading dim 0"),
        (lambda x: x.narrow(1, 2, 2), errors.IndexOutOfRangeError, "start \\(2\\) \\+ length \\(2\\) exceeds"),
        (lambda x: x.narrow(1, -4, 1), errors.IndexOutOfRangeError, "start out of range"),
        (lambda x: x.narrow(0, 0, -1), errors.ShapeError, "length must be non-negative"),
        (lambda x: x.select(1, 3), errors.IndexOutOfRangeError, "index 3 out of range for tensor of size 3"),
        (lambda x: x.sum().select(0, 0), errors.IndexOutOfRangeError, "cannot be applied to a 0-d tensor"),
        (lambda x: x.diagonal(0, 1, 1), errors.ShapeError, "dim1 and dim2 cannot be the same dim"),
        (lambda x: x.flatten(2, 1), errors.ShapeError, "start_dim \\(2\\) cannot come after end_dim \\(1\\)"),
        (lambda x: x.unflatten(1, (2, 2)), errors.ShapeError, "don't multiply up to the size of dim 1 \\(3\\)"),
        (lambda x: x.unflatten(1, (-1, -1)), errors.ShapeError, "may hold one -1"),
        (lambda x: x.movedim((0, 1), 2), errors.ShapeError, "must name the same number of dims"),
        (lambda x: x.flip(0, 0), errors.ShapeError, "dim 0 appears multiple times"),
        (lambda x: x.roll((1, 2), 0), errors.ShapeError, "roll: shifts \\[1, 2\\] and dims"),
        (lambda x: x.repeat(2, 2), errors.ShapeError, "number of repeats \\(2\\) can not be smaller"),
        (lambda x: x.tile((2, -1)), errors.ShapeError, "must not be negative"),
        (lambda x: torch.diag(x), errors.ShapeError, "diag: expected a 1-D or 2-D tensor, got a 3-D one"),
        (lambda x: torch.trace(x), errors.ShapeError, "trace: expected a matrix, got a 3-D tensor"),
        (lambda x: x.sum((0, 1)).tril(), errors.ShapeError, "tril: expected a tensor of at least 2 dims, got 1"),
        (lambda x: x.sum((0, 1)).mT, errors.ShapeError, "mT: only defined for matrices"),
        (lambda x: x.sum(0).fliplr().sum().fliplr(), errors.ShapeError, "fliplr: the input must be at least 2-D"),
        (lambda x: torch.stack([x, x[0]]), errors.ShapeError, "stack: expects each tensor to be equal size"),
        (lambda x: torch.stack([]), errors.InvalidArgumentError, "expected a non-empty list of Tensors"),
    ],
)
def test_bad_arguments_raise_errors_naming_the_op(call, error, message):
    with pytest.raises(error, match=message):
        call(arange(2, 3, 4))


@pytest.mark.parametrize(
    "pad, mode, message",
    [
        ((1,), "constant", "padding length must be divisible by 2"),
        ((1, 1) * 4, "constant", "has 4 pairs, more than the 3 dims"),
        ((4, 0), "reflect", "does not fit a dim of size 4 in Reflect mode"),
        ((5, 0), "circular", "does not fit a dim of size 4 in Circular mode"),
        ((-1, 0), "replicate", "only constant mode crops"),
        ((-3, -3), "constant", "resulted in a negative output size -2"),
        ((1, 1), "wrap", "mode must be 'constant', 'reflect', 'replicate', 'circular' or 'symmetric'"),
    ],
)
def test_bad_padding_raises_naming_the_padding(pad, mode, message):
    with pytest.raises((errors.ShapeError, errors.InvalidArgumentError), match=message):
        F.pad(arange(2, 3, 4), pad, mode=mode)


# ---------------------------------------------------------------- each front's semantics


def test_torch_squeeze_leaves_a_named_dim_that_is_not_one_and_tf_squeeze_refuses_it():
    x = arange(2, 1, 3)
    assert x.squeeze(0).shape == (2, 1, 3)
    assert x.squeeze((0, 1)).shape == (2, 3)
    with tf.Graph().as_default():
        with pytest.raises(errors.InvalidArgumentError, match="Can not squeeze dim\\[0\\], expected a dimension of 1"):
            tf.squeeze(tf.constant(x.numpy()), axis=0)
        unknown = tf.placeholder(tf.float32, [None, None, 3])
        squeezed = tf.squeeze(unknown, squeeze_dims=[1])
        assert squeezed.shape.as_list() == [None, 3]
        with pytest.raises(errors.InvalidArgumentError, match="Can not squeeze dim\\[1\\], expected a dimension of 1, "
                                                              "got 2"):
            run(squeezed, {unknown: np.zeros((2, 2, 3), np.float32)})
        assert tf.squeeze(unknown).shape.rank is None


def test_tf_transpose_takes_any_perm_and_reverses_the_dims_without_one():
    a = np.arange(24.0).reshape(2, 3, 4)
    with tf.Graph().as_default():
        unknown_rank = tf.placeholder(tf.float64)
        t = tf.transpose(unknown_rank)
        p = tf.transpose(tf.constant(a), perm=[1, 2, 0])
        assert t.shape.rank is None and p.shape.as_list() == [3, 4, 2]
        got = run([t, p], {unknown_rank: a})
    np.testing.assert_array_equal(got[0], a.T)
    np.testing.assert_array_equal(got[1], a.transpose(1, 2, 0))


def test_tf1_diag_doubles_the_rank_where_torch_diag_takes_a_matrix_diagonal():
    m = np.arange(4.0).reshape(2, 2)
    np.testing.assert_array_equal(torch.diag(torch.tensor(m)).numpy(), [0.0, 3.0])
    np.testing.assert_array_equal(torch.diag(torch.tensor(m), 1).numpy(), [1.0])
    with tf.Graph().as_default():
        got = run(tf.diag(tf.constant(m)))
    assert got.shape == (2, 2, 2, 2)
    np.testing.assert_array_equal(got, np.diag(m.ravel()).reshape(2, 2, 2, 2))


def test_tf_linalg_ops_work_on_batches_of_matrices():
    batch = np.arange(18.0).reshape(2, 3, 3)
    with tf.Graph().as_default():
        x = tf.constant(batch)
        got = run([tf.linalg.trace(x), tf.trace(x), tf.linalg.diag_part(x), tf.linalg.diag(tf.linalg.diag_part(x)),
                   tf.linalg.band_part(x, 0, -1), tf.matrix_band_part(x, 1, 0)])
    np.testing.assert_array_equal(got[0], np.trace(batch, axis1=1, axis2=2))
    np.testing.assert_array_equal(got[1], got[0])
    np.testing.assert_array_equal(got[2], np.diagonal(batch, 0, 1, 2))
    np.testing.assert_array_equal(got[3], batch * np.eye(3))
    np.testing.assert_array_equal(got[4], np.triu(batch))
    np.testing.assert_array_equal(got[5], np.tril(np.triu(batch, -1)))


def test_tf_pad_takes_pairs_per_dim_and_any_mode_case():
    a = np.arange(6.0).reshape(2, 3)
    with tf.Graph().as_default():
        x = tf.constant(a)
        got = run([tf.pad(x, [[1, 0], [0, 2]], constant_values=-1), tf.pad(x, np.array([[0, 0], [2, 2]]), "REFLECT"),
                   tf.pad(x, [[1, 1], [1, 1]], mode="symmetric")])
        with pytest.raises(errors.ShapeError, match="one \\(before, after\\) pair per dim: got 1 pairs"):
            tf.pad(x, [[1, 1]])
        with pytest.raises(errors.InvalidArgumentError, match="must be a \\(before, after\\) pair, got 3 values"):
            tf.pad(x, [[1, 1, 1], [0, 0, 0]])
    np.testing.assert_array_equal(got[0], np.pad(a, [(1, 0), (0, 2)], constant_values=-1))
    np.testing.assert_array_equal(got[1], np.pad(a, [(0, 0), (2, 2)], mode="reflect"))
    np.testing.assert_array_equal(got[2], np.pad(a, [(1, 1), (1, 1)], mode="symmetric"))


@pytest.mark.parametrize("mode, numpy_mode", [("constant", "constant"), ("reflect", "reflect"),
                                              ("replicate", "edge"), ("circular", "wrap")])
def test_torch_pad_pads_the_last_dims_first(mode, numpy_mode):
    a = np.arange(24.0).reshape(2, 3, 4)
    got = F.pad(torch.tensor(a), (1, 2, 2, 0), mode=mode).numpy()
    np.testing.assert_array_equal(got, np.pad(a, [(0, 0), (2, 0), (1, 2)], mode=numpy_mode))
    assert F.pad is torch.pad


def test_torch_pad_with_negative_padding_crops():
    a = np.arange(12.0).reshape(3, 4)
    got = F.pad(torch.tensor(a), (-1, 2, 1, -2), value=7.0).numpy()
    want = np.pad(a[:1, 1:], [(1, 0), (0, 2)], constant_values=7.0)
    np.testing.assert_array_equal(got, want)


def test_roll_without_dims_rolls_the_flattened_tensor():
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(torch.roll(torch.tensor(a), 2).numpy(), np.roll(a, 2))
    np.testing.assert_array_equal(torch.roll(torch.tensor(a), -7).numpy(), np.roll(a, -7))


def test_tile_repeats_the_last_dims_when_given_fewer_repeats():
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(torch.tile(torch.tensor(a), (2,)).numpy(), np.tile(a, 2))
    np.testing.assert_array_equal(torch.tensor(a).tile(2, 1, 1).numpy(), np.tile(a, (2, 1, 1)))


# ---------------------------------------------------------------- torch's split, chunk and unbind


def test_split_by_size_leaves_a_smaller_last_piece_and_by_sections_needs_the_exact_sum():
    x = torch.arange(10.0)
    assert [p.tolist() for p in torch.split(x, 4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [p.shape for p in x.split([2, 0, 8])] == [(2,), (0,), (8,)]
    assert [p.shape for p in x.split(20)] == [(10,)]
    with pytest.raises(errors.ShapeError, match="split_with_sizes expects split_sizes to sum exactly to 10"):
        x.split([2, 2])
    with pytest.raises(errors.ShapeError, match="split_size can only be 0 if dimension size is 0"):
        x.split(0)
    with pytest.raises(errors.IndexOutOfRangeError, match="dimension specified as 0 but tensor has no dimensions"):
        x.sum().split(1)


def test_chunk_gives_fewer_pieces_when_the_size_does_not_divide_as_torch_does():
    assert [p.shape for p in torch.arange(6.0).chunk(4)] == [(2,), (2,), (2,)]
    assert [p.shape for p in torch.zeros(2, 5).chunk(2, dim=1)] == [(2, 3), (2, 2)]
    assert [p.shape for p in torch.zeros(0, 3).chunk(3)] == [(0, 3)] * 3
    with pytest.raises(errors.ShapeError, match="chunks must be greater than 0, got 0"):
        torch.zeros(3).chunk(0)


def test_unbind_gives_each_slice_and_pieces_are_views_that_carry_gradients():
    x = arange(2, 3).requires_grad_()
    rows = torch.unbind(x)
    cols = x.unbind(1)
    assert [r.tolist() for r in rows] == [[0, 1, 2], [3, 4, 5]]
    assert len(cols) == 3 and cols[2].tolist() == [2, 5]
    (rows[1].sum() * 2 + x.split([1, 2], dim=1)[1].sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 1], [2, 3, 3]])


# ---------------------------------------------------------------- TF1's split and unstack


def test_tf_split_cuts_into_equal_pieces_or_listed_sizes_with_unknown_batch_dims():
    a = np.arange(24.0, dtype=np.float32).reshape(2, 12)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 12])
        three = tf.split(x, 3, axis=1)
        sized = tf.split(x, [2, -1, 4], 1)
        assert [p.shape.as_list() for p in sized] == [[None, 2], [None, 6], [None, 4]]
        loss = tf.reduce_sum(three[0] * 2.0) + tf.reduce_sum(sized[1])
        (grad,) = tf.gradients(loss, [x])
        got = run(three + sized + [grad], {x: a})
    np.testing.assert_array_equal(np.concatenate(got[:3], axis=1), a)
    np.testing.assert_array_equal(got[4], a[:, 2:8])
    per_column = np.zeros(12)
    per_column[0:4] += 2.0
    per_column[2:8] += 1.0
    np.testing.assert_array_equal(got[6], np.tile(per_column, (2, 1)))


def test_tf_split_errors_as_tf1():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 5])
        with pytest.raises(errors.InvalidArgumentError, match="should evenly divide the split dimension, but got "
                                                              "split_dim 1 \\(size = 5\\) and num_split 2"):
            tf.split(x, 2, axis=1)
        with pytest.raises(errors.InvalidArgumentError, match="Determined shape must either match input shape"):
            tf.split(x, [2, 2], axis=1)
        with pytest.raises(errors.ShapeError, match="must be known to cut it into 2 pieces"):
            tf.split(tf.placeholder(tf.float32, [None]), 2)


def test_tf_unstack_infers_num_from_the_shape_or_takes_it():
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    with tf.Graph().as_default():
        known = tf.unstack(tf.constant(a), axis=1)
        unknown = tf.placeholder(tf.float32, [None, None])
        given = tf.unstack(unknown, num=2)
        with pytest.raises(errors.ShapeError, match="Cannot infer num from shape"):
            tf.unstack(unknown)
        (grad,) = tf.gradients(tf.reduce_sum(given[1] * 3.0), [unknown])
        got = run(known + given + [grad], {unknown: a})
    for piece, want in zip(got, [a[:, 0], a[:, 1], a[:, 2], a[0], a[1], [[0, 0, 0], [3, 3, 3]]]):
        np.testing.assert_array_equal(piece, want)


def test_tf_stack_infers_shapes_and_refuses_mixed_dtypes():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [None, 3])
        b = tf.placeholder(tf.float32, [4, None])
        assert tf.stack([a, b], axis=1).shape.as_list() == [4, 2, 3]
        with pytest.raises(errors.ShapeError, match="Dimension 1 in both shapes must be equal, but are 3 and 2"):
            tf.stack([a, tf.placeholder(tf.float32, [4, 2])])
        with pytest.raises(errors.DTypeError, match=r"values\[1\] has dtype float64 but values\[0\] has dtype float32"):
            tf.stack([a, tf.placeholder(tf.float64, [None, 3])])


# ---------------------------------------------------------------- gradients with unknown static shapes

STATIC_CASES = {
    "transpose": (lambda t: tf.transpose(t), lambda x: x.permute(2, 1, 0)),
    "broadcast_to": (lambda t: tf.broadcast_to(t[:, :1], [2, 2, 3, 4]), lambda x: x[:, :1].expand(2, 2, 3, 4)),
    "squeeze": (lambda t: tf.squeeze(t[:, :1], 1), lambda x: x[:, :1].squeeze(1)),
    "expand_dims": (lambda t: tf.expand_dims(t, -1), lambda x: x.unsqueeze(-1)),
    "flatten": (lambda t: t.flatten(1), lambda x: x.flatten(1)),
    "reverse": (lambda t: tf.reverse(t, [0, 2]), lambda x: x.flip(0, 2)),
    "roll": (lambda t: tf.roll(t, [1, -2], [1, 2]), lambda x: x.roll((1, -2), (1, 2))),
    "tile": (lambda t: tf.tile(t, [2, 1, 3]), lambda x: x.tile((2, 1, 3))),
    "pad": (lambda t: tf.pad(t, [[0, 0], [1, 2], [2, 1]], "REFLECT"),
            lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect")),
    "diag_part": (lambda t: tf.linalg.diag_part(t), lambda x: x.diagonal(0, -2, -1)),
    "trace": (lambda t: tf.linalg.trace(t), lambda x: x.diagonal(0, -2, -1).sum(-1)),
    "band_part": (lambda t: tf.linalg.band_part(t, 1, 0), lambda x: x.tril().triu(-1)),
    "stack": (lambda t: tf.stack([t, t * 2.0], axis=-1), lambda x: torch.stack([x, x * 2.0], -1)),
    "unstack": (lambda t: tf.unstack(t, num=2)[1], lambda x: x.unbind(0)[1]),
    "narrow": (lambda t: t.narrow(2, 1, 2), lambda x: x.narrow(2, 1, 2)),
}


@pytest.mark.parametrize("placeholder_shape", [None, [None, None, None]], ids=["unknown_rank", "unknown_dims"])
@pytest.mark.parametrize("case", STATIC_CASES.values(), ids=STATIC_CASES.keys())
def test_static_gradients_match_eager_ones_when_shapes_are_unknown_at_build_time(case, placeholder_shape):
    static_fn, eager_fn = case
    a = np.random.default_rng(3).uniform(-1, 1, (2, 3, 4))
    x = torch.tensor(a, requires_grad=True)
    out = eager_fn(x)
    (out * out).sum().backward()
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float64, placeholder_shape)
        y = static_fn(p)
        (grad,) = tf.gradients(tf.reduce_sum(y * y), [p])
        for _ in range(2):  # a plan runs again with the buffers of the first run
            value, g = run([y, grad], {p: a})
            np.testing.assert_allclose(value, out.detach().numpy())
            np.testing.assert_allclose(g, x.grad.numpy())


@pytest.mark.parametrize(
    "op",
    [lambda t: t.narrow(1, 1, 2), lambda t: tf.pad(t, [[1, 0], [2, 1]]), lambda t: tf.tile(t, [2, 2]),
     lambda t: tf.linalg.trace(t), lambda t: tf.diag(t), lambda t: tf.pad(t, [[1, 1], [2, 2]], "SYMMETRIC"),
     lambda t: t.diagonal(1), lambda t: tf.stack([t, t]), lambda t: t.repeat(1, 2)],
    ids=["narrow", "pad", "tile", "trace", "diag", "pad_symmetric", "diagonal", "stack", "repeat"],
)
def test_second_derivatives_go_through_the_internal_gradient_ops(op):
    """g = d sum(op(x)^2)/dx is linear in x, and the gradient of sum(g^2) goes back through the
    internal ops that computed g; checked against finite differences of sum(g^2)."""
    a = np.random.default_rng(5).uniform(-1, 1, (3, 3))
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float64, [None, None])
        y = op(p)
        (g,) = tf.gradients(y * y, [p])
        (h,) = tf.gradients(g * g, [p])
        with tf.Session() as sess:
            got = sess.run(h, {p: a})

            def total(v: np.ndarray) -> float:
                return float(np.sum(sess.run(g, {p: v}) ** 2))

            numerical = np.zeros_like(a)
            for k in np.ndindex(a.shape):
                plus, minus = a.copy(), a.copy()
                plus[k] += 1e-6
                minus[k] -= 1e-6
                numerical[k] = (total(plus) - total(minus)) / 2e-6
    np.testing.assert_allclose(got, numerical, rtol=1e-5, atol=1e-6)


def test_static_shapes_are_inferred_from_partial_shapes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3, 4])
        assert tf.transpose(x, [2, 0, 1]).shape.as_list() == [4, None, 3]
        assert tf.expand_dims(x, 1).shape.as_list() == [None, 1, 3, 4]
        assert tf.tile(x, [1, 2, 3]).shape.as_list() == [None, 6, 12]
        assert tf.pad(x, [[1, 1], [0, 2], [1, 0]]).shape.as_list() == [None, 5, 5]
        assert tf.linalg.diag_part(x).shape.as_list() == [None, 3]
        assert tf.linalg.diag(x).shape.as_list() == [None, 3, 4, 4]
        assert tf.broadcast_to(x[:1], [5, 3, 4]).shape.as_list() == [5, 3, 4]
        assert x.flatten(1).shape.as_list() == [None, 12]
        assert x.flatten().shape.as_list() == [None]
        with pytest.raises(errors.ShapeError, match="Dimensions must be equal|does not match"):
            tf.broadcast_to(x, [2, 5, 4])
        with pytest.raises(errors.IndexOutOfRangeError, match="out of range"):
            tf.reverse(x, [3])


def test_cat_copies_strided_parts_into_place_along_any_dim_with_promotion():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((3, 5, 2)).astype(np.float32)  # transposed below to (3, 2, 5)
    c = np.arange(3 * 1 * 5, dtype=np.int64).reshape(3, 1, 5)
    tb = torch.from_numpy(b).transpose(1, 2)
    assert not tb.is_contiguous()
    parts = [torch.from_numpy(a), tb, torch.from_numpy(c), torch.empty(0)]  # a 1-D empty part is skipped
    out = torch.cat(parts, 1)
    want = np.concatenate([a, b.transpose(0, 2, 1), c.astype(np.float32)], 1)
    assert out.dtype == torch.float32 and tuple(out.shape) == want.shape
    np.testing.assert_array_equal(out.numpy(), want)
    big = [rng.standard_normal((300, 500)).astype(np.float32) for _ in range(2)]  # past the parallel copy size
    np.testing.assert_array_equal(torch.cat([torch.from_numpy(p) for p in big], 0).numpy(), np.concatenate(big, 0))
    np.testing.assert_array_equal(torch.cat([torch.from_numpy(p) for p in big], 1).numpy(), np.concatenate(big, 1))
