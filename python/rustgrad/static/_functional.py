"""TF1's higher-order functions over the first dim of tensors, built on ``while_loop``:
``map_fn``, ``scan``, ``foldl`` and ``foldr``. ``fn`` is traced once; the loop runs in Rust.

Results are stacked by the loop itself: it keeps each iteration's value and stacks them
once, after the last iteration (linear in the number of rows). Each row of a result must have
the same shape. Gradients flow through all four (``back_prop=False`` stops them, as in TF1).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from rustgrad.errors import ArgumentTypeError, InvalidArgumentError
from rustgrad.static import _nest as nest
from rustgrad.static._control_flow import _graph_of, while_loop
from rustgrad.static._dtypes import as_dtype, int32
from rustgrad.static._graph import Graph, Tensor, TensorShape, convert_to_tensor


def _ops() -> Any:
    from rustgrad.static import _generated_ops as g
    from rustgrad.static import _ops as o
    from rustgrad.static import _shapes as s

    return g, o, s


def _elements(graph: Graph, elems: Any, what: str) -> tuple[list[Tensor], Any]:
    flat = [graph._own(convert_to_tensor(e, graph=graph)) for e in nest.flatten(elems)]
    if not flat:
        raise InvalidArgumentError(f"{what}: elems must be a Tensor or (possibly nested) sequence of Tensors")
    for t in flat:
        if t.shape.rank == 0:
            raise InvalidArgumentError(
                f"{what}: elements in elems must be 1+ dimensional Tensors, not scalars: {t.name}")
    return flat, nest.pack_sequence_as(elems, flat)


def _length(flat: list[Tensor]) -> tuple[Tensor, Optional[int]]:
    """The number of rows (a 0-d int32 tensor) and, when known now, as an int."""
    _, _, s = _ops()
    first = flat[0]
    static = first.shape[0] if first.shape.rank else None
    if static is not None:
        return convert_to_tensor(static, int32, first.graph), static
    return s.shape(first)[0], None


def _rows(flat: list[Tensor], structure: Any, i: Tensor) -> Any:
    g, _, _ = _ops()
    return nest.pack_sequence_as(structure, [g.gather(t, i) for t in flat])


class _Stacker:
    """Keeps the values ``fn`` returns in each iteration: the loop stacks them natively (no
    copy per iteration) and ``stacked`` reads the stacks once the loop is built."""

    def __init__(self, graph: Graph, dtypes: list[Any]) -> None:
        self.graph = graph
        self.dtypes = dtypes
        self.values: list[Tensor] = []

    def keep(self, values: list[Tensor], what: str) -> None:
        _, o, _ = _ops()
        core = self.graph._core
        self.values = []
        for value, dtype in zip(values, self.dtypes):
            if value.dtype != dtype:
                raise InvalidArgumentError(
                    f"{what}: fn returned {value.name} of dtype {value.dtype.name} where {dtype.name} is expected; "
                    "pass dtype= with the structure of fn's output dtypes")
            if core.node_frame(value._id) != core.current_frame():
                value = o.identity(value)  # a tensor from outside the body: stacked as a body value
            self.values.append(value)

    def stacked(self, loop_output: Tensor) -> list[Tensor]:
        core = self.graph._core
        return [Tensor(self.graph, core.loop_stack(loop_output._id, v._id)) for v in self.values]


def map_fn(fn: Callable[[Any], Any], elems: Any, dtype: Any = None, parallel_iterations: Optional[int] = None,
           back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True,
           name: Optional[str] = None) -> Any:
    """TF1's ``tf.map_fn``: ``fn`` applied to each row of ``elems`` (a tensor or nested
    structure of tensors, unstacked along dim 0), the results stacked. ``dtype`` gives the
    structure of fn's output dtypes when it differs from ``elems``'."""
    if not callable(fn):
        raise ArgumentTypeError("fn must be callable.")
    graph = _graph_of(elems)
    with graph.name_scope(name or "map"):
        flat, structure = _elements(graph, elems, "map_fn")
        out_structure = structure if dtype is None else dtype
        dtypes = [t.dtype for t in flat] if dtype is None else [as_dtype(d) for d in nest.flatten(dtype)]
        n, _ = _length(flat)
        stacker = _Stacker(graph, dtypes)

        def body(i: Tensor) -> Tensor:
            result = fn(_rows(flat, structure, i))
            try:
                nest.assert_same_structure(out_structure, result, check_types=False)
            except (ValueError, TypeError) as e:
                raise InvalidArgumentError(f"map_fn: fn's output does not match the dtype structure: {e}") from None
            values = [v if isinstance(v, Tensor) else convert_to_tensor(v, d, graph)
                      for v, d in zip(nest.flatten(result), dtypes)]
            stacker.keep(values, "map_fn")
            return i + 1

        last = while_loop(lambda i: i < n, body, [convert_to_tensor(0, int32, graph)], back_prop=back_prop,
                          parallel_iterations=parallel_iterations or 10, swap_memory=swap_memory,
                          return_same_structure=True)[0]
        return nest.pack_sequence_as(out_structure, stacker.stacked(last))


def _fold(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any, reverse: bool, stack: bool, what: str,
          name: str, parallel_iterations: int, back_prop: bool) -> Any:
    if not callable(fn):
        raise ArgumentTypeError("fn must be callable.")
    graph = _graph_of(elems, initializer)
    with graph.name_scope(name):
        flat, structure = _elements(graph, elems, what)
        n, static_n = _length(flat)
        if initializer is None:
            if static_n == 0:
                raise InvalidArgumentError(f"{what}: elems is empty and there is no initializer; give an initializer")
            first = convert_to_tensor(static_n - 1 if reverse else 0, int32, graph) if static_n is not None else (
                n - 1 if reverse else convert_to_tensor(0, int32, graph))
            a0 = _rows(flat, structure, first)
            start = first - 1 if reverse else first + 1
        else:
            a0 = nest.map_structure(lambda v: convert_to_tensor(v, graph=graph), initializer)
            start = n - 1 if reverse else convert_to_tensor(0, int32, graph)
        a_flat = nest.flatten(a0)
        stacker = _Stacker(graph, [t.dtype for t in a_flat])

        def cond(i: Tensor, a: Any) -> Tensor:
            return i >= 0 if reverse else i < n

        def body(i: Tensor, a: Any) -> tuple:
            result = fn(a, _rows(flat, structure, i))
            try:
                nest.assert_same_structure(a, result, check_types=False)
            except (ValueError, TypeError) as e:
                raise InvalidArgumentError(f"{what}: fn must return the structure of the accumulator: {e}") from None
            values = [v if isinstance(v, Tensor) else convert_to_tensor(v, t.dtype, graph)
                      for v, t in zip(nest.flatten(result), nest.flatten(a))]
            if stack:
                stacker.keep(values, what)
            return (i - 1 if reverse else i + 1), nest.pack_sequence_as(a, values)

        invariants = (TensorShape([]), nest.map_structure(lambda t: t.shape, a0))
        last, a = while_loop(cond, body, (start, a0), shape_invariants=invariants, back_prop=back_prop,
                             parallel_iterations=parallel_iterations, return_same_structure=True)
        if not stack:
            return a
        g, _, _ = _ops()
        stacked = stacker.stacked(last)
        if initializer is None:
            stacked = [g.concat([g.expand_dims(first_row, 0), rows], 0) for first_row, rows in zip(a_flat, stacked)]
        if reverse:
            stacked = [g.reverse(t, [0]) for t in stacked]
        return nest.pack_sequence_as(a0, stacked)


def foldl(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: Optional[str] = None) -> Any:
    """TF1's ``tf.foldl``: ``a = fn(a, row)`` over the rows of ``elems`` from the first; ``a``
    starts as ``initializer``, or as the first row (which is then not passed to fn)."""
    return _fold(fn, elems, initializer, False, False, "foldl", name or "foldl", parallel_iterations, back_prop)


def foldr(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: Optional[str] = None) -> Any:
    """TF1's ``tf.foldr``: as ``foldl``, from the last row to the first."""
    return _fold(fn, elems, initializer, True, False, "foldr", name or "foldr", parallel_iterations, back_prop)


def scan(fn: Callable[[Any, Any], Any], elems: Any, initializer: Any = None, parallel_iterations: int = 10,
         back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True, reverse: bool = False,
         name: Optional[str] = None) -> Any:
    """TF1's ``tf.scan``: the successive values of ``a = fn(a, row)``, stacked (with ``reverse``,
    from the last row, stacked in the rows' order). Without ``initializer``, ``a`` starts as the
    first row, which is also the first output."""
    return _fold(fn, elems, initializer, reverse, True, "scan", name or "scan", parallel_iterations, back_prop)
