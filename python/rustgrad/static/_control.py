"""Ordering side effects, as TF1: ``control_dependencies``, ``group``, ``no_op`` and ``tuple``.

The ops made inside ``with tf.control_dependencies([a, b]):`` run after ``a`` and ``b``
whenever they run, so fetching one of them runs ``a`` and ``b`` too. A variable read by
such an op (``tf.identity(v)``, ``v * 2``) sees the value that an assign it runs after
stored; every other read in a run sees the variable's value from the start of the run.
Variables create their ops outside any ``control_dependencies`` block (TF's ``init_scope``).
"""

from __future__ import annotations

import builtins
import contextlib
from typing import Any, Iterable, Iterator, Optional

from rustgrad.errors import ArgumentTypeError, InvalidArgumentError
from rustgrad.static._graph import Graph, Operation, Tensor, convert_to_tensor, get_default_graph


def _control_node(graph: Graph, control: Any) -> int:
    """The node of one control input: an Operation or a Tensor (its op) of ``graph``, or its name."""
    if isinstance(control, str):
        control = graph.as_graph_element(control)
    if not isinstance(control, (Operation, Tensor)):
        raise ArgumentTypeError(f"Control input must be Operation or Tensor: {control!r}")
    if control.graph is not graph:
        raise InvalidArgumentError(
            f"control_dependencies: {control.name} is from another graph; "
            "control inputs must be from the graph the block adds ops to"
        )
    return control._id


@contextlib.contextmanager
def graph_control_dependencies(graph: Graph, control_inputs: Optional[Iterable[Any]]) -> Iterator[None]:
    """``Graph.control_dependencies``: ops that ``graph`` gets inside the block run after
    ``control_inputs``; ``None`` clears the blocks around it until it ends."""
    ids = None if control_inputs is None else [_control_node(graph, c) for c in control_inputs]
    graph._core.push_control_frame(ids)
    try:
        yield
    finally:
        graph._core.pop_control_frame()


def control_dependencies(control_inputs: Optional[Iterable[Any]]) -> Any:
    """``tf.control_dependencies``: the default graph's ``control_dependencies`` block."""
    return get_default_graph().control_dependencies(control_inputs)


def _flattened(items: Iterable[Any]) -> Iterator[Any]:
    for item in items:
        if isinstance(item, (list, builtins.tuple)):
            yield from _flattened(item)
        elif isinstance(item, dict):
            yield from _flattened(item.values())
        else:
            yield item


def group(*inputs: Any, name: Optional[str] = None) -> Operation:
    """An operation without a value that runs after all of ``inputs`` (tensors or
    operations, nested in lists, tuples or dicts), as TF1's ``group``."""
    members = list(_flattened(inputs))
    for member in members:
        if not isinstance(member, (Operation, Tensor)):
            raise ArgumentTypeError(
                f"Expected tf.group() expected Tensor arguments not '{member}' with type '{type(member)}'"
            )
    graph = members[0].graph if members else get_default_graph()
    ids = [_control_node(graph, m) for m in members]
    return Operation(graph, graph._core.group(ids, name or ("group_deps" if members else "NoOp")))


def no_op(name: Optional[str] = None) -> Operation:
    """An operation that does nothing (useful as a control input, or with control inputs of its own)."""
    return group(name=name)


def tuple(tensors: Iterable[Any], name: Optional[str] = None,  # noqa: A001 - TF's name
          control_inputs: Optional[Iterable[Any]] = None) -> list:
    """``tensors`` gated together, as TF1's ``tuple``: each result (an identity of a tensor, or a
    group for an operation; ``None`` stays ``None``) runs only after all of ``tensors`` and
    ``control_inputs`` have run."""
    items = [t if t is None or isinstance(t, (Operation, Tensor)) else convert_to_tensor(t) for t in tensors]
    present = [t for t in items if t is not None]
    graph = present[0].graph if present else get_default_graph()
    gating = [*present, *(control_inputs or [])]
    ids = sorted({_control_node(graph, c) for c in gating})
    if not ids:
        raise InvalidArgumentError(f"Must have at least one Tensor: {items}")
    with graph.name_scope(name or "tuple"):
        gate = Operation(graph, graph._core.group(ids, "group_deps"))
        return [_gated(graph, t, gate) for t in items]


def _gated(graph: Graph, item: Any, gate: Operation) -> Any:
    if item is None:
        return None
    with graph.control_dependencies([gate]):
        if isinstance(item, Operation):
            return group(item)
        with graph.name_scope("control_dependency") as scope:
            return graph._op("identity", (), [item], scope)
