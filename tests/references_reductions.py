"""References of the reductions: ``prod``, ``cumprod``, ``var``, ``std``, ``norm``, ``all`` and ``any``."""

from __future__ import annotations

import math
import warnings
from typing import Any, Optional

import numpy as np
from _op_reference import TableReference, axes, dim, dims
from hypothesis import strategies as st

INF = float("inf")


def _along_last(x: np.ndarray, dim: Any, keepdim: bool, row_fn: Any) -> np.ndarray:
    """``row_fn`` of each slice over ``dim`` (None: all dims), shaped as a numpy reduction's result."""
    axis = axes(dim, x.ndim)
    reduced = tuple(range(x.ndim)) if axis is None else axis
    kept = [d for d in range(x.ndim) if d not in reduced]
    kept_shape = tuple(x.shape[d] for d in kept)
    length = math.prod(x.shape[d] for d in reduced)
    rows = np.transpose(x, kept + list(reduced)).reshape(math.prod(kept_shape), length)
    out = np.array([row_fn(row) for row in rows], dtype=np.float64).reshape(kept_shape)
    if keepdim:
        out = np.expand_dims(out, reduced) if reduced else out
    return out


def exact_product(row: np.ndarray) -> float:
    """The product of float64s computed exactly, then rounded once: no intermediate
    overflow or underflow, so it does not depend on the order of the multiplications."""
    if np.isnan(row).any() or (np.isinf(row).any() and (row == 0).any()):
        return math.nan
    if np.isinf(row).any():
        return math.copysign(INF, np.prod(np.sign(row)))
    mantissa, exponent = 1, 0
    for v in row:
        m, e = math.frexp(float(v))
        mantissa *= int(m * 2**53)
        exponent += e - 53
    if mantissa == 0:
        return 0.0
    sign, mantissa = (-1 if mantissa < 0 else 1), abs(mantissa)
    shift = max(mantissa.bit_length() - 64, 0)
    try:
        return sign * math.ldexp(float(mantissa >> shift), exponent + shift)
    except OverflowError:
        return sign * INF


def prod(x: np.ndarray, dim: Any = None, keepdim: bool = False) -> np.ndarray:
    return _along_last(x, dim, keepdim, exact_product)


def cumprod(x: np.ndarray, dim: int, exclusive: bool = False, reverse: bool = False) -> np.ndarray:
    """``cumsum``'s reference with products: the same order, identity 1."""
    if x.ndim == 0:
        return x.copy() if not exclusive else np.ones_like(x)
    y = np.flip(x, dim) if reverse else x
    out = np.cumprod(y, axis=dim, dtype=x.dtype)
    if exclusive and out.shape[dim]:
        out = np.concatenate([np.ones_like(np.take(out, [0], axis=dim)), np.delete(out, -1, axis=dim)], axis=dim)
    return np.flip(out, dim) if reverse else out


def var(x: np.ndarray, dim: Any = None, unbiased: Optional[bool] = None, keepdim: bool = False,
        correction: Optional[float] = None) -> np.ndarray:
    if correction is None:
        correction = 1 if unbiased is None else int(unbiased)
    with warnings.catch_warnings():  # fewer elements than the correction: inf or NaN, as in torch
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.var(x, axis=axes(dim, x.ndim), ddof=correction, keepdims=keepdim)


def std(x: np.ndarray, **kwargs: Any) -> np.ndarray:
    return np.sqrt(var(x, **kwargs))


def population(fn: Any) -> Any:
    """TF1's ``reduce_variance``/``reduce_std``: no correction."""
    return lambda x, dim=None, keepdim=False: fn(x, dim=dim, keepdim=keepdim, correction=0)


def vector_norm(x: np.ndarray, p: Any, dim: Any = None, keepdim: bool = False) -> np.ndarray:
    axis = axes(dim, x.ndim)
    a = np.abs(x)
    if p in ("fro", "euclidean", 2):
        return np.sqrt(np.sum(a * a, axis=axis, keepdims=keepdim))
    if p == INF:
        return np.max(a, axis=axis, keepdims=keepdim)
    if p == -INF:
        return np.min(a, axis=axis, keepdims=keepdim)
    if p == 0:
        return np.sum(x != 0, axis=axis, keepdims=keepdim).astype(np.float64)
    return np.sum(a**p, axis=axis, keepdims=keepdim) ** (1.0 / p)


def norm(x: np.ndarray, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> np.ndarray:
    return vector_norm(x, p, dim, keepdim)


def tf_norm(x: np.ndarray, ord: Any = "euclidean", dim: Any = None, keepdim: bool = False) -> np.ndarray:
    """TF1's ``norm``: ``ord`` 1 or inf over two axes is a matrix norm (the largest column or row sum)."""
    if isinstance(dim, tuple) and len(dim) == 2 and ord in (1, INF):
        rows, cols = axes(dim, x.ndim)
        summed, largest = (rows, cols) if ord == 1 else (cols, rows)
        sums = np.sum(np.abs(x), axis=summed, keepdims=True)
        out = np.max(sums, axis=largest, keepdims=True)
        return out if keepdim else np.squeeze(out, axis=(rows, cols))
    return vector_norm(x, ord, dim, keepdim)


def _reduced_is_empty(shape: tuple[int, ...], dim: Any) -> bool:
    reduced = range(len(shape)) if dim is None or not shape else axes(dim, len(shape))
    return any(shape[d] == 0 for d in reduced)


def norm_args(data: Any, shapes: list[tuple[int, ...]]) -> dict:
    """torch's p: every kind (inf and -inf only where the reduced slices are not empty)."""
    shape = shapes[0]
    kw = {"dim": dims(data, len(shape), allow_none=True), "keepdim": data.draw(st.booleans())}
    choices: list[Any] = [2, 1, 0, 3, 0.5, 1.5, -1]
    if not _reduced_is_empty(shape, kw["dim"]):
        choices += [INF, -INF]
    if kw["dim"] is None or isinstance(kw["dim"], int) or len(kw["dim"]) <= 2:
        choices.append("fro")
    kw["p"] = data.draw(st.sampled_from(choices))
    return kw


def tf_norm_args(data: Any, kw: dict) -> dict:
    """TF1's ord and axis: None, one int or two; ord > 0, or 'euclidean', or 'fro' over two axes.

    inf (and the matrix 1-norm, a largest sum) only where torch's call drew ±inf, whose
    reduced slices are not empty.
    """
    axis = kw["dim"]
    if isinstance(axis, tuple) and len(axis) == 1:
        axis = axis[0]
    if isinstance(axis, tuple) and len(axis) > 2:
        axis = None if kw["p"] not in (INF, -INF) else axis[0]
    matrix = isinstance(axis, tuple)
    choices: list[Any] = ["euclidean", "fro"] if matrix else ["euclidean", 1, 2, 3, 0.5]
    if kw["p"] in (INF, -INF):  # the slices are not empty, so the largest of them exists
        choices += [1, INF] if matrix else [INF]
    out = {"ord": data.draw(st.sampled_from(choices)), "axis": axis}
    out[data.draw(st.sampled_from(["keepdims", "keep_dims"]))] = kw["keepdim"]
    return out


def reduce_kwargs(data: Any, kw: dict) -> dict:
    """TF1's spelling of dim/keepdim, with the deprecated names sometimes."""
    return {data.draw(st.sampled_from(["axis", "reduction_indices"])): kw["dim"],
            data.draw(st.sampled_from(["keepdims", "keep_dims"])): kw["keepdim"]}


def reduce_args(data: Any, shapes: list[tuple[int, ...]]) -> dict:
    return {"dim": dims(data, len(shapes[0]), allow_none=True), "keepdim": data.draw(st.booleans())}


def moment_args(data: Any, shapes: list[tuple[int, ...]]) -> dict:
    """dim and keepdim, and torch's default, ``unbiased`` or ``correction``: always fewer than
    the elements of a slice (else the variance divides by 0 or less; tests/test_reduction_ops.py
    checks that case)."""
    shape = shapes[0]
    kw = reduce_args(data, shapes)
    reduced = range(len(shape)) if kw["dim"] is None or not shape else axes(kw["dim"], len(shape))
    count = math.prod(shape[d] for d in reduced)
    how = data.draw(st.sampled_from(["default", "unbiased", "correction"]))
    if how == "unbiased" or (how == "default" and count <= 1):
        kw["unbiased"] = count > 1 and data.draw(st.booleans())
    elif how == "correction":
        kw["correction"] = data.draw(st.sampled_from([c for c in (0, 0.5, 1, 2) if c < max(count, 1)]))
    return kw


# Gradients of ops with kinks (|x|, the largest element, sqrt at 0) are checked on a grid of
# exactly representable points: exact ties and zeros, which the rules handle as torch does,
# and no near-ties that finite differences would straddle.
GRID = st.integers(-12, 12).map(lambda i: i / 8)
# Smooth ops: the grid's zeros and ties, and any other point.
GRID_OR_ANY = st.one_of(GRID, st.floats(-1.5, 1.5))


REFERENCES = {
    "prod": TableReference(prod, reduce_args, reduce_kwargs, float32_tolerance=1e-5, grad_elements=GRID_OR_ANY),
    "cumprod": TableReference(
        lambda x, dim, exclusive=False, reverse=False: cumprod(x, dim, exclusive, reverse),
        lambda data, shapes: {"dim": dim(data, len(shapes[0]))},
        lambda data, kw: {"axis": kw["dim"], "exclusive": data.draw(st.booleans()),
                          "reverse": data.draw(st.booleans())},
        float32_tolerance=1e-5,
        grad_elements=GRID_OR_ANY,
    ),
    "var": TableReference(
        var, moment_args, lambda data, kw: {"axis": kw["dim"], "keepdims": kw["keepdim"]},
        float32_tolerance=1e-5, tf_numpy=population(var), grad_elements=GRID_OR_ANY,
    ),
    "std": TableReference(
        std, moment_args, lambda data, kw: {"axis": kw["dim"], "keepdims": kw["keepdim"]},
        float32_tolerance=1e-5, tf_numpy=population(std), grad_elements=GRID,
    ),
    "norm": TableReference(norm, norm_args, tf_norm_args, float32_tolerance=1e-5, tf_numpy=tf_norm,
                           grad_elements=GRID),
    "all": TableReference(lambda x, dim=None, keepdim=False: np.all(x, axis=axes(dim, x.ndim), keepdims=keepdim),
                          reduce_args, reduce_kwargs, bool_inputs=True),
    "any": TableReference(lambda x, dim=None, keepdim=False: np.any(x, axis=axes(dim, x.ndim), keepdims=keepdim),
                          reduce_args, reduce_kwargs, bool_inputs=True),
}
