"""Zero-copy interop with numpy and DLPack: tested by writing through one side and reading the other."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import rustgrad
import rustgrad.static as tf
from rustgrad.errors import DTypeError, GradientError


def test_from_numpy_shares_memory_both_ways():
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = rustgrad.from_numpy(array)
    array[0, 0] = 100.0
    assert t[0, 0].item() == 100.0
    t[1] = 7.0
    assert array[1].tolist() == [7.0, 7.0, 7.0]


def test_numpy_and_array_protocol_share_memory():
    t = rustgrad.zeros(2, 3, dtype=rustgrad.float64)
    view = t.numpy()
    view[0, 1] = 5.0
    assert t[0, 1].item() == 5.0
    np.asarray(t)[1, 2] = -1.0
    assert t[1, 2].item() == -1.0
    copied = np.array(t, copy=True)
    copied[0, 0] = 9.0
    assert t[0, 0].item() == 0.0


def test_numpy_views_follow_the_tensor_layout():
    t = rustgrad.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(t.t().numpy(), np.arange(12.0).reshape(3, 4).T)
    np.testing.assert_array_equal(t[:, 1:3].numpy(), np.arange(12.0).reshape(3, 4)[:, 1:3])


def test_numpy_array_outlives_the_tensor():
    t = rustgrad.arange(4.0)
    view = t.numpy()
    del t
    gc.collect()
    assert view.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_tensor_copies_its_data():
    array = np.ones(3, dtype=np.float32)
    t = rustgrad.tensor(array)
    array[0] = 5.0
    assert t[0].item() == 1.0


def test_np_from_dlpack_shares_memory():
    t = rustgrad.arange(6.0).reshape(2, 3)
    array = np.from_dlpack(t)
    array[0, 0] = 42.0
    assert t[0, 0].item() == 42.0
    assert t.__dlpack_device__() == (1, 0)


def test_rustgrad_from_dlpack_shares_numpy_memory():
    array = np.arange(4, dtype=np.float64)
    t = rustgrad.from_dlpack(array)
    array[1] = -1.0
    assert t.tolist() == [0.0, -1.0, 2.0, 3.0]
    del array
    gc.collect()
    assert t.tolist() == [0.0, -1.0, 2.0, 3.0]


def test_from_dlpack_copies_layouts_it_cannot_share():
    array = np.arange(6, dtype=np.float32).reshape(2, 3)[:, ::2]
    t = rustgrad.from_dlpack(array)
    np.testing.assert_array_equal(t.numpy(), array)
    assert rustgrad.from_dlpack(np.array([True, False])).tolist() == [True, False]


def test_an_unconsumed_capsule_is_freed():
    t = rustgrad.ones(3)
    for _ in range(100):
        capsule = t.__dlpack__()
        del capsule
    assert t.tolist() == [1.0, 1.0, 1.0]


def test_dlpack_errors():
    with pytest.raises(DTypeError, match="unsupported element type"):
        rustgrad.from_dlpack(np.arange(3, dtype=np.int16))
    with pytest.raises(GradientError, match="requires grad"):
        rustgrad.ones(2, requires_grad=True).__dlpack__()


def test_torch_round_trip():
    torch = pytest.importorskip("torch")
    t = rustgrad.arange(3.0)
    pt = torch.from_dlpack(t)
    pt[0] = 9.0
    assert t[0].item() == 9.0
    back = rustgrad.from_dlpack(torch.arange(3, dtype=torch.float64))
    assert back.tolist() == [0.0, 1.0, 2.0]


def test_integer_arrays_of_either_byte_order_keep_their_dtype():
    for order in "<>":
        data = np.arange(3, dtype=f"{order}i4")
        assert rustgrad.tensor(data).dtype == rustgrad.int32
        assert rustgrad.from_numpy(data).dtype == rustgrad.int32
        assert rustgrad.tensor(np.arange(3, dtype=f"{order}i8")).dtype == rustgrad.int64
        assert rustgrad.tensor(np.arange(3, dtype=f"{order}i2")).dtype == rustgrad.int64
        with tf.Graph().as_default():
            assert tf.constant(data).dtype == tf.int32
