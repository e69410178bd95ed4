"""One answer, two modes: for every differentiable table op, over shapes drawn by hypothesis,
the Hessian-vector product of a random projection of its output is the same in eager mode
(``grad(..., create_graph=True)`` twice) and in a static graph (``tf.gradients`` twice), to
float64 rounding. Both run the same derivative rules, so any difference is a bug."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_op_table import TABLE, TABLE_REFERENCES, _call, _eager, _resolve, _tf_names, _with_indices

import rustgrad
import rustgrad.static as tf
from rustgrad.autograd import grad

F64 = rustgrad.float64


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def _eager_hvp(fn, arrays, projection, directions):
    leaves = [rustgrad.tensor(a, dtype=F64, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    first = (out * rustgrad.tensor(projection, dtype=F64)).sum()
    grads = grad(first, leaves, create_graph=True, allow_unused=True)
    terms = [(g * rustgrad.tensor(v, dtype=F64)).sum() for g, v in zip(grads, directions) if g is not None]
    if not terms or not any(t.requires_grad for t in terms):
        return [np.zeros_like(a) for a in arrays]
    second = grad(sum(terms[1:], terms[0]), leaves, allow_unused=True)
    return [np.zeros_like(a) if s is None else np.asarray(s.detach()) for s, a in zip(second, arrays)]


def _static_hvp(fn, arrays, projection, directions):
    holders = [tf.placeholder(tf.float64, shape=a.shape) for a in arrays]
    out = fn(*holders)
    first = tf.reduce_sum(out * tf.constant(projection, dtype=tf.float64))
    grads = tf.gradients(first, holders)
    terms = [tf.reduce_sum(g * tf.constant(v, dtype=tf.float64)) for g, v in zip(grads, directions) if g is not None]
    if not terms:
        return [np.zeros_like(a) for a in arrays]
    second = tf.gradients(sum(terms[1:], terms[0]), holders)
    fetched = [s for s in second if s is not None]
    with tf.Session() as sess:
        values = iter(sess.run(fetched, feed_dict=dict(zip(holders, arrays))) if fetched else [])
    return [np.zeros_like(a) if s is None else next(values) for s, a in zip(second, arrays)]


@pytest.mark.parametrize("spec", [spec for spec in TABLE if spec.differentiable], ids=lambda s: s.name)
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_table_ops_have_the_same_second_derivatives_in_eager_and_static_mode(spec, data):
    reference = TABLE_REFERENCES[spec.name]
    shapes_in = reference.shapes(data)
    if reference.grad_inputs is not None:
        arrays = reference.grad_inputs(data, shapes_in)
    else:
        bound = reference.grad_bound
        elements = st.floats(-bound, bound) if reference.grad_elements is None else reference.grad_elements
        arrays = [data.draw(hnp.arrays(np.float64, shape, elements=elements)) for shape in shapes_in]
    assume(sum(a.size for a in arrays) <= 60)
    kwargs = reference.torch_args(data, shapes_in)
    indices = reference.indices(data, shapes_in, kwargs) if reference.indices else {}
    eager = _with_indices(_call(spec, _eager(spec.name), kwargs, by_name=True), indices, rustgrad.tensor)
    static_function = _resolve(tf, _tf_names(spec)[0])
    static = _with_indices(_call(spec, static_function, reference.tf_args(data, kwargs)), indices, tf.constant)
    out = np.asarray(eager(*[rustgrad.tensor(a, dtype=F64) for a in arrays]))
    assume(np.all(np.isfinite(out)))
    # Where the TF1 name has other semantics (TF's `diag`, `transpose`, NHWC layouts, defaults
    # such as elu's alpha), the two calls are different functions: nothing to compare.
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    # Equal outputs at the drawn point alone do not make two functions one (all zeros: any
    # layout gives zeros), so they are compared at a shifted point as well.
    probe = [a + 0.25 * rng.uniform(0.5, 1.0, a.shape) for a in arrays]
    probe_out = np.asarray(eager(*[rustgrad.tensor(a, dtype=F64) for a in probe]))
    holders = [tf.placeholder(tf.float64, shape=a.shape) for a in arrays]
    with tf.Session() as sess:
        static_out, static_probe = (sess.run(static(*holders), feed_dict=dict(zip(holders, point)))
                                    for point in (arrays, probe))
    assume(static_out.shape == out.shape and np.allclose(static_out, out, rtol=1e-12, atol=1e-12))
    assume(np.allclose(static_probe, probe_out, rtol=1e-12, atol=1e-12, equal_nan=True))
    projection = rng.normal(size=tuple(out.shape))
    directions = [rng.normal(size=a.shape) for a in arrays]
    eager_hvp = _eager_hvp(eager, arrays, projection, directions)
    assume(all(np.all(np.isfinite(h)) for h in eager_hvp))
    static_hvp = _static_hvp(static, arrays, projection, directions)
    for e, s in zip(eager_hvp, static_hvp):
        scale = max(1.0, float(np.max(np.abs(e), initial=0.0)))
        np.testing.assert_allclose(s, e, rtol=1e-10, atol=1e-12 * scale)
