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
import sys, time
import rustgrad as rg
case = sys.argv[1]
a = rg.ones(6000, 6000)
x = rg.ones(100_000_000)
ops = {
    "matmul": lambda: a.mm(a),
    "randn": lambda: [rg.randn(100_000_000) for _ in range(20)],
    "elementwise": lambda: [x.exp() for _ in range(100)],
    "backward": lambda: [a.clone().requires_grad_().mm(a).sum().backward() for _ in range(4)],
}
print("ready", flush=True)
try:
    ops[case]()
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", time.monotonic(), flush=True)
assert (rg.ones(2, 2).mm(rg.ones(2, 2)).sum().item()) == 8.0
print("usable", flush=True)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the SIGINT chaining is tested on Linux")
@pytest.mark.parametrize("case", ["matmul", "elementwise", "backward", "randn"])
def test_ctrl_c_stops_a_long_kernel_and_leaves_the_process_usable(case):
    env = child_env()
    child = subprocess.Popen([sys.executable, "-c", CHILD, case], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.5)  # well inside the op: each runs for several seconds uninterrupted
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        words = child.stdout.readline().split()
        assert words and words[0] == "interrupted", words
        # Uninterrupted, each op runs for seconds after the signal; a kernel that does
        # not poll would hold it that long. The measured delay is tens of milliseconds.
        assert float(words[1]) - sent < 1.5
        assert child.stdout.readline().strip() == "usable"
        assert child.wait(timeout=60) == 0
    finally:
        child.kill()


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
