"""Property tests: every op against numpy, in eager and static mode, on generated inputs.

Inputs cover 0-size dims, size-1 broadcast dims, 0-d scalars and ranks up to 6; values
include NaN, ±inf and -0.0; arrays arrive C- and Fortran-ordered, as strided and
negative-stride views, big-endian, and as int (and, for comparisons, bool) arrays.
Static mode builds a graph on placeholders of the input's dtype (exact shape, all-None
dims, or unknown rank) and runs it in a Session.

Gradients are checked in float64 against central finite differences: eager with
``rustgrad.autograd.gradcheck``, static by comparing ``tf.gradients`` with finite
differences of the numpy reference.

Hypothesis profiles (tests/conftest.py): "ci" (default, derandomized, 40 examples per
test) and "long" (2000 examples), chosen with HYPOTHESIS_PROFILE.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import rustgrad
import rustgrad.static as tf
from rustgrad import errors
from rustgrad.autograd import gradcheck

MODES = ["eager", "static"]
NAN, INF = float("nan"), float("inf")
SPECIALS = [NAN, INF, -INF, -0.0, 0.0]


# ---------------------------------------------------------------- input strategies


def float_dtypes() -> st.SearchStrategy:
    return st.sampled_from([np.float32, np.float64])


def values(dtype: Any, lo: float = -10.0, hi: float = 10.0, specials: bool = True,
           wide: bool = True) -> st.SearchStrategy:
    """Moderate finite values, plus NaN/±inf/±0 and (with ``wide``) the whole float32 range."""
    finite = st.floats(lo, hi, width=32)
    if not specials:
        return finite
    parts = [finite, st.sampled_from(SPECIALS)]
    if wide:
        parts.append(st.floats(width=32))
    return st.one_of(*parts)


def shapes(min_dims: int = 0, max_dims: int = 6, min_side: int = 0, max_side: int = 3) -> st.SearchStrategy:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


LAYOUTS = ["c", "fortran", "strided", "reversed", "bigendian", "swapped"]


def relayout(a: np.ndarray, layout: str) -> np.ndarray:
    """The same values as ``a`` in another memory layout (a view where possible)."""
    a = np.asarray(a)
    if a.ndim == 0 or layout == "c":
        return np.array(a) if layout != "bigendian" else a.astype(a.dtype.newbyteorder(">"))
    if layout == "fortran":
        out = np.asfortranarray(a)
    elif layout == "strided":
        big = np.zeros(tuple(2 * d for d in a.shape), dtype=a.dtype)
        view = big[tuple(slice(None, None, 2) for _ in a.shape)]
        view[...] = a
        out = view
    elif layout == "reversed":
        rev = tuple(slice(None, None, -1) for _ in a.shape)
        out = a[rev].copy()[rev]
    elif layout == "bigendian":
        out = a.astype(a.dtype.newbyteorder(">"))
    elif layout == "swapped":
        out = np.swapaxes(np.ascontiguousarray(np.swapaxes(a, 0, -1)), 0, -1)
    else:  # pragma: no cover
        raise AssertionError(layout)
    np.testing.assert_array_equal(out, a)
    return out


@st.composite
def float_arrays(draw, shape=None, dtype=None, elements=None, layouts=True, **shape_kw):
    dtype = draw(float_dtypes()) if dtype is None else dtype
    shape = draw(shapes(**shape_kw)) if shape is None else shape
    a = draw(hnp.arrays(dtype, shape, elements=elements if elements is not None else values(dtype)))
    layout = draw(st.sampled_from(LAYOUTS)) if layouts else "c"
    return a, relayout(a, layout)


@st.composite
def int_arrays(draw, shape=None, **shape_kw):
    dtype = draw(st.sampled_from([np.int64, np.int32, np.int8, np.uint8]))
    shape = draw(shapes(**shape_kw)) if shape is None else shape
    lo = 0 if dtype == np.uint8 else -5
    a = draw(hnp.arrays(dtype, shape, elements=st.integers(lo, 5)))
    layout = draw(st.sampled_from([x for x in LAYOUTS if x != "bigendian"]))
    return a.astype(np.float32), relayout(a, layout)


def any_arrays(**shape_kw) -> st.SearchStrategy:
    """(reference float array, array given to rustgrad): mostly floats, sometimes ints."""
    return st.one_of(float_arrays(**shape_kw), float_arrays(**shape_kw), int_arrays(**shape_kw))


# ---------------------------------------------------------------- running an op in either mode


def placeholder_shape(draw, shape: tuple) -> Optional[tuple]:
    kind = draw(st.sampled_from(["exact", "none_dims", "mixed", "unknown"]))
    if kind == "exact":
        return tuple(shape)
    if kind == "none_dims":
        return tuple(None for _ in shape)
    if kind == "unknown":
        return None
    return tuple(None if draw(st.booleans()) else d for d in shape)


def tf_dtype(a: np.ndarray) -> Any:
    if a.dtype.kind == "b":
        return tf.bool
    if a.dtype.kind == "f" and a.dtype.itemsize == 8:
        return tf.float64
    return tf.float32


def evaluate(mode: str, data, fn: Callable[..., Any], inputs: list[np.ndarray],
             ph_shapes: Optional[list] = None) -> np.ndarray:
    """fn applied to rustgrad tensors (eager) or to placeholders run in a Session (static).

    Placeholder shapes are drawn from ``data`` unless ``ph_shapes`` gives them.
    """
    if mode == "eager":
        # Integer arrays are the float32 data of these float ops: rustgrad.tensor keeps an
        # integer dtype (as torch), so they are converted as a float32 placeholder's feed is.
        out = fn(*[rustgrad.tensor(a, dtype=rustgrad.float32 if a.dtype.kind in "iu" else None) for a in inputs])
        assert isinstance(out, rustgrad.Tensor)
        return out.numpy()
    if ph_shapes is None:
        ph_shapes = [placeholder_shape(data.draw, a.shape) for a in inputs]
    graph = tf.Graph()
    with graph.as_default():
        phs = [tf.placeholder(tf_dtype(a), shape=s) for a, s in zip(inputs, ph_shapes)]
        out = fn(*phs)
        assert isinstance(out, tf.Tensor)
        with tf.Session(graph=graph) as sess:
            value = sess.run(out, feed_dict=dict(zip(phs, inputs)))
    return np.asarray(value)


def tolerances(dtype: Any) -> dict:
    if np.dtype(dtype) == np.float32:
        return {"rtol": 1e-5, "atol": 1e-30}
    return {"rtol": 1e-12, "atol": 1e-300}


def assert_same(got: np.ndarray, expected: np.ndarray, dtype: Any, signed_zeros: bool = False,
                bitwise: bool = False, **tol: float) -> None:
    """Same shape and dtype, values close (NaN where expected is NaN).

    ``signed_zeros``: a zero must also have the expected sign (IEEE: -x, x*y, x+y, sqrt keep it).
    ``bitwise``: the exact bytes (for ops that only move data: reshape, transpose, indexing).
    """
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    if bitwise:
        uint = np.uint32 if np.dtype(dtype).itemsize == 4 else np.uint64
        np.testing.assert_array_equal(np.ascontiguousarray(got).view(uint),
                                      np.ascontiguousarray(expected.astype(dtype)).view(uint))
        return
    np.testing.assert_allclose(got, expected, equal_nan=True, **(tol or tolerances(dtype)))
    if signed_zeros:
        zeros = expected == 0
        np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(expected[zeros]),
                                      err_msg="the sign of a zero differs")


def f64_then(dtype: Any, fn: Callable[..., Any], *arrays: np.ndarray) -> np.ndarray:
    """fn computed in float64 and rounded to ``dtype`` (float32 arithmetic is exact-then-rounded)."""
    with np.errstate(all="ignore"):
        return np.asarray(fn(*[np.asarray(a, dtype=np.float64) for a in arrays])).astype(dtype)


def native(fn: Callable[..., Any], *arrays: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(fn(*arrays))


def sigmoid_ref(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


# ---------------------------------------------------------------- unary ops


@dataclass(frozen=True)
class Unary:
    name: str
    eager: Callable[[Any], Any]
    static: Callable[[Any], Any]
    ref: Callable[[np.ndarray], np.ndarray]
    in_f64: bool = False  # reference computed in float64 and rounded
    signed_zeros: bool = False  # IEEE fixes the sign of a zero result
    grad_lo: float = -2.0
    grad_hi: float = 2.0
    kink: Optional[float] = None  # a non-differentiable point to keep away from


UNARY = [
    Unary("neg", lambda t: -t, tf.negative, np.negative, signed_zeros=True),
    Unary("neg_fn", rustgrad.neg, lambda x: -x, np.negative, signed_zeros=True),
    Unary("abs", lambda t: t.abs(), tf.abs, np.abs, kink=0.0, signed_zeros=True),
    Unary("abs_fn", rustgrad.abs, lambda x: abs(x), np.abs, kink=0.0),
    Unary("exp", lambda t: t.exp(), tf.exp, np.exp),
    Unary("log", lambda t: t.log(), tf.log, np.log, grad_lo=0.2, grad_hi=3.0),
    Unary("sqrt", lambda t: t.sqrt(), tf.sqrt, np.sqrt, grad_lo=0.2, grad_hi=3.0, signed_zeros=True),
    Unary("tanh", lambda t: t.tanh(), tf.tanh, np.tanh, signed_zeros=True),
    Unary("sigmoid", lambda t: t.sigmoid(), tf.sigmoid, sigmoid_ref, in_f64=True),
    Unary("relu", lambda t: t.relu(), tf.nn.relu, lambda x: np.maximum(x, 0), kink=0.0),
    Unary("relu_fn", rustgrad.relu, lambda x: x.relu(), lambda x: np.maximum(x, 0), kink=0.0),
    Unary("square", lambda t: t.square(), tf.square, np.square, signed_zeros=True),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", UNARY, ids=lambda o: o.name)
@given(data=st.data())
def test_unary_values(op, mode, data):
    ref_in, given_in = data.draw(any_arrays())
    dtype = ref_in.dtype
    expected = f64_then(dtype, op.ref, ref_in) if op.in_f64 else native(op.ref, ref_in)
    got = evaluate(mode, data, op.eager if mode == "eager" else op.static, [given_in])
    assert_same(got, expected, dtype, signed_zeros=op.signed_zeros)


def grad_values(lo: float, hi: float, kink: Optional[float] = None, margin: float = 0.05) -> st.SearchStrategy:
    """Floats in [lo, hi], at least ``margin`` away from ``kink`` (a non-differentiable point)."""
    if kink is None:
        return st.floats(lo, hi)
    return st.one_of(st.floats(lo, kink - margin), st.floats(kink + margin, hi))


def static_grad_check(fn: Callable[..., Any], ref: Callable[..., np.ndarray], arrays: list[np.ndarray],
                      eps: float = 1e-6, rtol: float = 1e-4, atol: float = 1e-6) -> None:
    """tf.gradients of sum(fn(x) * w) against central differences of sum(ref(x) * w)."""
    graph = tf.Graph()
    with graph.as_default():
        phs = [tf.placeholder(tf.float64, shape=a.shape) for a in arrays]
        out = fn(*phs)
        feeds = dict(zip(phs, arrays))
        # The weights' shape: the output's, known at build time, or (a mask's count) at run time.
        weights = tf.placeholder(tf.float64)
        loss = tf.reduce_sum(out * weights)
        grads = tf.gradients(loss, phs)
        fetch = [g if g is not None else tf.zeros_like(p) for g, p in zip(grads, phs)]
        with tf.Session(graph=graph) as sess:
            shape = out.shape.as_list() if out.shape.is_fully_defined() else sess.run(out, feeds).shape
            w = np.random.default_rng(0).uniform(0.5, 1.5, size=tuple(shape)).astype(np.float64)
            got = sess.run(fetch, feed_dict={**feeds, weights: w})
    for i, a in enumerate(arrays):
        numerical = np.zeros_like(a)
        for k in np.ndindex(a.shape):
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[i][k] += eps
            minus[i][k] -= eps
            numerical[k] = (np.sum(ref(*plus) * w) - np.sum(ref(*minus) * w)) / (2 * eps)
        np.testing.assert_allclose(np.asarray(got[i]), numerical, rtol=rtol, atol=atol,
                                   err_msg=f"gradient wrt input {i}")


def check_grad(mode: str, eager_fn, static_fn, ref, arrays: list[np.ndarray]) -> None:
    if mode == "eager":
        inputs = [rustgrad.tensor(a, dtype=rustgrad.float64, requires_grad=True) for a in arrays]
        assert gradcheck(eager_fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-4)
    else:
        static_grad_check(static_fn, ref, arrays)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", UNARY, ids=lambda o: o.name)
@given(data=st.data())
def test_unary_gradients(op, mode, data):
    shape = data.draw(shapes(max_dims=3, max_side=2))
    a = data.draw(hnp.arrays(np.float64, shape, elements=grad_values(op.grad_lo, op.grad_hi, op.kink)))
    check_grad(mode, op.eager, op.static, op.ref, [a])


# ---------------------------------------------------------------- clamp


def clamp_bounds() -> st.SearchStrategy:
    bound = st.one_of(st.none(), st.floats(-5, 5, width=32), st.sampled_from([-INF, INF, -0.0]))
    return st.tuples(bound, bound).filter(lambda b: b != (None, None))


def clamp_ref(x: np.ndarray, lo: Optional[float], hi: Optional[float]) -> np.ndarray:
    out = x
    with np.errstate(invalid="ignore"):
        if lo is not None:
            out = np.where(np.isnan(out), out, np.maximum(out, np.asarray(lo, dtype=x.dtype)))
        if hi is not None:
            out = np.where(np.isnan(out), out, np.minimum(out, np.asarray(hi, dtype=x.dtype)))
    return np.asarray(out, dtype=x.dtype)


@pytest.mark.parametrize("mode", MODES)
@given(data=st.data())
def test_clamp_values(mode, data):
    ref_in, given_in = data.draw(any_arrays())
    lo, hi = data.draw(clamp_bounds())
    if lo is not None and hi is not None:
        assume(lo <= hi)
    expected = clamp_ref(ref_in, lo, hi)
    if mode == "eager":
        fn = data.draw(st.sampled_from([lambda t: t.clamp(lo, hi), lambda t: rustgrad.clamp(t, min=lo, max=hi),
                                        lambda t: t.clip(min=lo, max=hi)]))
    elif lo is not None and hi is not None:
        fn = data.draw(st.sampled_from([lambda x: tf.clip_by_value(x, lo, hi), lambda x: x.clamp(lo, hi)]))
    else:
        def fn(x):
            return x.clamp(min=lo, max=hi)
    assert_same(evaluate(mode, data, fn, [given_in]), expected, ref_in.dtype)


@pytest.mark.parametrize("mode", MODES)
@given(data=st.data())
def test_clamp_gradients(mode, data):
    lo, hi = data.draw(st.tuples(st.floats(-1.5, 0.0), st.floats(0.1, 1.5)))
    shape = data.draw(shapes(max_dims=3, max_side=2))
    elem = st.one_of(st.floats(-2.0, lo - 0.05), st.floats(lo + 0.05, hi - 0.05), st.floats(hi + 0.05, 2.0))
    a = data.draw(hnp.arrays(np.float64, shape, elements=elem))
    check_grad(mode, lambda t: t.clamp(lo, hi), lambda x: tf.clip_by_value(x, lo, hi),
               lambda x: np.clip(x, lo, hi), [a])


# ---------------------------------------------------------------- scalar ops on both sides


SCALAR_OPS = {
    "add": (lambda x, s: x + s, np.add),
    "radd": (lambda x, s: s + x, lambda x, s: s + x),
    "sub": (lambda x, s: x - s, np.subtract),
    "rsub": (lambda x, s: s - x, lambda x, s: s - x),
    "mul": (lambda x, s: x * s, np.multiply),
    "rmul": (lambda x, s: s * x, lambda x, s: s * x),
    "div": (lambda x, s: x / s, np.divide),
    "rdiv": (lambda x, s: s / x, lambda x, s: s / x),
    "pow": (lambda x, s: x ** s, np.power),
    "rpow": (lambda x, s: s ** x, lambda x, s: np.power(s, x)),
}


def scalars() -> st.SearchStrategy:
    return st.one_of(st.floats(-8, 8, width=32), st.integers(-4, 4), st.sampled_from(SPECIALS))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(SCALAR_OPS))
@given(data=st.data())
def test_scalar_op_values(name, mode, data):
    ref_in, given_in = data.draw(any_arrays())
    s = data.draw(scalars())
    fn, ref = SCALAR_OPS[name]
    dtype = ref_in.dtype
    # Python numbers are "weak": numpy computes in the array's dtype, as rustgrad does.
    expected = f64_then(dtype, lambda x: ref(x, float(s)), ref_in)
    got = evaluate(mode, data, lambda x: fn(x, s), [given_in])
    if name in ("pow", "rpow"):
        assert_same(got, expected, dtype, rtol=5e-5 if dtype == np.float32 else 1e-11,
                    atol=1e-30 if dtype == np.float32 else 1e-300)
    else:
        assert_same(got, expected, dtype, signed_zeros=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(SCALAR_OPS))
@given(data=st.data())
def test_scalar_op_gradients(name, mode, data):
    shape = data.draw(shapes(max_dims=3, max_side=2))
    positive = name in ("pow", "rpow", "rdiv")
    elem = st.floats(0.3, 2.0) if positive else st.floats(-2.0, 2.0)
    a = data.draw(hnp.arrays(np.float64, shape, elements=elem))
    s = data.draw(st.floats(0.5, 3.0) if positive else st.floats(-3.0, 3.0).filter(lambda v: abs(v) > 0.2))
    fn, ref = SCALAR_OPS[name]
    check_grad(mode, lambda x: fn(x, s), lambda x: fn(x, s), lambda x: ref(x, s), [a])


# ---------------------------------------------------------------- binary ops with broadcasting


BINARY = {
    "add": (operator.add, rustgrad.add, tf.add, np.add),
    "sub": (operator.sub, rustgrad.sub, tf.subtract, np.subtract),
    "mul": (operator.mul, rustgrad.mul, tf.multiply, np.multiply),
    "div": (operator.truediv, rustgrad.div, tf.divide, np.divide),
    "maximum": (lambda a, b: a.maximum(b), rustgrad.maximum, tf.maximum, np.maximum),
    "minimum": (lambda a, b: a.minimum(b), rustgrad.minimum, tf.minimum, np.minimum),
}


@st.composite
def broadcast_pair(draw, max_dims=5, max_side=3, min_side=0, allow_int=True, elements=None):
    dtype = draw(float_dtypes())
    bshape = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=max_dims,
                                                    min_side=min_side, max_side=max_side))
    out = []
    for shape in bshape.input_shapes:
        if allow_int and draw(st.integers(0, 5)) == 0:
            ref, given_ = draw(int_arrays(shape=shape))
            ref = ref.astype(dtype)
        else:
            ref, given_ = draw(float_arrays(shape=shape, dtype=dtype, elements=elements))
        out.append((ref, given_))
    return dtype, out, bshape.result_shape


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data())
def test_binary_values(name, mode, data):
    dtype, pairs, result_shape = data.draw(broadcast_pair())
    (a_ref, a_in), (b_ref, b_in) = pairs
    # An int array becomes a float32 tensor; keep both operands of one dtype.
    a_in = a_in if a_in.dtype.kind == "f" else a_in.astype(dtype)
    b_in = b_in if b_in.dtype.kind == "f" else b_in.astype(dtype)
    method, function, static_fn, ref = BINARY[name]
    expected = f64_then(dtype, ref, a_ref, b_ref)
    assert expected.shape == tuple(result_shape)
    if mode == "eager":
        fn = data.draw(st.sampled_from([method, function]))
    else:
        fn = static_fn if name in ("maximum", "minimum") else data.draw(st.sampled_from([method, static_fn]))
    assert_same(evaluate(mode, data, fn, [a_in, b_in]), expected, dtype,
                signed_zeros=name not in ("maximum", "minimum"))  # max(-0, +0) may be either zero


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data())
def test_binary_gradients(name, mode, data):
    bshape = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=2))
    if name in ("maximum", "minimum"):
        # a on odd and b on even tenths: never tied (the derivative is undefined at a tie)
        odd = data.draw(hnp.arrays(np.float64, bshape.input_shapes[0], elements=st.integers(-10, 9)))
        even = data.draw(hnp.arrays(np.float64, bshape.input_shapes[1], elements=st.integers(-10, 10)))
        a, b = np.asarray(odd * 0.2 + 0.1), np.asarray(even * 0.2)
    else:
        elem = st.floats(0.3, 2.0) if name == "div" else st.floats(-2.0, 2.0)
        a = data.draw(hnp.arrays(np.float64, bshape.input_shapes[0], elements=elem))
        b = data.draw(hnp.arrays(np.float64, bshape.input_shapes[1], elements=elem))
    method, _, static_fn, ref = BINARY[name]
    check_grad(mode, method, static_fn, ref, [a, b])


# ---------------------------------------------------------------- comparisons


COMPARISONS = {
    "lt": (operator.lt, tf.less, np.less),
    "le": (operator.le, tf.less_equal, np.less_equal),
    "gt": (operator.gt, tf.greater, np.greater),
    "ge": (operator.ge, tf.greater_equal, np.greater_equal),
    "eq": (operator.eq, tf.equal, np.equal),
    "ne": (operator.ne, tf.not_equal, np.not_equal),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(COMPARISONS))
@given(data=st.data())
def test_comparison_values(name, mode, data):
    eager_fn, static_fn, ref = COMPARISONS[name]
    kind = data.draw(st.sampled_from(["tensors", "tensors", "scalar", "bool"]))
    if kind == "bool":
        bshape = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, min_side=0, max_side=3))
        a, b = (data.draw(hnp.arrays(np.bool_, s)) for s in bshape.input_shapes)
        a_in = relayout(a, data.draw(st.sampled_from(["c", "fortran", "strided", "reversed"])))
        inputs, expected = [a_in, b], ref(a, b)
        fn = eager_fn if mode == "eager" else static_fn
    elif kind == "scalar":
        a, a_in = data.draw(float_arrays())
        s = data.draw(scalars())
        inputs, expected = [a_in], ref(a, np.asarray(s, dtype=a.dtype))
        fn = (lambda x: eager_fn(x, s)) if mode == "eager" else (lambda x: static_fn(x, s))
    else:
        dtype, pairs, _ = data.draw(broadcast_pair(allow_int=False))
        (a, a_in), (b, b_in) = pairs
        inputs, expected = [a_in, b_in], ref(a, b)
        fn = eager_fn if mode == "eager" else static_fn
    got = evaluate(mode, data, fn, inputs)
    assert got.dtype == np.bool_
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


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


# ---------------------------------------------------------------- reshape and transpose


@st.composite
def new_shapes(draw, shape: tuple) -> tuple:
    """A shape with the same number of elements (possibly with one -1)."""
    numel = math.prod(shape)
    kind = draw(st.sampled_from(["flat", "reversed", "split", "merge", "ones"]))
    if kind == "flat":
        new = [numel]
    elif kind == "reversed":
        new = list(reversed(shape))
    elif kind == "ones":
        new = [1, *shape, 1]
    elif kind == "merge" and len(shape) >= 2:
        i = draw(st.integers(0, len(shape) - 2))
        new = [*shape[:i], shape[i] * shape[i + 1], *shape[i + 2:]]
    else:
        divisors = [d for d in range(1, numel + 1) if numel % d == 0] or [1]
        d = draw(st.sampled_from(divisors))
        new = [d, numel // d] if numel else [0, draw(st.integers(0, 3))]
    if numel and new and draw(st.booleans()):
        new[draw(st.integers(0, len(new) - 1))] = -1
    return tuple(new)


@pytest.mark.parametrize("mode", MODES)
@given(data=st.data())
def test_reshape_values(mode, data):
    ref_in, given_in = data.draw(any_arrays())
    transposed = ref_in.ndim >= 2 and data.draw(st.booleans())
    source = np.swapaxes(ref_in, 0, -1) if transposed else ref_in
    new = data.draw(new_shapes(source.shape))
    expected = np.reshape(source, new)
    if mode == "eager":
        def fn(t):
            t = t.transpose(0, -1) if transposed else t
            return data.draw(st.sampled_from([lambda u: u.reshape(new), lambda u: u.reshape(*new),
                                              lambda u: rustgrad.reshape(u, new)]))(t)
    else:
        def fn(x):
            x = tf.transpose(x, perm=swap_perm(ref_in.ndim, 0, ref_in.ndim - 1)) if transposed else x
            return tf.reshape(x, new)
    assert_same(evaluate(mode, data, fn, [given_in]), expected, ref_in.dtype, bitwise=True)


def swap_perm(rank: int, d0: int, d1: int) -> list[int]:
    perm = list(range(rank))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return perm


@pytest.mark.parametrize("mode", MODES)
@given(data=st.data())
def test_transpose_values(mode, data):
    ref_in, given_in = data.draw(any_arrays(min_dims=1))
    n = ref_in.ndim
    d0, d1 = data.draw(st.integers(-n, n - 1)), data.draw(st.integers(-n, n - 1))
    expected = np.swapaxes(ref_in, d0, d1)
    if mode == "eager":
        def fn(t):
            return data.draw(st.sampled_from([lambda u: u.transpose(d0, d1),
                                              lambda u: rustgrad.transpose(u, d0, d1)]))(t)
        got = evaluate(mode, data, fn, [given_in])
    else:
        graph = tf.Graph()
        with graph.as_default():
            ph = tf.placeholder(tf_dtype(given_in), shape=tuple(None for _ in ref_in.shape))
            out = tf.transpose(ph, perm=swap_perm(n, d0 % n, d1 % n))
            with tf.Session(graph=graph) as sess:
                got = np.asarray(sess.run(out, {ph: given_in}))
    assert_same(got, expected, ref_in.dtype, bitwise=True)


@pytest.mark.parametrize("mode", MODES)
@given(data=st.data())
def test_reshape_transpose_gradients(mode, data):
    shape = data.draw(shapes(min_dims=2, max_dims=3, min_side=1, max_side=3))
    a = data.draw(hnp.arrays(np.float64, shape, elements=st.floats(-2, 2)))
    n = a.ndim
    new = data.draw(new_shapes(np.swapaxes(a, 0, n - 1).shape))
    check_grad(mode, lambda t: t.transpose(0, n - 1).reshape(new),
               lambda x: tf.reshape(tf.transpose(x, perm=swap_perm(n, 0, n - 1)), new),
               lambda x: np.reshape(np.swapaxes(x, 0, n - 1), new), [a])


# ---------------------------------------------------------------- indexing


@st.composite
def index_keys(draw, shape: tuple):
    """A basic index: ints, slices (positive steps, bounds possibly out of range), None and one `...`.

    Items after a `...` index the trailing dims, so once it is used the key runs to the last dim.
    """
    items: list[Any] = []
    n = len(shape)
    i = 0
    used_ellipsis = False
    while i < n:
        options = ["int", "slice", "slice", "full", "none"] + ([] if used_ellipsis else ["ellipsis", "stop"])
        choice = draw(st.sampled_from(options))
        if choice == "stop":
            break
        if choice == "none":
            items.append(None)
            continue
        if choice == "ellipsis":
            used_ellipsis = True
            items.append(Ellipsis)
            i = n - draw(st.integers(0, n - i))  # the dims left for the items after `...`
            continue
        size = shape[i]
        if choice == "int" and size > 0:
            items.append(draw(st.integers(-size, size - 1)))
        elif choice == "full":
            items.append(slice(None))
        else:
            bound = st.one_of(st.none(), st.integers(-size - 2, size + 2))
            items.append(slice(draw(bound), draw(bound), draw(st.one_of(st.none(), st.integers(1, 3)))))
        i += 1
    if draw(st.booleans()):
        items.append(None)
    return tuple(items) if len(items) != 1 or draw(st.booleans()) else items[0]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("min_side", [0, 1], ids=["with_empty", "nonempty"])
@given(data=st.data())
def test_basic_indexing_values(mode, min_side, data):
    # "nonempty" keeps indexing of ordinary tensors covered even while 0-size views fail.
    ref_in, given_in = data.draw(any_arrays(max_dims=5, min_side=min_side))
    key = data.draw(index_keys(ref_in.shape))
    expected = ref_in[key]
    got = evaluate(mode, data, lambda t: t[key], [given_in])
    assert_same(got, expected, ref_in.dtype, bitwise=True)


@pytest.mark.parametrize("mode", MODES)
@given(data=st.data())
def test_mask_indexing_values(mode, data):
    ref_in, given_in = data.draw(float_arrays(max_dims=4))
    threshold = data.draw(st.floats(-5, 5, width=32))
    expected = ref_in[ref_in > threshold]
    if mode == "eager":
        mask_kind = data.draw(st.sampled_from(["tensor", "numpy"]))
        if mask_kind == "numpy":
            mask = relayout(ref_in > threshold, data.draw(st.sampled_from(["c", "fortran", "strided", "reversed"])))

            def fn(t):
                return t[mask]
        else:
            def fn(t):
                return t[t > threshold]
    else:
        def fn(x):
            return x[tf.greater(x, threshold)]
    assert_same(evaluate(mode, data, fn, [given_in]), expected, ref_in.dtype, bitwise=True)


@given(data=st.data())
def test_out_of_range_index_raises_index_error(data):
    shape = data.draw(shapes(min_dims=1, max_dims=4))
    dim = data.draw(st.integers(0, len(shape) - 1))
    size = shape[dim]
    bad = data.draw(st.one_of(st.integers(size, size + 5), st.integers(-size - 5, -size - 1)))
    key = (slice(None),) * dim + (bad,)
    t = rustgrad.zeros(*shape)
    with pytest.raises(errors.IndexOutOfRangeError) as info:
        t[key]
    assert isinstance(info.value, IndexError)


@pytest.mark.parametrize("mode", MODES)
@given(data=st.data())
def test_indexing_gradients(mode, data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
    a = data.draw(hnp.arrays(np.float64, shape, elements=st.floats(-2, 2)))
    key = data.draw(index_keys(shape))
    check_grad(mode, lambda t: t[key], lambda x: x[key], lambda x: x[key], [a])


# Fixed cases next to the generated ones: each failed in the generated tests at some point,
# and a Rust panic (a BaseException) stops Hypothesis before it can shrink or report others.

ZERO_SIZE_KEYS = [(1,), (slice(1, 3),), (2, slice(None), 1), (slice(None), slice(None), 1), (Ellipsis, 1),
                  (slice(5, None),)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("key", ZERO_SIZE_KEYS, ids=repr)
def test_indexing_zero_size_tensors(mode, key):
    a = np.zeros((3, 0, 2), dtype=np.float32)
    got = evaluate(mode, None, lambda t: t[key], [a], ph_shapes=[a.shape])
    assert_same(got, a[key], np.float32, bitwise=True)


@pytest.mark.parametrize("key", [(Ellipsis, 1), (0, Ellipsis), (Ellipsis, slice(1, None), None), (1, Ellipsis, 2)],
                         ids=repr)
def test_static_ellipsis_on_unknown_rank_placeholder(key):
    a = np.arange(24.0).reshape(2, 3, 4)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, shape=None)
        out = x[key]
        with tf.Session(graph=graph) as sess:
            got = np.asarray(sess.run(out, {x: a}))
    assert got.shape == a[key].shape
    np.testing.assert_array_equal(got, a[key])


@pytest.mark.parametrize("layout", ["fortran", "strided", "reversed", "c"])
def test_numpy_bool_masks_in_any_layout_select_and_assign_like_numpy(layout):
    a = np.arange(12.0).reshape(3, 4)
    mask = relayout((a % 3) == 1, layout)
    t = rustgrad.tensor(a)
    np.testing.assert_array_equal(t[mask].numpy(), a[mask])
    t[mask] = -1.0
    expected = a.copy()
    expected[mask] = -1.0
    np.testing.assert_array_equal(t.numpy(), expected)


POW_BASES = np.array([NAN, INF, -INF, -0.0, 0.0, 1.0, -1.0, 2.0, -2.0, 0.5])
POW_EXPONENTS = [0.5, -0.5, 2.0, 3.0, -1.0, 0.0, 1.5, INF, -INF, NAN, -0.0]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("np_dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("exponent", POW_EXPONENTS, ids=repr)
def test_pow_special_values_match_numpy(exponent, np_dtype, mode):
    """Every IEEE special case of x ** s and s ** x (the generated tests meet them only by chance)."""
    x = POW_BASES.astype(np_dtype)
    for fn, ref in ((lambda t: t ** exponent, lambda a: np.power(a, np_dtype(exponent))),
                    (lambda t: exponent ** t, lambda a: np.power(np_dtype(exponent), a))):
        got = evaluate(mode, None, fn, [x], ph_shapes=[x.shape])
        assert_same(got, native(ref, x), np_dtype, rtol=1e-6, atol=0)
