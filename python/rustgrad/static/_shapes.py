"""TF1's ``shape``, ``size`` and ``rank``: graph nodes whose values a run computes from the
tensor it gives, so they work on placeholders whose shape is known only then; and the shape
arguments that take them (``tf.reshape(x, tf.shape(y))``, ``tf.zeros(tf.shape(x))``)."""

from __future__ import annotations

from typing import Any, Optional

from rustgrad import _rustgrad
from rustgrad.errors import InvalidArgumentError
from rustgrad.static._dtypes import as_dtype, int32
from rustgrad.static._graph import Graph, Tensor, convert_to_tensor


def shape(input: Any, name: Optional[str] = None, out_type: Any = int32) -> Tensor:  # noqa: A002 - TF's name
    """The shape of ``input`` as a 1-D int32 tensor (int64 with ``out_type``), computed when a run
    reaches it; its static shape is ``(rank,)`` when the rank is known. No gradient flows through it."""
    x = convert_to_tensor(input)
    return Tensor(x.graph, x.graph._core.introspect("shape", x._id, as_dtype(out_type), name))


def size(input: Any, name: Optional[str] = None, out_type: Any = int32) -> Tensor:  # noqa: A002 - TF's name
    """The number of elements of ``input`` as a 0-d int32 tensor (int64 with ``out_type``), computed
    when a run reaches it. No gradient flows through it."""
    x = convert_to_tensor(input)
    return Tensor(x.graph, x.graph._core.introspect("size", x._id, as_dtype(out_type), name))


def rank(input: Any, name: Optional[str] = None) -> Tensor:  # noqa: A002 - TF's name
    """The number of dims of ``input`` as a 0-d int32 tensor, computed when a run reaches it.
    No gradient flows through it."""
    x = convert_to_tensor(input)
    return Tensor(x.graph, x.graph._core.introspect("rank", x._id, None, name))


def is_shape_tensor(shape: Any) -> bool:
    """Whether a shape argument is (or holds) a graph tensor, so its values are known only at run time."""
    if isinstance(shape, Tensor):
        return True
    return isinstance(shape, (list, tuple)) and any(isinstance(d, Tensor) for d in shape)


def shape_graph(shape: Any) -> Graph:
    """The graph of a shape argument that ``is_shape_tensor``."""
    return shape.graph if isinstance(shape, Tensor) else next(d for d in shape if isinstance(d, Tensor)).graph


def shape_tensor(op: str, shape: Any, graph: Graph) -> Tensor:
    """A shape argument holding graph tensors as one 1-D integer tensor: a tensor as it is, a list
    mixing 0-d integer tensors and ints (``[tf.shape(x)[0], -1]``) stacked into one, the ints
    taking the tensors' dtype, as TF1 packs it."""
    if isinstance(shape, Tensor):
        return graph._own(shape)
    tensors = [d for d in shape if isinstance(d, Tensor)]
    dtype = tensors[0].dtype
    for t in tensors:
        if t.dtype.name not in ("int32", "int64") or t.dtype != dtype or t.shape.rank not in (0, None):
            raise InvalidArgumentError(
                f"{op}: a shape given as a list must hold ints and 0-d int32 or int64 tensors of one dtype, "
                f"got {t.name} of dtype {t.dtype.name} and shape {t.shape}"
            )
    parts = [graph._own(d) if isinstance(d, Tensor) else convert_to_tensor(d, dtype, graph) for d in shape]
    return graph._apply(_rustgrad.ops["stack"], parts, None, (0,))
