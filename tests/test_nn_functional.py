"""rustgrad.nn.functional: values against numpy, gradients against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
import rustgrad.nn.functional as F
from rustgrad.autograd import gradcheck


def _t(a, requires_grad=False):
    return rustgrad.tensor(np.asarray(a, dtype=np.float64), dtype=rustgrad.float64, requires_grad=requires_grad)


def _np_log_softmax(x, axis):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _np_cross_entropy(logits, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    lp = _np_log_softmax(logits, 1)
    n, c = lp.shape
    w = np.ones(c) if weight is None else weight
    keep = target != ignore_index
    safe = np.where(keep, target, 0)
    nll = -lp[np.arange(n), safe] * w[safe] * keep
    smooth = -(lp * w).sum(1) * keep
    denom = (w[safe] * keep).sum()
    if reduction == "none":
        return (1 - label_smoothing) * nll + label_smoothing / c * smooth
    if reduction == "sum":
        return (1 - label_smoothing) * nll.sum() + label_smoothing / c * smooth.sum()
    return (1 - label_smoothing) * nll.sum() / denom + label_smoothing / c * smooth.sum() / denom


def test_activations_match_numpy(rng):
    x = rng.standard_normal((3, 4))
    np.testing.assert_allclose(F.relu(_t(x)).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(F.sigmoid(_t(x)).numpy(), 1 / (1 + np.exp(-x)), rtol=1e-12)
    np.testing.assert_allclose(F.tanh(_t(x)).numpy(), np.tanh(x), rtol=1e-12)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_and_log_softmax_values(rng, dim):
    x = rng.standard_normal((3, 4)) * 3
    expected = _np_log_softmax(x, dim)
    np.testing.assert_allclose(F.log_softmax(_t(x), dim).numpy(), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(F.softmax(_t(x), dim=dim).numpy(), np.exp(expected), rtol=1e-12, atol=1e-12)


def test_softmax_is_numerically_stable():
    x = rustgrad.tensor([[1000.0, 1001.0, 1002.0], [-1000.0, 0.0, 1000.0]])
    s = F.softmax(x, 1).numpy()
    ls = F.log_softmax(x, 1).numpy()
    assert np.all(np.isfinite(s)) and np.all(np.isfinite(ls))
    np.testing.assert_allclose(s[0], np.exp(_np_log_softmax(np.array([0.0, 1.0, 2.0]), 0)), rtol=1e-6)
    np.testing.assert_allclose(ls[1], [-2000.0, -1000.0, 0.0], rtol=1e-6)


def test_softmax_implicit_dim_warns():
    with pytest.warns(UserWarning, match="Implicit dimension"):
        out = F.softmax(rustgrad.ones(2, 3))
    np.testing.assert_allclose(out.numpy(), np.full((2, 3), 1 / 3), rtol=1e-6)


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax])
@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_gradcheck(rng, fn, dim):
    x = _t(rng.standard_normal((3, 4)), requires_grad=True)
    assert gradcheck(lambda a: fn(a, dim), (x,))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(rng, reduction):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    sq = (a - b) ** 2
    expected = {"mean": sq.mean(), "sum": sq.sum(), "none": sq}[reduction]
    np.testing.assert_allclose(F.mse_loss(_t(a), _t(b), reduction=reduction).numpy(), expected, rtol=1e-12)
    x, y = _t(a, True), _t(b, True)
    assert gradcheck(lambda p, q: F.mse_loss(p, q, reduction=reduction), (x, y))


def test_mse_loss_bad_reduction():
    with pytest.raises(ValueError, match="reduction"):
        F.mse_loss(rustgrad.ones(2), rustgrad.ones(2), reduction="avg")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_values_for_each_target_kind(rng, reduction):
    logits = rng.standard_normal((4, 5)) * 2
    target = np.array([0, 3, 4, 1])
    expected = _np_cross_entropy(logits, target, reduction=reduction)
    for tgt in (target, target.tolist(), rustgrad.tensor(target.astype(np.float32))):
        got = F.cross_entropy(_t(logits), tgt, reduction=reduction)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_cross_entropy_gradient_is_softmax_minus_one_hot(rng):
    logits = rng.standard_normal((4, 5))
    target = np.array([2, 0, 4, 4])
    x = _t(logits, requires_grad=True)
    F.cross_entropy(x, target).backward()
    one_hot = np.eye(5)[target]
    np.testing.assert_allclose(x.grad.numpy(), (np.exp(_np_log_softmax(logits, 1)) - one_hot) / 4, rtol=1e-10)


def test_cross_entropy_weight_ignore_index_label_smoothing(rng):
    logits = rng.standard_normal((5, 3))
    target = np.array([0, 2, -100, 1, 2])
    weight = np.array([0.5, 2.0, 1.5])
    for kwargs in (dict(), dict(weight=weight), dict(label_smoothing=0.2), dict(weight=weight, label_smoothing=0.1)):
        for reduction in ("mean", "sum", "none"):
            call = dict(kwargs, reduction=reduction)
            if "weight" in call:
                call["weight"] = _t(weight)
            got = F.cross_entropy(_t(logits), target, **call).numpy()
            np.testing.assert_allclose(got, _np_cross_entropy(logits, target, **dict(kwargs, reduction=reduction)),
                                       rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kwargs", [dict(), dict(reduction="none"), dict(label_smoothing=0.3)])
def test_cross_entropy_gradcheck(rng, kwargs):
    x = _t(rng.standard_normal((3, 4)), requires_grad=True)
    target = np.array([3, 0, 1])
    assert gradcheck(lambda a: F.cross_entropy(a, target, **kwargs), (x,))


def test_cross_entropy_unbatched_and_spatial(rng):
    logits = rng.standard_normal(4)
    np.testing.assert_allclose(F.cross_entropy(_t(logits), 2).numpy(), -_np_log_softmax(logits, 0)[2], rtol=1e-12)
    x = rng.standard_normal((2, 3, 5))
    target = rng.integers(0, 3, size=(2, 5))
    lp = _np_log_softmax(x, 1)
    expected = -np.take_along_axis(lp, target[:, None, :], axis=1).mean()
    np.testing.assert_allclose(F.cross_entropy(_t(x), target).numpy(), expected, rtol=1e-12)


def test_cross_entropy_errors():
    logits = rustgrad.randn(2, 3)
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(logits, [0, 3])
    with pytest.raises(ValueError, match="non-integer"):
        F.cross_entropy(logits, rustgrad.tensor([0.5, 1.0]))
    with pytest.raises(ValueError, match="target of shape"):
        F.cross_entropy(logits, [0, 1, 2])
    with pytest.raises(TypeError, match="bool"):
        F.cross_entropy(logits, rustgrad.tensor([True, False]))


def test_importable_names():
    import rustgrad.nn as nn

    assert nn.functional is F and rustgrad.nn is nn
    for name in ("relu", "sigmoid", "tanh", "softmax", "log_softmax", "mse_loss", "cross_entropy"):
        assert callable(getattr(F, name))
