"""Graphs, symbolic tensors and operations.

Building is symbolic: every function here adds a node to a Rust graph, with its
shape and dtype inferred on the spot, and returns a ``Tensor`` naming that node.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator, Optional, Sequence, Union

import numpy as np

from rustgrad import _rustgrad
from rustgrad._creation import _NUMPY_DTYPES
from rustgrad._graph_value import GraphValue
from rustgrad._rustgrad import GraphCore, OpSpec
from rustgrad.errors import ArgumentTypeError, DTypeError, IndexOutOfRangeError, InvalidArgumentError, ShapeError
from rustgrad.static._collections import GraphNamesMixin
from rustgrad.static._dtypes import as_dtype, bool_, float32, float64
from rustgrad.static._generated_methods import TensorOps
from rustgrad.static._python_values import (
    _check_python_values,
    _converting,
    _default_constant_dtype,
    _number_as,
)
from rustgrad.static._tensor_shape import TensorShape


class Graph(GraphNamesMixin):
    """A dataflow graph: nodes with inferred shapes, variables, and their initializers; its
    collections and name scopes as TF1's (see ``static/_collections.py``)."""

    def __init__(self) -> None:
        self._core = GraphCore()
        # Collections by name (``tf.GraphKeys``); variables are in GLOBAL_VARIABLES and TRAINABLE_VARIABLES.
        self._collections: dict[Any, list[Any]] = {}
        # The graph-level random seed (``tf.set_random_seed``), as TF1's ``Graph.seed``.
        self.seed: Optional[int] = None

    @contextlib.contextmanager
    def as_default(self) -> Iterator[Graph]:
        _graph_stack.stack.append(self)
        try:
            yield self
        finally:
            _graph_stack.stack.pop()

    @contextlib.contextmanager
    def _undo_on_failure(self) -> Iterator[None]:
        """Removes every node and variable the block added if it raises. Meanwhile other
        threads that add to this graph wait until the block ends."""
        editing = False
        try:
            self._core.begin_edit()
            editing = True
            # Variables numbered from here on are this block's: another thread may still
            # append a variable it made just before the edit began to the lists below.
            first_new_variable = self._core.num_variables()
            yield
        except BaseException:
            if editing:
                self._core.end_edit(True)
                self._forget_variables_from(first_new_variable)
            raise
        self._core.end_edit(False)

    def get_operations(self) -> list[Operation]:
        return [Operation(self, i) for i in range(self._core.num_nodes())]

    def get_tensor_by_name(self, name: str) -> Tensor:
        op_name, _, index = name.partition(":")
        if index not in ("", "0"):
            raise InvalidArgumentError(f"The name '{name}' refers to a Tensor which does not exist.")
        return Tensor(self, self.get_operation_by_name(op_name)._id)

    def get_operation_by_name(self, name: str) -> Operation:
        for i in range(self._core.num_nodes()):
            if self._core.node_name(i) == name:
                return Operation(self, i)
        raise InvalidArgumentError(f"The name '{name}' refers to an Operation not in the graph.")

    def as_graph_element(self, obj: Any, allow_tensor: bool = True, allow_operation: bool = True) -> Any:
        """The Tensor (``"name:0"``) or Operation (``"name"``) a name refers to, or ``obj`` itself."""
        if isinstance(obj, str):
            return self.get_tensor_by_name(obj) if ":" in obj and allow_tensor else self.get_operation_by_name(obj)
        if (isinstance(obj, Tensor) and allow_tensor) or (isinstance(obj, Operation) and allow_operation):
            return obj
        raise ArgumentTypeError(f"Can not convert a {type(obj).__name__} into a Tensor or Operation.")

    def control_dependencies(self, control_inputs: Any) -> Any:
        """A block whose new ops run after ``control_inputs`` (see ``rustgrad.static._control``)."""
        from rustgrad.static._control import graph_control_dependencies

        return graph_control_dependencies(self, control_inputs)

    def _op(self, kind: str, args: tuple, inputs: Sequence[Tensor], name: Optional[str] = None) -> Tensor:
        ids = [self._own(t)._id for t in inputs]
        return Tensor(self, self._core.op(kind, args, ids, name))

    def _apply(self, spec: OpSpec, inputs: Sequence[Any], name: Optional[str] = None,
               args: tuple = ()) -> Tensor:
        """A node applying an op of the table (``rustgrad._rustgrad.ops``) to ``inputs``, with its other
        arguments. Inputs that are not graph tensors become constants: eager tensors keep their dtype;
        numbers and arrays take the first data tensor's dtype for data inputs, and are typed as TF1
        types constants for index and mask inputs. The op may take a cheaper form for a Python number
        given as data (``tf.pow(x, 2.0)`` is a scalar op)."""
        tensors = _converted_inputs(spec, inputs, self)
        ids = [self._own(t)._id for t in tensors]
        roles = _roles(spec, len(inputs))
        numbers = [t if _is_scalar(t) and role == "data" else None for t, role in zip(inputs, roles)]
        if any(n is not None for n in numbers):
            return Tensor(self, self._core.apply(spec, ids, name, args, numbers))
        return Tensor(self, self._core.apply(spec, ids, name, args))

    def _own(self, t: Tensor) -> Tensor:
        if t.graph is not self:
            raise InvalidArgumentError(
                f"Tensor {t.name} must be from the same graph as the other inputs of this op"
            )
        return t

    def _constant(self, value: Any, dtype: Any = None, name: Optional[str] = None) -> Tensor:
        """A constant node, typed as TF1 types one: a numpy array keeps its dtype, Python
        floats are float32, Python ints int32 (int64 when a value needs it), bools bool.
        With ``dtype``, Python values must fit it (``constant(2.5, dtype=int32)`` raises)."""
        from_numpy = isinstance(value, (np.ndarray, np.generic))
        if dtype is not None:
            target = as_dtype(dtype)
            if not from_numpy:
                _check_python_values(value, target)
            array = np.asarray(value, dtype=_NUMPY_DTYPES[target.name])
        else:
            array = np.asarray(value)
            array = array.astype(_NUMPY_DTYPES[_default_constant_dtype(array, from_numpy).name], copy=False)
        return Tensor(self, self._core.constant(np.asarray(array, order="C"), name))


def _tf_op_name(spec: OpSpec) -> str:
    """The TF1 function name of an op of the table (``equal`` for ``eq``), else its torch name."""
    return spec.tf[0].rpartition(".")[2].partition("(")[0] if spec.tf else spec.name


# TF1's names of the ops Python operators on graph tensors build, for errors.
_OPERATOR_NAMES = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "truediv",
                   "floor_divide": "floordiv", "remainder": "floormod"}

# TF1's truediv computes integers in a float dtype: float64 for int32 and int64, float32 for narrower ones.
_TRUEDIV_DTYPES = {"int64": float64, "int32": float64, "uint8": float32}


class _GraphStack(threading.local):
    def __init__(self) -> None:
        self.stack: list[Graph] = []


_graph_stack = _GraphStack()
_global_default_graph = Graph()


def get_default_graph() -> Graph:
    return _graph_stack.stack[-1] if _graph_stack.stack else _global_default_graph


def reset_default_graph() -> None:
    """Replaces the global default graph with a new, empty one."""
    global _global_default_graph
    if _graph_stack.stack:
        raise AssertionError("Do not use reset_default_graph() inside a `with graph.as_default()` block")
    _global_default_graph = Graph()


class Operation:
    """A node of the graph, as ``tensor.op`` shows it."""

    __slots__ = ("graph", "_id")

    def __init__(self, graph: Graph, node_id: int) -> None:
        self.graph = graph
        self._id = node_id

    @property
    def name(self) -> str:
        return self.graph._core.node_name(self._id)

    @property
    def type(self) -> str:
        return self.graph._core.node_type(self._id)

    @property
    def inputs(self) -> list[Tensor]:
        return [Tensor(self.graph, i) for i in self.graph._core.node_inputs(self._id)]

    @property
    def control_inputs(self) -> list[Operation]:
        """The operations this one runs after without reading their values."""
        return [Operation(self.graph, i) for i in self.graph._core.node_control_inputs(self._id)]

    @property
    def outputs(self) -> list[Tensor]:
        return [Tensor(self.graph, self._id)] if self.graph._core.node_has_value(self._id) else []

    def run(self, feed_dict: Optional[dict] = None, session: Any = None) -> None:
        from rustgrad.static._session import get_default_session

        (session or get_default_session()).run(self, feed_dict=feed_dict)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Operation) and other.graph is self.graph and other._id == self._id

    def __hash__(self) -> int:
        return hash((id(self.graph), self._id))

    def __repr__(self) -> str:
        return f"<rustgrad.static.Operation '{self.name}' type={self.type}>"


Scalar = Union[int, float]


def convert_to_tensor(value: Any, dtype: Any = None, graph: Optional[Graph] = None,
                      name: Optional[str] = None) -> Tensor:
    """``value`` as a graph tensor: graph tensors pass through; numbers, arrays and eager
    tensors (which must not require grad) become constants."""
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype != as_dtype(dtype):
            raise DTypeError(
                f"Tensor conversion requested dtype {as_dtype(dtype).name} for Tensor with dtype "
                f"{value.dtype.name}: {value.name}"
            )
        return value
    if isinstance(value, _rustgrad.Tensor):
        if value.requires_grad:
            raise ArgumentTypeError(
                "an eager tensor that requires grad cannot be used in a graph: it would become a constant "
                "that no gradient reaches. Pass tensor.detach(), or make it a rustgrad.static.Variable"
            )
        value = value.numpy()
    return (graph or get_default_graph())._constant(value, dtype, name)


def _apply(spec: OpSpec, inputs: Sequence[Any], name: Optional[str] = None, args: tuple = ()) -> Tensor:
    """The TF1 function of an op of the table: its inputs converted (see ``Graph._apply``), then one node."""
    first = next((t for t in inputs if isinstance(t, Tensor)), None)
    graph = first.graph if first is not None else get_default_graph()
    return graph._apply(spec, inputs, name, args)


def _converted_inputs(spec: OpSpec, inputs: Sequence[Any], graph: Graph) -> list[Tensor]:
    """An op's inputs as graph tensors. A data input that is not one takes the dtype of the
    first data input that is (or, when none is, the first data input is typed as TF1 types a
    constant, and the others take its dtype); an index or mask input that is not one becomes
    a constant typed as TF1 types it (int32 for Python ints) or a bool one."""
    roles = _roles(spec, len(inputs))
    data = [i for i, role in enumerate(roles) if role == "data"]
    out = list(inputs)
    anchor = next((out[i] for i in data if isinstance(out[i], Tensor)), None)
    if anchor is None and data:
        anchor = out[data[0]] = convert_to_tensor(out[data[0]], None, graph)
    for i, role in enumerate(roles):
        if isinstance(out[i], Tensor):
            continue
        with _converting(_tf_op_name(spec), spec.inputs[min(i, len(spec.inputs) - 1)][1]):
            if role == "data":
                own_dtype = isinstance(out[i], _rustgrad.Tensor)
                out[i] = convert_to_tensor(out[i], None if own_dtype else anchor.dtype, graph)
            else:
                out[i] = convert_to_tensor(out[i], bool_ if role == "mask" else None, graph)
    return out


def _roles(spec: OpSpec, count: int) -> list[str]:
    """The role of each of ``count`` inputs: a list op's one role repeats."""
    return list(spec.roles) * count if spec.inputs[0][2] else list(spec.roles)


def _renamed(op: str, name: str, value: Any, old_name: str, old_value: Any, default: Any) -> Any:
    """An argument TF1 also takes under a deprecated name (``reduction_indices`` for ``axis``)."""
    if old_value is None:
        return default if value is None else value
    if value is not None:
        raise InvalidArgumentError(f"{op}: cannot specify both '{name}' and '{old_name}'")
    return old_value


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, np.bool_)



def _check_mask_assignment(target: TensorShape, mask: TensorShape, value: TensorShape) -> None:
    """``t[mask] = v`` on a graph tensor is ``where(mask, v, t)``, which lines shapes up
    from the right: it is right only when the mask has t's whole shape and ``v``
    broadcasts to it without growing it. Dims unknown until the run are let through."""

    def same(a: Optional[int], b: Optional[int]) -> bool:
        return a is None or b is None or a == b

    if target.rank is not None and mask.rank is not None:
        if mask.rank != target.rank or not all(same(m, t) for m, t in zip(mask, target)):
            raise IndexOutOfRangeError(
                f"graph tensors support mask assignment only with a mask of the tensor's whole shape: "
                f"got a mask of shape {mask.as_list()} for a tensor of shape {target.as_list()}; "
                "broadcast the mask to the tensor's shape first"
            )
    if target.rank is not None and value.rank is not None:
        fits = value.rank <= target.rank and all(
            v == 1 or same(v, t) for v, t in zip(reversed(value.as_list()), reversed(target.as_list()))
        )
        if not fits:
            raise ShapeError(
                f"mask assignment: a value of shape {value.as_list()} does not broadcast to the "
                f"tensor's shape {target.as_list()}"
            )

class Tensor(TensorOps, GraphValue):
    """A symbolic value in a graph: the output of one node.

    Tensors compare by identity (``==`` is not elementwise, as in TF1) so they can
    be feed_dict keys; use ``rustgrad.static.equal`` for elementwise equality.
    """

    __slots__ = ("graph", "_id", "__weakref__")

    # numpy defers to our reflected operators (`array + tensor` builds a node).
    __array_ufunc__ = None

    def __init__(self, graph: Graph, node_id: int) -> None:
        self.graph = graph
        self._id = node_id

    # ----- description -----

    @property
    def name(self) -> str:
        return f"{self.graph._core.node_name(self._id)}:0"

    @property
    def dtype(self) -> Any:
        return self.graph._core.node_dtype(self._id)

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self.graph._core.node_shape(self._id))

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def op(self) -> Operation:
        return Operation(self.graph, self._id)

    @property
    def _static_graph(self) -> Graph:
        return self.graph

    @property
    def _version(self) -> int:
        # Graph values are never modified in place, so a saved tensor never goes stale.
        return 0

    def __repr__(self) -> str:
        shape = self.graph._core.node_shape_str(self._id)
        return f"<rustgrad.static.Tensor '{self.name}' shape={shape} dtype={self.dtype.name}>"

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        raise ArgumentTypeError(
            "Using a graph Tensor as a Python bool is not allowed: its value is only known when a "
            "Session runs it."
        )

    def eval(self, feed_dict: Optional[dict] = None, session: Any = None) -> Any:
        from rustgrad.static._session import get_default_session

        return (session or get_default_session()).run(self, feed_dict=feed_dict)

    # ----- arithmetic -----

    def _binary(self, other: Any, op: str, reflected: bool = False) -> Tensor:
        if op == "div" and self.dtype.name in _TRUEDIV_DTYPES:
            return _truediv_integers(self, other, reflected)
        if _is_scalar(other):
            scalar_op = {("sub", True): "rsub", ("div", True): "rdiv", ("pow", True): "rpow",
                         ("floor_divide", True): "rfloor_divide", ("remainder", True): "rremainder"}.get(
                (op, reflected), op)
            with _converting(_OPERATOR_NAMES.get(op, op), "x" if reflected else "y"):
                number = _number_as(self.dtype, other)
            return self.graph._op("scalar", (scalar_op, number), [self])
        if op == "pow":
            return self.graph._apply(_rustgrad.ops["pow"], [other, self] if reflected else [self, other])
        with _converting(_OPERATOR_NAMES.get(op, op), "x" if reflected else "y"):
            other = convert_to_tensor(other, self.dtype, self.graph)
        a, b = (other, self) if reflected else (self, other)
        return self.graph._op("binary", (op,), [a, b])

    def __add__(self, other: Any) -> Tensor:
        return self._binary(other, "add")

    def __radd__(self, other: Any) -> Tensor:
        return self._binary(other, "add", True)

    def __sub__(self, other: Any) -> Tensor:
        return self._binary(other, "sub")

    def __rsub__(self, other: Any) -> Tensor:
        return self._binary(other, "sub", True)

    def __mul__(self, other: Any) -> Tensor:
        return self._binary(other, "mul")

    def __rmul__(self, other: Any) -> Tensor:
        return self._binary(other, "mul", True)

    def __truediv__(self, other: Any) -> Tensor:
        return self._binary(other, "div")

    def __rtruediv__(self, other: Any) -> Tensor:
        return self._binary(other, "div", True)

    def __floordiv__(self, other: Any) -> Tensor:
        return self._binary(other, "floor_divide")

    def __rfloordiv__(self, other: Any) -> Tensor:
        return self._binary(other, "floor_divide", True)

    def __mod__(self, other: Any) -> Tensor:
        return self._binary(other, "remainder")

    def __rmod__(self, other: Any) -> Tensor:
        return self._binary(other, "remainder", True)

    def __pow__(self, other: Any) -> Tensor:
        return self._binary(other, "pow")

    def __rpow__(self, other: Any) -> Tensor:
        return self._binary(other, "pow", True)

    def __matmul__(self, other: Any) -> Tensor:
        return self.graph._op("matmul", (False, False), [self, convert_to_tensor(other, self.dtype, self.graph)])

    def __rmatmul__(self, other: Any) -> Tensor:
        return self.graph._op("matmul", (False, False), [convert_to_tensor(other, self.dtype, self.graph), self])

    def __neg__(self) -> Tensor:
        return self.neg()

    def __abs__(self) -> Tensor:
        return self.abs()

    def _compare(self, other: Any, op: str) -> Tensor:
        return self.graph._op("compare", (op,), [self, convert_to_tensor(other, self.dtype, self.graph)])

    def __lt__(self, other: Any) -> Tensor:
        return self._compare(other, "lt")

    def __le__(self, other: Any) -> Tensor:
        return self._compare(other, "le")

    def __gt__(self, other: Any) -> Tensor:
        return self._compare(other, "gt")

    def __ge__(self, other: Any) -> Tensor:
        return self._compare(other, "ge")

    # ----- indexing -----

    def __getitem__(self, key: Any) -> Tensor:
        # The key is parsed by the same code as eager keys: core index items, a bool mask, or
        # items with index tensors (advanced indexing).
        parsed = _rustgrad._parse_index_key(key)
        if isinstance(parsed, _rustgrad.IndexItems):
            return self.graph._op("index", (parsed,), [self])
        if isinstance(parsed, tuple):
            items, indices = parsed
            return self.graph._op("advanced_index", (items,), [self, *self._index_tensors(indices)])
        return self.graph._op("masked_select", (), [self, convert_to_tensor(parsed, bool_, self.graph)])

    def _index_tensors(self, indices: list) -> list[Tensor]:
        """The index tensors of a key as graph tensors: eager ones become constants of their dtype."""
        return [t if isinstance(t, Tensor) else self.graph._constant(t.numpy()) for t in indices]

    def __setitem__(self, key: Any, value: Any) -> None:
        """Graph tensors are immutable; ``t[key] = v`` rebinds ``t`` to a new node: ``t`` with
        ``v`` written where the key says (``where(mask, v, t)`` for a bool mask).

        This lets PyTorch-style code (``grad[x < 0] = 0``, ``out[:, idx] = v``) build graphs.
        """
        parsed = _rustgrad._parse_index_key(key)
        value_t = convert_to_tensor(value, self.dtype, self.graph)
        if isinstance(parsed, (_rustgrad.IndexItems, tuple)):
            items, indices = (parsed, []) if isinstance(parsed, _rustgrad.IndexItems) else parsed
            replaced = self.graph._op("index_put", (items,), [self, value_t, *self._index_tensors(indices)])
        else:
            mask = convert_to_tensor(parsed, bool_, self.graph)
            _check_mask_assignment(self.shape, mask.shape, value_t.shape)
            replaced = self.graph._op("where", (), [mask, value_t, self])
        self._id = replaced._id

    # ----- PyTorch-style methods, so custom Functions run on graph tensors -----

    def clone(self) -> Tensor:
        return self.graph._op("identity", (), [self])

    def detach(self) -> Tensor:
        return Tensor(self.graph, self._id)

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:
        """As torch's: numbers (or None) are one fused op; a tensor bound is ``clamp_min``
        then ``clamp_max`` (max wins where min > max)."""
        if not isinstance(min, (Tensor, _rustgrad.Tensor)) and not isinstance(max, (Tensor, _rustgrad.Tensor)):
            return self.graph._op("clamp", (min, max), [self])
        out = self if min is None else self.clamp_min(min)
        return out if max is None else out.clamp_max(max)

    clip = clamp

    def mm(self, other: Tensor) -> Tensor:
        return self @ other

    def matmul(self, other: Tensor) -> Tensor:
        return self @ other

    def t(self) -> Tensor:
        return self.graph._op("transpose", (0, 1), [self])

    @property
    def T(self) -> Tensor:
        """The dims reversed (a matrix transposed), as torch's ``Tensor.T``."""
        return self.graph._apply(_rustgrad.ops["permute"], [self], None, (None,))

    @property
    def mT(self) -> Tensor:
        """The matrices in the last two dims transposed (``transpose(-2, -1)``)."""
        return self.graph._op("transpose", (-2, -1), [self])

    def sum(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return self.graph._op("sum", (_axes(dim), keepdim), [self])

    def mean(self, dim: Any = None, keepdim: bool = False) -> Tensor:
        return self.graph._op("mean", (_axes(dim), keepdim), [self])

    def reshape(self, *shape: Any) -> Tensor:
        dims = list(shape[0]) if len(shape) == 1 and isinstance(shape[0], (list, tuple)) else list(shape)
        return self.graph._op("reshape", ([int(d) for d in dims],), [self])


def _truediv_integers(x: Tensor, other: Any, reflected: bool, name: Optional[str] = None) -> Tensor:
    """``x / other`` for an integer ``x``: both converted to TF1's float dtype for it, then divided."""
    target = _TRUEDIV_DTYPES[x.dtype.name]
    y = convert_to_tensor(other, x.dtype, x.graph)
    fx, fy = (x.graph._op("cast", (target,), [t]) for t in (x, y))
    a, b = (fy, fx) if reflected else (fx, fy)
    return x.graph._op("binary", ("div",), [a, b], name or "truediv")


def _axes(axis: Any) -> Optional[list[int]]:
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        return [int(a) for a in axis]
    return [int(axis)]
