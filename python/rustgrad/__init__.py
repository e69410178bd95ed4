"""rustgrad: reverse-mode autograd with a Rust core.

``import rustgrad as torch`` gives the PyTorch-shaped eager API;
``import rustgrad.compat.v1 as tf`` gives the TF1-shaped static API.
"""

from __future__ import annotations

import os as _os

from rustgrad import _rustgrad, autograd, cuda, errors, nn, optim, viz
from rustgrad._creation import (
    _dtype_from_name,
    arange,
    as_tensor,
    empty,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randn,
    randn_like,
    tensor,
    zeros,
    zeros_like,
)
from rustgrad._functions import (
    add,
    amax,
    amin,
    clamp,
    clip,
    div,
    eq,
    flatten,
    floor_divide,
    ge,
    gt,
    is_tensor,
    le,
    lt,
    matmul,
    maximum,
    mean,
    minimum,
    mm,
    mul,
    ne,
    numel,
    pow,
    remainder,
    reshape,
    squeeze,
    sub,
    sum,
    t,
    transpose,
    unsqueeze,
    where,
)
from rustgrad._generated_ops import *  # noqa: F403 - the op table's functions
from rustgrad._generated_ops import __all__ as _op_table_names
from rustgrad._grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from rustgrad._random import (
    bernoulli,
    default_generator,
    empty_like,
    get_rng_state,
    initial_seed,
    manual_seed,
    multinomial,
    normal,
    randint,
    randint_like,
    randperm,
    seed,
    set_rng_state,
)
from rustgrad._rustgrad import (
    Generator,
    Tensor,
    device,
    dtype,
    empty_cache,
    from_dlpack,
    get_num_threads,
    memory_cached,
    set_num_threads,
)
from rustgrad.serialization import load, save

__version__: str = _rustgrad.__version__

float32 = _rustgrad.float32
float64 = _rustgrad.float64
int64 = _rustgrad.int64
int32 = _rustgrad.int32
uint8 = _rustgrad.uint8
bool = _rustgrad.bool
float = float32
double = float64
long = int64
int = int32

# The parent's rayon workers do not exist in a forked child; let the child build its own pool.
if hasattr(_os, "register_at_fork"):
    _os.register_at_fork(after_in_child=_rustgrad._after_fork_in_child)

__all__ = [
    "Tensor", "add", "from_dlpack", "amax", "amin", "arange", "as_tensor", "autograd", "bool", "clamp",
    "clip", "cuda",
    "device", "div", "double", "dtype", "empty", "empty_cache", "enable_grad", "eq", "errors", "eye",
    "flatten", "float", "float32", "float64", "floor_divide", "from_numpy", "full", "full_like", "ge",
    "get_num_threads", "gt", "inference_mode", "int", "int32", "int64", "is_grad_enabled", "is_tensor", "le",
    "linspace", "long", "lt", "manual_seed", "matmul", "maximum", "mean", "memory_cached", "minimum", "mm", "mul", "ne",
    "no_grad", "numel", "ones", "ones_like", "pow", "rand", "rand_like", "randn", "randn_like",
    "remainder", "reshape", "set_grad_enabled", "set_num_threads",
    "squeeze", "sub", "sum", "t", "tensor", "transpose", "uint8", "unsqueeze", "where", "zeros",
    "zeros_like", "_dtype_from_name", "load", "nn", "optim", "save", "viz",
]
# Random numbers (rustgrad/_random.py).
__all__ += [
    "Generator", "bernoulli", "default_generator", "empty_like", "get_rng_state", "initial_seed", "multinomial",
    "normal", "randint", "randint_like", "randperm", "seed", "set_rng_state",
]
__all__ += _op_table_names
