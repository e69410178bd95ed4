"""rustgrad.static: TF1-style graphs compiled once and run by Sessions.

Also importable as ``rustgrad.compat.v1``, so ``import rustgrad.compat.v1 as tf``
runs TF1 programs. Building a graph computes nothing; ``Session.run`` compiles
the part of the graph that the fetches need into a plan (cached) and executes
it in Rust with the same kernels and derivative rules as eager mode.
"""

from __future__ import annotations

from rustgrad import _rustgrad
from rustgrad.static import errors, linalg, losses, math, nn, random, summary, train
from rustgrad.static._comparisons import allclose
from rustgrad.static._composites import split, unstack
from rustgrad.static._creation import fill, range
from rustgrad.static._dtypes import as_dtype, bool_, float32, float64, int32, int64, uint8
from rustgrad.static._generated_ops import *  # noqa: F403 - the op table's TF1 functions
from rustgrad.static._generated_ops import __all__ as _op_table_names
from rustgrad.static._gradients import gradients, hessians
from rustgrad.static._graph import (
    Graph,
    Operation,
    Tensor,
    TensorShape,
    convert_to_tensor,
    get_default_graph,
    reset_default_graph,
)
from rustgrad.static._ops import (
    add,
    add_n,
    bmm,
    cast,
    clip_by_value,
    constant,
    div,
    divide,
    floordiv,
    floormod,
    identity,
    matmul,
    maximum,
    minimum,
    mod,
    multiply,
    ones,
    ones_like,
    placeholder,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_sum,
    reshape,
    stop_gradient,
    subtract,
    truediv,
    where,
    zeros,
    zeros_like,
)
from rustgrad.static._random import (
    get_seed,
    random_normal,
    random_shuffle,
    random_uniform,
    set_random_seed,
    truncated_normal,
)
from rustgrad.static._reductions import sort
from rustgrad.static._session import InteractiveSession, RunMetadata, RunOptions, Session, get_default_session
from rustgrad.static._shapes import rank, shape, size
from rustgrad.static._variables import (
    Variable,
    global_variables,
    global_variables_initializer,
    initialize_all_variables,
    trainable_variables,
    variables_initializer,
)

bool = bool_  # noqa: A001 - TF's name
double = float64
DType = _rustgrad.dtype

# TF1's ``tf.math`` names of ops outside the op table (math.py is generated from the table).
for _name in ("divide", "truediv", "floordiv", "floormod", "mod"):
    setattr(math, _name, globals()[_name])


def disable_v2_behavior() -> None:
    """Accepted for TF1 programs; rustgrad.static is always graph mode."""


def disable_eager_execution() -> None:
    """Accepted for TF1 programs; rustgrad.static is always graph mode."""


__all__ = [
    "DType", "Graph", "InteractiveSession", "Operation", "RunMetadata", "RunOptions", "Session", "Tensor",
    "TensorShape", "Variable",
    "add", "add_n", "allclose", "as_dtype", "bool", "cast", "clip_by_value", "constant", "convert_to_tensor",
    "disable_eager_execution", "disable_v2_behavior", "div", "divide", "double", "errors",
    "float32", "float64", "floordiv", "floormod", "get_default_graph", "get_default_session", "global_variables",
    "global_variables_initializer", "gradients", "identity",
    "initialize_all_variables", "int32", "int64", "matmul", "maximum", "minimum", "mod",
    "multiply", "nn", "ones", "ones_like", "placeholder",
    "random_normal", "random_uniform", "reduce_max", "reduce_mean", "reduce_min", "reduce_sum", "reset_default_graph",
    "reshape", "split", "stop_gradient", "subtract",
    "trainable_variables", "truediv", "uint8", "unstack", "variables_initializer", "where", "zeros",
    "zeros_like", "linalg", "losses", "train", "math", "sort",
]
# Creation and random ops (static/_creation.py, static/_random.py).
__all__ += [
    "fill", "get_seed", "random", "random_shuffle", "range", "set_random_seed", "truncated_normal",
]
# Shape introspection (static/_shapes.py).
__all__ += ["rank", "shape", "size"]
# torch's bmm, an extension (static/_ops.py).
__all__ += ["bmm"]
__all__ += _op_table_names
# Clipping by norm (static/_clipping.py); the global step, schedules, RMSProp/Adagrad and the
# Saver's retention are in ``train`` (static/_global_step.py, _schedules.py, _tf_optimizers.py, _saver.py).
from rustgrad.static._clipping import clip_by_global_norm, clip_by_norm, global_norm  # noqa: E402

__all__ += ["clip_by_global_norm", "clip_by_norm", "global_norm"]

# Name and variable scopes, get_variable, initializers, collections (static/_scopes.py,
# static/_initializers.py, static/_collections.py, static/_variables.py).
from rustgrad.static._collections import (  # noqa: E402
    GraphKeys,
    add_to_collection,
    add_to_collections,
    get_collection,
    get_collection_ref,
    get_name_scope,
    name_scope,
)
from rustgrad.static._initializers import (  # noqa: E402
    constant_initializer,
    glorot_normal_initializer,
    glorot_uniform_initializer,
    initializers,
    ones_initializer,
    random_normal_initializer,
    random_uniform_initializer,
    truncated_normal_initializer,
    variance_scaling_initializer,
    zeros_initializer,
)
from rustgrad.static._scopes import (  # noqa: E402
    AUTO_REUSE,
    VariableScope,
    get_local_variable,
    get_variable,
    get_variable_scope,
    no_regularizer,
    variable_scope,
)
from rustgrad.static._variables import (  # noqa: E402
    assign,
    assign_add,
    assign_sub,
    local_variables,
    model_variables,
)

__all__ += [
    "AUTO_REUSE", "GraphKeys", "VariableScope", "add_to_collection", "add_to_collections", "assign", "assign_add",
    "assign_sub", "constant_initializer", "get_collection", "get_collection_ref", "get_local_variable",
    "get_name_scope", "get_variable", "get_variable_scope", "glorot_normal_initializer",
    "glorot_uniform_initializer", "initializers", "local_variables", "model_variables", "name_scope",
    "no_regularizer", "ones_initializer", "random_normal_initializer", "random_uniform_initializer",
    "truncated_normal_initializer", "variable_scope", "variance_scaling_initializer", "zeros_initializer",
]

# tf.layers (static/layers.py).
from rustgrad.static import layers  # noqa: E402

__all__ += ["layers"]
# tf.summary and FileWriter (static/summary.py).
__all__ += ["summary"]
# Ordering side effects (static/_control.py).
from rustgrad.static._control import control_dependencies, group, no_op, tuple  # noqa: E402

__all__ += ["control_dependencies", "group", "no_op", "tuple"]

# Debugging: tf.Print, tf.Assert, the tf.assert_* checks and check_numerics (static/_debugging.py,
# static/debugging.py).
from rustgrad.static import debugging  # noqa: E402
from rustgrad.static._debugging import (  # noqa: E402
    Assert,
    Print,
    assert_equal,
    assert_greater,
    assert_greater_equal,
    assert_less,
    assert_less_equal,
    assert_negative,
    assert_non_negative,
    assert_non_positive,
    assert_none_equal,
    assert_positive,
    assert_rank,
    assert_rank_at_least,
    assert_rank_in,
    assert_type,
    check_numerics,
    verify_tensor_all_finite,
)

__all__ += [
    "Assert", "Print", "assert_equal", "assert_greater", "assert_greater_equal", "assert_less", "assert_less_equal",
    "assert_negative", "assert_non_negative", "assert_non_positive", "assert_none_equal", "assert_positive",
    "assert_rank", "assert_rank_at_least", "assert_rank_in", "assert_type", "check_numerics", "debugging",
    "verify_tensor_all_finite",
]
# Second derivatives (lead, issue 16; static/_gradients.py).
__all__ += ["hessians"]

# Static control flow (issue 16, ctrlflow).
from rustgrad.static import _nest as nest  # noqa: E402
from rustgrad.static._control_flow import case, cond, switch_case, while_loop  # noqa: E402

__all__ += ["case", "cond", "nest", "switch_case", "while_loop"]
from rustgrad.static._functional import foldl, foldr, map_fn, scan  # noqa: E402

__all__ += ["foldl", "foldr", "map_fn", "scan"]
