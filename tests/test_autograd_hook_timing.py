"""When backward runs post-accumulate-grad hooks and end-of-pass callbacks.

A leaf's post-accumulate hooks run as soon as its gradient is final, during the pass (as in torch), so
that DistributedDataParallel can start reducing a bucket while the rest of backward runs; callbacks
queued with ``Variable._execution_engine.queue_callback`` run once the pass is over."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from _child import child_env

import rustgrad
from rustgrad import errors, nn
from rustgrad.autograd import Function, Variable

queue_callback = Variable._execution_engine.queue_callback


class Mark(Function):
    """Identity whose backward appends ``Mark.label`` to ``Mark.events`` (and raises when told to)."""

    events: list[str] = []
    label = "first layer backward"
    fail = False

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        Mark.events.append(Mark.label)
        if Mark.fail:
            raise ValueError("boom in the first layer's backward")
        return g


@pytest.fixture(autouse=True)
def fresh_marks():
    Mark.events, Mark.fail = [], False
    yield
    Mark.events, Mark.fail = [], False


class TwoLayers(nn.Module):
    """x -> Linear -> Mark -> tanh -> Linear: Mark's backward runs right before the first layer's."""

    def __init__(self) -> None:
        super().__init__()
        rustgrad.manual_seed(0)
        self.first = nn.Linear(3, 4).double()
        self.last = nn.Linear(4, 2).double()

    def forward(self, x):
        return self.last(Mark.apply(self.first(x)).tanh())


def inputs() -> rustgrad.Tensor:
    return rustgrad.tensor(np.random.RandomState(0).randn(5, 3))


def test_the_last_layers_post_accumulate_hook_fires_before_the_first_layers_backward_runs():
    model = TwoLayers()
    model.last.weight.register_post_accumulate_grad_hook(lambda p: Mark.events.append("last weight hook"))
    model.first.weight.register_post_accumulate_grad_hook(lambda p: Mark.events.append("first weight hook"))
    model(inputs()).sum().backward()
    assert Mark.events == ["last weight hook", "first layer backward", "first weight hook"]


def test_a_hook_on_a_leaf_used_twice_runs_once_on_the_sum_of_both_paths():
    w = rustgrad.tensor([1.0, -2.0, 0.5], dtype=rustgrad.float64, requires_grad=True)
    w.grad = rustgrad.tensor([10.0, 20.0, 30.0], dtype=rustgrad.float64)
    seen = []
    w.register_post_accumulate_grad_hook(lambda p: seen.append((list(Mark.events), p.grad.numpy().copy())))
    early = (w * 3.0).sum()                    # reaches w first
    late = (Mark.apply(w * w) * 2.0).sum()     # reaches w only after Mark's backward
    (early + late).backward()
    assert len(seen) == 1
    events_then, grad_then = seen[0]
    assert events_then == ["first layer backward"]  # the hook waited for the second path
    expected = np.array([10.0, 20.0, 30.0]) + 3.0 + 4.0 * np.array([1.0, -2.0, 0.5])
    np.testing.assert_array_equal(grad_then, expected)
    np.testing.assert_array_equal(w.grad.numpy(), expected)


def test_gradients_are_bitwise_the_same_with_and_without_hooks_and_with_earlier_grads():
    def grads(with_hooks: bool) -> list[np.ndarray]:
        model = TwoLayers()
        if with_hooks:
            for p in model.parameters():
                p.register_post_accumulate_grad_hook(lambda p: None)
        x = inputs()
        (model(x) ** 2).sum().backward()
        (model(x * 0.37).exp()).sum().backward()  # accumulates onto the first .grad
        return [p.grad.numpy().copy() for p in model.parameters()]

    for plain, hooked in zip(grads(False), grads(True)):
        assert plain.tobytes() == hooked.tobytes()


def test_a_callback_runs_once_after_the_pass_when_every_grad_is_written():
    model = TwoLayers()
    seen = []

    def at_the_end():
        Mark.events.append("callback")
        seen.append([p.grad is not None for p in model.parameters()])
        queue_callback(lambda: Mark.events.append("callback queued by a callback"))

    def hook(p):
        Mark.events.append("last weight hook")
        queue_callback(at_the_end)

    model.last.weight.register_post_accumulate_grad_hook(hook)
    model(inputs()).sum().backward()
    assert Mark.events == ["last weight hook", "first layer backward", "callback", "callback queued by a callback"]
    assert seen == [[True, True, True, True]]
    # Each pass has its own queue: a second backward runs only what it queued itself.
    Mark.events.clear()
    model(inputs()).sum().backward()
    assert Mark.events.count("callback") == 1


def test_callbacks_run_after_autograd_grad_and_with_retain_graph():
    x = rustgrad.tensor([1.0, 2.0], dtype=rustgrad.float64, requires_grad=True)
    calls = []
    y = x * 3.0
    y.register_hook(lambda g: queue_callback(lambda: calls.append("after grad")))
    (g,) = rustgrad.autograd.grad(y.sum(), x, retain_graph=True)
    assert calls == ["after grad"] and g.tolist() == [3.0, 3.0] and x.grad is None
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert calls == ["after grad"] * 3 and x.grad.tolist() == [6.0, 6.0]


def test_a_callback_queued_by_a_nested_backward_runs_when_that_backward_ends():
    outer, inner = (rustgrad.tensor([1.0], dtype=rustgrad.float64, requires_grad=True) for _ in range(2))
    order = []
    inner.register_post_accumulate_grad_hook(lambda p: queue_callback(lambda: order.append("inner callback")))

    def outer_hook(p):
        with rustgrad.enable_grad():  # backward runs hooks with grad mode off, as torch does
            (inner * 2).sum().backward()
        order.append("outer hook done")

    outer.register_post_accumulate_grad_hook(outer_hook)
    (outer * 5).sum().backward()
    assert order == ["inner callback", "outer hook done"]


def test_queue_callback_outside_backward_or_with_a_non_callable_is_refused():
    with pytest.raises(errors.GradientError, match="can only be installed during backward pass"):
        queue_callback(print)
    x = rustgrad.tensor([1.0], requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda p: queue_callback(3))
    with pytest.raises(TypeError, match="queue_callback: the callback must be callable, got 3"):
        (x * 2).sum().backward()


def test_an_exception_from_a_callback_propagates_after_the_grads_are_written():
    x = rustgrad.tensor([1.0, 2.0], dtype=rustgrad.float64, requires_grad=True)
    later = []

    def boom():
        raise KeyError("boom in a callback")

    x.register_post_accumulate_grad_hook(lambda p: (queue_callback(boom), queue_callback(lambda: later.append(1))))
    with pytest.raises(KeyError, match="boom in a callback"):
        (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0] and later == []  # the callbacks after the failing one do not run
    with pytest.raises(errors.GradientError, match="during backward pass"):
        queue_callback(print)  # the failed pass closed its queue


def test_a_failing_post_accumulate_hook_stops_backward_and_leaves_unhooked_grads_alone():
    model = TwoLayers()

    def boom(p):
        raise ValueError("boom from a post-accumulate hook")

    model.last.weight.register_post_accumulate_grad_hook(boom)
    with pytest.raises(ValueError, match="boom from a post-accumulate hook"):
        model(inputs()).sum().backward()
    assert Mark.events == []  # the pass stopped before reaching the first layer
    assert model.last.weight.grad is not None  # written before its hook ran, as in torch
    assert all(p.grad is None for p in (model.last.bias, model.first.weight, model.first.bias))


def test_a_backward_failing_after_a_hook_ran_keeps_the_hooked_grad_and_drops_the_callbacks():
    model = TwoLayers()
    calls, callbacks = [], []

    def hook(p):
        calls.append(p.grad.numpy().copy())
        queue_callback(lambda: callbacks.append("callback"))

    model.last.weight.register_post_accumulate_grad_hook(hook)
    Mark.fail = True
    with pytest.raises(ValueError, match="boom in the first layer's backward"):
        model(inputs()).sum().backward()
    # As in torch, the hooked leaf was finished (written, hook run) before the failure; the other
    # leaves' .grad is written only after a successful pass, and the queued callback does not run.
    assert len(calls) == 1 and callbacks == []
    np.testing.assert_array_equal(model.last.weight.grad.numpy(), calls[0])
    assert all(p.grad is None for p in (model.last.bias, model.first.weight, model.first.bias))


def test_variable_is_torchs_legacy_name_for_tensor():
    t = rustgrad.tensor([1.0, 2.0])
    v = Variable(t, requires_grad=True)
    assert isinstance(t, Variable) and not isinstance(3, Variable)
    assert v.requires_grad and not t.requires_grad and v.data_ptr() == t.data_ptr()
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        Variable([1.0])


# ---------------------------------------------------------------- DistributedDataParallel on MPI ranks


def _mpiexec() -> str | None:
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        if (folder / "mpiexec").exists():
            return str(folder / "mpiexec")
    return None


@pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None or _mpiexec() is None,
                    reason="mpi4py and mpiexec are needed (pip install '.[mpi]' or '.[test]')")
def test_ddp_starts_the_first_buckets_allreduce_before_backward_reaches_the_first_layer():
    script = Path(__file__).resolve().parent / "distributed_scripts" / "ddp_overlap.py"
    env = child_env(RAYON_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    result = subprocess.run([_mpiexec(), "-n", "2", sys.executable, "-m", "mpi4py", str(script)], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"ddp_overlap.py failed:\n{result.stdout}\n{result.stderr}"
    assert all(f"rank {r}: overlap ok" in result.stdout for r in range(2)), result.stdout
