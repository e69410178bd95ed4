"""References of the shape ops: joining, reordering, reshaping, windows, padding and matrix structure.

Each reference takes torch's keyword arguments, and TF1's where the names differ (the shared tests
pass TF1's spelling to the reference, with ``axis`` renamed ``dim``).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
from _op_reference import TableReference, dim
from hypothesis import strategies as st
from test_property_ops import shapes


def one(min_dims: int = 0, max_dims: int = 5, max_side: int = 3) -> Any:
    return lambda data: [data.draw(shapes(min_dims=min_dims, max_dims=max_dims, max_side=max_side))]


def maybe_negative(data: Any, d: int, rank: int) -> int:
    return d - rank if data.draw(st.booleans()) else d


def distinct_dims(data: Any, rank: int, min_size: int = 0) -> tuple[int, ...]:
    picked = data.draw(st.lists(st.integers(0, max(rank - 1, 0)), min_size=min_size, max_size=rank, unique=True))
    return tuple(maybe_negative(data, d, rank) for d in picked) if rank else ()


# ---------------------------------------------------------------- joining


def stack_shapes(data: Any) -> list[tuple[int, ...]]:
    shape = data.draw(shapes(max_dims=4))
    return [shape] * data.draw(st.integers(1, 4))


# ---------------------------------------------------------------- reordering views


def permutation(data: Any, shapes_in: list) -> dict:
    rank = len(shapes_in[0])
    perm = data.draw(st.permutations(range(rank)))
    return {"dims": tuple(maybe_negative(data, p, rank) for p in perm)}


def permute(x: np.ndarray, dims: Any = None, perm: Any = None) -> np.ndarray:
    return np.transpose(x, dims if dims is not None else perm)


def movedim_args(data: Any, shapes_in: list) -> dict:
    rank = len(shapes_in[0])
    source = data.draw(st.lists(st.integers(0, rank - 1), max_size=rank, unique=True))
    destination = data.draw(st.lists(st.integers(0, rank - 1), min_size=len(source), max_size=len(source),
                                     unique=True))
    if len(source) == 1 and data.draw(st.booleans()):
        return {"source": source[0], "destination": destination[0] - rank}
    return {"source": tuple(source), "destination": tuple(destination)}


def swap_args(data: Any, shapes_in: list) -> dict:
    rank = len(shapes_in[0])
    return {"axis0": dim(data, rank), "axis1": dim(data, rank)}


# ---------------------------------------------------------------- expanding


def expansion(data: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A size for ``expand``: new leading dims, dims of 1 grown, others kept (or -1)."""
    lead = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    kept = tuple(data.draw(st.sampled_from([-1, n] if n != 1 else [-1, 0, 1, 2, 3])) for n in shape)
    return lead + kept


def resolved(size: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    lead = len(size) - len(shape)
    return tuple(shape[i - lead] if s == -1 else s for i, s in enumerate(size))


def expand(x: np.ndarray, size: Any = None, shape: Any = None) -> np.ndarray:
    return np.broadcast_to(x, resolved(tuple(size if size is not None else shape), x.shape)).copy()


def expand_as_shapes(data: Any) -> list[tuple[int, ...]]:
    base = data.draw(shapes(max_dims=3))
    return [base, resolved(expansion(data, base), base)]


def same_size_shapes(data: Any) -> list[tuple[int, ...]]:
    """Two shapes with as many elements."""
    sides = data.draw(st.lists(st.integers(0, 3), max_size=4))
    other = list(sides)
    data.draw(st.randoms()).shuffle(other)
    if data.draw(st.booleans()):
        other = [int(np.prod(other, dtype=int))]
    return [tuple(sides), tuple(other)]


# ---------------------------------------------------------------- squeezing


def squeeze_args(data: Any, shapes_in: list) -> dict:
    """None, or dims of size 1 (TF1 refuses to squeeze others; test_shape_ops covers torch's leniency)."""
    shape = shapes_in[0]
    ones = [d for d, n in enumerate(shape) if n == 1]
    if not ones or data.draw(st.booleans()):
        return {"dim": None}
    picked = data.draw(st.lists(st.sampled_from(ones), min_size=1, unique=True))
    dims = tuple(maybe_negative(data, d, len(shape)) for d in picked)
    return {"dim": dims[0] if len(dims) == 1 and data.draw(st.booleans()) else dims}


def squeeze(x: np.ndarray, dim: Any = None, squeeze_dims: Any = None) -> np.ndarray:
    dims = dim if dim is not None else squeeze_dims
    if x.ndim == 0:
        return x
    return np.squeeze(x, axis=dims)


def flatten_args(data: Any, shapes_in: list) -> dict:
    rank = max(len(shapes_in[0]), 1)
    start = data.draw(st.integers(0, rank - 1))
    end = data.draw(st.integers(start, rank - 1))
    if data.draw(st.booleans()):
        return {}
    return {"start_dim": maybe_negative(data, start, rank), "end_dim": maybe_negative(data, end, rank)}


def flatten(x: np.ndarray, start_dim: int = 0, end_dim: int = -1) -> np.ndarray:
    if x.ndim == 0:
        return x.reshape(1)
    s, e = start_dim % x.ndim, end_dim % x.ndim
    return x.reshape(x.shape[:s] + (int(np.prod(x.shape[s:e + 1])),) + x.shape[e + 1:])


def unflatten_args(data: Any, shapes_in: list) -> dict:
    shape = shapes_in[0]
    d = data.draw(st.integers(0, len(shape) - 1))
    n = shape[d]
    if n == 0:
        sizes = data.draw(st.sampled_from([(0,), (0, 2), (3, 0), (1, 0, 1)]))
    else:
        first = data.draw(st.sampled_from([k for k in range(1, n + 1) if n % k == 0]))
        sizes = (first, n // first)
        if data.draw(st.booleans()):
            sizes = (first, -1)
    return {"dim": maybe_negative(data, d, len(shape)), "sizes": sizes}


def unflatten(x: np.ndarray, dim: int, sizes: Any) -> np.ndarray:
    d = dim % x.ndim
    known = int(np.prod([s for s in sizes if s != -1]))
    sizes = tuple(x.shape[d] // known if s == -1 else s for s in sizes)
    return x.reshape(x.shape[:d] + sizes + x.shape[d + 1:])


# ---------------------------------------------------------------- windows


def narrow_args(data: Any, shapes_in: list) -> dict:
    shape = shapes_in[0]
    d = data.draw(st.integers(0, len(shape) - 1))
    n = shape[d]
    start = data.draw(st.integers(-n, n))
    first = start + n if start < 0 else start
    length = data.draw(st.integers(0, n - first))
    return {"dim": maybe_negative(data, d, len(shape)), "start": start, "length": length}


def narrow(x: np.ndarray, dim: int, start: int, length: int) -> np.ndarray:
    d = dim % x.ndim
    s = start + x.shape[d] if start < 0 else start
    return np.take(x, range(s, s + length), axis=d)


def select_shapes(data: Any) -> list[tuple[int, ...]]:
    return [data.draw(shapes(min_dims=1, max_dims=5, min_side=1))]


def select_args(data: Any, shapes_in: list) -> dict:
    shape = shapes_in[0]
    d = data.draw(st.integers(0, len(shape) - 1))
    return {"dim": maybe_negative(data, d, len(shape)), "index": data.draw(st.integers(-shape[d], shape[d] - 1))}


def plane_args(data: Any, shapes_in: list, offset: str = "offset") -> dict:
    rank = len(shapes_in[0])
    d1, d2 = data.draw(st.lists(st.integers(0, rank - 1), min_size=2, max_size=2, unique=True))
    return {offset: data.draw(st.integers(-4, 4)), "dim1": maybe_negative(data, d1, rank),
            "dim2": maybe_negative(data, d2, rank)}


def diag_embed_args(data: Any, shapes_in: list) -> dict:
    return plane_args(data, [shapes_in[0] + (1,)])


def diag_embed(x: np.ndarray, offset: int = 0, dim1: int = -2, dim2: int = -1) -> np.ndarray:
    rank = x.ndim + 1
    n = x.shape[-1]
    m = n + abs(offset)
    base = np.zeros(x.shape[:-1] + (m, m), dtype=x.dtype)
    for i in range(n):
        row, col = (i, i + offset) if offset >= 0 else (i - offset, i)
        base[..., row, col] = x[..., i]
    return np.moveaxis(base, [-2, -1], [dim1 % rank, dim2 % rank])


def diag(x: np.ndarray, diagonal: Optional[int] = None) -> np.ndarray:
    if diagonal is None:  # TF1's diag: rank k to rank 2k
        return np.diag(x.reshape(-1)).reshape(x.shape + x.shape)
    return np.diag(x, diagonal)


# ---------------------------------------------------------------- copies in a new order


def flip(x: np.ndarray, dims: Any = None, dim: Any = None) -> np.ndarray:
    return np.flip(x, tuple(np.atleast_1d(dims if dims is not None else dim).tolist())) if x.ndim else x


def roll_args(data: Any, shapes_in: list) -> dict:
    rank = len(shapes_in[0])
    dims = distinct_dims(data, rank, min_size=1)
    shifts = tuple(data.draw(st.integers(-7, 7)) for _ in dims)
    if len(dims) == 1 and data.draw(st.booleans()):
        return {"shifts": shifts[0], "dims": dims[0]}
    return {"shifts": shifts, "dims": dims}


def roll(x: np.ndarray, shifts: Any = None, dims: Any = None, shift: Any = None, dim: Any = None) -> np.ndarray:
    return np.roll(x, shifts if shifts is not None else shift, dims if dims is not None else dim)


def repeats(data: Any, rank: int, at_least: int) -> tuple[int, ...]:
    return tuple(data.draw(st.lists(st.integers(0, 3), min_size=at_least, max_size=max(at_least, rank) + 2)))


def tile(x: np.ndarray, dims: Any = None, multiples: Any = None, repeats: Any = None) -> np.ndarray:
    reps = next(r for r in (dims, multiples, repeats) if r is not None)
    return np.tile(x, reps)


# ---------------------------------------------------------------- padding

NUMPY_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap",
               "symmetric": "symmetric"}


def pad_args(data: Any, shapes_in: list) -> dict:
    """torch's flat ``pad`` over every dim (so TF1's pairs follow without knowing the rank)."""
    shape = shapes_in[0]
    mode = data.draw(st.sampled_from(list(NUMPY_MODES)))
    pairs = []
    for n in shape:
        if mode == "constant":
            pair = data.draw(st.tuples(st.integers(-n, 2), st.integers(-n, 2)).filter(lambda p, n=n: n + sum(p) >= 0))
        else:
            most = {"reflect": n - 1, "replicate": 2 if n else 0}.get(mode, n)
            pair = data.draw(st.tuples(st.integers(0, max(most, 0)), st.integers(0, max(most, 0))))
        pairs.append(pair)
    flat = tuple(v for pair in reversed(pairs) for v in pair)
    kwargs: dict = {"pad": flat, "mode": mode}
    if mode == "constant" and data.draw(st.booleans()):
        kwargs["value"] = data.draw(st.sampled_from([0.0, 1.5, -2.0]))
    return kwargs


def pad_tf_args(data: Any, kw: dict) -> dict:
    flat = kw["pad"]
    pairs = [[flat[i], flat[i + 1]] for i in range(0, len(flat), 2)][::-1]
    out = {"paddings": pairs, "mode": kw["mode"].upper() if data.draw(st.booleans()) else kw["mode"]}
    if "value" in kw:
        out["constant_values"] = kw["value"]
    return out


def pad(x: np.ndarray, pad: Any = None, mode: str = "constant", value: float = 0.0, paddings: Any = None,
        constant_values: float = 0.0) -> np.ndarray:
    if paddings is None:
        pairs = [tuple(pad[i:i + 2]) for i in range(0, len(pad), 2)][::-1]
        pairs = [(0, 0)] * (x.ndim - len(pairs)) + pairs
    else:
        pairs = [tuple(p) for p in paddings]
        value = constant_values
    if x.ndim == 0:
        return x.copy()
    # numpy pads but does not crop: negative padding (constant mode) crops first.
    crop = tuple(slice(max(-b, 0), n - max(-a, 0)) for (b, a), n in zip(pairs, x.shape))
    x = x[crop]
    grow = [(max(b, 0), max(a, 0)) for b, a in pairs]
    mode = NUMPY_MODES[mode.lower()]
    if mode == "constant":
        return np.pad(x, grow, mode="constant", constant_values=value)
    return np.pad(x, grow, mode=mode)


# ---------------------------------------------------------------- bands


def band(x: np.ndarray, lo: Optional[int], hi: Optional[int]) -> np.ndarray:
    rows, cols = x.shape[-2:]
    diff = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    keep = np.ones((rows, cols), dtype=bool)
    if lo is not None:
        keep &= diff >= lo
    if hi is not None:
        keep &= diff <= hi
    return np.where(keep, x, np.zeros((), dtype=x.dtype))


def band_args(data: Any, shapes_in: list) -> dict:
    return {"num_lower": data.draw(st.integers(-1, 3)), "num_upper": data.draw(st.integers(-1, 3))}


def band_part(x: np.ndarray, num_lower: int, num_upper: int) -> np.ndarray:
    return band(x, -num_lower if num_lower >= 0 else None, num_upper if num_upper >= 0 else None)


REFERENCES = {
    "stack": TableReference(
        lambda *arrays, dim=0: np.stack(arrays, axis=dim),
        lambda data, shapes_in: {"dim": data.draw(st.integers(-len(shapes_in[0]) - 1, len(shapes_in[0])))},
        lambda data, kw: {"axis": kw["dim"]},
        shapes=stack_shapes,
        integer_inputs=False,
    ),
    "permute": TableReference(
        permute, permutation,
        lambda data, kw: {"perm": kw["dims"]} if data.draw(st.booleans()) else {},
    ),
    "movedim": TableReference(np.moveaxis, movedim_args, lambda data, kw: dict(kw), shapes=one(1)),
    "swapaxes": TableReference(
        lambda x, axis0, axis1: np.swapaxes(x, axis0, axis1), swap_args, lambda data, kw: dict(kw), shapes=one(1),
    ),
    "expand": TableReference(
        expand,
        lambda data, shapes_in: {"size": expansion(data, shapes_in[0])},
        lambda data, kw: {"shape": kw["size"]},
        shapes=one(max_dims=3),
    ),
    "expand_as": TableReference(
        lambda x, other: np.broadcast_to(x, other.shape).copy(),
        lambda data, shapes_in: {}, lambda data, kw: {},
        shapes=expand_as_shapes, integer_inputs=False,
    ),
    "squeeze": TableReference(
        squeeze, squeeze_args,
        lambda data, kw: {data.draw(st.sampled_from(["axis", "squeeze_dims"])): kw["dim"]},
    ),
    "unsqueeze": TableReference(
        lambda x, dim: np.expand_dims(x, dim),
        lambda data, shapes_in: {"dim": data.draw(st.integers(-len(shapes_in[0]) - 1, len(shapes_in[0])))},
        lambda data, kw: {data.draw(st.sampled_from(["axis", "dim"])): kw["dim"]},
    ),
    "flatten": TableReference(flatten, flatten_args, lambda data, kw: dict(kw)),
    "unflatten": TableReference(unflatten, unflatten_args, lambda data, kw: dict(kw), shapes=one(1)),
    "view_as": TableReference(
        lambda x, other: x.reshape(other.shape), lambda data, shapes_in: {}, lambda data, kw: {},
        shapes=same_size_shapes, integer_inputs=False,
    ),
    "reshape_as": TableReference(
        lambda x, other: x.reshape(other.shape), lambda data, shapes_in: {}, lambda data, kw: {},
        shapes=same_size_shapes, integer_inputs=False,
    ),
    "narrow": TableReference(narrow, narrow_args, lambda data, kw: dict(kw), shapes=one(1)),
    "select": TableReference(
        lambda x, dim, index: np.take(x, index, axis=dim), select_args, lambda data, kw: dict(kw),
        shapes=select_shapes,
    ),
    "diagonal": TableReference(
        lambda x, offset=0, dim1=-2, dim2=-1: np.diagonal(x, offset, dim1, dim2).copy(),
        plane_args, lambda data, kw: {}, shapes=one(2),
    ),
    "flip": TableReference(
        flip, lambda data, shapes_in: {"dims": distinct_dims(data, len(shapes_in[0]))},
        lambda data, kw: {"axis": kw["dims"]},
    ),
    "fliplr": TableReference(np.fliplr, lambda data, shapes_in: {}, lambda data, kw: {}, shapes=one(2)),
    "flipud": TableReference(np.flipud, lambda data, shapes_in: {}, lambda data, kw: {}, shapes=one(1)),
    "roll": TableReference(
        roll, roll_args, lambda data, kw: {"shift": kw["shifts"], "axis": kw["dims"]}, shapes=one(1),
    ),
    "repeat": TableReference(
        tile, lambda data, shapes_in: {"repeats": repeats(data, len(shapes_in[0]), len(shapes_in[0]))},
        lambda data, kw: dict(kw), shapes=one(max_dims=3),
    ),
    "tile": TableReference(
        tile, lambda data, shapes_in: {"dims": repeats(data, len(shapes_in[0]), 0)},
        lambda data, kw: {"multiples": kw["dims"]}, shapes=one(max_dims=3),
    ),
    "pad": TableReference(pad, pad_args, pad_tf_args, shapes=one(max_dims=3)),
    "diag": TableReference(
        diag, lambda data, shapes_in: {"diagonal": data.draw(st.integers(-3, 3))}, lambda data, kw: {},
        shapes=one(1, 2),
    ),
    "diag_embed": TableReference(diag_embed, diag_embed_args, lambda data, kw: {}, shapes=one(1, 3)),
    # Matrices of side at most 2: a float32 sum of two float32 values is the float64 sum rounded.
    "trace": TableReference(np.trace, lambda data, shapes_in: {}, lambda data, kw: {},
                            shapes=lambda data: [data.draw(shapes(min_dims=2, max_dims=2, max_side=2))]),
    "tril": TableReference(
        lambda x, diagonal=0: np.tril(x, diagonal),
        lambda data, shapes_in: {"diagonal": data.draw(st.integers(-4, 4))}, lambda data, kw: dict(kw),
        shapes=one(2),
    ),
    "triu": TableReference(
        lambda x, diagonal=0: np.triu(x, diagonal),
        lambda data, shapes_in: {"diagonal": data.draw(st.integers(-4, 4))}, lambda data, kw: dict(kw),
        shapes=one(2),
    ),
    "band_part": TableReference(band_part, band_args, lambda data, kw: dict(kw), shapes=one(2)),
}
