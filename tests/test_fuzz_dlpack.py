"""Fuzzing DLPack import with hostile capsules.

Every capsule's data points into one real buffer of known size (or is NULL). A model of
the DLPack rules below says, for each drawn capsule, whether it is valid and, if not,
which error it must raise. The property: `from_dlpack` raises that RustgradError, or
returns a tensor whose every element is the element the capsule names inside the
buffer, and the capsule's deleter runs exactly once.

A capsule runs in this process only if even a buggy import could not read outside the
buffer: all the memory it declares lies inside. The rest (NULL data, lying ranks,
overflowing shapes and strides) run in a child process under an address-space cap, so a
crash fails the test instead of killing pytest. Valid capsules that declare memory
outside the buffer cannot be told apart from honest ones, and are not drawn.
"""

from __future__ import annotations

import gc
import json
import math
import resource
import subprocess
import sys
from typing import Any, Optional

import numpy as np
import pytest
from _child import child_env
from _dlpack_capsules import CHILD_PRELUDE, FUZZ_BUFFER_BYTES, capsule_for_example, deleter_calls, fuzz_buffer

import rustgrad
from rustgrad import errors

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, assume, event, example, given, note, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ISIZE_MAX = 2**63 - 1
USIZE_MAX = 2**64 - 1
MAX_NDIM = 1024
HOST_DEVICES = (1, 3, 11, 13)
DTYPES = {(2, 32, 1): np.dtype("<f4"), (2, 64, 1): np.dtype("<f8"), (6, 8, 1): np.dtype(np.bool_)}
KNOWN_FLAGS = 0b111
# Imports that copy at most this many bytes run in this process; ones that would copy
# at least BIG_BYTES run in the capped child, where they must fail for lack of memory.
SMALL_BYTES = 1 << 20
BIG_BYTES = 1 << 33
CHILD_ADDRESS_SPACE = 2 << 30

BUFFER = fuzz_buffer()


def rarely(draw: Any, hostile: st.SearchStrategy, usual: Any, one_in: int = 8) -> Any:
    return draw(hostile) if draw(st.integers(0, one_in - 1)) == 0 else usual


HOSTILE_DIMS = st.sampled_from([-1, -(2**63), 2**31, 2**40, 2**62, 2**63 - 1])
HOSTILE_STRIDES = st.sampled_from([2**40, 2**62, -(2**62), 2**63 - 1, -(2**63), 5000])


@st.composite
def examples(draw: Any) -> dict[str, Any]:
    rank = draw(st.one_of(st.integers(0, 4), st.integers(5, 80)))
    many = rank > 4
    small_dims = st.sampled_from([1, 1, 1, 1, 1, 1, 0, 2]) if many else st.integers(0, 4)
    shape = [rarely(draw, HOSTILE_DIMS, draw(small_dims), 12 if many else 6) for _ in range(rank)]
    strides = None
    if draw(st.booleans()):
        strides = [rarely(draw, HOSTILE_STRIDES, draw(st.integers(-4, 4)), 12 if many else 6) for _ in range(rank)]
    code, bits, lanes = draw(st.sampled_from(sorted(DTYPES)))
    if draw(st.integers(0, 9)) == 0:
        code, bits, lanes = draw(st.integers(0, 255)), draw(st.integers(0, 255)), draw(st.integers(0, 2**16 - 1))
    item = max(1, math.ceil(bits * lanes / 8))
    origin = draw(st.integers(0, FUZZ_BUFFER_BYTES - 1))
    if draw(st.integers(0, 3)):
        origin -= origin % item  # mostly aligned; sometimes not
    data, byte_offset = (origin, 0) if draw(st.booleans()) else (0, origin)
    byte_offset = rarely(draw, st.sampled_from([2**63, 2**64 - 1]), byte_offset, 20)
    version = None
    if draw(st.booleans()):
        version = rarely(
            draw, st.sampled_from([(0, 0), (2, 0), (1, 99), (2**32 - 1, 2**32 - 1)]), (1, draw(st.integers(0, 3)))
        )
    flags = rarely(draw, st.integers(0, 2**64 - 1), draw(st.sampled_from([0, 0, 0, 1, 2, 3])), 10)
    return {
        "data": rarely(draw, st.none(), data, 10),
        "byte_offset": byte_offset,
        "shape": rarely(draw, st.none(), shape, 20),
        "strides": strides,
        "ndim": rarely(draw, st.sampled_from([-1, -(2**31), MAX_NDIM + 1, 2**31 - 1]), rank, 20),
        "code": code,
        "bits": bits,
        "lanes": lanes,
        "device": rarely(draw, st.sampled_from([(2, 0), (0, 0), (-1, 5), (3, 0), (1, 7), (13, 0)]), (1, 0), 10),
        "version": version,
        "flags": flags if version is not None else 0,
    }


def capsule(**fields: Any) -> dict[str, Any]:
    """An example capsule: a float64 vector at the buffer's start, with `fields` changed."""
    base = {"data": 0, "byte_offset": 0, "shape": [4], "strides": None, "ndim": None, "code": 2, "bits": 64}
    base.update(lanes=1, device=(1, 0), version=None, flags=0)
    base.update(fields)
    if base["ndim"] is None:
        base["ndim"] = len(base["shape"] or [])
    return base


class Verdict:
    """What the model expects of one capsule."""

    def __init__(self, error: Optional[str] = None, numel: int = 0, low: int = 0, high: int = 0, item: int = 1):
        self.error, self.numel, self.low, self.high, self.item = error, numel, low, high, item


def model(ex: dict[str, Any]) -> Verdict:
    """The DLPack rules, in the order rustgrad checks them. `low`/`high` are the byte
    offsets from the tensor's origin that its elements reach (high one past the last)."""
    if ex["version"] is not None:
        major, minor = ex["version"]
        if major != 1:
            return Verdict("DLPackError")
        if minor <= 3 and ex["flags"] & ~KNOWN_FLAGS:
            return Verdict("InvalidArgumentError")
    if ex["device"][0] not in HOST_DEVICES:
        return Verdict("DLPackDeviceError")
    dtype = DTYPES.get((ex["code"], ex["bits"], ex["lanes"]))
    if dtype is None:
        return Verdict("DTypeError")
    ndim, shape, item = ex["ndim"], ex["shape"], dtype.itemsize
    if not 0 <= ndim <= MAX_NDIM or (ndim > 0 and shape is None) or any(d < 0 for d in shape or []):
        return Verdict("InvalidArgumentError")
    shape = shape or []
    if math.prod(max(d, 1) for d in shape) * item > ISIZE_MAX:
        return Verdict("InvalidArgumentError")  # too large for strides, even when empty
    numel = math.prod(shape)
    if numel == 0:
        return Verdict(numel=0, item=item)
    strides = ex["strides"] or [math.prod(shape[i + 1 :]) for i in range(ndim)]
    reaches = [(d - 1) * s for d, s in zip(shape, strides)]
    low = sum(r for r in reaches if r < 0) * item
    high = (sum(r for r in reaches if r > 0) + 1) * item
    if high - low > ISIZE_MAX or ex["data"] is None or ex["byte_offset"] > ISIZE_MAX:
        return Verdict("InvalidArgumentError")
    address = BUFFER.ctypes.data + ex["data"] + ex["byte_offset"]
    if address + low < 1 or address + high > USIZE_MAX:
        return Verdict("InvalidArgumentError")
    return Verdict(numel=numel, low=low, high=high, item=item)


def declared_bytes(ex: dict[str, Any]) -> Optional[tuple[int, int]]:
    """The byte range (relative to the buffer) that the capsule declares, if its pointers
    are honest (shape array as long as ndim, data not NULL) and its shape is not negative."""
    ndim, shape, strides = ex["ndim"], ex["shape"], ex["strides"]
    if not 0 <= ndim <= MAX_NDIM or (ndim > 0 and shape is None):
        return None
    shape = shape or []
    if any(d < 0 for d in shape):
        return None
    if math.prod(shape) == 0:
        return (0, 0)
    if ex["data"] is None:
        return None
    item = max(1, math.ceil(ex["bits"] * ex["lanes"] / 8))
    strides = strides or [math.prod(shape[i + 1 :]) for i in range(ndim)]
    reaches = [(d - 1) * s for d, s in zip(shape, strides)]
    start = ex["data"] + ex["byte_offset"]
    return start + sum(r for r in reaches if r < 0) * item, start + (sum(r for r in reaches if r > 0) + 1) * item


def expected_values(ex: dict[str, Any], verdict: Verdict) -> np.ndarray:
    """The elements the capsule names, read from the buffer in row-major order."""
    shape = ex["shape"] or []
    strides = ex["strides"] or [math.prod(shape[i + 1 :]) for i in range(len(shape))]
    offsets = [0]
    for d, s in zip(shape, strides):
        offsets = [o + i * s for o in offsets for i in range(d)]
    dtype = DTYPES[(ex["code"], ex["bits"], ex["lanes"])]
    starts = ex["data"] + ex["byte_offset"] + np.array(offsets, dtype=np.int64) * verdict.item
    raw = BUFFER[starts[:, None] + np.arange(verdict.item)]
    if dtype == np.bool_:
        return raw[:, 0] != 0
    return raw.copy().view(dtype).reshape(-1)


class Child:
    """A capped child process that imports capsules described as JSON, one per line."""

    SOURCE = CHILD_PRELUDE + (
        "import gc, json\n"
        "import rustgrad\n"
        "buffer = fuzz_buffer()\n"
        "for line in sys.stdin:\n"
        "    capsule, address = capsule_for_example(json.loads(line), buffer)\n"
        "    try:\n"
        "        rustgrad.from_dlpack(capsule)\n"
        "        outcome = ['no error', '']\n"
        "    except Exception as error:\n"
        "        outcome = [type(error).__name__, str(error)]\n"
        "    del capsule\n"
        "    gc.collect()\n"
        "    print(json.dumps(outcome + [deleter_calls[address]]), flush=True)\n"
    )

    def __init__(self) -> None:
        self.process: Optional[subprocess.Popen] = None

    def run(self, ex: dict[str, Any]) -> tuple[str, str, int]:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                [sys.executable, "-c", self.SOURCE],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=child_env(),
                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (CHILD_ADDRESS_SPACE, CHILD_ADDRESS_SPACE)),
            )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(ex) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            code = self.process.wait(timeout=30)
            stderr = self.process.stderr.read()[-3000:] if self.process.stderr else ""
            self.process = None
            pytest.fail(f"the import crashed its process (return code {code}):\n{stderr}")
        name, message, calls = json.loads(line)
        return name, message, calls

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def child():
    worker = Child()
    yield worker
    worker.close()


def check_error(name: str, message: str, expected: str) -> None:
    assert name == expected, f"expected {expected}, got {name}: {message}"
    cls = getattr(errors, name)
    assert issubclass(cls, errors.RustgradError)
    builtin = {
        "InvalidArgumentError": ValueError,
        "DTypeError": TypeError,
        "DLPackError": BufferError,
        "DLPackDeviceError": BufferError,
        "OutOfMemoryError": MemoryError,
    }[name]
    assert issubclass(cls, builtin)


@settings(
    max_examples=max(200, settings.default.max_examples),
    deadline=None,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)
@given(ex=examples())
@example(ex=capsule(shape=[-1]))
@example(ex=capsule(shape=[2**62, 4]))
@example(ex=capsule(shape=[2**62], strides=[2]))
@example(ex=capsule(data=None, shape=[3]))
@example(ex=capsule(shape=[2**40], strides=[0]))
@example(ex=capsule(shape=[3, 2], strides=[-2, 1], byte_offset=40, version=(1, 0), flags=1))
def test_from_dlpack_of_any_capsule_raises_or_reads_only_declared_elements(child, ex):
    verdict = model(ex)
    declared = declared_bytes(ex)
    inside = declared is not None and (declared == (0, 0) or 0 <= declared[0] <= declared[1] <= FUZZ_BUFFER_BYTES)
    copied_bytes = verdict.numel * verdict.item
    note(f"verdict: {verdict.error or 'valid'}; declared bytes {declared}; inside the buffer: {inside}")
    event(f"{'inside' if inside else 'outside'}: {verdict.error or 'valid'}")
    if inside and copied_bytes <= SMALL_BYTES:
        import_in_this_process(ex, verdict)
    elif verdict.error is not None:
        name, message, calls = child.run(ex)
        check_error(name, message, verdict.error)
        assert calls == 1
    elif inside and copied_bytes >= BIG_BYTES:
        name, message, calls = child.run(ex)
        check_error(name, message, "OutOfMemoryError")
        assert calls == 1
    else:
        assume(False)  # valid, but declares memory we did not allocate


def import_in_this_process(ex: dict[str, Any], verdict: Verdict) -> None:
    capsule, address = capsule_for_example(ex, BUFFER)
    try:
        tensor = rustgrad.from_dlpack(capsule)
    except errors.RustgradError as error:
        assert verdict.error is not None, f"a valid capsule was refused: {error!r}"
        check_error(type(error).__name__, str(error), verdict.error)
    else:
        assert verdict.error is None, f"expected {verdict.error}, but the import succeeded"
        assert tensor.shape == tuple(ex["shape"] or ())
        got = tensor.reshape(-1).numpy() if verdict.numel else np.zeros(0)
        want = expected_values(ex, verdict) if verdict.numel else np.zeros(0)
        if want.dtype == np.bool_:
            assert got.tolist() == want.tolist()
        else:
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.view(f"u{want.itemsize}"), want.view(f"u{want.itemsize}"))
        del tensor, got
    del capsule
    gc.collect()
    assert deleter_calls[address] == 1, "the consumed capsule's deleter must run exactly once"
