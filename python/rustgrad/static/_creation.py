"""TF1's ``range`` and ``fill``: constants when their arguments are numbers (so their shape
is known when the graph is built), nodes computed at run time when one is a graph tensor."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from rustgrad import _rustgrad
from rustgrad.errors import DTypeError, InvalidArgumentError
from rustgrad.static._dtypes import as_dtype
from rustgrad.static._graph import Tensor, convert_to_tensor, get_default_graph
from rustgrad.static._python_values import _check_python_values, _default_constant_dtype

# TF1 gives range the widest of its arguments' dtypes, in this order.
_RANGE_DTYPES = ("int32", "int64", "float32", "float64")


def _number_dtype(value: Any) -> Any:
    """The dtype TF1 gives a Python or numpy number (int32, int64 when it needs it, float32, ...)."""
    return _default_constant_dtype(np.asarray(value), isinstance(value, (np.ndarray, np.generic)))


def _widest(dtypes: list[Any]) -> Any:
    names = [d.name for d in dtypes]
    unknown = [n for n in names if n not in _RANGE_DTYPES]
    if unknown:
        raise DTypeError(f"range: arguments of dtype {unknown[0]} are not supported; use int32, int64, float32 "
                         "or float64")
    return as_dtype(max(names, key=_RANGE_DTYPES.index))


def range(start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None,  # noqa: A001 - TF's name
          name: Optional[str] = "range") -> Tensor:
    """``start, start + delta, ...`` up to ``limit`` (excluded); with one argument, ``0`` up to it.
    The dtype is ``dtype`` or the widest of the arguments' (int32 for Python ints), as TF1's."""
    if limit is None:
        start, limit = 0, start
    args = (start, limit, delta)
    if any(isinstance(a, Tensor) for a in args):
        return _range_node(args, dtype, name)
    if dtype is not None:
        target = as_dtype(dtype)
        for value in args:
            _check_python_values(value, target)
    else:
        target = _widest([_number_dtype(a) for a in args])
    values = _rustgrad._range_values(*(a.item() if isinstance(a, np.generic) else a for a in args), target)
    return get_default_graph()._constant(values.numpy(), target, name)


def _range_node(args: tuple[Any, Any, Any], dtype: Any, name: Optional[str]) -> Tensor:
    graph = next(a for a in args if isinstance(a, Tensor)).graph
    tensors = [convert_to_tensor(a, dtype, graph) for a in args]
    if dtype is None:
        widest = _widest([t.dtype for t in tensors])
        tensors = [t if t.dtype == widest else graph._op("cast", (widest,), [t]) for t in tensors]
    start, limit, delta = (graph._own(t)._id for t in tensors)
    return Tensor(graph, graph._core.range(start, limit, delta, name))


def fill(dims: Any, value: Any, name: Optional[str] = None) -> Tensor:
    """A tensor of shape ``dims`` (a list of ints or a 1-D int tensor) filled with ``value`` (a
    number or a 0-d tensor), of the value's dtype."""
    from rustgrad.static._shapes import is_shape_tensor

    if not is_shape_tensor(dims) and not isinstance(value, Tensor):
        shape = _dims(dims)
        value_tensor = convert_to_tensor(value)
        if value_tensor.shape.rank != 0:
            raise InvalidArgumentError(f"fill: value must be a scalar, got shape {value_tensor.shape}")
        array = np.full(shape, np.asarray(value, dtype=value_tensor.dtype.as_numpy_dtype))
        return get_default_graph()._constant(array, value_tensor.dtype, name or "Fill")
    from rustgrad.static._shapes import shape_graph, shape_tensor

    graph = shape_graph(dims) if is_shape_tensor(dims) else value.graph
    value_tensor = graph._own(convert_to_tensor(value, graph=graph))
    if is_shape_tensor(dims):
        return Tensor(graph, graph._core.fill(value_tensor._id, shape_tensor("fill", dims, graph)._id, None, name))
    return Tensor(graph, graph._core.fill(value_tensor._id, None, _dims(dims), name))


def _dims(dims: Any) -> list[int]:
    sizes = [dims] if isinstance(dims, (int, np.integer)) else list(np.asarray(dims).reshape(-1))
    if any(not isinstance(s, (int, np.integer)) for s in sizes):
        raise InvalidArgumentError(f"fill: dims must be a list of ints or a 1-D int tensor, got {dims!r}")
    if any(s < 0 for s in sizes):
        raise InvalidArgumentError(f"fill: dims must be >= 0, got {[int(s) for s in sizes]}")
    return [int(s) for s in sizes]
