"""rustgrad: reverse-mode autograd with a Rust core.

``import rustgrad as torch`` gives the PyTorch-shaped eager API;
``import rustgrad.compat.v1 as tf`` gives the TF1-shaped static API.
"""

from __future__ import annotations

import importlib as _importlib
import os as _os
from typing import TYPE_CHECKING, Any

from rustgrad import _composites, _rustgrad, autograd, cuda, errors, return_types
from rustgrad._comparisons import allclose, equal
from rustgrad._compile import compile
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
    addcdiv,
    addcmul,
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

__version__: str = _rustgrad.__version__

_composites.add_methods(Tensor)

# Imported on first use, so that a program that only needs tensors and autograd (the reference
# eager program) does not pay for the framework's memory: 6.5 MiB of RSS (benchmarks/memory.py).
_LAZY_SUBMODULES = frozenset({"distributed", "nn", "optim", "serialization", "utils", "viz"})
_LAZY_NAMES = {
    "load": "rustgrad.serialization",
    "save": "rustgrad.serialization",
    "cosine_similarity": "rustgrad.nn.functional",
    # torch.conv1d/conv2d/conv_transpose2d take an optional bias, which the table's ops leave to Python.
    "conv1d": "rustgrad.nn.functional",
    "conv2d": "rustgrad.nn.functional",
    "conv_transpose2d": "rustgrad.nn.functional",
}

# The op table's conv functions take no bias; the names resolve to nn.functional's, on first use.
for _name in ("conv1d", "conv2d", "conv_transpose2d"):
    globals().pop(_name, None)

if TYPE_CHECKING:
    from rustgrad import distributed, nn, optim, utils, viz
    from rustgrad import serialization as serialization
    from rustgrad.nn.functional import conv1d as conv1d
    from rustgrad.nn.functional import conv2d as conv2d
    from rustgrad.nn.functional import conv_transpose2d as conv_transpose2d
    from rustgrad.nn.functional import cosine_similarity
    from rustgrad.serialization import load, save


def __getattr__(name: str) -> Any:
    if name in _LAZY_SUBMODULES:
        return _importlib.import_module(f"rustgrad.{name}")
    module = _LAZY_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'rustgrad' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY_SUBMODULES | set(_LAZY_NAMES))


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
    "Tensor", "add", "addcdiv", "addcmul", "allclose", "chunk", "cosine_similarity",
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
# rustgrad.compile / torch.compile (rustgrad/_compile.py, rust/compile/).
__all__ += ["compile"]
