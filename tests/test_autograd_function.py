"""Custom autograd.Function API, grad modes, autograd.grad and tape semantics."""

from __future__ import annotations

import gc
import textwrap
import threading
import weakref

import numpy as np
import pytest

import rustgrad
from rustgrad.autograd import Function


def leaf(values, dtype=None):
    return rustgrad.tensor(values, dtype=dtype or rustgrad.float64, requires_grad=True)


def to_np(t):
    return t.detach().numpy()


def grad_fn_name(t):
    fn = t.grad_fn
    name = getattr(fn, "name", None)
    return name() if callable(name) else type(fn).__name__


class MyReLU(Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


# ---------------------------------------------------------------- custom Function


def test_custom_function_forward_and_backward():
    x = leaf([[-1.0, 2.0], [0.5, -3.0]])
    y = MyReLU.apply(x)
    np.testing.assert_array_equal(to_np(y), [[0.0, 2.0], [0.5, 0.0]])
    assert y.requires_grad
    assert not y.is_leaf
    (y * rustgrad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=rustgrad.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 2.0], [3.0, 0.0]])


def test_custom_function_grad_fn_name():
    x = leaf([1.0, -1.0])
    y = MyReLU.apply(x)
    assert grad_fn_name(y) == "MyReLUBackward"
    assert "grad_fn=<MyReLUBackward>" in repr(y)


def test_custom_function_composes_with_builtin_ops():
    rng = np.random.default_rng(0)
    xa, wa = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    w = leaf(wa)
    loss = MyReLU.apply(rustgrad.tensor(xa, dtype=rustgrad.float64).mm(w)).sum()
    loss.backward()
    expected = xa.T @ ((xa @ wa) > 0).astype(np.float64)
    np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-12)


def test_saved_tensors_roundtrip_and_ctx_attributes():
    seen = {}

    class Scale(Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            ctx.factor = 3.0
            ctx.note = "hello"
            return x * y * 3.0

        @staticmethod
        def backward(ctx, g):
            saved = ctx.saved_tensors
            seen["n_saved"] = len(saved)
            seen["note"] = ctx.note
            x, y = saved
            return g * y * ctx.factor, g * x * ctx.factor

    x = leaf([1.0, 2.0])
    y = leaf([5.0, 7.0])
    Scale.apply(x, y).sum().backward()
    assert seen == {"n_saved": 2, "note": "hello"}
    np.testing.assert_allclose(x.grad.numpy(), [15.0, 21.0])
    np.testing.assert_allclose(y.grad.numpy(), [3.0, 6.0])


def test_needs_input_grad_per_forward_input():
    seen = {}

    class Fn(Function):
        @staticmethod
        def forward(ctx, a, b, k):
            seen["forward"] = tuple(ctx.needs_input_grad)
            return a * b * k

        @staticmethod
        def backward(ctx, g):
            seen["backward"] = tuple(ctx.needs_input_grad)
            return g * 2.0, None, None

    a = leaf([1.0, 2.0])
    b = rustgrad.tensor([2.0, 2.0], dtype=rustgrad.float64)
    Fn.apply(a, b, 2.0).sum().backward()
    assert seen["forward"] == (True, False, False)
    assert seen["backward"] == (True, False, False)
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 2.0])
    assert b.grad is None


def test_non_tensor_arguments_get_none_gradients():
    class ScaleBy(Function):
        @staticmethod
        def forward(ctx, x, scale, label):
            ctx.scale = scale
            ctx.label = label
            return x * scale

        @staticmethod
        def backward(ctx, g):
            assert ctx.label == "lbl"
            return g * ctx.scale, None, None

    x = leaf([1.0, 2.0, 3.0])
    y = ScaleBy.apply(x, 4.0, "lbl")
    np.testing.assert_allclose(to_np(y), [4.0, 8.0, 12.0])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0, 4.0])


class TwoOutputs(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0, x * 3.0

    @staticmethod
    def backward(ctx, g_a, g_b):
        total = 0.0
        if g_a is not None:
            total = total + g_a * 2.0
        if g_b is not None:
            total = total + g_b * 3.0
        return total


def test_several_outputs_receive_one_grad_each():
    x = leaf([1.0, -1.0])
    a, b = TwoOutputs.apply(x)
    np.testing.assert_allclose(to_np(a), [2.0, -2.0])
    np.testing.assert_allclose(to_np(b), [3.0, -3.0])
    assert grad_fn_name(a) == "TwoOutputsBackward"
    assert a.requires_grad and b.requires_grad
    (a.sum() + (b * 10.0).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), [32.0, 32.0])


def test_several_outputs_only_one_used():
    x = leaf([1.0, -1.0])
    a, _b = TwoOutputs.apply(x)
    a.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_mark_non_differentiable():
    class WithAux(Function):
        @staticmethod
        def forward(ctx, x):
            out = x * 2.0
            aux = x.clone()
            ctx.mark_non_differentiable(aux)
            return out, aux

        @staticmethod
        def backward(ctx, g_out, g_aux):
            return g_out * 2.0

    x = leaf([1.0, 2.0])
    out, aux = WithAux.apply(x)
    assert out.requires_grad is True
    assert aux.requires_grad is False
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_forward_runs_with_grad_disabled():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            seen["enabled"] = rustgrad.is_grad_enabled()
            inner = x * 2.0
            seen["inner_requires_grad"] = inner.requires_grad
            return inner

        @staticmethod
        def backward(ctx, g):
            return g * 2.0

    y = Probe.apply(leaf([1.0]))
    assert seen == {"enabled": False, "inner_requires_grad": False}
    assert y.requires_grad
    assert rustgrad.is_grad_enabled()


def test_custom_function_without_grad_inputs_builds_no_graph():
    x = rustgrad.tensor([-1.0, 1.0])
    y = MyReLU.apply(x)
    assert y.requires_grad is False
    assert y.grad_fn is None
    with rustgrad.no_grad():
        z = MyReLU.apply(leaf([-1.0, 1.0]))
    assert z.requires_grad is False
    assert z.grad_fn is None


def test_backward_called_once_per_backward_pass():
    calls = []

    class Counted(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            calls.append(1)
            return g

    x = leaf([1.0, 2.0])
    y = Counted.apply(x)
    (y * y + y).sum().backward()
    assert len(calls) == 1
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 5.0])


# ---------------------------------------------------------------- memory: ctx freed by refcounting


def _ctx_lifetime(save_output):
    refs = []

    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            refs.append(weakref.ref(ctx))
            out = x * 2.0
            ctx.save_for_backward(out if save_output else x)
            return out

        @staticmethod
        def backward(ctx, g):
            return g * 2.0

    return Keep, refs


@pytest.mark.parametrize("save_output", [False, True], ids=["saves_input", "saves_output"])
def test_ctx_freed_when_output_deleted_without_gc(save_output):
    Keep, refs = _ctx_lifetime(save_output)
    x = leaf([1.0, 2.0])
    gc.collect()
    gc.disable()
    try:
        y = Keep.apply(x)
        ref = refs[-1]
        assert ref() is not None
        del y
        assert ref() is None, "ctx kept alive after its output died (reference cycle?)"
    finally:
        gc.enable()


@pytest.mark.parametrize("save_output", [False, True], ids=["saves_input", "saves_output"])
def test_ctx_freed_after_backward_without_gc(save_output):
    Keep, refs = _ctx_lifetime(save_output)
    x = leaf([1.0, 2.0])
    gc.collect()
    gc.disable()
    try:
        y = Keep.apply(x)
        loss = (y * y).sum()
        loss.backward()
        ref = refs[-1]
        del y, loss
        assert ref() is None
        np.testing.assert_allclose(x.grad.numpy(), [8.0, 16.0])
    finally:
        gc.enable()


def test_deep_graph_backward_and_teardown_do_not_overflow_stack(run_python):
    code = textwrap.dedent(
        """
        import rustgrad
        x = rustgrad.tensor([1.0], dtype=rustgrad.float64, requires_grad=True)
        y = x
        for _ in range(50000):
            y = y * 1.0 + 0.0
        y.sum().backward()
        assert x.grad.tolist() == [1.0], x.grad.tolist()
        del y
        print("ok")
        """
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"


# ---------------------------------------------------------------- autograd.grad


def test_autograd_grad_returns_tuple_and_leaves_grad_untouched():
    x = leaf([1.0, 2.0, 3.0])
    w = leaf([0.5, -1.0, 2.0])
    out = (x * x * w).sum()
    grads = rustgrad.autograd.grad(out, (x, w))
    assert isinstance(grads, tuple) and len(grads) == 2
    np.testing.assert_allclose(grads[0].numpy(), [1.0, -4.0, 12.0])
    np.testing.assert_allclose(grads[1].numpy(), [1.0, 4.0, 9.0])
    assert x.grad is None
    assert w.grad is None


def test_autograd_grad_single_tensor_input_and_sequences():
    x = leaf([2.0])
    (g,) = rustgrad.autograd.grad(x.exp().sum(), x)
    np.testing.assert_allclose(g.numpy(), np.exp([2.0]))
    (g2,) = rustgrad.autograd.grad([(x * 3.0).sum()], [x])
    np.testing.assert_allclose(g2.numpy(), [3.0])


def test_autograd_grad_with_grad_outputs():
    x = leaf([1.0, 2.0])
    y = x * x
    weights = rustgrad.tensor([1.0, 10.0], dtype=rustgrad.float64)
    (g,) = rustgrad.autograd.grad(y, x, grad_outputs=weights)
    np.testing.assert_allclose(g.numpy(), [2.0, 40.0])


def test_autograd_grad_unused_input():
    x = leaf([1.0])
    unused = leaf([2.0])
    with pytest.raises(RuntimeError):
        rustgrad.autograd.grad((x * 2.0).sum(), (x, unused))
    gx, gu = rustgrad.autograd.grad((x * 2.0).sum(), (x, unused), allow_unused=True)
    np.testing.assert_allclose(gx.numpy(), [2.0])
    assert gu is None


def test_autograd_grad_retain_graph():
    x = leaf([3.0])
    y = (x * x).sum()
    (g1,) = rustgrad.autograd.grad(y, x, retain_graph=True)
    (g2,) = rustgrad.autograd.grad(y, x)
    np.testing.assert_allclose(g1.numpy(), [6.0])
    np.testing.assert_allclose(g2.numpy(), [6.0])
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        rustgrad.autograd.grad(y, x)


def test_autograd_grad_through_custom_function():
    x = leaf([-1.0, 2.0])
    (g,) = rustgrad.autograd.grad(MyReLU.apply(x).sum(), x)
    np.testing.assert_allclose(g.numpy(), [0.0, 1.0])
    assert x.grad is None


# ---------------------------------------------------------------- grad modes


def test_no_grad_context_manager():
    x = leaf([1.0, 2.0])
    assert rustgrad.is_grad_enabled()
    with rustgrad.no_grad():
        assert not rustgrad.is_grad_enabled()
        y = x * 2.0
        z = x.exp().sum()
    assert rustgrad.is_grad_enabled()
    assert y.requires_grad is False and y.grad_fn is None
    assert z.requires_grad is False
    assert (x * 2.0).requires_grad is True


def test_no_grad_as_decorator():
    @rustgrad.no_grad()
    def double(t):
        assert not rustgrad.is_grad_enabled()
        return t * 2.0

    out = double(leaf([1.0]))
    assert out.requires_grad is False
    assert rustgrad.is_grad_enabled()


def test_no_grad_restores_mode_after_exception():
    with pytest.raises(KeyError):
        with rustgrad.no_grad():
            raise KeyError("boom")
    assert rustgrad.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    x = leaf([1.0])
    with rustgrad.no_grad():
        with rustgrad.enable_grad():
            assert rustgrad.is_grad_enabled()
            y = x * 2.0
        assert not rustgrad.is_grad_enabled()
    assert y.requires_grad is True
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0])


def test_set_grad_enabled_function_and_context_manager():
    x = leaf([1.0])
    rustgrad.set_grad_enabled(False)
    try:
        assert not rustgrad.is_grad_enabled()
        assert (x * 2.0).requires_grad is False
    finally:
        rustgrad.set_grad_enabled(True)
    assert rustgrad.is_grad_enabled()
    with rustgrad.set_grad_enabled(False):
        assert not rustgrad.is_grad_enabled()
        assert (x + 1.0).requires_grad is False
    assert rustgrad.is_grad_enabled()
    with rustgrad.no_grad():
        with rustgrad.set_grad_enabled(True):
            assert (x + 1.0).requires_grad is True
        assert not rustgrad.is_grad_enabled()


def test_grad_mode_is_thread_local():
    x = leaf([1.0])
    seen = {}

    def worker():
        seen["enabled"] = rustgrad.is_grad_enabled()
        seen["requires_grad"] = (x * 2.0).requires_grad
        rustgrad.set_grad_enabled(False)  # must not leak into the main thread

    with rustgrad.no_grad():
        th = threading.Thread(target=worker)
        th.start()
        th.join()
        assert not rustgrad.is_grad_enabled()
    assert seen == {"enabled": True, "requires_grad": True}
    assert rustgrad.is_grad_enabled()


# ---------------------------------------------------------------- tape semantics


def test_leaf_and_non_leaf_flags():
    x = leaf([1.0])
    c = rustgrad.tensor([2.0], dtype=rustgrad.float64)
    y = x * c
    assert x.is_leaf and x.grad_fn is None
    assert c.is_leaf and not c.requires_grad
    assert not y.is_leaf and y.grad_fn is not None and y.requires_grad
    z = c * 2.0
    assert z.is_leaf and not z.requires_grad and z.grad_fn is None


def test_leaf_grads_accumulate_across_backward_calls():
    x = leaf([1.0, 2.0])
    (x * 3.0).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 7.0])


def test_non_leaf_grad_is_none_after_backward():
    x = leaf([1.0, 2.0])
    h = x * 2.0
    h.exp().sum().backward()
    assert h.grad is None
    assert x.grad is not None


def test_retain_graph_allows_second_backward_and_grads_add():
    x = leaf([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first, rtol=1e-12)
    np.testing.assert_allclose(first, np.exp([1.0, 2.0]) * (1.0 + np.array([1.0, 2.0])), rtol=1e-12)


def test_backward_with_explicit_gradient_for_non_scalar():
    x = leaf([1.0, 2.0, 3.0])
    y = x * x
    y.backward(rustgrad.tensor([1.0, 0.5, 0.0], dtype=rustgrad.float64))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 0.0])
    x2 = leaf([1.0, 2.0])
    (x2 * 3.0).backward(gradient=rustgrad.ones(2, dtype=rustgrad.float64))
    np.testing.assert_allclose(x2.grad.numpy(), [3.0, 3.0])


def test_backward_on_zero_dim_tensor():
    x = leaf(2.0)
    y = x * x * x
    assert tuple(y.shape) == ()
    y.backward()
    assert x.grad.item() == pytest.approx(12.0)


def test_detach_blocks_gradient():
    x = leaf([1.0, 2.0])
    y = x * x.detach()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 2.0])


def test_requires_grad_propagates_through_mixed_inputs():
    x = leaf([1.0])
    c = rustgrad.tensor([1.0], dtype=rustgrad.float64)
    assert (x + c).requires_grad
    assert (c + x).requires_grad
    assert not (c + c).requires_grad


def test_requires_grad_underscore_makes_leaf_trainable():
    w = rustgrad.tensor([1.0, 2.0], dtype=rustgrad.float64).requires_grad_()
    (w * 4.0).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [4.0, 4.0])


def test_sgd_step_under_no_grad_keeps_leaf_identity_and_grad_alias():
    w = leaf([1.0, 2.0])
    alias = w
    (w * w).sum().backward()
    with rustgrad.no_grad():
        w -= 0.1 * w.grad
        g = w.grad
        g.zero_()
    assert w is alias
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    np.testing.assert_allclose(to_np(w), [0.8, 1.6])
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 0.0])
    (w * 3.0).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.0])


def test_grad_can_be_reset_to_none():
    x = leaf([1.0])
    (x * 2.0).sum().backward()
    x.grad = None
    (x * 5.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0])


def test_grad_has_same_shape_and_dtype_as_leaf():
    x = rustgrad.randn(3, 4, dtype=rustgrad.float64, requires_grad=True)
    x.sum().backward()
    assert tuple(x.grad.shape) == (3, 4)
    assert x.grad.dtype == rustgrad.float64
    assert x.grad.requires_grad is False


def _inplace_chain(x):
    y = x * 2.0
    y.add_(1.0)
    y.mul_(x)
    y -= x
    y *= 3.0
    return y  # 3 * ((2x + 1) * x - x) = 6x^2


def test_inplace_ops_on_non_leaf_are_recorded():
    x = leaf([1.0, -2.0, 0.5])
    y = _inplace_chain(x)
    np.testing.assert_allclose(to_np(y), 6.0 * np.array([1.0, -2.0, 0.5]) ** 2)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 12.0 * np.array([1.0, -2.0, 0.5]))
    assert rustgrad.autograd.gradcheck(_inplace_chain, (leaf([0.3, -1.2]),)) is True


def test_mask_setitem_on_non_leaf_blocks_gradient_of_overwritten_entries():
    x = leaf([[1.0, -2.0], [3.0, -4.0]])
    y = x * 1.0
    y[y < 0] = 0
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[2.0, 0.0], [6.0, 0.0]])


def test_forward_may_return_any_object_when_nothing_is_recorded():
    class Passthrough(Function):
        @staticmethod
        def forward(ctx, x):
            return NotImplemented

        @staticmethod
        def backward(ctx, grad):
            return grad

    with rustgrad.no_grad():
        assert Passthrough.apply(leaf([1.0])) is NotImplemented


def test_grad_mode_is_restored_when_forward_raises():
    class Failing(Function):
        @staticmethod
        def forward(ctx, x):
            assert not rustgrad.is_grad_enabled()
            raise ValueError("boom in forward")

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(ValueError, match="boom in forward"):
        Failing.apply(leaf([1.0]))
    assert rustgrad.is_grad_enabled()
