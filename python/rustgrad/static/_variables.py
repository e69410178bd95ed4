"""Variables: graph state whose values live in each Session.

Within one ``Session.run`` a read of a variable sees its value from the start of
the run, and assignments are stored when the run ends; a read by an op made in a
``tf.control_dependencies`` block of an assign sees the value that assign stored.
(TF1 left the order of unordered reads and assigns in one run undefined.)
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from rustgrad.errors import ArgumentTypeError, ShapeError
from rustgrad.static._collections import GraphKeys
from rustgrad.static._dtypes import as_dtype
from rustgrad.static._graph import Graph, Operation, Tensor, convert_to_tensor, get_default_graph


class Variable(Tensor):
    """A graph variable. Used in ops, it reads the variable's value."""

    __slots__ = ("_var", "_initializer", "_initial_value", "_snapshot", "trainable")

    def __init__(self, initial_value: Any, trainable: Optional[bool] = None, collections: Any = None,
                 validate_shape: bool = True, caching_device: Any = None, name: Optional[str] = None,
                 dtype: Any = None) -> None:
        """As TF1's: the variable's ops are ``name`` (made unique, under the current name scope),
        ``name/initial_value`` (a Python or numpy initial value), ``name/Initializer/...`` (the ops
        a callable initial value makes), ``name/Assign`` and ``name/read`` (``value()``). It is added to ``collections``
        (default ``[GraphKeys.GLOBAL_VARIABLES]``) and, when trainable (the default), to
        ``GraphKeys.TRAINABLE_VARIABLES``. The initial value needs a fully known shape, whatever
        ``validate_shape`` says; ``caching_device`` changes nothing (rustgrad has one CPU device)."""
        trainable = True if trainable is None else bool(trainable)
        collections = _variable_collections(collections, trainable)
        graph = initial_value.graph if isinstance(initial_value, Tensor) else get_default_graph()
        # Outside any control_dependencies block, as TF's init_scope: the initializer must not wait for them.
        with graph.control_dependencies(None), graph.name_scope(name or "Variable") as scope:
            if callable(initial_value) and not isinstance(initial_value, (Tensor, np.ndarray)):
                with graph.name_scope("Initializer"):
                    initial_value = initial_value()
            init = initial_value if isinstance(initial_value, Tensor) else \
                convert_to_tensor(initial_value, dtype, graph, name="initial_value")
            if dtype is not None and init.dtype != as_dtype(dtype):
                init = graph._op("cast", (as_dtype(dtype),), [init])
            shape = init.shape
            if shape.rank is None or not shape.is_fully_defined():
                raise ShapeError(
                    f"Variable: the initial value must have a fully known shape, got {shape}; "
                    "give the initial value a complete shape"
                )
            var, read_node = graph._core.variable(init.dtype, list(shape), scope)
            super().__init__(graph, read_node)
            self._var = var
            self._initial_value = init
            self._initializer = Operation(graph, graph._core.assign(var, "set", init._id, "Assign"))
            self._snapshot = graph._op("identity", (), [self], "read")
        self.trainable = trainable
        graph.add_to_collections(collections, self)

    @property
    def initializer(self) -> Operation:
        return self._initializer

    @property
    def initial_value(self) -> Tensor:
        return self._initial_value

    def _assign(self, value: Any, mode: str, use_locking: bool, name: Optional[str]) -> Tensor:
        value = convert_to_tensor(value, self.dtype, self.graph)
        self.graph._own(value)
        return Tensor(self.graph, self.graph._core.assign(self._var, mode, value._id, name, bool(use_locking)))

    def assign(self, value: Any, use_locking: bool = False, name: Optional[str] = None,
               read_value: bool = True) -> Tensor:
        """A tensor whose value is ``value``; running it stores that value when the run ends.

        With ``use_locking=True``, runs that hold such an assign of this variable take
        the variable's lock from their start until their assignments are stored, so they
        update it one at a time and none is lost. Without it, concurrent runs each store
        their own result when they end, the last one winning."""
        return self._assign(value, "set", use_locking, name)

    def assign_add(self, delta: Any, use_locking: bool = False, name: Optional[str] = None,
                   read_value: bool = True) -> Tensor:
        """A tensor whose value is the variable plus ``delta``, stored when the run ends;
        ``use_locking`` as in ``assign``."""
        return self._assign(delta, "add", use_locking, name)

    def assign_sub(self, delta: Any, use_locking: bool = False, name: Optional[str] = None,
                   read_value: bool = True) -> Tensor:
        """A tensor whose value is the variable minus ``delta``, stored when the run ends;
        ``use_locking`` as in ``assign``."""
        return self._assign(delta, "sub", use_locking, name)

    def read_value(self) -> Tensor:
        """A new read of the variable, named ``read`` under the current name scope, as TF1's."""
        return self.graph._op("identity", (), [self], "read")

    def value(self) -> Tensor:
        """The variable's own read, ``name/read``."""
        return self._snapshot

    def initialized_value(self) -> Tensor:
        return self._initial_value

    def load(self, value: Any, session: Any = None) -> None:
        from rustgrad.static._session import get_default_session

        (session or get_default_session())._core.set_variable_value(
            self._var, np.asarray(value, dtype=np.dtype(self.dtype.name), order="C"))

    def __repr__(self) -> str:
        return (f"<rustgrad.static.Variable '{self.name}' shape={tuple(self.shape)} "
                f"dtype={self.dtype.name}>")


def _variable_collections(collections: Any, trainable: bool) -> list:
    if collections is None:
        collections = [GraphKeys.GLOBAL_VARIABLES]
    if not isinstance(collections, (list, tuple, set)):
        raise ArgumentTypeError(
            "collections argument to Variable constructor must be a list, tuple, or set. "
            f"Got {collections!r} of type {type(collections).__name__}"
        )
    collections = list(collections)
    if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
        collections.append(GraphKeys.TRAINABLE_VARIABLES)
    return collections


def _scope_and_graph(scope: Any, graph: Any) -> tuple[Optional[str], Any]:
    # A Graph as the first argument is this function's older form, ``global_variables(graph)``.
    if isinstance(scope, Graph):
        return None, scope
    return scope, graph or get_default_graph()


def global_variables(scope: Optional[str] = None, graph: Any = None) -> list[Variable]:
    """The graph's ``GraphKeys.GLOBAL_VARIABLES`` collection, filtered by ``scope`` as
    ``get_collection`` filters."""
    scope, graph = _scope_and_graph(scope, graph)
    return graph.get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def trainable_variables(scope: Optional[str] = None, graph: Any = None) -> list[Variable]:
    """The graph's ``GraphKeys.TRAINABLE_VARIABLES`` collection, filtered by ``scope``."""
    scope, graph = _scope_and_graph(scope, graph)
    return graph.get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope: Optional[str] = None) -> list[Variable]:
    """The default graph's ``GraphKeys.LOCAL_VARIABLES`` collection, filtered by ``scope``."""
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def model_variables(scope: Optional[str] = None) -> list[Variable]:
    """The default graph's ``GraphKeys.MODEL_VARIABLES`` collection, filtered by ``scope``."""
    return get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES, scope)


def assign(ref: Variable, value: Any, validate_shape: Any = None, use_locking: Any = None,
           name: Optional[str] = None) -> Tensor:
    """``ref.assign(value)``, as TF1's ``tf.assign``."""
    return _variable("assign", ref).assign(value, use_locking=bool(use_locking), name=name)


def assign_add(ref: Variable, value: Any, use_locking: Any = None, name: Optional[str] = None) -> Tensor:
    """``ref.assign_add(value)``, as TF1's ``tf.assign_add``."""
    return _variable("assign_add", ref).assign_add(value, use_locking=bool(use_locking), name=name)


def assign_sub(ref: Variable, value: Any, use_locking: Any = None, name: Optional[str] = None) -> Tensor:
    """``ref.assign_sub(value)``, as TF1's ``tf.assign_sub``."""
    return _variable("assign_sub", ref).assign_sub(value, use_locking=bool(use_locking), name=name)


def _variable(op: str, ref: Any) -> Variable:
    if not isinstance(ref, Variable):
        raise ArgumentTypeError(f"{op}: ref must be a Variable, got {type(ref).__name__}; only variables are assigned")
    return ref


def variables_initializer(var_list: Sequence[Variable], name: str = "init") -> Operation:
    graph = var_list[0].graph if var_list else get_default_graph()
    return Operation(graph, graph._core.group([v.initializer._id for v in var_list], name))


def global_variables_initializer() -> Operation:
    """An operation that runs every variable's initializer in the default graph."""
    return variables_initializer(global_variables(), name="init")


initialize_all_variables = global_variables_initializer
