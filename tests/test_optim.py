"""rustgrad.optim against torch.optim's update formulas written out in numpy."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
from rustgrad import optim


def _problem(rng):
    x = rng.standard_normal((5, 3))
    y = rng.standard_normal((5, 2))
    w = rustgrad.tensor(rng.standard_normal((3, 2)), dtype=rustgrad.float64, requires_grad=True)
    b = rustgrad.tensor(rng.standard_normal(2), dtype=rustgrad.float64, requires_grad=True)
    xt = rustgrad.tensor(x, dtype=rustgrad.float64)
    yt = rustgrad.tensor(y, dtype=rustgrad.float64)

    def loss():
        return ((xt.mm(w) + b - yt) ** 2).mean()

    return [w, b], loss


def _sgd_reference(params, grads, state, lr, momentum, dampening, weight_decay, nesterov):
    out = []
    for i, (p, g) in enumerate(zip(params, grads)):
        d_p = g + weight_decay * p
        if momentum != 0:
            if i not in state:
                state[i] = d_p.copy()
            else:
                state[i] = momentum * state[i] + (1 - dampening) * d_p
            d_p = d_p + momentum * state[i] if nesterov else state[i]
        out.append(p - lr * d_p)
    return out


def _adam_reference(params, grads, state, t, lr, betas, eps, weight_decay):
    b1, b2 = betas
    out = []
    for i, (p, g) in enumerate(zip(params, grads)):
        g = g + weight_decay * p
        m, v = state.get(i, (np.zeros_like(p), np.zeros_like(p)))
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        state[i] = (m, v)
        denom = np.sqrt(v) / np.sqrt(1 - b2 ** t) + eps
        out.append(p - lr / (1 - b1 ** t) * m / denom)
    return out


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(lr=0.1),
        dict(lr=0.05, momentum=0.9),
        dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.01),
        dict(lr=0.05, momentum=0.9, weight_decay=0.05, nesterov=True),
    ],
)
def test_sgd_matches_torch_formulas(rng, kwargs):
    params, loss = _problem(rng)
    opt = optim.SGD(params, **kwargs)
    full = dict(momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False)
    full.update(kwargs)
    ref = [p.detach().numpy().copy() for p in params]
    state: dict = {}
    for _ in range(4):
        opt.zero_grad()
        loss().backward()
        grads = [p.grad.numpy().copy() for p in params]
        opt.step()
        ref = _sgd_reference(ref, grads, state, **full)
        for p, r in zip(params, ref):
            np.testing.assert_allclose(p.detach().numpy(), r, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_adam_matches_torch_formulas(rng, weight_decay):
    params, loss = _problem(rng)
    opt = optim.Adam(params, lr=0.01, betas=(0.8, 0.95), eps=1e-6, weight_decay=weight_decay)
    ref = [p.detach().numpy().copy() for p in params]
    state: dict = {}
    for t in range(1, 6):
        opt.zero_grad()
        loss().backward()
        grads = [p.grad.numpy().copy() for p in params]
        opt.step()
        ref = _adam_reference(ref, grads, state, t, 0.01, (0.8, 0.95), 1e-6, weight_decay)
        for p, r in zip(params, ref):
            np.testing.assert_allclose(p.detach().numpy(), r, rtol=1e-12, atol=1e-12)
    assert opt.state[params[0]]["step"] == 5


def test_adam_defaults_and_float32():
    opt = optim.Adam([rustgrad.zeros(2, requires_grad=True)])
    group = opt.param_groups[0]
    assert (group["lr"], group["betas"], group["eps"], group["weight_decay"]) == (1e-3, (0.9, 0.999), 1e-8, 0.0)
    p = rustgrad.tensor([1.0, -2.0], requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    (p * p).sum().backward()
    opt.step()
    # The first Adam step moves every coordinate by lr against the gradient's sign.
    np.testing.assert_allclose(p.detach().numpy(), [0.9, -1.9], rtol=1e-6)
    assert p.dtype == rustgrad.float32


def test_params_keep_identity_and_stay_leaves(rng):
    params, loss = _problem(rng)
    ids = [id(p) for p in params]
    for opt in (optim.SGD(params, lr=0.1, momentum=0.9), optim.Adam(params)):
        before = [p.detach().numpy().copy() for p in params]
        loss().backward()
        opt.step()
        assert [id(p) for p in opt.param_groups[0]["params"]] == ids
        for p, old in zip(params, before):
            assert p.is_leaf and p.requires_grad and p.grad_fn is None
            assert not np.allclose(p.detach().numpy(), old)
        opt.zero_grad()
    assert rustgrad.is_grad_enabled()


def test_zero_grad_both_ways(rng):
    params, loss = _problem(rng)
    opt = optim.SGD(params, lr=0.1)
    loss().backward()
    opt.zero_grad(set_to_none=False)
    for p in params:
        assert p.grad is not None
        np.testing.assert_array_equal(p.grad.numpy(), np.zeros(p.shape))
    loss().backward()
    assert all(np.abs(p.grad.numpy()).sum() > 0 for p in params)
    opt.zero_grad()
    assert all(p.grad is None for p in params)
    opt.step()  # no gradients: nothing happens


def test_step_skips_params_without_grad():
    a = rustgrad.ones(2, requires_grad=True)
    b = rustgrad.ones(2, requires_grad=True)
    opt = optim.SGD([a, b], lr=1.0)
    (a * 3).sum().backward()
    opt.step()
    np.testing.assert_array_equal(a.detach().numpy(), [-2.0, -2.0])
    np.testing.assert_array_equal(b.detach().numpy(), [1.0, 1.0])


def test_param_groups_and_closure(rng):
    params, loss = _problem(rng)
    opt = optim.SGD([{"params": [params[0]]}, {"params": [params[1]], "lr": 0.0}], lr=0.1, momentum=0.5)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.0]
    assert opt.param_groups[1]["momentum"] == 0.5
    b_before = params[1].detach().numpy().copy()

    def closure():
        opt.zero_grad()
        value = loss()
        value.backward()
        return value

    value = opt.step(closure)
    assert isinstance(value, rustgrad.Tensor)
    np.testing.assert_array_equal(params[1].detach().numpy(), b_before)


@pytest.mark.parametrize("make", [lambda p: optim.SGD(p, lr=0.05, momentum=0.9), lambda p: optim.Adam(p, lr=0.05)])
def test_state_dict_round_trip(rng, make):
    params, loss = _problem(rng)
    opt = make(params)
    for _ in range(2):
        opt.zero_grad()
        loss().backward()
        opt.step()
    saved = opt.state_dict()
    assert saved["param_groups"][0]["params"] == [0, 1]
    twin = [rustgrad.tensor(p.detach().numpy(), dtype=rustgrad.float64, requires_grad=True) for p in params]
    opt2 = make(twin)
    opt2.load_state_dict(saved)
    x = rustgrad.tensor(rng.standard_normal((5, 3)), dtype=rustgrad.float64)
    for o, ps in ((opt, params), (opt2, twin)):
        o.zero_grad()
        (x.mm(ps[0]) + ps[1]).square().sum().backward()
        o.step()
    for p, q in zip(params, twin):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-12)


def test_errors():
    w = rustgrad.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="learning rate"):
        optim.SGD([w], lr=-1.0)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD([w], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([w * 2], lr=0.1)
    with pytest.raises(TypeError, match="iterable"):
        optim.Adam(w)
    with pytest.raises(ValueError, match="beta"):
        optim.Adam([w], betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="empty"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="lr"):
        optim.SGD([w])


def test_exposed_as_rustgrad_optim():
    assert rustgrad.optim is optim
    assert "optim" in rustgrad.__all__


def test_adam_amsgrad_and_maximize(rng):
    params, loss = _problem(rng)
    opt = optim.Adam(params, lr=0.02, amsgrad=True, maximize=True)
    b1, b2, eps = 0.9, 0.999, 1e-8
    ref = [p.detach().numpy().copy() for p in params]
    m = [np.zeros_like(r) for r in ref]
    v = [np.zeros_like(r) for r in ref]
    vmax = [np.zeros_like(r) for r in ref]
    for t in range(1, 4):
        opt.zero_grad()
        loss().backward()
        grads = [-p.grad.numpy() for p in params]  # maximize: ascend
        opt.step()
        for i, g in enumerate(grads):
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            vmax[i] = np.maximum(vmax[i], v[i])
            ref[i] = ref[i] - 0.02 / (1 - b1 ** t) * m[i] / (np.sqrt(vmax[i]) / np.sqrt(1 - b2 ** t) + eps)
            np.testing.assert_allclose(params[i].detach().numpy(), ref[i], rtol=1e-12, atol=1e-12)
