"""References of the neural-network ops: the activations with parameters (``gelu``, ``leaky_relu``,
``elu``, ``softplus``, ``hardtanh``), ``linear``, ``embedding`` and the normalisations
(``layer_norm``, ``group_norm``, ``batch_norm``), written with numpy from their definitions.

Normalisation gradients are checked with ``eps`` of 0.01 or more: a set of nearly equal values has
a tiny variance, and finite differences across it need the curvature ``eps`` bounds. ``batch_norm``
is checked in training (its running statistics take no gradient; evaluation is in test_nn_ops.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from _op_reference import TableReference
from hypothesis import strategies as st
from references_indexing import _ints
from references_products import small_floats
from test_property_ops import shapes


class Drawn(list):
    """Input shapes, with the torch keyword arguments drawn with them."""

    kwargs: dict


def drawn(shape_list: list, **kwargs: Any) -> Drawn:
    out = Drawn(shape_list)
    out.kwargs = kwargs
    return out


def away_from(*points: float) -> Any:
    """Gradient points in [-2, 2] at least 0.02 from each kink."""
    return st.floats(-2.0, 2.0).filter(lambda v: all(abs(v - p) > 0.02 for p in points))


# ---------------------------------------------------------------- activations


def gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def leaky_relu(x: np.ndarray, negative_slope: float = 0.01, alpha: Any = None) -> np.ndarray:
    slope = negative_slope if alpha is None else alpha
    return np.where(x > 0, x, x * slope)


def elu(x: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    return np.where(x > 0, x, alpha * np.expm1(x))


def softplus(x: np.ndarray, beta: float = 1.0, threshold: float = 20.0) -> np.ndarray:
    return np.where(x * beta > threshold, x, np.log1p(np.exp(beta * x)) / beta)


def hardtanh(x: np.ndarray, min_val: float = -1.0, max_val: float = 1.0) -> np.ndarray:
    return np.where(x < min_val, min_val, np.where(x > max_val, max_val, x))


def activation(numpy: Any, torch_args: Any, tf_args: Any, **options: Any) -> TableReference:
    return TableReference(numpy, torch_args, tf_args, integer_inputs=False, float32_tolerance=1e-5, **options)


SLOPES = st.sampled_from([0.01, 0.2, 0.0, -0.5, 1.5])


def hardtanh_args(data: Any, shapes_in: list) -> dict:
    lo = data.draw(st.sampled_from([-1.0, -0.5, 0.0, 0.25]))
    return {"min_val": lo, "max_val": lo + data.draw(st.sampled_from([0.0, 0.5, 1.0, 3.0]))}


def hardtanh_grad_inputs(data: Any, shapes_in: list) -> list:
    # The bounds are drawn by torch_args after this; gradient points keep off every bound it draws.
    bounds = [-1.0, -0.5, 0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 2.0]
    return [data.draw(_arrays(shapes_in[0], away_from(*bounds)))]


def _arrays(shape: tuple, elements: Any) -> Any:
    from hypothesis.extra import numpy as hnp

    return hnp.arrays(np.float64, shape, elements=elements)


# ---------------------------------------------------------------- linear and embedding


def linear_shapes(data: Any) -> list:
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    n_in, n_out = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))
    return [(*lead, n_in), (n_out, n_in), (n_out,)]


def linear(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return np.matmul(x, weight.T) + bias


def embedding_shapes(data: Any) -> list:
    return [(data.draw(st.integers(1, 4)), data.draw(st.integers(0, 3)))]


def embedding_indices(data: Any, shapes_in: list, kw: dict) -> dict:
    shape = data.draw(shapes(max_dims=2, max_side=3))
    return {0: _ints(data, shape, 0, shapes_in[0][0] - 1)}


def embedding(index: np.ndarray, weight: np.ndarray, padding_idx: Any = None) -> np.ndarray:
    return weight[index.astype(np.int64)]


# ---------------------------------------------------------------- normalisations

EPS = st.sampled_from([0.01, 0.5])


def layer_norm_shapes(data: Any) -> Drawn:
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    normalized = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    return drawn([(*lead, *normalized), normalized, normalized], normalized_shape=list(normalized))


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, normalized_shape: Any, eps: float = 1e-5,
               epsilon: Any = None) -> np.ndarray:
    eps = eps if epsilon is None else epsilon
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def channel_shapes(data: Any, groups: bool) -> Drawn:
    g = data.draw(st.integers(1, 3)) if groups else 1
    c = g * data.draw(st.integers(1, 2))
    n = data.draw(st.integers(1, 3))
    rest = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    if not groups and n * int(np.prod(rest)) < 2:  # training needs two values per channel
        n = 2
    x = (n, c, *rest)
    extra = [] if groups else [(c,), (c,)]
    return drawn([x, (c,), (c,), *extra], num_groups=g)


def group_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, num_groups: int, eps: float = 1e-5,
               epsilon: Any = None) -> np.ndarray:
    eps = eps if epsilon is None else epsilon
    n, c = x.shape[:2]
    sets = x.reshape(n, num_groups, -1)
    mean = sets.mean(axis=2, keepdims=True)
    var = ((sets - mean) ** 2).mean(axis=2, keepdims=True)
    normed = ((sets - mean) / np.sqrt(var + eps)).reshape(x.shape)
    along = (1, c) + (1,) * (x.ndim - 2)
    return normed * weight.reshape(along) + bias.reshape(along)


def batch_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, running_mean: np.ndarray,
               running_var: np.ndarray, training: bool = False, eps: float = 1e-5, epsilon: Any = None) -> np.ndarray:
    eps = eps if epsilon is None else epsilon
    along = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    axes = (0, *range(2, x.ndim))
    if training:
        mean = x.mean(axis=axes, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    else:
        mean, var = running_mean.reshape(along), running_var.reshape(along)
    return (x - mean) / np.sqrt(var + eps) * weight.reshape(along) + bias.reshape(along)


def norm(numpy: Any, shapes_of: Any, torch_args: Any, tf_args: Any) -> TableReference:
    return TableReference(numpy, torch_args, tf_args, shapes=shapes_of, draw_inputs=small_floats,
                          float32_tolerance=2e-5, integer_inputs=False)


REFERENCES = {
    "gelu": activation(
        gelu,
        lambda data, shapes_in: {"approximate": data.draw(st.sampled_from(["none", "tanh"]))},
        lambda data, kw: dict(kw),
    ),
    "leaky_relu": activation(
        leaky_relu,
        lambda data, shapes_in: {"negative_slope": data.draw(SLOPES)},
        lambda data, kw: {"alpha": kw["negative_slope"]},
        grad_elements=away_from(0.0),
    ),
    "elu": activation(
        elu,
        lambda data, shapes_in: {"alpha": data.draw(st.sampled_from([1.0, 0.5, 2.0]))},
        lambda data, kw: {},
        grad_elements=away_from(0.0),
    ),
    "softplus": activation(
        softplus,
        lambda data, shapes_in: {"beta": data.draw(st.sampled_from([1.0, 0.5, 2.0])),
                                 "threshold": data.draw(st.sampled_from([20.0, 5.0, 1.0]))},
        lambda data, kw: {},
        grad_elements=away_from(0.5, 1.0, 2.0),
    ),
    "hardtanh": activation(
        hardtanh,
        hardtanh_args,
        lambda data, kw: dict(kw),
        grad_inputs=hardtanh_grad_inputs,
    ),
    "linear": TableReference(
        linear, lambda data, shapes_in: {}, lambda data, kw: {}, shapes=linear_shapes, draw_inputs=small_floats,
        float32_tolerance=1e-4, integer_inputs=False,
    ),
    "embedding": TableReference(
        embedding, lambda data, shapes_in: {}, lambda data, kw: {}, shapes=embedding_shapes,
        indices=embedding_indices, integer_inputs=False,
    ),
    "layer_norm": norm(
        layer_norm, layer_norm_shapes,
        lambda data, shapes_in: {"normalized_shape": shapes_in.kwargs["normalized_shape"], "eps": data.draw(EPS)},
        lambda data, kw: {"normalized_shape": kw["normalized_shape"], "epsilon": kw["eps"]},
    ),
    "group_norm": norm(
        group_norm, lambda data: channel_shapes(data, groups=True),
        lambda data, shapes_in: {"num_groups": shapes_in.kwargs["num_groups"], "eps": data.draw(EPS)},
        lambda data, kw: {"num_groups": kw["num_groups"], "epsilon": kw["eps"]},
    ),
    "batch_norm": norm(
        batch_norm, lambda data: channel_shapes(data, groups=False),
        lambda data, shapes_in: {"training": True, "eps": data.draw(EPS)},
        lambda data, kw: {"training": True, "epsilon": kw["eps"]},
    ),
}
