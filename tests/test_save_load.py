"""rustgrad.save / rustgrad.load round trips (safetensors files; the .npz files of earlier versions load)."""

from __future__ import annotations

import io
import json
import struct

import numpy as np
import pytest

import rustgrad
from rustgrad.errors import DTypeError, RustgradError


@pytest.mark.parametrize(
    "make",
    [
        lambda: rustgrad.randn(3, 4),
        lambda: rustgrad.randn(2, 3, dtype=rustgrad.float64),
        lambda: rustgrad.tensor([[True, False], [False, True]]),
        lambda: rustgrad.tensor(2.5),
        lambda: rustgrad.zeros(0, 3),
        lambda: rustgrad.randn(3, 5).t(),  # a non-contiguous view
    ],
)
def test_tensor_round_trip(tmp_path, make):
    t = make()
    path = tmp_path / "t.pt"
    assert rustgrad.save(t, path) is None
    loaded = rustgrad.load(path)
    assert isinstance(loaded, rustgrad.Tensor)
    assert loaded.dtype == t.dtype
    assert tuple(loaded.shape) == tuple(t.shape)
    np.testing.assert_array_equal(loaded.numpy(), t.numpy())


def test_dict_round_trip_keeps_keys_order_and_requires_grad(tmp_path):
    state = {
        "w": rustgrad.randn(3, 2, requires_grad=True),
        "b": rustgrad.zeros(2, dtype=rustgrad.float64),
        "mask": rustgrad.tensor([True, False, True]),
    }
    path = str(tmp_path / "state")
    rustgrad.save(state, path)
    loaded = rustgrad.load(path)
    assert isinstance(loaded, dict) and list(loaded) == ["w", "b", "mask"]
    for key, t in state.items():
        assert loaded[key].dtype == t.dtype and tuple(loaded[key].shape) == tuple(t.shape)
        assert loaded[key].requires_grad == t.requires_grad
        np.testing.assert_array_equal(loaded[key].detach().numpy(), t.detach().numpy())
    assert loaded["w"].is_leaf


def test_written_at_the_exact_path_as_a_safetensors_file(tmp_path):
    path = tmp_path / "weights.bin"
    t = rustgrad.arange(6).reshape(2, 3)
    rustgrad.save({"t": t}, path)
    assert path.exists() and not (tmp_path / "weights.bin.npz").exists()
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    assert header["t"] == {"dtype": "I64", "shape": [2, 3], "data_offsets": [0, 48]}
    start = 8 + length
    np.testing.assert_array_equal(np.frombuffer(data[start:start + 48], "<i8").reshape(2, 3), t.numpy())


def test_file_objects(tmp_path):
    buffer = io.BytesIO()
    t = rustgrad.randn(4, dtype=rustgrad.float64)
    rustgrad.save(t, buffer)
    buffer.seek(0)
    np.testing.assert_array_equal(rustgrad.load(buffer).numpy(), t.numpy())


def test_loaded_tensors_are_independent_copies(tmp_path):
    t = rustgrad.ones(3)
    rustgrad.save(t, tmp_path / "t")
    loaded = rustgrad.load(tmp_path / "t")
    loaded.add_(1.0)
    np.testing.assert_array_equal(t.numpy(), [1.0, 1.0, 1.0])


def test_plain_numpy_npz_loads_as_dict(tmp_path):
    np.savez(tmp_path / "plain.npz", a=np.arange(3.0), b=np.ones((2, 2), dtype=np.float32))
    loaded = rustgrad.load(tmp_path / "plain.npz")
    assert set(loaded) == {"a", "b"}
    assert loaded["a"].dtype == rustgrad.float64 and loaded["b"].dtype == rustgrad.float32


@pytest.mark.parametrize(
    "obj, match",
    [
        (np.ones(2), r"cannot save obj, an object of type ndarray \(convert it with rustgrad.from_numpy\)"),
        ({1.5: rustgrad.ones(2)}, r"obj has a key of type float \(1.5\); dict keys must be str or int"),
        ({"a": [1, {"b": np.ones(2)}]}, r"cannot save obj\['a'\]\[1\]\['b'\], an object of type ndarray"),
        ({"a": {"b": object()}}, r"cannot save obj\['a'\]\['b'\], an object of type object"),
        ({"a": {0: {1, 2}}}, r"cannot save obj\['a'\]\[0\], an object of type set"),
    ],
)
def test_unsupported_objects(tmp_path, obj, match):
    with pytest.raises(TypeError, match=match):
        rustgrad.save(obj, tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        rustgrad.load(tmp_path / "missing")
    (tmp_path / "text").write_text("not an archive")
    with pytest.raises(RustgradError, match="not a safetensors file or an .npz archive") as info:
        rustgrad.load(tmp_path / "text")
    assert isinstance(info.value, RuntimeError)
    np.save(tmp_path / "single.npy", np.ones(2))
    with pytest.raises(RustgradError, match="single .npy array"):
        rustgrad.load(tmp_path / "single.npy")
    np.savez(tmp_path / "ints.npz", a=np.arange(3, dtype=np.int16))
    with pytest.raises(DTypeError, match="int16"):
        rustgrad.load(tmp_path / "ints.npz")
