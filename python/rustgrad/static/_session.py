"""Sessions: each holds its own variable values and runs compiled plans.

The first ``run`` with a given set of fetches and fed tensors compiles a plan in
Rust (pruned to what the fetches need); later runs reuse it and execute in one
call into Rust with the GIL released. A session keeps the plans of its
``PLAN_CACHE_CAPACITY`` (64) most recently used sets of fetches and feeds; the
least recently used plan is dropped when another is compiled, and compiled
again if its fetches are run again.

``run`` may be called from several threads on one Session: each run reads the
variable values as of its start and stores its assignments when it ends; runs
that assign the same variable concurrently store their results in the order
they finish.
"""

from __future__ import annotations

import abc
import threading
from typing import Any, Optional

import numpy as np

from rustgrad._rustgrad import SessionCore
from rustgrad.errors import FailedPreconditionError, InvalidArgumentError
from rustgrad.static._dtypes import numpy_dtype
from rustgrad.static._graph import Graph, Operation, Tensor, get_default_graph


class RunOptions:
    """Options of one ``Session.run``. ``RunOptions(trace=True)`` (or TF1's
    ``trace_level=RunOptions.FULL_TRACE``) records the time of every node."""

    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3

    def __init__(self, trace_level: int = 0, trace: bool = False) -> None:
        self.trace_level = trace_level
        self.trace = bool(trace) or trace_level > 0


class RunMetadata:
    """Filled by a traced run, in execution order: ``node_times`` lists (node name, op, seconds);
    ``node_memory`` lists (step, node name, op, stored, released) per step of the plan, where
    ``stored`` holds the (step, bytes, buffer) of each value the step allocated (``buffer`` is
    its number in the plan's memory plan, or None) and ``released`` the steps whose values
    are freed after it. ``python -m rustgrad profile --memory`` prints it as lifetimes."""

    def __init__(self) -> None:
        self.node_times: list[tuple[str, str, float]] = []
        self.node_memory: list[tuple[int, str, str, list[tuple[int, int, Optional[int]]], list[int]]] = []

    def top(self, n: int = 10) -> list[tuple[str, str, float]]:
        """The ``n`` slowest nodes of the run, slowest first."""
        return sorted(self.node_times, key=lambda entry: entry[2], reverse=True)[:n]


class _SessionStack(threading.local):
    def __init__(self) -> None:
        self.stack: list[Session] = []


_session_stack = _SessionStack()

#: How many compiled plans a Session keeps (least recently used dropped first).
PLAN_CACHE_CAPACITY: int = SessionCore.plan_cache_capacity


def get_default_session() -> Session:
    if not _session_stack.stack:
        raise FailedPreconditionError(
            "No default session is registered. Use `with Session() as sess:` or pass session="
        )
    return _session_stack.stack[-1]


class Session:
    """Runs parts of a graph. Use as a context manager, or call ``close()``.

    It keeps the compiled plans of its ``PLAN_CACHE_CAPACITY`` (64) most recently
    used sets of fetches and feeds, so running ever new fetch sets uses bounded memory.
    """

    def __init__(self, target: str = "", graph: Optional[Graph] = None, config: Any = None) -> None:
        self.graph = graph if graph is not None else get_default_graph()
        self._core = SessionCore(self.graph._core)
        self._known_fetches: dict[Any, _Fetches] = {}
        self._known_feeds: dict[tuple, tuple[list[int], list[tuple[Any, Any]]]] = {}

    def __enter__(self) -> Session:
        _session_stack.stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if _session_stack.stack and _session_stack.stack[-1] is self:
            _session_stack.stack.pop()
        self.close()

    def as_default(self) -> Session:
        return self

    def close(self) -> None:
        self._core.close()

    @property
    def closed(self) -> bool:
        return self._core.closed

    def _plan_cache_size(self) -> int:
        """How many compiled plans the session holds (at most ``PLAN_CACHE_CAPACITY``)."""
        return self._core.plan_cache_size()

    def run(self, fetches: Any, feed_dict: Optional[dict] = None, options: Any = None,
            run_metadata: Any = None) -> Any:
        """Computes ``fetches`` (a tensor, op, variable, or any nesting of lists, tuples and
        dicts of them) and returns numpy values in the same structure."""
        if self._core.closed:
            raise FailedPreconditionError("Attempted to use a closed Session.")
        fetched = self._fetches(fetches)
        feed_ids, feed_values = self._feeds(feed_dict or {})
        trace: Optional[list] = [] if options is not None and getattr(options, "trace", False) else None
        memory: Optional[list] = [] if trace is not None else None
        results = self._core.run(fetched.ids, feed_ids, feed_values, trace, memory)
        if trace is not None and run_metadata is not None:
            run_metadata.node_times = trace
            run_metadata.node_memory = memory
        return fetched.values(results)

    def _fetches(self, fetches: Any) -> _Fetches:
        """``fetches`` resolved to graph nodes; remembered for the next run of the same fetches."""
        key = _structure_key(fetches)
        known = self._known_fetches.get(key) if key is not None else None
        if known is None:
            leaves: list[Any] = []
            template = _flatten(fetches, leaves)
            leaves = [self._resolve(leaf) for leaf in leaves]
            parts = [part for leaf in leaves for part in _parts(leaf)]
            known = _Fetches(template, leaves, parts, [self._node_of(part, "Fetch") for part in parts])
            _remember(self._known_fetches, key, known)
        return known

    def _resolve(self, item: Any) -> Any:
        """A name ("loss:0" for a tensor, "train" for an operation) as the graph object it names."""
        if isinstance(item, str):
            return (self.graph.get_tensor_by_name(item) if ":" in item
                    else self.graph.get_operation_by_name(item))
        return item

    def _node_of(self, item: Any, role: str) -> int:
        if not isinstance(item, (Tensor, Operation)):
            raise InvalidArgumentError(
                f"{role} argument {item!r} has invalid type {type(item).__name__}, must be a "
                "Tensor, Operation, Variable or a string name"
            )
        if item.graph is not self.graph:
            raise InvalidArgumentError(
                f"{role} argument {item!r} cannot be interpreted as a Tensor. "
                f"({getattr(item, 'name', item)} is not an element of this graph.)"
            )
        return item._id

    def _feeds(self, feed_dict: dict) -> tuple[list[int], list[np.ndarray]]:
        """The fed nodes in increasing order, and their values as arrays of their dtypes. The
        nodes and dtypes of a set of keys are remembered for the next run that feeds the same keys."""
        key = tuple(feed_dict)
        known = self._known_feeds.get(key)
        if known is not None:
            try:
                return known[0], [np.asarray(feed_dict[given], dtype=dtype, order="C") for given, dtype in known[1]]
            except (TypeError, ValueError):
                pass  # the full check below raises with the key's name
        pairs = []
        key_of: dict[int, Any] = {}
        for given, value in feed_dict.items():
            tensor = self._resolve(given)
            node = self._node_of(tensor, "Feed")
            if not isinstance(tensor, Tensor):
                raise InvalidArgumentError(f"Cannot feed an Operation: {tensor!r}")
            if node in key_of:
                raise InvalidArgumentError(
                    f"placeholder '{tensor.name}' is fed twice in one feed_dict, under the keys {key_of[node]!r} "
                    f"and {given!r}; feed each placeholder once"
                )
            key_of[node] = given
            dtype = numpy_dtype(tensor.dtype)
            try:
                array = np.asarray(value, dtype=dtype, order="C")
            except (TypeError, ValueError) as err:
                raise InvalidArgumentError(
                    f"Cannot feed value of type {type(value).__name__} for Tensor '{tensor.name}' "
                    f"of dtype {tensor.dtype.name}: {err}"
                ) from None
            pairs.append((node, given, dtype, array))
        pairs.sort(key=lambda p: p[0])
        _remember(self._known_feeds, key, ([p[0] for p in pairs], [(p[1], p[2]) for p in pairs]))
        return [p[0] for p in pairs], [p[3] for p in pairs]


#: How many fetch structures and sets of feed keys a Session keeps resolved; a program that
#: builds new fetch lists of new tensors every step resolves them again, in bounded memory.
RESOLVED_CAPACITY = 64


def _remember(cache: dict, key: Any, value: Any) -> None:
    if key is None:
        return
    if len(cache) >= RESOLVED_CAPACITY:
        cache.clear()
    cache[key] = value


def _structure_key(fetches: Any) -> Any:
    """A dict key that equals another's exactly when both name the same fetches in the same
    structure (a graph element, a name, or a flat list or tuple of them), or None."""
    if isinstance(fetches, (list, tuple)) and not hasattr(fetches, "_fields"):
        key: Any = (type(fetches), *fetches)
    elif isinstance(fetches, (Tensor, Operation, str)):
        key = fetches
    else:
        return None
    try:
        hash(key)
    except TypeError:  # nested lists, or something the full check rejects
        return None
    return key


class _Fetches:
    """A run's fetches resolved once: the nodes to fetch, and how their values go back into the
    structure the caller gave."""

    __slots__ = ("template", "leaves", "ids", "is_op", "shape")

    def __init__(self, template: Any, leaves: list[Any], parts: list[Any], ids: list[int]) -> None:
        self.template, self.leaves, self.ids = template, leaves, ids
        self.is_op = [isinstance(part, Operation) for part in parts]
        plain = not any(isinstance(leaf, CompositeFetch) for leaf in leaves)
        flat = type(template) in (list, tuple) and all(isinstance(t, _Leaf) for t in template)
        # "one": a single tensor or op; "flat": a list or tuple of them; "nested": anything else
        self.shape = "one" if plain and isinstance(template, _Leaf) else "flat" if plain and flat else "nested"

    def values(self, results: list[Any]) -> Any:
        values = [None if is_op else _scalarise(r) for is_op, r in zip(self.is_op, results)]
        if self.shape == "one":
            return values[0]
        if self.shape == "flat":
            return type(self.template)(values)
        return _rebuild(self.template, iter(_assembled(self.leaves, values)))


class CompositeFetch(abc.ABC):
    """A fetch made of graph tensors: ``run`` fetches its ``_fetch_parts`` and returns
    ``_from_fetched(their values)`` (a summary's serialized ``Summary``, rustgrad.static.summary)."""

    _fetch_parts: list[Tensor]

    @abc.abstractmethod
    def _from_fetched(self, values: list[Any]) -> Any: ...


def _parts(leaf: Any) -> list[Any]:
    return leaf._fetch_parts if isinstance(leaf, CompositeFetch) else [leaf]


def _assembled(leaves: list[Any], values: list[Any]) -> list[Any]:
    """One value per fetch: a composite fetch's from the values of its parts."""
    out, start = [], 0
    for leaf in leaves:
        size = len(_parts(leaf))
        chunk = values[start:start + size]
        out.append(leaf._from_fetched(chunk) if isinstance(leaf, CompositeFetch) else chunk[0])
        start += size
    return out


class InteractiveSession(Session):
    """A Session that makes itself the default on creation."""

    def __init__(self, target: str = "", graph: Optional[Graph] = None, config: Any = None) -> None:
        super().__init__(target, graph, config)
        _session_stack.stack.append(self)


def _scalarise(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


def _flatten(fetches: Any, leaves: list[Any]) -> Any:
    """A template of the fetch structure; leaves are replaced by their index in ``leaves``."""
    if isinstance(fetches, (list, tuple)) and not hasattr(fetches, "_fields"):
        return type(fetches)(_flatten(f, leaves) for f in fetches)
    if isinstance(fetches, tuple):  # namedtuple
        return type(fetches)(*(_flatten(f, leaves) for f in fetches))
    if isinstance(fetches, dict):
        return {k: _flatten(v, leaves) for k, v in fetches.items()}
    leaves.append(fetches)
    return _Leaf()


class _Leaf:
    __slots__ = ()


def _rebuild(template: Any, values: Any) -> Any:
    if isinstance(template, _Leaf):
        return next(values)
    if isinstance(template, (list, tuple)) and not hasattr(template, "_fields"):
        return type(template)(_rebuild(t, values) for t in template)
    if isinstance(template, tuple):
        return type(template)(*(_rebuild(t, values) for t in template))
    if isinstance(template, dict):
        return {k: _rebuild(v, values) for k, v in template.items()}
    return template
