"""Every static op's value and gradient, compared with eager mode (float64) and numpy.

For each case the graph computes ``out = op(*inputs)`` and
``tf.gradients(reduce_sum(out * w), inputs)`` with ``w`` a random constant; eager
mode computes the same expression on leaf tensors and calls ``backward``.
"""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
import rustgrad.compat.v1 as tf

F64 = rustgrad.float64


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def uniform(shape, low=-2.0, high=2.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def away_from_zero(shape, margin=0.2, seed=0):
    a = uniform(shape, seed=seed)
    return np.where(np.abs(a) < margin, np.sign(a + 1e-12) * (margin + np.abs(a)), a)


def positive(shape, seed=0):
    return uniform(shape, 0.3, 2.0, seed)


# ---------------------------------------------------------------- harness


def run_static(fn, arrays, w, partial_shapes=False):
    """Value of fn(*placeholders) and gradients of sum(fn(...) * w) wrt each placeholder."""
    graph = tf.Graph()
    with graph.as_default():
        phs = [
            tf.placeholder(tf.float64, shape=None if partial_shapes else a.shape)
            for a in arrays
        ]
        out = fn(*phs)
        assert isinstance(out, tf.Tensor)
        loss = tf.reduce_sum(out * tf.constant(w, dtype=tf.float64))
        grads = tf.gradients(loss, phs)
        fetch_grads = [g for g in grads if g is not None]
        with tf.Session() as sess:
            value, got = sess.run([out, fetch_grads], feed_dict=dict(zip(phs, arrays)))
    it = iter(got)
    return out, value, [None if g is None else next(it) for g in grads], grads


def run_eager(fn, arrays, w):
    leaves = [rustgrad.tensor(a, dtype=F64, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    (out * rustgrad.tensor(w, dtype=out.dtype)).sum().backward()
    return out.detach().numpy(), [None if t.grad is None else t.grad.numpy() for t in leaves]


def check(static_fn, eager_fn, arrays, *, numpy_fn=None, partial_shapes=False, out_dtype=np.float64):
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    # The weight must have the output's shape: take it from eager mode (or numpy).
    probe = numpy_fn(*arrays) if numpy_fn is not None else eager_fn(
        *[rustgrad.tensor(a, dtype=F64) for a in arrays]).numpy()
    w = uniform(np.shape(probe), seed=99)
    out, s_value, s_grads, grad_tensors = run_static(static_fn, arrays, w, partial_shapes)
    e_value, e_grads = run_eager(eager_fn, arrays, w)
    assert isinstance(s_value, (np.ndarray, np.generic))
    assert s_value.dtype == out_dtype
    assert out.dtype.name == np.dtype(out_dtype).name
    assert np.shape(s_value) == np.shape(e_value)
    if not partial_shapes:
        # The inferred shape is the run-time shape (a None dim only where it is data-dependent).
        static_shape = tuple(out.shape)
        assert len(static_shape) == np.ndim(s_value), (out.shape, np.shape(s_value))
        assert all(d is None or d == v for d, v in zip(static_shape, np.shape(s_value))), (
            out.shape, np.shape(s_value))
        if name_has_static_shape(out):
            assert static_shape == np.shape(s_value), (out.shape, np.shape(s_value))
    np.testing.assert_allclose(s_value, e_value, rtol=1e-6, atol=1e-12)
    if numpy_fn is not None:
        np.testing.assert_allclose(s_value, numpy_fn(*arrays), rtol=1e-6, atol=1e-12)
    for i, (sg, eg, a, gt) in enumerate(zip(s_grads, e_grads, arrays, grad_tensors)):
        if eg is None:
            assert sg is None, f"input {i}: eager has no gradient but static has {sg}"
            continue
        assert sg is not None, f"input {i}: static gradient is None, eager is {eg}"
        assert gt.dtype == tf.float64
        assert sg.dtype == np.float64, f"input {i}: gradient dtype {sg.dtype}"
        assert sg.shape == a.shape, f"input {i}: gradient shape {sg.shape} != input {a.shape}"
        np.testing.assert_allclose(sg, eg, rtol=1e-6, atol=1e-12, err_msg=f"gradient of input {i}")
    return s_value, s_grads


def name_has_static_shape(out):
    """Every op here except masked selection has a fully known shape when its inputs do."""
    return out.op.type != "MaskedSelect" and "MaskedSelect" not in out.op.name


PARTIAL = pytest.mark.parametrize("partial", [False, True], ids=["known_shapes", "unknown_shapes"])


# ---------------------------------------------------------------- matmul


@PARTIAL
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_transpose_combinations(ta, tb, partial):
    a = uniform((4, 3) if ta else (3, 4), seed=1)
    b = uniform((5, 4) if tb else (4, 5), seed=2)

    def eager(x, y):
        return (x.t() if ta else x).mm(y.t() if tb else y)

    value, _ = check(
        lambda x, y: tf.matmul(x, y, transpose_a=ta, transpose_b=tb),
        eager,
        [a, b],
        numpy_fn=lambda x, y: (x.T if ta else x) @ (y.T if tb else y),
        partial_shapes=partial,
    )
    assert value.shape == (3, 5)


def test_matmul_gradient_numpy_oracle():
    a, b = uniform((3, 4), seed=1), uniform((4, 2), seed=2)
    w = uniform((3, 2), seed=3)
    _, _, (ga, gb), _ = run_static(lambda x, y: tf.matmul(x, y), [a, b], w)
    np.testing.assert_allclose(ga, w @ b.T, rtol=1e-12)
    np.testing.assert_allclose(gb, a.T @ w, rtol=1e-12)


def test_matmul_operator_and_constants():
    a, b = uniform((3, 4), seed=1), uniform((4, 2), seed=2)
    check(lambda x, y: x @ y, lambda x, y: x @ y, [a, b], numpy_fn=lambda x, y: x @ y)
    check(lambda x: x @ b, lambda x: x @ rustgrad.tensor(b, dtype=F64), [a],
          numpy_fn=lambda x: x @ b)


def test_matmul_operator_numpy_on_the_left():
    a, b = uniform((3, 4), seed=1), uniform((4, 2), seed=2)
    check(lambda y: a @ y, lambda y: rustgrad.tensor(a, dtype=F64) @ y, [b],
          numpy_fn=lambda y: a @ y)


# ---------------------------------------------------------------- binary ops

BINARY = {
    "add": (tf.add, lambda x, y: x + y),
    "subtract": (tf.subtract, lambda x, y: x - y),
    "multiply": (tf.multiply, lambda x, y: x * y),
    "divide": (tf.divide, lambda x, y: x / y),
    "truediv": (tf.truediv, lambda x, y: x / y),
    "maximum": (tf.maximum, rustgrad.maximum),
    "minimum": (tf.minimum, rustgrad.minimum),
}

SHAPES = {
    "same": ((3, 4), (3, 4)),
    "row_col": ((3, 1), (1, 4)),
    "trailing": ((2, 3), (3,)),
    "scalar_rhs": ((2, 3), ()),
    "scalar_lhs": ((), (2, 3)),
    "rank3": ((2, 1, 3), (4, 1)),
}


def _numpy_binary(name):
    return {
        "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
        "truediv": np.divide, "maximum": np.maximum, "minimum": np.minimum,
    }[name]


@PARTIAL
@pytest.mark.parametrize("shapes", list(SHAPES), ids=list(SHAPES))
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_ops(name, shapes, partial):
    sa, sb = SHAPES[shapes]
    static_fn, eager_fn = BINARY[name]
    a = uniform(sa, seed=1)
    b = away_from_zero(sb, seed=2) if name in ("divide", "truediv") else uniform(sb, seed=2)
    check(static_fn, eager_fn, [a, b], numpy_fn=_numpy_binary(name), partial_shapes=partial)


def test_maximum_minimum_gradient_numpy_oracle():
    a = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])
    b = np.array([0.0, 0.0, 5.0])
    w = np.arange(1.0, 7.0).reshape(2, 3)
    _, _, (ga, gb), _ = run_static(tf.maximum, [a, b], w)
    np.testing.assert_array_equal(ga, np.where(a >= b, w, 0.0))
    np.testing.assert_array_equal(gb, np.where(a >= b, 0.0, w).sum(axis=0))
    _, _, (ga, gb), _ = run_static(tf.minimum, [a, b], w)
    np.testing.assert_array_equal(ga, np.where(a <= b, w, 0.0))
    np.testing.assert_array_equal(gb, np.where(a <= b, 0.0, w).sum(axis=0))


def test_maximum_with_zeros_1_as_in_reference():
    a = uniform((4, 3), seed=5)
    check(lambda x: tf.maximum(x, tf.zeros(1, dtype=tf.float64)),
          lambda x: x.clamp(min=0), [a], numpy_fn=lambda x: np.maximum(x, 0.0))


# ---------------------------------------------------------------- operators with scalars / arrays

SCALAR = 1.7
ARR = away_from_zero((4,), seed=7)  # broadcasts against (3, 4)

OPERATORS = {
    "x+s": (lambda x: x + SCALAR, np.add, False),
    "s+x": (lambda x: SCALAR + x, None, False),
    "x-s": (lambda x: x - SCALAR, None, False),
    "s-x": (lambda x: SCALAR - x, None, False),
    "x*s": (lambda x: x * SCALAR, None, False),
    "s*x": (lambda x: SCALAR * x, None, False),
    "x/s": (lambda x: x / SCALAR, None, False),
    "s/x": (lambda x: SCALAR / x, None, True),
    "x**2": (lambda x: x ** 2, None, False),
    "x**2.0": (lambda x: x ** 2.0, None, False),
    "x**3": (lambda x: x ** 3, None, False),
    "x**0.5": (lambda x: x ** 0.5, None, "positive"),
    "x**-1.5": (lambda x: x ** -1.5, None, "positive"),
    "s**x": (lambda x: SCALAR ** x, None, False),
    "-x": (lambda x: -x, None, False),
    "x+np.float64": (lambda x: x + np.float64(SCALAR), None, False),
    "np.float64*x": (lambda x: np.float64(SCALAR) * x, None, False),
    "x+int": (lambda x: x + 2, None, False),
    "int-x": (lambda x: 2 - x, None, False),
    "x+arr": (lambda x: x + ARR, None, False),
    "x-arr": (lambda x: x - ARR, None, False),
    "x*arr": (lambda x: x * ARR, None, False),
    "x/arr": (lambda x: x / ARR, None, False),
    "x+list": (lambda x: x + [1.0, 2.0, 3.0, 4.0], None, False),
}


def _input_for(kind):
    if kind == "positive":
        return positive((3, 4), seed=3)
    if kind:
        return away_from_zero((3, 4), seed=3)
    return uniform((3, 4), seed=3)


@pytest.mark.parametrize("name", list(OPERATORS))
def test_operators_with_python_scalars_and_arrays(name):
    fn, _, kind = OPERATORS[name]
    x = _input_for(kind)

    def eager(t):
        if name.endswith("list"):
            return t + rustgrad.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64)
        if name.endswith("arr"):
            op = name[1]
            other = rustgrad.tensor(ARR, dtype=F64)
            return {"+": t + other, "-": t - other, "*": t * other, "/": t / other}[op]
        if name == "np.float64*x":
            return SCALAR * t  # eager mode is the oracle here; keep numpy scalars out of it
        return fn(t)

    numpy_value = fn(x) if not name.endswith("list") else x + np.array([1.0, 2.0, 3.0, 4.0])
    check(fn, eager, [x], numpy_fn=lambda _x: numpy_value)


NUMPY_LEFT = {
    "arr+x": (lambda x: ARR + x, lambda t, o: o + t),
    "arr-x": (lambda x: ARR - x, lambda t, o: o - t),
    "arr*x": (lambda x: ARR * x, lambda t, o: o * t),
    "arr/x": (lambda x: ARR / x, lambda t, o: o / t),
}


@pytest.mark.parametrize("name", list(NUMPY_LEFT))
def test_operators_with_numpy_array_on_the_left(name):
    """``ndarray <op> Tensor`` must build a graph op, as in TF1 (not an object array)."""
    fn, eager_fn = NUMPY_LEFT[name]
    x = away_from_zero((3, 4), seed=3)
    graph = tf.Graph()
    with graph.as_default():
        probe = fn(tf.placeholder(tf.float64, shape=(3, 4)))
    assert isinstance(probe, tf.Tensor), f"{name} gave {type(probe).__name__}, not a graph Tensor"
    check(fn, lambda t: eager_fn(t, rustgrad.tensor(ARR, dtype=F64)), [x],
          numpy_fn=lambda a: fn(a))


def test_operator_results_match_tf_functions():
    """x - y, x * y, ... are the same ops as tf.subtract etc. (same op types)."""
    x = tf.placeholder(tf.float64, shape=(2,))
    y = tf.placeholder(tf.float64, shape=(2,))
    assert (x + y).op.type == tf.add(x, y).op.type
    assert (x - y).op.type == tf.subtract(x, y).op.type
    assert (x * y).op.type == tf.multiply(x, y).op.type
    assert (x / y).op.type == tf.divide(x, y).op.type
    assert tf.matmul(tf.reshape(x, [1, 2]), tf.reshape(y, [2, 1])).op.type == "MatMul"


def test_pow_function_and_negative():
    x = positive((2, 3), seed=4)
    check(lambda t: tf.pow(t, 3.0), lambda t: t.pow(3.0), [x], numpy_fn=lambda a: a ** 3.0)
    check(tf.negative, lambda t: -t, [x], numpy_fn=np.negative)


# ---------------------------------------------------------------- unary ops

UNARY = {
    "square": (tf.square, lambda t: t.square(), np.square, uniform),
    "exp": (tf.exp, lambda t: t.exp(), np.exp, uniform),
    "log": (tf.log, lambda t: t.log(), np.log, positive),
    "sqrt": (tf.sqrt, lambda t: t.sqrt(), np.sqrt, positive),
    "tanh": (tf.tanh, lambda t: t.tanh(), np.tanh, uniform),
    "sigmoid": (tf.sigmoid, lambda t: t.sigmoid(), lambda a: 1.0 / (1.0 + np.exp(-a)), uniform),
    "nn.relu": (tf.nn.relu, lambda t: t.relu(), lambda a: np.maximum(a, 0.0), away_from_zero),
    "nn.sigmoid": (tf.nn.sigmoid, lambda t: t.sigmoid(), lambda a: 1.0 / (1.0 + np.exp(-a)), uniform),
    "nn.tanh": (tf.nn.tanh, lambda t: t.tanh(), np.tanh, uniform),
    "abs": (tf.abs, lambda t: t.abs(), np.abs, away_from_zero),
    "abs_operator": (lambda t: abs(t), lambda t: abs(t), np.abs, away_from_zero),
}


@PARTIAL
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_ops(name, partial):
    static_fn, eager_fn, numpy_fn, make = UNARY[name]
    x = make((3, 4), seed=6)
    check(static_fn, eager_fn, [x], numpy_fn=numpy_fn, partial_shapes=partial)


def test_unary_gradients_numpy_oracle():
    x = positive((5,), seed=8)
    w = uniform((5,), seed=9)
    oracles = {
        tf.square: 2 * x, tf.exp: np.exp(x), tf.log: 1 / x, tf.sqrt: 0.5 / np.sqrt(x),
        tf.tanh: 1 - np.tanh(x) ** 2,
        tf.sigmoid: np.exp(-x) / (1 + np.exp(-x)) ** 2,
    }
    for fn, slope in oracles.items():
        _, _, (g,), _ = run_static(fn, [x], w)
        np.testing.assert_allclose(g, w * slope, rtol=1e-10, err_msg=fn.__name__)


def test_relu_and_abs_gradient_numpy_oracle():
    x = np.array([-2.0, -0.5, 0.5, 3.0])
    w = np.array([1.0, 2.0, 3.0, 4.0])
    _, _, (g,), _ = run_static(tf.nn.relu, [x], w)
    np.testing.assert_array_equal(g, [0.0, 0.0, 3.0, 4.0])
    _, _, (g,), _ = run_static(tf.abs, [x], w)
    np.testing.assert_array_equal(g, [-1.0, -2.0, 3.0, 4.0])


# ---------------------------------------------------------------- reductions

AXES = [None, 0, 1, 2, -1, -2, [0, 2], [1], [-1, 0], (0, 1, 2)]


def _np_axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def _eager_reduce(method, axis, keepdims):
    def fn(t):
        if axis is None:
            out = getattr(t, method)()
            if keepdims:
                out = out.reshape(1, 1, 1)
            return out
        return getattr(t, method)(dim=axis, keepdim=keepdims)

    return fn


@PARTIAL
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=[str(a) for a in AXES])
@pytest.mark.parametrize("name", ["reduce_sum", "reduce_mean"])
def test_reductions(name, axis, keepdims, partial):
    x = uniform((2, 3, 4), seed=10)
    static_fn = getattr(tf, name)
    method = "sum" if name == "reduce_sum" else "mean"
    np_fn = np.sum if method == "sum" else np.mean
    value, (g,) = check(
        lambda t: static_fn(t, axis=axis, keepdims=keepdims),
        _eager_reduce(method, axis, keepdims),
        [x],
        numpy_fn=lambda a: np_fn(a, axis=_np_axis(axis), keepdims=keepdims),
        partial_shapes=partial,
    )
    assert np.shape(value) == np.shape(np_fn(x, axis=_np_axis(axis), keepdims=keepdims))


def test_reduction_gradient_numpy_oracle():
    x = uniform((2, 3, 4), seed=10)
    w = uniform((2, 4), seed=11)
    _, _, (g,), _ = run_static(lambda t: tf.reduce_sum(t, axis=1), [x], w)
    np.testing.assert_allclose(g, np.broadcast_to(w[:, None, :], x.shape), rtol=1e-12)
    _, _, (g,), _ = run_static(lambda t: tf.reduce_mean(t, axis=1), [x], w)
    np.testing.assert_allclose(g, np.broadcast_to(w[:, None, :], x.shape) / 3, rtol=1e-12)
    _, _, (g,), _ = run_static(lambda t: tf.reduce_mean(t), [x], np.array(2.0))
    np.testing.assert_allclose(g, np.full(x.shape, 2.0 / 24), rtol=1e-12)


def test_reduce_full_returns_numpy_scalar():
    x = tf.placeholder(tf.float64, shape=(None, 3))
    s = tf.reduce_sum(x)
    m = tf.reduce_mean(x)
    assert s.shape.as_list() == []
    with tf.Session() as sess:
        sv, mv = sess.run([s, m], {x: np.arange(6.0).reshape(2, 3)})
    assert isinstance(sv, np.float64) and sv == 15.0
    assert isinstance(mv, np.float64) and mv == 2.5


def test_reduction_static_shapes():
    x = tf.placeholder(tf.float32, shape=(None, 3, 4))
    assert tf.reduce_sum(x, axis=1).shape.as_list() == [None, 4]
    assert tf.reduce_sum(x, axis=[0, -1], keepdims=True).shape.as_list() == [1, 3, 1]
    assert tf.reduce_mean(x, axis=0).shape.as_list() == [3, 4]
    assert tf.reduce_mean(x).shape.as_list() == []


# ---------------------------------------------------------------- shape ops


@PARTIAL
def test_transpose_2d_default(partial):
    x = uniform((3, 4), seed=12)
    value, _ = check(tf.transpose, lambda t: t.t(), [x], numpy_fn=lambda a: a.T,
                     partial_shapes=partial)
    assert value.shape == (4, 3)


@pytest.mark.parametrize("perm", [[1, 0], [0, 2, 1], [2, 1, 0], [1, 0, 2]])
def test_transpose_with_perm(perm):
    shape = (3, 4) if len(perm) == 2 else (2, 3, 4)
    x = uniform(shape, seed=13)
    moved = [i for i, p in enumerate(perm) if i != p]

    def eager(t):
        return t.transpose(moved[0], moved[1])

    check(lambda t: tf.transpose(t, perm=perm), eager, [x],
          numpy_fn=lambda a: np.transpose(a, perm))


@PARTIAL
@pytest.mark.parametrize("target", [[4, 6], [-1], [2, -1], [-1, 3, 2], [24], [1, 24, 1]])
def test_reshape(target, partial):
    x = uniform((2, 3, 4), seed=14)
    value, _ = check(lambda t: tf.reshape(t, target), lambda t: t.reshape(*target), [x],
                     numpy_fn=lambda a: np.reshape(a, target), partial_shapes=partial)


def test_reshape_static_shape_resolves_minus_one():
    x = tf.placeholder(tf.float32, shape=(2, 3, 4))
    assert tf.reshape(x, [-1, 6]).shape.as_list() == [4, 6]
    y = tf.placeholder(tf.float32, shape=(None, 4))
    assert tf.reshape(y, [-1, 2]).shape.as_list()[1] == 2


@PARTIAL
def test_identity(partial):
    x = uniform((3, 4), seed=15)
    check(tf.identity, lambda t: t.clone(), [x], numpy_fn=lambda a: a, partial_shapes=partial)


def test_identity_and_read_value_are_copies_in_value():
    x = uniform((3,), seed=15)
    _, value, (g,), _ = run_static(lambda t: tf.identity(tf.identity(t)) * 2.0, [x], np.ones(3))
    np.testing.assert_array_equal(value, x * 2.0)
    np.testing.assert_array_equal(g, np.full(3, 2.0))


def test_stop_gradient_value_and_no_gradient():
    x = uniform((3, 4), seed=16)
    _, value, grads, grad_tensors = run_static(tf.stop_gradient, [x], uniform((3, 4), seed=17))
    np.testing.assert_array_equal(value, x)
    assert grad_tensors == [None]
    assert grads == [None]


def test_stop_gradient_blocks_only_its_path():
    x = uniform((3, 4), seed=16)
    w = uniform((3, 4), seed=17)
    # d/dx sum(x * stop(x) * w) = stop(x) * w  (the product rule's other half is cut).
    _, value, (g,), _ = run_static(lambda t: t * tf.stop_gradient(t), [x], w)
    np.testing.assert_allclose(value, x * x)
    np.testing.assert_allclose(g, x * w, rtol=1e-12)
    # Eager: detach() plays the role of stop_gradient.
    check(lambda t: t * tf.stop_gradient(t) + tf.square(t),
          lambda t: t * t.detach() + t.square(), [x])


def test_cast_float64_to_float32_and_back():
    x = uniform((3, 4), seed=18)
    w = uniform((3, 4), seed=19)
    graph = tf.Graph()
    with graph.as_default():
        ph = tf.placeholder(tf.float64, shape=(3, 4))
        c = tf.cast(ph, tf.float32)
        assert c.dtype == tf.float32 and c.op.type == "Cast"
        loss = tf.reduce_sum(c * tf.constant(w, dtype=tf.float32))
        (g,) = tf.gradients(loss, [ph])
        assert g.dtype == tf.float64
        with tf.Session() as sess:
            cv, gv = sess.run([c, g], {ph: x})
    assert cv.dtype == np.float32
    np.testing.assert_array_equal(cv, x.astype(np.float32))
    assert gv.dtype == np.float64
    np.testing.assert_allclose(gv, w.astype(np.float32), rtol=1e-7)
    # Eager: the same cast chain.
    leaf = rustgrad.tensor(x, dtype=F64, requires_grad=True)
    (leaf.to(rustgrad.float32) * rustgrad.tensor(w, dtype=rustgrad.float32)).sum().backward()
    np.testing.assert_allclose(gv, leaf.grad.numpy(), rtol=1e-7)


def test_cast_round_trip_value_and_gradient():
    x = uniform((2, 3), seed=20)
    check(lambda t: tf.cast(tf.cast(t, tf.float32), tf.float64) * 3.0,
          lambda t: t.to(rustgrad.float32).to(F64) * 3.0, [x],
          numpy_fn=lambda a: a.astype(np.float32).astype(np.float64) * 3.0)


def test_cast_to_bool_and_back():
    x = np.array([0.0, 1.5, -2.0, 0.0])
    ph = tf.placeholder(tf.float64, shape=(4,))
    b = tf.cast(ph, tf.bool)
    f = tf.cast(b, tf.float32)
    assert b.dtype == tf.bool
    with tf.Session() as sess:
        bv, fv = sess.run([b, f], {ph: x})
    np.testing.assert_array_equal(bv, x != 0)
    assert fv.dtype == np.float32
    np.testing.assert_array_equal(fv, (x != 0).astype(np.float32))


# ---------------------------------------------------------------- composite expressions


def test_composite_expression_gradients_match_eager():
    a, b, c = uniform((3, 4), seed=21), uniform((4, 2), seed=22), uniform((2,), seed=23)

    def static(x, y, z):
        h = tf.nn.relu(tf.matmul(x, y) + z)
        return tf.reduce_mean(tf.tanh(h) * 2.0 - tf.square(z), axis=0) / (1.0 + tf.exp(-z))

    def eager(x, y, z):
        h = (x.mm(y) + z).relu()
        return ((h.tanh() * 2.0 - z.square()).mean(dim=0)) / (1.0 + (-z).exp())

    check(static, eager, [a, b, c])


def test_input_used_twice_accumulates_gradient():
    x = uniform((3,), seed=24)
    check(lambda t: t * t + t * 3.0 - tf.exp(t), lambda t: t * t + t * 3.0 - t.exp(), [x],
          numpy_fn=lambda a: a * a + a * 3.0 - np.exp(a))


def test_float32_ops_compute_in_float32():
    x = uniform((3, 4), seed=25).astype(np.float32)
    ph = tf.placeholder(tf.float32, shape=(3, 4))
    out = tf.reduce_sum(tf.exp(ph) * 2.0, axis=1)
    (g,) = tf.gradients(out, [ph])
    with tf.Session() as sess:
        v, gv = sess.run([out, g], {ph: x})
    assert v.dtype == np.float32 and gv.dtype == np.float32
    np.testing.assert_allclose(v, (np.exp(x) * 2.0).sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(gv, np.exp(x) * 2.0, rtol=1e-5)


# ---------------------------------------------------------------- further ops (beyond the core list)

EXTRA = {
    "clip_by_value": (lambda t: tf.clip_by_value(t, -0.5, 0.7), lambda t: t.clamp(-0.5, 0.7),
                      lambda a: np.clip(a, -0.5, 0.7)),
    "clamp_method": (lambda t: t.clamp(min=0.0), lambda t: t.clamp(min=0.0),
                     lambda a: np.maximum(a, 0.0)),
    "where": (lambda t: tf.where(t > 0.0, t * 2.0, -t),
              lambda t: rustgrad.where(t > 0.0, t * 2.0, -t),
              lambda a: np.where(a > 0, a * 2.0, -a)),
    "sign": (tf.sign, lambda t: t.sign(), np.sign),
    "slice": (lambda t: t[1:, ::2], lambda t: t[1:, ::2], lambda a: a[1:, ::2]),
    "int_index": (lambda t: t[0], lambda t: t[0], lambda a: a[0]),
    "newaxis_index": (lambda t: t[:, None, 1], lambda t: t[:, None, 1], lambda a: a[:, None, 1]),
    "negative_index": (lambda t: t[-1, -2:], lambda t: t[-1, -2:], lambda a: a[-1, -2:]),
    "masked_select": (lambda t: t[t > 0.5], lambda t: t[t > 0.5], lambda a: a[a > 0.5]),
}


@pytest.mark.parametrize("name", list(EXTRA))
def test_further_ops_match_eager(name):
    static_fn, eager_fn, numpy_fn = EXTRA[name]
    x = away_from_zero((3, 4), margin=0.1, seed=30)
    check(static_fn, eager_fn, [x], numpy_fn=numpy_fn)


def test_sources_constant_zeros_ones_like():
    c = tf.constant(2.0, dtype=tf.float64, shape=(2, 2))
    z = tf.zeros((2, 3), dtype=tf.float64)
    o = tf.ones([2])
    x = tf.placeholder(tf.float64, shape=(None, 2))
    zl, ol = tf.zeros_like(x), tf.ones_like(x)
    assert c.dtype == tf.float64 and c.shape.as_list() == [2, 2]
    assert z.dtype == tf.float64 and o.dtype == tf.float32
    assert zl.shape.as_list() == [None, 2] and zl.dtype == tf.float64
    with tf.Session() as sess:
        cv, zv, ov, zlv, olv = sess.run([c, z, o, zl, ol], {x: np.full((3, 2), 7.0)})
    np.testing.assert_array_equal(cv, np.full((2, 2), 2.0))
    np.testing.assert_array_equal(zv, np.zeros((2, 3)))
    np.testing.assert_array_equal(ov, np.ones(2, np.float32))
    np.testing.assert_array_equal(zlv, np.zeros((3, 2)))
    np.testing.assert_array_equal(olv, np.ones((3, 2)))
    # zeros_like does not depend on x's values: no gradient flows through it.
    assert tf.gradients(tf.reduce_sum(zl + ol), [x]) == [None]


def test_comparisons():
    a = np.array([1.0, 2.0, 3.0])
    b = np.array([3.0, 2.0, 1.0])
    x = tf.placeholder(tf.float64, shape=(3,))
    y = tf.placeholder(tf.float64, shape=(3,))
    ops = {
        "equal": (tf.equal, np.equal), "not_equal": (tf.not_equal, np.not_equal),
        "less": (tf.less, np.less), "less_equal": (tf.less_equal, np.less_equal),
        "greater": (tf.greater, np.greater), "greater_equal": (tf.greater_equal, np.greater_equal),
    }
    built = {k: f(x, y) for k, (f, _) in ops.items()}
    for t in built.values():
        assert t.dtype == tf.bool
    with tf.Session() as sess:
        got = sess.run(built, {x: a, y: b})
    for k, (_, npf) in ops.items():
        assert got[k].dtype == np.bool_
        np.testing.assert_array_equal(got[k], npf(a, b), err_msg=k)
