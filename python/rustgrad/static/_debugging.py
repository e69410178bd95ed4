"""TF1's debugging ops: ``tf.Print``, ``tf.Assert``, the ``tf.assert_*`` checks and
``tf.check_numerics``, as ``tf.compat.v1`` has them.

``Print`` and ``CheckNumerics`` give their input's value; ``Assert`` has none. They act when a
run reaches them: fetch them (or, once the graph has control dependencies, make other ops
depend on them). An assertion whose answer is known when the graph is built (constants,
static ranks and dtypes) raises at once, as TF1's does; otherwise it raises
``InvalidArgumentError`` when it runs, with TF1's message.
"""

from __future__ import annotations

import numbers
from typing import Any, Callable, Optional, Sequence

import numpy as np

from rustgrad.errors import ArgumentTypeError, DTypeError, InvalidArgumentError
from rustgrad.static._dtypes import as_dtype, int32
from rustgrad.static._graph import Graph, Operation, Tensor, convert_to_tensor, get_default_graph

__all__ = [
    "Assert", "Print", "assert_equal", "assert_greater", "assert_greater_equal", "assert_less",
    "assert_less_equal", "assert_negative", "assert_non_negative", "assert_non_positive", "assert_none_equal",
    "assert_positive", "assert_rank", "assert_rank_at_least", "assert_rank_in", "assert_shapes", "assert_type",
    "check_numerics", "verify_tensor_all_finite",
]


def _graph_of(*values: Any) -> Graph:
    """The graph of the first graph tensor among ``values`` (searching lists), else the default."""
    for v in values:
        if isinstance(v, Tensor):
            return v.graph
        if isinstance(v, (list, tuple)):
            for item in v:
                if isinstance(item, Tensor):
                    return item.graph
    return get_default_graph()


def _int_arg(op: str, param: str, value: Any, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ArgumentTypeError(f"{op}: '{param}' must be an int, got {value!r} of type {type(value).__name__}")
    return int(value)


def _data_list(op: str, data: Any) -> list:
    if not isinstance(data, (list, tuple)):
        raise ArgumentTypeError(
            f"{op}: 'data' must be a list of tensors, got {type(data).__name__}; wrap a single tensor in a list"
        )
    return list(data)


def Print(input_: Any, data: Any, message: Optional[str] = None, first_n: Optional[int] = None,  # noqa: N802
          summarize: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """TF1's ``tf.Print``: the value of ``input_``; each time a run computes it, one line is written
    to standard error (file descriptor 2, from Rust): ``message`` and each tensor of ``data``,
    ``summarize`` elements of each (3 by default, all when negative). With ``first_n``, only the
    first ``first_n`` runs of each Session print (all when negative). Gradients pass to ``input_``."""
    graph = _graph_of(input_, data)
    if message is not None and not isinstance(message, str):
        raise ArgumentTypeError(f"Print: 'message' must be a string, got {type(message).__name__}")
    limit = _int_arg("Print", "first_n", first_n, -1)
    count = _int_arg("Print", "summarize", summarize, 3)
    x = convert_to_tensor(input_, graph=graph)
    tensors = [graph._own(convert_to_tensor(d, graph=graph)) for d in _data_list("Print", data)]
    node = graph._core.print_op(graph._own(x)._id, [t._id for t in tensors], message or "",
                                None if limit < 0 else limit, count, name)
    return Tensor(graph, node)


def Assert(condition: Any, data: Any, summarize: Optional[int] = None,  # noqa: N802
           name: Optional[str] = None) -> Operation:
    """TF1's ``tf.Assert``: an operation without a value that, when a run reaches it and the bool
    scalar ``condition`` is false, fails the run with ``InvalidArgumentError``
    ``assertion failed: [item] [item] ...``: strings of ``data`` as they are, tensors summarized
    (``summarize`` elements, 3 by default, all when negative)."""
    graph = _graph_of(condition, data)
    count = _int_arg("Assert", "summarize", summarize, 3)
    items = _data_list("Assert", data)
    with graph.name_scope(name or "Assert"):
        cond = graph._own(convert_to_tensor(condition, graph=graph, name="Condition"))
        texts: list[Optional[str]] = []
        tensors: list[int] = []
        for item in items:
            if isinstance(item, bytes):
                item = item.decode("utf-8", "backslashreplace")
            if isinstance(item, str):
                texts.append(item)
            else:
                texts.append(None)
                tensors.append(graph._own(convert_to_tensor(item, graph=graph))._id)
        return Operation(graph, graph._core.assert_op(cond._id, texts, tensors, count, "Assert"))


def _no_op(graph: Graph, name: str) -> Operation:
    return Operation(graph, graph._core.group([], name))


def _constant_value(t: Tensor) -> Optional[np.ndarray]:
    """The value of a constant tensor (TF's ``tensor_util.constant_value`` for ``Const``), else None."""
    return t.graph._core.node_constant_value(t._id)


def _static_string(item: Any) -> str:
    """TF's ``_maybe_constant_value_string``: a constant's numpy value, or the item as text."""
    if isinstance(item, Tensor):
        value = _constant_value(item)
        return str(item) if value is None else str(value)
    return str(item)


def _assert_static(condition: bool, data: Sequence[Any]) -> None:
    if not condition:
        raise InvalidArgumentError("\n".join(_static_string(d) for d in data))


def _message_prefix(message: Optional[str]) -> str:
    return f"{message}.  " if message else ""


def _as_tensors(graph: Graph, x: Any, y: Any) -> tuple[Tensor, Tensor]:
    """``x`` and ``y`` as graph tensors named ``x`` and ``y`` in the current scope when they
    are not tensors yet; a Python number takes the other's dtype."""
    x_dtype = y.dtype if isinstance(y, Tensor) and not isinstance(x, Tensor) else None
    x = convert_to_tensor(x, x_dtype, graph, name="x")
    y = convert_to_tensor(y, None if isinstance(y, Tensor) else x.dtype, graph, name="y")
    return graph._own(x), graph._own(y)


def _binary_assert(sym: str, opname: str, op_func: Callable[[Tensor, Tensor], Tensor],
                   static_func: Callable[[Any, Any], Any], x: Any, y: Any, data: Optional[Sequence[Any]],
                   summarize: Optional[int], message: Optional[str], name: Optional[str]) -> Operation:
    from rustgrad.static._generated_ops import reduce_all

    graph = _graph_of(x, y)
    with graph.name_scope(name or opname):
        x, y = _as_tensors(graph, x, y)
        if data is None:
            data = [f"Condition x {sym} y did not hold element-wise:", f"x ({x.name}) = ", x, f"y ({y.name}) = ", y]
        if message is not None:
            data = [message, *data]
        condition = reduce_all(op_func(x, y))
        x_static, y_static = _constant_value(x), _constant_value(y)
        if x_static is not None and y_static is not None:
            _assert_static(bool(np.all(static_func(x_static, y_static))), data)
        return Assert(condition, list(data), summarize=summarize)


def assert_equal(x: Any, y: Any, data: Optional[Sequence[Any]] = None, summarize: Optional[int] = None,
                 message: Optional[str] = None, name: Optional[str] = None) -> Operation:
    """An op failing the run unless ``x == y`` element-wise (after broadcasting). Raises
    ``InvalidArgumentError`` at once when both are constants that differ."""
    from rustgrad.static._generated_ops import equal

    graph = _graph_of(x, y)
    # TF1 opens (and leaves) its name scope once before the check's own: names are `assert_equal_1/...`.
    with graph.name_scope(name or "assert_equal"):
        if x is y:
            return _no_op(graph, "NoOp")
    return _binary_assert("==", "assert_equal", equal, np.equal, x, y, data, summarize, message, name)


def assert_none_equal(x: Any, y: Any, data: Optional[Sequence[Any]] = None, summarize: Optional[int] = None,
                      message: Optional[str] = None, name: Optional[str] = None) -> Operation:
    """An op failing the run unless ``x != y`` element-wise."""
    from rustgrad.static._generated_ops import not_equal

    return _binary_assert("!=", "assert_none_equal", not_equal, np.not_equal, x, y, data, summarize, message, name)


def assert_less(x: Any, y: Any, data: Optional[Sequence[Any]] = None, summarize: Optional[int] = None,
                message: Optional[str] = None, name: Optional[str] = None) -> Operation:
    """An op failing the run unless ``x < y`` element-wise."""
    from rustgrad.static._generated_ops import less

    return _binary_assert("<", "assert_less", less, np.less, x, y, data, summarize, message, name)


def assert_less_equal(x: Any, y: Any, data: Optional[Sequence[Any]] = None, summarize: Optional[int] = None,
                      message: Optional[str] = None, name: Optional[str] = None) -> Operation:
    """An op failing the run unless ``x <= y`` element-wise."""
    from rustgrad.static._generated_ops import less_equal

    return _binary_assert("<=", "assert_less_equal", less_equal, np.less_equal, x, y, data, summarize, message,
                          name)


def assert_greater(x: Any, y: Any, data: Optional[Sequence[Any]] = None, summarize: Optional[int] = None,
                   message: Optional[str] = None, name: Optional[str] = None) -> Operation:
    """An op failing the run unless ``x > y`` element-wise."""
    from rustgrad.static._generated_ops import greater

    return _binary_assert(">", "assert_greater", greater, np.greater, x, y, data, summarize, message, name)


def assert_greater_equal(x: Any, y: Any, data: Optional[Sequence[Any]] = None, summarize: Optional[int] = None,
                         message: Optional[str] = None, name: Optional[str] = None) -> Operation:
    """An op failing the run unless ``x >= y`` element-wise."""
    from rustgrad.static._generated_ops import greater_equal

    return _binary_assert(">=", "assert_greater_equal", greater_equal, np.greater_equal, x, y, data, summarize,
                          message, name)


def _sign_assert(opname: str, condition_text: str, compare: Callable[..., Operation], zero_first: bool,
                 x: Any, data: Optional[Sequence[Any]], summarize: Optional[int], message: Optional[str],
                 name: Optional[str]) -> Operation:
    """TF1's ``assert_positive`` family: ``compare`` of x against a zero of its dtype."""
    prefix = _message_prefix(message)
    graph = _graph_of(x)
    with graph.name_scope(name or opname):
        x = graph._own(convert_to_tensor(x, graph=graph, name="x"))
        if data is None:
            data = [prefix, *condition_text.format(name=x.name).split("|"), x]
        zero = convert_to_tensor(0, x.dtype, graph)
        pair = (zero, x) if zero_first else (x, zero)
        return compare(*pair, data=list(data), summarize=summarize)


def assert_positive(x: Any, data: Optional[Sequence[Any]] = None, summarize: Optional[int] = None,
                    message: Optional[str] = None, name: Optional[str] = None) -> Operation:
    """An op failing the run unless every element of ``x`` is > 0."""
    return _sign_assert("assert_positive", "Condition x > 0 did not hold element-wise:|x ({name}) = ",
                        assert_less, True, x, data, summarize, message, name)


def assert_negative(x: Any, data: Optional[Sequence[Any]] = None, summarize: Optional[int] = None,
                    message: Optional[str] = None, name: Optional[str] = None) -> Operation:
    """An op failing the run unless every element of ``x`` is < 0."""
    return _sign_assert("assert_negative", "Condition x < 0 did not hold element-wise:|x ({name}) = ",
                        assert_less, False, x, data, summarize, message, name)


def assert_non_negative(x: Any, data: Optional[Sequence[Any]] = None, summarize: Optional[int] = None,
                        message: Optional[str] = None, name: Optional[str] = None) -> Operation:
    """An op failing the run unless every element of ``x`` is >= 0."""
    return _sign_assert("assert_non_negative", "Condition x >= 0 did not hold element-wise:|x ({name}) = ",
                        assert_less_equal, True, x, data, summarize, message, name)


def assert_non_positive(x: Any, data: Optional[Sequence[Any]] = None, summarize: Optional[int] = None,
                        message: Optional[str] = None, name: Optional[str] = None) -> Operation:
    """An op failing the run unless every element of ``x`` is <= 0. (TF1's message joins its two
    first texts into one, without a separator; so does this one.)"""
    return _sign_assert("assert_non_positive", "Condition x <= 0 did not hold element-wise:x ({name}) = ",
                        assert_less_equal, False, x, data, summarize, message, name)


def _rank_assert(opname: str, what: str, holds: Callable[[int, int], bool], compare: str, x: Any, rank: Any,
                 data: Optional[Sequence[Any]], summarize: Optional[int], message: Optional[str],
                 name: Optional[str]) -> Operation:
    from rustgrad.static import _generated_ops
    from rustgrad.static._shapes import rank as rank_of
    from rustgrad.static._shapes import shape as shape_of

    graph = _graph_of(x, rank)
    with graph.name_scope(name or opname):
        x = graph._own(convert_to_tensor(x, graph=graph, name="x"))
        rank_t = graph._own(convert_to_tensor(rank, graph=graph, name="rank"))
        prefix = _message_prefix(message)
        if data is None:
            data = [prefix, f"Tensor {x.name} must have {what}", rank_t, "Received shape: ", shape_of(x)]
        assert_type(rank_t, int32)
        rank_static = _constant_value(rank_t)
        if rank_static is not None:
            if rank_static.ndim != 0:
                raise InvalidArgumentError("Rank must be a scalar.")
            x_rank = x.shape.rank
            if x_rank is not None:
                if not holds(x_rank, int(rank_static)):
                    raise InvalidArgumentError(
                        f"{prefix}Tensor {x.name} must have {what} {int(rank_static)}.  Received rank {x_rank}, "
                        f"shape {_shape_string(x)}"
                    )
                return _no_op(graph, "static_checks_determined_all_ok")
        condition = getattr(_generated_ops, compare)(rank_of(x), rank_t)
        return Assert(condition, list(data), summarize=summarize)


def _shape_string(x: Tensor) -> str:
    """A static shape as TF's ``TensorShape.__str__`` writes it: ``(2, 3)``, ``(None,)``, ``<unknown>``."""
    shape = x.shape
    if shape.rank is None:
        return "<unknown>"
    return str(tuple(shape))


def assert_rank(x: Any, rank: Any, data: Optional[Sequence[Any]] = None, summarize: Optional[int] = None,
                message: Optional[str] = None, name: Optional[str] = None) -> Operation:
    """An op failing the run unless ``x`` has rank ``rank``. Raises ``ValueError`` at once when the
    rank is known when the graph is built and differs; returns a no-op when it is known and right."""
    return _rank_assert("assert_rank", "rank", lambda a, r: a == r, "equal", x, rank, data, summarize, message,
                        name)


def assert_rank_at_least(x: Any, rank: Any, data: Optional[Sequence[Any]] = None,
                         summarize: Optional[int] = None, message: Optional[str] = None,
                         name: Optional[str] = None) -> Operation:
    """An op failing the run unless ``x`` has rank ``rank`` or more (see ``assert_rank``)."""
    return _rank_assert("assert_rank_at_least", "rank at least", lambda a, r: a >= r, "greater_equal", x, rank,
                        data, summarize, message, name)


def assert_type(tensor: Any, tf_type: Any, message: Optional[str] = None, name: Optional[str] = None) -> Operation:
    """Checks when the graph is built that ``tensor`` has dtype ``tf_type``: raises ``TypeError``
    otherwise; returns a no-op."""
    expected = as_dtype(tf_type)
    graph = _graph_of(tensor)
    with graph.name_scope(name or "assert_type"):
        t = graph._own(convert_to_tensor(tensor, graph=graph, name="tensor"))
        if t.dtype != expected:
            raise DTypeError(
                f"{_message_prefix(message)}{t.name} must be of type tf.{expected.name}; got tf.{t.dtype.name}"
            )
        return _no_op(graph, "statically_determined_correct_type")


def check_numerics(tensor: Any, message: str, name: Optional[str] = None) -> Tensor:
    """TF1's ``tf.check_numerics``: the value of the float ``tensor``; a run in which it holds NaN
    or Inf fails with ``InvalidArgumentError`` "{message} : Tensor had NaN values" (or Inf, or
    Inf and NaN). Gradients pass through unchanged."""
    if not isinstance(message, str):
        raise ArgumentTypeError(f"check_numerics: 'message' must be a string, got {type(message).__name__}")
    graph = _graph_of(tensor)
    t = graph._own(convert_to_tensor(tensor, graph=graph))
    return Tensor(graph, graph._core.check_numerics(t._id, message, name))


def verify_tensor_all_finite(t: Any = None, msg: Optional[str] = None, name: Optional[str] = None,
                             x: Any = None, message: Optional[str] = None) -> Tensor:
    """TF1's ``tf.verify_tensor_all_finite``: ``check_numerics(t, msg)`` under the scope ``VerifyFinite``
    (``x`` and ``message`` are its newer names for ``t`` and ``msg``)."""
    value = x if t is None else t
    text = message if msg is None else msg
    if value is None or text is None:
        raise ArgumentTypeError("verify_tensor_all_finite: both the tensor (t) and the message (msg) are required")
    graph = _graph_of(value)
    with graph.name_scope(name or "VerifyFinite"):
        return check_numerics(value, text)


def assert_rank_in(x: Any, ranks: Sequence[Any], data: Optional[Sequence[Any]] = None,
                   summarize: Optional[int] = None, message: Optional[str] = None,
                   name: Optional[str] = None) -> Operation:
    """An op failing the run unless the rank of ``x`` is one of ``ranks`` (see ``assert_rank``)."""
    from rustgrad.static._generated_ops import equal, logical_or
    from rustgrad.static._shapes import rank as rank_of
    from rustgrad.static._shapes import shape as shape_of

    graph = _graph_of(x, list(ranks))
    with graph.name_scope(name or "assert_rank_in"):
        x = graph._own(convert_to_tensor(x, graph=graph, name="x"))
        rank_ts = [graph._own(convert_to_tensor(r, graph=graph, name="rank")) for r in ranks]
        prefix = _message_prefix(message)
        if data is None:
            data = [prefix, f"Tensor {x.name} must have rank in", *rank_ts, "Received shape: ", shape_of(x)]
        for r in rank_ts:
            assert_type(r, int32)
        statics = [_constant_value(r) for r in rank_ts]
        if all(s is not None for s in statics):
            if any(s.ndim != 0 for s in statics):
                raise InvalidArgumentError("Rank must be a scalar.")
            x_rank = x.shape.rank
            if x_rank is not None:
                wanted = tuple(int(s) for s in statics)
                if x_rank not in wanted:
                    raise InvalidArgumentError(
                        f"{prefix}Tensor {x.name} must have rank in {wanted}.  Received rank {x_rank}, "
                        f"shape {_shape_string(x)}"
                    )
                return _no_op(graph, "static_checks_determined_all_ok")
        actual = rank_of(x)
        condition = convert_to_tensor(False, graph=graph)
        for r in rank_ts:
            condition = logical_or(condition, equal(r, actual))
        return Assert(condition, list(data), summarize=summarize)


def _has_known_value(size: Any) -> bool:
    if size is None or isinstance(size, Tensor):
        return False
    try:
        int(size)
    except (ValueError, TypeError):
        return False
    return True


def assert_shapes(shapes: Any, data: Optional[Sequence[Any]] = None, summarize: Optional[int] = None,
                  message: Optional[str] = None, name: Optional[str] = None) -> Operation:
    """TF1's ``tf.debugging.assert_shapes``: ``shapes`` pairs tensors with shapes of sizes and
    symbols (``("N", "Q")``, ``(..., "N")``, ``None`` or ``"."`` for any size); a symbol means one
    size wherever it appears. Raises ``ValueError`` (an ``InvalidArgumentError``) when the static
    shapes break a constraint, and otherwise returns an op checking the rest when it runs."""
    from rustgrad.static._control import group
    from rustgrad.static._generated_ops import equal
    from rustgrad.static._shapes import shape as shape_of

    if isinstance(shapes, dict):
        shapes = shapes.items()
    pairs = list(shapes)
    prefix = _message_prefix(message)
    graph = _graph_of(*[t for t, _ in pairs])
    with graph.name_scope(name or "assert_shapes"):
        constraints = [(graph._own(convert_to_tensor(t, graph=graph)), s) for t, s in pairs if s is not None]
        specs = []
        for tensor, symbolic in constraints:
            if not hasattr(symbolic, "__iter__") and not hasattr(symbolic, "__getitem__"):
                raise InvalidArgumentError(
                    f"{prefix}Tensor {tensor.name}.  Specified shape must be an iterable.  An iterable has the "
                    f"attribute `__iter__` or `__getitem__`.  Received specified shape: {symbolic}"
                )
            symbols = tuple(symbolic)
            innermost = False
            for i, symbol in enumerate(symbols):
                if symbol is ... or (isinstance(symbol, str) and symbol == "*"):
                    if i != 0:
                        raise InvalidArgumentError(
                            f"{prefix}Tensor {tensor.name} specified shape index {i}.  Symbol `...` or `*` for a "
                            "variable number of unspecified dimensions is only allowed as the first entry"
                        )
                    innermost = True
            sizes = symbols[1:] if innermost else symbols
            specs.append((tensor, innermost, _dimension_sizes(tensor), sizes or (1,)))
        rank_checks = []
        for tensor, innermost, _, sizes in specs:
            rank = len(sizes)
            if innermost and rank in (0, 1):
                continue
            if innermost:
                check = assert_rank_at_least(tensor, rank, data=data, summarize=summarize, message=message)
            elif rank in (0, 1):
                check = assert_rank_in(tensor, [0, 1], data=data, summarize=summarize, message=message)
            else:
                check = assert_rank(tensor, rank, data=data, summarize=summarize, message=message)
            rank_checks.append(check)
        size_checks = []
        specified: dict[Any, tuple[Any, Tensor, int]] = {}
        for tensor, innermost, actual_sizes, sizes in specs:
            for i, symbol in enumerate(sizes):
                if symbol is None or (isinstance(symbol, str) and symbol == "."):
                    continue
                dim = i - len(sizes) if innermost else i
                if symbol not in specified and not _has_known_value(symbol):
                    specified[symbol] = (actual_sizes[dim], tensor, dim)
                    continue
                if _has_known_value(symbol):
                    size, why = int(symbol), "Specified explicitly"
                else:
                    size, by, at = specified[symbol]
                    why = f"Specified by tensor {by.name} dimension {at}"
                actual = actual_sizes[dim]
                if _has_known_value(actual) and _has_known_value(size):
                    if int(actual) != int(size):
                        raise InvalidArgumentError(
                            f"{prefix}{why}.  Tensor {tensor.name} dimension {dim} must have size {int(size)}.  "
                            f"Received size {int(actual)}, shape {_shape_string(tensor)}"
                        )
                    continue
                condition = equal(convert_to_tensor(actual, int32, graph), convert_to_tensor(size, int32, graph))
                items = data if data is not None else [
                    prefix, why, f"Tensor {tensor.name} dimension", dim, "must have size", size,
                    "Received shape: ", shape_of(tensor)]
                size_checks.append(Assert(condition, list(items), summarize=summarize))
        # Without control dependencies one group runs them all; rank checks come first (older nodes run first).
        with graph.as_default():
            return group(*rank_checks, *size_checks)


def _dimension_sizes(x: Tensor) -> list:
    """Each dimension's size: an int when it is static, else a 0-d int32 tensor read at run time."""
    from rustgrad.static._shapes import shape as shape_of

    shape = x.shape
    if shape.rank == 0:
        return [1]
    if shape.rank is None:
        dynamic = shape_of(x)
        return _DynamicSizes(dynamic)
    dynamic = shape_of(x) if any(d is None for d in shape) else None
    return [int(d) if d is not None else dynamic[i] for i, d in enumerate(shape)]


class _DynamicSizes:
    """The sizes of a tensor of unknown rank: ``sizes[i]`` slices its run-time shape."""

    def __init__(self, shape: Tensor) -> None:
        self._shape = shape

    def __getitem__(self, i: int) -> Tensor:
        return self._shape[i]
