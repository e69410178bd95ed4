"""References of the reductions: ``prod``, ``cumprod``, ``var``, ``std``, ``norm``, ``all`` and ``any``."""

from __future__ import annotations

import math
import warnings
from typing import Any, Optional

import numpy as np
from _op_reference import TableReference, axes, dim, dims
from hypothesis import assume
from hypothesis import strategies as st

import rustgrad

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


def arg_extreme(fn: Any) -> Any:
    """numpy's argmax/argmin (the first of equal elements, the first NaN), with torch's dim and keepdim."""
    def reference(x: np.ndarray, dim: Any = None, keepdim: bool = False) -> np.ndarray:
        if x.ndim == 0:
            return np.zeros((1,) * x.ndim, np.int64).reshape(())
        axis = None if dim is None else dim % x.ndim
        return np.asarray(fn(x, axis=axis, keepdims=keepdim), dtype=np.int64)
    return reference


def tf_arg_extreme(fn: Any) -> Any:
    """TF1's argmax/argmin: ``axis=None`` is dim 0."""
    def reference(x: np.ndarray, dim: Any = None, dimension: Any = None) -> np.ndarray:
        return arg_extreme(fn)(x, dim if dim is not None else dimension if dimension is not None else 0)
    return reference


def arg_args(data: Any, shapes: list[tuple[int, ...]]) -> dict:
    """A dim whose slices are not empty (None when the tensor is not), and keepdim."""
    shape = shapes[0]
    choices = ([None] if math.prod(shape) > 0 else []) + [d for d in range(-len(shape), len(shape)) if shape[d] > 0]
    if not shape:
        choices += [0, -1]
    assume(choices)
    return {"dim": data.draw(st.sampled_from(choices)), "keepdim": data.draw(st.booleans())}


def tf_arg_args(data: Any, kw: dict) -> dict:
    return {data.draw(st.sampled_from(["axis", "dimension"])): kw["dim"]}


def argsort(x: np.ndarray, dim: int = -1, descending: bool = False, stable: bool = False,
            direction: str = "ASCENDING") -> np.ndarray:
    """A stable sort's positions; NaN above every number (last ascending, first descending)."""
    if x.ndim == 0:
        return np.zeros((), np.int64)
    down = descending or direction == "DESCENDING"

    def order(line: np.ndarray) -> list[int]:
        key = (lambda i: (0 if np.isnan(line[i]) else 1, -line[i] if not np.isnan(line[i]) else 0.0)) if down \
            else (lambda i: (1 if np.isnan(line[i]) else 0, line[i] if not np.isnan(line[i]) else 0.0))
        return sorted(range(len(line)), key=key)

    moved = np.moveaxis(x, dim, -1)
    lines = moved.reshape(math.prod(moved.shape[:-1]), moved.shape[-1])
    out = np.array([order(line) for line in lines], dtype=np.int64).reshape(moved.shape)
    return np.moveaxis(out, -1, dim)


def argsort_args(data: Any, shapes: list[tuple[int, ...]]) -> dict:
    kw: dict = {"dim": dim(data, len(shapes[0]))}
    if data.draw(st.booleans()):
        kw["descending"] = data.draw(st.booleans())
    if data.draw(st.booleans()):
        kw["stable"] = data.draw(st.booleans())
    return kw


def tf_argsort_args(data: Any, kw: dict) -> dict:
    out = {"axis": kw["dim"], "stable": kw.get("stable", False)}
    if kw.get("descending") or data.draw(st.booleans()):
        out["direction"] = "DESCENDING" if kw.get("descending") else "ASCENDING"
    return out


def count_nonzero(x: np.ndarray, dim: Any = None, keepdim: bool = False) -> np.ndarray:
    return np.asarray(np.count_nonzero(x, axis=axes(dim, x.ndim), keepdims=keepdim), dtype=np.int64)


def take_along_dim(x: np.ndarray, indices: Any, dim: Any = None) -> np.ndarray:
    index = np.asarray(indices.numpy(), dtype=np.int64)
    if dim is None:
        return x.reshape(-1)[index.reshape(-1)]
    if x.ndim == 0:
        return x.copy()
    axis = dim % x.ndim
    shape = [b if d == axis or a == 1 else a for d, (a, b) in enumerate(zip(x.shape, index.shape))]
    x_shape = list(shape)
    x_shape[axis] = x.shape[axis]
    zero = any(s == 0 for d, s in enumerate(shape) if d != axis)
    if zero:
        return np.zeros(shape, x.dtype)
    return np.take_along_axis(np.broadcast_to(x, x_shape), np.broadcast_to(index, shape), axis)


def take_along_args(data: Any, shapes: list[tuple[int, ...]]) -> dict:
    """Valid int64 indices: along ``dim`` any count (none when the input has no elements there),
    and in the other dims the input's size or 1 (broadcast), or any size where the input's is 1."""
    shape = shapes[0]
    if not shape and data.draw(st.booleans()):
        return {"indices": rustgrad.tensor(np.zeros((), np.int64)), "dim": data.draw(st.sampled_from([0, -1]))}
    if not shape or data.draw(st.booleans()):  # dim=None: the flattened input
        size = math.prod(shape)
        count = data.draw(st.integers(0, 4)) if size else 0
        index = data.draw(st.lists(st.integers(0, max(size - 1, 0)), min_size=count, max_size=count))
        index_shape = data.draw(st.sampled_from([(count,), (1, count)]))
        return {"indices": rustgrad.tensor(np.array(index, np.int64).reshape(index_shape)), "dim": None}
    d = data.draw(st.integers(-len(shape), len(shape) - 1))
    axis = d % len(shape)
    index_shape = []
    for k, size in enumerate(shape):
        if k == axis:
            index_shape.append(data.draw(st.integers(0, 3)) if size else 0)
        elif size == 1:
            index_shape.append(data.draw(st.integers(1, 2)))
        else:
            index_shape.append(data.draw(st.sampled_from([size, 1])))
    values = np.array(data.draw(st.lists(st.integers(0, max(shape[axis] - 1, 0)), min_size=math.prod(index_shape),
                                         max_size=math.prod(index_shape))), np.int64).reshape(index_shape)
    return {"indices": rustgrad.tensor(values), "dim": d}


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
    "argmax": TableReference(arg_extreme(np.argmax), arg_args, tf_arg_args, result_dtype=np.int64,
                             tf_numpy=tf_arg_extreme(np.argmax)),
    "argmin": TableReference(arg_extreme(np.argmin), arg_args, tf_arg_args, result_dtype=np.int64,
                             tf_numpy=tf_arg_extreme(np.argmin)),
    "argsort": TableReference(argsort, argsort_args, tf_argsort_args, result_dtype=np.int64),
    "count_nonzero": TableReference(count_nonzero, lambda data, shapes: {"dim": dims(data, len(shapes[0]), True)},
                                    lambda data, kw: {data.draw(st.sampled_from(["axis", "reduction_indices"])):
                                                      kw["dim"], data.draw(st.sampled_from(["keepdims", "keep_dims"])):
                                                      data.draw(st.booleans())},
                                    result_dtype=np.int64),
    "take_along_dim": TableReference(take_along_dim, take_along_args, lambda data, kw: dict(kw),
                                     integer_inputs=False),
    "all": TableReference(lambda x, dim=None, keepdim=False: np.all(x, axis=axes(dim, x.ndim), keepdims=keepdim),
                          reduce_args, reduce_kwargs, bool_inputs=True),
    "any": TableReference(lambda x, dim=None, keepdim=False: np.any(x, axis=axes(dim, x.ndim), keepdims=keepdim),
                          reduce_args, reduce_kwargs, bool_inputs=True),
}
