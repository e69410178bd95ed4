"""References of the first ops with arguments: ``cumsum``, ``logsumexp`` and ``cat``."""

from __future__ import annotations

from typing import Any

import numpy as np
from _op_reference import TableReference, axes, dim, dims
from hypothesis import strategies as st
from test_property_ops import shapes


def cumsum(x: np.ndarray, dim: int, exclusive: bool = False, reverse: bool = False) -> np.ndarray:
    if x.ndim == 0:
        return x.copy() if not exclusive else np.zeros_like(x)
    y = np.flip(x, dim) if reverse else x
    out = np.cumsum(y, axis=dim, dtype=x.dtype)
    if exclusive and out.shape[dim]:  # each sum leaves its own element out: the inclusive sums shifted one along
        out = np.concatenate([np.zeros_like(np.take(out, [0], axis=dim)), np.delete(out, -1, axis=dim)], axis=dim)
    return np.flip(out, dim) if reverse else out


def logsumexp(x: np.ndarray, dim: Any, keepdim: bool = False) -> np.ndarray:
    axis = axes(dim, x.ndim)
    if x.size == 0:
        return np.full(np.sum(x, axis=axis, keepdims=keepdim).shape, -np.inf, x.dtype)
    return np.logaddexp.reduce(x, axis=axis, keepdims=keepdim)


def cat_shapes(data: Any) -> list[tuple[int, ...]]:
    """Two to four shapes equal except along one dim (drawn again by ``cat_args``)."""
    base = data.draw(shapes(min_dims=1, max_dims=4))
    along = data.draw(st.integers(0, len(base) - 1))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    return [base[:along] + (n,) + base[along + 1:] for n in sizes]


def cat_dim(data: Any, shapes: list[tuple[int, ...]]) -> int:
    """The one dim along which the shapes differ (any dim when they are all equal), maybe negative."""
    rank = len(shapes[0])
    differing = [d for d in range(rank) if len({s[d] for s in shapes}) > 1]
    d = differing[0] if differing else data.draw(st.integers(0, rank - 1))
    return d - rank if data.draw(st.booleans()) else d


REFERENCES = {
    "cumsum": TableReference(
        lambda x, dim, exclusive=False, reverse=False: cumsum(x, dim, exclusive, reverse),
        lambda data, shapes: {"dim": dim(data, len(shapes[0]))},
        lambda data, kw: {"axis": kw["dim"], "exclusive": data.draw(st.booleans()),
                          "reverse": data.draw(st.booleans())},
        float32_tolerance=1e-5,
    ),
    "logsumexp": TableReference(
        logsumexp,
        lambda data, shapes: {"dim": dims(data, len(shapes[0]), allow_none=False),
                              "keepdim": data.draw(st.booleans())},
        lambda data, kw: {data.draw(st.sampled_from(["axis", "reduction_indices"])): kw["dim"],
                          data.draw(st.sampled_from(["keepdims", "keep_dims"])): kw["keepdim"]},
        float32_tolerance=1e-5,
    ),
    "cat": TableReference(
        lambda *arrays, dim=0: np.concatenate(arrays, axis=dim),
        lambda data, shapes: {"dim": cat_dim(data, shapes)},
        lambda data, kw: {"axis": kw["dim"]},
        shapes=cat_shapes,
        integer_inputs=False,
    ),
}
