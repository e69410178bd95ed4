"""The two higher-order examples do what their docstrings claim (they also run as scripts in
tests/test_typing.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_newton_converges_in_under_ten_steps_where_gradient_descent_needs_hundreds():
    result = load("newton_logistic").main()
    assert result["newton_steps"] < 10
    assert result["gd_steps"] >= 100


def test_newton_reaches_the_optimum_of_the_noisy_problem():
    example = load("newton_logistic")
    x, y = example.make_data()
    assert 0 < float(y.sum().item()) < example.N_POINTS  # both classes present
    loss = example.loss_fn(x, y)
    w, _ = example.newton(loss)
    # Noisy labels: the optimum is finite and its loss is far from zero (not separable).
    assert loss(w).item() > 0.3
    assert abs(example.gradient(loss, w)).max() < example.TOLERANCE


def test_the_gradient_penalty_gan_moves_its_samples_onto_the_data():
    result = load("gradient_penalty").main(steps=300)
    assert result["mean_error"] < 0.3
    assert result["penalty"] < 0.5
