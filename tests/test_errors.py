"""Every misuse raises the documented rustgrad error (also the matching builtin),
with a PyTorch-like message, leaves its inputs unchanged, and keeps the process usable."""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

import rustgrad
from rustgrad import errors
from rustgrad.autograd import Function


def snapshot(*tensors):
    return [t.detach().numpy().copy() for t in tensors]


def assert_unchanged(tensors, before):
    for t, b in zip(tensors, before):
        np.testing.assert_array_equal(t.detach().numpy(), b)


def assert_still_usable():
    a = rustgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    loss = (a @ a).sum()
    loss.backward()
    assert loss.item() == 54.0
    np.testing.assert_allclose(a.grad.numpy(), [[7.0, 11.0], [9.0, 13.0]])


# ---------------------------------------------------------------- the hierarchy itself


@pytest.mark.parametrize(
    "cls, builtins",
    [
        (errors.ShapeError, (RuntimeError, ValueError)),
        (errors.DTypeError, (TypeError,)),
        (errors.IndexOutOfRangeError, (IndexError,)),
        (errors.OutOfMemoryError, (MemoryError,)),
        (errors.GradientError, (RuntimeError,)),
        (errors.InternalError, ()),
    ],
)
def test_error_hierarchy(cls, builtins):
    assert issubclass(cls, errors.RustgradError)
    for b in builtins:
        assert issubclass(cls, b)


# ---------------------------------------------------------------- shape errors


@pytest.mark.parametrize("op", ["mm", "matmul", "@", "fn_mm", "fn_matmul"])
def test_matmul_shape_mismatch(op):
    a = rustgrad.randn(2, 3)
    b = rustgrad.randn(4, 5)
    before = snapshot(a, b)
    call = {
        "mm": lambda: a.mm(b),
        "matmul": lambda: a.matmul(b),
        "@": lambda: a @ b,
        "fn_mm": lambda: rustgrad.mm(a, b),
        "fn_matmul": lambda: rustgrad.matmul(a, b),
    }[op]
    msg = re.escape("shapes cannot be multiplied (2x3 and 4x5)")
    with pytest.raises(errors.ShapeError, match=msg) as ei:
        call()
    assert isinstance(ei.value, RuntimeError) and isinstance(ei.value, ValueError)
    assert_unchanged((a, b), before)
    assert_still_usable()


@pytest.mark.parametrize(
    "op",
    [
        lambda a, b: a + b,
        lambda a, b: a - b,
        lambda a, b: a * b,
        lambda a, b: a / b,
        lambda a, b: a < b,
    ],
    ids=["add", "sub", "mul", "div", "lt"],
)
def test_broadcast_mismatch(op):
    a = rustgrad.ones(2, 3)
    b = rustgrad.ones(2, 4)
    with pytest.raises(errors.ShapeError, match="must match") as ei:
        op(a, b)
    msg = str(ei.value)
    assert "[2, 3]" in msg and "[2, 4]" in msg, msg
    assert isinstance(ei.value, RuntimeError) and isinstance(ei.value, ValueError)
    assert_still_usable()


def test_inplace_broadcast_mismatch_leaves_target_unchanged():
    a = rustgrad.ones(2, 3)
    b = rustgrad.ones(2, 4)
    with pytest.raises(errors.ShapeError, match="must match"):
        a.add_(b)
    assert a.tolist() == [[1.0] * 3] * 2
    assert_still_usable()


@pytest.mark.parametrize("shape", [(4, 4), (5,), (-1, 4), (7, -1)])
def test_bad_reshape(shape):
    t = rustgrad.arange(0.0, 6.0, 1.0)
    with pytest.raises(errors.ShapeError, match="is invalid for input of size") as ei:
        t.reshape(*shape)
    assert isinstance(ei.value, RuntimeError) and isinstance(ei.value, ValueError)
    with pytest.raises(errors.ShapeError, match="is invalid for input of size"):
        t.view(*shape)
    assert tuple(t.shape) == (6,)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_item_on_multi_element_tensor():
    t = rustgrad.tensor([1.0, 2.0])
    with pytest.raises(errors.ShapeError, match="cannot be converted to Scalar") as ei:
        t.item()
    assert isinstance(ei.value, RuntimeError) and isinstance(ei.value, ValueError)
    assert t.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("factory", ["zeros", "ones", "empty", "randn", "rand"])
def test_negative_dimension(factory):
    with pytest.raises(errors.ShapeError, match="negative dimension") as ei:
        getattr(rustgrad, factory)(-1, 3)
    assert isinstance(ei.value, RuntimeError) and isinstance(ei.value, ValueError)
    assert_still_usable()


@pytest.mark.parametrize(
    "data", [[[1, 2], [3]], [[1.0, 2.0], [3.0, 4.0, 5.0]], [[[1.0], [2.0]], [[3.0]]]]
)
def test_ragged_nested_lists(data):
    with pytest.raises(errors.ShapeError, match="ragged") as ei:
        rustgrad.tensor(data)
    assert isinstance(ei.value, ValueError)


# ---------------------------------------------------------------- dtype errors


@pytest.mark.parametrize(
    "call",
    [
        lambda: rustgrad.zeros(2, dtype="float17"),
        lambda: rustgrad.ones(2, dtype="float17"),
        lambda: rustgrad.tensor([1.0], dtype=object),
        lambda: rustgrad.tensor([1.0], dtype="float17"),
    ],
    ids=["zeros_str", "ones_str", "tensor_object", "tensor_str"],
)
def test_unknown_dtype(call):
    with pytest.raises(errors.DTypeError, match="dtype") as ei:
        call()
    assert isinstance(ei.value, TypeError)
    assert_still_usable()


# ---------------------------------------------------------------- device errors


@pytest.mark.parametrize(
    "call",
    [
        lambda: rustgrad.device("cuda"),
        lambda: rustgrad.zeros(2, device="cuda"),
        lambda: rustgrad.randn(2, 2, device="cuda"),
        lambda: rustgrad.tensor([1.0], device="cuda"),
    ],
    ids=["device", "zeros", "randn", "tensor"],
)
def test_cuda_device_is_rejected(call):
    # The spec says the message contains "cuda"; PyTorch itself writes "CUDA", so either case.
    with pytest.raises(RuntimeError, match="(?i)cuda"):
        call()
    assert_still_usable()


# ---------------------------------------------------------------- index errors


@pytest.mark.parametrize("index", [5, 3, -4])
def test_index_out_of_range(index):
    t = rustgrad.tensor([1.0, 2.0, 3.0])
    with pytest.raises(errors.IndexOutOfRangeError, match="out of bounds") as ei:
        _ = t[index]
    assert isinstance(ei.value, IndexError)
    assert t.tolist() == [1.0, 2.0, 3.0]


def test_index_out_of_range_in_second_dim():
    t = rustgrad.zeros(2, 3)
    with pytest.raises(errors.IndexOutOfRangeError, match="out of bounds"):
        _ = t[1, 3]


def test_setitem_out_of_range_leaves_tensor_unchanged():
    t = rustgrad.tensor([1.0, 2.0, 3.0])
    with pytest.raises(errors.IndexOutOfRangeError, match="out of bounds"):
        t[5] = 0.0
    assert t.tolist() == [1.0, 2.0, 3.0]


# ---------------------------------------------------------------- memory


OOM_CHILD = textwrap.dedent(
    """
    import rustgrad
    from rustgrad import errors
    try:
        rustgrad.zeros(10**7, 10**7)
    except errors.OutOfMemoryError as e:
        assert isinstance(e, MemoryError), type(e).__mro__
        assert "allocate" in str(e), str(e)
    else:
        raise SystemExit("no error raised")
    try:
        rustgrad.ones((10**7, 10**7), dtype=rustgrad.float64)
    except errors.OutOfMemoryError as e:
        assert "allocate" in str(e), str(e)
    else:
        raise SystemExit("no error raised for ones")
    a = rustgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    loss = (a @ a).sum()
    loss.backward()
    assert loss.item() == 54.0
    assert a.grad.tolist() == [[7.0, 11.0], [9.0, 13.0]]
    print("ok")
    """
)


@pytest.fixture(scope="module")
def oom_child(run_python):
    return run_python(OOM_CHILD, timeout=60)


def test_huge_allocation_raises_memory_error_in_child_process(oom_child):
    # A child first, so that an abort on allocation failure cannot take the whole session down.
    proc = oom_child
    detail = f"rc={proc.returncode}\nstdout={proc.stdout}\nstderr={proc.stderr[-3000:]}"
    assert proc.returncode == 0, detail
    assert proc.stdout.strip() == "ok"


def test_huge_allocation_in_process(oom_child):
    if oom_child.returncode < 0:
        pytest.skip("the child process crashed on a huge allocation (reported by the test above)")
    with pytest.raises(errors.OutOfMemoryError, match="allocate") as ei:
        rustgrad.zeros(10**7, 10**7)
    assert isinstance(ei.value, MemoryError)
    assert_still_usable()


# ---------------------------------------------------------------- backward misuse


def test_backward_on_non_scalar_without_gradient():
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    msg = "grad can be implicitly created only for scalar outputs"
    with pytest.raises(errors.GradientError, match=msg) as ei:
        y.backward()
    assert isinstance(ei.value, RuntimeError)
    assert x.grad is None
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_second_backward_through_freed_graph():
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    first = x.grad.numpy().copy()
    with pytest.raises(errors.GradientError, match="retain_graph=True") as ei:
        y.backward()
    assert isinstance(ei.value, RuntimeError)
    np.testing.assert_array_equal(x.grad.numpy(), first)
    assert_still_usable()


def test_second_backward_works_with_retain_graph():
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]


@pytest.mark.parametrize(
    "make", [lambda: rustgrad.tensor([1.0, 2.0]).sum(), lambda: rustgrad.tensor([3.0])]
)
def test_backward_when_nothing_requires_grad(make):
    y = make()
    with pytest.raises(errors.GradientError, match="does not require grad") as ei:
        y.backward()
    assert isinstance(ei.value, RuntimeError)


def test_backward_under_no_grad_result():
    x = rustgrad.tensor([1.0], requires_grad=True)
    with rustgrad.no_grad():
        y = (x * 2.0).sum()
    with pytest.raises(errors.GradientError, match="does not require grad"):
        y.backward()
    assert x.grad is None


@pytest.mark.parametrize(
    "mutate",
    [
        lambda x: x.add_(1.0),
        lambda x: x.sub_(1.0),
        lambda x: x.mul_(2.0),
        lambda x: x.zero_(),
        lambda x: x.fill_(3.0),
        lambda x: x.__iadd__(1.0),
        lambda x: x.__isub__(1.0),
        lambda x: x.__imul__(2.0),
        lambda x: x.__itruediv__(2.0),
        lambda x: x.__setitem__(slice(0, 1), 0.0),
    ],
    ids=["add_", "sub_", "mul_", "zero_", "fill_", "+=", "-=", "*=", "/=", "setitem"],
)
def test_inplace_on_leaf_requiring_grad(mutate):
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(errors.GradientError, match="leaf Variable that requires grad") as ei:
        mutate(x)
    assert isinstance(ei.value, RuntimeError)
    assert x.detach().tolist() == [1.0, 2.0]
    assert x.is_leaf and x.requires_grad
    with rustgrad.no_grad():
        mutate(x)  # allowed under no_grad
    assert x.is_leaf and x.requires_grad


@pytest.mark.parametrize(
    "op",
    [lambda x: x.exp(), lambda x: x.sigmoid(), lambda x: x.tanh(), lambda x: x.sqrt()],
    ids=["exp", "sigmoid", "tanh", "sqrt"],
)
def test_inplace_modification_of_saved_output(op):
    # PyTorch saves the *output* of exp/sigmoid/tanh/sqrt for their backward.
    x = rustgrad.tensor([0.5, 1.0], requires_grad=True)
    y = op(x)
    y.add_(1.0)
    with pytest.raises(errors.GradientError, match="modified by an inplace operation") as ei:
        y.sum().backward()
    assert isinstance(ei.value, RuntimeError)
    assert x.grad is None
    assert_still_usable()


@pytest.mark.parametrize(
    "consume",
    [
        lambda a: a.log(),
        lambda a: a.abs(),
        lambda a: a.clamp(min=0.1),
        lambda a: a * a,
        lambda a: a.pow(2),
    ],
    ids=["log", "abs", "clamp", "mul_self", "pow"],
)
def test_inplace_modification_of_saved_input(consume):
    # PyTorch saves the *input* of log/abs/clamp/mul/pow for their backward.
    x = rustgrad.tensor([0.5, 1.0], requires_grad=True)
    a = x * 1.0
    b = consume(a)
    a.mul_(2.0)
    with pytest.raises(errors.GradientError, match="modified by an inplace operation"):
        b.sum().backward()
    assert x.grad is None


def test_inplace_on_tensor_not_saved_is_fine():
    x = rustgrad.tensor([0.5, 1.0], requires_grad=True)
    y = x.exp()
    z = y * 2.0
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * np.exp([0.5, 1.0]), rtol=1e-6)
    x2 = rustgrad.tensor([0.5, 1.0], requires_grad=True)
    a = x2 * 2.0
    b = a + 1.0  # add saves nothing
    a.add_(1.0)
    b.sum().backward()
    np.testing.assert_allclose(x2.grad.numpy(), [2.0, 2.0])


# ---------------------------------------------------------------- custom Function misuse


class TooManyGrads(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return g * 2.0, g


class WrongShapeGrad(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return rustgrad.ones(2)


class MyErr(Exception):
    pass


class RaisingBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        raise MyErr("user failure in backward")


def test_custom_backward_wrong_number_of_gradients():
    x = rustgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(errors.GradientError, match="incorrect number of gradients") as ei:
        TooManyGrads.apply(x).sum().backward()
    assert isinstance(ei.value, RuntimeError)
    assert x.grad is None
    assert_still_usable()


def test_custom_backward_wrong_gradient_shape():
    x = rustgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(errors.GradientError, match="invalid gradient") as ei:
        WrongShapeGrad.apply(x).sum().backward()
    assert isinstance(ei.value, RuntimeError)
    assert x.grad is None
    assert_still_usable()


def test_custom_backward_user_exception_propagates_unchanged():
    x = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(MyErr, match="user failure in backward") as ei:
        RaisingBackward.apply(x).sum().backward()
    assert type(ei.value) is MyErr
    assert x.grad is None
    assert_still_usable()


def test_custom_backward_errors_through_autograd_grad():
    x = rustgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(errors.GradientError, match="incorrect number of gradients"):
        rustgrad.autograd.grad(TooManyGrads.apply(x).sum(), x)
    with pytest.raises(MyErr):
        rustgrad.autograd.grad(RaisingBackward.apply(x).sum(), x)
