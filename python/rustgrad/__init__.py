"""rustgrad: reverse-mode autograd with a Rust core.

``import rustgrad as torch`` gives the PyTorch-shaped eager API;
``import rustgrad.compat.v1 as tf`` gives the TF1-shaped static API.
"""

from __future__ import annotations

import os as _os

from rustgrad import _composites, _rustgrad, autograd, cuda, errors, nn, optim, return_types, utils, viz
from rustgrad._comparisons import allclose, equal
from rustgrad._composites import chunk, split, unbind
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
    bmm,
    clamp,
    clip,
    div,
    floor_divide,
    is_tensor,
    matmul,
    maximum,
    mean,
    minimum,
    mm,
    mul,
    numel,
    remainder,
    reshape,
    sub,
    sum,
    t,
    transpose,
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
from rustgrad._indexing import index_put, nonzero
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
from rustgrad._reductions import max, min, sort, std_mean, topk, var_mean
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
from rustgrad.nn.functional import cosine_similarity
from rustgrad.serialization import load, save

__version__: str = _rustgrad.__version__

# Data-parallel training over MPI (rustgrad/distributed/); mpi4py is imported only by init_process_group.
from rustgrad import distributed  # noqa: E402

_composites.add_methods(Tensor)

# torch.conv1d/conv2d/conv_transpose2d take an optional bias, which the table's ops leave to Python.
conv1d = nn.functional.conv1d
conv2d = nn.functional.conv2d
conv_transpose2d = nn.functional.conv_transpose2d

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
    "Tensor", "add", "allclose", "chunk", "cosine_similarity",
    "from_dlpack", "amax", "amin", "arange", "as_tensor", "autograd", "bmm",
    "bool", "clamp", "clip", "cuda", "equal",
    "device", "div", "double", "dtype", "empty", "empty_cache", "enable_grad", "errors", "eye",
    "float", "float32", "float64", "floor_divide", "from_numpy", "full", "full_like",
    "get_num_threads", "index_put", "inference_mode", "int", "int32", "int64", "is_grad_enabled", "is_tensor",
    "linspace", "long", "manual_seed", "matmul", "maximum", "mean", "memory_cached", "minimum", "mm", "mul",
    "no_grad", "nonzero", "numel", "ones", "ones_like", "rand", "rand_like", "randn", "randn_like",
    "remainder", "reshape", "set_grad_enabled", "set_num_threads", "split",
    "sub", "sum", "t", "tensor", "transpose", "uint8", "unbind", "where", "zeros",
    "zeros_like", "_dtype_from_name", "load", "nn", "optim", "save", "utils", "viz",
    "max", "min", "return_types", "sort", "std_mean", "topk", "var_mean",
]
# Random numbers (rustgrad/_random.py).
__all__ += [
    "Generator", "bernoulli", "default_generator", "empty_like", "get_rng_state", "initial_seed", "multinomial",
    "normal", "randint", "randint_like", "randperm", "seed", "set_rng_state",
]
__all__ += _op_table_names
# Data-parallel training over MPI (rustgrad/distributed/).
__all__ += ["distributed"]
# Kernel threads' spin setting (rust/python/threading.rs, docs/performance.md "Threads").
from rustgrad._rustgrad import get_spin_us, set_spin_us  # noqa: E402

if (_spin_problem := _rustgrad._spin_us_env_problem()) is not None:
    import warnings as _warnings

    _warnings.warn(_spin_problem, RuntimeWarning, stacklevel=2)
__all__ += ["get_spin_us", "set_spin_us"]
