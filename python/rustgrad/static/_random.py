"""TF1's random ops and seeds.

A random node draws new values each time a ``Session.run`` computes it. Seeds follow
TF1 (``tf.get_seed``): with a graph-level seed (``set_random_seed``) or an op-level
``seed=``, each session repeats the same sequence of values run after run; with
neither, values come from rustgrad's default generator (``rustgrad.manual_seed``
seeds it).
"""

from __future__ import annotations

from typing import Any, Optional

from rustgrad.errors import DTypeError, InvalidArgumentError
from rustgrad.static._dtypes import as_dtype, float32
from rustgrad.static._graph import Tensor, convert_to_tensor, get_default_graph

# TF1's graph seed for ops that have an op seed in a graph without one.
DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1
_FLOATS = ("float32", "float64")
_INTEGERS = ("int32", "int64")


def set_random_seed(seed: Optional[int]) -> None:
    """Sets the default graph's seed: its random ops then repeat their values in every
    session (each op its own sequence), as TF1's. None removes it."""
    get_default_graph().seed = None if seed is None else int(seed)


def get_seed(op_seed: Optional[int]) -> tuple[Optional[int], Optional[int]]:
    """The (graph seed, op seed) pair a random op made now uses, as TF1's ``tf.get_seed``:
    ``(None, None)`` when neither the graph nor the op has a seed."""
    graph = get_default_graph()
    graph_seed = graph.seed
    if graph_seed is not None:
        seeds = (graph_seed, graph._core.num_nodes() if op_seed is None else int(op_seed))
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, int(op_seed))
    else:
        return None, None
    # TF's kernels read (0, 0) as "no seed".
    return (0, _MAXINT32) if seeds == (0, 0) else seeds


def _core_seed(op_seed: Optional[int]) -> Optional[tuple[int, int]]:
    graph_seed, op = get_seed(op_seed)
    if graph_seed is None or op is None:
        return None
    return graph_seed % 2**64, op % 2**64


def _random(op: str, kind: str, shape: Any, a: Any, b: Any, dtype: Any, seed: Optional[int],
            name: Optional[str]) -> Tensor:
    """A random node; ``shape`` is a sequence of ints or a 1-D integer graph tensor."""
    from rustgrad.static._shapes import is_shape_tensor, shape_tensor

    graph = get_default_graph()
    if is_shape_tensor(shape):
        dims = shape_tensor(op, shape, graph)._id
        node = graph._core.random(kind, a, b, [], as_dtype(dtype), _core_seed(seed), name, dims)
    else:
        node = graph._core.random(kind, a, b, _shape(op, shape), as_dtype(dtype), _core_seed(seed), name)
    return Tensor(graph, node)


def _shape(op: str, shape: Any) -> list[int]:
    sizes = [shape] if isinstance(shape, int) else list(shape)
    if any(not isinstance(s, int) and not hasattr(s, "__index__") for s in sizes) or any(int(s) < 0 for s in sizes):
        raise InvalidArgumentError(f"{op}: shape must be a list of non-negative ints or a 1-D int tensor, "
                                   f"got {shape!r}")
    return [int(s) for s in sizes]


def _float_dtype(op: str, dtype: Any) -> Any:
    dt = as_dtype(dtype)
    if dt.name not in _FLOATS:
        raise DTypeError(f"{op}: dtype must be a float type (float32 or float64), got {dt.name}")
    return dt


def random_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = float32,
                  seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """Samples from N(mean, stddev²), new ones each time a run computes them. ``shape`` is a
    list of ints or a 1-D integer tensor (``tf.shape(x)``)."""
    dt = _float_dtype("random_normal", dtype)
    return _random("random_normal", "normal", shape, float(mean), float(stddev), dt, seed, name)


def random_uniform(shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = float32,
                   seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """Samples from U[minval, maxval) (maxval 1 by default for floats); for int32 or int64,
    integers in [minval, maxval), where ``maxval`` is required, as TF1."""
    dt = as_dtype(dtype)
    if dt.name in _INTEGERS:
        if maxval is None:
            raise InvalidArgumentError(f"Must specify maxval for integer dtype {dt.name}")
        low, high = int(minval), int(maxval)
        if low >= high:
            raise InvalidArgumentError(f"random_uniform: Need minval < maxval: {low} >= {high}")
        return _random("random_uniform", "integers", shape, low, high, dt, seed, name)
    if dt.name not in _FLOATS:
        raise DTypeError(f"random_uniform: dtype must be float32, float64, int32 or int64, got {dt.name}")
    high = 1.0 if maxval is None else float(maxval)
    return _random("random_uniform", "uniform", shape, float(minval), high, dt, seed, name)


def truncated_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = float32,
                     seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """Samples from N(mean, stddev²) with those more than two standard deviations from the mean
    drawn again, as TF1's."""
    dt = _float_dtype("truncated_normal", dtype)
    return _random("truncated_normal", "truncated_normal", shape, float(mean), float(stddev), dt, seed, name)


def random_shuffle(value: Any, seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """``value`` with its first dim in a new random order each time a run computes it."""
    x = convert_to_tensor(value)
    return Tensor(x.graph, x.graph._core.shuffle(x._id, _core_seed(seed), name))
