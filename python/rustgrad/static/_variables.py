"""Variables: graph state whose values live in each Session.

Within one ``Session.run`` every read of a variable sees its value from the
start of the run, and assignments take effect when the run ends. (TF1 left
the order of reads and assigns in one run undefined.)
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from rustgrad.errors import ShapeError
from rustgrad.static._graph import Operation, Tensor, as_dtype, convert_to_tensor, get_default_graph


class Variable(Tensor):
    """A graph variable. Used in ops, it reads the variable's value."""

    __slots__ = ("_var", "_initializer", "_initial_value", "trainable")

    def __init__(self, initial_value: Any, trainable: bool = True, name: Optional[str] = None,
                 dtype: Any = None) -> None:
        graph = initial_value.graph if isinstance(initial_value, Tensor) else get_default_graph()
        if callable(initial_value) and not isinstance(initial_value, (Tensor, np.ndarray)):
            initial_value = initial_value()
        init = convert_to_tensor(initial_value, dtype, graph) if not isinstance(initial_value, Tensor) \
            else initial_value
        if dtype is not None and init.dtype != as_dtype(dtype):
            init = graph._op("cast", (as_dtype(dtype),), [init])
        shape = init.shape
        if shape.rank is None or not shape.is_fully_defined():
            raise ShapeError(
                f"Variable: the initial value must have a fully known shape, got {shape}; "
                "give the initial value a complete shape"
            )
        var, read_node = graph._core.variable(init.dtype, list(shape), name)
        super().__init__(graph, read_node)
        self._var = var
        self._initial_value = init
        self._initializer = Operation(graph, graph._core.assign(var, "set", init._id,
                                                                 f"{self.op.name}/Assign"))
        self.trainable = trainable
        graph._variables.append(self)
        if trainable:
            graph._trainable.append(self)

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
        return self.graph._op("identity", (), [self], f"{self.op.name}/read")

    def value(self) -> Tensor:
        return self.read_value()

    def initialized_value(self) -> Tensor:
        return self._initial_value

    def load(self, value: Any, session: Any = None) -> None:
        from rustgrad.static._session import get_default_session

        (session or get_default_session())._core.set_variable_value(
            self._var, np.asarray(value, dtype=np.dtype(self.dtype.name), order="C"))

    def __repr__(self) -> str:
        return (f"<rustgrad.static.Variable '{self.name}' shape={tuple(self.shape)} "
                f"dtype={self.dtype.name}>")


def global_variables(graph: Any = None) -> list[Variable]:
    return list((graph or get_default_graph())._variables)


def trainable_variables(graph: Any = None) -> list[Variable]:
    return list((graph or get_default_graph())._trainable)


def variables_initializer(var_list: Sequence[Variable], name: str = "init") -> Operation:
    graph = var_list[0].graph if var_list else get_default_graph()
    return Operation(graph, graph._core.group([v.initializer._id for v in var_list], name))


def global_variables_initializer() -> Operation:
    """An operation that runs every variable's initializer in the default graph."""
    return variables_initializer(global_variables(), name="init")


initialize_all_variables = global_variables_initializer
