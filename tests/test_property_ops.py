"""Property tests: every op against numpy, in eager and static mode, on generated inputs.

This module holds the input strategies and the runners that every property test shares
(test_property_reductions.py, test_property_shape_indexing.py, test_op_table.py and the
references_*.py modules import them), and the elementwise ops: unary ops, clamp, scalar
ops on either side, broadcasting binary ops, comparisons and pow's special values.

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
