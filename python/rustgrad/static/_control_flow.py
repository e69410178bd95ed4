"""Static control flow with TF 1.15's semantics: ``cond``, ``case``, ``switch_case`` and
``while_loop`` (and, built on it, ``map_fn``, ``scan``, ``foldl``, ``foldr`` in ``_functional``).

Each branch, loop condition and loop body is built once, when the function is called, into a
frame of the graph; a run executes the frame's compiled sub-plan in Rust, so a loop costs no
Python per iteration. As in TF1:

* only the ops created inside the branch that is taken run; ops created outside the branch
  functions run whenever the cond runs, even when only the other branch reads them;
* inside a branch or body, ops run when the returned values need them (through data or
  control inputs): an ``assign`` that nothing returned depends on does not run;
* a loop variable keeps its shape from one iteration to the next unless ``shape_invariants``
  says which dims may change.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from rustgrad.errors import ArgumentTypeError, InvalidArgumentError
from rustgrad.static import _nest as nest
from rustgrad.static._dtypes import bool_, int32, int64
from rustgrad.static._graph import (
    Graph,
    Operation,
    Tensor,
    TensorShape,
    _is_scalar,
    convert_to_tensor,
    get_default_graph,
)


def _graph_of(*values: Any) -> Graph:
    for value in nest.flatten(list(values)):
        if isinstance(value, (Tensor, Operation)):
            return value.graph
    return get_default_graph()


def _fmt_shape(shape: Any) -> str:
    """A (partial) shape as TF1 prints it: ``(2,)``, ``(?, 3)``, ``<unknown>``."""
    if shape is None or (isinstance(shape, TensorShape) and shape.rank is None):
        return "<unknown>"
    dims = ["?" if d is None else str(d) for d in shape]
    return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"


def _output(graph: Graph, value: Any, pivot: Tensor, dtype: Any = None) -> Tensor:
    """A branch's or body's returned value as a tensor of the open frame: an Operation becomes
    the pivot gated on it (TF1 returns the predicate for an op), a Python value a constant."""
    if isinstance(value, Operation):
        with graph.control_dependencies([value]):
            return graph._op("identity", (), [pivot])
    if isinstance(value, Tensor):
        return graph._own(value)
    if value is None:
        raise ArgumentTypeError("None values not supported.")
    return convert_to_tensor(value, dtype if _is_scalar(value) else None, graph)


def _build_branch(graph: Graph, fn: Callable[[], Any], pivot: Tensor, what: str) -> tuple[int, Any, list]:
    """Calls ``fn`` in a new branch frame; returns the frame, its result and the flat outputs."""
    frame = graph._core.push_frame("branch")
    try:
        result = fn()
        if result is None:
            raise InvalidArgumentError(f"{what} must have a return value.")
        flat = [_output(graph, v, pivot) for v in nest.flatten(result)]
    finally:
        graph._core.pop_frame(frame)
    return frame, result, flat


def _unpack_if_singleton(result: Any) -> Any:
    if isinstance(result, (list, tuple)) and len(result) == 1:
        return result[0]
    return result


def _predicate(pred: Any, graph: Graph) -> Tensor:
    if isinstance(pred, bool):
        raise ArgumentTypeError("pred must not be a Python bool")
    return convert_to_tensor(pred, graph=graph)


def _branch_function(name: str, fn: Any, old_name: str, old_fn: Any) -> Callable[[], Any]:
    """``cond``'s branch from its argument or from the deprecated one (TF1's checks and texts)."""
    if old_fn is not None:
        if fn is not None:
            raise ArgumentTypeError(f"cond(): {name} and {old_name} may not be set simultaneously.")
        fn = old_fn
    elif fn is None:
        raise ArgumentTypeError(f"cond(): {name} argument required")
    if not callable(fn):
        raise ArgumentTypeError(f"{name} must be callable.")
    return fn


def cond(pred: Any, true_fn: Optional[Callable[[], Any]] = None, false_fn: Optional[Callable[[], Any]] = None,
         strict: bool = False, name: Optional[str] = None, fn1: Optional[Callable[[], Any]] = None,
         fn2: Optional[Callable[[], Any]] = None) -> Any:
    """TF1's ``tf.cond``: ``true_fn()`` if the bool scalar ``pred`` is true, else ``false_fn()``.

    Both functions are called once, now, to build their branches; a run executes only the
    branch ``pred`` picks. **Ops created outside the two functions run regardless of ``pred``**
    (as in TF1), even when only the branch that is not taken uses them. Both must return the
    same nested structure of tensors of the same dtypes; a singleton list or tuple is unpacked
    unless ``strict``."""
    true_fn = _branch_function("true_fn", true_fn, "fn1", fn1)
    false_fn = _branch_function("false_fn", false_fn, "fn2", fn2)
    graph = _graph_of(pred)
    with graph._undo_on_failure(), graph.name_scope(name or "cond"):
        p = _predicate(pred, graph)
        frame_t, res_t, flat_t = _build_branch(graph, true_fn, p, "true_fn")
        frame_f, res_f, flat_f = _build_branch(graph, false_fn, p, "false_fn")
        if not strict:
            res_t, res_f = _unpack_if_singleton(res_t), _unpack_if_singleton(res_f)
        try:
            nest.assert_same_structure(res_t, res_f)
        except ArgumentTypeError as e:
            raise ArgumentTypeError(f"Incompatible return types of true_fn and false_fn: {e}") from None
        except InvalidArgumentError as e:
            raise InvalidArgumentError(f"Incompatible return values of true_fn and false_fn: {e}") from None
        if not flat_t:
            raise InvalidArgumentError("true_fn and false_fn must return at least one result.")
        for x, y in zip(flat_t, flat_f):
            if x.dtype != y.dtype:
                raise InvalidArgumentError(
                    f"Outputs of true_fn and false_fn must have the same type: {x.dtype.name}, {y.dtype.name}"
                )
        outs = graph._core.cond(p._id, [frame_t, frame_f], [[t._id for t in flat_t], [t._id for t in flat_f]])
        merged = nest.pack_sequence_as(res_t, [Tensor(graph, o) for o in outs])
        return merged if strict else _unpack_if_singleton(merged)


def _indexed_cond(index: Tensor, fns: Sequence[Callable[[], Any]], strict: bool, what: str) -> Any:
    """One Cond over ``fns`` picked by the int scalar ``index`` (out of range: the last)."""
    graph = index.graph
    built = [_build_branch(graph, fn, index, what) for fn in fns]
    results = [r if strict else _unpack_if_singleton(r) for _, r, _ in built]
    for other in results[1:]:
        nest.assert_same_structure(results[0], other)
    flats = [flat for _, _, flat in built]
    if not flats[0]:
        raise InvalidArgumentError(f"{what} must return at least one result.")
    for flat in flats[1:]:
        for x, y in zip(flats[0], flat):
            if x.dtype != y.dtype:
                raise InvalidArgumentError(
                    f"Outputs of the branches must have the same type: {x.dtype.name}, {y.dtype.name}"
                )
    outs = graph._core.cond(index._id, [f for f, _, _ in built], [[t._id for t in flat] for flat in flats])
    merged = nest.pack_sequence_as(results[0], [Tensor(graph, o) for o in outs])
    return merged if strict else _unpack_if_singleton(merged)


def _pairs(pred_fn_pairs: Any) -> list[tuple[Tensor, Callable[[], Any]]]:
    if isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = list(pred_fn_pairs.items())
    if not isinstance(pred_fn_pairs, (list, tuple)):
        raise ArgumentTypeError("pred_fn_pairs must be a list, tuple, or dict")
    pairs = []
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise ArgumentTypeError("Each entry in pred_fn_pairs must be a 2-tuple")
        pred, fn = pair
        if not isinstance(pred, Tensor):
            raise ArgumentTypeError(f"pred must be Tensor: {pred!r}")
        if pred.dtype != bool_:
            raise ArgumentTypeError(f"pred must be Tensor of type bool: {pred.name}")
        if not callable(fn):
            raise ArgumentTypeError(f"fn for pred {pred.name} must be callable.")
        pairs.append((pred, fn))
    return pairs


def _stack_preds(graph: Graph, preds: Sequence[Tensor]) -> Tensor:
    from rustgrad.static._generated_ops import stack

    return stack(list(preds), name="preds_c")


def _first_true(graph: Graph, preds: Sequence[Tensor], none_true: int) -> Tensor:
    """The index of the first true of ``preds`` (0-d int32), or ``none_true`` when none is."""
    from rustgrad.static._ops import where

    index = graph._constant(none_true, int32)
    for k in reversed(range(len(preds))):
        index = where(preds[k], graph._constant(k, int32), index)
    return index


def _at_most_n_true(graph: Graph, preds: Sequence[Tensor], n: int, msg: str) -> Operation:
    """TF's ``_assert_at_most_n_true``: an Assert that at most ``n`` of ``preds`` are true."""
    from rustgrad.static._debugging import Assert
    from rustgrad.static._ops import cast, reduce_sum

    stacked = _stack_preds(graph, preds)
    count = reduce_sum(cast(stacked, int32), name="num_true_conds")
    names = ", ".join(p.name for p in preds)
    ok = count <= graph._constant(n, int32, name="n_true_conds")
    return Assert(ok, [f"{msg}: more than {n} conditions ({names}) evaluated as True:", stacked],
                  summarize=len(preds))


def case(pred_fn_pairs: Any, default: Optional[Callable[[], Any]] = None, exclusive: bool = False,
         strict: bool = False, name: str = "case") -> Any:
    """TF1's ``tf.case``: the result of the fn of the first true pred, else of ``default``.

    One Cond runs only the chosen fn. With ``exclusive``, a run where more than one pred is true
    fails. Without ``default``, the last pair's fn is the default, and a run where no pred is
    true fails ("Input error: None of conditions evaluated as True:"), as in TF1."""
    pairs = _pairs(pred_fn_pairs)
    if default is not None and not callable(default):
        raise ArgumentTypeError("default must be callable.")
    if not pairs:
        if default is None:
            raise InvalidArgumentError("case: no pred_fn_pairs and no default; give at least one")
        return default()
    graph = pairs[0][0].graph
    with graph._undo_on_failure(), graph.name_scope(name or "case"):
        preds = [graph._own(p) for p, _ in pairs]
        fns = [fn for _, fn in pairs]
        if default is None:
            last_pred, last_fn = preds[-1], fns[-1]
            all_preds = list(preds)

            def default_fn() -> Any:
                from rustgrad.static._debugging import Assert

                others = _at_most_n_true(
                    graph, all_preds[:-1], 0,
                    f"Implementation error: selected default action #{len(all_preds) - 1} was called, but some "
                    "of other predicates are True",
                ) if len(all_preds) > 1 else None
                checks = [Assert(last_pred, ["Input error: None of conditions evaluated as True:",
                                             _stack_preds(graph, all_preds)], summarize=len(all_preds))]
                with graph.control_dependencies(checks + ([others] if others is not None else [])):
                    return nest.map_structure(
                        lambda t: graph._op("identity", (), [t]) if isinstance(t, Tensor) else t, last_fn())

            preds, fns, default = preds[:-1], fns[:-1], default_fn
        controls = [_at_most_n_true(graph, preds, 1, "Input error: exclusive=True")] if exclusive else []
        with graph.control_dependencies(controls):
            index = _first_true(graph, preds, len(preds))
            return _indexed_cond(index, [*fns, default], strict, "case branches")


def switch_case(branch_index: Any, branch_fns: Any, default: Optional[Callable[[], Any]] = None,
                name: str = "switch_case") -> Any:
    """TF's ``tf.switch_case``: ``branch_fns[branch_index]()``, or ``default()`` (when not given,
    the last branch) for an index out of range. ``branch_fns`` is a list of callables, of
    ``(int, callable)`` pairs, or a dict of int to callable, with keys 0..n-1."""
    if isinstance(branch_fns, dict):
        items = sorted(branch_fns.items())
    elif isinstance(branch_fns, (list, tuple)) and branch_fns and all(
            isinstance(b, tuple) and len(b) == 2 for b in branch_fns):
        items = sorted(branch_fns)
    elif isinstance(branch_fns, (list, tuple)):
        items = list(enumerate(branch_fns))
    else:
        raise ArgumentTypeError("branch_fns must be a list, tuple, or dict")
    if not items:
        raise InvalidArgumentError("Must provide at least one item in branch_fns")
    keys = [k for k, _ in items]
    if keys != list(range(len(items))):
        raise InvalidArgumentError(f"branch indices (keys) must form contiguous range of [0 to {len(items)}) but "
                                   f"found {{{', '.join(str(k) for k in keys)}}}")
    fns = [fn for _, fn in items]
    for k, fn in items:
        if not callable(fn):
            raise ArgumentTypeError(f"br_fn for key {k} must be callable.")
    if default is not None and not callable(default):
        raise ArgumentTypeError("default must be callable.")
    graph = _graph_of(branch_index)
    with graph._undo_on_failure(), graph.name_scope(name or "switch_case"):
        index = convert_to_tensor(branch_index, graph=graph, name="branch_index")
        if index.dtype not in (int32, int64):
            raise ArgumentTypeError(f"branch_index must be an int32 or int64 tensor, got {index.dtype.name}")
        if index.shape.rank not in (None, 0):
            raise InvalidArgumentError(f"branch_index must be a scalar, saw shape: {_fmt_shape(index.shape)}")
        return _indexed_cond(index, fns + ([default] if default is not None else []), True, "branch_fns")


def _flatten_up_to(shallow: Any, deep: Any) -> list:
    """``deep`` cut at the leaves of ``shallow`` (shape invariants are tuples themselves)."""
    if not nest.is_nested(shallow):
        return [deep]
    if not nest.is_nested(deep) or isinstance(deep, TensorShape) or len(nest._children(deep)) != len(
            nest._children(shallow)):
        raise InvalidArgumentError(
            "The two structures don't have the same nested structure.\n\n"
            f"First structure: {shallow}\n\nSecond structure: {deep}"
        )
    return [leaf for s, d in zip(nest._children(shallow), nest._children(deep)) for leaf in _flatten_up_to(s, d)]


def _invariant(value: Any) -> Optional[list]:
    """A shape invariant as a list of dims (None: unknown), or None for an unknown rank."""
    if value is None:
        return None
    if isinstance(value, TensorShape):
        return None if value.rank is None else list(value)
    if isinstance(value, (list, tuple)):
        return [None if d is None else int(d) for d in value]
    raise ArgumentTypeError(f"shape_invariants: expected a TensorShape, got {value!r}")


def _within(shape: Optional[list], invariant: Optional[list]) -> bool:
    if invariant is None:
        return True
    if shape is None:
        return False
    return len(shape) == len(invariant) and all(i is None or s == i for s, i in zip(shape, invariant))


def _loop_args(graph: Graph, kind: str, flat: Sequence[Tensor], invariants: Sequence[Optional[list]],
               structure: Any) -> tuple[int, Any]:
    frame = graph._core.push_frame(kind)
    try:
        args = [Tensor(graph, graph._core.frame_arg(t.dtype, inv)) for t, inv in zip(flat, invariants)]
    except BaseException:
        graph._core.pop_frame(frame)
        raise
    return frame, nest.pack_sequence_as(structure, args)


def while_loop(cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Any,
               shape_invariants: Any = None, parallel_iterations: int = 10, back_prop: bool = True,
               swap_memory: bool = False, name: Optional[str] = None, maximum_iterations: Any = None,
               return_same_structure: bool = False) -> Any:
    """TF1's ``tf.while_loop``: repeats ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``.

    ``cond`` and ``body`` are called once, now, to build the loop; a run executes it in Rust,
    without Python per iteration. ``loop_vars`` is a (nested) list or tuple of tensors (or one
    tensor); ``body`` returns the same structure, with the same dtypes and shapes, unless
    ``shape_invariants`` (same structure, TensorShapes with None dims) allows a dim to change.
    ``maximum_iterations`` stops the loop after that many iterations. ``parallel_iterations``
    and ``swap_memory`` are accepted and have no effect (iterations run one after another, on
    the CPU). A single loop variable comes back as a bare tensor unless ``return_same_structure``.
    ``tf.gradients`` flows through the loop (a gradient loop, also run in Rust, replays the
    iterations in reverse); with ``back_prop=False`` it gives None through it, as TF1."""
    if loop_vars is None or (nest.is_nested(loop_vars) and not nest.flatten(loop_vars)):
        raise InvalidArgumentError("No loop variables provided")
    if not callable(cond):
        raise ArgumentTypeError("cond must be callable.")
    if not callable(body):
        raise ArgumentTypeError("body must be callable.")
    if not isinstance(parallel_iterations, int) or parallel_iterations < 1:
        raise ArgumentTypeError("parallel_iterations must be a positive integer.")
    del swap_memory
    graph = _graph_of(loop_vars, maximum_iterations)
    bare = not nest.is_nested(loop_vars)
    structure = [loop_vars] if bare else loop_vars
    with graph._undo_on_failure(), graph.name_scope(name or "while"):
        flat = [graph._own(convert_to_tensor(v, graph=graph)) for v in nest.flatten(structure)]
        structure = nest.pack_sequence_as(structure, flat)
        limit = None
        if maximum_iterations is not None:
            limit = convert_to_tensor(maximum_iterations, graph=graph, name="maximum_iterations")
            if limit.shape.rank != 0:
                raise InvalidArgumentError(
                    f"maximum_iterations must be a scalar, saw shape: {_fmt_shape(limit.shape)}")
        if shape_invariants is None:
            invariants = [None if t.shape.rank is None else list(t.shape) for t in flat]
        else:
            given = [shape_invariants] if bare else shape_invariants
            invariants = [_invariant(s) for s in _flatten_up_to(structure, given)]
            for t, inv in zip(flat, invariants):
                initial = None if t.shape.rank is None else list(t.shape)
                if not _within(initial, inv):
                    raise InvalidArgumentError(
                        f"The shape invariant specified for {t.name} is not compatible with the initial shape of "
                        f"the loop variable. It enters the loop with shape {_fmt_shape(initial)}, but the "
                        f"specified shape invariant is {_fmt_shape(inv)}."
                    )
        cond_frame, cond_args = _loop_args(graph, "loop_cond", flat, invariants, structure)
        try:
            go = cond(*cond_args)
            go = _output(graph, go, flat[0]) if not isinstance(go, Tensor) else graph._own(go)
        finally:
            graph._core.pop_frame(cond_frame)
        body_frame, body_args = _loop_args(graph, "loop_body", flat, invariants, structure)
        try:
            result = body(*body_args)
            if not nest.is_nested(result) or (bare and isinstance(result, (list, tuple)) and len(result) != 1):
                result = [result]
            nest.assert_same_structure(list(structure), list(result))
            outs = [_output(graph, v, t, t.dtype) for v, t in zip(nest.flatten(result), flat)]
        finally:
            graph._core.pop_frame(body_frame)
        for t, out, inv in zip(flat, outs, invariants):
            if out.dtype != t.dtype:
                raise InvalidArgumentError(
                    f"while_loop: the loop variable {t.name} enters the loop as {t.dtype.name}, but the body "
                    f"returns {out.name} of {out.dtype.name}; each must keep its dtype"
                )
            shape = None if out.shape.rank is None else list(out.shape)
            if not _within(shape, inv):
                raise InvalidArgumentError(
                    f"Input tensor '{t.name}' enters the loop with shape {_fmt_shape(t.shape)}, but has shape "
                    f"{_fmt_shape(shape)} after one iteration. To allow the shape to vary across iterations, use "
                    "the `shape_invariants` argument of tf.while_loop to specify a less-specific shape."
                )
        ids = graph._core.while_loop(cond_frame, body_frame, [t._id for t in flat], go._id,
                                     [o._id for o in outs], None if limit is None else graph._own(limit)._id,
                                     bool(back_prop))
        exits = nest.pack_sequence_as(structure, [Tensor(graph, i) for i in ids])
        if bare and not return_same_structure:
            return exits[0]
        if return_same_structure:
            return exits
        return exits[0] if len(flat) == 1 else exits
