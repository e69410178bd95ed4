"""Variable scopes and ``tf.get_variable``, as TF1's.

A graph keeps a store of the variables ``get_variable`` made, by full name (``scope/name``).
``tf.variable_scope`` opens a variable scope (which prefixes those names and carries the
reuse flag and default initializer, regularizer and dtype) and a name scope (which prefixes
op names); the two may differ, as in TF1: entering ``variable_scope("a")`` twice opens the
name scopes ``a/`` and ``a_1/`` while both share the variables ``a/...``. The current
variable scope is the calling thread's, per graph.
"""

from __future__ import annotations

import contextlib
import enum
import inspect
import threading
from typing import Any, Callable, Optional

import numpy as np

from rustgrad.errors import ArgumentTypeError, FailedPreconditionError, InvalidArgumentError
from rustgrad.static._collections import GraphKeys, _graph_of
from rustgrad.static._dtypes import as_dtype, float32
from rustgrad.static._graph import Graph, Tensor, TensorShape, get_default_graph
from rustgrad.static._initializers import GlorotUniform, Zeros
from rustgrad.static._python_values import _default_constant_dtype
from rustgrad.static._variables import Variable


class _ReuseMode(enum.Enum):
    """How ``get_variable`` treats a name: TF1's ``AUTO_REUSE`` creates the variable or returns it."""

    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE


def no_regularizer(_: Any) -> None:
    """A regularizer that adds no loss (to turn off a scope's regularizer for one variable)."""
    return None


class VariableScope:
    """What ``get_variable`` uses in a scope: the name prefix, the reuse flag (False, True or
    ``AUTO_REUSE``), and default initializer, regularizer and dtype."""

    def __init__(self, reuse: Any, name: str = "", initializer: Any = None, regularizer: Any = None,
                 caching_device: Any = None, name_scope: str = "", dtype: Any = float32,
                 use_resource: Any = None) -> None:
        self._name = name
        self._reuse = reuse
        self._initializer = initializer
        self._regularizer = regularizer
        self._caching_device = caching_device
        self._name_scope = name_scope
        self._dtype = as_dtype(dtype)
        self._use_resource = use_resource

    @property
    def name(self) -> str:
        return self._name

    @property
    def original_name_scope(self) -> str:
        """The name scope opened with this variable scope the first time (``"a/"``)."""
        return self._name_scope

    @property
    def reuse(self) -> Any:
        return self._reuse

    @property
    def initializer(self) -> Any:
        return self._initializer

    @property
    def regularizer(self) -> Any:
        return self._regularizer

    @property
    def dtype(self) -> Any:
        return self._dtype

    @property
    def caching_device(self) -> Any:
        return self._caching_device

    @property
    def use_resource(self) -> Any:
        return self._use_resource

    def reuse_variables(self) -> None:
        """From now on ``get_variable`` in this scope returns existing variables."""
        self._reuse = True

    def set_initializer(self, initializer: Any) -> None:
        self._initializer = initializer

    def set_regularizer(self, regularizer: Any) -> None:
        self._regularizer = regularizer

    def set_dtype(self, dtype: Any) -> None:
        self._dtype = as_dtype(dtype)

    def set_caching_device(self, caching_device: Any) -> None:
        self._caching_device = caching_device

    def set_use_resource(self, use_resource: Any) -> None:
        self._use_resource = use_resource

    def get_collection(self, name: Any) -> list:
        """The items of the default graph's collection ``name`` under this scope."""
        return get_default_graph().get_collection(name, self._name + "/" if self._name else "")

    def global_variables(self) -> list:
        return self.get_collection(GraphKeys.GLOBAL_VARIABLES)

    def trainable_variables(self) -> list:
        return self.get_collection(GraphKeys.TRAINABLE_VARIABLES)

    def local_variables(self) -> list:
        return self.get_collection(GraphKeys.LOCAL_VARIABLES)

    def __repr__(self) -> str:
        return f"<rustgrad.static.VariableScope '{self._name}' reuse={self._reuse}>"


class _ScopeStore(threading.local):
    """A graph's current variable scope and how often each scope name was opened, per thread."""

    def __init__(self) -> None:
        self.current = VariableScope(False)
        self.counts: dict[str, int] = {}


_store_lock = threading.Lock()


def _scope_store(graph: Graph) -> _ScopeStore:
    with _store_lock:
        store = graph.__dict__.get("_variable_scope_store")
        if store is None:
            store = graph._variable_scope_store = _ScopeStore()
        return store


def _variable_store(graph: Graph) -> dict[str, Variable]:
    with _store_lock:
        return graph.__dict__.setdefault("_variable_store", {})


def get_variable_scope() -> VariableScope:
    """The current variable scope of the default graph (the root scope, named ``""``, outside any)."""
    return _scope_store(get_default_graph()).current


@contextlib.contextmanager
def _pure_variable_scope(graph: Graph, name_or_scope: Any, reuse: Any, initializer: Any, regularizer: Any,
                         dtype: Any, old_name_scope: Optional[str]) -> Any:
    """Makes the variable scope current (no name scope). A string extends the current scope's
    name and inherits its settings; a ``VariableScope`` is entered again under its own name."""
    store = _scope_store(graph)
    old = store.current
    if isinstance(name_or_scope, VariableScope):
        scope = VariableScope(reuse if reuse else name_or_scope.reuse, name_or_scope.name,
                              name_or_scope.initializer, name_or_scope.regularizer, name_or_scope.caching_device,
                              name_or_scope.original_name_scope, name_or_scope.dtype, name_or_scope.use_resource)
    else:
        name = f"{old.name}/{name_or_scope}" if old.name else name_or_scope
        scope = VariableScope(reuse or old.reuse, name, old.initializer, old.regularizer, old.caching_device,
                              name_or_scope if old_name_scope is None else old_name_scope, old.dtype,
                              old.use_resource)
    if initializer is not None:
        scope.set_initializer(initializer)
    if regularizer is not None:
        scope.set_regularizer(regularizer)
    if dtype is not None:
        scope.set_dtype(dtype)
    store.counts[scope.name] = store.counts.get(scope.name, 0) + 1
    saved_counts = dict(store.counts)
    store.current = scope
    try:
        yield scope
    finally:
        if store.current is not scope:
            raise FailedPreconditionError("Improper nesting of variable_scope.")
        if isinstance(name_or_scope, VariableScope):
            store.counts = saved_counts
        else:
            # The default names of sub-scopes start again when this scope is entered again.
            for key in store.counts:
                if key.startswith(scope.name + "/"):
                    store.counts[key] = 0
        store.current = old


def _unique_variable_scope(graph: Graph, prefix: str) -> str:
    """``prefix``, or ``prefix_1``, ``prefix_2``, ...: the first not opened yet in the current scope."""
    store = _scope_store(graph)
    parent = store.current.name
    name = f"{parent}/{prefix}" if parent else prefix
    if store.counts.get(name, 0) == 0:
        return prefix
    index = 1
    while store.counts.get(f"{name}_{index}", 0) > 0:
        index += 1
    return f"{prefix}_{index}"


class variable_scope:  # noqa: N801 - TF's name
    """``tf.variable_scope(name_or_scope, default_name=None, values=None, initializer=None,
    regularizer=None, caching_device=None, reuse=None, dtype=None, use_resource=None,
    auxiliary_name_scope=True)``, as TF1's: opens a variable scope and a name scope; yields the
    ``VariableScope``.

    ``reuse=True`` (inherited by sub-scopes) makes ``get_variable`` return existing variables,
    ``AUTO_REUSE`` creates or returns them. With ``name_or_scope=None``, ``default_name`` is
    made unique among the scopes opened in the current one (``dense``, ``dense_1``).
    ``caching_device`` and ``use_resource`` are accepted and change nothing (rustgrad has one
    CPU device and one kind of variable)."""

    def __init__(self, name_or_scope: Any, default_name: Optional[str] = None, values: Any = None,
                 initializer: Any = None, regularizer: Any = None, caching_device: Any = None,
                 reuse: Any = None, dtype: Any = None, use_resource: Any = None,
                 auxiliary_name_scope: bool = True) -> None:
        if default_name is None and name_or_scope is None:
            raise ArgumentTypeError("If default_name is None then name_or_scope is required")
        if name_or_scope is not None and not isinstance(name_or_scope, (VariableScope, str)):
            raise ArgumentTypeError("VariableScope: name_or_scope must be a string or VariableScope.")
        if reuse is False:
            reuse = None  # False means "inherit", as None, in TF1 since 1.1
        if not (reuse is True or reuse is None or reuse is AUTO_REUSE):
            raise InvalidArgumentError("The reuse parameter must be True or False or None.")
        if not isinstance(auxiliary_name_scope, bool):
            raise ArgumentTypeError(
                f"The auxiliary_name_scope must be `True` or `False`, while get {auxiliary_name_scope}"
            )
        self._name_or_scope = name_or_scope
        self._default_name = default_name
        self._graph = _graph_of(values) or get_default_graph()
        self._initializer, self._regularizer, self._dtype = initializer, regularizer, dtype
        self._caching_device = caching_device
        self._reuse = reuse
        self._auxiliary_name_scope = auxiliary_name_scope
        self._stack: Optional[contextlib.ExitStack] = None

    def __enter__(self) -> VariableScope:
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(self._graph.as_default())
            scope = self._enter(stack)
        except BaseException:
            stack.close()
            raise
        self._stack = stack
        return scope

    def _enter(self, stack: contextlib.ExitStack) -> VariableScope:
        graph = self._graph
        name_scope = None
        if not self._auxiliary_name_scope:
            current = graph.get_name_scope()
            name_scope = graph.name_scope(current + "/" if current else "")
        target = self._name_or_scope
        if target is None:
            if self._reuse:
                raise InvalidArgumentError("reuse=True cannot be used without a name_or_scope")
            entered = stack.enter_context(name_scope or graph.name_scope(self._default_name))
            target = _unique_variable_scope(graph, self._default_name)
            old_name_scope: Optional[str] = entered
        else:
            own_name = target if isinstance(target, str) else target.name.split("/")[-1]
            old_name_scope = None
            if own_name or name_scope is not None:
                entered = stack.enter_context(name_scope or graph.name_scope(own_name))
                old_name_scope = entered if isinstance(target, str) else target.original_name_scope
        pure = _pure_variable_scope(graph, target, self._reuse, self._initializer, self._regularizer, self._dtype,
                                    old_name_scope)
        scope = stack.enter_context(pure)
        if self._caching_device is not None:
            scope.set_caching_device(self._caching_device)
        return scope

    def __exit__(self, *exc: Any) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.__exit__(*exc)


def get_variable(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                 regularizer: Any = None, trainable: Optional[bool] = None, collections: Any = None,
                 caching_device: Any = None, validate_shape: bool = True, use_resource: Any = None) -> Variable:
    """The variable ``scope/name`` of the current variable scope, as TF1's ``tf.get_variable``.

    Outside a reusing scope it is created (an error if it exists): with ``initializer`` (an
    initializer, a callable of no arguments, or a value, which gives the shape), else the
    scope's, else ``glorot_uniform_initializer`` for floats and zeros for ints and bools; in
    ``collections`` (default GLOBAL_VARIABLES) and TRAINABLE_VARIABLES when ``trainable``;
    ``regularizer(variable)`` (or the scope's) goes into REGULARIZATION_LOSSES. In a
    ``reuse=True`` scope the existing variable is returned (an error if there is none), its
    shape and dtype checked against those given; ``AUTO_REUSE`` does either.
    ``caching_device``, ``validate_shape`` and ``use_resource`` are accepted and change nothing."""
    graph = get_default_graph()
    scope = _scope_store(graph).current
    full_name = f"{scope.name}/{name}" if scope.name else name
    if dtype is not None and initializer is not None and not callable(initializer):
        given = _value_dtype(initializer)
        if given != as_dtype(dtype):
            raise InvalidArgumentError(
                f"Initializer type '{given.name}' and explicit dtype '{as_dtype(dtype).name}' don't match."
            )
    # Variable names depend on the variable scope only, not on the name scope.
    with graph.name_scope(None):
        return _get_single_variable(
            graph, full_name, shape, as_dtype(scope.dtype if dtype is None else dtype),
            scope.initializer if initializer is None else initializer,
            scope.regularizer if regularizer is None else regularizer,
            scope.reuse, trainable, collections)


def get_local_variable(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                       regularizer: Any = None, trainable: bool = False, collections: Any = None,
                       caching_device: Any = None, validate_shape: bool = True,
                       use_resource: Any = None) -> Variable:
    """``get_variable`` into ``GraphKeys.LOCAL_VARIABLES`` (and ``collections``), not trainable."""
    return get_variable(name, shape, dtype, initializer, regularizer, False,
                        list(collections or []) + [GraphKeys.LOCAL_VARIABLES])


def _value_dtype(value: Any) -> Any:
    if isinstance(value, Tensor):
        return value.dtype
    return _default_constant_dtype(np.asarray(value), isinstance(value, (np.ndarray, np.generic)))


def _get_single_variable(graph: Graph, name: str, shape: Any, dtype: Any, initializer: Any, regularizer: Any,
                         reuse: Any, trainable: Optional[bool], collections: Any) -> Variable:
    from_value = initializer is not None and not callable(initializer)
    if shape is not None and from_value:
        raise InvalidArgumentError("If initializer is a constant, do not specify shape.")
    wanted = TensorShape(None if shape is None else _dims(shape))
    store = _variable_store(graph)
    if name in store:
        if reuse is False:
            raise InvalidArgumentError(
                f"Variable {name} already exists, disallowed. Did you mean to set reuse=True or "
                "reuse=tf.AUTO_REUSE in VarScope?"
            )
        found = store[name]
        if not _compatible(wanted, found.shape):
            raise InvalidArgumentError(
                f"Trying to share variable {name}, but specified shape {_shape_str(wanted)} and found shape "
                f"{_shape_str(found.shape)}."
            )
        if dtype != found.dtype:
            raise InvalidArgumentError(
                f"Trying to share variable {name}, but specified dtype {dtype.name} and found dtype "
                f"{found.dtype.name}."
            )
        return found
    if reuse is True:
        raise InvalidArgumentError(
            f"Variable {name} does not exist, or was not created with tf.get_variable(). Did you mean to set "
            "reuse=tf.AUTO_REUSE in VarScope?"
        )
    initial_value, variable_dtype = _initial_value(name, wanted, dtype, initializer, from_value)
    with graph._undo_on_failure():
        variable = Variable(initial_value, True if trainable is None else trainable, collections, name=name,
                            dtype=variable_dtype)
        if regularizer is not None:
            with graph.name_scope(f"{name}/Regularizer/"):
                loss = regularizer(variable)
            if loss is not None:
                graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    store[name] = variable
    return variable


def _initial_value(name: str, shape: TensorShape, dtype: Any, initializer: Any,
                   from_value: bool) -> tuple[Any, Any]:
    """What ``Variable`` is made from, and the dtype it is given (None: the value's own)."""
    if from_value:
        return initializer, None
    if initializer is None:
        if dtype.is_floating:
            initializer = GlorotUniform()
        elif dtype.is_integer or dtype.is_bool:
            initializer = Zeros()
        else:
            raise InvalidArgumentError(f"An initializer for variable {name} of {dtype.name} is required")
    if inspect.isclass(initializer):
        initializer = initializer()
    if shape.rank is not None and shape.is_fully_defined():
        dims = shape.as_list()
        if _takes("partition_info", initializer):
            return (lambda: initializer(dims, dtype=dtype, partition_info=None)), dtype
        return (lambda: initializer(dims, dtype=dtype)), dtype
    if _takes_no_arguments(initializer):
        return initializer, None
    raise InvalidArgumentError(
        "The initializer passed is not valid. It should be a callable with no arguments and the shape should "
        "not be provided or an instance of `tf.keras.initializers.*' and `shape` should be fully defined."
    )


def _takes(parameter: str, function: Callable) -> bool:
    try:
        return parameter in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def _takes_no_arguments(function: Callable) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters)


def _dims(shape: Any) -> list[Optional[int]]:
    dims = [shape] if isinstance(shape, int) else list(shape)
    if any(d is not None and (not hasattr(d, "__index__") or int(d) < 0) for d in dims):
        raise InvalidArgumentError(f"get_variable: shape must be a list of non-negative ints, got {shape!r}")
    return [None if d is None else int(d) for d in dims]


def _compatible(a: TensorShape, b: TensorShape) -> bool:
    if a.rank is None or b.rank is None:
        return True
    return a.rank == b.rank and all(x is None or y is None or x == y for x, y in zip(a, b))


def _shape_str(shape: TensorShape) -> str:
    """A shape as TF1 prints one: ``(3, 4)``, ``(?, 4)``, ``<unknown>``."""
    if shape.rank is None:
        return "<unknown>"
    dims = ["?" if d is None else str(d) for d in shape]
    return f"({dims[0]},)" if len(dims) == 1 else "(" + ", ".join(dims) + ")"
