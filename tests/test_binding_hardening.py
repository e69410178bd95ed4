"""The binding layer under hostile input: operators with operands they do not
understand, numpy export and the version counter, conversions to Python numbers,
argument errors, misleading messages, the legacy constructor, pickling, and a
reference cycle through a custom Function's ctx."""

from __future__ import annotations

import copy
import gc
import operator
import pickle
import pickletools
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path

import numpy as np
import pytest

import rustgrad
import rustgrad.static as tf
from rustgrad import _rustgrad, _tensor_protocols, errors
from rustgrad.autograd import Function

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _run(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout
    )


# ----------------------------------------------------------- operators


UNSUPPORTED_OPERATIONS = {
    "add_str": lambda x: x + "a",
    "str_radd": lambda x: "a" + x,
    "sub_object": lambda x: x - object(),
    "mul_dict": lambda x: x * {},
    "rmul_dict": lambda x: {} * x,
    "truediv_str": lambda x: x / "a",
    "pow_str": lambda x: x ** "a",
    "matmul_int": lambda x: x @ 2,
    "rmatmul_int": lambda x: 2 @ x,
    "matmul_float": lambda x: x @ 2.0,
    "lt_str": lambda x: x < "a",
    "ge_none": lambda x: x >= None,
    "pow_with_modulo": lambda x: pow(x, 2, 3),
}


@pytest.mark.parametrize("operation", UNSUPPORTED_OPERATIONS.values(), ids=UNSUPPORTED_OPERATIONS.keys())
def test_an_operator_with_an_unsupported_operand_raises_type_error(operation):
    with pytest.raises(TypeError, match="unsupported operand|not supported between|can only concatenate"):
        operation(rustgrad.ones(3))


@pytest.mark.parametrize("symbol", ["+=", "-=", "*=", "/="])
def test_an_in_place_operator_with_an_unsupported_operand_raises_type_error_and_changes_nothing(symbol):
    x = rustgrad.ones(3)
    scope = {"x": x}
    with pytest.raises(TypeError, match=rf"unsupported operand type\(s\) for {re_escape(symbol)}"):
        exec(f"x {symbol} 'a'", scope)
    assert scope["x"] is x
    assert x.tolist() == [1.0, 1.0, 1.0]
    assert x._version == 0


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


COMPLEX_OPERATIONS = {
    "add": lambda x: x + 1j,
    "radd": lambda x: 1j + x,
    "mul_numpy_complex64": lambda x: x * np.complex64(1j),
    "sub_numpy_complex128": lambda x: x - np.complex128(2j),
    "compare": lambda x: x < 1j,
    "method": lambda x: x.add(1j),
}


@pytest.mark.parametrize("operation", COMPLEX_OPERATIONS.values(), ids=COMPLEX_OPERATIONS.keys())
def test_a_complex_operand_raises_an_argument_type_error(operation):
    with pytest.raises(errors.ArgumentTypeError, match="complex numbers are not supported") as info:
        operation(rustgrad.ones(3))
    assert isinstance(info.value, TypeError)


def test_an_in_place_operator_with_a_complex_operand_raises_and_changes_nothing():
    x = rustgrad.ones(3)
    with pytest.raises(errors.ArgumentTypeError, match="complex numbers are not supported"):
        x += 1j
    assert x.tolist() == [1.0, 1.0, 1.0]


def test_comparing_with_none_is_false_for_equal_and_true_for_not_equal():
    x = rustgrad.ones(3)
    assert (x == None) is False  # noqa: E711
    assert (x != None) is True  # noqa: E711
    assert (x == "a") is False


class _Reflecting:
    """An operand rustgrad does not understand, with reflected operators of its own."""

    def __radd__(self, other):
        return "radd"

    def __rmatmul__(self, other):
        return "rmatmul"

    def __gt__(self, other):
        return "reflected lt"

    def __rpow__(self, other):
        return "rpow"


def test_an_operand_it_does_not_understand_gets_to_run_its_reflected_operator():
    _supported_operands_still_work_on_both_sides()
    x = rustgrad.ones(3)
    assert x + _Reflecting() == "radd"
    assert x @ _Reflecting() == "rmatmul"
    assert (x < _Reflecting()) == "reflected lt"
    assert x ** _Reflecting() == "rpow"
    y = x
    y += _Reflecting()
    assert y == "radd"
    assert x.tolist() == [1.0, 1.0, 1.0]


def test_adding_a_graph_tensor_defers_to_the_graph_tensor():
    tf.reset_default_graph()
    c = tf.constant(np.full(3, 2.0, dtype=np.float32))
    total = rustgrad.ones(3) + c
    assert isinstance(total, tf.Tensor)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(total), [3.0, 3.0, 3.0])
    tf.reset_default_graph()


@pytest.mark.parametrize("method", ["add", "sub", "mul", "div", "maximum", "minimum", "pow"])
def test_a_binary_method_with_an_unsupported_operand_names_the_op_and_the_type(method):
    with pytest.raises(errors.ArgumentTypeError, match=rf"{method}: .*got str") as info:
        getattr(rustgrad.ones(3), method)("a")
    assert isinstance(info.value, TypeError)


def _supported_operands_still_work_on_both_sides():
    x = rustgrad.tensor([1.0, 2.0])
    assert (x + 1).tolist() == [2.0, 3.0]
    assert (1 - x).tolist() == [0.0, -1.0]
    assert (x * np.float32(2)).tolist() == [2.0, 4.0]
    assert (np.array([1.0, 1.0]) + x).tolist() == [2.0, 3.0]
    assert (x @ [1.0, 1.0]).item() == 3.0
    assert (x == 1.0).tolist() == [True, False]
    x += [1.0, 1.0]
    assert x.tolist() == [2.0, 3.0]


# ----------------------------------------------------------- numpy export


def test_np_asarray_refuses_a_tensor_that_requires_grad_as_numpy_does():
    w = rustgrad.ones(3, requires_grad=True)
    for export in (np.asarray, np.array, lambda t: t.numpy()):
        with pytest.raises(errors.GradientError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
            export(w)
    view = np.asarray(w.detach())  # the detached tensor still shares its memory
    view[0] = 7.0
    assert w[0].item() == 7.0


def test_a_write_through_np_asarray_cannot_corrupt_a_saved_leaf():
    w = rustgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    loss = (w * w).sum()
    with pytest.raises(errors.GradientError):
        np.asarray(w)[:] = 5.0
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 4.0, 6.0])


@pytest.mark.parametrize(
    "tensor, dtype",
    [(rustgrad.tensor([True, False]), None), (rustgrad.ones(3), np.float64), (rustgrad.ones(3), np.bool_)],
    ids=["bool_tensor", "float32_as_float64", "float32_as_bool"],
)
def test_np_asarray_with_copy_false_raises_value_error_when_a_copy_is_needed(tensor, dtype):
    with pytest.raises(errors.InvalidArgumentError, match="Unable to avoid copy") as info:
        np.asarray(tensor, dtype=dtype, copy=False)
    assert isinstance(info.value, ValueError)
    _np_asarray_with_copy_false_or_a_matching_dtype_shares_memory()


def _np_asarray_with_copy_false_or_a_matching_dtype_shares_memory():
    t = rustgrad.ones(2, 3).t()
    for array in (np.asarray(t, copy=False), np.asarray(t, dtype=np.float32, copy=False), np.asarray(t)):
        assert array.shape == (3, 2)
        array[0, 1] = 9.0
        assert t[0, 1].item() == 9.0
    copied = np.array(t, copy=True)
    copied[0, 0] = -1.0
    assert t[0, 0].item() == 1.0


# ----------------------------------------------------------- bool memory


def test_the_docs_say_bool_arrays_are_copied_not_shared():
    text = (DOCS / "eager.md").read_text(encoding="utf-8")
    assert "Bool arrays and tensors are copied both ways" in text
    assert "float64 (or bool)" not in text


def test_a_bool_array_holding_bytes_other_than_0_and_1_reads_them_as_true():
    a = np.frombuffer(b"\x02\x00\x01\xff", dtype=np.bool_)
    for t in (rustgrad.tensor(a), rustgrad.from_numpy(a)):
        assert t.float().tolist() == [1.0, 0.0, 1.0, 1.0]
        assert (t == rustgrad.tensor([True, False, True, True])).tolist() == [True] * 4
    # from_numpy copies bool arrays, as the docs say
    b = np.array([True, False])
    t = rustgrad.from_numpy(b)
    b[1] = True
    assert t.tolist() == [True, False]


# ----------------------------------------------------------- Python numbers


def test_int_of_nan_raises_value_error():
    with pytest.raises(errors.InvalidArgumentError, match="cannot convert float NaN to integer") as info:
        int(rustgrad.tensor(float("nan")))
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("value", [float("inf"), float("-inf")])
def test_int_of_infinity_raises_overflow_error(value):
    with pytest.raises(errors.NumericOverflowError, match="cannot convert float infinity to integer") as info:
        int(rustgrad.tensor(value, dtype=rustgrad.float64))
    assert isinstance(info.value, OverflowError)
    assert isinstance(info.value, errors.RustgradError)


@pytest.mark.parametrize("value", [1e30, -3e25, 2.0**63])
def test_int_of_a_value_beyond_64_bits_is_exact_as_in_python(value):
    assert int(rustgrad.tensor(value, dtype=rustgrad.float64)) == int(value)
    _other_conversions_to_python_numbers()


def _other_conversions_to_python_numbers():
    for value in (-2.7, 2.7, 0.0):
        assert int(rustgrad.tensor(value, dtype=rustgrad.float64)) == int(value)
    assert int(rustgrad.tensor(True)) == 1
    assert bool(rustgrad.tensor(float("nan"))) is True
    assert float(rustgrad.tensor([2.5])) == 2.5
    for convert in (int, float, bool):
        with pytest.raises(errors.ShapeError):
            convert(rustgrad.ones(2))
        with pytest.raises(errors.ShapeError):
            convert(rustgrad.ones(0))
    with pytest.raises(TypeError):
        operator.index(rustgrad.tensor(3.0))


# ----------------------------------------------------------- argument errors


ARGUMENT_TYPE_ERRORS = {
    "mm_list": (lambda x: x.mm([[1.0]]), "mm: argument 'other' must be a Tensor, got list"),
    "matmul_list": (lambda x: x.matmul([[1.0]]), "matmul: argument 'other' must be a Tensor"),
    "fn_matmul": (lambda x: rustgrad.matmul(x, 3), "matmul: argument 'other' must be a Tensor, got int"),
    "transpose_float": (lambda x: x.transpose(0.5, 1), "transpose: argument 'dim0' must be an int, got float"),
    "unsqueeze_str": (lambda x: x.unsqueeze("a"), "unsqueeze: argument 'dim' must be an int"),
    "squeeze_float": (lambda x: x.squeeze(1.5), "squeeze: argument 'dim' must be an int"),
    "size_str": (lambda x: x.size("a"), "size: argument 'dim' must be an int"),
    "clamp_str": (lambda x: x.clamp(min="a"), "clamp: argument 'min' must be a number"),
    "clip_list": (lambda x: x.clip(max=[1]), "clip: argument 'max' must be a number"),
    "requires_grad_int": (lambda x: x.requires_grad_(1), "requires_grad_: argument 'requires_grad' must be a bool"),
    "requires_grad_setter": (lambda x: setattr(x, "requires_grad", "yes"), "argument 'value' must be a bool"),
    "grad_setter": (lambda x: setattr(x, "grad", 3), "assigned grad expected to be a Tensor or None"),
    "backward_retain": (
        lambda x: (x * 1).sum().backward(retain_graph="yes"),
        "backward: argument 'retain_graph' must be a bool",
    ),
    "backward_create": (lambda x: x.sum().backward(create_graph=1), "backward: argument 'create_graph' must be"),
    "grad_inputs": (
        lambda x: rustgrad.autograd.grad(x.sum(), ["a"]),
        "grad: argument 'inputs' must be a Tensor or a sequence of Tensors, got str",
    ),
    "grad_allow_unused": (
        lambda x: rustgrad.autograd.grad(x.sum(), x, allow_unused=1),
        "grad: argument 'allow_unused' must be a bool",
    ),
    "autograd_backward": (lambda x: rustgrad.autograd.backward(5), "backward: argument 'tensors' must be a Tensor"),
    "array_copy": (lambda x: x.detach().__array__(copy="no"), "__array__: argument 'copy' must be a bool"),
    "device_index": (lambda x: rustgrad.device("cpu", "a"), "device: argument 'index' must be an int"),
    "device_kind": (lambda x: rustgrad.device(3), "device: expected a device string"),
    "zeros_requires_grad": (lambda x: rustgrad.zeros(2, requires_grad=1), "requires_grad must be a bool, got int"),
    "randn_requires_grad": (lambda x: rustgrad.randn(2, requires_grad=None), "requires_grad must be a bool"),
    "tensor_requires_grad": (lambda x: rustgrad.tensor([1.0], requires_grad="y"), "requires_grad must be a bool"),
    "randn_generator": (lambda x: rustgrad.randn(2, generator="a"), "randn: argument 'generator' must be an int"),
    "manual_seed_float": (lambda x: rustgrad.manual_seed(1.5), "manual_seed: argument 'seed' must be an int"),
}


@pytest.mark.parametrize(
    "call, message", ARGUMENT_TYPE_ERRORS.values(), ids=ARGUMENT_TYPE_ERRORS.keys()
)
def test_an_argument_of_the_wrong_type_raises_an_argument_type_error_naming_the_op(call, message):
    x = rustgrad.ones(2, 3, requires_grad=True)
    with pytest.raises(errors.ArgumentTypeError) as info:
        call(x)
    assert isinstance(info.value, TypeError)
    assert message in str(info.value)


@pytest.mark.parametrize(
    "call",
    [lambda x: x.transpose(2**70, 0), lambda x: x.size(-(2**64)), lambda x: x.unsqueeze(2**63)],
    ids=["transpose", "size", "unsqueeze"],
)
def test_an_int_argument_too_large_raises_a_numeric_overflow_error(call):
    with pytest.raises(errors.NumericOverflowError, match="does not fit in a 64-bit integer") as info:
        call(rustgrad.ones(2, 3))
    assert isinstance(info.value, OverflowError)


def test_a_size_of_2_pow_70_raises_out_of_memory_naming_the_size():
    with pytest.raises(errors.OutOfMemoryError, match=r"shape \[1180591620717411303424\]"):
        rustgrad.zeros(2**70)
    with pytest.raises(errors.OutOfMemoryError, match=r"shape \[3, 18446744073709551616\]"):
        rustgrad.randn(3, 2**64)
    with pytest.raises(errors.ShapeError, match="negative dimension"):
        rustgrad.ones(-(2**70))


def test_manual_seed_accepts_torchs_range_and_wraps_negative_seeds():
    rustgrad.manual_seed(-1)
    wrapped = rustgrad.randn(4).tolist()
    rustgrad.manual_seed(2**64 - 1)
    assert rustgrad.randn(4).tolist() == wrapped
    rustgrad.manual_seed(-(2**63))
    rustgrad.manual_seed(np.int64(7))
    assert rustgrad.randn(2, generator=-1).tolist() == rustgrad.randn(2, generator=2**64 - 1).tolist()


@pytest.mark.parametrize("seed", [2**64, -(2**63) - 1, 2**100])
def test_manual_seed_out_of_range_raises_a_value_error_naming_the_range(seed):
    with pytest.raises(errors.InvalidArgumentError, match=r"\[-2\*\*63, 2\*\*64\)") as info:
        rustgrad.manual_seed(seed)
    assert isinstance(info.value, ValueError)


# ----------------------------------------------------------- messages


def test_to_an_unknown_dtype_name_raises_dtype_error_listing_the_dtypes():
    x = rustgrad.ones(2)
    with pytest.raises(errors.DTypeError, match="float17.*float32, float64, int64, int32, uint8 and bool"):
        x.to("float17")
    with pytest.raises(errors.DTypeError, match="float32, float64, int64, int32, uint8 and bool"):
        x.to(dtype="int8")
    with pytest.raises(errors.DeviceError, match="'cuda:0' is not available"):
        x.to("cuda:0")
    with pytest.raises(errors.DeviceError, match="Invalid device string"):
        x.to("cpu:abc")
    assert x.to("float64").dtype is rustgrad.float64
    assert x.to("cpu", "double").dtype is rustgrad.float64


def test_from_numpy_of_a_big_endian_array_converts_it():
    big = np.arange(3, dtype=">f4")
    t = rustgrad.from_numpy(big)
    assert t.dtype is rustgrad.float32
    assert t.tolist() == [0.0, 1.0, 2.0]
    assert rustgrad.tensor(np.arange(2, dtype=">f8")).tolist() == [0.0, 1.0]


def test_the_core_tells_a_big_endian_array_apart_from_a_wrong_dtype():
    with pytest.raises(errors.DTypeError, match=r"big-endian.*newbyteorder") as info:
        _rustgrad._from_numpy(np.arange(3, dtype=">f4"), False)
    assert "convert it to float32" not in str(info.value)
    with pytest.raises(errors.DTypeError, match="convert it to one of float32, float64, int64, int32, uint8 and bool"):
        _rustgrad._from_numpy(np.arange(3, dtype=np.int16), False)


def test_randn_out_of_memory_names_the_requested_dtype():
    for dtype in (rustgrad.float32, rustgrad.bool):
        with pytest.raises(errors.OutOfMemoryError, match=f"{dtype.name} tensor"):
            rustgrad.rand(2**31, 2**31, dtype=dtype)


def test_randn_of_float32_needs_no_float64_buffer():
    # Under an address-space cap that fits the float32 tensor but not a float64 one of the same
    # shape, randn must succeed (it used to fill a float64 buffer first).
    result = _run(
        """
        import resource
        import rustgrad
        n = 40_000_000
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * resource.getpagesize()
        cap = used + 4 * n + 100 * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        try:
            rustgrad.zeros(n, dtype=rustgrad.float64)
        except rustgrad.errors.OutOfMemoryError:
            print("float64 does not fit")
        t = rustgrad.randn(n)
        print(t.dtype, t.shape)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["float64 does not fit", "rustgrad.float32 (40000000,)"]


@pytest.mark.parametrize("text", ["cpu:abc", "cpu:", ":0", "cpu:1:2", "cpu: 1", ""])
def test_an_invalid_device_string_raises_device_error(text):
    with pytest.raises(errors.DeviceError, match="Invalid device string") as info:
        rustgrad.device(text)
    assert isinstance(info.value, RuntimeError)


def test_device_indices():
    assert rustgrad.device("cpu:1").index == 1
    assert rustgrad.device("cpu", 2).index == 2
    with pytest.raises(errors.DeviceError, match="must not include an index"):
        rustgrad.device("cpu:0", 1)
    with pytest.raises(errors.DeviceError, match="must not be negative"):
        rustgrad.device("cpu", -1)
    with pytest.raises(errors.DeviceError, match="Invalid device string"):
        rustgrad.zeros(2, device="cpu:x")


# ----------------------------------------------------------- the legacy constructor


def test_the_legacy_constructor_reads_ints_as_sizes():
    t = rustgrad.Tensor(2, 3)
    assert t.shape == (2, 3) and t.dtype is rustgrad.float32
    assert t.tolist() == [[0.0] * 3] * 2
    assert rustgrad.Tensor(5).shape == (5,)
    assert rustgrad.Tensor(np.int64(4), 1).shape == (4, 1)
    assert rustgrad.Tensor().shape == (0,)
    assert rustgrad.Tensor(0).shape == (0,)


def test_the_legacy_constructor_reads_one_sequence_as_float32_data():
    assert rustgrad.Tensor([2, 3]).tolist() == [2.0, 3.0]
    assert rustgrad.Tensor((2, 3)).tolist() == [2.0, 3.0]
    for data in ([True, False], np.array([1.0, 2.0]), [[1, 2], [3, 4]]):
        assert rustgrad.Tensor(data).dtype is rustgrad.float32
    base = rustgrad.ones(2, requires_grad=True)
    shared = rustgrad.Tensor(base)
    assert not shared.requires_grad
    with rustgrad.no_grad():
        shared[0] = 5.0
    assert base[0].item() == 5.0


@pytest.mark.parametrize("args", [(2.5,), (2, 3.0), ("ab",), (-1,)], ids=["float", "mixed", "str", "negative"])
def test_the_legacy_constructor_refuses_what_torch_refuses(args):
    with pytest.raises(errors.RustgradError):
        rustgrad.Tensor(*args)
    with pytest.raises(errors.ArgumentTypeError, match="unexpected keyword"):
        rustgrad.Tensor(2, requires_grad=True)


# ----------------------------------------------------------- pickle and deepcopy


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickling_a_dtype_gives_back_the_same_singleton(protocol):
    for dtype in (rustgrad.float32, rustgrad.float64, rustgrad.bool):
        assert pickle.loads(pickle.dumps(dtype, protocol=protocol)) is dtype
        assert copy.deepcopy(dtype) is dtype
        assert copy.copy(dtype) is dtype


def test_a_device_pickles():
    for dev in (rustgrad.device("cpu"), rustgrad.device("cpu:1")):
        assert pickle.loads(pickle.dumps(dev)) == dev


TENSORS = {
    "float32": lambda: rustgrad.tensor([[1.5, -2.0], [3.0, 4.25]]),
    "float64": lambda: rustgrad.tensor([1e300, -0.0, float("nan")], dtype=rustgrad.float64),
    "bool": lambda: rustgrad.tensor([True, False, True]),
    "zero_d": lambda: rustgrad.tensor(3.0),
    "empty": lambda: rustgrad.zeros(0, 4),
    "transposed_view": lambda: rustgrad.arange(6.0).reshape(2, 3).t(),
    "requires_grad": lambda: rustgrad.ones(2, requires_grad=True),
}


@pytest.mark.parametrize("make", TENSORS.values(), ids=TENSORS.keys())
def test_a_tensor_round_trips_through_pickle(make):
    t = make()
    back = pickle.loads(pickle.dumps(t))
    assert back.dtype is t.dtype and back.shape == t.shape
    assert back.requires_grad == t.requires_grad and back.is_leaf
    np.testing.assert_array_equal(np.asarray(back.detach()), np.asarray(t.detach()))


def test_a_tensor_pickle_calls_nothing_but_the_rebuild_function():
    data = pickle.dumps(rustgrad.ones(3, requires_grad=True), protocol=4)
    strings = [arg for op, arg, _ in pickletools.genops(data) if isinstance(arg, str)]
    assert "rustgrad._tensor_protocols" in strings and "rebuild_tensor" in strings
    globals_ = [op.name for op, _, _ in pickletools.genops(data) if "GLOBAL" in op.name]
    assert globals_ == ["STACK_GLOBAL"]


def test_a_pickled_non_leaf_comes_back_as_a_leaf_that_requires_grad():
    x = rustgrad.ones(2, requires_grad=True)
    y = x * 3
    back = pickle.loads(pickle.dumps(y))
    assert back.requires_grad and back.is_leaf and back.grad_fn is None
    assert back.tolist() == [3.0, 3.0]


def test_unpickling_inconsistent_data_raises():
    with pytest.raises(errors.ShapeError, match="holds 3 bytes of data, not 8"):
        _tensor_protocols.rebuild_tensor(b"abc", "float32", (2,), False)
    with pytest.raises(errors.DTypeError, match="int8"):
        _tensor_protocols.rebuild_tensor(b"ab", "int8", (2,), False)
    with pytest.raises(errors.ArgumentTypeError):
        _tensor_protocols.rebuild_tensor(b"", "float32", (-1,), False)


def test_repr_of_a_tensor_that_requires_grad_still_works():
    assert repr(rustgrad.ones(2, requires_grad=True)) == "tensor([1., 1.], requires_grad=True)"
    with pytest.raises(errors.GradientError):
        np.asarray(rustgrad.ones(2, requires_grad=True))


def test_deepcopy_of_a_leaf_copies_data_requires_grad_and_grad():
    w = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    clone = copy.deepcopy(w)
    assert clone.requires_grad and clone.is_leaf
    assert clone.tolist() == [1.0, 2.0] and clone.grad.tolist() == [2.0, 4.0]
    with rustgrad.no_grad():
        clone.add_(1.0)
        clone.grad.zero_()
    assert w.tolist() == [1.0, 2.0] and w.grad.tolist() == [2.0, 4.0]


def test_deepcopy_keeps_shared_references_within_one_copy():
    w = rustgrad.ones(2, requires_grad=True)
    state = {"a": w, "b": w}
    copied = copy.deepcopy(state)
    assert copied["a"] is copied["b"] and copied["a"] is not w


def test_deepcopy_of_a_non_leaf_raises_gradient_error():
    y = rustgrad.ones(2, requires_grad=True) * 2
    with pytest.raises(errors.GradientError, match="graph leaves") as info:
        copy.deepcopy(y)
    assert isinstance(info.value, RuntimeError)


# ----------------------------------------------------------- a cycle through ctx


class _KeepsOutput(Function):
    outputs: list[weakref.ref] = []

    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.out = out
        _KeepsOutput.outputs.append(weakref.ref(out))
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.out


def test_an_output_kept_on_ctx_is_freed_with_its_graph():
    _an_output_kept_on_ctx_still_gives_the_right_gradient()
    _KeepsOutput.outputs.clear()
    x = rustgrad.ones(4, requires_grad=True)
    y = _KeepsOutput.apply(x)
    assert _KeepsOutput.outputs[0]() is not None
    del y
    gc.collect()
    assert _KeepsOutput.outputs[0]() is None


def _an_output_kept_on_ctx_still_gives_the_right_gradient():
    x = rustgrad.tensor([0.5, -1.0, 2.0], dtype=rustgrad.float64, requires_grad=True)
    y = _KeepsOutput.apply(x)
    assert y.grad_fn is not None
    (y * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([0.5, -1.0, 2.0]))
    assert rustgrad.autograd.gradcheck(_KeepsOutput.apply, (x,))


def test_outputs_kept_on_ctx_do_not_leak_memory():
    result = _run(
        """
        import gc
        import os
        import rustgrad
        from rustgrad.autograd import Function

        class Keep(Function):
            @staticmethod
            def forward(ctx, x):
                out = x * 2
                ctx.out = out
                return out

            @staticmethod
            def backward(ctx, grad):
                return grad * 2

        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

        x = rustgrad.ones(10_000, requires_grad=True)
        Keep.apply(x).sum().backward()
        gc.collect()
        before = rss()
        for _ in range(2000):
            y = Keep.apply(x)
        del y
        gc.collect()
        print((rss() - before) / 2**20)
        """
    )
    assert result.returncode == 0, result.stderr
    # Each output holds 40 kB: a leak would be about 80 MB.
    assert float(result.stdout) < 16, result.stdout
