"""References of the products: ``einsum``, ``tensordot``, ``outer``, ``dot``, ``mv``, ``addmm``,
``addmv`` and ``baddbmm``.

The shapes of an einsum or tensordot call depend on its equation or dims, which are drawn
with the shapes: ``shapes`` returns them as a ``Drawn`` list that also carries the
arguments, and ``torch_args`` hands those on.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from _op_reference import TableReference
from hypothesis import strategies as st
from test_property_ops import float_arrays, values


class Drawn(list):
    """Input shapes, with the torch keyword arguments drawn with them."""

    kwargs: dict


def drawn(shapes: list[tuple[int, ...]], **kwargs: Any) -> Drawn:
    out = Drawn(shapes)
    out.kwargs = kwargs
    return out


def small_floats(data: Any, shapes: list[tuple[int, ...]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Floats of one dtype in [-2, 2] with NaN, ±inf and -0.0, in any layout: sums of products
    stay far from float32's range, so a float32 result differs from the float64 reference by rounding only."""
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    elements = values(dtype, -2.0, 2.0, wide=False)
    return [data.draw(float_arrays(shape=s, dtype=dtype, elements=elements)) for s in shapes]


# Equations in the common forms: transposes, sums, trace and diagonal, outer, dot, matrix and
# batched products, contractions, repeated labels, implicit outputs, ellipses, three operands.
EQUATIONS = [
    "ij->ji", "ij->", "ij->j", "ii->", "ii->i", "ba", "iij->ji", "aA->Aa",
    "i,j->ij", "i,i->", "i,i", "ij,j->i", "ij,jk->ik", "ij,jk", "ij,kj", "ij,ij->ij", "ij,ij->",
    "bij,bjk->bik", "bij,bkj->bki", "bji,bjk->bik", "ab,cd->", "ab,cd->dbca", "iij,jk->ik", "aab,bc->ac",
    "ij,jk,kl->il", "i,ij,j->", "...ij,...jk->...ik", "...i,...i->...", "i...->...", "...ii->...i",
    "...,...->...", "b...i,bi->b...",
]


def einsum_shapes(data: Any) -> Drawn:
    """An equation and operand shapes that fit it: a size per letter, and an ellipsis shape that
    each operand takes a right-aligned part of, with some dims 1 (broadcast)."""
    equation = data.draw(st.sampled_from(EQUATIONS))
    lhs = equation.split("->")[0]
    letters = sorted({c for c in lhs if c.isalpha()})
    sizes = {c: data.draw(st.integers(0, 3)) for c in letters}
    ellipsis = data.draw(st.lists(st.integers(0, 3), max_size=2))
    shapes = []
    for term in lhs.split(","):
        head, dots, tail = term.partition("...")
        middle: list[int] = []
        if dots:
            own = ellipsis[data.draw(st.integers(0, len(ellipsis))):]
            middle = [1 if data.draw(st.booleans()) else n for n in own]
        shapes.append(tuple([sizes[c] for c in head] + middle + [sizes[c] for c in tail]))
    return drawn(shapes, equation=equation)


def tensordot_shapes(data: Any) -> Drawn:
    """Two shapes and dims that pair some of their dims: a count, or two lists."""
    rank_a, rank_b = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))
    a = [data.draw(st.integers(0, 3)) for _ in range(rank_a)]
    b = [data.draw(st.integers(0, 3)) for _ in range(rank_b)]
    n = data.draw(st.integers(0, min(rank_a, rank_b)))
    if data.draw(st.booleans()):
        b[:n] = a[rank_a - n:]
        return drawn([tuple(a), tuple(b)], dims=n)
    dims_a = data.draw(st.permutations(range(rank_a)))[:n]
    dims_b = data.draw(st.permutations(range(rank_b)))[:n]
    for p, q in zip(dims_a, dims_b):
        b[q] = a[p]
    negative = data.draw(st.booleans())
    dims = ([p - rank_a if negative else p for p in dims_a], list(dims_b))
    return drawn([tuple(a), tuple(b)], dims=dims)


def einsum_left_to_right(equation: str, *arrays: np.ndarray) -> np.ndarray:
    """np.einsum, contracting pairwise from the left as torch does: with three operands, an empty
    contraction of the first two gives zeros, and zeros times a NaN in the third give NaN (numpy's
    one-pass sum over an empty range gives 0)."""
    if len(arrays) <= 2 or "..." in equation:
        return np.einsum(equation, *arrays)
    terms, output = equation.split("->")[0].split(","), equation.split("->")[1] if "->" in equation else None
    if output is None:
        letters = "".join(terms)
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    later = set("".join(terms[2:]) + output)
    kept = "".join(dict.fromkeys(c for c in terms[0] + terms[1] if c in later))
    first = np.einsum(f"{terms[0]},{terms[1]}->{kept}", arrays[0], arrays[1])
    return einsum_left_to_right(",".join([kept, *terms[2:]]) + "->" + output, first, *arrays[2:])


def tensordot(a: np.ndarray, b: np.ndarray, dims: Any = 2) -> np.ndarray:
    """numpy's tensordot through einsum: np.tensordot's BLAS path gives 0 for NaN * 0 in some shapes."""
    if isinstance(dims, int):
        dims = (list(range(a.ndim - dims, a.ndim)), list(range(dims)))
    pairs = {q % b.ndim: p % a.ndim for p, q in zip(*dims)}
    labels_a = list(range(a.ndim))
    labels_b = [pairs.get(j, a.ndim + j) for j in range(b.ndim)]
    out = [lab for lab in labels_a if lab not in pairs.values()] + [lab for lab in labels_b if lab >= a.ndim]
    return np.einsum(a, labels_a, b, labels_b, out)


def sized(*patterns: str) -> Any:
    """Shapes for a fixed product: each pattern's letters get one size each (``"ij", "j"``)."""

    def draw(data: Any) -> list[tuple[int, ...]]:
        sizes = {c: data.draw(st.integers(0, 3)) for c in sorted(set("".join(patterns)))}
        return [tuple(sizes[c] for c in p) for p in patterns]

    return draw


def with_input(*patterns: str) -> Any:
    """Shapes for ``beta * input + alpha * product``: the product's operands after an input that
    broadcasts to the product's shape (the letters of the first pattern, in order)."""
    operands = sized(*patterns[1:])

    def draw(data: Any) -> list[tuple[int, ...]]:
        shapes = operands(data)
        sizes = dict(zip("".join(patterns[1:]), [n for s in shapes for n in s]))
        full = [sizes[c] for c in patterns[0]]
        keep = data.draw(st.integers(0, len(full)))
        return [tuple(1 if data.draw(st.booleans()) else n for n in full[len(full) - keep:]), *shapes]

    return draw


def add_product(equation: str) -> Any:
    def reference(input: np.ndarray, *operands: np.ndarray, beta: float = 1, alpha: float = 1) -> np.ndarray:
        product = alpha * np.einsum(equation, *operands)
        return product if beta == 0 else product + beta * input  # beta 0 ignores the input, NaN and all

    return reference


def scales(data: Any, shapes: Any) -> dict:
    return {"beta": data.draw(st.sampled_from([1.0, 0.5, 0.0, -2.0])),
            "alpha": data.draw(st.sampled_from([1.0, 0.5, -2.0]))}


def same(data: Any, kw: dict) -> dict:
    return dict(kw)


def products(numpy: Any, shapes: Any, torch_args: Any = lambda data, shapes: {}, tf_args: Any = same) -> TableReference:
    return TableReference(numpy, torch_args, tf_args, shapes=shapes, draw_inputs=small_floats,
                          float32_tolerance=1e-4, integer_inputs=False)


REFERENCES = {
    "einsum": products(lambda *arrays, equation: einsum_left_to_right(equation, *arrays), einsum_shapes,
                       lambda data, shapes: dict(shapes.kwargs)),
    "tensordot": TableReference(
        tensordot, lambda data, shapes: dict(shapes.kwargs),
        lambda data, kw: {"axes": kw["dims"]}, shapes=tensordot_shapes, draw_inputs=small_floats,
        float32_tolerance=1e-4, integer_inputs=False, tf_numpy=lambda a, b, axes: tensordot(a, b, axes)),
    "outer": products(np.outer, sized("i", "j")),
    "dot": products(np.dot, sized("i", "i")),
    "mv": products(np.matmul, sized("ij", "j")),
    "addmm": products(add_product("ij,jk->ik"), with_input("ik", "ij", "jk"), scales),
    "addmv": products(add_product("ij,j->i"), with_input("i", "ij", "j"), scales),
    "baddbmm": products(add_product("bij,bjk->bik"), with_input("bik", "bij", "bjk"), scales),
}
