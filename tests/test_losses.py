"""Losses on both fronts: torch's nn.functional losses and TF1's tf.nn / tf.losses ones, against
numpy formulas written from the two libraries' documentation; errors by type and message."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from references_losses import class_loss

import rustgrad
import rustgrad.compat.v1 as tf
import rustgrad.nn.functional as F
from rustgrad.autograd import gradcheck
from rustgrad.errors import DTypeError, RustgradError

REDUCTIONS = ["none", "mean", "sum"]


def _t(a, requires_grad=False, dtype=rustgrad.float64):
    return rustgrad.tensor(np.asarray(a), dtype=dtype, requires_grad=requires_grad)


def _reduce(loss, reduction):
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


def _log_softmax(x, axis):
    shifted = x - x.max(axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis, keepdims=True))


@pytest.fixture
def rng():
    return np.random.default_rng(14)


# ---------------------------------------------------------------- cross_entropy and nll_loss


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("with_weight", [False, True])
def test_cross_entropy_matches_torch_formula_for_every_reduction_and_weight(rng, reduction, with_weight):
    x = rng.standard_normal((6, 4))
    target = np.array([0, 3, 1, 1, 2, 3])
    weight = np.array([0.2, 1.0, 3.0, 0.5])
    w = weight if with_weight else np.ones(4)
    lp = _log_softmax(x, 1)
    per = -lp[np.arange(6), target] * w[target]
    expected = {"none": per, "sum": per.sum(), "mean": per.sum() / w[target].sum()}[reduction]
    got = F.cross_entropy(_t(x), _t(target, dtype=rustgrad.int64), weight=_t(weight) if with_weight else None,
                          reduction=reduction)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_cross_entropy_label_smoothing_follows_torch_docs_with_and_without_weights(rng):
    # torch docs: the target becomes (1 - ε) onehot + ε / C; with weights, each class term is
    # weighted, and the mean divides by the summed weights of the targets.
    x = rng.standard_normal((5, 3))
    target = np.array([0, 2, 1, 1, 2])
    eps = 0.3
    for weight in (None, np.array([0.5, 2.0, 1.5])):
        w = np.ones(3) if weight is None else weight
        q = (1 - eps) * np.eye(3)[target] + eps / 3
        per = -(q * w * _log_softmax(x, 1)).sum(1)
        for reduction, expected in (("none", per), ("sum", per.sum()), ("mean", per.sum() / w[target].sum())):
            got = F.cross_entropy(_t(x), target, weight=None if weight is None else _t(weight),
                                  reduction=reduction, label_smoothing=eps)
            np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_cross_entropy_ignore_index_drops_targets_and_an_all_ignored_mean_is_nan(rng):
    x = _t(rng.standard_normal((3, 4)))
    target = _t([1, -100, 2], dtype=rustgrad.int64)
    lp = _log_softmax(x.numpy(), 1)
    np.testing.assert_allclose(F.cross_entropy(x, target).item(), -(lp[0, 1] + lp[2, 2]) / 2, rtol=1e-12)
    np.testing.assert_allclose(F.cross_entropy(x, target, reduction="none").numpy(),
                               [-lp[0, 1], 0.0, -lp[2, 2]], rtol=1e-12)
    none = _t([5, 5, 5], dtype=rustgrad.int64)
    assert np.isnan(F.cross_entropy(x, none, ignore_index=5).item())
    assert F.cross_entropy(x, none, ignore_index=5, reduction="sum").item() == 0.0
    assert np.isnan(F.nll_loss(x, none, ignore_index=5).item())


def test_cross_entropy_of_spatial_inputs_matches_numpy_and_its_gradient(rng):
    x = rng.standard_normal((2, 3, 4, 2))
    target = rng.integers(0, 3, size=(2, 4, 2))
    weight = np.array([1.0, 0.5, 2.0])
    for kwargs in (dict(), dict(weight=weight, label_smoothing=0.2, reduction="none")):
        expected = class_loss(x, target, kwargs.get("weight", np.zeros(0)), -100, kwargs.get("reduction", "mean"),
                              kwargs.get("label_smoothing", 0.0))
        call = dict(kwargs)
        if "weight" in call:
            call["weight"] = _t(weight)
        np.testing.assert_allclose(F.cross_entropy(_t(x), target, **call).numpy(), expected, rtol=1e-12)
    xt = _t(x, requires_grad=True)
    assert gradcheck(lambda a: F.cross_entropy(a, _t(target, dtype=rustgrad.int64), label_smoothing=0.1), (xt,))


def test_cross_entropy_gradient_is_softmax_minus_one_hot_scaled_by_weights(rng):
    x = rng.standard_normal((4, 5))
    target = np.array([2, 0, 4, 4])
    weight = np.array([1.0, 2.0, 0.5, 1.5, 3.0])
    xt = _t(x, requires_grad=True)
    F.cross_entropy(xt, target, weight=_t(weight)).backward()
    p = np.exp(_log_softmax(x, 1))
    expected = weight[target][:, None] * (p - np.eye(5)[target]) / weight[target].sum()
    np.testing.assert_allclose(xt.grad.numpy(), expected, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_gradient_of_the_class_weights_matches_finite_differences(rng, reduction):
    x = _t(rng.standard_normal((4, 3)), requires_grad=True)
    w = _t(rng.uniform(0.5, 2.0, 3), requires_grad=True)
    target = _t([0, 2, 2, -100], dtype=rustgrad.int64)
    assert gradcheck(lambda a, b: F.cross_entropy(a, target, weight=b, reduction=reduction, label_smoothing=0.2),
                     (x, w))
    assert gradcheck(lambda a, b: F.nll_loss(a, target, weight=b, reduction=reduction), (x, w))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_the_class_weight_gradient_of_a_strided_class_dim_matches_finite_differences(rng, reduction):
    # (N, C, H, W) logits: each position's row strided, its log-sum-exp one row of its block.
    x = _t(rng.standard_normal((2, 3, 2, 3)) * 2, requires_grad=True)
    w = _t(rng.uniform(0.5, 2.0, 3), requires_grad=True)
    target = _t([[[0, 2, 1], [2, -100, 1]], [[1, 1, 0], [2, 0, -100]]], dtype=rustgrad.int64)
    assert gradcheck(lambda a, b: F.cross_entropy(a, target, weight=b, reduction=reduction, label_smoothing=0.2),
                     (x, w))
    assert gradcheck(lambda a, b: F.nll_loss(a, target, weight=b, reduction=reduction), (x, w))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_with_probability_targets_matches_torch_formula(rng, reduction):
    x = rng.standard_normal((4, 3))
    q = rng.dirichlet(np.ones(3), size=4)
    weight = np.array([0.5, 1.0, 2.0])
    eps = 0.1
    q_smooth = q * (1 - eps) + eps / 3
    per = -(q_smooth * weight * _log_softmax(x, 1)).sum(1)
    expected = {"none": per, "sum": per.sum(), "mean": per.sum() / 4}[reduction]  # mean over N, not weights
    xt = _t(x, requires_grad=True)
    got = F.cross_entropy(xt, _t(q), weight=_t(weight), reduction=reduction, label_smoothing=eps)
    np.testing.assert_allclose(got.detach().numpy(), expected, rtol=1e-12)
    assert gradcheck(lambda a: F.cross_entropy(a, _t(q), reduction=reduction), (xt,))


def test_nll_loss_matches_numpy_with_weights_and_ignore_index(rng):
    lp = _log_softmax(rng.standard_normal((5, 3)), 1)
    target = np.array([0, 2, 1, -1, 2])
    weight = np.array([2.0, 1.0, 0.5])
    keep = target != -1
    picked = -lp[np.arange(5), np.where(keep, target, 0)] * weight[np.where(keep, target, 0)] * keep
    got = F.nll_loss(_t(lp), _t(target, dtype=rustgrad.int32), weight=_t(weight), ignore_index=-1)
    np.testing.assert_allclose(got.item(), picked.sum() / weight[target[keep]].sum(), rtol=1e-12)
    xt = _t(lp, requires_grad=True)
    F.nll_loss(xt, target, ignore_index=-1, reduction="sum").backward()
    expected = np.zeros((5, 3))
    expected[np.arange(5)[keep], target[keep]] = -1.0
    np.testing.assert_array_equal(xt.grad.numpy(), expected)


def test_class_loss_misuse_raises_with_the_op_the_value_and_the_classes():
    x = rustgrad.randn(2, 3)
    with pytest.raises(IndexError, match=r"cross_entropy: target 3 is out of bounds for 3 classes") as info:
        F.cross_entropy(x, _t([0, 3], dtype=rustgrad.int64))
    assert isinstance(info.value, RustgradError)
    with pytest.raises(IndexError, match=r"nll_loss: target -2 is out of bounds for 3 classes"):
        F.nll_loss(x, _t([-2, 0], dtype=rustgrad.int64))
    with pytest.raises(DTypeError, match=r"cross_entropy: expected target of class indices as int64.*uint8"):
        F.cross_entropy(x, rustgrad.tensor([0, 1], dtype=rustgrad.uint8))
    with pytest.raises(TypeError, match="bool"):
        F.cross_entropy(x, rustgrad.tensor([True, False]))
    with pytest.raises(ValueError, match=r"expected target of shape \[2\] for input of shape \[2, 3\], got \[3\]"):
        F.cross_entropy(x, _t([0, 1, 2], dtype=rustgrad.int64))
    with pytest.raises(ValueError, match=r"weight must hold one value per class, shape \[3\], got \[2\]"):
        F.cross_entropy(x, _t([0, 1], dtype=rustgrad.int64), weight=rustgrad.ones(2))
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.cross_entropy(x, _t([0, 1], dtype=rustgrad.int64), reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(x, _t([0, 1], dtype=rustgrad.int64), label_smoothing=1.5)


def test_a_failed_cross_entropy_records_nothing():
    x = rustgrad.randn(2, 3, requires_grad=True)
    with pytest.raises(IndexError):
        F.cross_entropy(x, _t([0, 7], dtype=rustgrad.int64))
    assert x.grad is None


def test_softmax_and_log_softmax_are_table_ops_on_every_torch_front(rng):
    x = rng.standard_normal((3, 4)) * 50
    expected = _log_softmax(x, 1)
    for fn in (rustgrad.log_softmax, F.log_softmax, lambda t, d: t.log_softmax(d)):
        np.testing.assert_allclose(fn(_t(x), 1).numpy(), expected, rtol=1e-12, atol=1e-12)
    for fn in (rustgrad.softmax, F.softmax, lambda t, d: t.softmax(d)):
        np.testing.assert_allclose(fn(_t(x), 1).numpy(), np.exp(expected), rtol=1e-12, atol=1e-300)
    big = _t([[1e30, 1e30]], dtype=rustgrad.float32)
    np.testing.assert_allclose(F.log_softmax(big, 1).numpy(), [[-np.log(2), -np.log(2)]], rtol=1e-6)


# ---------------------------------------------------------------- elementwise losses


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_elementwise_losses_match_numpy_and_finite_differences(rng, reduction):
    a = rng.standard_normal((3, 4)) * 2
    b = rng.standard_normal((3, 4))
    d = np.abs(a - b)
    cases = {
        "l1_loss": (F.l1_loss, {}, d),
        "mse_loss": (F.mse_loss, {}, d ** 2),
        "smooth_l1_loss": (F.smooth_l1_loss, {"beta": 0.7}, np.where(d < 0.7, 0.5 * d ** 2 / 0.7, d - 0.35)),
        "huber_loss": (F.huber_loss, {"delta": 0.7}, np.where(d < 0.7, 0.5 * d ** 2, 0.7 * (d - 0.35))),
    }
    for name, (fn, kwargs, per) in cases.items():
        got = fn(_t(a), _t(b), reduction=reduction, **kwargs)
        np.testing.assert_allclose(got.numpy(), _reduce(per, reduction), rtol=1e-12, err_msg=name)
        x, y = _t(a, requires_grad=True), _t(b, requires_grad=True)
        assert gradcheck(lambda p, q, fn=fn, kwargs=kwargs: fn(p, q, reduction=reduction, **kwargs), (x, y)), name


def test_smooth_l1_loss_with_beta_zero_is_l1_and_negative_beta_raises(rng):
    a, b = _t(rng.standard_normal(5)), _t(rng.standard_normal(5))
    np.testing.assert_allclose(F.smooth_l1_loss(a, b, beta=0.0).item(), F.l1_loss(a, b).item(), rtol=1e-15)
    with pytest.raises(ValueError, match="negative values for beta"):
        F.smooth_l1_loss(a, b, beta=-1.0)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_matches_numpy_with_weights(rng, reduction):
    p = rng.uniform(0.05, 0.95, (3, 4))
    y = rng.uniform(0, 1, (3, 4))
    w = rng.uniform(0.5, 2, (4,))
    per = -w * (y * np.log(p) + (1 - y) * np.log(1 - p))
    got = F.binary_cross_entropy(_t(p), _t(y), weight=_t(w), reduction=reduction)
    np.testing.assert_allclose(got.numpy(), _reduce(per, reduction), rtol=1e-12)
    x = _t(p, requires_grad=True)
    assert gradcheck(lambda a: F.binary_cross_entropy(a, _t(y), reduction=reduction), (x,))


def test_binary_cross_entropy_clamps_the_log_at_minus_100():
    p = _t([0.0, 1.0, 0.0, 1.0])
    y = _t([1.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(F.binary_cross_entropy(p, y, reduction="none").numpy(), [100.0, 100.0, 0.0, 0.0])
    x = _t([0.0, 1.0], requires_grad=True)
    F.binary_cross_entropy(x, _t([1.0, 0.0]), reduction="sum").backward()
    assert np.all(np.isfinite(x.grad.numpy()))
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.binary_cross_entropy(_t([1.5]), _t([1.0]))
    with pytest.raises(ValueError, match="different to the input size"):
        F.binary_cross_entropy(_t([0.5, 0.5]), _t([1.0]))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits_is_stable_and_broadcasts_pos_weight(rng, reduction):
    x = rng.standard_normal((4, 3)) * 3
    x[0, 0], x[1, 1] = 800.0, -800.0  # the stable form: no overflow
    y = rng.uniform(0, 1, (4, 3))
    pos = np.array([1.0, 2.0, 0.5])
    w = rng.uniform(0.5, 2, (4, 1))
    log_sig = -np.logaddexp(0, -x)
    log_one_minus = -np.logaddexp(0, x)
    per = -w * (pos * y * log_sig + (1 - y) * log_one_minus)
    got = F.binary_cross_entropy_with_logits(_t(x), _t(y), weight=_t(w), reduction=reduction, pos_weight=_t(pos))
    np.testing.assert_allclose(got.numpy(), _reduce(per, reduction), rtol=1e-12)
    plain = F.binary_cross_entropy_with_logits(_t(x), _t(y), reduction=reduction)
    np.testing.assert_allclose(plain.numpy(), _reduce(-(y * log_sig + (1 - y) * log_one_minus), reduction),
                               rtol=1e-12)
    xt = _t(rng.standard_normal((4, 3)), requires_grad=True)
    assert gradcheck(lambda a: F.binary_cross_entropy_with_logits(a, _t(y), pos_weight=_t(pos),
                                                                  reduction=reduction), (xt,))


def test_kl_div_reductions_and_log_target(rng):
    logq = _log_softmax(rng.standard_normal((4, 5)), 1)
    p = np.exp(_log_softmax(rng.standard_normal((4, 5)), 1))
    p[0, 0] = 0.0  # 0 log 0 = 0
    per = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1)) - logq), 0.0)
    np.testing.assert_allclose(F.kl_div(_t(logq), _t(p), reduction="batchmean").item(), per.sum() / 4, rtol=1e-12)
    np.testing.assert_allclose(F.kl_div(_t(logq), _t(p), reduction="sum").item(), per.sum(), rtol=1e-12)
    np.testing.assert_allclose(F.kl_div(_t(logq), _t(p), reduction="none").numpy(), per, rtol=1e-12, atol=1e-15)
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        mean = F.kl_div(_t(logq), _t(p))
    np.testing.assert_allclose(mean.item(), per.mean(), rtol=1e-12)
    logp = np.log(np.where(p > 0, p, 1e-3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = F.kl_div(_t(logq), _t(logp), reduction="sum", log_target=True)
    np.testing.assert_allclose(got.item(), (np.exp(logp) * (logp - logq)).sum(), rtol=1e-12)
    x = _t(logq, requires_grad=True)
    assert gradcheck(lambda a: F.kl_div(a, _t(p), reduction="batchmean"), (x,))
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.kl_div(_t(logq), _t(p), reduction="avg")


def test_cosine_similarity_matches_numpy_at_top_level_and_in_functional(rng):
    a = rng.standard_normal((3, 5))
    b = rng.standard_normal((1, 5))  # broadcasts
    expected = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    for fn in (F.cosine_similarity, rustgrad.cosine_similarity):
        np.testing.assert_allclose(fn(_t(a), _t(b)).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(F.cosine_similarity(_t(a.T), _t(b.T), dim=0).numpy(), expected, rtol=1e-12)
    assert F.cosine_similarity(_t(np.zeros((1, 3))), _t(np.ones((1, 3)))).item() == 0.0  # eps: no 0/0
    x, y = _t(a, requires_grad=True), _t(b, requires_grad=True)
    assert gradcheck(lambda p, q: F.cosine_similarity(p, q), (x, y))


# ---------------------------------------------------------------- TF1


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def test_tf_softmax_cross_entropy_with_logits_v1_and_v2(rng):
    logits = rng.standard_normal((4, 3))
    labels = rng.dirichlet(np.ones(3), size=4)
    expected = -(labels * _log_softmax(logits, 1)).sum(1)
    with tf.Graph().as_default():
        x, y = tf.constant(logits), tf.constant(labels)
        v1 = tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=x)
        v2 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=x)
        g1 = tf.gradients(tf.reduce_sum(v1), [x, y])
        g2 = tf.gradients(tf.reduce_sum(v2), [x, y])
        values = _run([v1, v2, g1[0], g2[0], g2[1]])
        assert g1[1] is None  # v1 passes no gradient to the labels
    np.testing.assert_allclose(values[0], expected, rtol=1e-12)
    np.testing.assert_allclose(values[1], expected, rtol=1e-12)
    softmax_minus_labels = np.exp(_log_softmax(logits, 1)) * labels.sum(1, keepdims=True) - labels
    np.testing.assert_allclose(values[2], softmax_minus_labels, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(values[3], softmax_minus_labels, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(values[4], -_log_softmax(logits, 1), rtol=1e-12)


def test_tf_sparse_softmax_cross_entropy_with_logits_of_int_labels(rng):
    logits = rng.standard_normal((2, 3, 4))
    labels = rng.integers(0, 4, size=(2, 3))
    expected = -np.take_along_axis(_log_softmax(logits, -1), labels[..., None], -1)[..., 0]
    with tf.Graph().as_default():
        x = tf.constant(logits)
        for dtype in (tf.int32, tf.int64):
            loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant(labels, dtype=dtype), logits=x)
            (grad,) = tf.gradients(tf.reduce_sum(loss), [x])
            value, g = _run([loss, grad])
            np.testing.assert_allclose(value, expected, rtol=1e-12)
            np.testing.assert_allclose(g, np.exp(_log_softmax(logits, -1)) - np.eye(4)[labels], rtol=1e-10,
                                       atol=1e-14)
        bad = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([[0, 4, 1], [0, 0, 0]]), logits=x)
        with pytest.raises(IndexError, match="target 4 is out of bounds for 4 classes"):
            _run(bad)
    with pytest.raises(TypeError, match="labels must be int32 or int64"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([0.0]), logits=tf.constant([[1.0, 2.0]]))


def test_tf_sigmoid_cross_entropy_with_logits_and_l2_loss(rng):
    x = rng.standard_normal((3, 4)) * 4
    x[0, 0] = -900.0
    z = rng.uniform(0, 1, (3, 4))
    with tf.Graph().as_default():
        loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant(z), logits=tf.constant(x))
        l2 = tf.nn.l2_loss(tf.constant(x))
        value, half = _run([loss, l2])
    np.testing.assert_allclose(value, np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x))), rtol=1e-12)
    np.testing.assert_allclose(half, (x ** 2).sum() / 2, rtol=1e-12)


@pytest.mark.parametrize("name", ["softmax_cross_entropy_with_logits", "sparse_softmax_cross_entropy_with_logits",
                                  "sigmoid_cross_entropy_with_logits"])
def test_tf_losses_refuse_positional_arguments(name):
    with tf.Graph().as_default(), pytest.raises(ValueError, match=rf"Only call `{name}` with named arguments"):
        getattr(tf.nn, name)(tf.constant([[1.0]]), tf.constant([[1.0]]))


def test_tf_losses_module_applies_weights_and_reduction(rng):
    logits = rng.standard_normal((4, 3))
    labels = rng.integers(0, 3, size=4)
    onehot = np.eye(3)[labels]
    weights = np.array([1.0, 0.0, 2.0, 1.0])
    ce = -(onehot * _log_softmax(logits, 1)).sum(1)
    eps = 0.3
    smooth = -((onehot * (1 - eps) + eps / 3) * _log_softmax(logits, 1)).sum(1)
    pred = rng.uniform(0.1, 0.9, (4, 3))
    target = rng.uniform(0, 1, (4, 3))
    err = np.abs(pred - target)
    huber = np.where(err <= 0.2, 0.5 * err ** 2, 0.2 * (err - 0.1))
    log_loss = -target * np.log(pred + 1e-7) - (1 - target) * np.log(1 - pred + 1e-7)
    sig = np.maximum(logits, 0) - logits * onehot + np.log1p(np.exp(-np.abs(logits)))
    with tf.Graph().as_default():
        x = tf.constant(logits)
        got = _run([
            tf.losses.sparse_softmax_cross_entropy(tf.constant(labels), x, weights=weights),
            tf.losses.softmax_cross_entropy(tf.constant(onehot), x, label_smoothing=eps),
            tf.losses.softmax_cross_entropy(tf.constant(onehot), x, reduction=tf.losses.Reduction.NONE),
            tf.losses.sigmoid_cross_entropy(tf.constant(onehot), x, reduction=tf.losses.Reduction.SUM),
            tf.losses.huber_loss(tf.constant(target), tf.constant(pred), delta=0.2),
            tf.losses.log_loss(tf.constant(target), tf.constant(pred)),
        ])
    np.testing.assert_allclose(got[0], (ce * weights).sum() / 3, rtol=1e-12)  # nonzero weights: 3
    np.testing.assert_allclose(got[1], smooth.mean(), rtol=1e-12)
    np.testing.assert_allclose(got[2], ce, rtol=1e-12)
    np.testing.assert_allclose(got[3], sig.sum(), rtol=1e-12)
    np.testing.assert_allclose(got[4], huber.mean(), rtol=1e-12)
    np.testing.assert_allclose(got[5], log_loss.mean(), rtol=1e-12)


def test_static_cross_entropy_runs_the_same_op_with_unknown_batch(rng):
    logits = rng.standard_normal((5, 3))
    target = np.array([0, 2, 1, 1, -100])
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [None, 3])
        t = tf.placeholder(tf.int64, [None])
        loss = rustgrad.static.cross_entropy(x, t, tf.constant(np.zeros(0)))
        (grad,) = tf.gradients(loss, [x])
        value, g = _run([loss, grad], {x: logits, t: target})
    np.testing.assert_allclose(value, class_loss(logits, target, np.zeros(0)), rtol=1e-12)
    keep = target != -100
    expected = (np.exp(_log_softmax(logits, 1)) - np.eye(3)[np.where(keep, target, 0)]) * keep[:, None] / keep.sum()
    np.testing.assert_allclose(g, expected, rtol=1e-10, atol=1e-14)


def _check_softmaxes(x, g, dim, dtype, tol):
    """log_softmax and softmax of x along dim, and their gradients given g, against numpy; returns
    numpy's log-softmax."""
    log_y = _log_softmax(x, dim)
    for fn, want, want_grad in (
        (F.log_softmax, log_y, g - np.exp(log_y) * g.sum(dim, keepdims=True)),
        (F.softmax, np.exp(log_y), np.exp(log_y) * (g - (g * np.exp(log_y)).sum(dim, keepdims=True))),
    ):
        leaf = _t(x, requires_grad=True, dtype=dtype)
        y = fn(leaf, dim)
        np.testing.assert_allclose(y.detach().numpy(), want, **tol)
        y.backward(_t(g, dtype=dtype))
        np.testing.assert_allclose(leaf.grad.numpy(), want_grad, **tol)
    return log_y


@pytest.mark.parametrize("dtype", [rustgrad.float32, rustgrad.float64])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_softmax_and_log_softmax_along_every_dim_match_numpy_with_their_gradients(rng, dtype, dim):
    # Along the last dim the rows are contiguous; along the others many short rows lie side by side
    # (the class dim strided), a path of its own, forward and backward.
    x = rng.standard_normal((5, 7, 9)) * 4
    g = rng.standard_normal((5, 7, 9))
    tol = {"rtol": 2e-5, "atol": 1e-6} if dtype == rustgrad.float32 else {"rtol": 1e-12, "atol": 1e-14}
    _check_softmaxes(x, g, dim, dtype, tol)


@pytest.mark.parametrize("dtype", [rustgrad.float32, rustgrad.float64])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_of_spatial_inputs_with_weights_smoothing_and_ignored_positions(rng, dtype, reduction):
    # (N, C, H, W) logits: the class dim strided, the positions of a block side by side.
    x = rng.standard_normal((3, 5, 6, 7)) * 3
    target = rng.integers(0, 5, size=(3, 6, 7))
    target[0, 0, :3] = -100
    weight = rng.uniform(0.5, 2.0, 5)
    eps = 0.1
    tol = {"rtol": 2e-5, "atol": 1e-6} if dtype == rustgrad.float32 else {"rtol": 1e-10, "atol": 1e-14}
    xt = _t(x, requires_grad=True, dtype=dtype)
    out = F.cross_entropy(xt, _t(target, dtype=rustgrad.int64), weight=_t(weight, dtype=dtype),
                          label_smoothing=eps, reduction=reduction)
    np.testing.assert_allclose(out.detach().numpy(), class_loss(x, target, weight, -100, reduction, eps), **tol)
    out.sum().backward()
    keep = target != -100
    safe = np.where(keep, target, 0)
    p = np.exp(_log_softmax(x, 1))
    onehot = np.moveaxis(np.eye(5)[safe], -1, 1)
    hot = ((1 - eps) * weight[safe] * keep)[:, None]
    grad = hot * (p - onehot) + (eps / 5) * (weight.sum() * p - weight[None, :, None, None]) * keep[:, None]
    if reduction == "mean":
        grad /= (weight[safe] * keep).sum()
    np.testing.assert_allclose(xt.grad.numpy(), grad, **tol)
    assert not xt.grad.numpy()[0, :, 0, :3].any()


@pytest.mark.parametrize("dtype", [rustgrad.float32, rustgrad.float64])
@pytest.mark.parametrize("classes", [5, 20, 70])
def test_many_contiguous_rows_match_numpy_across_the_kernels_tasks(rng, dtype, classes):
    # More rows than one task holds, and enough elements for the tasks to run in parallel: short
    # rows (5 and 20 classes, two tiles of the transposes) are transposed a task at a time and run
    # side by side, longer ones (70) run a task's rows one at a time.
    n = {5: 10000, 20: 3000, 70: 600}[classes]
    x = rng.standard_normal((n, classes)) * 3
    g = rng.standard_normal((n, classes))
    target = rng.integers(0, classes, n)
    target[::7] = -100
    weight = rng.uniform(0.5, 2.0, classes)
    tol = {"rtol": 2e-5, "atol": 1e-6} if dtype == rustgrad.float32 else {"rtol": 1e-10, "atol": 1e-14}
    log_y = _check_softmaxes(x, g, 1, dtype, tol)
    leaf = _t(x, requires_grad=True, dtype=dtype)
    loss = F.cross_entropy(leaf, _t(target, dtype=rustgrad.int64), weight=_t(weight, dtype=dtype),
                           label_smoothing=0.1, reduction="sum")
    np.testing.assert_allclose(loss.item(), class_loss(x, target, weight, -100, "sum", 0.1), **tol)
    loss.backward()
    keep = target != -100
    safe = np.where(keep, target, 0)
    p = np.exp(log_y)
    hot = ((1 - 0.1) * weight[safe] * keep)[:, None]
    grad = hot * (p - np.eye(classes)[safe]) + (0.1 / classes) * (weight.sum() * p - weight) * keep[:, None]
    np.testing.assert_allclose(leaf.grad.numpy(), grad, **tol)


@pytest.mark.parametrize("dtype", [rustgrad.float32, rustgrad.float64])
@pytest.mark.parametrize("inner", [2, 7, 63, 64])
def test_narrow_strided_blocks_match_numpy_across_the_kernels_tasks(rng, dtype, inner):
    # A class dim strided by fewer than 64 positions: a task's (classes, inner) blocks are gathered
    # class-major and all their rows run side by side (64 runs block by block), in parallel tasks.
    n = 48000 // (3 * inner)
    x = rng.standard_normal((n, 3, inner)) * 3
    g = rng.standard_normal(x.shape)
    target = rng.integers(0, 3, (n, inner))
    target[::5, ::3] = -100
    weight = rng.uniform(0.5, 2.0, 3)
    tol = {"rtol": 2e-5, "atol": 1e-6} if dtype == rustgrad.float32 else {"rtol": 1e-10, "atol": 1e-14}
    log_y = _check_softmaxes(x, g, 1, dtype, tol)
    leaf, w = _t(x, requires_grad=True, dtype=dtype), _t(weight, requires_grad=True, dtype=dtype)
    eps = 0.1
    per_position = F.cross_entropy(leaf, _t(target, dtype=rustgrad.int64), weight=w, label_smoothing=eps,
                                   reduction="none")
    np.testing.assert_allclose(per_position.detach().numpy(), class_loss(x, target, weight, -100, "none", eps),
                               **tol)
    factor = rng.standard_normal(target.shape)
    per_position.backward(_t(factor, dtype=dtype))
    keep = target != -100
    safe = np.where(keep, target, 0)
    onehot = np.moveaxis(np.eye(3)[safe], -1, 1)
    kept = (factor * keep)[:, None]
    p = np.exp(log_y)
    grad = kept * ((1 - eps) * weight[safe][:, None] * (p - onehot) + eps / 3 * (weight.sum() * p - weight[:, None]))
    np.testing.assert_allclose(leaf.grad.numpy(), grad, **tol)
    # d/dw_c of the loss: (1 - ε)(-log p_t) at the target's class, ε/C (-log p_c) at every class.
    grad_w = (kept * ((1 - eps) * onehot + eps / 3) * -log_y).sum(axis=(0, 2))
    np.testing.assert_allclose(w.grad.numpy(), grad_w, **tol)


@pytest.mark.parametrize("shape", [(4, 5, 0), (2, 3, 0, 5), (0, 3)])
@pytest.mark.parametrize("fn", [F.cross_entropy, F.nll_loss])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_class_losses_of_no_positions_give_zero_gradients_for_input_and_weight(shape, fn, reduction):
    # No positions (an empty batch or spatial dim): the sum is 0, the mean 0/0 (NaN, as torch),
    # and the gradients of the input and of the class weights are zeros of their shapes.
    classes = shape[1]
    x = rustgrad.tensor(np.zeros(shape, np.float32), requires_grad=True)
    w = rustgrad.tensor(np.ones(classes, np.float32), requires_grad=True)
    target = rustgrad.tensor(np.zeros(shape[:1] + shape[2:], np.int64))
    loss = fn(x, target, weight=w, reduction=reduction)
    if reduction == "mean":
        assert np.isnan(loss.item())
    else:
        assert loss.detach().numpy().shape == ((shape[:1] + shape[2:]) if reduction == "none" else ())
        assert not loss.detach().numpy().any()
    loss.sum().backward()
    assert x.grad.numpy().shape == shape and not x.grad.numpy().any()
    assert w.grad.numpy().shape == (classes,) and not w.grad.numpy().any()
