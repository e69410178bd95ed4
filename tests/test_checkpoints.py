"""rustgrad.save / rustgrad.load of whole checkpoints in the safetensors-based format (version 3):
exact round trips of nested objects and of every dtype, files other programs wrote, refusals at
save time naming the path, clear errors for malformed files, pickle never run, and training that
resumes from a checkpoint on the same curve."""

from __future__ import annotations

import collections
import io
import json
import math
import pickle
import struct
import sys
import zipfile
import zlib

import numpy as np
import pytest
from _old_checkpoints import save_npz_v2

import rustgrad
from rustgrad import optim
from rustgrad.errors import DTypeError, RustgradError, SerializationError
from rustgrad.optim import lr_scheduler


def _round_trip(obj):
    buffer = io.BytesIO()
    rustgrad.save(obj, buffer)
    buffer.seek(0)
    return rustgrad.load(buffer)


def _safetensors_bytes(tensors: dict, metadata=None, header_extra=None) -> bytes:
    """A safetensors file written by hand: {name: (dtype, shape, raw bytes)}."""
    header: dict = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    offset, data = 0, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        data += raw
    header.update(header_extra or {})
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def _load_bytes(data: bytes):
    return rustgrad.load(io.BytesIO(data))


@pytest.mark.parametrize(
    "make",
    [
        lambda: rustgrad.randn(3, 4),
        lambda: rustgrad.randn(2, 3, dtype=rustgrad.float64),
        lambda: rustgrad.tensor([[1, -2**40], [2**62, 0]], dtype=rustgrad.int64),
        lambda: rustgrad.tensor([1, -2**31, 2**31 - 1], dtype=rustgrad.int32),
        lambda: rustgrad.tensor([0, 7, 255], dtype=rustgrad.uint8),
        lambda: rustgrad.tensor([[True, False], [False, True]]),
        lambda: rustgrad.tensor(2.5),
        lambda: rustgrad.zeros(0, 3),
        lambda: rustgrad.zeros(4, 0, dtype=rustgrad.int64),
        lambda: rustgrad.randn(3, 5).t(),
        lambda: rustgrad.arange(24.0).reshape(2, 3, 4)[:, ::2, 1:],
        lambda: rustgrad.tensor([math.inf, -math.inf, math.nan, -0.0, 5e-324], dtype=rustgrad.float64),
    ],
)
def test_every_dtype_and_layout_round_trips_bitwise(make):
    t = make()
    loaded = _round_trip({"t": t, "again": [t]})
    for value in (loaded["t"], loaded["again"][0]):
        assert value.dtype == t.dtype and tuple(value.shape) == tuple(t.shape)
        assert value.numpy().tobytes() == np.ascontiguousarray(t.numpy()).tobytes()
    assert loaded["t"] is loaded["again"][0]  # one tensor saved twice is stored once and stays one


def test_a_whole_checkpoint_round_trips_with_its_types():
    w = rustgrad.randn(3, 2, requires_grad=True)
    model = collections.OrderedDict([("fc.weight", w), ("fc.bias", rustgrad.zeros(2))])
    checkpoint = {
        "epoch": 3,
        "model": model,
        "optimizer": {"state": {0: {"step": 5, "momentum_buffer": rustgrad.ones(3, 2)}},
                      "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1], "nesterov": False}]},
        "loss": 0.25,
        "note": "épreuve \u2603",
        "best": math.inf,
        "worst": -math.inf,
        "nan": math.nan,
        "none": None,
        "flags": [True, False],
        "big": 2**80,
        "empty": {},
        "nested": [[], (), {"k": ((1, 2.0), [None])}],
        7: "int key",
        -1: "negative int key",
    }
    loaded = _round_trip(checkpoint)
    assert list(loaded) == list(checkpoint)
    assert type(loaded["model"]) is collections.OrderedDict and list(loaded["model"]) == ["fc.weight", "fc.bias"]
    assert loaded["model"]["fc.weight"].requires_grad and loaded["model"]["fc.weight"].is_leaf
    assert not loaded["model"]["fc.bias"].requires_grad
    np.testing.assert_array_equal(loaded["model"]["fc.weight"].detach().numpy(), w.detach().numpy())
    assert list(loaded["optimizer"]["state"]) == [0] and type(loaded["optimizer"]["state"]) is dict
    assert loaded["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    for key in ("epoch", "loss", "note", "best", "worst", "none", "flags", "big", "empty", "nested", 7, -1):
        assert loaded[key] == checkpoint[key] and type(loaded[key]) is type(checkpoint[key]), key
    assert math.isnan(loaded["nan"])
    assert type(loaded["epoch"]) is int and type(loaded["loss"]) is float and loaded["flags"][0] is True


def test_a_checkpoint_after_other_data_in_a_file_object_loads():
    buffer = io.BytesIO()
    buffer.write(b"other data")
    rustgrad.save({"w": rustgrad.arange(3.0), "n": 1}, buffer)
    buffer.seek(len(b"other data"))
    loaded = rustgrad.load(buffer)
    assert loaded["w"].tolist() == [0.0, 1.0, 2.0] and loaded["n"] == 1


def test_a_dict_of_tensors_is_a_safetensors_file_with_its_keys():
    buffer = io.BytesIO()
    rustgrad.save({"fc.weight": rustgrad.ones(2, 2), "fc.bias": rustgrad.zeros(2)}, buffer)
    data = buffer.getvalue()
    (length,) = struct.unpack("<Q", data[:8])
    assert length % 8 == 0
    header = json.loads(data[8:8 + length])
    assert header["fc.weight"] == {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}
    assert header["fc.bias"] == {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]}
    description = json.loads(header["__metadata__"]["rustgrad"])
    assert description["version"] == 3
    assert len(data) == 8 + length + 24


def test_other_programs_safetensors_files_load_as_a_dict_of_tensors():
    half = np.array([1.5, -2.0, 65504.0], dtype="<f2")
    bf16 = (np.array([1.0, -3.5], dtype="<f4").view("<u4") >> 16).astype("<u2")
    data = _safetensors_bytes({
        "h": ("F16", [3], half.tobytes()),
        "b": ("BF16", [2], bf16.tobytes()),
        "i8": ("I8", [2], np.array([-5, 7], "i1").tobytes()),
        "u32": ("U32", [1], np.array([2**32 - 1], "<u4").tobytes()),
        "mask": ("BOOL", [2], b"\x01\x00"),
        "w": ("F64", [2, 1], np.array([[1.0], [2.0]]).tobytes()),
    }, metadata={"format": "pt"})
    loaded = _load_bytes(data)
    assert list(loaded) == ["h", "b", "i8", "u32", "mask", "w"]
    assert loaded["h"].dtype == rustgrad.float32 and loaded["h"].tolist() == [1.5, -2.0, 65504.0]
    assert loaded["b"].dtype == rustgrad.float32 and loaded["b"].tolist() == [1.0, -3.5]
    assert loaded["i8"].dtype == rustgrad.int32 and loaded["i8"].tolist() == [-5, 7]
    assert loaded["u32"].dtype == rustgrad.int64 and loaded["u32"].tolist() == [2**32 - 1]
    assert loaded["mask"].tolist() == [True, False] and loaded["w"].tolist() == [[1.0], [2.0]]
    assert not any(t.requires_grad for t in loaded.values())


def test_old_format_files_still_load(tmp_path):
    state = {"w": rustgrad.ones(2, requires_grad=True), "n": rustgrad.arange(3)}
    save_npz_v2(state, tmp_path / "v2")
    loaded = rustgrad.load(tmp_path / "v2")
    assert list(loaded) == ["w", "n"] and loaded["w"].requires_grad and loaded["n"].tolist() == [0, 1, 2]
    save_npz_v2(rustgrad.arange(4.0), tmp_path / "v2t")
    assert rustgrad.load(tmp_path / "v2t").tolist() == [0.0, 1.0, 2.0, 3.0]


class Custom:
    pass


class MyDict(dict):
    pass


@pytest.mark.parametrize(
    "obj, match",
    [
        ({"model": {"fc.weight": Custom()}}, r"cannot save obj\['model'\]\['fc.weight'\], an object of type Custom"),
        ({"a": [0, (1, {2: b"bytes"})]}, r"cannot save obj\['a'\]\[1\]\[1\]\[2\], an object of type bytes"),
        ({"a": MyDict()}, r"cannot save obj\['a'\], an object of type MyDict \(a subclass of dict\)"),
        ({(1, 2): 3}, r"obj has a key of type tuple \(\(1, 2\)\); dict keys must be str or int"),
        ({"x": {True: 1}}, r"obj\['x'\] has a key of type bool"),
        ([{1, 2}], r"cannot save obj\[0\], an object of type set"),
        (lambda: 1, r"cannot save obj, an object of type function"),
    ],
)
def test_what_cannot_be_stored_is_refused_at_save_time_naming_its_path(tmp_path, obj, match):
    with pytest.raises(TypeError, match=match):
        rustgrad.save(obj, tmp_path / "x")
    assert list(tmp_path.iterdir()) == []


def test_a_container_holding_itself_is_refused():
    loop: list = [1]
    loop.append(loop)
    with pytest.raises(TypeError, match=r"save: obj\['a'\]\[1\] contains itself"):
        rustgrad.save({"a": loop}, io.BytesIO())


def _valid() -> bytes:
    buffer = io.BytesIO()
    rustgrad.save({"w": rustgrad.arange(6.0).reshape(2, 3), "step": 4}, buffer)
    return buffer.getvalue()


def _edit_header(data: bytes, edit, resign=False) -> bytes:
    """The file with its header edited; ``resign`` recomputes the checksum as the format defines it
    (CRC-32 of the header without the checksum, canonical JSON, then of the data)."""
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    edit(header)
    body = data[8 + length:]
    if resign:
        meta = {k: v for k, v in header["__metadata__"].items() if k != "rustgrad.crc32"}
        canonical = json.dumps(dict(header, __metadata__=meta), sort_keys=True, separators=(",", ":")).encode()
        header["__metadata__"]["rustgrad.crc32"] = f"{zlib.crc32(body, zlib.crc32(canonical)):08x}"
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + body


def _edit_description(edit):
    def run(header):
        description = json.loads(header["__metadata__"]["rustgrad"])
        edit(description)
        header["__metadata__"]["rustgrad"] = json.dumps(description)
    return lambda data: _edit_header(data, run, resign=True)


def test_the_checksum_helper_of_these_tests_follows_the_format():
    assert _edit_header(_valid(), lambda h: None, resign=True) != _valid()
    assert _load_bytes(_edit_header(_valid(), lambda h: None, resign=True))["step"] == 4


@pytest.mark.parametrize(
    "damage, error, match",
    [
        (lambda d: d[:4], SerializationError, "it holds only 4 bytes"),
        (lambda d: struct.pack("<Q", 10**12) + d[8:], SerializationError, r"declare a 1000000000000-byte header"),
        (lambda d: d[:-3], SerializationError, "truncated or corrupt: its tensors cover 24 bytes"),
        (lambda d: d + b"\x00" * 8, SerializationError, "truncated or corrupt: its tensors cover 24 bytes"),
        (lambda d: struct.pack("<Q", 5) + b"{oops" + d[13:], SerializationError, "header is not valid JSON"),
        (lambda d: struct.pack("<Q", 2) + b"[]", SerializationError, "header is not a JSON object"),
        (lambda d: _edit_header(d, lambda h: h["w"].update(dtype="F99")), SerializationError,
         "tensor 'w' has unknown dtype 'F99'"),
        (lambda d: _edit_header(d, lambda h: h["w"].update(dtype="F8_E4M3")), DTypeError,
         "tensor 'w' .* has dtype F8_E4M3, which rustgrad cannot hold"),
        (lambda d: _edit_header(d, lambda h: h["w"].update(shape=[2, -3])), SerializationError, "invalid shape"),
        (lambda d: _edit_header(d, lambda h: h["w"].update(shape=[2**40, 2**40])), SerializationError,
         r"declares shape \[1099511627776, 1099511627776\] of F32"),
        (lambda d: _edit_header(d, lambda h: h["w"].update(data_offsets=[8, 32])), SerializationError,
         "leaves a gap before it"),
        (lambda d: _edit_header(d, lambda h: h["w"].update(data_offsets=[24, 0])), SerializationError,
         "invalid data_offsets"),
        (lambda d: _edit_header(d, lambda h: h.update(v={"dtype": "F32", "shape": [2], "data_offsets": [0, 8]})),
         SerializationError, "overlaps the one before it"),
        (lambda d: _edit_header(d, lambda h: h["__metadata__"].update(rustgrad="{")), SerializationError,
         "invalid rustgrad metadata: it is not JSON"),
        (_edit_description(lambda m: m.update(version=4)), SerializationError,
         "unknown format version 4"),
        (_edit_description(lambda m: m.update(object={"eval": "x"})), SerializationError,
         "unexpected node"),
        (lambda d: _edit_header(d, lambda h: h["__metadata__"].pop("rustgrad.crc32")), SerializationError,
         "lacks 'rustgrad.crc32'"),
        (lambda d: _edit_header(d, lambda h: h["__metadata__"].update({"rustgrad": "0"}), resign=True),
         SerializationError, "invalid rustgrad metadata: it is not a JSON object"),
        (_edit_description(lambda m: m["object"]["dict"].append(["extra", {"tensor": "missing"}])), SerializationError,
         "unexpected node"),
        (_edit_description(lambda m: m["object"]["dict"].pop(0)), SerializationError,
         "does not use every tensor of the file"),
        (_edit_description(lambda m: m.update(requires_grad=["nope"])), SerializationError,
         "'requires_grad' names a tensor the file lacks"),
        (lambda d: d[:-1] + bytes([d[-1] ^ 1]), SerializationError, "is corrupt: its checksum is"),
        (lambda d: d.replace(b'\\"step\\",4', b'\\"step\\",5'), SerializationError, "is corrupt: its checksum is"),
    ],
)
def test_a_malformed_file_raises_a_clear_error_naming_the_problem(tmp_path, damage, error, match):
    path = tmp_path / "bad.pt"
    path.write_bytes(damage(_valid()))
    with pytest.raises(error, match=match) as info:
        rustgrad.load(path)
    assert "load: " in str(info.value) and "bad.pt" in str(info.value)
    assert isinstance(info.value, RustgradError)


def test_a_pickle_file_is_refused_and_never_run(tmp_path):
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        (tmp_path / "evil.pt").write_bytes(pickle.dumps({"w": Payload()}, protocol=protocol))
        with pytest.raises(SerializationError, match="evil.pt' is a pickle file.*never unpickles"):
            rustgrad.load(tmp_path / "evil.pt", weights_only=False)
    with zipfile.ZipFile(tmp_path / "torch.pt", "w") as archive:  # torch.save's zip format
        archive.writestr("archive/data.pkl", pickle.dumps({"w": Payload()}))
        archive.writestr("archive/version", "3\n")
    with pytest.raises(SerializationError, match=r"torch.pt' is a PyTorch \(torch.save\) archive of pickled"):
        rustgrad.load(tmp_path / "torch.pt")
    assert not marker.exists()


@pytest.mark.skipif(sys.platform != "linux", reason="uses /proc and RLIMIT_AS")
def test_forged_sizes_raise_before_allocating_under_a_memory_cap(tmp_path, run_python):
    forged = _safetensors_bytes({"x": ("F64", [2**40], b"\x00" * 16)})
    forged = forged.replace(b"[0, 16]", str([0, 8 * 2**40]).encode())
    (tmp_path / "forged").write_bytes(struct.pack("<Q", len(forged) - 8) + forged[8:])
    source = f"""
import resource, rustgrad
with open("/proc/self/status") as status:
    vm = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize"))
resource.setrlimit(resource.RLIMIT_AS, (vm + 2**30, vm + 2**30))
try:
    rustgrad.load({str(tmp_path / "forged")!r})
except Exception as err:
    print(type(err).__name__, err)
"""
    result = run_python(source)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("SerializationError") and "cover 16 bytes" not in result.stdout


def _model(seed=0):
    rng = np.random.default_rng(seed)
    return collections.OrderedDict(
        w1=rustgrad.tensor(rng.standard_normal((4, 8)), dtype=rustgrad.float64, requires_grad=True),
        b1=rustgrad.zeros(8, dtype=rustgrad.float64, requires_grad=True),
        w2=rustgrad.tensor(rng.standard_normal((8, 1)), dtype=rustgrad.float64, requires_grad=True),
    )


def _train(params, opt, sched, steps, x, y):
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        hidden = (x.mm(params["w1"]) + params["b1"]).tanh()
        loss = ((hidden.mm(params["w2"]) - y) ** 2).mean()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss))
    return losses


def test_training_resumed_from_a_checkpoint_continues_the_same_curve(tmp_path):
    rng = np.random.default_rng(1)
    x = rustgrad.tensor(rng.standard_normal((16, 4)), dtype=rustgrad.float64)
    y = rustgrad.tensor(rng.standard_normal((16, 1)), dtype=rustgrad.float64)

    def setup(params):
        opt = optim.SGD(params.values(), lr=0.1, momentum=0.9, weight_decay=1e-3)
        return opt, lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)

    params = _model()
    opt, sched = setup(params)
    straight = _train(params, opt, sched, 10, x, y)

    params = _model()
    opt, sched = setup(params)
    first = _train(params, opt, sched, 4, x, y)
    rustgrad.save({"epoch": 4, "model": params, "optimizer": opt.state_dict(), "scheduler": sched.state_dict()},
                  tmp_path / "ckpt.pt")
    checkpoint = rustgrad.load(tmp_path / "ckpt.pt")
    assert checkpoint["epoch"] == 4 and type(checkpoint["model"]) is collections.OrderedDict
    fresh = _model(seed=99)
    with rustgrad.no_grad():
        for name, value in checkpoint["model"].items():
            fresh[name].copy_(value)
    opt2, sched2 = setup(fresh)
    opt2.load_state_dict(checkpoint["optimizer"])
    sched2.load_state_dict(checkpoint["scheduler"])
    rest = _train(fresh, opt2, sched2, 6, x, y)
    assert first + rest == straight  # bitwise: the same floats
    final = _model()
    opt3, sched3 = setup(final)
    _train(final, opt3, sched3, 10, x, y)
    for name in final:
        np.testing.assert_array_equal(fresh[name].detach().numpy(), final[name].detach().numpy())
