"""The layers over existing ops: Linear, Bilinear, Identity, Flatten, Unflatten, activations and
losses: values against numpy, Bilinear's gradients against float64 finite differences, torch's
default initialisation bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest

import rustgrad as torch
import rustgrad.nn.functional as F
from rustgrad import nn
from rustgrad.autograd import gradcheck
from rustgrad.errors import ArgumentTypeError, ShapeError


def _np(t):
    return t.detach().numpy()


def test_linear_matches_numpy_on_batches_and_extra_dims(rng):
    lin = nn.Linear(5, 3)
    assert lin.weight.shape == (3, 5) and lin.bias.shape == (3,)
    for shape in [(4, 5), (2, 4, 5), (5,)]:
        x = rng.standard_normal(shape).astype(np.float32)
        expected = x @ _np(lin.weight).T + _np(lin.bias)
        np.testing.assert_allclose(_np(lin(torch.tensor(x))), expected, rtol=1e-5, atol=1e-6)


def test_linear_without_bias_and_in_float64():
    lin = nn.Linear(3, 2, bias=False, dtype=torch.float64)
    assert lin.bias is None and [n for n, _ in lin.named_parameters()] == ["weight"]
    x = torch.randn(4, 3, dtype=torch.float64)
    assert lin(x).dtype == torch.float64
    np.testing.assert_allclose(_np(lin(x)), x.numpy() @ _np(lin.weight).T)


def test_linear_gradients_flow_to_weight_and_bias():
    lin = nn.Linear(3, 2, dtype=torch.float64)
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda a, w, b: F.linear(a, w, b), (x, lin.weight, lin.bias))


def test_linear_default_init_is_torch_kaiming_uniform_and_fan_in_bias():
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)  # kaiming_uniform_ with a=sqrt(5): gain sqrt(1/3), bound sqrt(3)*gain/sqrt(fan_in)
    w, b = _np(lin.weight), _np(lin.bias)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound
    assert np.abs(b).max() <= bound and np.abs(b).max() > 0.9 * bound


def test_linear_wrong_input_size_raises_shape_error():
    with pytest.raises(ShapeError):
        nn.Linear(3, 2)(torch.ones(4, 5))


def test_bilinear_matches_numpy(rng):
    bil = nn.Bilinear(3, 4, 2)
    assert bil.weight.shape == (2, 3, 4) and bil.bias.shape == (2,)
    x1 = rng.standard_normal((5, 3)).astype(np.float32)
    x2 = rng.standard_normal((5, 4)).astype(np.float32)
    expected = np.einsum("bi,kij,bj->bk", x1, _np(bil.weight), x2) + _np(bil.bias)
    np.testing.assert_allclose(_np(bil(torch.tensor(x1), torch.tensor(x2))), expected, rtol=1e-5, atol=1e-5)
    bound = 1 / math.sqrt(3)
    assert np.abs(_np(bil.weight)).max() <= bound and np.abs(_np(bil.bias)).max() <= bound


def test_bilinear_gradients_match_finite_differences():
    x1 = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
    x2 = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    w = torch.randn(2, 2, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(2, dtype=torch.float64, requires_grad=True)
    assert gradcheck(F.bilinear, (x1, x2, w, b))
    assert gradcheck(lambda a, c, v: F.bilinear(a, c, v), (x1, x2, w))


def test_bilinear_shape_mismatch_raises():
    bil = nn.Bilinear(3, 4, 2)
    with pytest.raises(ShapeError, match="bilinear"):
        bil(torch.ones(5, 3), torch.ones(5, 3))
    with pytest.raises(ShapeError, match="same leading dims"):
        bil(torch.ones(5, 3), torch.ones(4, 4))


def test_identity_returns_its_input_and_ignores_arguments():
    x = torch.ones(2)
    assert nn.Identity(54, unused="x")(x) is x


def test_flatten_and_unflatten():
    x = torch.arange(24.0).reshape(2, 3, 4)
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Flatten(0, 1)(x).shape == (6, 4)
    assert nn.Flatten(0, -1)(x).shape == (24,)
    np.testing.assert_array_equal(nn.Flatten()(x).numpy(), x.numpy().reshape(2, 12))
    assert nn.Unflatten(1, (3, 4))(torch.ones(2, 12)).shape == (2, 3, 4)
    assert nn.Unflatten(-1, [2, -1])(torch.ones(2, 12)).shape == (2, 2, 6)
    with pytest.raises(ArgumentTypeError, match="unflattened_size must be tuple of ints, but found element of type "
                       "float at pos 1"):
        nn.Unflatten(1, (2, 6.0))


def test_activation_modules_match_numpy(rng):
    x = rng.standard_normal((3, 4))
    t = torch.tensor(x)
    np.testing.assert_allclose(nn.ReLU()(t).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(nn.Sigmoid()(t).numpy(), 1 / (1 + np.exp(-x)), rtol=1e-6)
    np.testing.assert_allclose(nn.Tanh()(t).numpy(), np.tanh(x), rtol=1e-6)
    softmax = np.exp(x) / np.exp(x).sum(1, keepdims=True)
    np.testing.assert_allclose(nn.Softmax(dim=1)(t).numpy(), softmax, rtol=1e-6)
    np.testing.assert_allclose(nn.LogSoftmax(dim=1)(t).numpy(), np.log(softmax), rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(nn.Softmax(0)(t).numpy(), np.exp(x) / np.exp(x).sum(0), rtol=1e-6)


def test_loss_modules_match_their_functional_forms(rng):
    x = torch.tensor(rng.standard_normal((6, 4)))
    y = torch.tensor(rng.standard_normal((6, 4)))
    target = torch.tensor([0, 1, 2, 3, 1, -100])
    weight = torch.tensor([1.0, 2.0, 0.5, 1.0], dtype=torch.float64)
    assert nn.MSELoss()(x, y).item() == pytest.approx(((x.numpy() - y.numpy()) ** 2).mean())
    assert nn.MSELoss(reduction="sum")(x, y).item() == pytest.approx(((x.numpy() - y.numpy()) ** 2).sum())
    assert nn.MSELoss(reduction="none")(x, y).shape == (6, 4)
    ce = nn.CrossEntropyLoss(weight=weight, label_smoothing=0.1)
    expected = F.cross_entropy(x, target, weight=weight, label_smoothing=0.1).item()
    assert ce(x, target).item() == pytest.approx(expected)
    log_probs = F.log_softmax(x, 1)
    assert nn.NLLLoss(reduction="sum")(log_probs, target).item() == pytest.approx(
        F.nll_loss(log_probs, target, reduction="sum").item())
    assert nn.CrossEntropyLoss(ignore_index=1)(x[:5], target[:5]).item() == pytest.approx(
        F.cross_entropy(x[:5], target[:5], ignore_index=1).item())


def test_weighted_losses_register_their_weight_as_a_buffer():
    weight = torch.ones(3)
    ce = nn.CrossEntropyLoss(weight=weight)
    assert ce.weight is weight and list(ce.state_dict()) == ["weight"]
    assert nn.NLLLoss().weight is None and list(nn.NLLLoss().state_dict()) == []
    assert nn.MSELoss().reduction == "mean"


def test_loss_modules_take_the_legacy_arguments_with_a_warning():
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        loss = nn.MSELoss(size_average=False)
    assert loss.reduction == "sum"
    with pytest.warns(UserWarning):
        assert nn.MSELoss(reduce=False).reduction == "none"


def test_a_bad_reduction_raises_value_error():
    with pytest.raises(ValueError, match="nope is not a valid value for reduction"):
        nn.MSELoss(reduction="nope")(torch.ones(2), torch.ones(2))


def test_mlp_trains_with_cross_entropy_and_adam():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    x = torch.randn(64, 8)
    target = torch.tensor(np.argmax(x.numpy()[:, :3], axis=1))
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    first = loss_fn(model(x), target).item()
    for _ in range(100):
        opt.zero_grad()
        loss = loss_fn(model(x), target)
        loss.backward()
        opt.step()
    assert loss.item() < first / 5
