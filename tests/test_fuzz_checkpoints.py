"""Fuzzing ``rustgrad.load`` with damaged checkpoints of the safetensors-based format: a whole
checkpoint (nested dicts, lists, tuples, numbers, strings, tensors of every dtype) is truncated,
flipped, overwritten, extended, or replaced by random bytes, with or without a plausible header
length. Loading must give back exactly what was saved or raise a ``RustgradError``: never another
exception, never a crash, never a wrong value (the format carries a CRC-32)."""

from __future__ import annotations

import io
import math
import struct

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import rustgrad  # noqa: E402
from rustgrad.errors import RustgradError  # noqa: E402

_EXAMPLES = max(300, settings.default.max_examples)


def _checkpoint():
    rustgrad.manual_seed(3)
    w = rustgrad.randn(3, 4, requires_grad=True)
    return {
        "epoch": 3,
        "model": {"fc.weight": w, "fc.bias": rustgrad.zeros(4, dtype=rustgrad.float64)},
        "optimizer": {"state": {0: {"step": 2, "buf": rustgrad.ones(3, 4)}},
                      "param_groups": [{"lr": 0.1, "betas": (0.9, 0.99), "params": [0]}]},
        "extra": [rustgrad.tensor([1, 2], dtype=rustgrad.int32), rustgrad.tensor([True, False]),
                  rustgrad.tensor([7], dtype=rustgrad.uint8), rustgrad.arange(3), w],
        "loss": 0.25, "best": math.inf, "note": "ok", "none": None,
    }


_ORIGINAL = _checkpoint()
_buffer = io.BytesIO()
rustgrad.save(_ORIGINAL, _buffer)
_SAVED = _buffer.getvalue()


def _same(loaded, original):
    if isinstance(original, rustgrad.Tensor):
        assert isinstance(loaded, rustgrad.Tensor) and loaded.dtype == original.dtype
        assert loaded.requires_grad == original.requires_grad
        assert loaded.detach().numpy().tobytes() == original.detach().numpy().tobytes()
    elif isinstance(original, dict):
        assert type(loaded) is type(original) and list(loaded) == list(original)
        for key in original:
            _same(loaded[key], original[key])
    elif isinstance(original, (list, tuple)):
        assert type(loaded) is type(original) and len(loaded) == len(original)
        for a, b in zip(loaded, original):
            _same(a, b)
    else:
        assert loaded == original and type(loaded) is type(original)


@st.composite
def _damaged(draw):
    data = bytearray(_SAVED)
    kind = draw(st.sampled_from(["truncate", "flip", "overwrite", "insert", "garbage", "header-garbage"]))
    if kind == "garbage":
        return draw(st.binary(max_size=3000))
    if kind == "header-garbage":  # a plausible length followed by anything
        body = draw(st.binary(max_size=2000))
        return struct.pack("<Q", draw(st.integers(0, len(body)))) + body
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


def test_the_undamaged_file_loads_exactly():
    _same(rustgrad.load(io.BytesIO(_SAVED)), _ORIGINAL)


@settings(max_examples=_EXAMPLES, deadline=None)
@given(damaged=_damaged())
def test_a_damaged_checkpoint_loads_exactly_or_raises_a_rustgrad_error(damaged):
    try:
        loaded = rustgrad.load(io.BytesIO(damaged))
    except RustgradError as err:
        assert str(err)
        return
    _same(loaded, _ORIGINAL)


@settings(max_examples=_EXAMPLES // 2, deadline=None)
@given(header=st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
), data=st.binary(max_size=64))
def test_any_json_header_loads_or_raises_a_rustgrad_error(header, data):
    import json

    text = json.dumps(header).encode()
    try:
        result = rustgrad.load(io.BytesIO(struct.pack("<Q", len(text)) + text + data))
    except RustgradError as err:
        assert str(err)
        return
    assert isinstance(result, dict)
    for value in result.values():
        assert isinstance(value, rustgrad.Tensor)
        np.asarray(value.numpy())
