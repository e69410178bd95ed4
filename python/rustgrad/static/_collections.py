"""Graph collections (``tf.GraphKeys``, ``tf.add_to_collection``, ``tf.get_collection``) and
name scopes (``tf.name_scope``), as TF1's.

Op names and name-scope names share one namespace per graph (TF's ``Graph.unique_name``):
a second ``name_scope("a")`` opens ``a_1/``, and a ``MatMul`` made inside ``a`` is ``a/MatMul``.
The current name scope is the calling thread's, as in TF.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Iterable, Iterator, Optional, Union

from rustgrad.errors import ArgumentTypeError, InvalidArgumentError


class GraphKeys:
    """The standard collection names, as TF1's ``tf.GraphKeys``."""

    GLOBAL_VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    CONCATENATE_OPS = "concatenate_ops"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    SAVEABLE_OBJECTS = "saveable_objects"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    TRAIN_OP = "train_op"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"
    VARIABLES = GLOBAL_VARIABLES  # TF1's deprecated alias


# TF's rules for scope names: a root scope name may not start with '_', '-', '/' or '>'.
_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\-/>]*$")


class GraphNamesMixin:
    """The collections and name scopes of a ``Graph`` (mixed into ``rustgrad.static.Graph``)."""

    _core: Any
    _collections: dict

    # ----- collections -----

    def add_to_collection(self, name: Any, value: Any) -> None:
        """Appends ``value`` to the collection ``name``."""
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names: Union[str, Iterable[Any]], value: Any) -> None:
        """Adds ``value`` to each collection in ``names`` (a string is one name); once each."""
        for name in _collection_names(names):
            self.add_to_collection(name, value)

    def get_collection_ref(self, name: Any) -> list:
        """The collection ``name`` itself (created empty if missing): changing it changes the graph's."""
        return self._collections.setdefault(name, [])

    def get_collection(self, name: Any, scope: Optional[str] = None) -> list:
        """A copy of the collection ``name``; with ``scope``, only the items whose ``name``
        matches it from the start (``re.match``), items without a name left out, as TF1."""
        items = self._collections.get(name, [])
        if scope is None:
            return list(items)
        pattern = re.compile(scope)
        return [item for item in items if isinstance(getattr(item, "name", None), str) and pattern.match(item.name)]

    def get_all_collection_keys(self) -> list[str]:
        """The names of the graph's collections (those that are strings, as TF1)."""
        return [key for key in self._collections if isinstance(key, str)]

    def clear_collection(self, name: Any) -> None:
        self._collections.pop(name, None)

    # ----- names -----

    def get_name_scope(self) -> str:
        """The current name scope, without a trailing '/' (``""`` at the root)."""
        return self._core.name_scope()

    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """``name`` under the current name scope, made unique in the graph (``name_1``, ...) as
        TF1's: ops are named this way. ``mark_as_used=False`` only predicts the name."""
        return self._core.unique_name(str(name), bool(mark_as_used))

    @contextlib.contextmanager
    def name_scope(self, name: Optional[str]) -> Iterator[str]:
        """Opens the name scope ``name`` under the current one, made unique (``a``, ``a_1``);
        yields its full name with a trailing '/'. A name ending in '/' (a scope's full name,
        as yielded) is entered again as it is; ``None`` or ``""`` goes back to the root."""
        if name:
            if not isinstance(name, str):
                raise ArgumentTypeError(f"name_scope: the name must be a string, got {type(name).__name__}")
            valid = _VALID_SCOPE_NAME if self.get_name_scope() else _VALID_OP_NAME
            if not valid.match(name):
                raise InvalidArgumentError(f"'{name}' is not a valid scope name")
        old = self._core.name_scope()
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            new = self.unique_name(name)
        self._core.set_name_scope(new)
        try:
            yield new + "/" if new else ""
        finally:
            self._core.set_name_scope(old)

    def _forget_variables_from(self, first: int) -> None:
        """Drops the variables numbered ``first`` and up from the collections and the variable
        store: an undone edit removed them from the graph."""
        from rustgrad.static._variables import Variable

        def kept(item: Any) -> bool:
            return not (isinstance(item, Variable) and item._var >= first)

        for items in self._collections.values():
            items[:] = [item for item in items if kept(item)]
        store = getattr(self, "_variable_store", None)
        if store is not None:
            for name in [name for name, var in store.items() if not kept(var)]:
                del store[name]


def _collection_names(names: Union[str, Iterable[Any]]) -> list:
    if isinstance(names, str):
        return [names]
    unique: list = []
    for name in names:
        if name not in unique:
            unique.append(name)
    return unique


class name_scope:  # noqa: N801 - TF's name
    """``tf.name_scope(name, default_name=None, values=None)``: opens a name scope in the graph
    of ``values`` (else the default graph), as TF1's ``ops.name_scope``. ``name=None`` with
    ``default_name`` uses ``default_name`` (made unique); both None goes back to the root."""

    def __init__(self, name: Optional[str], default_name: Optional[str] = None, values: Any = None) -> None:
        self._name = default_name if name is None else name
        self._default_name = default_name
        self._values = values
        self._stack: Optional[contextlib.ExitStack] = None

    @property
    def name(self) -> Optional[str]:
        return self._name

    def __enter__(self) -> str:
        from rustgrad.static._graph import get_default_graph

        if self._name is None and self._values is not None:
            raise InvalidArgumentError(
                f"At least one of name ({self._name}) and default_name ({self._default_name}) must be provided."
            )
        graph = _graph_of(self._values) or get_default_graph()
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(graph.as_default())
            scope = stack.enter_context(graph.name_scope(self._name))
        except BaseException:
            stack.close()
            raise
        self._stack = stack
        return scope

    def __exit__(self, *exc: Any) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.__exit__(*exc)


def _graph_of(values: Any) -> Any:
    """The graph of the graph tensors among ``values`` (None when there are none); they must
    all be of one graph."""
    from rustgrad.static._graph import Tensor

    if values is None:
        return None
    graph = None
    for value in values if isinstance(values, (list, tuple)) else [values]:
        if isinstance(value, Tensor):
            if graph is not None and value.graph is not graph:
                raise InvalidArgumentError(f"{value.name} must be from the same graph as the other values")
            graph = value.graph
    return graph


def get_name_scope() -> str:
    """The default graph's current name scope (``""`` at the root)."""
    from rustgrad.static._graph import get_default_graph

    return get_default_graph().get_name_scope()


def _graph() -> Any:
    from rustgrad.static._graph import get_default_graph

    return get_default_graph()


def add_to_collection(name: Any, value: Any) -> None:
    """Adds ``value`` to the default graph's collection ``name``."""
    _graph().add_to_collection(name, value)


def add_to_collections(names: Union[str, Iterable[Any]], value: Any) -> None:
    """Adds ``value`` to each of the default graph's collections ``names``."""
    _graph().add_to_collections(names, value)


def get_collection(key: Any, scope: Optional[str] = None) -> list:
    """A copy of the default graph's collection ``key``, filtered by ``scope`` (see ``Graph.get_collection``)."""
    return _graph().get_collection(key, scope)


def get_collection_ref(key: Any) -> list:
    """The default graph's collection ``key`` itself."""
    return _graph().get_collection_ref(key)
