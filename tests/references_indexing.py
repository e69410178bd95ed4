"""References of the index ops: gather, scatter, scatter_add, index_select (TF1's gather),
index_add, take, masked_fill, argwhere, one_hot, boolean_mask, gather_nd and scatter_nd.

Each draws its index (or mask) inputs to fit the data inputs (``TableReference.indices``);
the numpy references write duplicates in row-major order, last one winning, as rustgrad does.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
from _op_reference import TableReference, dim
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_property_ops import shapes

import rustgrad

INDEX_DTYPES = st.sampled_from([np.int64, np.int32])


def _ints(data: Any, shape: tuple, lo: int, hi: int, dtype: Any = None) -> np.ndarray:
    """An integer array of ``shape`` with values in [lo, hi] (empty when hi < lo)."""
    dtype = data.draw(INDEX_DTYPES) if dtype is None else dtype
    if hi < lo:
        return np.zeros(shape, dtype)
    return data.draw(hnp.arrays(dtype, shape, elements=st.integers(lo, hi)))


def _along(dim: int, rank: int) -> int:
    return dim % rank


# ---------------------------------------------------------------- gather and scatter (one element per index)


def _elementwise_index_shape(data: Any, shape: tuple, axis: int, at_most: Optional[tuple] = None) -> tuple:
    """An index shape for gather/scatter: no larger than ``shape`` (and ``at_most``) off the axis;
    along it, at most the axis size when values must be distinct, else up to 3 (0 for an empty axis)."""
    limit = at_most or shape
    out = []
    for d, size in enumerate(shape):
        if d == axis:
            out.append(data.draw(st.integers(0, 3 if size else 0)) if at_most is None else
                       data.draw(st.integers(0, min(size, limit[d]))))
        else:
            out.append(data.draw(st.integers(0, min(size, limit[d]))))
    return tuple(out)


def gather_indices(data: Any, shapes_in: list, kw: dict) -> dict:
    shape = shapes_in[0]
    axis = _along(kw["dim"], len(shape))
    index_shape = _elementwise_index_shape(data, shape, axis)
    return {1: _ints(data, index_shape, 0, shape[axis] - 1)}


def gather(x: np.ndarray, index: np.ndarray, dim: int) -> np.ndarray:
    axis = dim % x.ndim
    cut = x[tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(index.shape))]
    return np.take_along_axis(cut, index.astype(np.int64), axis=axis)


def scatter_shapes(data: Any) -> list:
    """The input's shape and a source at least as large as the index will be."""
    shape = data.draw(shapes(min_dims=1, max_dims=4))
    src = tuple(data.draw(st.integers(0, 3)) for _ in shape)
    return [shape, src]


def scatter_indices(data: Any, shapes_in: list, kw: dict, distinct: bool = True) -> dict:
    """An index no larger than the input (off the axis) and the source; along the axis,
    distinct values per column when ``distinct`` (a written value's gradient is then defined)."""
    shape, src = shapes_in
    axis = _along(kw["dim"], len(shape))
    index_shape = _elementwise_index_shape(data, shape, axis, at_most=src)
    if not distinct:
        return {1: _ints(data, index_shape, 0, shape[axis] - 1)}
    keys = data.draw(hnp.arrays(np.float64, shape[:axis] + (shape[axis],) + shape[axis + 1:],
                                elements=st.floats(0, 1)))
    order = np.argsort(keys, axis=axis, kind="stable")
    cut = order[tuple(slice(0, n) for n in index_shape)]
    return {1: cut.astype(data.draw(INDEX_DTYPES))}


def scatter(x: np.ndarray, index: np.ndarray, src: np.ndarray, dim: int, reduce: Optional[str] = None,
            reduction: Optional[str] = None) -> np.ndarray:
    reduce = reduce or reduction
    out = x.copy()
    axis = dim % x.ndim
    for position in np.ndindex(index.shape):
        target = list(position)
        target[axis] = index[position]
        value = src if src.ndim == 0 else src[position]
        if reduce == "add":
            out[tuple(target)] += value
        elif reduce == "multiply":
            out[tuple(target)] *= value
        else:
            out[tuple(target)] = value
    return out


# ---------------------------------------------------------------- whole slices along a dim


def index_select_indices(data: Any, shapes_in: list, kw: dict) -> dict:
    shape = shapes_in[0]
    size = shape[_along(kw["dim"], len(shape))]
    length = data.draw(st.integers(0, 4 if size else 0))
    return {1: _ints(data, (length,), 0, size - 1)}


def index_select(x: np.ndarray, index: np.ndarray, dim: int, batch_dims: int = 0) -> np.ndarray:
    assert batch_dims == 0
    return np.take(x, index.astype(np.int64), axis=dim % x.ndim)


def index_add_shapes(data: Any) -> list:
    """The input's shape and the source's: the same but along one dim (drawn again by ``index_add_args``)."""
    shape = data.draw(shapes(min_dims=1, max_dims=4))
    along = data.draw(st.integers(0, len(shape) - 1))
    n = data.draw(st.integers(0, 4)) if shape[along] else 0
    return [shape, shape[:along] + (n,) + shape[along + 1:]]


def index_add_args(data: Any, shapes_in: list) -> dict:
    shape, source = shapes_in
    differing = [d for d in range(len(shape)) if shape[d] != source[d]]
    d = differing[0] if differing else data.draw(st.integers(0, len(shape) - 1))
    return {"dim": d - len(shape) if data.draw(st.booleans()) else d,
            "alpha": data.draw(st.sampled_from([1.0, 2.5, -1.0]))}


def index_add_indices(data: Any, shapes_in: list, kw: dict) -> dict:
    shape, source = shapes_in
    axis = _along(kw["dim"], len(shape))
    return {1: _ints(data, (source[axis],), 0, shape[axis] - 1)}


def index_add(x: np.ndarray, index: np.ndarray, source: np.ndarray, dim: int, alpha: float = 1.0) -> np.ndarray:
    out = x.copy()
    axis = dim % x.ndim
    for j, i in enumerate(index):
        where = (slice(None),) * axis + (int(i),)
        out[where] += alpha * np.take(source, j, axis=axis)
    return out


def take_indices(data: Any, shapes_in: list, kw: dict) -> dict:
    numel = int(np.prod(shapes_in[0]))
    shape = data.draw(shapes(max_dims=3) if numel else shapes(min_dims=1, max_dims=3, max_side=0))
    return {1: _ints(data, shape, -numel, numel - 1)}


# ---------------------------------------------------------------- masks


def broadcast_mask(data: Any, shapes_in: list, kw: dict) -> dict:
    """A bool mask that broadcasts to the input's shape: some trailing dims, some of them 1."""
    shape = shapes_in[0]
    kept = shape[len(shape) - data.draw(st.integers(0, len(shape))):]
    mask_shape = tuple(1 if data.draw(st.booleans()) else d for d in kept)
    return {1: data.draw(hnp.arrays(np.bool_, mask_shape))}


def masked_fill(x: np.ndarray, mask: np.ndarray, value: float) -> np.ndarray:
    return np.where(mask, value, x)


def boolean_mask_args(data: Any, shapes_in: list) -> dict:
    rank = len(shapes_in[0])
    return {"axis": data.draw(st.one_of(st.none(), st.integers(0, rank - 1)))}


def boolean_mask_indices(data: Any, shapes_in: list, kw: dict) -> dict:
    shape = shapes_in[0]
    axis = kw["axis"] or 0
    k = data.draw(st.integers(1, len(shape) - axis))
    return {1: data.draw(hnp.arrays(np.bool_, shape[axis:axis + k]))}


def boolean_mask(x: np.ndarray, mask: np.ndarray, axis: Optional[int] = None, dim: Optional[int] = None) -> np.ndarray:
    """``dim`` is TF's ``axis`` as the shared tests respell it."""
    return x[(slice(None),) * (axis or dim or 0) + (mask,)]


def one_hot_indices(data: Any, shapes_in: list, kw: dict) -> dict:
    return {0: _ints(data, data.draw(shapes(max_dims=3)), 0, kw["num_classes"] - 1, np.int64)}


def one_hot(index: np.ndarray, num_classes: int = -1, depth: Optional[int] = None, dtype: Any = None) -> np.ndarray:
    classes = depth if depth is not None else num_classes
    return (index[..., None] == np.arange(classes)).astype(np.int64)


# ---------------------------------------------------------------- coordinates (TF1's _nd ops)


def gather_nd_args(data: Any, shapes_in: list) -> dict:
    return {"batch_dims": data.draw(st.integers(0, len(shapes_in[0]) - 1))}


def gather_nd_indices(data: Any, shapes_in: list, kw: dict) -> dict:
    shape, batch = shapes_in[0], kw["batch_dims"]
    k = data.draw(st.integers(1, len(shape) - batch))
    covered = shape[batch:batch + k]
    outer = data.draw(shapes(max_dims=2)) if all(covered) else (0,)
    columns = [_ints(data, shape[:batch] + outer + (1,), 0, n - 1, np.int64) for n in covered]
    return {1: np.concatenate(columns, axis=-1).astype(data.draw(INDEX_DTYPES))}


def gather_nd(x: np.ndarray, index: np.ndarray, batch_dims: int = 0) -> np.ndarray:
    if batch_dims:
        return np.stack([gather_nd(x[b], index[b], batch_dims - 1) for b in range(x.shape[0])]) if x.shape[0] else \
            np.zeros(index.shape[:-1] + x.shape[batch_dims + index.shape[-1]:], x.dtype)
    k = index.shape[-1]
    rows = index.reshape(-1, k)
    picked = [x[tuple(row)] for row in rows]
    out_shape = index.shape[:-1] + x.shape[k:]
    return np.array(picked, dtype=x.dtype).reshape(out_shape) if picked else np.zeros(out_shape, x.dtype)


class _Shapes(list):
    """Input shapes that carry the target shape of a scatter_nd drawn with them."""

    target: tuple = ()


def scatter_nd_shapes(data: Any) -> list:
    target = data.draw(shapes(min_dims=1, max_dims=3, min_side=1))
    k = data.draw(st.integers(1, len(target)))
    outer = data.draw(shapes(max_dims=2))
    out = _Shapes([outer + target[k:]])
    out.target = target + (k,)  # the scatter's shape, then how many coordinates each index has
    return out


def scatter_nd_indices(data: Any, shapes_in: Any, kw: dict) -> dict:
    *target, k = shapes_in.target
    outer = shapes_in[0][:len(shapes_in[0]) - (len(target) - k)]
    columns = [_ints(data, tuple(outer) + (1,), 0, n - 1, np.int64) for n in target[:k]]
    return {0: np.concatenate(columns, axis=-1).astype(data.draw(INDEX_DTYPES))}


def scatter_nd(index: np.ndarray, updates: np.ndarray, shape: Any) -> np.ndarray:
    out = np.zeros(tuple(shape), updates.dtype)
    k = index.shape[-1]
    rows, values = index.reshape(-1, k), updates.reshape((-1,) + tuple(shape[k:]))
    for row, value in zip(rows, values):
        out[tuple(row)] += value
    return out


REFERENCES = {
    "gather": TableReference(
        gather,
        lambda data, shapes_in: {"dim": dim(data, len(shapes_in[0]))},
        lambda data, kw: {"axis": kw["dim"]},
        shapes=lambda data: [data.draw(shapes(min_dims=1, max_dims=4))],
        indices=gather_indices,
    ),
    "index_select": TableReference(
        index_select,
        lambda data, shapes_in: {"dim": dim(data, len(shapes_in[0]))},
        lambda data, kw: {"axis": kw["dim"]},
        shapes=lambda data: [data.draw(shapes(min_dims=1, max_dims=4))],
        indices=index_select_indices,
    ),
    "take": TableReference(
        lambda x, index: np.take(x.reshape(-1), index.astype(np.int64)),
        lambda data, shapes_in: {},
        lambda data, kw: {},
        indices=take_indices,
    ),
    "scatter": TableReference(
        scatter,
        lambda data, shapes_in: {"dim": dim(data, len(shapes_in[0])),
                                 "reduce": data.draw(st.sampled_from([None, "add"]))},
        lambda data, kw: {"axis": kw["dim"], "reduction": kw["reduce"]},
        shapes=scatter_shapes,
        indices=scatter_indices,
        float32_tolerance=1e-5,
    ),
    "scatter_add": TableReference(
        lambda x, index, src, dim: scatter(x, index, src, dim, "add"),
        lambda data, shapes_in: {"dim": dim(data, len(shapes_in[0]))},
        lambda data, kw: {"axis": kw["dim"]},
        shapes=scatter_shapes,
        indices=lambda data, shapes_in, kw: scatter_indices(data, shapes_in, kw, distinct=False),
        float32_tolerance=1e-5,
    ),
    "index_add": TableReference(
        index_add,
        index_add_args,
        lambda data, kw: {"axis": kw["dim"], "alpha": kw["alpha"]},
        shapes=index_add_shapes,
        indices=index_add_indices,
        float32_tolerance=1e-5,
    ),
    "masked_fill": TableReference(
        masked_fill,
        lambda data, shapes_in: {"value": data.draw(st.sampled_from([-2.5, 0.0, 3.0, 100.0]))},
        lambda data, kw: {"value": kw["value"]},
        indices=broadcast_mask,
    ),
    "argwhere": TableReference(
        np.argwhere,
        lambda data, shapes_in: {},
        lambda data, kw: {},
        result_dtype=np.int64,
    ),
    "one_hot": TableReference(
        one_hot,
        lambda data, shapes_in: {"num_classes": data.draw(st.integers(1, 4))},
        lambda data, kw: {"depth": kw["num_classes"], "dtype": rustgrad.int64},
        shapes=lambda data: [],
        indices=one_hot_indices,
        result_dtype=np.int64,
    ),
    "boolean_mask": TableReference(
        boolean_mask,
        boolean_mask_args,
        lambda data, kw: {"axis": kw["axis"]},
        shapes=lambda data: [data.draw(shapes(min_dims=1, max_dims=4))],
        indices=boolean_mask_indices,
    ),
    "gather_nd": TableReference(
        gather_nd,
        gather_nd_args,
        lambda data, kw: {"batch_dims": kw["batch_dims"]},
        shapes=lambda data: [data.draw(shapes(min_dims=1, max_dims=4))],
        indices=gather_nd_indices,
    ),
    "scatter_nd": TableReference(
        scatter_nd,
        lambda data, shapes_in: {"shape": list(shapes_in.target[:-1])},
        lambda data, kw: {"shape": kw["shape"]},
        shapes=scatter_nd_shapes,
        indices=scatter_nd_indices,
        float32_tolerance=1e-5,
    ),
}
