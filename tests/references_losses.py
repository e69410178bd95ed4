"""numpy references of the loss family's table ops (rust/ops/losses.rs): softmax, log_softmax,
cross_entropy and nll_loss. Written from the formulas in torch's documentation, independently
of the kernels: the log-sum-exp per row, then the weighted, smoothed, reduced loss."""

from __future__ import annotations

from typing import Any

import numpy as np
from _op_reference import TableReference, dim
from hypothesis import strategies as st
from test_property_ops import shapes


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """(x - max) - log(sum(exp(x - max))) along axis, as torch computes it (the max taken as 0
    where it is not finite)."""
    if x.ndim == 0:
        return _log_softmax(x.reshape(1), 0).reshape(())
    if x.size == 0:
        return x.copy()
    peak = np.max(x, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    shifted = x - peak
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def log_softmax(x: np.ndarray, dim: Any = None) -> np.ndarray:
    return _log_softmax(x, -1 if dim is None else dim)


def softmax(x: np.ndarray, dim: Any = None) -> np.ndarray:
    return np.exp(log_softmax(x, dim))


def class_loss(x: np.ndarray, target: np.ndarray, weight: np.ndarray, ignore_index: int = -100,
               reduction: str = "mean", label_smoothing: float = 0.0, logits: bool = True) -> np.ndarray:
    """torch's cross_entropy (``logits``) or nll_loss with class indices: the loss per position is
    (1 - ε) w[t] (-logp[t]) + ε / C Σ_c w[c] (-logp[c]); ignored positions give 0; the mean divides by
    the summed target weights of the positions not ignored."""
    class_axis = 0 if x.ndim == 1 else 1
    classes = x.shape[class_axis]
    lp = np.moveaxis(_log_softmax(x, class_axis) if logits else x, class_axis, -1)  # (N, d1, ..., C)
    w = weight if weight.size else np.ones(classes)
    keep = target != ignore_index
    safe = np.where(keep, target, 0).astype(np.int64)
    picked = np.take_along_axis(lp, safe[..., None], axis=-1)[..., 0]
    wt = np.where(keep, w[safe], 0.0)
    loss = np.where(keep, -picked * w[safe], 0.0)
    if label_smoothing:
        smooth = np.where(keep, -(lp * w).sum(-1), 0.0)
        loss = (1 - label_smoothing) * loss + label_smoothing / classes * smooth
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.asarray(loss.sum())
    return np.asarray(loss.sum() / wt.sum())


def nll_loss(x: np.ndarray, target: np.ndarray, weight: np.ndarray, ignore_index: int = -100,
             reduction: str = "mean") -> np.ndarray:
    return class_loss(x, target, weight, ignore_index, reduction, 0.0, logits=False)


def class_shapes(data: Any) -> list[tuple[int, ...]]:
    """(C,), (N, C) or (N, C, d1[, d2]), and the weight (C,)."""
    classes = data.draw(st.integers(1, 4))
    kind = data.draw(st.sampled_from(["unbatched", "batch", "spatial"]))
    if kind == "unbatched":
        return [(classes,), (classes,)]
    n = data.draw(st.integers(1, 3))
    rest = tuple(data.draw(st.lists(st.integers(1, 2), min_size=1, max_size=2))) if kind == "spatial" else ()
    return [(n, classes, *rest), (classes,)]


def class_targets(data: Any, shapes_in: list[tuple[int, ...]], kwargs: dict) -> dict:
    x = shapes_in[0]
    classes = x[0] if len(x) == 1 else x[1]
    target_shape = () if len(x) == 1 else (x[0], *x[2:])
    choices = list(range(classes)) + [kwargs["ignore_index"]]
    flat = data.draw(st.lists(st.sampled_from(choices), min_size=int(np.prod(target_shape, dtype=np.int64)),
                              max_size=int(np.prod(target_shape, dtype=np.int64))))
    if flat:  # one target kept: an all-ignored mean is NaN, whose gradient finite differences cannot check
        flat[0] = data.draw(st.integers(0, classes - 1).filter(lambda c: c != kwargs["ignore_index"]))
    dtype = data.draw(st.sampled_from([np.int64, np.int32]))
    return {1: np.array(flat, dtype=dtype).reshape(target_shape)}


def class_args(data: Any, shapes_in: list[tuple[int, ...]], smoothing: bool) -> dict:
    x = shapes_in[0]
    classes = x[0] if len(x) == 1 else x[1]
    kwargs = {"ignore_index": data.draw(st.sampled_from([-100, 0] if classes > 1 else [-100])),
              "reduction": data.draw(st.sampled_from(["none", "mean", "sum"]))}
    if smoothing:
        kwargs["label_smoothing"] = data.draw(st.sampled_from([0.0, 0.25, 1.0]))
    return kwargs


def class_grad_inputs(data: Any, shapes_in: list[tuple[int, ...]]) -> list[np.ndarray]:
    """Logits in [-2, 2] and positive weights, so the weighted mean's denominator stays away from 0."""
    x = data.draw(st.lists(st.floats(-2, 2), min_size=int(np.prod(shapes_in[0])), max_size=int(np.prod(shapes_in[0]))))
    w = data.draw(st.lists(st.floats(0.5, 2), min_size=shapes_in[1][0], max_size=shapes_in[1][0]))
    return [np.array(x, dtype=np.float64).reshape(shapes_in[0]), np.array(w, dtype=np.float64)]


def _softmax_reference(fn: Any) -> TableReference:
    return TableReference(
        fn,
        lambda data, shapes_in: {"dim": dim(data, len(shapes_in[0]))},
        lambda data, kw: {"axis": kw["dim"]},
        shapes=lambda data: [data.draw(shapes(max_dims=4))],
        integer_inputs=False,
        float32_tolerance=1e-5,
    )


REFERENCES = {
    "softmax": _softmax_reference(softmax),
    "log_softmax": _softmax_reference(log_softmax),
    "cross_entropy": TableReference(
        class_loss,
        lambda data, shapes_in: class_args(data, shapes_in, smoothing=True),
        lambda data, kw: dict(kw),
        shapes=class_shapes,
        indices=class_targets,
        grad_inputs=class_grad_inputs,
        float32_tolerance=1e-4,
    ),
    "nll_loss": TableReference(
        nll_loss,
        lambda data, shapes_in: class_args(data, shapes_in, smoothing=False),
        lambda data, kw: dict(kw),
        shapes=class_shapes,
        indices=class_targets,
        grad_inputs=class_grad_inputs,
        float32_tolerance=1e-4,
    ),
}
