"""The layers over the NN kernels: Conv, pooling, norms, Dropout, Embedding, the new activations and
losses as modules. The kernels themselves are checked against numpy in the op-table tests; here the
modules' own behaviour: parameters as torch names and shapes them, default initialisation, running
statistics, padding modes, modes, reprs, errors, and that each module computes what its functional
form computes."""

from __future__ import annotations

import math

import numpy as np
import pytest

import rustgrad as torch
import rustgrad.nn.functional as F
from rustgrad import nn
from rustgrad.errors import InvalidArgumentError, RustgradError


def _np(t):
    return t.detach().numpy()


def _conv2d_reference(x, w, b, padding):
    """Direct loops over a zero-padded input: out[n, o, i, j] = Σ x[n, c, i+p, j+q] w[o, c, p, q] + b[o]."""
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    out = np.zeros((n, o, h - kh + 1, wd - kw + 1))
    for p in range(kh):
        for q in range(kw):
            out += np.einsum("nchw,oc->nohw", x[:, :, p:p + out.shape[2], q:q + out.shape[3]], w[:, :, p, q])
    return out + b[None, :, None, None]


def test_conv2d_has_torchs_parameters_and_computes_a_convolution(rng):
    conv = nn.Conv2d(3, 4, kernel_size=3, padding=1)
    assert conv.weight.shape == (4, 3, 3, 3) and conv.bias.shape == (4,)
    assert list(conv.state_dict()) == ["weight", "bias"]
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    expected = _conv2d_reference(x.astype(np.float64), _np(conv.weight).astype(np.float64),
                                 _np(conv.bias).astype(np.float64), 1)
    np.testing.assert_allclose(_np(conv(torch.tensor(x))), expected, rtol=1e-4, atol=1e-5)


def test_conv_default_init_is_kaiming_uniform_with_a_sqrt5_and_a_fan_in_bias():
    conv = nn.Conv2d(8, 16, kernel_size=3)
    fan_in = 8 * 3 * 3
    bound = 1 / math.sqrt(fan_in)  # kaiming-uniform with a=√5 gives gain √(2/6) → bound √3·gain/√fan_in
    weights, bias = _np(conv.weight), _np(conv.bias)
    assert np.abs(weights).max() <= bound + 1e-7 and np.abs(weights).max() > 0.9 * bound
    assert np.abs(bias).max() <= bound + 1e-7
    assert abs(weights.std() - bound / math.sqrt(3)) < 0.1 * bound


def test_conv_padding_modes_pad_before_a_valid_convolution(rng):
    conv = nn.Conv2d(1, 1, kernel_size=3, padding=1, padding_mode="reflect", bias=False)
    x = rng.standard_normal((1, 1, 4, 4)).astype(np.float32)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect").astype(np.float64)
    expected = _conv2d_reference(padded, _np(conv.weight).astype(np.float64), np.zeros(1), 0)
    np.testing.assert_allclose(_np(conv(torch.tensor(x))), expected, rtol=1e-4, atol=1e-5)


def test_conv1d_and_conv_transpose2d_shapes_and_gradients_reach_their_parameters(rng):
    conv1 = nn.Conv1d(2, 3, kernel_size=3, stride=2)
    assert conv1.weight.shape == (3, 2, 3)
    assert conv1(torch.randn(4, 2, 9)).shape == (4, 3, 4)
    up = nn.ConvTranspose2d(3, 2, kernel_size=2, stride=2)
    assert up.weight.shape == (3, 2, 2, 2)
    out = up(torch.randn(1, 3, 4, 4))
    assert out.shape == (1, 2, 8, 8)
    out.sum().backward()
    assert up.weight.grad.shape == (3, 2, 2, 2) and up.bias.grad.shape == (2,)


def test_conv_reprs_are_torchs():
    assert repr(nn.Conv2d(1, 16, 3, padding=1)) == "Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"
    assert repr(nn.Conv1d(2, 4, 5, stride=2, bias=False)) == "Conv1d(2, 4, kernel_size=(5,), stride=(2,), bias=False)"
    assert repr(nn.Conv2d(4, 4, 3, padding="same", groups=2)) == (
        "Conv2d(4, 4, kernel_size=(3, 3), stride=(1, 1), padding=same, groups=2)")


def test_conv_constructor_errors_name_the_problem():
    with pytest.raises(InvalidArgumentError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(RustgradError, match="padding_mode must be one of"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")


def test_pooling_modules_call_their_functional_forms(rng):
    x = torch.tensor(rng.standard_normal((2, 3, 6, 6)).astype(np.float32))
    pooled, indices = nn.MaxPool2d(2, return_indices=True)(x)
    np.testing.assert_array_equal(_np(pooled), _np(F.max_pool2d(x, 2)))
    assert indices.dtype == torch.int64 and indices.shape == (2, 3, 3, 3)
    expected = _np(x).reshape(2, 3, 3, 2, 3, 2).mean(axis=(3, 5))
    np.testing.assert_allclose(_np(nn.AvgPool2d(2)(x)), expected, rtol=1e-6)
    np.testing.assert_allclose(_np(nn.AdaptiveAvgPool2d(1)(x)), _np(x).mean(axis=(2, 3), keepdims=True), rtol=1e-5)
    assert repr(nn.MaxPool2d(2)) == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"


def test_batch_norm_keeps_running_statistics_as_torch_does(rng):
    bn = nn.BatchNorm1d(3)
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    x = rng.standard_normal((8, 3)).astype(np.float32) * 2 + 1
    out = bn(torch.tensor(x))
    mean, var = x.mean(axis=0), x.var(axis=0)
    np.testing.assert_allclose(_np(out), (x - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
    # momentum 0.1 weights the new statistic; the running variance is the unbiased one.
    np.testing.assert_allclose(_np(bn.running_mean), 0.1 * mean, rtol=1e-5)
    np.testing.assert_allclose(_np(bn.running_var), 0.9 + 0.1 * x.var(axis=0, ddof=1), rtol=1e-5)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    np.testing.assert_allclose(_np(bn(torch.tensor(x))),
                               (x - _np(bn.running_mean)) / np.sqrt(_np(bn.running_var) + 1e-5), rtol=1e-4, atol=1e-5)
    assert bn.num_batches_tracked.item() == 1


def test_batch_norm_with_momentum_none_keeps_a_cumulative_average(rng):
    bn = nn.BatchNorm2d(2, momentum=None)
    batches = [rng.standard_normal((4, 2, 3, 3)).astype(np.float32) for _ in range(3)]
    for b in batches:
        bn(torch.tensor(b))
    expected = np.mean([b.mean(axis=(0, 2, 3)) for b in batches], axis=0)
    np.testing.assert_allclose(_np(bn.running_mean), expected, rtol=1e-5, atol=1e-6)


def test_batch_norm_refuses_the_wrong_rank():
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(3)(torch.randn(2, 3, 4))


def test_layer_and_group_norm_normalise_and_have_affine_parameters(rng):
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    ln = nn.LayerNorm(3)
    assert ln.weight.shape == (3,) and ln.bias.shape == (3,)
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(_np(ln(torch.tensor(x))), expected, rtol=1e-4, atol=1e-5)
    gn = nn.GroupNorm(2, 4)
    grouped = x.reshape(2, 2, 6)
    expected = ((grouped - grouped.mean(-1, keepdims=True)) / np.sqrt(grouped.var(-1, keepdims=True) + 1e-5))
    np.testing.assert_allclose(_np(gn(torch.tensor(x))), expected.reshape(2, 4, 3), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(3, 4)


def test_dropout_is_the_identity_in_eval_mode_and_repeats_under_a_seed():
    drop = nn.Dropout(0.5)
    x = torch.ones(1000)
    torch.manual_seed(3)
    first = _np(drop(x))
    torch.manual_seed(3)
    np.testing.assert_array_equal(_np(drop(x)), first)
    assert set(np.unique(first)) <= {0.0, 2.0} and 350 < (first == 0).sum() < 650
    drop.eval()
    np.testing.assert_array_equal(_np(drop(x)), np.ones(1000))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)


def test_embedding_rows_padding_and_from_pretrained():
    emb = nn.Embedding(10, 3, padding_idx=0)
    np.testing.assert_array_equal(_np(emb.weight[0]), np.zeros(3))
    idx = torch.tensor([[0, 2], [2, 5]])
    np.testing.assert_array_equal(_np(emb(idx)), _np(emb.weight)[[[0, 2], [2, 5]]])
    emb(idx).sum().backward()
    grad = _np(emb.weight.grad)
    np.testing.assert_array_equal(grad[0], np.zeros(3))
    np.testing.assert_array_equal(grad[2], np.full(3, 2.0))
    table = torch.arange(6.0).reshape(3, 2)
    frozen = nn.Embedding.from_pretrained(table)
    assert not frozen.weight.requires_grad
    np.testing.assert_array_equal(_np(frozen(torch.tensor([2]))), [[4.0, 5.0]])
    assert repr(emb) == "Embedding(10, 3, padding_idx=0)"


ACTIVATIONS = [
    (nn.GELU(), lambda x: x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))),
    (nn.SiLU(), lambda x: x / (1 + np.exp(-x))),
    (nn.LeakyReLU(0.2), lambda x: np.where(x >= 0, x, 0.2 * x)),
    (nn.ELU(), lambda x: np.where(x > 0, x, np.expm1(x))),
    (nn.SELU(), lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))),
    (nn.Softplus(), lambda x: np.log1p(np.exp(x))),
    (nn.Hardtanh(), lambda x: np.clip(x, -1, 1)),
    (nn.ReLU6(), lambda x: np.clip(x, 0, 6)),
    (nn.LogSigmoid(), lambda x: -np.log1p(np.exp(-x))),
]


@pytest.mark.parametrize(("module", "reference"), ACTIVATIONS, ids=lambda m: type(m).__name__)
def test_activation_modules_match_numpy(module, reference):
    x = np.linspace(-7, 7, 29)
    np.testing.assert_allclose(_np(module(torch.tensor(x))), reference(x), rtol=1e-12, atol=1e-14)


def test_activation_reprs_are_torchs():
    assert repr(nn.LeakyReLU()) == "LeakyReLU(negative_slope=0.01)"
    assert repr(nn.GELU(approximate="tanh")) == "GELU(approximate='tanh')"
    assert repr(nn.Softplus()) == "Softplus(beta=1.0, threshold=20.0)"
    assert repr(nn.Hardtanh()) == "Hardtanh(min_val=-1.0, max_val=1.0)"


def test_loss_modules_match_numpy(rng):
    x = rng.standard_normal((4, 3))
    y = rng.standard_normal((4, 3))
    p = 1 / (1 + np.exp(-x))
    t = (y > 0).astype(np.float64)
    diff = np.abs(x - y)
    q = p[::-1].copy()
    cases = [
        (nn.L1Loss(), x, y, diff.mean()),
        (nn.SmoothL1Loss(beta=0.5), x, y, np.where(diff < 0.5, 0.5 * diff**2 / 0.5, diff - 0.25).mean()),
        (nn.HuberLoss(delta=0.5), x, y, np.where(diff < 0.5, 0.5 * diff**2, 0.5 * (diff - 0.25)).mean()),
        (nn.BCELoss(), p, t, -(t * np.log(p) + (1 - t) * np.log(1 - p)).mean()),
        (nn.BCEWithLogitsLoss(), x, t, -(t * np.log(p) + (1 - t) * np.log(1 - p)).mean()),
        (nn.KLDivLoss(reduction="batchmean"), np.log(p), q, (q * (np.log(q) - np.log(p))).sum() / 4),
    ]
    for module, a, b, expected in cases:
        got = module(torch.tensor(a), torch.tensor(b)).item()
        assert math.isclose(got, expected, rel_tol=1e-10), (module, got, expected)
    cos = nn.CosineSimilarity(dim=1)(torch.tensor(x), torch.tensor(y))
    expected = (x * y).sum(1) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))
    np.testing.assert_allclose(_np(cos), expected, rtol=1e-12)


def test_a_small_cnn_trains(rng):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Dropout(0.1), nn.Linear(4 * 4 * 4, 2))
    x = torch.tensor(rng.standard_normal((32, 1, 8, 8)).astype(np.float32))
    labels = torch.tensor((_np(x)[:, 0, :4].sum(axis=(1, 2)) > 0).astype(np.int64))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(60):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0]
