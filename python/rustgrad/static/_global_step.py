"""TF1's global step: one int64 scalar variable named ``global_step`` per graph, not trainable,
counting training steps (``minimize(loss, global_step=step)`` adds 1 to it on each run).

As in TF1, ``create_global_step`` makes it with ``get_variable`` outside any name scope and puts it in
the ``GLOBAL_VARIABLES`` and ``GLOBAL_STEP`` collections, and ``get_global_step`` looks there first.
"""

from __future__ import annotations

from typing import Any, Optional

from rustgrad.errors import ArgumentTypeError, InvalidArgumentError
from rustgrad.static._dtypes import int64
from rustgrad.static._graph import Graph, Tensor, get_default_graph
from rustgrad.static._variables import Variable

__all__ = ["assert_global_step", "create_global_step", "get_global_step", "get_or_create_global_step"]


def get_global_step(graph: Optional[Graph] = None) -> Optional[Variable]:
    """The graph's global step: the one ``create_global_step`` made, else a variable named
    ``global_step`` made by hand (``tf.Variable(0, name="global_step", trainable=False)``), else None.
    Raises ``TypeError`` when that variable is not an integer scalar, as TF1."""
    step = _find(graph or get_default_graph())
    if step is not None:
        assert_global_step(step)
    return step


def create_global_step(graph: Optional[Graph] = None) -> Variable:
    """Creates the graph's global step: an int64 scalar variable ``global_step`` initialised to 0,
    not trainable. Raises ``ValueError`` if the graph already has one."""
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise InvalidArgumentError(
            'create_global_step: "global_step" already exists. Use tf.train.get_or_create_global_step() '
            "to share it"
        )
    from rustgrad.static._collections import GraphKeys
    from rustgrad.static._initializers import zeros_initializer
    from rustgrad.static._scopes import get_variable

    with graph.as_default(), graph.name_scope(None):
        step = get_variable(GraphKeys.GLOBAL_STEP, shape=[], dtype=int64, initializer=zeros_initializer(),
                            trainable=False, collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])
    return step


def get_or_create_global_step(graph: Optional[Graph] = None) -> Variable:
    """The graph's global step, created by ``create_global_step`` if it has none."""
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    return step if step is not None else create_global_step(graph)


def assert_global_step(global_step_tensor: Any) -> None:
    """Raises ``TypeError`` unless ``global_step_tensor`` is an integer scalar graph variable or tensor."""
    if not isinstance(global_step_tensor, Tensor):
        raise ArgumentTypeError(
            f"Existing \"global_step\" must be a Variable or Tensor: {global_step_tensor!r}"
        )
    if not global_step_tensor.dtype.is_integer:
        raise ArgumentTypeError(
            f"Existing \"global_step\" does not have integer type: {global_step_tensor.dtype.name}; "
            "make it with tf.train.get_or_create_global_step() (int64)"
        )
    if global_step_tensor.shape.rank != 0:
        raise ArgumentTypeError(
            f"Existing \"global_step\" is not a scalar: {global_step_tensor.shape}; "
            "make it with tf.train.get_or_create_global_step()"
        )


def _find(graph: Graph) -> Optional[Variable]:
    # TF1 looks in the GLOBAL_STEP collection first (more than one entry: none), then for the
    # variable named "global_step".
    from rustgrad.static._collections import GraphKeys

    steps = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(steps) == 1:
        return steps[0]
    if steps:
        return None
    variables = graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
    return next((v for v in variables if v.op.name == "global_step"), None)
