"""Property tests of the ops that accumulate: sum, mean, amax and amin over any dims, and
2-D matmul, against numpy in eager and static mode.

Values are compared within a bound on the rounding error of an f64 accumulation in any
order; gradients are checked in float64 against central finite differences. The input
strategies and runners are test_property_ops.py's (its docstring says what they generate).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_property_ops import (
    LAYOUTS,
    MODES,
    NAN,
    SPECIALS,
    any_arrays,
    check_grad,
    evaluate,
    float_dtypes,
    relayout,
    shapes,
)

import rustgrad
import rustgrad.static as tf
from rustgrad import errors

# ---------------------------------------------------------------- reductions


REDUCTIONS = {
    "sum": (lambda t, d, k: t.sum(d, k), lambda t, d, k: rustgrad.sum(t, d, keepdim=k), tf.reduce_sum, np.sum),
    "mean": (lambda t, d, k: t.mean(d, k), lambda t, d, k: rustgrad.mean(t, d, keepdim=k), tf.reduce_mean,
             np.mean),
    "amax": (lambda t, d, k: t.amax(d, k), lambda t, d, k: rustgrad.amax(t, d, keepdim=k), tf.reduce_max,
             np.amax),
    "amin": (lambda t, d, k: t.amin(d, k), lambda t, d, k: rustgrad.amin(t, d, keepdim=k), tf.reduce_min,
             np.amin),
}


@st.composite
def reduce_dims(draw, ndim: int):
    """None (all dims), one dim, or a tuple of distinct dims; each possibly negative."""
    if ndim == 0 or draw(st.integers(0, 3)) == 0:
        return None
    chosen = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    dims = [d - ndim if draw(st.booleans()) else d for d in chosen]
    return dims[0] if len(dims) == 1 and draw(st.booleans()) else tuple(dims)


def normalised_axes(dims: Any, ndim: int) -> tuple[int, ...]:
    if dims is None:
        return tuple(range(ndim))
    dims = (dims,) if isinstance(dims, int) else dims
    return tuple(sorted(d % ndim for d in dims))


def reduction_reference(name: str, a: np.ndarray, dims: Any, keepdim: bool) -> tuple[np.ndarray, np.ndarray]:
    """The expected value, and a bound on the rounding error of an f64 accumulation in any order."""
    axes = normalised_axes(dims, a.ndim)
    wide = a.astype(np.float64)
    with np.errstate(all="ignore"):
        if name in ("amax", "amin"):
            ref = REDUCTIONS[name][3](a, axis=axes, keepdims=keepdim)
            return np.asarray(ref), np.zeros(np.shape(ref))
        total = np.sum(wide, axis=axes, keepdims=keepdim)
        magnitude = np.sum(np.abs(wide), axis=axes, keepdims=keepdim)
        count = math.prod(a.shape[i] for i in axes)
        if name == "mean":
            total = total / count if count else total * NAN
            magnitude = magnitude / max(count, 1)
    ref = np.asarray(total).astype(a.dtype)
    ulp = 2.0 ** -23 if a.dtype == np.float32 else 2.0 ** -52
    bound = ulp * np.abs(ref.astype(np.float64)) + 1e-13 * np.asarray(magnitude) + 1e-300
    return ref, bound


def assert_reduction(got: np.ndarray, ref: np.ndarray, bound: np.ndarray, dtype: Any) -> None:
    assert got.shape == ref.shape, (got.shape, ref.shape)
    assert got.dtype == np.dtype(dtype)
    g, r = got.astype(np.float64), ref.astype(np.float64)
    finite = np.isfinite(r) & np.isfinite(bound)
    same_special = (np.isnan(g) & np.isnan(r)) | (g == r)
    with np.errstate(invalid="ignore"):
        close = np.abs(g - r) <= bound
    ok = np.where(finite, close, same_special | ~np.isfinite(bound) & np.isfinite(r) & close)
    assert ok.all(), f"got {got[~ok]} expected {ref[~ok]} (bound {bound[~ok]})"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@given(data=st.data())
def test_reduction_values(name, mode, data):
    ref_in, given_in = data.draw(any_arrays())
    dims = data.draw(reduce_dims(ref_in.ndim))
    keepdim = data.draw(st.booleans())
    method, function, static_fn, _ = REDUCTIONS[name]
    if mode == "eager":
        fn_ = data.draw(st.sampled_from([method, function]))

        def fn(t):
            return fn_(t, dims, keepdim)
    else:
        def fn(x):
            return static_fn(x, axis=dims, keepdims=keepdim)
    axes = normalised_axes(dims, ref_in.ndim)
    if name in ("amax", "amin") and any(ref_in.shape[i] == 0 for i in axes):
        # numpy refuses too: a max over nothing has no value.
        with pytest.raises(errors.RustgradError):
            evaluate(mode, data, fn, [given_in])
        return
    ref, bound = reduction_reference(name, ref_in, dims, keepdim)
    assert_reduction(evaluate(mode, data, fn, [given_in]), ref, bound, ref_in.dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@given(data=st.data())
def test_reduction_gradients(name, mode, data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
    # Distinct values well apart, so max/min have a unique arg and no tie.
    a = data.draw(hnp.arrays(np.float64, shape, elements=st.integers(-50, 50), unique=True)) / 10.0
    dims = data.draw(reduce_dims(a.ndim))
    keepdim = data.draw(st.booleans())
    method, _, static_fn, ref = REDUCTIONS[name]
    axes = normalised_axes(dims, a.ndim)
    check_grad(mode, lambda t: method(t, dims, keepdim), lambda x: static_fn(x, axis=dims, keepdims=keepdim),
               lambda x: ref(x, axis=axes, keepdims=keepdim), [a])


# ---------------------------------------------------------------- matmul (2-D)


@st.composite
def matmul_operands(draw, max_side=40, elements=None, transpose=True):
    n, k, m = (draw(st.integers(0, max_side)) for _ in range(3))
    dtype = draw(float_dtypes())
    elem = elements if elements is not None else st.one_of(st.floats(-10, 10, width=32), st.sampled_from(SPECIALS))
    a = draw(hnp.arrays(dtype, (n, k), elements=elem))
    b = draw(hnp.arrays(dtype, (k, m), elements=elem))
    ta, tb = (draw(st.booleans()) if transpose else False for _ in range(2))
    return dtype, a, b, ta, tb


def matmul_reference(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    wa, wb = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(all="ignore"):
        ref = wa @ wb
        magnitude = np.abs(np.nan_to_num(wa, nan=0, posinf=0, neginf=0)) @ np.abs(
            np.nan_to_num(wb, nan=0, posinf=0, neginf=0))
    ulp = 2.0 ** -23 if a.dtype == np.float32 else 2.0 ** -52
    bound = (a.shape[1] + 2) * ulp * magnitude + ulp * np.abs(ref) + 1e-300
    return ref.astype(a.dtype), bound


@pytest.mark.parametrize("mode", MODES)
@given(data=st.data())
def test_matmul_values(mode, data):
    dtype, a, b, ta, tb = data.draw(matmul_operands())
    a_in = relayout(a.T.copy() if ta else a, data.draw(st.sampled_from(LAYOUTS)))
    b_in = relayout(b.T.copy() if tb else b, data.draw(st.sampled_from(LAYOUTS)))
    if mode == "eager":
        def fn(x, y):
            x = x.t() if ta else x
            y = y.transpose(0, 1) if tb else y
            return data.draw(st.sampled_from([lambda p, q: p.mm(q), lambda p, q: p @ q, rustgrad.matmul,
                                              rustgrad.mm]))(x, y)
    else:
        def fn(x, y):
            return tf.matmul(x, y, transpose_a=ta, transpose_b=tb)
    ref, bound = matmul_reference(a, b)
    assert_reduction(evaluate(mode, data, fn, [a_in, b_in]), ref, bound, dtype)


@pytest.mark.parametrize("mode", MODES)
@given(data=st.data())
def test_matmul_gradients(mode, data):
    _, a, b, ta, tb = data.draw(matmul_operands(max_side=3, elements=st.floats(-2, 2)))
    a, b = a.astype(np.float64), b.astype(np.float64)
    check_grad(mode, lambda x, y: x @ y, tf.matmul, np.matmul, [a, b])
