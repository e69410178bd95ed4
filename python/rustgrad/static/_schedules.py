"""TF1's learning-rate schedules (``tf.train.exponential_decay`` and friends): graph tensors
computed from the global step each time a run evaluates them, with TF1's formulas.

The result has the learning rate's dtype (float32 for a Python number); the step (a variable,
tensor or Python number) is cast to it first, as in TF1. Pass the result to an optimizer as its
learning rate, and the same step to ``minimize(global_step=)`` so each training run advances it.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from rustgrad.errors import DTypeError, InvalidArgumentError
from rustgrad.static._dtypes import as_dtype, float32, int32, int64
from rustgrad.static._generated_ops import equal
from rustgrad.static._graph import Graph, Tensor, convert_to_tensor, get_default_graph
from rustgrad.static._ops import minimum, where

__all__ = [
    "cosine_decay",
    "exponential_decay",
    "inverse_time_decay",
    "natural_exp_decay",
    "piecewise_constant",
    "polynomial_decay",
]


def exponential_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                      staircase: bool = False, name: Optional[str] = None) -> Tensor:
    """``learning_rate * decay_rate ** (global_step / decay_steps)``; with ``staircase=True`` the
    exponent is ``floor(global_step / decay_steps)``, so the rate drops every ``decay_steps`` steps."""
    lr, step = _rate_and_step("exponential_decay", learning_rate, global_step)
    p = _fraction(step, decay_steps, staircase)
    return _named(lr * _like(decay_rate, lr) ** p, name, "ExponentialDecay")


def natural_exp_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                      staircase: bool = False, name: Optional[str] = None) -> Tensor:
    """``learning_rate * exp(-decay_rate * global_step / decay_steps)`` (``floor`` of the fraction
    with ``staircase=True``)."""
    lr, step = _rate_and_step("natural_exp_decay", learning_rate, global_step)
    p = _fraction(step, decay_steps, staircase)
    return _named(lr * (-_like(decay_rate, lr) * p).exp(), name, "NaturalExpDecay")


def inverse_time_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                       staircase: bool = False, name: Optional[str] = None) -> Tensor:
    """``learning_rate / (1 + decay_rate * global_step / decay_steps)`` (``floor`` of the fraction
    with ``staircase=True``)."""
    lr, step = _rate_and_step("inverse_time_decay", learning_rate, global_step)
    p = _fraction(step, decay_steps, staircase)
    return _named(lr / (_like(decay_rate, lr) * p + 1.0), name, "InverseTimeDecay")


def polynomial_decay(learning_rate: Any, global_step: Any, decay_steps: Any, end_learning_rate: Any = 0.0001,
                     power: Any = 1.0, cycle: bool = False, name: Optional[str] = None) -> Tensor:
    """``(learning_rate - end_learning_rate) * (1 - step / decay_steps) ** power + end_learning_rate``
    with ``step = min(global_step, decay_steps)``. With ``cycle=True`` the step is not clipped;
    ``decay_steps`` is instead stretched to the first multiple of itself at or above the step
    (``decay_steps * ceil(global_step / decay_steps)``, ``decay_steps`` itself at step 0)."""
    lr, step = _rate_and_step("polynomial_decay", learning_rate, global_step)
    end = _like(end_learning_rate, lr)
    steps = _like(decay_steps, lr)
    if cycle:
        multiplier = where(equal(step, 0.0), _like(1.0, lr), (step / steps).ceil())
        steps = multiplier * steps
    else:
        step = minimum(step, steps)
    decayed = (1.0 - step / steps) ** _like(power, lr)
    return _named((lr - end) * decayed + end, name, "PolynomialDecay")


def cosine_decay(learning_rate: Any, global_step: Any, decay_steps: Any, alpha: Any = 0.0,
                 name: Optional[str] = None) -> Tensor:
    """``learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * step / decay_steps)) + alpha)`` with
    ``step = min(global_step, decay_steps)``: from ``learning_rate`` down to ``alpha * learning_rate``."""
    lr, step = _rate_and_step("cosine_decay", learning_rate, global_step)
    steps = _like(decay_steps, lr)
    fraction = minimum(step, steps) / steps
    cosine = ((fraction * math.pi).cos() + 1.0) * 0.5
    alpha_t = _like(alpha, lr)
    return _named(lr * ((1.0 - alpha_t) * cosine + alpha_t), name, "CosineDecay")


def piecewise_constant(x: Any, boundaries: Sequence[Any], values: Sequence[Any],
                       name: Optional[str] = None) -> Tensor:
    """``values[0]`` while ``x <= boundaries[0]``, ``values[i]`` while ``boundaries[i-1] < x <=
    boundaries[i]``, ``values[-1]`` after the last boundary. As TF1: the boundaries must have
    ``x``'s dtype (Python ints are promoted to an int64 ``x``), and the values one dtype."""
    boundaries, values = list(boundaries), list(values)
    if len(boundaries) != len(values) - 1:
        raise InvalidArgumentError(
            f"piecewise_constant: The length of boundaries should be 1 less than the length of values "
            f"(got {len(boundaries)} boundaries and {len(values)} values)"
        )
    graph = _graph_of(x, *boundaries, *values)
    x_t = convert_to_tensor(x, None, graph)
    bounds = [_boundary(convert_to_tensor(b, None, graph), x_t.dtype) for b in boundaries]
    _check_increasing(boundaries)
    value_ts = [convert_to_tensor(v, None, graph) for v in values]
    for v in value_ts[1:]:
        if v.dtype != value_ts[0].dtype:
            raise InvalidArgumentError(
                f"piecewise_constant: Values must have elements all with the same dtype "
                f"({value_ts[0].dtype.name} vs {v.dtype.name}); write them all as floats"
            )
    result = value_ts[-1]
    for bound, value in zip(reversed(bounds), reversed(value_ts[:-1])):
        result = where(x_t <= bound, value, result)
    return _named(result, name, "PiecewiseConstant")


# ----- helpers -----


def _graph_of(*values: Any) -> Graph:
    return next((v.graph for v in values if isinstance(v, Tensor)), None) or get_default_graph()


def _rate_and_step(op: str, learning_rate: Any, global_step: Any) -> tuple[Tensor, Tensor]:
    """The learning rate as a floating tensor, and the step cast to its dtype."""
    if global_step is None:
        raise InvalidArgumentError(
            f"{op}: global_step is required for {op}. Pass tf.train.get_or_create_global_step()"
        )
    graph = _graph_of(learning_rate, global_step)
    if isinstance(learning_rate, Tensor):
        if not learning_rate.dtype.is_floating:
            raise DTypeError(
                f"{op}: learning_rate must be a floating-point tensor, got {learning_rate.dtype.name}; "
                "cast it with tf.cast"
            )
        lr = learning_rate
    else:
        # TF1's name for the constant (under the schedule's scope there); never "learning_rate" or
        # "global_step", which would push a later summary tag or the global step to "<name>_1".
        lr = graph._constant(learning_rate, float32, "initial_learning_rate")
    step = global_step if isinstance(global_step, Tensor) else graph._constant(global_step)
    graph._own(lr)
    graph._own(step)
    if step.dtype != lr.dtype:
        step = graph._op("cast", (lr.dtype,), [step])
    return lr, step


def _like(value: Any, like: Tensor) -> Any:
    """A hyperparameter in ``like``'s dtype: a Python number stays one (the ops take it as a scalar);
    a tensor is cast."""
    if isinstance(value, Tensor):
        return value if value.dtype == like.dtype else like.graph._op("cast", (like.dtype,), [value])
    return float(value)


def _fraction(step: Tensor, decay_steps: Any, staircase: bool) -> Tensor:
    p = step / _like(decay_steps, step)
    return p.floor() if staircase else p


def _named(t: Tensor, name: Optional[str], default: str) -> Tensor:
    return t.graph._op("identity", (), [t], name or default)


def _boundary(b: Tensor, x_dtype: Any) -> Tensor:
    if b.dtype == x_dtype:
        return b
    if b.dtype == int32 and x_dtype == int64:  # Python ints against an int64 step, as TF1 promotes them
        return b.graph._op("cast", (int64,), [b])
    raise InvalidArgumentError(
        f"piecewise_constant: Boundaries ({b.dtype.name}) must have the same dtype as x ({as_dtype(x_dtype).name})"
    )


def _check_increasing(boundaries: list[Any]) -> None:
    numbers = [b for b in boundaries if not isinstance(b, Tensor)]
    if len(numbers) == len(boundaries) and any(later <= earlier for earlier, later in zip(numbers, numbers[1:])):
        raise InvalidArgumentError(
            f"piecewise_constant: boundaries must increase strictly, got {boundaries} (TF1 fails when "
            "the step falls in two intervals)"
        )
