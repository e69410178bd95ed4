"""How the table's ops with arguments are tested: one ``TableReference`` per op.

Each family's references live in a ``tests/references_<family>.py`` module as a dict
``REFERENCES: {op name: TableReference}``; ``tests/test_op_table.py`` collects them all,
fails when an op of the table has none, and runs the same value, gradient and reach
tests over every one, on both fronts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from hypothesis import strategies as st
from test_property_ops import shapes


def one_shape(data: Any) -> list[tuple[int, ...]]:
    """One input of any shape (rank 0 to 6, sides 0 to 3)."""
    return [data.draw(shapes())]


@dataclass(frozen=True)
class TableReference:
    """How to test one op: draw its input shapes and torch's arguments, spell the arguments
    as TF1 does, and compute the expected value with numpy (in float64)."""

    # numpy(*arrays, **torch_kwargs) -> the expected value
    numpy: Callable[..., Any]
    # torch_args(data, input shapes) -> torch's keyword arguments
    torch_args: Callable[[Any, list[tuple[int, ...]]], dict]
    # tf_args(data, torch kwargs) -> TF1's keyword arguments for the same call
    tf_args: Callable[[Any, dict], dict]
    # shapes(data) -> the shapes of the inputs, which must fit together
    shapes: Callable[[Any], list[tuple[int, ...]]] = one_shape
    float32_tolerance: float = 2e-6
    # Gradients are checked with inputs in [-grad_bound, grad_bound].
    grad_bound: float = 2.0
    # Or with inputs drawn from this strategy: ops with kinks (|x|, max, sqrt at 0) need points
    # where finite differences do not straddle one, such as a grid of exactly representable values.
    grad_elements: Optional[st.SearchStrategy] = None
    # Whether the inputs may be drawn as integer arrays (single-input ops only).
    integer_inputs: bool = True
    # A rename of torch kwargs for the numpy reference, when numpy spells them differently.
    numpy_names: Optional[dict] = None
    # draw_inputs(data, input shapes) -> [(reference array, array given to rustgrad)] per input,
    # when the default draw (floats of one dtype, NaN and inf included) does not fit the op.
    draw_inputs: Optional[Callable[[Any, list[tuple[int, ...]]], list[tuple[Any, Any]]]] = None
    # grad_inputs(data, input shapes) -> float64 arrays where the op is smooth, for the
    # gradient check (default: uniform in [-grad_bound, grad_bound]).
    grad_inputs: Optional[Callable[[Any, list[tuple[int, ...]]], list[Any]]] = None
    # The result's numpy dtype when it is not the data inputs' (np.bool_ for comparisons,
    # int64 for indices and coordinates): compared exactly.
    result_dtype: Optional[Any] = None
    # Whether numpy computes the reference in float64 (then rounded); False: in the inputs' dtype,
    # for ops whose float32 result is defined by float32 arithmetic (isclose's tolerance test).
    reference_in_float64: bool = True
    # The numpy reference of the TF1 function (called with TF1's kwargs under torch's names,
    # see ``torch_spelling``), when TF1's semantics differ (``reduce_variance`` is the
    # population variance); None: ``numpy``.
    tf_numpy: Optional[Callable[..., Any]] = None
    # Whether the inputs are bool arrays (``reduce_all`` takes bool tensors only).
    bool_inputs: bool = False
    # indices(data, data input shapes, torch kwargs) -> {input position: integer or bool array}:
    # the op's index and mask inputs, drawn to fit the data inputs (which ``shapes`` then
    # gives alone). They are constants of the graph in static mode, and the numpy reference
    # gets them as they are.
    indices: Optional[Callable[[Any, list[tuple[int, ...]], dict], dict]] = None


TF_TO_TORCH = {"axis": "dim", "reduction_indices": "dim", "keepdims": "keepdim", "keep_dims": "keepdim"}


def torch_spelling(tf_kwargs: dict) -> dict:
    """TF1 keyword arguments under torch's names, for the numpy reference."""
    return {TF_TO_TORCH.get(k, k): v for k, v in tf_kwargs.items()}


def dim(data: Any, rank: int) -> int:
    """One dim of a tensor of this rank, possibly negative (0 or -1 for a 0-d tensor)."""
    return data.draw(st.integers(-max(rank, 1), max(rank, 1) - 1))


def dims(data: Any, rank: int, allow_none: bool) -> Any:
    """None (every dim, where allowed), one dim, or a tuple of distinct dims."""
    choices = [st.just(None)] if allow_none else []
    if rank:
        choices += [st.integers(-rank, rank - 1),
                    st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True).map(tuple)]
    else:
        choices += [st.sampled_from([0, -1])]
    return data.draw(st.one_of(*choices))


def axes(dims: Any, rank: int) -> Any:
    """numpy's ``axis`` for torch's ``dim``: None, or a tuple of non-negative dims."""
    if dims is None or rank == 0:
        return None
    return tuple(d % rank for d in ((dims,) if isinstance(dims, int) else dims))
