"""Fuzzing ``rustgrad.load`` and ``Saver.restore`` with corrupted files.

A valid file is damaged (truncated, bytes flipped, garbage written over it or inserted into it, or
replaced by garbage). Loading it must either give back exactly what was saved (some bytes of a zip,
such as timestamps, are not checked by anything) or raise a ``RustgradError`` subclass: never
another exception type and never a crash. A plain numpy ``.npz`` has no list of its members
besides the zip directory, so a damaged directory may hide members: such a file may load with
fewer keys, but every key it gives must hold exactly the saved tensor. ``HYPOTHESIS_PROFILE=long``
runs many more examples.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import rustgrad  # noqa: E402
import rustgrad.compat.v1 as tf  # noqa: E402
from rustgrad.errors import RustgradError  # noqa: E402

_EXAMPLES = max(200, settings.default.max_examples)


def _saved(obj) -> bytes:
    buffer = io.BytesIO()
    rustgrad.save(obj, buffer)
    return buffer.getvalue()


def _numpy_compressed() -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, a=np.linspace(0, 1, 300).reshape(3, 100), b=np.zeros(4000, dtype=np.float32))
    return buffer.getvalue()


def _originals() -> dict:
    rustgrad.manual_seed(7)
    state = {
        "w": rustgrad.randn(4, 3, requires_grad=True),
        "b": rustgrad.zeros(3, dtype=rustgrad.float64),
        "mask": rustgrad.tensor([True, False, True]),
        "x.npy": rustgrad.tensor(1.5),
        "allow_pickle": rustgrad.ones(0, 2),
    }
    tensor = rustgrad.arange(10.0).reshape(2, 5)
    compressed = {
        "a": rustgrad.from_numpy(np.linspace(0, 1, 300).reshape(3, 100)),
        "b": rustgrad.zeros(4000),
    }
    return {  # name: (saved object, file, whether every key must come back)
        "dict": (state, _saved(state), True),
        "tensor": (tensor, _saved(tensor), True),
        "numpy-compressed": (compressed, _numpy_compressed(), False),
    }


_ORIGINALS = _originals()


@st.composite
def _corruption(draw, data: bytes) -> bytes:
    kind = draw(st.sampled_from(["truncate", "flip", "overwrite", "insert", "garbage"]))
    if kind == "garbage":
        return draw(st.binary(max_size=2000))
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        if kind == "truncate":
            return bytes(data[:at])
        if kind == "flip" and at < len(data):
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "overwrite":
            chunk = draw(st.binary(min_size=1, max_size=64))
            data[at:at + len(chunk)] = chunk
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=64))
    return bytes(data)


def _same(loaded, original, every_key: bool = True) -> None:
    if isinstance(original, rustgrad.Tensor):
        assert isinstance(loaded, rustgrad.Tensor)
        assert loaded.dtype == original.dtype and tuple(loaded.shape) == tuple(original.shape)
        assert loaded.requires_grad == original.requires_grad
        np.testing.assert_array_equal(loaded.detach().numpy(), original.detach().numpy())
        return
    assert isinstance(loaded, dict)
    if every_key:
        assert list(loaded) == list(original)
    assert [key for key in original if key in loaded] == list(loaded)
    for key in loaded:
        _same(loaded[key], original[key])


@settings(max_examples=_EXAMPLES, deadline=None)
@given(data=st.data(), which=st.sampled_from(sorted(_ORIGINALS)))
def test_corrupted_file_loads_exactly_or_raises_a_rustgrad_error(data, which):
    original, saved, every_key = _ORIGINALS[which]
    corrupted = data.draw(_corruption(saved))
    try:
        loaded = rustgrad.load(io.BytesIO(corrupted))
    except RustgradError as err:
        assert str(err)
        return
    _same(loaded, original, every_key)


@settings(max_examples=_EXAMPLES // 4, deadline=None)
@given(data=st.data())
def test_corrupted_checkpoint_restores_exactly_or_raises_a_rustgrad_error_and_changes_nothing(data, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ckpt")
    with tf.Graph().as_default():
        w = tf.Variable(np.arange(6.0).reshape(2, 3), name="w")
        v = tf.Variable(np.ones(4, np.float32), name="v/Adam")
        saver = tf.train.Saver()
        path = str(folder / "model.ckpt")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver.save(sess, path)
            with open(path, "rb") as handle:
                saved = handle.read()
            with open(path, "wb") as handle:
                handle.write(data.draw(_corruption(saved)))
            sess.run([w.assign(np.zeros((2, 3))), v.assign(np.zeros(4, np.float32))])
            try:
                saver.restore(sess, path)
            except RustgradError as err:
                assert str(err)
                np.testing.assert_array_equal(sess.run(w), np.zeros((2, 3)))
                np.testing.assert_array_equal(sess.run(v), np.zeros(4))
                return
            np.testing.assert_array_equal(sess.run(w), np.arange(6.0).reshape(2, 3))
            np.testing.assert_array_equal(sess.run(v), np.ones(4))
