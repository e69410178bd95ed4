"""Derivatives of derivatives in eager mode: ``create_graph=True`` records the
backward pass, so its results can be differentiated again, to any order.

Hessians are checked against closed forms and against finite differences of the
gradient (float64).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rustgrad
from rustgrad.autograd import Function, grad, once_differentiable
from rustgrad.errors import GradientError


def leaf(a):
    return rustgrad.tensor(np.asarray(a, dtype=np.float64), dtype=rustgrad.float64, requires_grad=True)


def values(t):
    return np.asarray(t.detach(), dtype=np.float64)


def hessian(f, x):
    """d²f/dx² of a scalar f, one row per element of x, from grad of grad."""
    (g,) = grad(f(x), x, create_graph=True)
    flat = g.reshape(-1)
    rows = []
    for i in range(flat.shape[0]):
        (row,) = grad(flat[i], x, retain_graph=True, allow_unused=True)
        rows.append(np.zeros(x.numel()) if row is None else values(row).reshape(-1))
    return np.stack(rows)


def fd_hessian(f, x0, eps=1e-5):
    """Central differences of the (first-order) gradient."""
    x0 = np.asarray(x0, dtype=np.float64)

    def gradient(a):
        x = leaf(a)
        (g,) = grad(f(x), x)
        return values(g).reshape(-1)

    cols = []
    for k in range(x0.size):
        step = np.zeros(x0.size)
        step[k] = eps
        cols.append((gradient(x0 + step.reshape(x0.shape)) - gradient(x0 - step.reshape(x0.shape))) / (2 * eps))
    return np.stack(cols, axis=1)


RNG = np.random.default_rng(0)
X = RNG.uniform(-1.5, 1.5, size=4)


# ----- closed forms -----


def test_hessian_of_sum_of_cubes_is_diag_6x():
    h = hessian(lambda x: (x**3).sum(), leaf(X))
    np.testing.assert_allclose(h, np.diag(6 * X), rtol=1e-12, atol=1e-12)


def test_hessian_of_mean_of_cubes_is_diag_6x_over_n():
    h = hessian(lambda x: (x * x * x).mean(), leaf(X))
    np.testing.assert_allclose(h, np.diag(6 * X / X.size), rtol=1e-12, atol=1e-12)


def test_hessian_of_quadratic_form_is_a_plus_a_transpose():
    a_np = RNG.normal(size=(4, 4))
    a = rustgrad.tensor(a_np, dtype=rustgrad.float64)
    h = hessian(lambda x: x @ (a @ x), leaf(X))
    np.testing.assert_allclose(h, a_np + a_np.T, rtol=1e-12, atol=1e-12)


def test_hessian_of_quadratic_form_through_matrix_products():
    a_np = RNG.normal(size=(4, 4))
    a = rustgrad.tensor(a_np, dtype=rustgrad.float64)
    h = hessian(lambda x: (x.reshape(1, 4) @ a @ x.reshape(4, 1)).sum(), leaf(X))
    np.testing.assert_allclose(h, a_np + a_np.T, rtol=1e-12, atol=1e-12)


def softmax_np(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def test_hessian_of_log_sum_exp_is_diag_p_minus_p_p_transpose():
    p = softmax_np(X)
    h = hessian(lambda x: x.exp().sum().log(), leaf(X))
    np.testing.assert_allclose(h, np.diag(p) - np.outer(p, p), rtol=1e-10, atol=1e-12)


def test_hessian_of_the_logsumexp_op_is_diag_p_minus_p_p_transpose():
    p = softmax_np(X)
    h = hessian(lambda x: rustgrad.logsumexp(x, 0), leaf(X))
    np.testing.assert_allclose(h, np.diag(p) - np.outer(p, p), rtol=1e-10, atol=1e-12)


def test_third_derivative_of_sin_is_minus_cos():
    x = leaf(X)
    (d1,) = grad(x.sin().sum(), x, create_graph=True)
    (d2,) = grad(d1.sum(), x, create_graph=True)
    (d3,) = grad(d2.sum(), x)
    np.testing.assert_allclose(values(d1), np.cos(X), rtol=1e-12)
    np.testing.assert_allclose(values(d2), -np.sin(X), rtol=1e-12)
    np.testing.assert_allclose(values(d3), -np.cos(X), rtol=1e-12)


@pytest.mark.parametrize(
    "name, f",
    [
        ("exp", lambda x: (x.exp() * x).sum()),
        ("sigmoid", lambda x: x.sigmoid().sum()),
        ("tanh", lambda x: (x.tanh() ** 2).sum()),
        ("sqrt", lambda x: (x * x + 1.0).sqrt().sum()),
        ("reciprocal", lambda x: (1.0 / (x * x + 1.0)).sum()),
        ("div", lambda x: (x / (x * x + 2.0)).sum()),
        ("pow_tensor", lambda x: ((x * x + 1.0) ** x).sum()),
        ("max_reduction", lambda x: (x * x).max() + (x**3).sum()),
        ("index_with_repeats", lambda x: (x[[0, 2, 2, 3]] ** 3).sum()),
        ("slice", lambda x: (x[1:3] ** 3).sum() * x[0]),
        ("mask", lambda x: (x[x > 0] ** 3).sum()),
        ("broadcast", lambda x: ((x.reshape(4, 1) * x.reshape(1, 4)) ** 2).sum()),
        ("mean_over_dim", lambda x: (lambda m: m[0] * m[1])((x.reshape(2, 2) ** 3).mean(dim=1))),
    ],
)
def test_hessian_matches_finite_differences_of_the_gradient(name, f):
    """Rules that read saved outputs (exp, sigmoid, tanh, sqrt, div) and the
    backward-only ops of indexing and reductions."""
    np.testing.assert_allclose(hessian(f, leaf(X)), fd_hessian(f, X), rtol=1e-6, atol=1e-7)


def test_two_layer_net_loss_hessian_matches_finite_differences_of_the_gradient():
    rng = np.random.default_rng(1)
    data = rustgrad.tensor(rng.normal(size=(5, 3)), dtype=rustgrad.float64)
    target = rustgrad.tensor(rng.normal(size=(5, 2)), dtype=rustgrad.float64)
    w2 = rustgrad.tensor(rng.normal(size=(4, 2)), dtype=rustgrad.float64)

    def loss(w1_flat):
        hidden = (data @ w1_flat.reshape(3, 4)).tanh()
        return ((hidden @ w2 - target) ** 2).mean()

    w1 = rng.normal(size=12)
    np.testing.assert_allclose(hessian(loss, leaf(w1)), fd_hessian(loss, w1), rtol=1e-5, atol=1e-7)


# ----- what create_graph records -----


def test_gradient_with_create_graph_has_a_grad_fn_and_without_has_none():
    x = leaf(X)
    (g,) = grad((x**3).sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    (plain,) = grad((x**3).sum(), x)
    assert not plain.requires_grad and plain.grad_fn is None


def test_create_graph_on_tensors_that_need_no_second_gradient_still_works():
    x = leaf(X)
    (g,) = grad((x * 3.0).sum(), x, create_graph=True)
    np.testing.assert_allclose(values(g), np.full(4, 3.0))
    assert not g.requires_grad


def test_grad_with_create_graph_retains_the_graph_by_default():
    x = leaf(X)
    y = (x**3).sum()
    grad(y, x, create_graph=True)
    (again,) = grad(y, x)
    np.testing.assert_allclose(values(again), 3 * X**2, rtol=1e-12)


def test_create_graph_with_retain_graph_false_frees_the_graph():
    x = leaf(X)
    y = (x**3).sum()
    grad(y, x, create_graph=True, retain_graph=False)
    with pytest.raises(GradientError, match="backward through the graph a second time"):
        grad(y, x)


def test_grad_outputs_that_require_grad_are_differentiated_too():
    x = leaf(X)
    v = leaf(np.ones(4))
    (g,) = grad(x**2, x, grad_outputs=v, create_graph=True)
    (dv,) = grad(g.sum(), v)
    np.testing.assert_allclose(values(dv), 2 * X, rtol=1e-12)


def test_backward_with_create_graph_warns_as_torch_and_grad_has_history():
    x = leaf(X)
    with pytest.warns(UserWarning, match=r"Using backward\(\) with create_graph=True will create a reference cycle"):
        (x**3).sum().backward(create_graph=True)
    assert x.grad.grad_fn is not None
    np.testing.assert_allclose(values(x.grad), 3 * X**2, rtol=1e-12)
    (second,) = grad(x.grad.sum(), x)
    np.testing.assert_allclose(values(second), 6 * X, rtol=1e-12)


def test_backward_with_create_graph_accumulates_out_of_place():
    x = leaf(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        (x**3).sum().backward(create_graph=True)
        first = x.grad
        before = values(first).copy()
        (x**2).sum().backward(create_graph=True)
    assert x.grad is not first
    np.testing.assert_allclose(values(first), before)
    np.testing.assert_allclose(values(x.grad), 3 * X**2 + 2 * X, rtol=1e-12)
    (second,) = grad(x.grad.sum(), x)
    np.testing.assert_allclose(values(second), 6 * X + 2, rtol=1e-12)


def test_module_level_backward_takes_create_graph():
    x = leaf(X)
    with pytest.warns(UserWarning, match="reference cycle"):
        rustgrad.autograd.backward([(x**3).sum()], create_graph=True)
    assert x.grad.requires_grad


def test_plain_backward_does_not_warn_and_keeps_grad_detached():
    x = leaf(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x**3).sum().backward()
    assert x.grad.grad_fn is None and not x.grad.requires_grad


def test_saved_tensor_modified_in_place_is_refused_under_create_graph():
    x = leaf(X)
    y = x * 1.0
    z = (y * y).sum()
    with rustgrad.no_grad():
        y.mul_(2.0)
    with pytest.raises(GradientError, match="modified by an inplace operation"):
        grad(z, x, create_graph=True)


def test_float32_second_derivatives_keep_float32():
    x = rustgrad.tensor(X.astype(np.float32), requires_grad=True)
    (g,) = grad((x**3).sum(), x, create_graph=True)
    (h,) = grad(g.sum(), x)
    assert h.dtype == rustgrad.float32
    np.testing.assert_allclose(np.asarray(h), 6 * X, rtol=1e-5)


# ----- custom Functions -----


class Cube(Function):
    """x³ whose backward is written with tensor ops on a saved input."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3.0 * x * x


class Exp(Function):
    """exp whose backward reads its saved output."""

    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * out


def test_custom_function_reading_a_saved_input_is_differentiable_twice():
    x = leaf(X)
    (g,) = grad(Cube.apply(x).sum(), x, create_graph=True)
    (h,) = grad(g.sum(), x, create_graph=True)
    (third,) = grad(h.sum(), x)
    np.testing.assert_allclose(values(h), 6 * X, rtol=1e-12)
    np.testing.assert_allclose(values(third), np.full(4, 6.0), rtol=1e-12)


def test_custom_function_reading_its_saved_output_is_differentiable_twice():
    x = leaf(X)
    (g,) = grad(Exp.apply(x * 2.0).sum(), x, create_graph=True)
    (h,) = grad(g.sum(), x)
    np.testing.assert_allclose(values(g), 2 * np.exp(2 * X), rtol=1e-12)
    np.testing.assert_allclose(values(h), 4 * np.exp(2 * X), rtol=1e-12)


def test_custom_function_saved_tensors_have_no_history_in_plain_backward():
    seen = []

    class Spy(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            seen.append(x.requires_grad)
            return g * 2.0

    x = leaf(X)
    Spy.apply(x).sum().backward()
    assert seen == [False]


class CubeOnce(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3.0 * x * x


def test_once_differentiable_gives_the_first_derivative():
    x = leaf(X)
    (g,) = grad(CubeOnce.apply(x).sum(), x)
    np.testing.assert_allclose(values(g), 3 * X**2, rtol=1e-12)
    (g,) = grad(CubeOnce.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(values(g), 3 * X**2, rtol=1e-12)


def test_differentiating_a_once_differentiable_function_twice_raises_torchs_error():
    x = leaf(X)
    # The gradient reaching the backward depends on x, so its result must be recorded.
    (g,) = grad((CubeOnce.apply(x) ** 2).sum(), x, create_graph=True)
    np.testing.assert_allclose(values(g), 6 * X**5, rtol=1e-12)
    assert g.requires_grad
    with pytest.raises(
        GradientError,
        match="trying to differentiate twice a function that was marked with @once_differentiable",
    ):
        grad(g.sum(), x)


def test_once_differentiable_is_exported_by_autograd():
    assert "once_differentiable" in rustgrad.autograd.__all__
    assert rustgrad.autograd.once_differentiable is once_differentiable


# ----- fused backward ops (the composite rules) -----

F = rustgrad.nn.functional


def tensor(a):
    return rustgrad.tensor(np.asarray(a, dtype=np.float64), dtype=rustgrad.float64)


@pytest.mark.parametrize(
    "name, f",
    [
        ("softmax", lambda x: (F.softmax(x.reshape(2, 2), dim=1) * tensor([[1.0, -2.0], [0.5, 3.0]])).sum()),
        ("log_softmax", lambda x: (F.log_softmax(x.reshape(2, 2), dim=0) * tensor([[1.0, -2.0], [0.5, 3.0]])).sum()),
        ("gelu", lambda x: (F.gelu(x) * x).sum()),
        ("gelu_tanh", lambda x: (F.gelu(x, approximate="tanh") * x).sum()),
        ("silu", lambda x: (F.silu(x) ** 2).sum()),
        ("selu", lambda x: (F.selu(x) * x).sum()),
        ("logsigmoid", lambda x: F.logsigmoid(x).sum()),
        ("elu", lambda x: (F.elu(x, alpha=0.7) * x).sum()),
        ("softplus", lambda x: (F.softplus(x, beta=2.0) * x).sum()),
        ("leaky_relu", lambda x: (F.leaky_relu(x, 0.1) * x).sum()),
        ("var", lambda x: x.var() * x.sum()),
        ("var_dim_keepdim", lambda x: (x.reshape(2, 2).var(dim=1, keepdim=True) ** 2).sum()),
        ("std", lambda x: x.std()),
        ("cat", lambda x: (rustgrad.cat([x[:2] ** 2, x**3]) * tensor(np.arange(6.0))).sum()),
        (
            "take_along_dim",
            lambda x: (rustgrad.take_along_dim(x.reshape(2, 2), rustgrad.tensor([[1, 1], [0, 1]]), dim=1) ** 3).sum(),
        ),
        ("embedding", lambda x: (F.embedding(rustgrad.tensor([1, 0, 1]), x.reshape(2, 2)) ** 3).sum()),
        ("linear", lambda x: (F.linear(x.reshape(2, 2), x.reshape(2, 2), x[:2]) ** 2).sum()),
        ("linear_3d_input", lambda x: (F.linear(x.reshape(1, 2, 2), x.reshape(2, 2)) ** 2).sum()),
        (
            "cross_entropy",
            lambda x: F.cross_entropy(x.reshape(2, 2) * x.reshape(2, 2), rustgrad.tensor([1, 0])),
        ),
        (
            "cross_entropy_weighted_smoothed",
            lambda x: F.cross_entropy(
                x.reshape(2, 2) ** 3, rustgrad.tensor([1, 0]), weight=tensor([0.3, 2.0]), label_smoothing=0.2
            ),
        ),
        (
            "cross_entropy_sum_ignore",
            lambda x: F.cross_entropy(
                (x.reshape(2, 2) ** 2), rustgrad.tensor([1, -100]), reduction="sum"
            ),
        ),
        (
            "nll_loss_none",
            lambda x: (F.nll_loss(F.log_softmax(x.reshape(2, 2) ** 2, dim=1), rustgrad.tensor([1, 0]),
                                  reduction="none") ** 2).sum(),
        ),
    ],
)
def test_hessian_through_fused_backward_ops_matches_finite_differences(name, f):
    np.testing.assert_allclose(hessian(f, leaf(X)), fd_hessian(f, X), rtol=1e-6, atol=1e-7)


def test_third_derivative_through_gelu():
    x = leaf(X)
    (d1,) = grad(F.gelu(x).sum(), x, create_graph=True)
    (d2,) = grad(d1.sum(), x, create_graph=True)
    (d3,) = grad(d2.sum(), x)
    phi = np.exp(-X**2 / 2) / np.sqrt(2 * np.pi)
    np.testing.assert_allclose(values(d2), phi * (2 - X**2), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(values(d3), phi * (X**3 - 4 * X), rtol=1e-10, atol=1e-12)


def _critic(params, x):
    w1, b1, w2, b2 = params
    return F.linear(F.leaky_relu(F.linear(x, w1, b1), 0.2) + F.softplus(F.linear(x, w1, b1)), w2, b2)


def test_gradient_penalty_gradients_match_finite_differences():
    """WGAN-GP: the penalty (‖∂D/∂x‖ − 1)² of an MLP critic, differentiated in its weights."""
    rng = np.random.default_rng(3)
    shapes = [(5, 2), (5,), (1, 5), (1,)]
    flat0 = rng.normal(size=sum(int(np.prod(s)) for s in shapes))
    points = tensor(rng.normal(size=(4, 2)))

    def unflatten(flat):
        out, start = [], 0
        for s in shapes:
            n = int(np.prod(s))
            out.append(flat[start : start + n].reshape(*s))
            start += n
        return out

    def penalty(flat):
        x = points.detach().requires_grad_()
        (dx,) = grad(_critic(unflatten(flat), x).sum(), x, create_graph=True)
        return ((dx.pow(2).sum(dim=1).sqrt() - 1.0) ** 2).mean()

    flat = leaf(flat0)
    (analytic,) = grad(penalty(flat), flat)
    eps = 1e-6
    numeric = np.zeros_like(flat0)
    for k in range(flat0.size):
        step = np.zeros_like(flat0)
        step[k] = eps
        numeric[k] = (penalty(tensor(flat0 + step)).item() - penalty(tensor(flat0 - step)).item()) / (2 * eps)
    np.testing.assert_allclose(values(analytic), numeric, rtol=1e-6, atol=1e-8)


def test_logistic_regression_hessian_matches_finite_differences_and_the_closed_form():
    rng = np.random.default_rng(4)
    data = rng.normal(size=(8, 3))
    labels = (rng.uniform(size=8) < 0.5).astype(np.int64)
    inputs, targets = tensor(data), rustgrad.tensor(labels)

    def loss(w):
        logits = F.linear(inputs, w.reshape(2, 3))
        return F.cross_entropy(logits, targets)

    w0 = rng.normal(size=6) * 0.5
    h = hessian(loss, leaf(w0))
    np.testing.assert_allclose(h, fd_hessian(loss, w0), rtol=1e-6, atol=1e-8)
    # Softmax regression: H = mean over samples of (diag(p) − ppᵀ) ⊗ x xᵀ.
    logits = data @ w0.reshape(2, 3).T
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    closed = sum(np.kron(np.diag(pi) - np.outer(pi, pi), np.outer(xi, xi)) for pi, xi in zip(p, data)) / len(data)
    np.testing.assert_allclose(h, closed, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("x0", [np.arange(1.0, 5.0), np.array([2.0, 0.0, -1.5, 3.0]), np.array([0.0, 2.0, 0.0, 3.0])])
def test_hessian_of_prod_is_the_products_of_the_other_two_even_with_zeros(x0):
    h = hessian(lambda x: x.prod(), leaf(x0))
    closed = np.array([[0.0 if i == j else np.prod(np.delete(x0, [i, j])) for j in range(4)] for i in range(4)])
    np.testing.assert_allclose(h, closed, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(h, fd_hessian(lambda x: x.prod(), x0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(
    "name, f",
    [
        ("layer_norm", lambda x: (F.layer_norm(x.reshape(2, 2) ** 2, (2,)) * tensor([[1.0, 2.0], [-1.0, 0.5]])).sum()),
        (
            "group_norm",
            lambda x: (F.group_norm(x.reshape(1, 4, 1) ** 2, 2, x * x, x) * tensor(X).reshape(1, 4, 1)).sum(),
        ),
        (
            "batch_norm_training",
            lambda x: (F.batch_norm(x.reshape(2, 2, 1) * x.reshape(2, 2, 1), None, None, training=True) ** 3).sum(),
        ),
        (
            "batch_norm_eval",
            lambda x: (F.batch_norm(x.reshape(2, 2) ** 3, tensor([0.1, -0.2]), tensor([1.5, 0.7])) ** 2).sum(),
        ),
        (
            "conv2d",
            lambda x: (F.conv2d(x.reshape(1, 1, 2, 2) ** 2, x.reshape(1, 1, 2, 2), padding=1) ** 2).sum(),
        ),
        ("avg_pool2d", lambda x: (F.avg_pool2d(x.reshape(1, 1, 2, 2) ** 2, 1) ** 2).sum() + F.avg_pool2d(
            x.reshape(1, 2, 2) ** 3, 2).sum()),
        ("adaptive_avg_pool2d", lambda x: (F.adaptive_avg_pool2d(x.reshape(1, 2, 2) ** 3, (1, 2)) ** 2).sum()),
        ("max_pool2d", lambda x: (F.max_pool2d(x.reshape(1, 1, 2, 2) ** 3, (1, 2)) ** 2).sum()),
    ],
)
def test_hessian_through_layer_backward_ops_matches_finite_differences(name, f):
    np.testing.assert_allclose(hessian(f, leaf(X)), fd_hessian(f, X), rtol=1e-6, atol=1e-7)


def test_second_derivatives_in_the_class_weights_match_finite_differences():
    """The weighted mean's gradient depends on the weights through the weights' sum too."""
    w0 = np.array([0.5, 2.0])

    def f(p):
        x, w = p[:4].reshape(2, 2), p[4:]
        return F.cross_entropy(x * w, rustgrad.tensor([1, 0]), weight=w * w) + F.nll_loss(x, rustgrad.tensor([0, 0]), w)

    p0 = np.concatenate([X, w0])
    np.testing.assert_allclose(hessian(f, leaf(p0)), fd_hessian(f, p0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("layer", ["RNN", "LSTM", "GRU"])
def test_recurrent_layers_give_the_same_gradients_under_create_graph_and_second_derivatives(layer):
    rustgrad.manual_seed(0)
    module = getattr(rustgrad.nn, layer)(3, 4).double()
    inputs = tensor(np.random.default_rng(7).normal(size=(5, 2, 3))).requires_grad_()
    weight = module.weight_hh_l0
    plain = grad(module(inputs)[0].pow(2).sum(), [inputs, weight])
    recorded = grad(module(inputs)[0].pow(2).sum(), [inputs, weight], create_graph=True)
    for p, r in zip(plain, recorded):
        np.testing.assert_allclose(values(r), values(p), rtol=1e-12)
    assert recorded[0].requires_grad
    x0 = values(inputs)[:2, :1]
    assert rustgrad.autograd.gradgradcheck(lambda a: module(a)[0].tanh(), (leaf(x0),), atol=1e-5, rtol=1e-4)
