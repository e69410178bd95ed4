"""Symbolic gradients, and user ``autograd.Function``s inside graphs.

Both use the derivative rules of the Rust core: ``gradients`` asks the core to
differentiate the graph, and a Function's ``backward`` is run on graph tensors
so that it records its own gradient nodes.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from rustgrad.errors import ArgumentTypeError, GradientError, InvalidArgumentError
from rustgrad.static._graph import Tensor, convert_to_tensor


def _as_list(x: Any) -> list[Any]:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _graph_tensors(role: str, values: list[Any]) -> list[Tensor]:
    for i, value in enumerate(values):
        if not isinstance(value, Tensor):
            raise ArgumentTypeError(
                f"gradients: {role}[{i}] must be a graph Tensor, got {type(value).__name__} {value!r}"
            )
    return values


def gradients(ys: Any, xs: Any, grad_ys: Any = None, name: str = "gradients",
              stop_gradients: Optional[Sequence[Tensor]] = None) -> list[Optional[Tensor]]:
    """d(sum of ys)/dx for each x, as new graph tensors; None where ys do not depend on x.

    Each ``grad_ys`` entry (None for ones) weights its y and must have that y's
    shape: a mismatch raises ``ShapeError`` when the graph is built if the shapes
    are known then, else when a Session runs the gradient. No gradient flows
    through the tensors in ``stop_gradients``. A call that raises adds nothing to
    the graph.
    """
    ys = _graph_tensors("ys", _as_list(ys))
    xs = _graph_tensors("xs", _as_list(xs))
    stops = _graph_tensors("stop_gradients", _as_list(stop_gradients)) if stop_gradients is not None else []
    seeds_given = _as_list(grad_ys) if grad_ys is not None else []
    if grad_ys is not None and len(seeds_given) != len(ys):
        raise InvalidArgumentError(f"gradients: Passed {len(seeds_given)} grad_ys for {len(ys)} ys")
    if not ys or not xs:
        return [None] * len(xs)
    graph = ys[0].graph
    for t in ys + xs + stops:
        graph._own(t)
    with graph._undo_on_failure():
        seeds: list[Optional[int]] = [None] * len(ys)
        for i, g in enumerate(seeds_given):
            if g is not None:
                seeds[i] = graph._own(convert_to_tensor(g, ys[i].dtype, graph))._id
        ids = graph._core.gradients([y._id for y in ys], [x._id for x in xs], seeds, [t._id for t in stops])
    return [None if i is None else Tensor(graph, i) for i in ids]


def apply_function(cls: Any, args: tuple, ctx: Any) -> Any:
    """Records ``cls.forward`` on graph tensors, with ``cls.backward`` as its gradient."""
    graph = next(a.graph for a in args if isinstance(a, Tensor))
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.dtype.is_floating_point for a in args)
    result = cls.forward(ctx, *args)
    single = not isinstance(result, tuple)
    outputs = (result,) if single else result
    for o in outputs:
        if not isinstance(o, Tensor):
            raise GradientError(f"{cls.__name__}.forward must return graph tensors, got {o!r}")
    tensor_args = [a for a in args if isinstance(a, Tensor)]

    def backward(grad_ids: list[int]) -> list[Optional[int]]:
        grads = [Tensor(graph, g) for g in grad_ids]
        returned = cls.backward(ctx, *grads)
        returned = returned if isinstance(returned, tuple) else (returned,)
        if len(returned) != len(args):
            raise GradientError(
                f"function {cls.__name__}Backward returned an incorrect number of gradients "
                f"(expected {len(args)}, got {len(returned)})"
            )
        ids: list[Optional[int]] = []
        for arg, g in zip(args, returned):
            if not isinstance(arg, Tensor):
                if g is not None:
                    raise GradientError(
                        f"function {cls.__name__}Backward returned a gradient for a non-tensor "
                        "argument; return None there"
                    )
                continue
            ids.append(None if g is None else convert_to_tensor(g, arg.dtype, graph)._id)
        return ids

    _, out_ids = graph._core.function_call(cls.__name__, backward, [o._id for o in outputs],
                                           [a._id for a in tensor_args])
    wrapped = tuple(Tensor(graph, i) for i in out_ids)
    return wrapped[0] if single else wrapped


def hessians(ys: Any, xs: Any, name: str = "hessians", colocate_gradients_with_ops: bool = False,
             gate_gradients: bool = False, aggregation_method: Any = None) -> list[Optional[Tensor]]:
    """The Hessian of sum(ys) with respect to each x (TF 1.15: the blocks d²y/dx², not the cross terms).

    Row j of x's Hessian is the gradient of (dy/dx)[j]. When x's size is known as the graph is
    built, each row is one ``gradients`` call seeded with the j-th unit vector (the graph grows by
    one backward pass per element, which suits up to a few hundred elements); otherwise, as TF
    does, a ``while_loop`` over the rows builds one backward pass and runs it once per element.
    None where ys do not depend on x. The colocation, gating and aggregation arguments are
    accepted for TF's signature and change nothing here.
    """
    import numpy as np

    from rustgrad.static._collections import name_scope
    from rustgrad.static._generated_ops import stack
    from rustgrad.static._ops import reshape

    xs = _graph_tensors("xs", _as_list(xs))
    result: list[Optional[Tensor]] = []
    with name_scope(name):
        first = gradients(ys, xs)
        for x, g in zip(xs, first):
            if g is None:
                result.append(None)
                continue
            shape = x.shape.as_list()
            if shape is None or any(d is None for d in shape):
                result.append(_hessian_by_loop(g, x))
                continue
            n = int(np.prod(shape, dtype=np.int64))
            flat = reshape(g, [-1])
            rows = []
            for j in range(n):
                unit = np.zeros(n, dtype=x.dtype.as_numpy_dtype)
                unit[j] = 1
                (row,) = gradients([flat], [x], grad_ys=[unit])
                rows.append(reshape(row, [-1]) if row is not None else convert_to_tensor(np.zeros(n, unit.dtype)))
            result.append(reshape(stack(rows), shape + shape))
    return result


def _hessian_by_loop(gradient: Tensor, x: Tensor) -> Tensor:
    """TF1's ``hessians`` loop: row j is the gradient of ``gradient[j]`` (flattened), for x of a
    size known only when the graph runs; the loop stacks the rows."""
    from rustgrad.static._control_flow import while_loop
    from rustgrad.static._dtypes import int32
    from rustgrad.static._generated_ops import concat, gather
    from rustgrad.static._ops import identity, reshape, zeros_like
    from rustgrad.static._shapes import shape, size

    graph, core = x.graph, x.graph._core
    flat = reshape(gradient, [-1])
    rows: list[Tensor] = []

    def body(j: Tensor) -> Tensor:
        (row,) = gradients([gather(flat, j)], [x])
        row = reshape(zeros_like(x) if row is None else row, [-1])
        rows.append(row if core.node_frame(row._id) == core.current_frame() else identity(row))
        return j + 1

    n = size(x)
    last = while_loop(lambda j: j < n, body, [convert_to_tensor(0, int32, graph)], return_same_structure=True)[0]
    stacked = Tensor(graph, core.loop_stack(last._id, rows[-1]._id))
    dims = shape(x)
    return reshape(stacked, concat([dims, dims], 0))
