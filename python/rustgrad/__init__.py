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
    abs,
    add,
    amax,
    amin,
    bmm,
    clamp,
    clip,
    div,
    eq,
    exp,
    flatten,
    ge,
    gt,
    is_tensor,
    le,
    log,
    lt,
    matmul,
    maximum,
    mean,
    minimum,
    mm,
    mul,
    ne,
    neg,
    numel,
    pow,
    relu,
    reshape,
    sigmoid,
    sign,
    sqrt,
    square,
    squeeze,
    sub,
    sum,
    t,
    tanh,
    transpose,
    unsqueeze,
    where,
)
from rustgrad._grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from rustgrad._rustgrad import (
    Tensor,
    device,
    dtype,
    empty_cache,
    from_dlpack,
    get_num_threads,
    manual_seed,
    memory_cached,
    set_num_threads,
)
from rustgrad.serialization import load, save

__version__: str = _rustgrad.__version__

float32 = _rustgrad.float32
float64 = _rustgrad.float64
bool = _rustgrad.bool
float = float32
double = float64

# The parent's rayon workers do not exist in a forked child; let the child build its own pool.
if hasattr(_os, "register_at_fork"):
    _os.register_at_fork(after_in_child=_rustgrad._after_fork_in_child)

__all__ = [
    "Tensor", "abs", "add", "from_dlpack", "amax", "amin", "arange", "as_tensor", "autograd", "bmm", "bool", "clamp",
    "clip", "cuda",
    "device", "div", "double", "dtype", "empty", "empty_cache", "enable_grad", "eq", "errors", "exp", "eye",
    "flatten", "float", "float32", "float64", "from_numpy", "full", "full_like", "ge",
    "get_num_threads", "gt", "inference_mode", "is_grad_enabled", "is_tensor", "le", "linspace",
    "log", "lt", "manual_seed", "matmul", "maximum", "mean", "memory_cached", "minimum", "mm", "mul", "ne", "neg",
    "no_grad", "numel", "ones", "ones_like", "pow", "rand", "rand_like", "randn", "randn_like",
    "relu", "reshape", "set_grad_enabled", "set_num_threads", "sigmoid", "sign", "sqrt", "square",
    "squeeze", "sub", "sum", "t", "tanh", "tensor", "transpose", "unsqueeze", "where", "zeros",
    "zeros_like", "_dtype_from_name", "load", "nn", "optim", "save", "viz",
]
