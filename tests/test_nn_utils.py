"""nn.utils: gradient clipping against numpy, and parameters to and from one vector."""

from __future__ import annotations

import math

import numpy as np
import pytest

import rustgrad as torch
from rustgrad import nn
from rustgrad.errors import ArgumentTypeError, GradientError, ShapeError


def params_with_grads(rng, shapes=((3, 4), (5,), (2, 2, 2)), scale=3.0):
    params = []
    for shape in shapes:
        p = nn.Parameter(torch.zeros(*shape))
        p.grad = torch.tensor((rng.standard_normal(shape) * scale).astype(np.float32))
        params.append(p)
    return params


def grads(params):
    return [p.grad.numpy().astype(np.float64) for p in params]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
def test_clip_grad_norm_matches_numpy(rng, norm_type):
    params = params_with_grads(rng)
    before = grads(params)
    flat = np.concatenate([g.ravel() for g in before])
    total = np.abs(flat).max() if norm_type == math.inf else (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    result = nn.utils.clip_grad_norm_(params, max_norm=1.0, norm_type=norm_type)
    assert isinstance(result, torch.Tensor) and result.dim() == 0
    assert result.item() == pytest.approx(total, rel=1e-5)
    coef = min(1.0, 1.0 / (total + 1e-6))
    for got, old in zip(grads(params), before):
        np.testing.assert_allclose(got, old * coef, rtol=1e-5)


def test_clip_grad_norm_leaves_small_gradients_alone_and_skips_missing_grads(rng):
    params = params_with_grads(rng, scale=1e-3)
    params.append(nn.Parameter(torch.ones(2)))  # no grad
    before = grads(params[:-1])
    nn.utils.clip_grad_norm_(params, max_norm=10.0)
    for got, old in zip(grads(params[:-1]), before):
        np.testing.assert_array_equal(got, old)
    assert params[-1].grad is None


def test_clip_grad_norm_takes_a_single_tensor_and_an_empty_list(rng):
    (p,) = params_with_grads(rng, shapes=((4,),))
    norm = np.linalg.norm(p.grad.numpy())
    assert nn.utils.clip_grad_norm_(p, 0.5).item() == pytest.approx(norm, rel=1e-6)
    assert np.linalg.norm(p.grad.numpy()) == pytest.approx(0.5, rel=1e-5)
    assert nn.utils.clip_grad_norm_([], 1.0).item() == 0.0


def test_clip_grad_norm_error_if_nonfinite():
    p = nn.Parameter(torch.zeros(2))
    p.grad = torch.tensor([float("inf"), 1.0])
    with pytest.raises(GradientError, match="The total norm of order 2.0 for gradients from `parameters` is "
                       "non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert p.grad.tolist() == [float("inf"), 1.0]


def test_clip_grad_norm_on_a_model_after_backward():
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    (model(torch.randn(16, 4)).sum() * 100).backward()
    total = nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.25)
    assert total.item() > 0.25
    after = np.sqrt(sum((p.grad.numpy().astype(np.float64) ** 2).sum() for p in model.parameters()))
    assert after == pytest.approx(0.25, rel=1e-4)


def test_clip_grad_value_clamps_every_gradient(rng):
    params = params_with_grads(rng)
    before = grads(params)
    assert nn.utils.clip_grad_value_(params, 0.5) is None
    for got, old in zip(grads(params), before):
        np.testing.assert_allclose(got, np.clip(old, -0.5, 0.5), rtol=1e-6)


def test_parameters_to_vector_and_back_round_trip():
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    vec = nn.utils.parameters_to_vector(model.parameters())
    expected = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
    assert vec.shape == (11,)
    np.testing.assert_array_equal(vec.detach().numpy(), expected)
    target = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    nn.utils.vector_to_parameters(vec.detach(), target.parameters())
    for a, b in zip(model.parameters(), target.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        assert b.is_leaf and b.requires_grad


def test_parameters_to_vector_is_differentiable():
    a, b = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(3))
    (nn.utils.parameters_to_vector([a, b]) * torch.arange(5.0)).sum().backward()
    assert a.grad.tolist() == [0.0, 1.0] and b.grad.tolist() == [2.0, 3.0, 4.0]


def test_vector_to_parameters_refuses_bad_vectors():
    params = [nn.Parameter(torch.zeros(2)), nn.Parameter(torch.zeros(3))]
    with pytest.raises(ArgumentTypeError, match="expected torch.Tensor, but got: list"):
        nn.utils.vector_to_parameters([1.0] * 5, params)
    with pytest.raises(ShapeError, match="vec must be 1-D with 5 elements"):
        nn.utils.vector_to_parameters(torch.ones(4), params)
    assert all(not p.detach().numpy().any() for p in params)
