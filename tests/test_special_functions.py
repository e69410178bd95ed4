"""The float32 special functions that vectorise (``rust/kernels/vecmath``) against float64 numpy (or
``math``) at the same float32 inputs, in units in the last place of the float32 result, and the
activations built on them against float64 formulas. Each function is swept densely over its range
with its edge values: a branch of a piece picked wrongly, or a constant off by a bit, shows here."""

from __future__ import annotations

import math

import numpy as np
import pytest

import rustgrad
import rustgrad.nn.functional as F


def sweep(lo: float, hi: float, count: int = 200_001) -> np.ndarray:
    return np.linspace(lo, hi, count, dtype=np.float64).astype(np.float32)


def ulps(got: np.ndarray, want: np.ndarray, scale: np.ndarray | None = None) -> np.ndarray:
    """|got - want| in units of the float32 spacing at |want| (or at |scale|), and of the smallest
    subnormal below it."""
    at = np.abs(want if scale is None else scale)
    spacing = np.maximum(at * np.finfo(np.float32).eps, np.finfo(np.float32).smallest_subnormal)
    return np.abs(got.astype(np.float64) - want) / spacing


erf64 = np.vectorize(math.erf, otypes=[np.float64])

FUNCTIONS = {
    "expm1": (np.expm1, np.concatenate([sweep(-20, 88.7), sweep(-1e-3, 1e-3)])),
    "log1p": (np.log1p, np.concatenate([sweep(-0.999, 10), sweep(-1e-3, 1e-3), sweep(10, 1e30, 20_001)])),
    "sinh": (np.sinh, np.concatenate([sweep(-89.4, 89.4), sweep(-3, 3)])),
    "cosh": (np.cosh, np.concatenate([sweep(-89.4, 89.4), sweep(-3, 3)])),
    "asinh": (np.arcsinh, np.concatenate([sweep(-1e6, 1e6), sweep(-3, 3)])),
    "acosh": (np.arccosh, np.concatenate([sweep(1, 1e6), sweep(1, 3)])),
    "atanh": (np.arctanh, sweep(-0.9999, 0.9999)),
    "tan": (np.tan, np.concatenate([sweep(-1024, 1024), sweep(-3, 3)])),
    "atan": (np.arctan, np.concatenate([sweep(-1e4, 1e4), sweep(-3, 3)])),
    "asin": (np.arcsin, sweep(-1, 1)),
    "acos": (np.arccos, sweep(-1, 1)),
    "erf": (erf64, sweep(-6, 6, 60_001)),
    "exp2": (np.exp2, np.concatenate([sweep(-149, 127.9), sweep(-1, 1)])),
    "log2": (np.log2, np.concatenate([sweep(1e-30, 1e30), sweep(0.01, 10), sweep(1e-45, 1e-38, 20_001)])),
    "log10": (np.log10, np.concatenate([sweep(1e-30, 1e30), sweep(0.01, 10), sweep(1e-45, 1e-38, 20_001)])),
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_float32_function_is_within_two_ulps_of_float64(name):
    reference, x = FUNCTIONS[name]
    got = getattr(rustgrad.from_numpy(x), name)().numpy()
    want = reference(x.astype(np.float64))
    err = ulps(got, want)
    worst = int(np.argmax(err))
    assert err[worst] < 2.0, f"{name}({x[worst]!r}) = {got[worst]!r}, want {want[worst]!r}: {err[worst]:.2f} ulps"


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_float32_function_keeps_the_c_library_edges(name):
    reference, _ = FUNCTIONS[name]
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 2000.0, -2000.0], dtype=np.float32)
    got = getattr(rustgrad.from_numpy(x), name)().numpy()
    with np.errstate(all="ignore"):
        want = reference(x.astype(np.float64)).astype(np.float32)
    if name == "tan":  # float64 tan of float32's ±inf is NaN as float32's; ±2000 go to the C library
        want[[1, 2]] = np.nan
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    numbers = ~np.isnan(want)
    assert np.all(np.signbit(got[numbers]) == np.signbit(want[numbers])), (got, want)
    finite = np.isfinite(want)
    assert np.all(ulps(got[finite], want[finite].astype(np.float64)) < 2.0), (got, want)


def larger_operand(a: np.ndarray, b: np.ndarray, want: np.ndarray) -> np.ndarray:
    """logaddexp's result cancels where it nears 0 (a + log1p(e^(b-a)) with a < 0), so its error is
    measured against the larger of its operands, as one rounding of them would be."""
    return np.maximum(np.abs(want), np.maximum(np.abs(a), np.abs(b)))


BINARY = {
    "atan2": (np.arctan2, np.linspace(-50, 50, 801, dtype=np.float32), None),
    "logaddexp": (np.logaddexp, np.linspace(-100, 100, 801, dtype=np.float32), larger_operand),
    "xlogy": (lambda a, b: a * np.log(b), np.linspace(1e-3, 100, 801, dtype=np.float32), None),
}


@pytest.mark.parametrize("name", list(BINARY))
def test_float32_binary_function_is_within_two_ulps_of_float64(name):
    reference, values, scale = BINARY[name]
    a, b = (v.reshape(-1).astype(np.float64) for v in np.meshgrid(values, values))
    got = getattr(rustgrad, name)(rustgrad.from_numpy(a.astype(np.float32)), rustgrad.from_numpy(b.astype(np.float32)))
    want = reference(a, b)
    err = ulps(got.numpy(), want, None if scale is None else scale(a, b, want))
    worst = int(np.argmax(err))
    assert err[worst] < 2.0, f"{name}({a[worst]!r}, {b[worst]!r}) = {got.numpy()[worst]!r}, want {want[worst]!r}"


def test_float32_atan2_keeps_c_s_signs_at_zeros_and_infinities():
    special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan], dtype=np.float32)
    y, x = (v.reshape(-1) for v in np.meshgrid(special, special))
    got = rustgrad.atan2(rustgrad.from_numpy(y), rustgrad.from_numpy(x)).numpy()
    # float64's, rounded: numpy's float32 arctan2 is an ulp low at (1, 1).
    want = np.arctan2(y.astype(np.float64), x.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def powers_to_compare() -> tuple[np.ndarray, np.ndarray]:
    """Bases over float32's range and its subnormals, both signs, against exponents that are whole
    (odd and even), halves, small and large."""
    magnitudes = np.concatenate([np.geomspace(1e-45, 3e38, 1501), np.linspace(0.5, 2.0, 301)]).astype(np.float32)
    bases = np.concatenate([magnitudes, -magnitudes])
    exponents = [-150.5, -37, -3, -2, -1.5, -1, -0.5, -1e-3, 1e-7, 1 / 3, 0.5, 1.5, 2, 3, 7.25, 40]
    exponents = np.array(exponents, np.float32)
    x, y = (v.reshape(-1) for v in np.meshgrid(bases, exponents))
    return x, y


def test_float32_pow_is_the_float64_power_rounded_once():
    x, y = powers_to_compare()
    got = rustgrad.pow(rustgrad.from_numpy(x), rustgrad.from_numpy(y)).numpy()
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    representable = np.isfinite(want) & (np.abs(want) <= np.finfo(np.float32).max)
    err = ulps(got[representable], want[representable])
    worst = int(np.argmax(err))
    assert err[worst] < 0.5 + 1e-5, f"{x[representable][worst]!r} ** {y[representable][worst]!r}: {err[worst]} ulps"
    overflow = np.isfinite(want) & ~representable
    np.testing.assert_array_equal(got[overflow], np.copysign(np.inf, want[overflow]).astype(np.float32))


@pytest.mark.parametrize("exponent", [3.0, -1.0, -2.0, 1.5, -0.5, 0.5, 2.0, 1 / 3])
def test_float32_power_of_a_number_is_rounded_once_in_either_order(exponent):
    x, _ = powers_to_compare()
    base = rustgrad.from_numpy(x)
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), np.float64(np.float32(exponent)))
        reversed_want = np.power(np.float64(np.float32(exponent)), x.astype(np.float64))
    # x ** 0.5 is sqrt(x), NaN at -inf, as numpy and torch; the others follow C's pow.
    for got, expected in [((base**exponent).numpy(), want), ((exponent**base).numpy(), reversed_want)]:
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
        representable = np.isfinite(expected) & (np.abs(expected) <= np.finfo(np.float32).max)
        err = ulps(got[representable], expected[representable])
        assert err.max() < 0.5 + 1e-5, (exponent, x[representable][int(np.argmax(err))])


def test_float32_pow_keeps_c_s_edges():
    special = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, np.inf, -np.inf, np.nan], np.float32)
    x, y = (v.reshape(-1) for v in np.meshgrid(special, special))
    got = rustgrad.pow(rustgrad.from_numpy(x), rustgrad.from_numpy(y)).numpy()
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got[~np.isnan(want)]), np.signbit(want[~np.isnan(want)]))


def gelu64(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * np.vectorize(math.erfc)(-x / math.sqrt(2.0))


def softplus64(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


ACTIVATIONS = {
    "gelu": (F.gelu, gelu64),
    "elu": (F.elu, lambda x: np.where(x > 0, x, np.expm1(x))),
    "selu": (F.selu, lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))),
    "softplus": (F.softplus, lambda x: np.where(x > 20, x, softplus64(x))),
    "logsigmoid": (F.logsigmoid, lambda x: -np.logaddexp(0.0, -x)),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_float32_activation_matches_its_float64_formula(name):
    ours, reference = ACTIVATIONS[name]
    x = sweep(-3, 3, 60_001)
    got = ours(rustgrad.from_numpy(x)).numpy()
    want = reference(x.astype(np.float64))
    # The activations round their argument once or twice in float32 (x/√2 for gelu) before the
    # function amplifies it, so the bound is relative, a few float32 epsilons.
    np.testing.assert_allclose(got, want, rtol=8 * np.finfo(np.float32).eps, atol=1e-7)


LAYOUT_OPS = {
    "pow": rustgrad.pow,
    "atan2": rustgrad.atan2,
    "logaddexp": rustgrad.logaddexp,
    "xlogy": rustgrad.xlogy,
    "fmod": rustgrad.fmod,
    "fmax": rustgrad.fmax,
    "maximum": rustgrad.maximum,  # an arithmetic op: the runs' plain loops
}


@pytest.mark.parametrize("name", list(LAYOUT_OPS))
def test_float32_binary_op_gives_the_bits_of_dense_operands_in_every_layout(name):
    # A number against a tensor, a row, a column and a transposed view each take a path of their
    # own (a map, runs of rows or of one value, gathered operands); every one must give the bits of
    # the dense operands'.
    op = LAYOUT_OPS[name]
    rng = np.random.default_rng(5)
    x = rng.uniform(0.1, 4.0, (37, 70)).astype(np.float32)
    dense = rustgrad.from_numpy(x)
    others = {
        "number": rng.uniform(0.1, 4.0, ()).astype(np.float32),
        "row": rng.uniform(0.1, 4.0, (70,)).astype(np.float32),
        "column": rng.uniform(0.1, 4.0, (37, 1)).astype(np.float32),
    }
    for layout, y in others.items():
        small = rustgrad.from_numpy(y)
        expanded = rustgrad.from_numpy(np.ascontiguousarray(np.broadcast_to(y, x.shape)))
        for got, want in ((op(dense, small), op(dense, expanded)), (op(small, dense), op(expanded, dense))):
            assert np.array_equal(got.numpy().view(np.uint32), want.numpy().view(np.uint32)), f"{name}, {layout}"
    transposed = rustgrad.from_numpy(np.ascontiguousarray(x.T)).t()
    want = op(dense, dense * 0.5).numpy().view(np.uint32)
    assert np.array_equal(op(transposed, dense * 0.5).numpy().view(np.uint32), want), f"{name}, transposed"
    # Both operands broadcast, with short rows: walked in chunks (9000 elements, three chunks).
    left, right = (rng.uniform(0.1, 4.0, shape).astype(np.float32) for shape in ((300, 1, 5), (1, 6, 5)))
    full = [rustgrad.from_numpy(np.ascontiguousarray(np.broadcast_to(v, (300, 6, 5)))) for v in (left, right)]
    got = op(rustgrad.from_numpy(left), rustgrad.from_numpy(right))
    assert np.array_equal(got.numpy().view(np.uint32), op(*full).numpy().view(np.uint32)), f"{name}, walked"


@pytest.mark.parametrize("name", ["gelu", "silu", "softplus", "elu"])
def test_float32_activation_gradient_of_a_transposed_input_gives_the_dense_bits(name):
    # The backward of a view reads the input through its strides: gathered first, the slope must
    # round as over the dense input.
    act = getattr(F, name)
    x = np.random.default_rng(6).uniform(-4.0, 4.0, (45, 38)).astype(np.float32)
    g = rustgrad.from_numpy(np.random.default_rng(7).standard_normal((38, 45)).astype(np.float32))
    dense = rustgrad.tensor(np.ascontiguousarray(x.T), requires_grad=True)
    act(dense).backward(g)
    base = rustgrad.tensor(x, requires_grad=True)
    act(base.t()).backward(g)
    assert np.array_equal(base.grad.numpy().T.view(np.uint32), dense.grad.numpy().view(np.uint32)), name
