"""DLPack hardening: hostile capsules raise instead of crashing, exceptions survive a
capsule's destruction, versioned capsules are read, and `__dlpack__` checks its keywords.

Capsules are built by hand with ctypes (tests/_dlpack_capsules.py). Cases that crashed
the process before they were fixed run in a child process under an address-space cap,
so that a crash fails the test instead of killing pytest.
"""

from __future__ import annotations

import gc
import re
import resource
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _child import child_env
from _dlpack_capsules import (
    CHILD_PRELUDE,
    IS_COPIED,
    READ_ONLY,
    Producer,
    capsule_over,
    deleter_calls,
    versioned_flags,
)

import rustgrad
from rustgrad import errors
from rustgrad.errors import (
    ArgumentTypeError,
    DeviceError,
    DLPackDeviceError,
    DLPackError,
    InvalidArgumentError,
    RustgradError,
)

ADDRESS_SPACE_CAP = 2 << 30


def _cap_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_CAP, ADDRESS_SPACE_CAP))


def import_in_child(make: str) -> tuple[str, str, int]:
    """Runs `rustgrad.from_dlpack(<make>[0])` in a capped child process.

    Returns the exception's class name ("no error" if none), its message, and how often
    the capsule's deleter ran once the child let go of everything.
    """
    source = CHILD_PRELUDE + textwrap.dedent(
        f"""
        import gc
        import numpy as np
        import rustgrad
        capsule, address = {make}
        try:
            tensor = rustgrad.from_dlpack(capsule)
            outcome = ["no error", ""]
            del tensor
        except Exception as error:
            outcome = [type(error).__name__, str(error)]
        del capsule
        gc.collect()
        print(outcome[0]); print(outcome[1]); print(deleter_calls[address])
        """
    )
    env = child_env()
    result = subprocess.run(
        [sys.executable, "-c", source],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        preexec_fn=_cap_address_space,
    )
    assert result.returncode == 0, f"the child died (return code {result.returncode}):\n{result.stderr[-3000:]}"
    name, message, calls = result.stdout.splitlines()[-3:]
    return name, message, int(calls)


F64_8 = "np.arange(8.0)"
F32_8 = "np.arange(8, dtype=np.float32)"
BOOL_8 = "np.ones(8, dtype=bool)"

HOSTILE_FIELDS = {
    "a_negative_dimension": (
        f"capsule_over({F64_8}, shape=[-1])",
        "InvalidArgumentError",
        r"dimension 0 of shape \[-1\] is negative",
    ),
    "a_shape_whose_byte_size_overflows": (
        f"capsule_over({F64_8}, shape=[2**62, 4])",
        "InvalidArgumentError",
        r"shape \[4611686018427387904, 4\] of float64 needs more bytes than any buffer can hold",
    ),
    "a_huge_shape_with_strides": (
        f"capsule_over({F64_8}, shape=[2**62], strides=[2])",
        "InvalidArgumentError",
        r"shape \[4611686018427387904\] of float64 needs more bytes",
    ),
    "strides_that_reach_past_any_buffer": (
        f"capsule_over({F32_8}, shape=[2**60], strides=[3])",
        "InvalidArgumentError",
        r"shape \[1152921504606846976\] with strides \[3\] reaches \d+ bytes, more than any buffer can hold",
    ),
    "a_huge_negative_stride": (
        f"capsule_over({F64_8}, shape=[3], strides=[-2**62])",
        "InvalidArgumentError",
        r"with strides \[-4611686018427387904\] reaches \d+ bytes",
    ),
    "strides_that_wrap_below_address_zero": (
        f"capsule_over({BOOL_8}, shape=[2], strides=[-2**62])",
        "InvalidArgumentError",
        r"leaves the address space",
    ),
    "null_data_with_elements": (
        "make_capsule(data=None, shape=[3])",
        "InvalidArgumentError",
        r"the data pointer is NULL for a tensor of 3 elements",
    ),
    "a_null_shape_pointer": (
        f"capsule_over({F64_8}, shape=None, ndim=2)",
        "InvalidArgumentError",
        r"the shape pointer is NULL for a tensor of rank 2",
    ),
    "a_negative_rank": (
        f"capsule_over({F64_8}, shape=[2], ndim=-1)",
        "InvalidArgumentError",
        r"ndim is -1, outside 0..=1024",
    ),
    "a_huge_rank": (
        f"capsule_over({F64_8}, shape=[2], ndim=2**31 - 1)",
        "InvalidArgumentError",
        r"ndim is 2147483647, outside 0..=1024",
    ),
    "a_byte_offset_past_the_address_space": (
        f"capsule_over({F64_8}, shape=[2], byte_offset=2**64 - 1)",
        "InvalidArgumentError",
        r"byte_offset 18446744073709551615 is larger than any buffer",
    ),
    "a_versioned_capsule_with_a_negative_dimension": (
        f"capsule_over({F64_8}, shape=[4, -3], version=(1, 0))",
        "InvalidArgumentError",
        r"dimension 1 of shape \[4, -3\] is negative",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_FIELDS))
def test_a_hostile_capsule_raises_value_error_and_releases_it(case):
    make, expected, message = HOSTILE_FIELDS[case]
    name, text, calls = import_in_child(make)
    assert name == expected, f"{name}: {text}"
    assert issubclass(getattr(errors, name), ValueError)
    assert re.search(message, text), text
    assert "the DLPack producer sent an invalid tensor" in text
    assert calls == 1, "the consumed capsule's deleter must run exactly once"


def test_a_broadcast_capsule_too_large_to_copy_raises_out_of_memory():
    name, text, calls = import_in_child(f"capsule_over({F64_8}, shape=[2**40], strides=[0])")
    assert name == "OutOfMemoryError", f"{name}: {text}"
    assert "cannot allocate" in text
    assert calls == 1


def test_a_capsule_on_another_device_raises_device_error():
    capsule, address = capsule_over(np.arange(3.0), shape=[3], device=(2, 0))
    with pytest.raises(DLPackDeviceError, match=r"DLPack device \(2, 0\) \(CUDA\); rustgrad runs on the CPU"):
        rustgrad.from_dlpack(capsule)
    assert issubclass(DLPackDeviceError, BufferError) and issubclass(DLPackDeviceError, DeviceError)
    gc.collect()
    assert deleter_calls[address] == 1
    # Pinned host memory is CPU memory (numpy accepts it too).
    capsule, _ = capsule_over(np.arange(3.0), shape=[3], device=(3, 0))
    assert rustgrad.from_dlpack(capsule).tolist() == [0.0, 1.0, 2.0]


def test_from_dlpack_reads_a_hand_made_versioned_capsule_and_shares_its_memory():
    array = np.arange(4.0)
    capsule, address = capsule_over(array, shape=[2, 2], version=(1, 0))
    t = rustgrad.from_dlpack(capsule)
    array[3] = -1.0
    assert t.tolist() == [[0.0, 1.0], [2.0, -1.0]]
    del t
    gc.collect()
    assert deleter_calls[address] == 1


def test_a_newer_dlpack_major_version_raises_buffer_error_and_releases_the_tensor():
    capsule, address = capsule_over(np.arange(4.0), shape=[4], version=(2, 0))
    with pytest.raises(DLPackError, match=r"uses DLPack 2.0; rustgrad reads DLPack 1.x"):
        rustgrad.from_dlpack(capsule)
    assert issubclass(DLPackError, BufferError) and issubclass(DLPackError, RustgradError)
    gc.collect()
    assert deleter_calls[address] == 1


def test_flag_bits_the_declared_version_does_not_define_raise_value_error():
    capsule, _ = capsule_over(np.arange(4.0), shape=[4], version=(1, 0), flags=1 << 5)
    with pytest.raises(InvalidArgumentError, match=r"sets flag bits 0x20, which DLPack 1.0 does not define"):
        rustgrad.from_dlpack(capsule)
    # A newer minor version may define more flags; they do not change how the tensor reads.
    capsule, _ = capsule_over(np.arange(4.0), shape=[4], version=(1, 9), flags=1 << 5)
    assert rustgrad.from_dlpack(capsule).tolist() == [0.0, 1.0, 2.0, 3.0]


def test_a_read_only_capsule_is_copied_not_shared():
    array = np.arange(4.0)
    capsule, _ = capsule_over(array, shape=[4], version=(1, 0), flags=READ_ONLY)
    t = rustgrad.from_dlpack(capsule)
    t.add_(1.0)
    array[0] = 9.0
    assert array.tolist() == [9.0, 1.0, 2.0, 3.0]
    assert t.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_from_dlpack_copies_a_read_only_numpy_array():
    array = np.arange(3.0)
    array.flags.writeable = False
    t = rustgrad.from_dlpack(array)
    t.mul_(2.0)
    assert t.tolist() == [0.0, 2.0, 4.0]
    assert array.tolist() == [0.0, 1.0, 2.0]


def test_from_dlpack_asks_for_a_versioned_capsule_and_falls_back_for_old_producers():
    array = np.arange(3.0)
    new = Producer(capsule_over(array, shape=[3], version=(1, 0))[0])
    assert rustgrad.from_dlpack(new).tolist() == [0.0, 1.0, 2.0]
    assert new.calls == [{"max_version": (1, 0)}]
    old = Producer(capsule_over(array, shape=[3])[0], accepts_max_version=False)
    assert rustgrad.from_dlpack(old).tolist() == [0.0, 1.0, 2.0]
    assert old.calls == [{"max_version": (1, 0)}, {}]


def test_a_consumed_capsule_cannot_be_imported_again():
    capsule = rustgrad.arange(3.0).__dlpack__(max_version=(1, 0))
    assert rustgrad.from_dlpack(capsule).tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(InvalidArgumentError, match="this DLPack capsule was already consumed"):
        rustgrad.from_dlpack(capsule)


def test_from_dlpack_of_something_that_is_not_a_capsule_raises_type_error():
    with pytest.raises(ArgumentTypeError, match="expected an object with __dlpack__ or a DLPack capsule, got int"):
        rustgrad.from_dlpack(5)


# --- exceptions in flight survive a capsule's destruction ---------------------------------


def test_int_of_a_capsule_raises_type_error_not_system_error():
    with pytest.raises(TypeError, match=r"int\(\) argument must be"):
        int(rustgrad.ones(2).__dlpack__())


def test_from_dlpack_of_a_versioned_tensor_capsule_shares_memory():
    t = rustgrad.arange(3.0)
    u = rustgrad.from_dlpack(t.__dlpack__(max_version=(1, 0)))
    u[0] = 7.0
    assert t.tolist() == [7.0, 1.0, 2.0]


def test_numpy_refusing_a_rank_72_tensor_raises_numpy_error_not_system_error():
    t = rustgrad.ones(*[1] * 72)
    with pytest.raises(RuntimeError, match="maxdims"):
        np.from_dlpack(t)
    # The refused capsule was released, not leaked into a broken state.
    assert t.sum().item() == 1.0


# --- __dlpack__ checks its keywords -------------------------------------------------------


def test_dlpack_export_to_another_device_raises_buffer_error():
    t = rustgrad.ones(2)
    with pytest.raises(DLPackDeviceError, match=r"cannot export to DLPack device \(2, 0\) \(CUDA\)") as info:
        t.__dlpack__(dl_device=(2, 0))
    assert isinstance(info.value, BufferError) and isinstance(info.value, DeviceError)
    assert np.from_dlpack(Producer(t.__dlpack__(dl_device=(1, 0)))).tolist() == [1.0, 1.0]
    with pytest.raises(ArgumentTypeError, match=r"dl_device must be a \(device_type, device_id\) tuple, got 'cuda'"):
        t.__dlpack__(dl_device="cuda")


@pytest.mark.parametrize("bad", ["bad", (1,), 1.0, ("1", "0"), [1, 0]])
def test_a_max_version_that_is_not_a_pair_of_ints_raises_type_error(bad):
    with pytest.raises(ArgumentTypeError, match=r"max_version must be a \(major, minor\) tuple of ints"):
        rustgrad.ones(2).__dlpack__(max_version=bad)


def test_max_version_chooses_the_capsule_kind():
    t = rustgrad.ones(2)
    assert '"dltensor_versioned"' in repr(t.__dlpack__(max_version=(1, 0)))
    assert '"dltensor_versioned"' in repr(t.__dlpack__(max_version=(1, 7)))
    assert '"dltensor"' in repr(t.__dlpack__(max_version=(0, 8)))
    assert '"dltensor"' in repr(t.__dlpack__())
    with pytest.raises(InvalidArgumentError, match=r"max_version \(-1, 0\) has a negative number"):
        t.__dlpack__(max_version=(-1, 0))


@pytest.mark.parametrize("bad", ["yes", 1, 0.0])
def test_a_copy_flag_that_is_not_a_bool_raises_type_error(bad):
    with pytest.raises(ArgumentTypeError, match="copy must be True, False or None"):
        rustgrad.ones(2).__dlpack__(copy=bad)


def test_copy_true_exports_a_copy_marked_as_copied():
    t = rustgrad.arange(3.0)
    capsule = t.__dlpack__(max_version=(1, 0), copy=True)
    assert versioned_flags(capsule) & IS_COPIED
    view = np.from_dlpack(Producer(capsule))
    view[0] = 5.0
    assert t.tolist() == [0.0, 1.0, 2.0]
    shared = t.__dlpack__(max_version=(1, 0), copy=False)
    assert versioned_flags(shared) == 0
    np.from_dlpack(Producer(shared))[0] = 5.0
    assert t.tolist() == [5.0, 1.0, 2.0]


def test_a_stream_for_a_cpu_tensor_raises_value_error():
    t = rustgrad.ones(2)
    with pytest.raises(InvalidArgumentError, match="stream must be None for a CPU tensor"):
        t.__dlpack__(stream=1)
    assert np.from_dlpack(Producer(t.__dlpack__(stream=None))).tolist() == [1.0, 1.0]
