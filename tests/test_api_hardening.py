"""Hardened Python API: grad-mode decorators on generators, inference_mode(False), factory argument
errors, repr of tensors of any rank, and instantiating an autograd.Function."""

from __future__ import annotations

import inspect
import resource
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rustgrad
from rustgrad import _repr
from rustgrad.errors import ArgumentTypeError, GradientError, OutOfMemoryError, RustgradError, ShapeError

# ----- grad-mode decorators on generator functions -----

DISABLING = {
    "no_grad()": lambda: rustgrad.no_grad(),
    "no_grad": lambda: rustgrad.no_grad,
    "set_grad_enabled(False)": lambda: rustgrad.set_grad_enabled(False),
    "inference_mode()": lambda: rustgrad.inference_mode(),
    "inference_mode": lambda: rustgrad.inference_mode,
}
ENABLING = {
    "enable_grad()": lambda: rustgrad.enable_grad(),
    "enable_grad": lambda: rustgrad.enable_grad,
    "set_grad_enabled(True)": lambda: rustgrad.set_grad_enabled(True),
    "inference_mode(False)": lambda: rustgrad.inference_mode(False),
}


def _recording_generator(decorator, x):
    @decorator
    def steps():
        for _ in range(3):
            yield (x * 2).requires_grad, rustgrad.is_grad_enabled()

    return steps


@pytest.mark.parametrize("make", DISABLING.values(), ids=DISABLING.keys())
def test_disabling_decorator_on_a_generator_applies_inside_it_at_every_step(make):
    x = rustgrad.ones(2, requires_grad=True)
    steps = _recording_generator(make(), x)
    assert inspect.isgeneratorfunction(steps) and steps.__name__ == "steps"
    seen = []
    for inside in steps():
        seen.append(inside)
        # Between steps the caller's mode is back.
        assert rustgrad.is_grad_enabled()
        assert (x * 2).requires_grad
    assert seen == [(False, False)] * 3


@pytest.mark.parametrize("make", ENABLING.values(), ids=ENABLING.keys())
def test_enabling_decorator_on_a_generator_applies_inside_it_under_no_grad(make):
    x = rustgrad.ones(2, requires_grad=True)
    with rustgrad.no_grad():
        steps = _recording_generator(make(), x)
        seen = []
        for inside in steps():
            seen.append(inside)
            assert not rustgrad.is_grad_enabled()
    assert seen == [(True, True)] * 3


def test_decorated_generator_forwards_send_throw_close_and_its_return_value():
    log = []

    @rustgrad.no_grad()
    def echo():
        try:
            received = yield "ready"
            while received is not None:
                log.append(("got", received, rustgrad.is_grad_enabled()))
                try:
                    received = yield received * 2
                except KeyError as err:
                    log.append(("caught", err.args[0], rustgrad.is_grad_enabled()))
                    received = yield "recovered"
            return "done"
        finally:
            log.append(("finally", rustgrad.is_grad_enabled()))

    gen = echo()
    assert next(gen) == "ready"
    assert gen.send(21) == 42
    assert gen.throw(KeyError("k")) == "recovered"
    assert rustgrad.is_grad_enabled()
    with pytest.raises(StopIteration) as stop:
        gen.send(None)
    assert stop.value.value == "done"
    assert log == [("got", 21, False), ("caught", "k", False), ("finally", False)]

    closed = echo()
    next(closed)
    closed.close()
    assert log[-1] == ("finally", False) and rustgrad.is_grad_enabled()


def test_exception_from_a_decorated_generator_restores_the_callers_mode():
    @rustgrad.no_grad()
    def failing():
        yield 1
        raise ValueError("inside")

    gen = failing()
    next(gen)
    with pytest.raises(ValueError, match="inside"):
        next(gen)
    assert rustgrad.is_grad_enabled()


def test_plain_functions_keep_working_with_bare_and_called_decorators():
    x = rustgrad.ones(2, requires_grad=True)

    @rustgrad.no_grad
    def double(t):
        return t * 2

    @rustgrad.no_grad()
    def triple(t):
        return t * 3

    assert not double(x).requires_grad and not triple(x).requires_grad
    assert double.__name__ == "double"
    assert rustgrad.is_grad_enabled()


def test_detect_anomaly_decorator_applies_inside_a_generator():
    @rustgrad.autograd.detect_anomaly()
    def steps():
        yield rustgrad.autograd.is_anomaly_enabled()

    assert list(steps()) == [True]
    assert not rustgrad.autograd.is_anomaly_enabled()


# ----- inference_mode(mode) -----

def test_inference_mode_false_is_accepted_and_records_as_in_torch():
    x = rustgrad.ones(2, requires_grad=True)
    with rustgrad.inference_mode(False):
        assert (x * 2).requires_grad
    # torch: leaving inference mode turns grad mode on, also inside no_grad.
    with rustgrad.no_grad(), rustgrad.inference_mode(False):
        assert rustgrad.is_grad_enabled()
    assert rustgrad.is_grad_enabled()

    @rustgrad.inference_mode(False)
    def double(t):
        return t * 2

    with rustgrad.no_grad():
        assert double(x).requires_grad


def test_inference_mode_true_records_nothing():
    x = rustgrad.ones(2, requires_grad=True)
    with rustgrad.inference_mode(True):
        assert not (x * 2).requires_grad
    assert rustgrad.is_grad_enabled()


def test_inference_mode_with_a_non_bool_raises_type_error():
    with pytest.raises(ArgumentTypeError, match="mode must be True, False or a function"):
        rustgrad.inference_mode("yes")
    assert issubclass(ArgumentTypeError, TypeError)


# ----- factories: bad arguments raise rustgrad errors -----

# Each case is refused before anything is allocated (no numpy or Rust buffer is made).
BAD_FACTORY_CALLS = [
    (lambda: rustgrad.zeros(2.5), ArgumentTypeError, r"zeros\(\): size .* must be an integer, got float"),
    (lambda: rustgrad.ones("3"), ArgumentTypeError, r"ones\(\): size .* must be an integer, got str"),
    (lambda: rustgrad.randn(2, 1.5), ArgumentTypeError, r"randn\(\): size .* must be an integer"),
    (lambda: rustgrad.full((2,), "a"), ArgumentTypeError, r"full\(\): fill_value must be a real number"),
    (lambda: rustgrad.eye(2.5), ArgumentTypeError, r"eye\(\): n must be an integer, got float"),
    (lambda: rustgrad.eye(None), ArgumentTypeError, r"eye\(\): n must be an integer, got NoneType"),
    (lambda: rustgrad.eye(3, 1.5), ArgumentTypeError, r"eye\(\): m must be an integer"),
    (lambda: rustgrad.linspace(0, 1, 2.5), ArgumentTypeError, r"linspace\(\): steps must be an integer"),
    (lambda: rustgrad.linspace(0, "1", 3), ArgumentTypeError, r"linspace\(\): end must be a real number"),
    (lambda: rustgrad.arange("a"), ArgumentTypeError, r"arange\(\): end must be a real number, got str"),
    (lambda: rustgrad.arange(0, 1, 1j), ArgumentTypeError, r"step must be a real number.*no complex dtype"),
    (lambda: rustgrad.arange(float("nan")), ShapeError, r"arange: unsupported range: 0 -> nan"),
    (lambda: rustgrad.arange(float("nan"), 1), ShapeError, r"arange: unsupported range: nan -> 1"),
    (lambda: rustgrad.arange(0, float("inf")), ShapeError, r"arange: unsupported range: 0 -> inf"),
    (lambda: rustgrad.arange(10**400), ShapeError, r"arange: unsupported range"),
    (lambda: rustgrad.arange(0, 1, 0), ShapeError, r"arange: step must be nonzero and finite, got 0"),
    (lambda: rustgrad.arange(0, 1, float("nan")), ShapeError, r"step must be nonzero and finite, got nan"),
    (lambda: rustgrad.arange(0, 1, float("inf")), ShapeError, r"step must be nonzero and finite, got inf"),
    (lambda: rustgrad.arange(1, 0), ShapeError, r"inconsistent with step sign"),
    (lambda: rustgrad.arange(0, 1, -0.5), ShapeError, r"inconsistent with step sign"),
    (lambda: rustgrad.eye(-1), ShapeError, r"eye: n and m must be non-negative"),
    (lambda: rustgrad.linspace(0, 1, -1), ShapeError, r"linspace: number of steps must be non-negative"),
    (lambda: rustgrad.zeros(2**70), OutOfMemoryError,
     r"zeros: cannot allocate 4722366482869645213696 bytes for a float32 tensor of shape \[1180591620717411303424\]"),
    (lambda: rustgrad.ones(2**62, 4, dtype=rustgrad.float64), OutOfMemoryError,
     r"ones: cannot allocate \d+ bytes for a float64 tensor of shape \[4611686018427387904, 4\]"),
    (lambda: rustgrad.rand(2**40, 2**40), OutOfMemoryError, r"rand: cannot allocate \d+ bytes for a float32"),
    (lambda: rustgrad.full((2**64,), 1.0), OutOfMemoryError, r"full: cannot allocate \d+ bytes"),
    (lambda: rustgrad.arange(0, 2**70), OutOfMemoryError,
     r"arange: cannot allocate \d+ bytes for a int64 tensor of shape \[1180591620717411303424\]"),
    (lambda: rustgrad.linspace(0, 1, 2**62), OutOfMemoryError,
     r"linspace: cannot allocate 18446744073709551616 bytes for a float32 tensor of shape \[4611686018427387904\]"),
    (lambda: rustgrad.eye(2**40, dtype=rustgrad.bool), OutOfMemoryError,
     r"eye: cannot allocate \d+ bytes for a bool tensor of shape \[1099511627776, 1099511627776\]"),
]


@pytest.mark.parametrize("call, error, message", BAD_FACTORY_CALLS)
def test_bad_factory_arguments_raise_rustgrad_errors(call, error, message):
    with pytest.raises(error, match=message) as info:
        call()
    assert isinstance(info.value, RustgradError)


def test_factory_argument_errors_are_the_builtins_torch_raises():
    with pytest.raises(TypeError):
        rustgrad.zeros(2.5)
    with pytest.raises(RuntimeError, match="unsupported range"):
        rustgrad.arange(float("nan"))
    with pytest.raises(MemoryError):
        rustgrad.zeros(2**70)


def _run_capped(code: str) -> subprocess.CompletedProcess:
    """Runs ``code`` in a child whose address space is capped, so a huge allocation fails at once."""

    def cap() -> None:
        limit = 3 << 30
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=60, preexec_fn=cap)


@pytest.mark.parametrize("call, shape, nbytes", [
    ("rustgrad.arange(0, 1, 1e-12)", "[1000000000000]", 4000000000000),
    ("rustgrad.eye(10**6)", "[1000000, 1000000]", 4000000000000),
    ("rustgrad.eye(3, 10**12)", "[3, 1000000000000]", 12000000000000),
    ("rustgrad.linspace(0, 1, 10**12)", "[1000000000000]", 4000000000000),
])
def test_too_large_sequence_factories_raise_out_of_memory_naming_op_shape_dtype_and_bytes(call, shape, nbytes):
    op = call.split(".")[1].split("(")[0]
    done = _run_capped(f"""
        import rustgrad
        from rustgrad.errors import OutOfMemoryError
        try:
            {call}
        except OutOfMemoryError as err:
            assert isinstance(err, MemoryError)
            print("OOM:", err)
        x = rustgrad.ones(3) + 1  # the process is still usable
        print("after:", float(x.sum()))
    """)
    assert done.returncode == 0, done.stderr
    assert f"OOM: {op}: cannot allocate {nbytes} bytes for a float32 tensor of shape {shape}" in done.stdout
    assert "after: 6.0" in done.stdout


@pytest.mark.parametrize("args", [(5,), (0, 1, 0.25), (2, 8, 2), (-1.0, 1.0, 0.5), (1, 0, -0.25), (0.1, 1.3, 0.1),
                                  (3, 3), (0, 2**20, 7)])
def test_arange_values_match_numpy(args):
    t = rustgrad.arange(*args, dtype=rustgrad.float64)
    np.testing.assert_allclose(t.numpy(), np.arange(*args, dtype=np.float64), rtol=1e-15, atol=0)
    integers = all(isinstance(a, int) for a in args)
    assert rustgrad.arange(*args).dtype == (rustgrad.int64 if integers else rustgrad.float32)


@pytest.mark.parametrize("args", [(0, 1, 5), (-3.5, 7.25, 11), (2, 2, 4), (1, 0, 1), (0, 1, 0),
                                  (0, 1e-300, 70000), (0, 5e-324, 70000), (-1, 1, 2**17 + 3)])
def test_linspace_values_match_numpy(args):
    np.testing.assert_array_equal(rustgrad.linspace(*args, dtype=rustgrad.float64).numpy(),
                                  np.linspace(*args, dtype=np.float64))
    np.testing.assert_array_equal(rustgrad.linspace(*args).numpy(),
                                  np.linspace(*args, dtype=np.float64).astype(np.float32))


@pytest.mark.parametrize("n, m", [(0, None), (1, None), (3, None), (2, 5), (5, 2), (4, 0)])
def test_eye_values_match_numpy(n, m):
    t = rustgrad.eye(n, m, requires_grad=True)
    np.testing.assert_array_equal(t.detach().numpy(), np.eye(n, m))
    assert t.requires_grad and t.dtype == rustgrad.float32


def test_factories_accept_numpy_integers_and_tensor_scalars():
    assert rustgrad.zeros(np.int64(2), np.int32(3)).shape == (2, 3)
    assert rustgrad.eye(np.int64(2)).shape == (2, 2)
    assert rustgrad.arange(rustgrad.tensor(3.0)).shape == (3,)
    assert rustgrad.full((2,), np.float32(1.5)).numpy().tolist() == [1.5, 1.5]


# ----- repr of tensors of any rank -----

def test_repr_of_a_rank_72_tensor():
    t = rustgrad.ones(*([1] * 72), requires_grad=True)
    assert repr(t) == "tensor(" + "[" * 72 + "1." + "]" * 72 + ", requires_grad=True)"


def test_repr_of_high_rank_tensors_follows_numpy_layout():
    if np.lib.NumpyVersion(np.__version__) < "2.0.0":
        pytest.skip("numpy 1.x cannot make a 40-dimensional array to compare with")
    for shape in [(1,) * 38 + (3, 1000), (1,) * 35 + (2, 3, 4), (2,) * 5 + (1,) * 30 + (7,)]:
        t = rustgrad.randn(*shape, dtype=rustgrad.float64)
        expected = np.array2string(np.asarray(t), separator=", ", prefix="tensor(", precision=4,
                                   floatmode="maxprec", suppress_small=False)
        assert repr(t) == f"tensor({expected}, dtype=rustgrad.float64)"


@pytest.mark.parametrize("shape", [(5,), (2000,), (3, 4), (1, 40), (2, 3, 4), (10, 10, 11), (3, 2, 200),
                                   (7, 7, 7, 7), (2, 1, 3, 1, 2), (0, 3)])
@pytest.mark.parametrize("kind", ["normal", "large", "special", "bool"])
def test_nested_layout_matches_numpy_for_low_ranks(shape, kind, rng):
    size = int(np.prod(shape))
    if kind == "bool":
        flat = rng.random(size) > 0.5
        options = {}
    else:
        flat = rng.standard_normal(size) * (1e6 if kind == "large" else 1)
        if kind == "special" and size > 3:
            flat[:3] = [np.nan, -np.inf, 1e-9]
        options = {"precision": 4, "suppress_small": False, "floatmode": "maxprec"}
    expected = np.array2string(flat.reshape(shape), separator=", ", prefix="tensor(", **options)
    assert _repr.format_nested(flat, shape, **options) == expected


def test_repr_of_an_empty_high_rank_tensor():
    t = rustgrad.zeros(*([1] * 40), 0)
    assert repr(t) == f"tensor([], size={(1,) * 40 + (0,)})"


# ----- instantiating an autograd.Function -----

class Double(rustgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_instantiating_a_function_warns_and_calling_the_instance_raises_runtime_error():
    with pytest.warns(DeprecationWarning, match=r"Double should not be instantiated.*Double\.apply"):
        fn = Double()
    with pytest.raises(GradientError, match="Legacy autograd function with non-static forward method is "
                                            "deprecated. Please use new-style autograd function with static "
                                            r"forward method.*Double\.apply") as info:
        fn(rustgrad.ones(2))
    assert isinstance(info.value, RuntimeError)
    # apply still works through the class (and through the instance, as in torch).
    x = rustgrad.ones(2, requires_grad=True)
    Double.apply(x).sum().backward()
    assert x.grad.numpy().tolist() == [2.0, 2.0]
    assert fn.apply(x).detach().numpy().tolist() == [2.0, 2.0]
