"""Thread-count bounds and Ctrl-C inside long kernels."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from _child import child_env

import rustgrad
from rustgrad import errors


@pytest.mark.parametrize("threads", [0, -5, 1025, 10**6])
def test_a_thread_count_outside_1_to_1024_is_refused_at_once(threads):
    before = rustgrad.get_num_threads()
    with pytest.raises(errors.InvalidArgumentError, match=rf"between 1 and 1024, got {threads}$") as info:
        rustgrad.set_num_threads(threads)
    assert isinstance(info.value, ValueError)
    assert rustgrad.get_num_threads() == before


def test_a_thread_count_inside_the_bound_is_taken():
    before = rustgrad.get_num_threads()
    try:
        rustgrad.set_num_threads(3)
        assert rustgrad.get_num_threads() == 3
    finally:
        rustgrad.set_num_threads(before)


CHILD = r"""
import os, signal, sys, threading, time
# A handler that records SIGINT and does not raise: an op that ignores Ctrl-C runs to its end
# and returns; one that stops on it raises KeyboardInterrupt itself (rust/python/errors.rs).
handled = []
signal.signal(signal.SIGINT, lambda signum, frame: handled.append(signum))
import rustgrad as rg

def long_op(case):
    if case == "matmul":
        a = rg.ones(6000, 6000)
        return lambda: a.mm(a)
    if case == "randn":
        return lambda: [rg.randn(100_000_000) for _ in range(20)]
    if case == "elementwise":
        x = rg.ones(100_000_000)
        return lambda: [x.exp() for _ in range(100)]
    if case == "backward":
        b = rg.ones(3000, 3000)
        loss = b.clone().requires_grad_().mm(b).sum()
        return lambda: loss.backward()
    if case == "in_place":  # never armed: stopping halfway would leave the tensor half updated
        x = rg.ones(50_000_000)
        return lambda: [x.mul_(1.0) for _ in range(10)]

op = long_op(sys.argv[1])
go = done = False

def interrupt_over_and_over():
    # With the switch interval at 1000 s this thread only runs while the main thread has
    # released the GIL: inside the op's kernels, after the op armed Ctrl-C.
    while not go:
        time.sleep(0)
    while not done:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0)

sys.setswitchinterval(1000)
interrupter = threading.Thread(target=interrupt_over_and_over, daemon=True)
interrupter.start()
go = True
try:
    op()
    outcome = "finished"
except KeyboardInterrupt:
    outcome = "interrupted"
done = True
interrupter.join(60)
print(outcome, "handled" if handled else "not-handled", flush=True)
assert (rg.ones(2, 2).mm(rg.ones(2, 2)).sum().item()) == 8.0
print("usable", flush=True)
"""


def run_interrupted_child(case: str) -> list[str]:
    """The child's output lines; the timeout only keeps a hung child from hanging the run."""
    done = subprocess.run([sys.executable, "-c", CHILD, case], capture_output=True, text=True, timeout=300,
                          env=child_env())
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


@pytest.mark.skipif(sys.platform != "linux", reason="the SIGINT chaining is tested on Linux")
@pytest.mark.parametrize("case", ["matmul", "elementwise", "backward", "randn"])
def test_ctrl_c_stops_a_long_kernel_and_leaves_the_process_usable(case):
    """Without polling, each op would run to its end (seconds) and return, as its SIGINTs never raise."""
    assert run_interrupted_child(case) == ["interrupted handled", "usable"]


@pytest.mark.skipif(sys.platform != "linux", reason="the SIGINT chaining is tested on Linux")
def test_ctrl_c_lets_an_in_place_kernel_finish():
    """The negative control of the test above: in-place kernels are never armed (rust/interrupt.rs),
    so the same SIGINTs, delivered and handled while they run, do not stop them."""
    assert run_interrupted_child("in_place") == ["finished handled", "usable"]


WRONG_TYPES = ["a", object(), 1.5j, [1.0, "b"]]


@pytest.mark.parametrize("bad", WRONG_TYPES)
@pytest.mark.parametrize("reduction", ["sum", "mean", "amax", "amin"])
def test_a_reduction_argument_of_the_wrong_type_raises_argument_type_error(reduction, bad):
    x = rustgrad.ones(2, 3)
    with pytest.raises(errors.ArgumentTypeError, match=rf"{reduction}: argument 'dim' must be"):
        getattr(x, reduction)(bad)
    with pytest.raises(errors.ArgumentTypeError, match=rf"{reduction}: argument 'keepdim' must be a bool"):
        getattr(x, reduction)(0, keepdim=bad)


@pytest.mark.parametrize("bad", WRONG_TYPES)
def test_in_place_scalars_of_the_wrong_type_raise_and_change_nothing(bad):
    x = rustgrad.ones(3)
    with pytest.raises(errors.ArgumentTypeError, match="add_: argument 'alpha' must be a number"):
        x.add_(x, alpha=bad)
    with pytest.raises(errors.ArgumentTypeError, match="clamp_: argument 'min' must be a number"):
        x.clamp_(min=bad)
    with pytest.raises(errors.ArgumentTypeError, match="clamp_: argument 'max' must be a number"):
        x.clamp_(max=bad)
    assert x.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("bad", ["4", 2.5, None])
def test_a_thread_count_that_is_not_an_int_raises_argument_type_error(bad):
    with pytest.raises(errors.ArgumentTypeError, match="set_num_threads: argument 'threads' must be an int"):
        rustgrad.set_num_threads(bad)


def test_a_thread_count_beyond_64_bits_raises_a_numeric_overflow_error():
    with pytest.raises(errors.NumericOverflowError, match="set_num_threads: argument 'threads' is out of range"):
        rustgrad.set_num_threads(2**70)


@pytest.mark.parametrize("factory", ["zeros_like", "ones_like", "randn_like", "rand_like"])
def test_a_like_factory_of_something_that_is_not_a_tensor_raises_argument_type_error(factory):
    with pytest.raises(errors.ArgumentTypeError, match=rf"{factory}\(\): argument 'input' must be a Tensor, got str"):
        getattr(rustgrad, factory)("a")


BACKGROUND_CHILD = r"""
import threading, time
import rustgrad as rg
a = rg.ones(6000, 6000)
done = {}
def background():
    done["value"] = rg.ones(3000, 3000).mm(rg.ones(3000, 6000)).sum().item()
worker = threading.Thread(target=background)
worker.start()
print("ready", flush=True)
try:
    a.mm(a)
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
worker.join()
print("background", done.get("value"), flush=True)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the SIGINT chaining is tested on Linux")
def test_ctrl_c_stops_the_main_threads_kernel_but_not_another_threads():
    env = child_env()
    child = subprocess.Popen([sys.executable, "-c", BACKGROUND_CHILD], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)
        assert child.stdout.readline().strip() == "interrupted"
        words = child.stdout.readline().split()
        assert words[0] == "background" and words[1] != "None", words
        assert float(words[1]) == pytest.approx(3000.0 * 3000 * 6000, rel=1e-6)
        assert child.wait(timeout=60) == 0
    finally:
        child.kill()


def test_a_random_draw_that_fails_leaves_the_generator_where_it_was():
    rustgrad.manual_seed(7)
    expected = rustgrad.randn(5).tolist()
    rustgrad.manual_seed(7)
    with pytest.raises(errors.OutOfMemoryError):
        rustgrad.randn(2**62)
    assert rustgrad.randn(5).tolist() == expected
