"""Convolutions and poolings beyond the shared op-table tests: bias, 'same'/'valid' padding,
groups, dilation, stride, transposed output_padding, max-pool indices, ceil_mode, TF1's NHWC and
SAME conventions, gradients in both modes, and errors that name the op and the shapes."""

from __future__ import annotations

import numpy as np
import pytest
from references_conv import (
    adaptive_avg_pool2d_reference,
    avg_pool2d_reference,
    avg_pool_tf_reference,
    conv1d_reference,
    conv1d_tf_reference,
    conv2d_reference,
    conv2d_tf_reference,
    conv_transpose2d_reference,
    max_pool2d_indices_reference,
    max_pool2d_reference,
    max_pool_tf_reference,
)
from test_property_ops import check_grad

import rustgrad
import rustgrad.nn.functional as F
import rustgrad.static as tf
from rustgrad.errors import RustgradError

RNG = np.random.default_rng(0)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def run_static(build, *arrays):
    graph = tf.Graph()
    with graph.as_default():
        placeholders = [tf.placeholder(tf.float64, a.shape) for a in arrays]
        out = build(*placeholders)
        with tf.Session() as sess:
            return sess.run(out, dict(zip(placeholders, arrays)))


@pytest.mark.parametrize("padding", [0, 1, (2, 1), "same", "valid"])
def test_conv2d_with_bias_matches_numpy(padding):
    x, w, b = randn(2, 4, 6, 5), randn(3, 4, 3, 2), randn(3)
    got = F.conv2d(rustgrad.tensor(x), rustgrad.tensor(w), rustgrad.tensor(b), padding=padding).numpy()
    expected = conv2d_reference(x, w, padding=padding) + b[:, None, None]
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_torch_conv2d_is_the_functional_one_and_takes_bias_positionally():
    x, w, b = randn(1, 2, 4, 4), randn(2, 2, 3, 3), randn(2)
    got = rustgrad.conv2d(rustgrad.tensor(x), rustgrad.tensor(w), rustgrad.tensor(b), 2, 1).numpy()
    np.testing.assert_allclose(got, conv2d_reference(x, w, stride=2, padding=1) + b[:, None, None], atol=1e-12)
    assert not hasattr(rustgrad.Tensor, "conv2d")


def test_same_padding_with_an_even_kernel_puts_the_extra_pixel_after():
    x, w = randn(1, 1, 5, 5), randn(1, 1, 4, 2)
    got = F.conv2d(rustgrad.tensor(x), rustgrad.tensor(w), padding="same").numpy()
    assert got.shape == (1, 1, 5, 5)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 2), (0, 1)))
    np.testing.assert_allclose(got, conv2d_reference(padded, w), atol=1e-12)


@pytest.mark.parametrize("groups,stride,dilation", [(2, 1, 1), (4, 2, 1), (1, (2, 1), (1, 2)), (2, 3, 2)])
def test_conv2d_groups_stride_dilation_match_numpy(groups, stride, dilation):
    x, w = randn(2, 4, 9, 8), randn(4, 4 // groups, 3, 2)
    got = F.conv2d(rustgrad.tensor(x), rustgrad.tensor(w), stride=stride, padding=1, dilation=dilation,
                   groups=groups).numpy()
    expected = conv2d_reference(x, w, stride=stride, padding=1, dilation=dilation, groups=groups)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_conv2d_takes_an_unbatched_input():
    x, w = randn(3, 5, 5), randn(2, 3, 3, 3)
    got = F.conv2d(rustgrad.tensor(x), rustgrad.tensor(w), padding=1).numpy()
    np.testing.assert_allclose(got, conv2d_reference(x[None], w, padding=1)[0], atol=1e-12)


def test_float32_conv2d_of_the_benchmark_shape_matches_numpy():
    x, w = randn(4, 16, 16, 16).astype(np.float32), randn(32, 16, 3, 3).astype(np.float32)
    got = F.conv2d(rustgrad.tensor(x), rustgrad.tensor(w), padding=1).numpy()
    expected = conv2d_reference(x.astype(np.float64), w.astype(np.float64), padding=1)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_conv1d_with_bias_matches_numpy():
    x, w, b = randn(2, 3, 10), randn(4, 3, 3), randn(4)
    got = F.conv1d(rustgrad.tensor(x), rustgrad.tensor(w), rustgrad.tensor(b), stride=2, padding=1, dilation=2)
    expected = conv1d_reference(x, w, stride=2, padding=1, dilation=2) + b[:, None]
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-12)


@pytest.mark.parametrize("stride,output_padding", [(2, 1), ((2, 3), (1, 2)), (1, 0)])
def test_conv_transpose2d_output_padding_matches_numpy(stride, output_padding):
    x, w, b = randn(2, 4, 3, 4), randn(4, 3, 3, 2), randn(6)
    got = F.conv_transpose2d(rustgrad.tensor(x), rustgrad.tensor(w), rustgrad.tensor(b), stride=stride, padding=1,
                             output_padding=output_padding, groups=2).numpy()
    expected = conv_transpose2d_reference(x, w, stride=stride, padding=1, output_padding=output_padding, groups=2)
    np.testing.assert_allclose(got, expected + b[:, None, None], atol=1e-12)


def test_conv_transpose2d_is_the_input_gradient_of_conv2d():
    x, w, g = randn(1, 3, 7, 7), randn(2, 3, 3, 3), randn(1, 2, 4, 4)
    tx = rustgrad.tensor(x, requires_grad=True)
    F.conv2d(tx, rustgrad.tensor(w), stride=2, padding=1).backward(rustgrad.tensor(g))
    transposed = F.conv_transpose2d(rustgrad.tensor(g), rustgrad.tensor(w), stride=2, padding=1)
    np.testing.assert_allclose(transposed.numpy(), tx.grad.numpy(), atol=1e-12)


# (eager function, torch kwargs, arrays) and (static function, TF kwargs, numpy reference, arrays) per op.
EAGER_CONVS = {
    "conv2d": (F.conv2d, {"stride": (2, 1), "padding": 1, "dilation": (1, 2), "groups": 2},
               [(1, 2, 4, 5), (2, 1, 2, 2)]),
    "conv1d": (F.conv1d, {"stride": 2, "padding": 1}, [(1, 2, 5), (3, 2, 2)]),
    "conv_transpose2d": (F.conv_transpose2d, {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2},
                         [(1, 2, 2, 3), (2, 2, 2, 2)]),
}
STATIC_CONVS = {
    # NCHW input, HWIO filter, explicit paddings
    "conv2d": (lambda *t, **kw: tf.nn.conv2d(*t, **kw),
               {"strides": [1, 1, 2, 1], "padding": [[0, 0], [0, 0], [1, 1], [1, 0]], "data_format": "NCHW"},
               conv2d_tf_reference, [(1, 2, 4, 5), (2, 2, 2, 3)]),
    # NWC input, WIO filter
    "conv1d": (lambda *t, **kw: tf.nn.conv1d(*t, **kw), {"stride": 2, "padding": "SAME"}, conv1d_tf_reference,
               [(1, 5, 2), (2, 2, 3)]),
    "conv_transpose2d": (lambda *t, **kw: tf.conv_transpose2d(*t, **kw),
                         {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2},
                         conv_transpose2d_reference, [(1, 2, 2, 3), (2, 2, 2, 2)]),
}


@pytest.mark.parametrize("op", list(EAGER_CONVS))
def test_eager_convolution_gradients_match_finite_differences(op):
    function, kwargs, shapes = EAGER_CONVS[op]
    check_grad("eager", lambda *t: function(*t, **kwargs), None, None, [randn(*s) for s in shapes])


@pytest.mark.parametrize("op", list(STATIC_CONVS))
def test_static_convolution_gradients_match_finite_differences(op):
    function, kwargs, numpy, shapes = STATIC_CONVS[op]
    check_grad("static", None, lambda *t: function(*t, **kwargs), lambda *xs: numpy(*xs, **kwargs),
               [randn(*s) for s in shapes])


def test_tf_conv2d_nhwc_same_matches_an_independent_reference():
    x, w = randn(2, 7, 6, 3), randn(3, 2, 3, 4)  # NHWC input, HWIO filter
    got = run_static(lambda a, b: tf.nn.conv2d(a, b, strides=[1, 2, 2, 1], padding="SAME"), x, w)
    assert got.shape == (2, 4, 3, 4)
    # SAME with stride 2: rows need (4 - 1)·2 + 3 - 7 = 2 padding (1 before, 1 after); columns
    # (3 - 1)·2 + 2 - 6 = 0; done here by hand on NCHW.
    xc = np.pad(np.moveaxis(x, -1, 1), ((0, 0), (0, 0), (1, 1), (0, 0)))
    expected = np.zeros((2, 4, 4, 3))
    for oy in range(4):
        for ox in range(3):
            window = xc[:, :, 2 * oy:2 * oy + 3, 2 * ox:2 * ox + 2]
            expected[:, :, oy, ox] = np.einsum("nchw,hwco->no", window, w)
    np.testing.assert_allclose(got, np.moveaxis(expected, 1, -1), atol=1e-12)


def test_tf_conv2d_same_with_an_odd_total_pads_the_bottom_and_right():
    x, w = randn(1, 4, 4, 1), randn(2, 2, 1, 1)
    got = run_static(lambda a, b: tf.nn.conv2d(a, b, [1, 1, 1, 1], "SAME"), x, w)
    padded = np.pad(x, ((0, 0), (0, 1), (0, 1), (0, 0)))
    np.testing.assert_allclose(got, conv2d_tf_reference(padded, w, [1, 1, 1, 1], "VALID"), atol=1e-12)


def test_tf_conv2d_infers_the_static_shape():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 28, 28, 3])
        w = tf.placeholder(tf.float32, [5, 5, 3, 8])
        assert tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME").shape.as_list() == [None, 14, 14, 8]
        assert tf.nn.conv2d(x, w, [1, 1, 1, 1], "VALID").shape.as_list() == [None, 24, 24, 8]
        assert tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID").shape.as_list() == [None, 14, 14, 3]


def test_tf_conv2d_refuses_a_filter_of_other_depth():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [1, 8, 8, 3])
        w = tf.placeholder(tf.float32, [3, 3, 4, 8])
        with pytest.raises(ValueError, match="conv2d.*Depth of input \\(3\\).*filter \\(4\\)"):
            tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")


def test_max_pool2d_indices_match_numpy():
    x = randn(2, 3, 7, 6)
    values, indices = F.max_pool2d(rustgrad.tensor(x), 3, stride=2, padding=1, return_indices=True)
    assert indices.dtype == rustgrad.int64
    np.testing.assert_array_equal(indices.numpy(), max_pool2d_indices_reference(x, 3, 2, 1))
    np.testing.assert_array_equal(values.numpy(), max_pool2d_reference(x, 3, 2, 1))
    flat = x.reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, indices.numpy().reshape(2, 3, -1), 2).reshape(values.shape),
                                  values.numpy())


@pytest.mark.parametrize("ceil_mode", [False, True])
def test_max_and_avg_pool_ceil_mode_match_numpy(ceil_mode):
    x = randn(1, 2, 7, 8)
    got = F.max_pool2d(rustgrad.tensor(x), 3, 2, 1, ceil_mode=ceil_mode).numpy()
    np.testing.assert_array_equal(got, max_pool2d_reference(x, 3, 2, 1, ceil_mode=ceil_mode))
    assert got.shape == ((1, 2, 4, 5) if ceil_mode else (1, 2, 4, 4))
    avg = F.avg_pool2d(rustgrad.tensor(x), 3, 2, 1, ceil_mode=ceil_mode).numpy()
    np.testing.assert_allclose(avg, avg_pool2d_reference(x, 3, 2, 1, ceil_mode=ceil_mode), atol=1e-12)


def test_avg_pool2d_count_include_pad_and_divisor_override():
    x = randn(1, 1, 4, 4)
    t = rustgrad.tensor(x)
    corner = x[0, 0, :2, :2].sum()  # the first window covers rows and columns -1..1
    assert F.avg_pool2d(t, 3, 2, 1).numpy()[0, 0, 0, 0] == pytest.approx(corner / 9)
    assert F.avg_pool2d(t, 3, 2, 1, count_include_pad=False).numpy()[0, 0, 0, 0] == pytest.approx(corner / 4)
    assert F.avg_pool2d(t, 3, 2, 1, divisor_override=2).numpy()[0, 0, 0, 0] == pytest.approx(corner / 2)


def test_adaptive_avg_pool2d_keeps_the_size_of_none_entries():
    x = randn(2, 3, 5, 7)
    got = F.adaptive_avg_pool2d(rustgrad.tensor(x), (2, None)).numpy()
    np.testing.assert_allclose(got, adaptive_avg_pool2d_reference(x, (2, 7)), atol=1e-12)


def test_tf_avg_pool_same_divides_by_the_valid_elements():
    x = randn(1, 3, 3, 1)
    got = run_static(lambda a: tf.nn.avg_pool(a, [1, 2, 2, 1], [1, 2, 2, 1], "SAME"), x)
    assert got.shape == (1, 2, 2, 1)
    assert got[0, 1, 1, 0] == pytest.approx(x[0, 2, 2, 0])
    assert got[0, 0, 1, 0] == pytest.approx(x[0, :2, 2, 0].mean())


def test_tf_max_pool_nhwc_same_matches_numpy():
    x = randn(2, 5, 4, 3)
    got = run_static(lambda a: tf.nn.max_pool(a, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"), x)
    np.testing.assert_array_equal(got, max_pool_tf_reference(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"))
    got2 = run_static(lambda a: tf.nn.max_pool2d(a, 2, 2, "VALID"), x)
    np.testing.assert_array_equal(got2, max_pool_tf_reference(x, 2, 2, "VALID"))


@pytest.mark.parametrize("mode", ["eager", "static"])
@pytest.mark.parametrize("op", ["max", "avg", "adaptive"])
def test_pooling_gradients_match_finite_differences(mode, op):
    x = (RNG.permutation(30).reshape(1, 2, 3, 5) - 15) * 0.25  # distinct: no ties for max
    if op == "max":
        eager = lambda t: F.max_pool2d(t, 2, 1, 1)  # noqa: E731
        static = lambda t: tf.nn.max_pool(t, [1, 2, 2, 1], [1, 1, 1, 1], "SAME")  # noqa: E731
        numpy = lambda a: max_pool_tf_reference(a, [1, 2, 2, 1], [1, 1, 1, 1], "SAME")  # noqa: E731
    elif op == "avg":
        eager = lambda t: F.avg_pool2d(t, 3, 2, 1, ceil_mode=True)  # noqa: E731
        static = lambda t: tf.nn.avg_pool(t, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")  # noqa: E731
        numpy = lambda a: avg_pool_tf_reference(a, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")  # noqa: E731
    else:
        eager = lambda t: F.adaptive_avg_pool2d(t, (2, 3))  # noqa: E731
        static = lambda t: tf.adaptive_avg_pool2d(t, (2, 3))  # noqa: E731
        numpy = lambda a: adaptive_avg_pool2d_reference(a, (2, 3))  # noqa: E731
    if mode == "eager":
        check_grad(mode, eager, None, None, [x])
    else:
        check_grad(mode, None, static, numpy, [x])


def test_a_wrong_number_of_channels_names_the_op_and_shapes():
    x, w = rustgrad.randn(2, 4, 8, 8), rustgrad.randn(16, 3, 3, 3)
    with pytest.raises(RustgradError, match=r"conv2d: .*weight of shape \[16, 3, 3, 3\].*input of shape "
                                            r"\[2, 4, 8, 8\] to have 3 channels, but got 4"):
        F.conv2d(x, w)
    with pytest.raises(ValueError):
        F.conv2d(x, w)


def test_groups_that_do_not_divide_the_channels_are_refused():
    with pytest.raises(ValueError, match=r"conv2d: Given groups=3, expected weight to be divisible by 3 at "
                                         r"dimension 0, but got weight of shape \[4, 2, 3, 3\]"):
        F.conv2d(rustgrad.randn(1, 6, 5, 5), rustgrad.randn(4, 2, 3, 3), groups=3)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        F.conv2d(rustgrad.randn(1, 6, 5, 5), rustgrad.randn(4, 6, 3, 3), groups=0)


def test_a_kernel_larger_than_the_input_is_refused():
    with pytest.raises(ValueError, match=r"conv2d: the padded input size per channel \(2\) is smaller than the "
                                         r"kernel's span \(3\) for input of shape \[1, 1, 2, 5\]"):
        F.conv2d(rustgrad.randn(1, 1, 2, 5), rustgrad.randn(1, 1, 3, 3))
    with pytest.raises(ValueError, match="max_pool2d: the output of input of shape"):
        F.max_pool2d(rustgrad.randn(1, 1, 2, 2), 3)


def test_bad_arguments_name_the_op():
    x, w = rustgrad.randn(1, 1, 5, 5), rustgrad.randn(1, 1, 3, 3)
    with pytest.raises(ValueError, match="conv2d: padding='same' is not supported for strided convolutions"):
        F.conv2d(x, w, stride=2, padding="same")
    with pytest.raises(ValueError, match="conv2d: padding must be 'same', 'valid' or ints, got 'full'"):
        F.conv2d(x, w, padding="full")
    with pytest.raises(ValueError, match="conv2d: expected 3-D \\(unbatched\\) or 4-D input"):
        F.conv2d(rustgrad.randn(5, 5), w)
    with pytest.raises(ValueError, match="conv2d: stride must be positive, got 0"):
        F.conv2d(x, w, stride=0)
    with pytest.raises(ValueError, match="max_pool2d: pad should be at most half of effective kernel size"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(ValueError, match="conv_transpose2d: output padding must be smaller than the stride"):
        F.conv_transpose2d(x, w, stride=2, output_padding=2)
    with pytest.raises(TypeError, match="conv2d: expected a float tensor but got int64"):
        F.conv2d(rustgrad.zeros(1, 1, 5, 5, dtype=rustgrad.int64), rustgrad.zeros(1, 1, 3, 3, dtype=rustgrad.int64))
    with pytest.raises(ValueError, match="conv2d: expected bias of shape \\(1,\\)"):
        F.conv2d(x, w, rustgrad.randn(2))


def test_tf_strides_in_the_batch_dimension_are_refused():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [1, 8, 8, 3])
        w = tf.placeholder(tf.float32, [3, 3, 3, 8])
        with pytest.raises(ValueError, match="conv2d: stride in the batch and depth dimensions must be 1"):
            tf.nn.conv2d(x, w, [2, 1, 1, 1], "SAME")
