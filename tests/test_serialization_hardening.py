"""rustgrad.save / rustgrad.load and tf.train.Saver against hostile keys, paths and files.

Keys round-trip exactly; a corrupt, truncated or forged file raises a RustgradError naming the file
and what is wrong (never a zip, JSON or numpy error, never an out-of-memory); declared sizes are
checked before anything is allocated; an array is read once, straight into the tensor's memory;
a failed save leaves no file behind and a failed restore changes no variable.
"""

from __future__ import annotations

import io
import json
import os
import struct
import sys
import zipfile

import numpy as np
import pytest
from _old_checkpoints import save_npz_v2

import rustgrad
import rustgrad.compat.v1 as tf
from rustgrad.errors import (
    DataLossError,
    DTypeError,
    InvalidArgumentError,
    OpError,
    PathNotFoundError,
    RustgradError,
    SerializationError,
)

_ODD_KEYS = [
    "allow_pickle", "file", "args", "kwds", "x.npy", "x", "x.npy.npy", "__rustgrad__", "__rustgrad__.npy",
    "tensor", "arr_0", "arr_0.npy", "", "a/b", "a/", "../up", "/abs", "back\\slash", "with\x00nul", "é",
    "lone \ud800 surrogate", "k" * 70_000,
]


def _npy(descr, shape, data=b"", fortran=False) -> bytes:
    """The bytes of a .npy file with this header (version 1.0) followed by ``data``."""
    header = repr({"descr": descr, "fortran_order": fortran, "shape": shape}).encode("latin1")
    header += b" " * (-(10 + len(header) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + data


def _zip(path, members: dict, compression=zipfile.ZIP_STORED) -> None:
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def _old_format_save(state: dict, path, kind="dict") -> None:
    """Writes a file exactly as rustgrad.save did before format version 2."""
    meta = {"kind": kind, "requires_grad": {k: bool(t.requires_grad) for k, t in state.items()}, "version": 1}
    arrays = {k: np.asarray(t.detach().numpy()) for k, t in state.items()}
    with open(path, "wb") as handle:
        np.savez(handle, **arrays, __rustgrad__=np.array(json.dumps(meta)))


# ---------------------------------------------------------------- keys


def test_keys_that_look_like_file_names_or_numpy_keywords_round_trip_exactly(tmp_path):
    state = {key: rustgrad.full([i + 1], float(i)) for i, key in enumerate(_ODD_KEYS)}
    state["allow_pickle"].requires_grad_(True)
    rustgrad.save(state, tmp_path / "odd")
    loaded = rustgrad.load(tmp_path / "odd")
    assert list(loaded) == _ODD_KEYS
    for i, key in enumerate(_ODD_KEYS):
        np.testing.assert_array_equal(loaded[key].detach().numpy(), np.full(i + 1, float(i), np.float32))
        assert loaded[key].requires_grad == (key == "allow_pickle")


def test_a_key_named_allow_pickle_is_kept(tmp_path):
    rustgrad.save({"allow_pickle": rustgrad.ones(2), "w": rustgrad.zeros(1)}, tmp_path / "f")
    assert list(rustgrad.load(tmp_path / "f")) == ["allow_pickle", "w"]


def test_keys_x_and_x_npy_do_not_collide(tmp_path):
    rustgrad.save({"x.npy": rustgrad.ones(2), "x": rustgrad.zeros(3)}, tmp_path / "f")
    loaded = rustgrad.load(tmp_path / "f")
    np.testing.assert_array_equal(loaded["x.npy"].numpy(), np.ones(2))
    np.testing.assert_array_equal(loaded["x"].numpy(), np.zeros(3))


def test_numpy_still_reads_plain_keys_of_version_2_files_by_name(tmp_path):
    save_npz_v2({"weight": rustgrad.ones(2), "with\x00nul": rustgrad.zeros(1)}, tmp_path / "f")
    with np.load(tmp_path / "f") as archive:
        np.testing.assert_array_equal(archive["weight"], np.ones(2, np.float32))


def test_files_of_the_previous_format_still_load(tmp_path):
    state = {"x.npy": rustgrad.ones(2, requires_grad=True), "x": rustgrad.zeros(3, dtype=rustgrad.float64)}
    _old_format_save(state, tmp_path / "v1")
    loaded = rustgrad.load(tmp_path / "v1")
    assert list(loaded) == ["x.npy", "x"]
    assert loaded["x.npy"].requires_grad and not loaded["x"].requires_grad
    np.testing.assert_array_equal(loaded["x.npy"].detach().numpy(), np.ones(2))
    assert loaded["x"].dtype == rustgrad.float64
    _old_format_save({"tensor": rustgrad.arange(3.0)}, tmp_path / "v1t", kind="tensor")
    np.testing.assert_array_equal(rustgrad.load(tmp_path / "v1t").numpy(), [0.0, 1.0, 2.0])


def test_a_file_of_a_newer_format_version_is_refused(tmp_path):
    meta = {"version": 99, "kind": "dict", "entries": []}
    with open(tmp_path / "v99", "wb") as handle:
        np.savez(handle, __rustgrad__=np.array(json.dumps(meta)))
    with pytest.raises(SerializationError, match=r"v99.*unknown format version 99"):
        rustgrad.load(tmp_path / "v99")


# ---------------------------------------------------------------- corrupt files


def _valid_file(tmp_path) -> bytes:
    """An .npz file of format version 2: these cases check the .npz reader (test_checkpoints.py checks
    the safetensors one)."""
    save_npz_v2({"w": rustgrad.randn(8, 8), "b": rustgrad.zeros(8)}, tmp_path / "valid")
    return (tmp_path / "valid").read_bytes()


@pytest.mark.parametrize(
    "damage, match",
    [
        (lambda data: data[: len(data) // 2], "not an .npz archive.*truncated or corrupt"),
        (lambda data: data[:-30], "not an .npz archive.*truncated or corrupt"),
        (lambda data: b"", "not a safetensors file or an .npz archive"),
        (lambda data: b"PK\x03\x04" + b"\x00" * 100, "not an .npz archive"),
        (lambda data: os.urandom(500), "not a safetensors file or an .npz archive"),
        (lambda data: data.replace('"kind"'.encode("utf-32-le"), '"kine"'.encode("utf-32-le")),
         "member '__rustgrad__.npy' cannot be read .*Bad CRC-32"),
        (lambda data: data[:200] + bytes([data[200] ^ 1]) + data[201:], "corrupt"),
    ],
    ids=["half", "tail-cut", "empty", "zip-magic-only", "garbage", "metadata-edited", "flipped-byte"],
)
def test_a_corrupt_file_raises_serialization_error_naming_the_file(tmp_path, damage, match):
    (tmp_path / "bad.pt").write_bytes(damage(_valid_file(tmp_path)))
    with pytest.raises(SerializationError, match=match) as info:
        rustgrad.load(tmp_path / "bad.pt")
    assert "load: " in str(info.value) and "bad.pt" in str(info.value)
    assert isinstance(info.value, RuntimeError)


@pytest.mark.parametrize(
    "meta, match",
    [
        (b"{not json", "not JSON"),
        (json.dumps({"kind": "dict", "version": 1}), "'requires_grad' must map"),
        (json.dumps({"kind": "tensor", "version": 1, "requires_grad": {}}), "exactly one entry"),
        (json.dumps({"kind": "dict", "version": 2, "entries": [["a", "missing.npy", False]]}), "no member"),
        (json.dumps({"kind": "dict", "version": 2, "entries": [["a", "a.npy", 1]]}), "'entries' must be"),
        (json.dumps({"kind": "module", "version": 2, "entries": []}), "'kind'"),
        (json.dumps([1, 2]), "'kind'"),
        ("[" * 100_000, "not JSON"),
    ],
)
def test_bad_metadata_raises_serialization_error(tmp_path, meta, match):
    text = meta.decode("latin1") if isinstance(meta, bytes) else meta
    with open(tmp_path / "meta", "wb") as handle:
        np.savez(handle, a=np.ones(2), __rustgrad__=np.array(text))
    with pytest.raises(SerializationError, match=f"load: .*meta.* invalid rustgrad metadata: .*{match}"):
        rustgrad.load(tmp_path / "meta")


@pytest.mark.parametrize(
    "member, match",
    [
        (b"not an array", "not a .npy array"),
        (_npy("<f4", (2,), b"\x00" * 4), r"declares shape \[2\] of float32 \(8 bytes\) but holds 4"),
        (_npy("<f4", (2,), b"\x00" * 12), r"declares shape \[2\] of float32 \(8 bytes\) but holds 12"),
        (_npy("<f4", (-2,), b""), "invalid .npy header"),
        (_npy("<f4", (2.0,), b"\x00" * 8), "invalid .npy header"),
        (_npy("<f4", tuple([1] * 65), b"\x00" * 4), "invalid .npy header"),
        (_npy("|b1", (3,), b"\x00\x01\x02"), "bool values other than 0 and 1"),
        (b"\x93NUMPY\x01\x00\xff\xff{}", "declares a 65535-byte .npy header"),
        (b"\x93NUMPY\x09\x00", "unknown .npy format version 9.0"),
        (_npy("<f4", (2,), b"\x00" * 8).replace(b"'shape'", b"'shapf'"), "invalid .npy header"),
        (_npy("<f4", (2,), b"\x00" * 8).replace(b"(2,)", b"__import__('os').system('false')"[:4]),
         "invalid .npy header"),
    ],
    ids=["not-npy", "short-data", "long-data", "negative-dim", "float-dim", "65-dims", "bool-byte-2",
         "huge-header", "npy-version", "missing-field", "code-in-header"],
)
def test_a_bad_member_raises_serialization_error(tmp_path, member, match):
    _zip(tmp_path / "m.npz", {"a.npy": _npy("<f8", (1,), b"\x00" * 8), "b.npy": member})
    with pytest.raises(SerializationError, match=f"load: .*m.npz.*member 'b.npy'.*{match}"):
        rustgrad.load(tmp_path / "m.npz")


def test_loading_never_unpickles(tmp_path):
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    with open(tmp_path / "pickled.npz", "wb") as handle:
        np.savez(handle, evil=np.array([Payload()], dtype=object))
    with pytest.raises(DTypeError, match="pickled.npz.*numpy dtype object"):
        rustgrad.load(tmp_path / "pickled.npz")
    assert not marker.exists()


def test_a_missing_file_raises_path_not_found(tmp_path):
    with pytest.raises(PathNotFoundError, match="load: no such file: .*missing") as info:
        rustgrad.load(tmp_path / "missing")
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, RustgradError)


@pytest.mark.parametrize("descr", [">f4", ">f8"])
def test_big_endian_and_fortran_order_numpy_files_load(tmp_path, descr):
    values = np.arange(12.0).reshape(3, 4)
    np.savez(tmp_path / "np.npz", big=values.astype(descr), fortran=np.asfortranarray(values))
    loaded = rustgrad.load(tmp_path / "np.npz")
    np.testing.assert_array_equal(loaded["big"].numpy(), values)
    assert loaded["big"].dtype == (rustgrad.float32 if descr == ">f4" else rustgrad.float64)
    np.testing.assert_array_equal(loaded["fortran"].numpy(), values)


# ---------------------------------------------------------------- saving


def test_save_into_a_missing_folder_raises_path_not_found(tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "w.pt"
    with pytest.raises(PathNotFoundError, match=r"save: parent directory .*no/such/dir does not exist") as info:
        rustgrad.save(rustgrad.ones(2), target)
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, RuntimeError)
    assert not (tmp_path / "no").exists()


def _fail_after_some_bytes(monkeypatch, exc):
    def write_then_fail(handle, chunk):
        handle.write(b"\x00" * 100)
        raise exc

    monkeypatch.setattr(rustgrad.serialization, "_write_bytes", write_then_fail)


@pytest.mark.parametrize("exc", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failed_save_leaves_no_file_behind(tmp_path, monkeypatch, exc):
    _fail_after_some_bytes(monkeypatch, exc)
    with pytest.raises(SerializationError if isinstance(exc, OSError) else KeyboardInterrupt) as info:
        rustgrad.save({"w": rustgrad.ones(3)}, tmp_path / "w.pt")
    if isinstance(exc, OSError):
        assert "save: could not write" in str(info.value) and "No space left" in str(info.value)
    assert os.listdir(tmp_path) == []


def test_a_failed_save_keeps_the_previous_file(tmp_path, monkeypatch):
    rustgrad.save({"w": rustgrad.zeros(3)}, tmp_path / "w.pt")
    before = (tmp_path / "w.pt").read_bytes()
    _fail_after_some_bytes(monkeypatch, OSError(28, "No space left on device"))
    with pytest.raises(SerializationError):
        rustgrad.save({"w": rustgrad.ones(3)}, tmp_path / "w.pt")
    assert os.listdir(tmp_path) == ["w.pt"] and (tmp_path / "w.pt").read_bytes() == before


# ---------------------------------------------------------------- declared sizes and memory


def _forged_files(folder) -> list:
    """Small files whose headers declare huge arrays: 8 TiB in the .npy header, and 3 GiB of content
    in the zip directory for a member of a few bytes."""
    huge_shape = folder / "huge_shape.npz"
    _zip(huge_shape, {"x.npy": _npy("<f8", (2**40,), b"\x00" * 16)})
    member = _npy("<f4", (3 * 2**28,))
    forged = io.BytesIO()
    _zip(forged, {"x.npy": member}, zipfile.ZIP_DEFLATED)
    data = bytearray(forged.getvalue())
    entry = data.rfind(b"PK\x01\x02")
    data[entry + 24:entry + 28] = struct.pack("<I", len(member) + 3 * 2**30)  # the declared uncompressed size
    forged_size = folder / "forged_size.npz"
    forged_size.write_bytes(bytes(data))
    return [huge_shape, forged_size]


def test_a_small_file_declaring_a_huge_array_raises_before_allocating(tmp_path):
    huge_shape, forged_size = _forged_files(tmp_path)
    with pytest.raises(SerializationError, match=r"huge_shape.npz.*declares shape \[1099511627776\] of float64"):
        rustgrad.load(huge_shape)
    with pytest.raises(SerializationError, match=r"forged_size.npz.*declares \d+ bytes of content, more than"):
        rustgrad.load(forged_size)


@pytest.mark.skipif(sys.platform != "linux", reason="uses /proc and RLIMIT_AS")
def test_forged_sizes_raise_under_a_tight_memory_cap(tmp_path, run_python):
    paths = [str(p) for p in _forged_files(tmp_path)]
    source = f"""
import resource, rustgrad
with open("/proc/self/status") as status:
    vm = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize"))
resource.setrlimit(resource.RLIMIT_AS, (vm + 2**30, vm + 2**30))  # 1 GiB more than now
for path in {paths!r}:
    try:
        rustgrad.load(path)
    except Exception as err:
        print(type(err).__name__)
"""
    result = run_python(source)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["SerializationError", "SerializationError"]


@pytest.mark.skipif(sys.platform != "linux", reason="reads the peak RSS from /proc")
def test_loading_reads_each_array_once_into_the_tensor(tmp_path, run_python):
    stored, compressed = tmp_path / "stored.pt", tmp_path / "compressed.npz"
    rustgrad.save({"w": rustgrad.ones(25_000_000)}, stored)  # 100 MB, uncompressed
    np.savez_compressed(compressed, w=np.zeros(50_000_000, dtype=np.float32))  # 200 MB in about 200 kB
    assert compressed.stat().st_size < 2_000_000
    source = f"""
import rustgrad
def peak():  # VmHWM, the peak RSS of this process (ru_maxrss would include the parent's before exec)
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM"))
base = peak()
t = rustgrad.load({str(stored)!r})["w"]
assert float(t.sum()) == 25_000_000
print((peak() - base) / 100e6)
del t
t = rustgrad.load({str(compressed)!r})["w"]
assert tuple(t.shape) == (50_000_000,) and float(t.amin()) == float(t.amax()) == 0
print((peak() - base) / 200e6)
"""
    result = run_python(source)
    assert result.returncode == 0, result.stderr
    ratios = [float(r) for r in result.stdout.split()]
    for ratio in ratios:  # one copy of the data, not two
        assert 0.9 < ratio < 1.3, ratios


# ---------------------------------------------------------------- tf.train.Saver


@pytest.fixture
def saver_setup(tmp_path):
    with tf.Graph().as_default() as graph:
        variables = [
            tf.Variable(np.arange(6.0).reshape(2, 3), name="w"),
            tf.Variable(np.ones(3, np.float32), name="b"),
            tf.Variable(np.full(2, 7.0), name="c"),
        ]
        saver = tf.train.Saver()
        path = str(tmp_path / "model.ckpt")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert saver.save(sess, path) == path
        yield graph, variables, saver, path


def _zero_all(sess, variables):
    for v in variables:
        sess.run(v.assign(np.zeros(tuple(v.shape))))


@pytest.mark.parametrize("name", ["allow_pickle", "file"])
def test_saver_keeps_variables_named_like_numpy_keywords(tmp_path, name):
    with tf.Graph().as_default():
        v = tf.Variable(np.full(2, 7.0), name=name)
        w = tf.Variable(np.ones(3), name="w")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver.save(sess, str(tmp_path / "ckpt"))
        with tf.Session() as sess:
            saver.restore(sess, str(tmp_path / "ckpt"))
            np.testing.assert_array_equal(sess.run(v), np.full(2, 7.0))
            np.testing.assert_array_equal(sess.run(w), np.ones(3))


@pytest.mark.parametrize("keep", [0.5, 0.9, 0.99])
def test_restore_of_a_truncated_checkpoint_raises_data_loss_and_changes_nothing(saver_setup, keep):
    graph, variables, saver, path = saver_setup
    with open(path, "rb") as handle:
        data = handle.read()
    with open(path, "wb") as handle:
        handle.write(data[: int(len(data) * keep)])
    with graph.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _zero_all(sess, variables)
        with pytest.raises(DataLossError, match=r"Saver.restore: .*model.ckpt.* (truncated|corrupt)") as info:
            saver.restore(sess, path)
        assert isinstance(info.value, OpError) and isinstance(info.value, RuntimeError)
        for v in variables:
            np.testing.assert_array_equal(sess.run(v), np.zeros(tuple(v.shape)))


def test_restore_with_one_damaged_variable_changes_no_variable(saver_setup):
    graph, variables, saver, path = saver_setup
    with open(path, "rb") as handle:
        data = bytearray(handle.read())
    with zipfile.ZipFile(path) as archive:
        last = archive.infolist()[-1]  # "c.npy": the others are read first and are intact
    data[last.header_offset + 30 + len(last.filename) + 140] ^= 0xFF  # a data byte of the last member
    with open(path, "wb") as handle:
        handle.write(bytes(data))
    with graph.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _zero_all(sess, variables)
        with pytest.raises(DataLossError, match="member 'c.npy' cannot be read .*Bad CRC-32"):
            saver.restore(sess, path)
        for v in variables:
            np.testing.assert_array_equal(sess.run(v), np.zeros(tuple(v.shape)))


def test_saver_save_into_a_missing_folder_raises_and_writes_nothing(saver_setup, tmp_path):
    graph, _, saver, _ = saver_setup
    with graph.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(InvalidArgumentError, match="Parent directory of .*missing/model.ckpt doesn't exist"):
            saver.save(sess, str(tmp_path / "missing" / "model.ckpt"))
    assert not (tmp_path / "missing").exists()
