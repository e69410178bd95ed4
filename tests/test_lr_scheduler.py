"""optim.lr_scheduler: each schedule's learning rates against a closed form written here, torch's
documented examples, state_dict round trips and torch's errors."""

from __future__ import annotations

import math
import warnings

import pytest

import rustgrad
from rustgrad import optim
from rustgrad.optim import lr_scheduler as sched


def _opt(lr=0.1, groups=1, cls=optim.SGD, **kwargs):
    params = [{"params": [rustgrad.zeros(2, requires_grad=True)], "lr": lr * (i + 1)} for i in range(groups)]
    return cls(params, lr=lr, **kwargs)


def _lrs(scheduler, steps, group=0):
    """The lr of ``group`` before each of ``steps`` epochs (the first value is the initial one)."""
    out = []
    for _ in range(steps):
        out.append(scheduler.optimizer.param_groups[group]["lr"])
        assert scheduler.get_last_lr()[group] == out[-1]
        scheduler.optimizer.step()
        scheduler.step()
    return out


def test_step_lr_is_torch_documented_example():
    # torch docs: lr = 0.05 if epoch < 30, 0.005 if 30 <= epoch < 60, 0.0005 if 60 <= epoch < 90
    s = sched.StepLR(_opt(0.05), step_size=30, gamma=0.1)
    lrs = _lrs(s, 90)
    for epoch, lr in enumerate(lrs):
        assert lr == pytest.approx(0.05 * 0.1 ** (epoch // 30), rel=1e-12)
    assert s.last_epoch == 90


def test_multi_step_lr_with_repeated_milestones():
    s = sched.MultiStepLR(_opt(0.05, groups=2), milestones=[30, 80, 80], gamma=0.1)
    for group in (0, 1):
        assert s.base_lrs[group] == 0.05 * (group + 1)
    lrs = _lrs(s, 100, group=1)
    for epoch, lr in enumerate(lrs):
        reached = sum(m <= epoch for m in (30, 80, 80))
        assert lr == pytest.approx(0.1 * 0.1 ** reached, rel=1e-12)


def test_exponential_lr():
    lrs = _lrs(sched.ExponentialLR(_opt(1.0), gamma=0.9), 20)
    assert lrs == pytest.approx([0.9 ** t for t in range(20)], rel=1e-12)


@pytest.mark.parametrize("eta_min", [0.0, 0.01])
def test_cosine_annealing_follows_the_closed_form_over_several_periods(eta_min):
    t_max, base = 10, 0.1
    lrs = _lrs(sched.CosineAnnealingLR(_opt(base), T_max=t_max, eta_min=eta_min), 45)
    for t, lr in enumerate(lrs):
        expected = eta_min + (base - eta_min) * (1 + math.cos(math.pi * t / t_max)) / 2
        assert lr == pytest.approx(expected, rel=1e-9, abs=1e-12), t


def test_cosine_annealing_is_recursive_as_torch_after_a_manual_lr_change():
    opt = _opt(0.1)
    s = sched.CosineAnnealingLR(opt, T_max=10)
    s.step()
    opt.param_groups[0]["lr"] = 0.05  # torch's recursive form scales from the current lr
    s.step()
    ratio = (1 + math.cos(math.pi * 2 / 10)) / (1 + math.cos(math.pi / 10))
    assert opt.param_groups[0]["lr"] == pytest.approx(0.05 * ratio, rel=1e-12)


def test_lambda_lr_per_group():
    opt = _opt(1.0, groups=2)
    s = sched.LambdaLR(opt, [lambda e: 0.95 ** e, lambda e: e // 3])
    lrs0 = _lrs(s, 10, 0)
    assert lrs0 == pytest.approx([0.95 ** e for e in range(10)])
    assert opt.param_groups[1]["lr"] == 2.0 * (10 // 3)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        sched.LambdaLR(_opt(1.0, groups=2), [lambda e: 1.0])


def _one_cycle_closed_form(step, total, max_lr, pct, div, final_div, strategy, three_phase):
    initial = max_lr / div
    minimum = initial / final_div
    if strategy == "cos":
        def anneal(a, b, x):
            return b + (a - b) * (1 + math.cos(math.pi * x)) / 2
    else:
        def anneal(a, b, x):
            return a + (b - a) * x
    up = pct * total - 1
    if three_phase:
        down = 2 * pct * total - 2
        if step <= up:
            return anneal(initial, max_lr, step / up)
        if step <= down:
            return anneal(max_lr, initial, (step - up) / (down - up))
        return anneal(initial, minimum, (step - down) / (total - 1 - down))
    if step <= up:
        return anneal(initial, max_lr, step / up)
    return anneal(max_lr, minimum, (step - up) / (total - 1 - up))


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("three_phase", [False, True])
def test_one_cycle_lr_matches_its_closed_form(strategy, three_phase):
    total = 40
    opt = _opt(0.1, momentum=0.9)
    s = sched.OneCycleLR(opt, max_lr=1.0, total_steps=total, pct_start=0.25, anneal_strategy=strategy,
                         div_factor=10.0, final_div_factor=100.0, three_phase=three_phase)
    lrs = _lrs(s, total)
    for step, lr in enumerate(lrs):
        expected = _one_cycle_closed_form(step, total, 1.0, 0.25, 10.0, 100.0, strategy, three_phase)
        assert lr == pytest.approx(expected, rel=1e-9, abs=1e-12), step
    assert lrs[0] == pytest.approx(0.1) and max(lrs) == pytest.approx(1.0)
    assert lrs[-1] == pytest.approx(0.1 / 100.0)
    with pytest.raises(ValueError, match=f"Tried to step {total + 1} times. The specified number of total steps "
                                         f"is {total}"):
        s.step()


def test_one_cycle_cycles_momentum_and_adam_beta1_the_other_way():
    opt = _opt(0.1, momentum=0.9)
    s = sched.OneCycleLR(opt, max_lr=1.0, epochs=2, steps_per_epoch=5, pct_start=0.5)
    moms = []
    for _ in range(10):
        moms.append(opt.param_groups[0]["momentum"])
        s.step()
    assert moms[0] == pytest.approx(0.95) and moms[4] == pytest.approx(0.85) and moms[9] == pytest.approx(0.95)
    adam = _opt(0.1, cls=optim.AdamW)
    sched.OneCycleLR(adam, max_lr=1.0, total_steps=10, base_momentum=0.8, max_momentum=0.9)
    assert adam.param_groups[0]["betas"] == (0.9, 0.999)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        sched.OneCycleLR(_opt(0.1, cls=optim.Adagrad), max_lr=1.0, total_steps=10)
    sched.OneCycleLR(_opt(0.1, cls=optim.Adagrad), max_lr=1.0, total_steps=10, cycle_momentum=False)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(), r"You must define either total_steps OR \(epochs AND steps_per_epoch\)"),
        (dict(total_steps=0), "Expected positive integer total_steps, but got 0"),
        (dict(epochs=-1, steps_per_epoch=3), "Expected positive integer epochs, but got -1"),
        (dict(total_steps=10, pct_start=1.5), "Expected float between 0 and 1 pct_start, but got 1.5"),
        (dict(total_steps=10, anneal_strategy="exp"), "anneal_strategy must be one of 'cos' or 'linear', instead "
                                                        "got exp"),
        (dict(total_steps=10, max_lr=[1.0, 2.0]), "expected 1 values for max_lr, got 2"),
    ],
)
def test_one_cycle_errors_are_torch_errors(kwargs, match):
    kwargs.setdefault("max_lr", 1.0)
    with pytest.raises(ValueError, match=match):
        sched.OneCycleLR(_opt(0.1, momentum=0.9), **kwargs)


def test_reduce_lr_on_plateau_min_rel_with_patience_and_cooldown():
    opt = _opt(1.0)
    s = sched.ReduceLROnPlateau(opt, factor=0.5, patience=2, cooldown=1, min_lr=0.2)
    metrics = [10, 9, 9, 9, 9, 9, 9, 9, 8, 8, 8, 8, 8, 8, 8, 8]
    lrs = []
    for m in metrics:
        s.step(m)
        lrs.append(opt.param_groups[0]["lr"])
    # 3 bad epochs in a row (more than patience) halve the lr; the epoch after a cut is a cooldown and does
    # not count; 8 is an improvement (epoch 8); the floor is min_lr.
    assert lrs == [1.0] * 4 + [0.5] * 7 + [0.25] * 4 + [0.2]
    for _ in range(10):
        s.step(8)
    assert opt.param_groups[0]["lr"] == 0.2 and s.get_last_lr() == [0.2]


@pytest.mark.parametrize(
    "mode, threshold_mode, better, not_better",
    [("min", "rel", 0.989, 0.991), ("min", "abs", 0.98, 0.995), ("max", "rel", 1.011, 1.009),
     ("max", "abs", 1.02, 1.005)],
)
def test_reduce_lr_on_plateau_thresholds(mode, threshold_mode, better, not_better):
    s = sched.ReduceLROnPlateau(_opt(1.0), mode=mode, threshold=0.01, threshold_mode=threshold_mode)
    assert s.is_better(better, 1.0) and not s.is_better(not_better, 1.0)


def test_reduce_lr_on_plateau_errors_and_eps():
    with pytest.raises(ValueError, match=r"Factor should be < 1.0."):
        sched.ReduceLROnPlateau(_opt(), factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown!"):
        sched.ReduceLROnPlateau(_opt(), mode="avg")
    with pytest.raises(ValueError, match="threshold mode pct is unknown!"):
        sched.ReduceLROnPlateau(_opt(), threshold_mode="pct")
    with pytest.raises(ValueError, match="expected 1 min_lrs, got 2"):
        sched.ReduceLROnPlateau(_opt(), min_lr=[0.1, 0.2])
    opt = _opt(1e-9)
    s = sched.ReduceLROnPlateau(opt, patience=0)
    s.step(1.0)
    s.step(1.0)
    assert opt.param_groups[0]["lr"] == 1e-9  # a change smaller than eps is skipped, as torch


@pytest.mark.parametrize(
    "make",
    [
        lambda o: sched.StepLR(o, step_size=3, gamma=0.5),
        lambda o: sched.MultiStepLR(o, milestones=[2, 5], gamma=0.5),
        lambda o: sched.ExponentialLR(o, gamma=0.9),
        lambda o: sched.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
        lambda o: sched.OneCycleLR(o, max_lr=0.5, total_steps=30),
        lambda o: sched.LambdaLR(o, lambda e: 1 / (e + 1)),
    ],
)
def test_state_dict_round_trip_continues_the_same_schedule(tmp_path, make):
    opt = _opt(0.1, momentum=0.9)
    s = make(opt)
    _lrs(s, 6)
    rustgrad.save({"sched": s.state_dict(), "opt": opt.state_dict()}, tmp_path / "ckpt")
    expected = _lrs(s, 8)
    loaded = rustgrad.load(tmp_path / "ckpt")
    opt2 = _opt(0.1, momentum=0.9)
    opt2.load_state_dict(loaded["opt"])
    s2 = make(opt2)
    s2.load_state_dict(loaded["sched"])
    opt2.load_state_dict(loaded["opt"])
    assert s2.last_epoch == 6 and "optimizer" not in s2.state_dict()
    assert _lrs(s2, 8) == expected


def test_reduce_lr_on_plateau_state_dict_round_trip(tmp_path):
    opt = _opt(1.0)
    s = sched.ReduceLROnPlateau(opt, patience=1, factor=0.5)
    for m in (3, 2, 2, 2):
        s.step(m)
    rustgrad.save(s.state_dict(), tmp_path / "s")
    s2 = sched.ReduceLROnPlateau(_opt(1.0))
    s2.load_state_dict(rustgrad.load(tmp_path / "s"))
    assert (s2.best, s2.num_bad_epochs, s2.patience, s2.factor, s2.last_epoch) == (2.0, 0, 1, 0.5, 4)
    assert s2.mode_worse == math.inf


def test_initial_lr_in_groups_and_resuming():
    opt = _opt(0.1)
    sched.StepLR(opt, step_size=2)
    assert opt.param_groups[0]["initial_lr"] == 0.1
    with pytest.raises(KeyError, match=r"param 'initial_lr' is not specified in param_groups\[0\] when resuming"):
        sched.StepLR(_opt(0.1), step_size=2, last_epoch=3)
    s = sched.StepLR(opt, step_size=2, gamma=0.5, last_epoch=3)  # resumes: initial_lr is there
    assert s.last_epoch == 4


def test_step_with_an_epoch_uses_the_closed_form_and_warns():
    s = sched.ExponentialLR(_opt(1.0), gamma=0.5)
    with pytest.warns(UserWarning, match="epoch parameter"):
        s.step(3)
    assert s.get_last_lr() == [0.125]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s.step()


def test_torch_names():
    assert sched._LRScheduler is sched.LRScheduler
    for name in ("StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR", "OneCycleLR",
                 "ReduceLROnPlateau"):
        assert issubclass(getattr(sched, name), sched.LRScheduler)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        sched.StepLR([], step_size=1)
