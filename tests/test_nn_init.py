"""nn.init: in-place fills from torch's distributions (bounds, moments, gains), seeded by the
generator, never recorded on the tape; misuse raises torch's errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import rustgrad as torch
from rustgrad import nn
from rustgrad.errors import InvalidArgumentError, ShapeError


def _leaf(*shape, dtype=torch.float32):
    return torch.zeros(*shape, dtype=dtype, requires_grad=True)


def _np(t):
    return t.detach().numpy().astype(np.float64)


@pytest.mark.parametrize(
    "nonlinearity, param, gain",
    [
        ("linear", None, 1), ("conv2d", None, 1), ("sigmoid", None, 1), ("tanh", None, 5.0 / 3),
        ("relu", None, math.sqrt(2.0)), ("leaky_relu", None, math.sqrt(2.0 / (1 + 0.01**2))),
        ("leaky_relu", 0.2, math.sqrt(2.0 / 1.04)), ("leaky_relu", 0, math.sqrt(2.0)), ("selu", None, 0.75),
    ],
)
def test_calculate_gain_matches_torch(nonlinearity, param, gain):
    assert nn.init.calculate_gain(nonlinearity, param) == pytest.approx(gain)


def test_calculate_gain_refuses_unknown_names_and_bad_slopes():
    with pytest.raises(InvalidArgumentError, match="Unsupported nonlinearity gelu"):
        nn.init.calculate_gain("gelu")
    with pytest.raises(InvalidArgumentError, match="negative_slope True not a valid number"):
        nn.init.calculate_gain("leaky_relu", True)


def test_fan_in_and_fan_out_count_the_receptive_field():
    assert nn.init._calculate_fan_in_and_fan_out(torch.zeros(3, 5)) == (5, 3)
    assert nn.init._calculate_fan_in_and_fan_out(torch.zeros(16, 3, 3, 3)) == (27, 144)
    with pytest.raises(ShapeError, match="Fan in and fan out can not be computed for tensor with fewer than 2 "
                       "dimensions"):
        nn.init._calculate_fan_in_and_fan_out(torch.zeros(4))


def test_uniform_and_normal_fill_in_place_without_recording():
    t = _leaf(200, 100)
    assert nn.init.uniform_(t, -2.0, 3.0) is t
    values = _np(t)
    assert values.min() >= -2.0 and values.max() < 3.0
    assert abs(values.mean() - 0.5) < 0.05 and abs(values.std() - 5 / math.sqrt(12)) < 0.03
    assert t.is_leaf and t.grad_fn is None and t.requires_grad
    nn.init.normal_(t, 1.0, 0.5)
    values = _np(t)
    assert abs(values.mean() - 1.0) < 0.01 and abs(values.std() - 0.5) < 0.01


def test_constant_zeros_ones_eye():
    t = _leaf(3, 4)
    assert (_np(nn.init.constant_(t, 2.5)) == 2.5).all()
    assert (_np(nn.init.ones_(t)) == 1).all()
    assert (_np(nn.init.zeros_(t)) == 0).all()
    np.testing.assert_array_equal(_np(nn.init.eye_(t)), np.eye(3, 4))
    with pytest.raises(ShapeError, match="Only tensors with 2 dimensions are supported"):
        nn.init.eye_(torch.zeros(2, 2, 2))


def test_xavier_bounds_and_moments():
    t = _leaf(300, 200)
    std = math.sqrt(2.0 / 500)
    values = _np(nn.init.xavier_uniform_(t, gain=2.0))
    assert np.abs(values).max() <= 2.0 * math.sqrt(3) * std
    assert abs(values.std() - 2.0 * std) < 0.02 * 2.0 * std
    values = _np(nn.init.xavier_normal_(t))
    assert abs(values.std() - std) < 0.02 * std and abs(values.mean()) < 0.05 * std


@pytest.mark.parametrize("mode, fan", [("fan_in", 200), ("fan_out", 300)])
def test_kaiming_bounds_and_moments(mode, fan):
    t = _leaf(300, 200)
    std = math.sqrt(2.0) / math.sqrt(fan)
    values = _np(nn.init.kaiming_uniform_(t, mode=mode, nonlinearity="relu"))
    assert np.abs(values).max() <= math.sqrt(3) * std and np.abs(values).max() > 0.99 * math.sqrt(3) * std
    values = _np(nn.init.kaiming_normal_(t, mode=mode, nonlinearity="relu"))
    assert abs(values.std() - std) < 0.02 * std


def test_kaiming_uniform_with_a_sqrt5_is_linears_default():
    t = _leaf(64, 100)
    values = _np(nn.init.kaiming_uniform_(t, a=math.sqrt(5)))
    assert np.abs(values).max() <= 1 / math.sqrt(100)


def test_kaiming_refuses_bad_modes_and_warns_on_empty_tensors():
    with pytest.raises(InvalidArgumentError, match=r"Mode fan_avg not supported, please use one of \['fan_in', "
                       r"'fan_out'\]"):
        nn.init.kaiming_uniform_(torch.zeros(2, 2), mode="fan_avg")
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        nn.init.kaiming_normal_(torch.zeros(0, 3))


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 2, 3)])
def test_orthogonal_gives_orthonormal_rows_or_columns(shape):
    t = _leaf(*shape, dtype=torch.float64)
    flat = _np(nn.init.orthogonal_(t, gain=2.0)).reshape(shape[0], -1)
    rows, cols = flat.shape
    gram = flat.T @ flat if rows >= cols else flat @ flat.T
    np.testing.assert_allclose(gram, 4.0 * np.eye(min(rows, cols)), atol=1e-10)
    with pytest.raises(ShapeError, match="Only tensors with 2 or more dimensions are supported"):
        nn.init.orthogonal_(torch.zeros(3))


def test_init_draws_from_the_seeded_global_generator_and_from_generator():
    torch.manual_seed(7)
    a = _np(nn.init.normal_(torch.zeros(5)))
    torch.manual_seed(7)
    b = _np(nn.init.normal_(torch.zeros(5)))
    np.testing.assert_array_equal(a, b)
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    c = _np(nn.init.xavier_uniform_(torch.zeros(4, 4), generator=g1))
    d = _np(nn.init.xavier_uniform_(torch.zeros(4, 4), generator=g2))
    np.testing.assert_array_equal(c, d)
    e = _np(nn.init.orthogonal_(torch.zeros(4, 4), generator=torch.Generator().manual_seed(3)))
    f = _np(nn.init.orthogonal_(torch.zeros(4, 4), generator=torch.Generator().manual_seed(3)))
    np.testing.assert_array_equal(e, f)


def test_seeded_linear_layers_are_reproducible():
    torch.manual_seed(0)
    first = nn.Linear(4, 3).state_dict()
    torch.manual_seed(0)
    second = nn.Linear(4, 3).state_dict()
    assert all(first[k].numpy().tobytes() == second[k].numpy().tobytes() for k in first)
