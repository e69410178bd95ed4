"""AdamW, RMSprop and Adagrad against float64 numpy versions of torch.optim's algorithms, over
several steps, with their options; and state_dict round trips that continue the same path."""

from __future__ import annotations

import numpy as np
import pytest

import rustgrad
from rustgrad import optim


def _problem(rng):
    x = rustgrad.tensor(rng.standard_normal((6, 3)), dtype=rustgrad.float64)
    y = rustgrad.tensor(rng.standard_normal((6, 2)), dtype=rustgrad.float64)
    w = rustgrad.tensor(rng.standard_normal((3, 2)), dtype=rustgrad.float64, requires_grad=True)
    b = rustgrad.tensor(rng.standard_normal(2), dtype=rustgrad.float64, requires_grad=True)

    def loss():
        return ((x.mm(w) + b - y) ** 2).mean()

    return [w, b], loss


def _adamw_ref(p, g, s, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, maximize=False):
    g = -g if maximize else g
    s["t"] = s.get("t", 0) + 1
    t = s["t"]
    p = p * (1 - lr * weight_decay)
    s["m"] = betas[0] * s.get("m", 0.0) + (1 - betas[0]) * g
    s["v"] = betas[1] * s.get("v", 0.0) + (1 - betas[1]) * g * g
    second = s["v"]
    if amsgrad:
        s["vmax"] = np.maximum(s.get("vmax", 0.0), s["v"])
        second = s["vmax"]
    denom = np.sqrt(second) / np.sqrt(1 - betas[1] ** t) + eps
    return p - lr / (1 - betas[0] ** t) * s["m"] / denom


def _rmsprop_ref(p, g, s, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False,
                 maximize=False):
    g = -g if maximize else g
    g = g + weight_decay * p
    s["v"] = alpha * s.get("v", 0.0) + (1 - alpha) * g * g
    if centered:
        s["a"] = alpha * s.get("a", 0.0) + (1 - alpha) * g
        avg = np.sqrt(s["v"] - s["a"] ** 2) + eps
    else:
        avg = np.sqrt(s["v"]) + eps
    if momentum > 0:
        s["buf"] = momentum * s.get("buf", 0.0) + g / avg
        return p - lr * s["buf"]
    return p - lr * g / avg


def _adagrad_ref(p, g, s, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10,
                 maximize=False):
    g = -g if maximize else g
    s["t"] = s.get("t", 0) + 1
    g = g + weight_decay * p
    clr = lr / (1 + (s["t"] - 1) * lr_decay)
    s["sum"] = s.get("sum", initial_accumulator_value) + g * g
    return p - clr * g / (np.sqrt(s["sum"]) + eps)


CASES = [
    (optim.AdamW, _adamw_ref, {}),
    (optim.AdamW, _adamw_ref, dict(lr=0.05, weight_decay=0.3)),
    (optim.AdamW, _adamw_ref, dict(lr=0.02, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.0, amsgrad=True)),
    (optim.AdamW, _adamw_ref, dict(lr=0.02, amsgrad=True, maximize=True)),
    (optim.RMSprop, _rmsprop_ref, {}),
    (optim.RMSprop, _rmsprop_ref, dict(lr=0.01, alpha=0.9, weight_decay=0.1)),
    (optim.RMSprop, _rmsprop_ref, dict(lr=0.01, momentum=0.9)),
    (optim.RMSprop, _rmsprop_ref, dict(lr=0.01, momentum=0.5, centered=True, eps=1e-4)),
    (optim.RMSprop, _rmsprop_ref, dict(centered=True, maximize=True)),
    (optim.Adagrad, _adagrad_ref, {}),
    (optim.Adagrad, _adagrad_ref, dict(lr=0.1, lr_decay=0.05, weight_decay=0.2)),
    (optim.Adagrad, _adagrad_ref, dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-6, maximize=True)),
]


@pytest.mark.parametrize("cls, reference, kwargs", CASES, ids=[f"{c.__name__}-{k}" for c, _, k in CASES])
def test_optimizer_matches_a_float64_numpy_version_of_torch_algorithm(rng, cls, reference, kwargs):
    params, loss = _problem(rng)
    opt = cls(params, **kwargs)
    ref = [p.detach().numpy().copy() for p in params]
    states: list[dict] = [{} for _ in params]
    for _ in range(6):
        opt.zero_grad()
        loss().backward()
        grads = [p.grad.numpy().copy() for p in params]
        opt.step()
        ref = [reference(r, g, s, **kwargs) for r, g, s in zip(ref, grads, states)]
        for p, r in zip(params, ref):
            np.testing.assert_allclose(p.detach().numpy(), r, rtol=1e-13, atol=1e-14)
    for p in params:
        assert p.is_leaf and p.requires_grad and p.dtype == rustgrad.float64


def test_rmsprop_on_float32_plain_tensors_follows_numpy():
    w = rustgrad.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
    opt = optim.RMSprop([w], lr=1e-3)
    ref, state = w.detach().numpy().astype(np.float64), {}
    for _ in range(5):
        opt.zero_grad()
        (w * w * w).sum().backward()
        g = w.grad.numpy().astype(np.float64)
        opt.step()
        ref = _rmsprop_ref(ref, g, state, lr=1e-3)
    assert w.dtype == rustgrad.float32
    np.testing.assert_allclose(w.detach().numpy(), ref, rtol=1e-6)


@pytest.mark.parametrize(
    "cls, defaults",
    [
        (optim.AdamW, dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False)),
        (optim.RMSprop, dict(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False)),
        (optim.Adagrad, dict(lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10)),
    ],
)
def test_defaults_are_torch_defaults(cls, defaults):
    group = cls([rustgrad.zeros(2, requires_grad=True)]).param_groups[0]
    assert {k: group[k] for k in defaults} == defaults


def test_adagrad_state_exists_from_construction_and_counts_steps():
    p = rustgrad.ones(3, requires_grad=True)
    opt = optim.Adagrad([p], initial_accumulator_value=0.25)
    assert opt.state[p]["step"] == 0
    np.testing.assert_array_equal(opt.state[p]["sum"].numpy(), [0.25] * 3)
    q = rustgrad.ones(2, requires_grad=True)
    opt.add_param_group({"params": [q], "initial_accumulator_value": 1.0})
    np.testing.assert_array_equal(opt.state[q]["sum"].numpy(), [1.0, 1.0])


def test_params_without_grad_are_skipped():
    a, b = rustgrad.ones(2, requires_grad=True), rustgrad.ones(2, requires_grad=True)
    for cls in (optim.AdamW, optim.RMSprop, optim.Adagrad):
        opt = cls([a, b], lr=0.1)
        b.grad = None
        (a * 2).sum().backward()
        opt.step()
        np.testing.assert_array_equal(b.detach().numpy(), [1.0, 1.0])
        assert b not in opt.state or "square_avg" not in opt.state[b]
        a.grad = None


@pytest.mark.parametrize(
    "make",
    [
        lambda p: optim.AdamW(p, lr=0.05, amsgrad=True),
        lambda p: optim.RMSprop(p, lr=0.01, momentum=0.9, centered=True),
        lambda p: optim.Adagrad(p, lr=0.1, lr_decay=0.01),
    ],
)
def test_state_dict_round_trip_continues_the_same_path(rng, make):
    params, loss = _problem(rng)
    opt = make(params)
    for _ in range(3):
        opt.zero_grad()
        loss().backward()
        opt.step()
    saved = opt.state_dict()
    twin = [rustgrad.tensor(p.detach().numpy(), dtype=rustgrad.float64, requires_grad=True) for p in params]
    opt2 = make(twin)
    opt2.load_state_dict(saved)
    assert opt2.state_dict()["param_groups"] == saved["param_groups"]
    x = rustgrad.tensor(rng.standard_normal((4, 3)), dtype=rustgrad.float64)
    for _ in range(3):
        for o, ps in ((opt, params), (opt2, twin)):
            o.zero_grad()
            (x.mm(ps[0]) + ps[1]).square().sum().backward()
            o.step()
    for p, q in zip(params, twin):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda w: optim.AdamW(w, lr=-1.0), "Invalid learning rate: -1.0"),
        (lambda w: optim.AdamW(w, betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
        (lambda w: optim.AdamW(w, weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
        (lambda w: optim.RMSprop(w, alpha=-0.5), "Invalid alpha value: -0.5"),
        (lambda w: optim.RMSprop(w, momentum=-1.0), "Invalid momentum value: -1.0"),
        (lambda w: optim.RMSprop(w, eps=-1.0), "Invalid epsilon value: -1.0"),
        (lambda w: optim.Adagrad(w, lr_decay=-1.0), "Invalid lr_decay value: -1.0"),
        (lambda w: optim.Adagrad(w, initial_accumulator_value=-1.0), "Invalid initial_accumulator_value value"),
    ],
)
def test_bad_hyperparameters_raise_torch_messages(make, match):
    with pytest.raises(ValueError, match=match):
        make([rustgrad.ones(2, requires_grad=True)])


def test_the_old_module_names_are_kept():
    from rustgrad.optim.optimizer import Optimizer, required

    assert issubclass(optim.AdamW, optim.Adam) and issubclass(optim.RMSprop, Optimizer)
    assert repr(required) == "<required parameter>"
    assert {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Optimizer", "lr_scheduler"} <= set(optim.__all__)
