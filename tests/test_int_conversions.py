"""Integer dtypes (int64, int32, uint8) and bool in and out of eager tensors: dtype objects
and torch's aliases, tensor, from_numpy, dlpack, save/load and pickle, casts between every
pair of dtypes (against numpy), data-moving ops for every dtype, the factories, and
requires_grad refused on integer and bool tensors as torch refuses it.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from test_int_dtypes import INTS, NAMES, NUMPY, dt, sample

import rustgrad
from rustgrad import errors

# ---------------------------------------------------------------- conversion in and out


def test_dtype_objects_and_torch_aliases():
    assert rustgrad.long is rustgrad.int64 and rustgrad.int is rustgrad.int32
    assert rustgrad.int64.is_signed and not rustgrad.uint8.is_signed
    assert not rustgrad.int32.is_floating_point and rustgrad.int32.itemsize == 4
    assert pickle.loads(pickle.dumps(rustgrad.uint8)) is rustgrad.uint8
    assert rustgrad.zeros(2, dtype=np.int64).dtype is rustgrad.int64
    assert rustgrad.zeros(2, dtype=int).dtype is rustgrad.int64
    assert rustgrad.zeros(2, dtype="long").dtype is rustgrad.int64


def test_tensor_keeps_the_dtype_of_its_data_as_torch():
    assert rustgrad.tensor([1, 2]).dtype is rustgrad.int64
    assert rustgrad.tensor([1.0, 2]).dtype is rustgrad.float32
    assert rustgrad.tensor([True]).dtype is rustgrad.bool
    assert rustgrad.tensor(np.array([1, 2], np.int64)).dtype is rustgrad.int64
    assert rustgrad.tensor(np.array([1, 2], np.uint8)).dtype is rustgrad.uint8
    assert rustgrad.as_tensor(np.array([1], np.int32)).dtype is rustgrad.int32
    # Other widths are copied into int64, which holds all their values.
    for other in (np.int8, np.int16, np.uint16, np.uint32):
        data = np.array([-1 if np.dtype(other).kind == "i" else 7, 2], other)
        t = rustgrad.tensor(data)
        assert t.dtype is rustgrad.int64 and t.tolist() == data.tolist()
    assert rustgrad.tensor(np.array([5], np.uint64)).tolist() == [5]
    with pytest.raises(errors.DTypeError, match="does not fit in int64"):
        rustgrad.tensor(np.array([2**64 - 1], np.uint64))


@pytest.mark.parametrize("name", INTS)
def test_from_numpy_shares_integer_memory(name):
    array = np.arange(6, dtype=NUMPY[name]).reshape(2, 3)
    t = rustgrad.from_numpy(array)
    assert t.dtype is dt(name)
    t[0, 0] = 9
    array[1, 2] = 7
    assert array[0, 0] == 9 and t[1, 2].item() == 7
    shared = np.asarray(t)
    shared[0, 1] = 4
    assert t[0, 1].item() == 4


def test_from_numpy_refuses_other_integer_widths():
    with pytest.raises(errors.DTypeError, match="can't convert np.ndarray of type int16.*int64, int32, uint8"):
        rustgrad.from_numpy(np.arange(3, dtype=np.int16))


@pytest.mark.parametrize("name", NAMES)
def test_dlpack_round_trips_every_dtype(name):
    a = sample(name)
    t = rustgrad.tensor(a)
    back = np.from_dlpack(t)
    assert back.dtype == NUMPY[name]
    np.testing.assert_array_equal(back, a)
    again = rustgrad.from_dlpack(a)
    assert again.dtype is dt(name) and again.tolist() == a.tolist()


@pytest.mark.parametrize("name", NAMES)
def test_save_load_and_pickle_keep_integer_dtypes(name, tmp_path):
    t = rustgrad.tensor(sample(name))
    rustgrad.save({"t": t}, tmp_path / "t.npz")
    loaded = rustgrad.load(tmp_path / "t.npz")["t"]
    assert loaded.dtype is t.dtype and loaded.tolist() == t.tolist()
    again = pickle.loads(pickle.dumps(t))
    assert again.dtype is t.dtype and again.tolist() == t.tolist()


@pytest.mark.parametrize("source", NAMES)
@pytest.mark.parametrize("target", NAMES)
def test_casts_between_every_pair_match_numpy(source, target):
    a = np.array([0, 1, 2, 100, 7], dtype=NUMPY[source]) if source != "bool" else sample(source)
    if source.startswith("float"):
        a = np.array([0.0, 1.9, -1.9, 100.5, 7.25], dtype=NUMPY[source])
        if target == "uint8":
            a = np.abs(a)  # numpy's cast of a negative float to uint8 is undefined
    t = rustgrad.tensor(a)
    for out in (t.to(dt(target)), t.type(dt(target)), rustgrad.tensor(t, dtype=dt(target))):
        assert out.dtype is dt(target)
        np.testing.assert_array_equal(out.numpy(), a.astype(NUMPY[target]))
    named = {"int64": t.long(), "int32": t.int(), "uint8": t.byte(), "bool": t.bool(),
             "float32": t.float(), "float64": t.double()}[target]
    np.testing.assert_array_equal(named.numpy(), a.astype(NUMPY[target]))


def test_integer_to_integer_casts_wrap_exactly():
    x = rustgrad.tensor([2**40 + 3, -1, 2**31])
    assert x.int().tolist() == np.array([2**40 + 3, -1, 2**31]).astype(np.int32).tolist()
    assert x.byte().tolist() == [3, 255, 0]
    assert rustgrad.tensor([2**62 + 1]).double().long().item() == 2**62  # via float64, which rounds


@pytest.mark.parametrize("name", NAMES)
def test_data_moving_ops_work_for_every_dtype(name):
    a = np.arange(12).reshape(3, 4).astype(NUMPY[name])
    x = rustgrad.tensor(a)
    np.testing.assert_array_equal(x.t().reshape(-1).numpy(), a.T.reshape(-1))
    np.testing.assert_array_equal(x[1:, ::-2].numpy(), a[1:, ::-2])
    np.testing.assert_array_equal(x.transpose(0, 1).contiguous().numpy(), a.T)
    mask = a.astype(np.float64) > 4
    np.testing.assert_array_equal(x[rustgrad.tensor(mask)].numpy(), a[mask])
    np.testing.assert_array_equal(rustgrad.where(rustgrad.tensor(mask), x, x.t().t()).numpy(), a)
    np.testing.assert_array_equal(x.clone().numpy(), a)
    y = rustgrad.zeros(3, 4, dtype=dt(name))
    y[1] = x[2]
    y[:, 0] = x[:, 3]
    expected = np.zeros((3, 4), NUMPY[name])
    expected[1] = a[2]
    expected[:, 0] = a[:, 3]
    np.testing.assert_array_equal(y.numpy(), expected)
    y.copy_(x.t().t())
    np.testing.assert_array_equal(y.numpy(), a)
    y.fill_(1)
    np.testing.assert_array_equal(y.numpy(), np.ones((3, 4), NUMPY[name]))
    y.zero_()
    assert not y.numpy().any()
    assert x[1, 2].item() == a[1, 2].item()


# ---------------------------------------------------------------- factories


def test_factories_take_integer_dtypes_and_infer_them_as_torch():
    assert rustgrad.zeros(2, 3, dtype=rustgrad.int32).tolist() == [[0, 0, 0], [0, 0, 0]]
    assert rustgrad.ones(2, dtype=rustgrad.uint8).dtype is rustgrad.uint8
    assert rustgrad.empty(2, dtype=rustgrad.long).tolist() == [0, 0]
    assert rustgrad.full((2,), 3).dtype is rustgrad.int64
    assert rustgrad.full((2,), 3.0).dtype is rustgrad.float32
    assert rustgrad.full((2,), True).dtype is rustgrad.bool
    assert rustgrad.full((1,), 2**62 + 1).item() == 2**62 + 1
    assert rustgrad.arange(5).dtype is rustgrad.int64 and rustgrad.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert rustgrad.arange(10, 0, -3).tolist() == [10, 7, 4, 1]
    assert rustgrad.arange(0, 1, 0.5).dtype is rustgrad.float32
    assert rustgrad.arange(5, dtype=rustgrad.float64).dtype is rustgrad.float64
    assert rustgrad.arange(0.0, 3.0, dtype=rustgrad.int32).tolist() == [0, 1, 2]
    x = rustgrad.tensor([1, 2], dtype=rustgrad.int32)
    for like in (rustgrad.zeros_like(x), rustgrad.ones_like(x), rustgrad.full_like(x, 7)):
        assert like.dtype is rustgrad.int32
    assert rustgrad.eye(2, dtype=rustgrad.int64).tolist() == [[1, 0], [0, 1]]


REQUIRES_GRAD_ON_INTEGERS = [
    lambda: rustgrad.zeros(2, dtype=rustgrad.long, requires_grad=True),
    lambda: rustgrad.tensor([1, 2], requires_grad=True),
    lambda: rustgrad.arange(3, requires_grad=True),
    lambda: rustgrad.tensor([1, 2]).requires_grad_(),
    lambda: setattr(rustgrad.tensor([True]), "requires_grad", True),
]


@pytest.mark.parametrize("call", REQUIRES_GRAD_ON_INTEGERS)
def test_requires_grad_on_an_integer_or_bool_tensor_raises_as_torch(call):
    with pytest.raises(errors.GradientError, match="(?i)only Tensors of floating point and complex dtype can "
                                                   "require gradients") as info:
        call()
    assert isinstance(info.value, RuntimeError)


def test_gradients_reach_floats_mixed_with_integers():
    w = rustgrad.tensor([0.5, 2.0], requires_grad=True)
    n = rustgrad.tensor([3, 4])
    (w * n + w / n).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [3 + 1 / 3, 4 + 1 / 4], rtol=1e-6)
    assert not n.requires_grad and n.grad is None
    assert not w.long().requires_grad  # an integer result is not differentiable
