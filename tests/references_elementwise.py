"""References of the elementwise ops with more than one input (``atan2``, ``pow``, ``lerp``, ...),
the comparisons, the logical ops and the float tests (``isnan``, ``nan_to_num``)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from _op_reference import TableReference, one_shape
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_property_ops import float_arrays, relayout, values

# ---------------------------------------------------------------- inputs


def broadcastable(count: int) -> Callable[[Any], list[tuple[int, ...]]]:
    """``count`` shapes that broadcast together (rank 0 to 4, sides 0 to 3)."""

    def draw(data: Any) -> list[tuple[int, ...]]:
        shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=count, min_dims=0, max_dims=4, max_side=3))
        return list(shapes.input_shapes)

    return draw


def moderate_floats(data: Any, shapes: list[tuple[int, ...]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Floats of one dtype in [-10, 10] with NaN, ±inf and -0.0, but not the float32 extremes: an op
    computed in float32 that overflows in an intermediate step is no match for float64 then."""
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    return [data.draw(float_arrays(shape=s, dtype=dtype, elements=values(dtype, wide=False))) for s in shapes]


def bools(data: Any, shapes: list[tuple[int, ...]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Bool arrays in any layout: TF1's logical ops take bools only."""
    out = []
    for shape in shapes:
        a = data.draw(hnp.arrays(np.bool_, shape))
        out.append((a, relayout(a, data.draw(st.sampled_from(["c", "fortran", "strided", "reversed"])))))
    return out


def arrays(data: Any, shape: tuple[int, ...], elements: st.SearchStrategy) -> np.ndarray:
    return data.draw(hnp.arrays(np.float64, shape, elements=elements))


def away_from_zero(lo: float = 0.2, hi: float = 2.0) -> st.SearchStrategy:
    return st.one_of(st.floats(-hi, -lo), st.floats(lo, hi))


def grad_uniform(*elements: st.SearchStrategy) -> Callable[[Any, list], list[np.ndarray]]:
    """Gradient inputs, each input's elements drawn from its strategy."""
    return lambda data, shapes: [arrays(data, s, e) for s, e in zip(shapes, elements)]


def grad_untied(data: Any, shapes: list) -> list[np.ndarray]:
    """The first input on odd tenths and the second on even ones: never tied (no derivative at a tie)."""
    odd = arrays(data, shapes[0], st.integers(-10, 9).map(float))
    even = arrays(data, shapes[1], st.integers(-10, 10).map(float))
    return [np.asarray(odd * 0.2 + 0.1), np.asarray(even * 0.2)]


def grad_off_multiples(data: Any, shapes: list) -> list[np.ndarray]:
    """A divisor of ±0.8 or ±1.6 and a dividend that is never within 0.05·|divisor| of one of its
    multiples: fmod and remainder jump there."""
    fractions = st.tuples(st.integers(-2, 1), st.floats(0.1, 0.9)).map(lambda kf: 0.8 * (kf[0] + kf[1]))
    return [arrays(data, shapes[0], fractions), arrays(data, shapes[1], st.sampled_from([0.8, -0.8, 1.6, -1.6]))]


# ---------------------------------------------------------------- numpy references


def power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C's pow elementwise: numpy takes x ** 0.5 for sqrt(x) when the exponent is one number
    ((-inf) ** 0.5 is NaN there, +inf elementwise); the tensor exponent of pow is elementwise."""
    base, exponent = (np.array(a) for a in np.broadcast_arrays(x, y))
    return np.power(base.reshape(-1), exponent.reshape(-1)).reshape(base.shape)


def xlogy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.where(np.isnan(y), np.nan, np.where(x == 0, 0.0, x * np.log(y)))


def lerp(x: np.ndarray, end: np.ndarray, weight: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        diff = end - x
        return np.where(np.abs(weight) < 0.5, x + weight * diff, end - diff * (1 - weight))


def isclose(x: np.ndarray, y: np.ndarray, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> np.ndarray:
    """torch's test, computed in the inputs' dtype as torch computes it: equal values (infinities of
    one sign included) are close, others when |x - y| is finite and within atol + |rtol·y|."""
    real = x.dtype.type
    with np.errstate(all="ignore"):
        error = np.abs(x - y)
        close = (x == y) | (np.isfinite(error) & (error <= real(atol) + np.abs(real(rtol) * y)))
    return close | (np.isnan(x) & np.isnan(y)) if equal_nan else close


def nan_to_num(x: np.ndarray, nan: float = 0.0, posinf: Any = None, neginf: Any = None) -> np.ndarray:
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def binary(numpy: Callable[..., Any], **kwargs: Any) -> TableReference:
    """A binary op without arguments: the same call on both fronts."""
    options = {"shapes": broadcastable(2), **kwargs}
    return TableReference(numpy, lambda data, shapes: {}, lambda data, kw: {}, **options)


def comparison(numpy: Callable[..., Any]) -> TableReference:
    return binary(numpy, result_dtype=np.bool_)


def logical(numpy: Callable[..., Any], count: int) -> TableReference:
    return TableReference(numpy, lambda data, shapes: {}, lambda data, kw: {}, shapes=broadcastable(count),
                          draw_inputs=bools, result_dtype=np.bool_)


def float_test(numpy: Callable[..., Any]) -> TableReference:
    return TableReference(numpy, lambda data, shapes: {}, lambda data, kw: {}, result_dtype=np.bool_)


def nan_to_num_args(data: Any, shapes: list) -> dict:
    replacement = st.floats(-1e3, 1e3, width=32)
    return {"nan": data.draw(replacement), "posinf": data.draw(replacement), "neginf": data.draw(replacement)}


def isclose_args(data: Any, shapes: list) -> dict:
    tolerance = st.sampled_from([0.0, 1e-8, 1e-5, 1e-3, 0.5])
    return {"rtol": data.draw(tolerance), "atol": data.draw(tolerance), "equal_nan": data.draw(st.booleans())}


REFERENCES = {
    "atan2": binary(np.arctan2, grad_inputs=grad_uniform(st.floats(-2, 2), st.floats(0.3, 2))),
    "hypot": binary(np.hypot, grad_inputs=grad_uniform(away_from_zero(), away_from_zero())),
    "fmod": binary(np.fmod, grad_inputs=grad_off_multiples),
    "pow": binary(power, float32_tolerance=1e-5, grad_inputs=grad_uniform(st.floats(0.3, 2), st.floats(-2, 2))),
    "copysign": binary(np.copysign, grad_inputs=grad_uniform(away_from_zero(), away_from_zero())),
    "xlogy": binary(xlogy, float32_tolerance=1e-5,
                    grad_inputs=grad_uniform(away_from_zero(0.1), st.floats(0.3, 2))),
    "squared_difference": binary(lambda x, y: np.square(x - y), draw_inputs=moderate_floats),
    "logaddexp": binary(np.logaddexp, float32_tolerance=1e-5),
    "fmax": binary(np.fmax, grad_inputs=grad_untied),
    "fmin": binary(np.fmin, grad_inputs=grad_untied),
    "clamp_min": binary(np.maximum, grad_inputs=grad_untied),
    "clamp_max": binary(np.minimum, grad_inputs=grad_untied),
    "lerp": TableReference(lerp, lambda data, shapes: {}, lambda data, kw: {}, shapes=broadcastable(3),
                           draw_inputs=moderate_floats, float32_tolerance=1e-5),
    "logical_and": logical(np.logical_and, 2),
    "logical_or": logical(np.logical_or, 2),
    "logical_xor": logical(np.logical_xor, 2),
    "logical_not": logical(np.logical_not, 1),
    "isnan": float_test(np.isnan),
    "isinf": float_test(np.isinf),
    "isposinf": float_test(np.isposinf),
    "isneginf": float_test(np.isneginf),
    "isfinite": float_test(np.isfinite),
    "nan_to_num": TableReference(nan_to_num, nan_to_num_args, lambda data, kw: dict(kw), shapes=one_shape),
    "eq": comparison(np.equal),
    "ne": comparison(np.not_equal),
    "lt": comparison(np.less),
    "le": comparison(np.less_equal),
    "gt": comparison(np.greater),
    "ge": comparison(np.greater_equal),
    "isclose": TableReference(isclose, isclose_args, lambda data, kw: dict(kw), shapes=broadcastable(2),
                              result_dtype=np.bool_, reference_in_float64=False),
}
