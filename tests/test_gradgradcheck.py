"""``gradgradcheck``: second derivatives of every differentiable op against finite
differences of its gradient (float64), and proof that the check rejects a wrong
double backward.

Every built-in op's backward is differentiable: an op raising "no double backward"
would have to be listed in ``WITHOUT_DOUBLE_BACKWARD``, which is empty (so a gap is a
test failure).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_gradients import CASES
from test_op_table import (
    TABLE,
    TABLE_REFERENCES,
    UNARY,
    UNARY_REFERENCES,
    _call,
    _eager,
    _grad_points,
    _with_indices,
)
from test_property_ops import shapes

import rustgrad
from rustgrad.autograd import Function, GradcheckError, gradgradcheck, once_differentiable
from rustgrad.errors import GradientError


def leaf(a):
    return rustgrad.tensor(np.asarray(a, dtype=np.float64), dtype=rustgrad.float64, requires_grad=True)


NO_DOUBLE_BACKWARD = "differentiating this op is not supported"

# Ops whose backward has no rule of its own: none.
WITHOUT_DOUBLE_BACKWARD: set = set()

# Inputs (by position among the data inputs) checked without a gradient: none.
CONSTANT_INPUTS: dict = {}

# Ops whose first derivative jumps at 0 by convention (pow's is 0 where the exponent is 0,
# as torch; a norm's at the origin): finite differences cannot check across the jump.
JUMPS_AT_ZERO = {"pow", "norm"}

# Ops not differentiable where their value is 0 (a square root there), whose first derivative
# is 0 there by convention, as torch's: std of equal values.
KINK_AT_ZERO_VALUE = {"std"}


def check(fn, inputs, name):
    """gradgradcheck, or the clear error of an op listed as lacking a double backward."""
    try:
        assert gradgradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-4)
    except GradientError as error:
        if isinstance(error, GradcheckError) or NO_DOUBLE_BACKWARD not in str(error):
            raise
        assert name in WITHOUT_DOUBLE_BACKWARD, f"{name}: {error}"


# ----- the check itself


class SquareFirstOrderOnly(Function):
    """x² whose backward is right, but reads x detached: the second derivative is lost."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2.0 * x.detach()


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2.0 * x


class SquareOnce(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2.0 * x


X = np.array([0.7, -1.3, 2.1])


def test_gradgradcheck_rejects_a_backward_right_only_to_first_order():
    from rustgrad.autograd import gradcheck

    assert gradcheck(SquareFirstOrderOnly.apply, (leaf(X),))
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(SquareFirstOrderOnly.apply, (leaf(X),))


def test_gradgradcheck_returns_false_without_raising():
    assert gradgradcheck(SquareFirstOrderOnly.apply, (leaf(X),), raise_exception=False) is False


def test_gradgradcheck_accepts_a_function_whose_backward_is_differentiable():
    assert gradgradcheck(Square.apply, (leaf(X),))


def test_gradgradcheck_of_a_once_differentiable_function_raises_torchs_error():
    with pytest.raises(GradientError, match="marked with @once_differentiable"):
        gradgradcheck(SquareOnce.apply, (leaf(X),))


def test_gradgradcheck_takes_given_grad_outputs_and_non_contiguous_ones():
    x = leaf(X)
    v = leaf([0.3, -0.2, 1.1])
    assert gradgradcheck(lambda a: a.sin() * a, (x,), (v,))
    assert gradgradcheck(lambda a: (a.reshape(3, 1) * a).exp(), (x,), gen_non_contig_grad_outputs=True)


def test_gradgradcheck_checks_several_inputs_and_outputs():
    a, b = leaf(X), leaf([0.5, 1.5, -0.5])
    assert gradgradcheck(lambda p, q: (p * q, (p / (q * q + 1.0)).tanh()), (a, b))


# ----- every op of tests/test_gradients.py


@pytest.mark.parametrize("name", list(CASES))
def test_gradgradcheck_op(name):
    fn, arrays = CASES[name]
    check(fn, tuple(leaf(a) for a in arrays), name)


# ----- every unary op and every table op, over shapes drawn by hypothesis


@pytest.mark.parametrize("spec", UNARY, ids=lambda s: s.name)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_unary_ops_have_second_derivatives_matching_finite_differences(spec, data):
    reference = UNARY_REFERENCES[spec.name]
    shape = data.draw(shapes(max_dims=2, max_side=2))
    a = data.draw(hnp.arrays(np.float64, shape, elements=_grad_points(reference)))
    check(_eager(spec.name), (leaf(a),), spec.name)


@pytest.mark.parametrize("spec", [spec for spec in TABLE if spec.differentiable], ids=lambda s: s.name)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_table_ops_have_second_derivatives_matching_finite_differences(spec, data):
    reference = TABLE_REFERENCES[spec.name]
    shapes_in = reference.shapes(data)
    bound = reference.grad_bound
    if reference.grad_inputs is not None:
        arrays = reference.grad_inputs(data, shapes_in)
    else:
        elements = st.floats(-bound, bound) if reference.grad_elements is None else reference.grad_elements
        arrays = [data.draw(hnp.arrays(np.float64, shape, elements=elements)) for shape in shapes_in]
    assume(sum(a.size for a in arrays) <= 30)  # each check costs one first-derivative pass per element
    if spec.name in JUMPS_AT_ZERO:
        assume(all(np.all(np.abs(a) > 1e-3) for a in arrays))
    kwargs = reference.torch_args(data, shapes_in)
    indices = reference.indices(data, shapes_in, kwargs) if reference.indices else {}
    eager = _with_indices(_call(spec, _eager(spec.name), kwargs, by_name=True), indices, rustgrad.tensor)
    constant = CONSTANT_INPUTS.get(spec.name, set())
    inputs = tuple(
        rustgrad.tensor(a, dtype=rustgrad.float64) if i in constant else leaf(a) for i, a in enumerate(arrays)
    )
    assume(_differentiable_at(eager, inputs, spec.name))
    check(eager, inputs, spec.name)


def _differentiable_at(fn, inputs, name) -> bool:
    """Whether the value and the first derivatives are finite (a second derivative is checked
    only there: not for a one-sample std, nor a std of equal values)."""
    out = fn(*inputs)
    value = np.asarray(out.detach(), dtype=np.float64)
    if not np.all(np.isfinite(value)) or (name in KINK_AT_ZERO_VALUE and np.any(np.abs(value) < 1e-6)):
        return False
    wanted = [t for t in inputs if t.requires_grad]
    grads = rustgrad.autograd.grad(out.sum(), wanted, allow_unused=True)
    return all(g is None or np.all(np.isfinite(np.asarray(g, dtype=np.float64))) for g in grads)


# ----- backward ops exact where a product has zeros (torch's prod_backward / cumprod_backward)

ZEROS = {
    "one zero": [0.7, 0.0, -1.3, 2.1],
    "two zeros": [0.0, 1.5, 0.0, -0.8],
    "three zeros": [0.0, 0.0, 1.1, 0.0],
    "no zero": [0.7, -1.2, 1.3, 2.1],
}


@pytest.mark.parametrize("values", list(ZEROS.values()), ids=list(ZEROS))
def test_prod_and_cumprod_have_second_derivatives_where_the_input_has_zeros(values):
    x = np.array(values)
    for fn in (
        lambda a: a.prod(),
        lambda a: a.reshape(2, 2).prod(dim=1),
        lambda a: a.reshape(2, 2).prod(dim=0, keepdim=True),
        lambda a: a.reshape(1, 2, 2).prod(dim=(0, 2)),
        lambda a: a.reshape(2, 2).prod(dim=(-1, 0)),
        lambda a: a.cumprod(0),
        lambda a: a.reshape(2, 2).cumprod(dim=-1),
        lambda a: a.reshape(2, 2).cumprod(dim=0) * a.reshape(2, 2),
    ):
        assert gradgradcheck(fn, (leaf(x),), eps=1e-6, atol=1e-5, rtol=1e-4)


def test_third_derivative_of_prod_and_cumprod_with_zeros():
    from rustgrad.autograd import grad

    x0 = np.array([0.0, 1.5, 0.0, -0.8, 2.0])
    for fn, third in (
        # d³/dx0 dx2 dxk of prod is the product of the two others; x0 = x2 = 0 leaves k ∈ {1, 3, 4}.
        (lambda a: a.prod(), lambda: np.array([0.0, -1.6, 0.0, 3.0, -1.2])),
        (lambda a: a.cumprod(0)[-1], lambda: np.array([0.0, -1.6, 0.0, 3.0, -1.2])),
    ):
        x = leaf(x0)
        (g,) = grad(fn(x), x, create_graph=True)
        (h,) = grad(g[0], x, create_graph=True)
        (t,) = grad(h[2], x)
        np.testing.assert_allclose(np.asarray(t), third(), atol=1e-12)


# ----- the other backward ops that had no derivative


def test_embedding_with_padding_idx_has_second_derivatives_and_none_through_the_padding_row():
    F = rustgrad.nn.functional
    index = rustgrad.tensor([[0, 2, 1], [2, 2, 3]])
    w = np.random.default_rng(1).normal(size=(4, 2))
    for padding_idx in (2, -2, 0, None):
        def fn(weight, padding_idx=padding_idx):
            return F.embedding(index, weight * weight, padding_idx=padding_idx) ** 2

        assert gradgradcheck(fn, (leaf(w),), eps=1e-6, atol=1e-5, rtol=1e-4)
    weight = leaf(w)
    from rustgrad.autograd import grad

    (g,) = grad((F.embedding(index, weight, padding_idx=2) ** 3).sum(), weight, create_graph=True)
    (h,) = grad(g[2].sum() + g[1].sum(), weight)
    np.testing.assert_allclose(np.asarray(h)[2], 0.0)
    np.testing.assert_allclose(np.asarray(h)[1], 6 * w[1])


def test_group_norm_has_second_derivatives_in_input_weight_and_bias():
    F = rustgrad.nn.functional
    rng = np.random.default_rng(2)
    x, w, b = rng.normal(size=(2, 4, 3)), rng.normal(size=4), rng.normal(size=4)
    for groups in (1, 2, 4):
        def fn(a, weight, bias, groups=groups):
            return F.group_norm(a, groups, weight, bias, eps=0.1) ** 2

        assert gradgradcheck(fn, (leaf(x), leaf(w), leaf(b)), eps=1e-6, atol=1e-5, rtol=1e-4)
    assert gradgradcheck(lambda a: F.group_norm(a, 2, eps=0.1) ** 3, (leaf(x[:, :, 0]),), atol=1e-5, rtol=1e-4)


def test_scatter_and_scatter_add_sources_have_second_derivatives():
    index = rustgrad.tensor([[1, 0], [0, 2]])
    rng = np.random.default_rng(3)
    x, src = rng.normal(size=(3, 3)), rng.normal(size=(2, 3))

    def fn(a, s):
        return (a.scatter(0, index, s * s) * a).sum() + (a.scatter_add(1, index, s**3) ** 2).sum()

    assert gradgradcheck(fn, (leaf(x), leaf(src)), eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_class_losses_have_second_derivatives_in_their_class_weights(loss, reduction):
    F = rustgrad.nn.functional
    rng = np.random.default_rng(4)
    x, w = rng.normal(size=(4, 3)), rng.uniform(0.5, 2.0, size=3)
    target = rustgrad.tensor([2, 0, -100, 2])
    extra = {"label_smoothing": 0.2} if loss == "cross_entropy" else {}

    def fn(a, weight):
        return getattr(F, loss)(a * a, target, weight=weight * weight, reduction=reduction, **extra)

    assert gradgradcheck(fn, (leaf(x), leaf(w)), eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("mode, gates", [("RNN_TANH", 1), ("RNN_RELU", 1), ("LSTM", 4), ("GRU", 3)])
@pytest.mark.parametrize("reverse", [False, True])
def test_recurrent_layers_have_second_derivatives_in_every_input(mode, gates, reverse):
    """The layers' closed-form backward is replayed as recorded steps under create_graph."""
    from rustgrad.nn.modules._rnn_steps import run_direction

    rng = np.random.default_rng(5)
    hidden = 2
    shapes = [(3, 1, 2), (gates * hidden, 2), (gates * hidden, hidden), (gates * hidden,), (gates * hidden,),
              (1, hidden), (1, hidden)]
    inputs = tuple(leaf(rng.normal(size=s) * 0.7) for s in shapes)

    def fn(x, w_ih, w_hh, b_ih, b_hh, h0, c0):
        out, h, c = run_direction(mode, x, (w_ih, w_hh, b_ih, b_hh), h0, c0 if mode == "LSTM" else None, reverse)
        return (out, h) if c is None else (out, h, c)

    assert gradgradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-4)


# ----- the core ops outside the op table, and the losses and layers written over ops, by hypothesis


def _setitem(a, b):
    out = a * 1.0
    out[1:] = b[: a.shape[0] - 1] * b[: a.shape[0] - 1]
    return out


CORE = {
    # name: (function, number of inputs, whether the inputs must be the same shape)
    "max_dim": (lambda a: a.max(dim=-1)[0] * a.sum(), 1),
    "amax": (lambda a: rustgrad.amax(a * a, dim=0), 1),
    "min_all": (lambda a: a.min() * a, 1),
    "maximum": (lambda a, b: rustgrad.maximum(a * b, b), 2),
    "minimum": (lambda a, b: rustgrad.minimum(a, b * b), 2),
    "where": (lambda a, b: rustgrad.where(a > b, a * b, b.exp()), 2),
    "index_tensor": (lambda a: a[rustgrad.tensor([0, 0, -1])] ** 3, 1),
    "index_bool": (lambda a: a[a > 0] ** 3, 1),
    "setitem": (_setitem, 2),
    "clamp_tensor": (lambda a: (a * a).clamp(min=0.1, max=1.5) * a, 1),
    "mse_loss": (lambda a, b: rustgrad.nn.functional.mse_loss(a * a, b), 2),
    "bce_with_logits": (lambda a, b: rustgrad.nn.functional.binary_cross_entropy_with_logits(a * b, b.sigmoid()), 2),
    "smooth_l1_loss": (lambda a, b: rustgrad.nn.functional.smooth_l1_loss(a * a, b), 2),
}


@pytest.mark.parametrize("name", list(CORE))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_core_ops_and_composites_have_second_derivatives_matching_finite_differences(name, data):
    fn, count = CORE[name]
    shape = data.draw(shapes(min_dims=1, max_dims=2, min_side=1, max_side=3))
    # Distinct values away from each other and from the kinks (ties of max/min, the clamp's ends,
    # smooth_l1's |d| = 1), where finite differences cross a jump of the first derivative.
    elements = st.floats(-2, 2).map(lambda v: round(v, 1) + 0.0123)
    arrays = [
        data.draw(hnp.arrays(np.float64, shape, elements=elements, unique=True)) + 0.0371 * k for k in range(count)
    ]
    assume(all(np.all(np.abs(np.abs(a) - v) > 1e-2) for a in arrays for v in (0.1**0.5, 1.5**0.5)))
    inputs = tuple(leaf(a) for a in arrays)
    try:
        out = fn(*inputs)
    except (IndexError, rustgrad.errors.RustgradError):
        assume(False)  # an index out of this shape's range
    assume(out.numel() > 0)
    check(fn, inputs, name)
