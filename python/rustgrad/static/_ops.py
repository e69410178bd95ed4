"""TF1 op functions: each adds one node (or a few) to the default graph."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from rustgrad import _rustgrad
from rustgrad.errors import InvalidArgumentError
from rustgrad.static._dtypes import as_dtype, float32
from rustgrad.static._graph import (
    _TRUEDIV_DTYPES,
    Tensor,
    _apply,
    _axes,
    _is_scalar,
    _renamed,
    _truediv_integers,
    convert_to_tensor,
    get_default_graph,
)
from rustgrad.static._python_values import _converting, _default_constant_dtype, _number_as


def _pair(a: Any, b: Any, op: str, params: tuple[str, str] = ("x", "y")) -> tuple[Tensor, Tensor]:
    """Two operands of ``op`` on one graph, numbers and arrays converted to the tensor side's dtype
    (a Python value that does not fit it raises, naming ``op`` and the parameter). Two tensors are
    left as they are: an op on two dtypes raises TF's error when its node is built."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a, b
    if isinstance(a, Tensor):
        with _converting(op, params[1]):
            return a, convert_to_tensor(b, a.dtype, a.graph)
    if isinstance(b, Tensor):
        with _converting(op, params[0]):
            return convert_to_tensor(a, b.dtype, b.graph), b
    a = convert_to_tensor(a)
    with _converting(op, params[1]):
        return a, convert_to_tensor(b, a.dtype, a.graph)


def _binary(kind: str, op: str, x: Any, y: Any, name: Optional[str]) -> Tensor:
    a, b = _pair(x, y, op)
    return a.graph._op("binary", (kind,), [a, b], name)


# ----- sources -----

def constant(value: Any, dtype: Any = None, shape: Optional[Sequence[int]] = None,
             name: Optional[str] = "Const") -> Tensor:
    import numpy as np

    if shape is not None:
        if dtype is None and not isinstance(value, (np.ndarray, np.generic)):
            dtype = _default_constant_dtype(np.asarray(value), False)  # as TF1 types the Python value
        value = np.broadcast_to(np.asarray(value), tuple(shape))
    return get_default_graph()._constant(value, dtype, name)


def zeros(shape: Any, dtype: Any = float32, name: Optional[str] = None) -> Tensor:
    """Zeros of ``shape``: a list of ints (a constant), or a 1-D int tensor such as
    ``tf.shape(x)`` or a list holding 0-d ones (a ``Fill`` node, sized at run time)."""
    return _filled(shape, 0, dtype, name or "zeros")


def ones(shape: Any, dtype: Any = float32, name: Optional[str] = None) -> Tensor:
    """Ones of ``shape``, given as for ``zeros``."""
    return _filled(shape, 1, dtype, name or "ones")


def _filled(shape: Any, value: int, dtype: Any, name: str) -> Tensor:
    import numpy as np

    from rustgrad.static._dtypes import numpy_dtype
    from rustgrad.static._shapes import is_shape_tensor, shape_graph, shape_tensor

    if not is_shape_tensor(shape):
        return get_default_graph()._constant(np.full(_shape(shape), value), dtype, name)
    graph = shape_graph(shape)
    dims = shape_tensor(name, shape, graph)
    scalar = graph._constant(np.asarray(value, dtype=numpy_dtype(dtype)))
    return Tensor(graph, graph._core.fill(scalar._id, dims._id, None, name))


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, int):
        return (shape,)
    return tuple(int(d) for d in shape)


# ----- math -----

def matmul(a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False,
           name: Optional[str] = None) -> Tensor:
    x, y = _pair(a, b, "matmul", ("a", "b"))
    return x.graph._op("matmul", (bool(transpose_a), bool(transpose_b)), [x, y], name)


def bmm(a: Any, b: Any, name: Optional[str] = None) -> Tensor:
    """Extension (TF1 has no ``bmm``; torch's): ``a @ b`` for two batches of matrices, both 3-D
    with the same batch size, as torch checks them (no broadcasting). A ``BatchMatMulV2`` node."""
    x, y = _pair(a, b, "bmm", ("a", "b"))
    return x.graph._op("bmm", (), [x, y], name)


def add(x: Any, y: Any, name: Optional[str] = None) -> Tensor:
    return _binary("add", "add", x, y, name)


def add_n(inputs: Any, name: Optional[str] = None) -> Tensor:
    """The element-wise sum of a list of tensors of one shape and dtype, added left to right
    (the last addition is named ``name``, or ``AddN``)."""
    if isinstance(inputs, Tensor) or not isinstance(inputs, (list, tuple)) or not inputs:
        raise InvalidArgumentError("add_n: inputs must be a list of at least one Tensor with the same dtype "
                                   "and shape")
    tensors = [convert_to_tensor(t) for t in inputs]
    first = tensors[0]
    for i, t in enumerate(tensors[1:], start=1):
        if t.dtype != first.dtype:
            raise InvalidArgumentError(f"add_n: inputs must have the same dtype: inputs[0] is "
                                       f"{first.dtype.name} but inputs[{i}] is {t.dtype.name}")
        if not t.shape.is_compatible_with(first.shape):
            raise InvalidArgumentError(f"add_n: inputs must have the same shape: inputs[0] has shape "
                                       f"{first.shape} but inputs[{i}] has shape {t.shape}")
    if len(tensors) == 1:
        return identity(first, name or "AddN")
    total = first
    for i, t in enumerate(tensors[1:], start=1):
        total = add(total, t, (name or "AddN") if i == len(tensors) - 1 else None)
    return total


def subtract(x: Any, y: Any, name: Optional[str] = None) -> Tensor:
    return _binary("sub", "subtract", x, y, name)


def multiply(x: Any, y: Any, name: Optional[str] = None) -> Tensor:
    return _binary("mul", "multiply", x, y, name)


def divide(x: Any, y: Any, name: Optional[str] = None) -> Tensor:
    """``x / y``; integers are divided in a float dtype (float64 for int32 and int64), as TF1's truediv."""
    a, b = _pair(x, y, "divide")
    if a.dtype.name in _TRUEDIV_DTYPES and a.dtype == b.dtype:
        return _truediv_integers(a, b, False, name)
    return a.graph._op("binary", ("div",), [a, b], name)


truediv = divide


def div(x: Any, y: Any, name: Optional[str] = None) -> Tensor:
    """TF1's ``div``, with Python 2 semantics: integers are floor-divided, floats truly divided."""
    a, b = _pair(x, y, "div")
    return a.graph._op("binary", ("div" if a.dtype.is_floating else "floor_divide",), [a, b], name)


def floordiv(x: Any, y: Any, name: Optional[str] = None) -> Tensor:
    """``x // y``, rounding toward negative infinity (floats too, as TF)."""
    return _binary("floor_divide", "floordiv", x, y, name)


def floormod(x: Any, y: Any, name: Optional[str] = None) -> Tensor:
    """``x % y`` with the sign of ``y``, as Python's ``%``."""
    return _binary("remainder", "floormod", x, y, name)


mod = floormod


def maximum(x: Any, y: Any, name: Optional[str] = None) -> Tensor:
    return _binary("maximum", "maximum", x, y, name)


def minimum(x: Any, y: Any, name: Optional[str] = None) -> Tensor:
    return _binary("minimum", "minimum", x, y, name)


def _reduce(kind: str, op: str, input_tensor: Any, axis: Any, keepdims: Any, name: Optional[str],
            reduction_indices: Any, keep_dims: Any) -> Tensor:
    """A TF1 reduction; ``reduction_indices`` and ``keep_dims`` are TF1's deprecated spellings."""
    axis = _renamed(op, "axis", axis, "reduction_indices", reduction_indices, None)
    keepdims = _renamed(op, "keepdims", keepdims, "keep_dims", keep_dims, False)
    x = convert_to_tensor(input_tensor)
    return x.graph._op(kind, (_axes(axis), bool(keepdims)), [x], name)


def reduce_sum(input_tensor: Any, axis: Any = None, keepdims: Any = None, name: Optional[str] = None,
               reduction_indices: Any = None, keep_dims: Any = None) -> Tensor:
    return _reduce("sum", "reduce_sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(input_tensor: Any, axis: Any = None, keepdims: Any = None, name: Optional[str] = None,
                reduction_indices: Any = None, keep_dims: Any = None) -> Tensor:
    return _reduce("mean", "reduce_mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_max(input_tensor: Any, axis: Any = None, keepdims: Any = None, name: Optional[str] = None,
               reduction_indices: Any = None, keep_dims: Any = None) -> Tensor:
    return _reduce("max", "reduce_max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_min(input_tensor: Any, axis: Any = None, keepdims: Any = None, name: Optional[str] = None,
               reduction_indices: Any = None, keep_dims: Any = None) -> Tensor:
    return _reduce("min", "reduce_min", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reshape(tensor: Any, shape: Any, name: Optional[str] = None) -> Tensor:
    """``tensor`` with the same values in ``shape``, one dim of which may be -1. ``shape`` is a list
    of ints, or a 1-D int tensor such as ``tf.shape(y)`` or a list holding 0-d ones
    (``[tf.shape(x)[0], -1]``), read at run time."""
    from rustgrad.static._shapes import is_shape_tensor, shape_tensor

    x = convert_to_tensor(tensor)
    if is_shape_tensor(shape):
        dims = shape_tensor("reshape", shape, x.graph)
        return Tensor(x.graph, x.graph._core.reshape_to(x._id, dims._id, name))
    return x.graph._op("reshape", ([int(d) for d in _shape(shape)],), [x], name)


def identity(input: Any, name: Optional[str] = None) -> Tensor:  # noqa: A002 - TF's name
    x = convert_to_tensor(input)
    return x.graph._op("identity", (), [x], name or "Identity")


def stop_gradient(input: Any, name: Optional[str] = None) -> Tensor:  # noqa: A002 - TF's name
    x = convert_to_tensor(input)
    return x.graph._op("stop_gradient", (), [x], name or "StopGradient")


def cast(x: Any, dtype: Any, name: Optional[str] = None) -> Tensor:
    x = convert_to_tensor(x)
    return x.graph._op("cast", (as_dtype(dtype),), [x], name or "Cast")


def clip_by_value(t: Any, clip_value_min: Any, clip_value_max: Any,
                  name: Optional[str] = None) -> Tensor:
    """``t`` clipped to [clip_value_min, clip_value_max]. Number bounds are one fused op; tensor bounds
    broadcast against ``t`` and are applied as TF applies them: the max first, then the min."""
    x = convert_to_tensor(t)
    if _is_scalar(clip_value_min) and _is_scalar(clip_value_max):
        with _converting("clip_by_value", "clip_value_min"):
            low = float(_number_as(x.dtype, clip_value_min))
        with _converting("clip_by_value", "clip_value_max"):
            high = float(_number_as(x.dtype, clip_value_max))
        return x.graph._op("clamp", (low, high), [x], name)
    lowered = x.graph._apply(_rustgrad.ops["clamp_max"], [x, clip_value_max])
    return x.graph._apply(_rustgrad.ops["clamp_min"], [lowered, clip_value_min], name)


def where(condition: Any, x: Any = None, y: Any = None, name: Optional[str] = None) -> Tensor:
    """``x`` where ``condition`` is true, else ``y``. With ``condition`` alone, as TF1: the
    coordinates of its true (non-zero) elements, an int64 tensor of shape (count, rank)."""
    if x is None and y is None:
        return _apply(_rustgrad.ops["argwhere"], [condition], name or "Where")
    if x is None or y is None:
        raise InvalidArgumentError("where: x and y must both be non-None or both be None")
    a, b = _pair(x, y, "where")
    return a.graph._op("where", (), [condition, a, b], name)


def zeros_like(tensor: Any, name: Optional[str] = None) -> Tensor:
    x = convert_to_tensor(tensor)
    return x.graph._op("full_like", (0.0,), [x], name or "zeros_like")


def ones_like(tensor: Any, name: Optional[str] = None) -> Tensor:
    x = convert_to_tensor(tensor)
    return x.graph._op("full_like", (1.0,), [x], name or "ones_like")


def placeholder(dtype: Any, shape: Optional[Sequence[Optional[int]]] = None,
                name: Optional[str] = None) -> Tensor:
    """A tensor whose value is fed at run time. ``None`` dims accept any size."""
    graph = get_default_graph()
    dims = None if shape is None else [None if d is None else int(d) for d in _as_dims(shape)]
    return Tensor(graph, graph._core.placeholder(as_dtype(dtype), dims, name))


def _as_dims(shape: Any) -> Sequence[Optional[int]]:
    return (shape,) if isinstance(shape, int) else tuple(shape)
