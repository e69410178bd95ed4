"""Type stubs for the compiled core, ``rustgrad._rustgrad`` (rust/python/*.rs).

Everything the module registers in ``rust/python/mod.rs`` is declared here; the
public names are re-exported by ``rustgrad``, ``rustgrad.autograd`` and
``rustgrad.static``. Keep this file in step with the ``#[pymethods]`` blocks:
``tests/test_typing.py`` runs ``mypy.stubtest`` against the built module.

The module defines a value named ``bool`` and ``Tensor`` has methods named
``float`` and ``bool``, so the builtin types are spelt ``builtins.bool`` and
``builtins.float`` wherever those names would be shadowed.
"""

import builtins
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar, Final, Literal, NoReturn, Optional, SupportsIndex, Union, final, overload

import numpy as np
from numpy.typing import DTypeLike, NDArray
from typing_extensions import Self, TypeAlias, disjoint_base

from rustgrad import return_types as _return_types

if sys.version_info >= (3, 10):
    from types import EllipsisType
else:
    EllipsisType: TypeAlias = builtins.ellipsis

__all__ = [
    "Tensor",
    "dtype",
    "device",
    "Node",
    "AccumulateGrad",
    "RemovableHandle",
    "GraphCore",
    "SessionCore",
    "IndexItems",
    "OpSpec",
    "ops",
    "float32",
    "float64",
    "int64",
    "int32",
    "uint8",
    "bool",
    "_full",
    "_random",
    "_fill_random",
    "_randperm",
    "_bernoulli",
    "_multinomial",
    "_normal",
    "_range_values",
    "Generator",
    "default_generator",
    "_from_numpy",
    "from_dlpack",
    "set_num_threads",
    "get_num_threads",
    "empty_cache",
    "memory_cached",
    "_after_fork_in_child",
    # Kernel threads' spin setting (rust/python/threading.rs).
    "set_spin_us",
    "get_spin_us",
    "_spin_us_env_problem",
    "_spin_helper_count",
    "backward",
    "grad",
    "is_grad_enabled",
    "_set_grad_enabled",
    "_set_detect_anomaly",
    "is_anomaly_enabled",
    "_save_tensors",
    "_apply_function",
    "_first_changed",
    # higher (issue 16): a Function's saved outputs with their history under create_graph
    "_with_history",
    # ddpoverlap: end-of-backward callbacks
    "_queue_callback",
    # end ddpoverlap
    "_panic_for_test",
    "_matmul",
    "_where",
    "_adam_update",
    "_parse_index_key",
    # mpistatic (issue 17): static mode's collectives
    "Communicator",
    "_mpi_communicator",
    "_mpi4py_communicator",
    "_collective_seconds",
    "_static_allreduce",
    "_static_broadcast",
    "_static_unfuse",
    # end mpistatic
    # rustgrad.compile (issue 18, compile)
    "_CompiledProgram",
    "_compile_begin",
    "_compile_end",
    "_compile_abort",
    "_compile_stop",
    "_compile_tracing",
    "__version__",
]

# ----- argument aliases -------------------------------------------------------

_Scalar: TypeAlias = Union[builtins.float, np.number[Any], np.bool_]
"""A Python number (bool and int included) or a numpy scalar."""

_ArrayLike: TypeAlias = Union[NDArray[Any], list[Any], tuple[Any, ...]]
"""Converted with ``rustgrad.as_tensor`` when it is an operand."""

_Operand: TypeAlias = Union["Tensor", _Scalar, _ArrayLike]
"""The other side of an arithmetic operator or method, or a value to write (``convert::operand``)."""

_DTypeLike: TypeAlias = Union["dtype", str, np.dtype[Any], type[Any]]
"""A rustgrad dtype, its name, or anything numpy accepts as a float32/float64/bool dtype."""

_DeviceLike: TypeAlias = Union["device", str]

_IndexItem: TypeAlias = Union[SupportsIndex, slice, None, EllipsisType]
_Index: TypeAlias = Union[_IndexItem, tuple[_IndexItem, ...], "Tensor", NDArray[np.bool_]]
"""Integers, slices, ``None``, ``...`` (alone or in a tuple), or a whole-index bool mask."""

_Dims: TypeAlias = Union[builtins.int, Sequence[builtins.int], None]

_PartialShape: TypeAlias = Optional[Sequence[Optional[builtins.int]]]
"""A static-graph shape: None for an unknown rank, None in a dim for an unknown size."""

# ----- module attributes ---------------------------------------------------------

__version__: Final[str]

# ----- dtype and device --------------------------------------------------------------

@final
class dtype:
    """``rustgrad.float32``, ``float64``, ``int64``, ``int32``, ``uint8`` and ``bool``: singletons (no
    constructor), with torch's attributes and TF's (``is_floating``, ``is_integer``, ``base_dtype``...)."""

    @property
    def is_floating_point(self) -> builtins.bool: ...
    @property
    def is_floating(self) -> builtins.bool: ...
    @property
    def is_integer(self) -> builtins.bool: ...
    @property
    def is_bool(self) -> builtins.bool: ...
    @property
    def is_signed(self) -> builtins.bool: ...
    @property
    def itemsize(self) -> builtins.int: ...
    @property
    def size(self) -> builtins.int: ...
    @property
    def base_dtype(self) -> dtype:
        """The dtype itself (rustgrad has no reference dtypes)."""
    @property
    def as_numpy_dtype(self) -> type[np.generic]:
        """The numpy scalar type (``np.int32`` for int32)."""
    @property
    def name(self) -> str: ...
    def __reduce__(self) -> str:
        """The name of the module attribute (``"float32"``): unpickling gives the same singleton."""
    def __eq__(self, other: object, /) -> builtins.bool: ...
    def __hash__(self) -> builtins.int: ...

float32: Final[dtype]
float64: Final[dtype]
int64: Final[dtype]
int32: Final[dtype]
uint8: Final[dtype]
bool: Final[dtype]

@final
class device:
    """Only the CPU exists: any other device raises ``rustgrad.errors.DeviceError``."""

    def __new__(cls, kind: Union[device, str], index: Optional[builtins.int] = None) -> Self:
        """``"cpu"`` or ``"cpu:<index>"``; an invalid string such as ``"cpu:abc"`` raises ``DeviceError``."""
    def __reduce__(self) -> tuple[type[device], tuple[str, Optional[builtins.int]]]: ...
    @property
    def type(self) -> str: ...
    @property
    def index(self) -> Optional[builtins.int]: ...
    def __eq__(self, other: object, /) -> builtins.bool: ...
    def __hash__(self) -> builtins.int: ...

# Inside ``Tensor`` the names ``dtype`` and ``device`` are its properties.
_dtype: TypeAlias = dtype
_device: TypeAlias = device

# ----- Tensor ------------------------------------------------------------------------------

@disjoint_base  # a native class with its own layout: no class can inherit from it and another such base
class Tensor:
    """A tensor of the eager API (``rustgrad.Tensor``); made with ``rustgrad.tensor(...)`` and friends."""

    __array_priority__: ClassVar[builtins.float]
    """1000.0: makes numpy defer to the reflected operators, so ``ndarray * tensor`` is a Tensor."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        """As ``torch.Tensor``: ``Tensor(2, 3)`` is a zero-filled 2x3 float32 tensor, ``Tensor()`` is
        empty, ``Tensor(data)`` a float32 copy of a sequence or array, ``Tensor(t)`` shares ``t``'s memory."""

    # attributes
    @property
    def shape(self) -> tuple[builtins.int, ...]: ...
    @overload
    def size(self, dim: None = None) -> tuple[builtins.int, ...]: ...
    @overload
    def size(self, dim: builtins.int) -> builtins.int: ...
    def dim(self) -> builtins.int: ...
    @property
    def ndim(self) -> builtins.int: ...
    def numel(self) -> builtins.int: ...
    def nelement(self) -> builtins.int: ...
    @property
    def dtype(self) -> _dtype: ...
    @property
    def device(self) -> _device: ...
    @property
    def is_cuda(self) -> builtins.bool: ...
    def is_floating_point(self) -> builtins.bool: ...
    def is_contiguous(self) -> builtins.bool: ...
    def data_ptr(self) -> builtins.int:
        """The address of the first element (tensors that share memory share addresses)."""
    @property
    def requires_grad(self) -> builtins.bool: ...
    @requires_grad.setter
    def requires_grad(self, value: builtins.bool) -> None: ...
    def requires_grad_(self, requires_grad: builtins.bool = True) -> Self: ...
    @property
    def grad(self) -> Optional[Tensor]:
        """The accumulated gradient of a leaf, or None before the first backward (and after ``grad = None``)."""
    @grad.setter
    def grad(self, grad: Optional[Tensor]) -> None: ...
    @property
    def grad_fn(self) -> Optional[Node]: ...
    @property
    def is_leaf(self) -> builtins.bool: ...
    @property
    def _version(self) -> builtins.int: ...
    @property
    def data(self) -> Tensor:
        """The same data, detached from the graph (read-only here, unlike PyTorch)."""
    @property
    def T(self) -> Tensor: ...
    @property
    def mT(self) -> Tensor:
        """The matrices in the last two dims transposed, as a view (`transpose(-2, -1)`)."""

    # shape and matmul
    def mm(self, other: Tensor) -> Tensor: ...
    def bmm(self, mat2: Tensor) -> Tensor: ...
    def matmul(self, other: Tensor) -> Tensor: ...
    def __matmul__(self, other: Union[Tensor, _ArrayLike], /) -> Tensor: ...
    def __rmatmul__(self, other: Union[Tensor, _ArrayLike], /) -> Tensor: ...
    def t(self) -> Tensor: ...
    def transpose(self, dim0: builtins.int, dim1: builtins.int) -> Tensor: ...
    @overload
    def reshape(self, shape: Sequence[builtins.int], /) -> Tensor: ...
    @overload
    def reshape(self, *shape: builtins.int) -> Tensor: ...
    @overload
    def view(self, shape: Sequence[builtins.int], /) -> Tensor: ...
    @overload
    def view(self, *shape: builtins.int) -> Tensor: ...
    def contiguous(self) -> Tensor: ...
    # Composites of table ops, set by rustgrad._composites.
    def split(
        self, split_size: Union[builtins.int, Sequence[builtins.int]], dim: builtins.int = 0
    ) -> tuple[Tensor, ...]:
        """The tensor cut along ``dim`` into pieces of ``split_size`` elements, or of the listed sizes."""
    def chunk(self, chunks: builtins.int, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        """The tensor cut along ``dim`` into ``chunks`` pieces of equal size (the last may be smaller)."""
    def unbind(self, dim: builtins.int = 0) -> tuple[Tensor, ...]:
        """The slices along ``dim``, which each drop it."""

    # math
    def clamp(self, min: Union[_Scalar, Tensor, None] = None, max: Union[_Scalar, Tensor, None] = None) -> Tensor:
        """Each bound is None, a number or a tensor that broadcasts against this one."""
    def clip(self, min: Union[_Scalar, Tensor, None] = None, max: Union[_Scalar, Tensor, None] = None) -> Tensor: ...
    # Comparisons to a Python bool (rustgrad._comparisons).
    def allclose(
        self,
        other: Tensor,
        rtol: builtins.float = 1e-05,
        atol: builtins.float = 1e-08,
        equal_nan: builtins.bool = False,
    ) -> builtins.bool: ...
    def equal(self, other: Tensor) -> builtins.bool: ...
    # indexing compositions (rustgrad._indexing)
    def nonzero(self, *, as_tuple: builtins.bool = False) -> Union[Tensor, tuple[Tensor, ...]]: ...
    def masked_fill_(self, mask: Tensor, value: builtins.float) -> Tensor: ...
    def scatter_(
        self,
        dim: builtins.int,
        index: Tensor,
        src: Any = None,
        *,
        value: Optional[builtins.float] = None,
        reduce: Optional[str] = None,
    ) -> Tensor: ...
    def scatter_add_(self, dim: builtins.int, index: Tensor, src: Tensor) -> Tensor: ...
    def index_add_(self, dim: builtins.int, index: Tensor, source: Tensor, *, alpha: builtins.float = 1) -> Tensor: ...
    def index_put(self, indices: Any, values: Any, accumulate: builtins.bool = False) -> Tensor: ...
    def index_put_(self, indices: Any, values: Any, accumulate: Optional[builtins.bool] = None) -> Self: ...
    # The op table's methods (rust/ops/), set by rustgrad._generated_ops.
    # --- generated by tools/generate.py from the op table: do not edit ---
    def neg(self) -> Tensor:
        """The negation -x."""
    def negative(self) -> Tensor:
        """The negation -x."""
    def neg_(self) -> Self:
        """In place, the negation -x. Returns this tensor."""
    def negative_(self) -> Self:
        """In place, the negation -x. Returns this tensor."""
    def abs(self) -> Tensor:
        """The absolute value |x|; its gradient at 0 is 0."""
    def absolute(self) -> Tensor:
        """The absolute value |x|; its gradient at 0 is 0."""
    def abs_(self) -> Self:
        """In place, the absolute value |x|; its gradient at 0 is 0. Returns this tensor."""
    def absolute_(self) -> Self:
        """In place, the absolute value |x|; its gradient at 0 is 0. Returns this tensor."""
    def exp(self) -> Tensor:
        """The exponential e^x."""
    def exp_(self) -> Self:
        """In place, the exponential e^x. Returns this tensor."""
    def exp2(self) -> Tensor:
        """The power of two 2^x."""
    def exp2_(self) -> Self:
        """In place, the power of two 2^x. Returns this tensor."""
    def expm1(self) -> Tensor:
        """e^x - 1, exact for small x."""
    def expm1_(self) -> Self:
        """In place, e^x - 1, exact for small x. Returns this tensor."""
    def log(self) -> Tensor:
        """The natural logarithm."""
    def log_(self) -> Self:
        """In place, the natural logarithm. Returns this tensor."""
    def log1p(self) -> Tensor:
        """log(1 + x), exact for small x."""
    def log1p_(self) -> Self:
        """In place, log(1 + x), exact for small x. Returns this tensor."""
    def log2(self) -> Tensor:
        """The base-2 logarithm."""
    def log2_(self) -> Self:
        """In place, the base-2 logarithm. Returns this tensor."""
    def log10(self) -> Tensor:
        """The base-10 logarithm."""
    def log10_(self) -> Self:
        """In place, the base-10 logarithm. Returns this tensor."""
    def sqrt(self) -> Tensor:
        """The square root."""
    def sqrt_(self) -> Self:
        """In place, the square root. Returns this tensor."""
    def rsqrt(self) -> Tensor:
        """The reciprocal square root 1/sqrt(x)."""
    def rsqrt_(self) -> Self:
        """In place, the reciprocal square root 1/sqrt(x). Returns this tensor."""
    def reciprocal(self) -> Tensor:
        """The reciprocal 1/x."""
    def reciprocal_(self) -> Self:
        """In place, the reciprocal 1/x. Returns this tensor."""
    def square(self) -> Tensor:
        """The square x²."""
    def square_(self) -> Self:
        """In place, the square x². Returns this tensor."""
    def sin(self) -> Tensor:
        """The sine, in radians."""
    def sin_(self) -> Self:
        """In place, the sine, in radians. Returns this tensor."""
    def cos(self) -> Tensor:
        """The cosine, in radians."""
    def cos_(self) -> Self:
        """In place, the cosine, in radians. Returns this tensor."""
    def tan(self) -> Tensor:
        """The tangent, in radians."""
    def tan_(self) -> Self:
        """In place, the tangent, in radians. Returns this tensor."""
    def asin(self) -> Tensor:
        """The inverse sine, in radians; NaN outside [-1, 1]."""
    def arcsin(self) -> Tensor:
        """The inverse sine, in radians; NaN outside [-1, 1]."""
    def asin_(self) -> Self:
        """In place, the inverse sine, in radians; NaN outside [-1, 1]. Returns this tensor."""
    def arcsin_(self) -> Self:
        """In place, the inverse sine, in radians; NaN outside [-1, 1]. Returns this tensor."""
    def acos(self) -> Tensor:
        """The inverse cosine, in radians; NaN outside [-1, 1]."""
    def arccos(self) -> Tensor:
        """The inverse cosine, in radians; NaN outside [-1, 1]."""
    def acos_(self) -> Self:
        """In place, the inverse cosine, in radians; NaN outside [-1, 1]. Returns this tensor."""
    def arccos_(self) -> Self:
        """In place, the inverse cosine, in radians; NaN outside [-1, 1]. Returns this tensor."""
    def atan(self) -> Tensor:
        """The inverse tangent, in radians."""
    def arctan(self) -> Tensor:
        """The inverse tangent, in radians."""
    def atan_(self) -> Self:
        """In place, the inverse tangent, in radians. Returns this tensor."""
    def arctan_(self) -> Self:
        """In place, the inverse tangent, in radians. Returns this tensor."""
    def sinh(self) -> Tensor:
        """The hyperbolic sine."""
    def sinh_(self) -> Self:
        """In place, the hyperbolic sine. Returns this tensor."""
    def cosh(self) -> Tensor:
        """The hyperbolic cosine."""
    def cosh_(self) -> Self:
        """In place, the hyperbolic cosine. Returns this tensor."""
    def tanh(self) -> Tensor:
        """The hyperbolic tangent."""
    def tanh_(self) -> Self:
        """In place, the hyperbolic tangent. Returns this tensor."""
    def asinh(self) -> Tensor:
        """The inverse hyperbolic sine."""
    def arcsinh(self) -> Tensor:
        """The inverse hyperbolic sine."""
    def asinh_(self) -> Self:
        """In place, the inverse hyperbolic sine. Returns this tensor."""
    def arcsinh_(self) -> Self:
        """In place, the inverse hyperbolic sine. Returns this tensor."""
    def acosh(self) -> Tensor:
        """The inverse hyperbolic cosine; NaN below 1."""
    def arccosh(self) -> Tensor:
        """The inverse hyperbolic cosine; NaN below 1."""
    def acosh_(self) -> Self:
        """In place, the inverse hyperbolic cosine; NaN below 1. Returns this tensor."""
    def arccosh_(self) -> Self:
        """In place, the inverse hyperbolic cosine; NaN below 1. Returns this tensor."""
    def atanh(self) -> Tensor:
        """The inverse hyperbolic tangent; NaN outside [-1, 1]."""
    def arctanh(self) -> Tensor:
        """The inverse hyperbolic tangent; NaN outside [-1, 1]."""
    def atanh_(self) -> Self:
        """In place, the inverse hyperbolic tangent; NaN outside [-1, 1]. Returns this tensor."""
    def arctanh_(self) -> Self:
        """In place, the inverse hyperbolic tangent; NaN outside [-1, 1]. Returns this tensor."""
    def sigmoid(self) -> Tensor:
        """The logistic function 1/(1 + e^-x)."""
    def sigmoid_(self) -> Self:
        """In place, the logistic function 1/(1 + e^-x). Returns this tensor."""
    def relu(self) -> Tensor:
        """max(x, 0); NaN stays NaN, and the gradient at 0 is 0."""
    def relu_(self) -> Self:
        """In place, max(x, 0); NaN stays NaN, and the gradient at 0 is 0. Returns this tensor."""
    def erf(self) -> Tensor:
        """The error function."""
    def erf_(self) -> Self:
        """In place, the error function. Returns this tensor."""
    def sign(self) -> Tensor:
        """-1, 0 or 1 by the sign of x (NaN stays NaN); its gradient is 0."""
    def sign_(self) -> Self:
        """In place, -1, 0 or 1 by the sign of x (NaN stays NaN); its gradient is 0. Returns this tensor."""
    def floor(self) -> Tensor:
        """The largest integer not above x; its gradient is 0."""
    def floor_(self) -> Self:
        """In place, the largest integer not above x; its gradient is 0. Returns this tensor."""
    def ceil(self) -> Tensor:
        """The smallest integer not below x; its gradient is 0."""
    def ceil_(self) -> Self:
        """In place, the smallest integer not below x; its gradient is 0. Returns this tensor."""
    def round(self) -> Tensor:
        """The nearest integer, halves to even (as numpy, torch and TF); its gradient is 0."""
    def round_(self) -> Self:
        """In place, the nearest integer, halves to even (as numpy, torch and TF); its gradient is 0. Returns this
        tensor.
        """
    def trunc(self) -> Tensor:
        """x rounded toward zero; its gradient is 0."""
    def fix(self) -> Tensor:
        """x rounded toward zero; its gradient is 0."""
    def trunc_(self) -> Self:
        """In place, x rounded toward zero; its gradient is 0. Returns this tensor."""
    def fix_(self) -> Self:
        """In place, x rounded toward zero; its gradient is 0. Returns this tensor."""
    def cumsum(self, dim: builtins.int) -> Tensor:
        """Running sums along `dim`."""
    def logsumexp(
        self,
        dim: Union[builtins.int, Sequence[builtins.int], None],
        keepdim: builtins.bool = False,
    ) -> Tensor:
        """log(sum(exp(x))) over `dim`, without overflow: the largest element is factored out first."""
    def permute(
        self,
        *args: Union[builtins.int, Sequence[builtins.int]],
        dims: Optional[Union[builtins.int, Sequence[builtins.int]]] = None,
    ) -> Tensor:
        """The dims in the order `dims` lists them, as a view; TF's `perm=None` reverses them."""
    def movedim(
        self,
        source: Union[builtins.int, Sequence[builtins.int]],
        destination: Union[builtins.int, Sequence[builtins.int]],
    ) -> Tensor:
        """The dims `source` moved to the places `destination`, the others keeping their order: a view."""
    def moveaxis(
        self,
        source: Union[builtins.int, Sequence[builtins.int]],
        destination: Union[builtins.int, Sequence[builtins.int]],
    ) -> Tensor:
        """The dims `source` moved to the places `destination`, the others keeping their order: a view."""
    def swapaxes(self, axis0: builtins.int, axis1: builtins.int) -> Tensor:
        """The two dims swapped, as a view (`transpose(input, dim0, dim1)`)."""
    def swapdims(self, axis0: builtins.int, axis1: builtins.int) -> Tensor:
        """The two dims swapped, as a view (`transpose(input, dim0, dim1)`)."""
    def expand(
        self,
        *args: Union[builtins.int, Sequence[builtins.int]],
        size: Optional[Union[builtins.int, Sequence[builtins.int]]] = None,
    ) -> Tensor:
        """The tensor repeated along dims of size 1 (and new leading dims) to `size`, as a view: no copy. -1 keeps a
        dim's size.
        """
    def broadcast_to(
        self,
        *args: Union[builtins.int, Sequence[builtins.int]],
        size: Optional[Union[builtins.int, Sequence[builtins.int]]] = None,
    ) -> Tensor:
        """The tensor repeated along dims of size 1 (and new leading dims) to `size`, as a view: no copy. -1 keeps a
        dim's size.
        """
    def expand_as(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """The tensor expanded to `other`'s shape, as a view (`expand(other.size())`)."""
    def squeeze(self, dim: Union[builtins.int, Sequence[builtins.int], None] = None) -> Tensor:
        """The dims of size 1 removed (only those of `dim` when given), as a view. TF1 refuses to squeeze a named dim
        that is not 1; torch leaves it.
        """
    def unsqueeze(self, dim: builtins.int) -> Tensor:
        """A dim of size 1 inserted at `dim` (counted in the output), as a view."""
    def flatten(self, start_dim: builtins.int = 0, end_dim: builtins.int = -1) -> Tensor:
        """The dims `start_dim` to `end_dim` merged into one (a 0-d tensor becomes 1-D): a view when the strides allow,
        else a copy.
        """
    def unflatten(self, dim: builtins.int, sizes: Union[builtins.int, Sequence[builtins.int]]) -> Tensor:
        """The dim `dim` split into dims of `sizes` (one may be -1): a view when the strides allow, else a copy."""
    def view_as(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """The tensor viewed with `other`'s shape; raises when that needs a copy."""
    def reshape_as(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """The tensor with `other`'s shape: a view when the strides allow."""
    def narrow(self, dim: builtins.int, start: builtins.int, length: builtins.int) -> Tensor:
        """The `length` elements from `start` along `dim` (a negative start counts from the end), as a view."""
    def select(self, dim: builtins.int, index: builtins.int) -> Tensor:
        """The slice at `index` along `dim`, which goes (`x[..., index, ...]`), as a view."""
    def diagonal(self, offset: builtins.int = 0, dim1: builtins.int = 0, dim2: builtins.int = 1) -> Tensor:
        """The diagonal of the (dim1, dim2) planes, `offset` above the main one, as a view; it becomes the last dim.
        TF1's `diag_part` takes the last two dims.
        """
    def flip(
        self,
        *args: Union[builtins.int, Sequence[builtins.int]],
        dims: Optional[Union[builtins.int, Sequence[builtins.int]]] = None,
    ) -> Tensor:
        """The elements in reverse order along each dim of `dims` (a copy)."""
    def fliplr(self) -> Tensor:
        """The columns (dim 1) in reverse order (a copy)."""
    def flipud(self) -> Tensor:
        """The rows (dim 0) in reverse order (a copy)."""
    def roll(
        self,
        shifts: Union[builtins.int, Sequence[builtins.int]],
        dims: Union[builtins.int, Sequence[builtins.int], None] = None,
    ) -> Tensor:
        """The elements shifted by `shifts` along `dims`, those pushed off the end coming back at the start (a copy);
        without dims, along the flattened tensor.
        """
    def repeat(
        self,
        *args: Union[builtins.int, Sequence[builtins.int]],
        repeats: Optional[Union[builtins.int, Sequence[builtins.int]]] = None,
    ) -> Tensor:
        """The tensor repeated `repeats[i]` times along each dim (a copy); more repeats than dims add leading dims."""
    def tile(
        self,
        *args: Union[builtins.int, Sequence[builtins.int]],
        dims: Optional[Union[builtins.int, Sequence[builtins.int]]] = None,
    ) -> Tensor:
        """The tensor repeated `dims[i]` times along each dim (a copy); fewer repeats than dims repeat the last dims."""
    def pad(
        self,
        pad: Union[builtins.int, Sequence[builtins.int]],
        mode: str = 'constant',
        value: builtins.float = 0.0,
    ) -> Tensor:
        """The tensor with borders added: torch's `pad` lists (before, after) from the last dim backwards, TF's
        `paddings` one pair per dim. Modes: constant (negative padding crops), reflect, replicate, circular,
        symmetric.
        """
    def diag(self, diagonal: builtins.int = 0) -> Tensor:
        """torch: the matrix with a 1-D input on its diagonal `diagonal`, or a matrix's diagonal. TF1: a rank-2k tensor
        with the rank-k input on its diagonal.
        """
    def diag_embed(self, offset: builtins.int = 0, dim1: builtins.int = -2, dim2: builtins.int = -1) -> Tensor:
        """Matrices (in the dims `dim1`, `dim2`) whose diagonal `offset` holds the last dim of the input, zero
        elsewhere.
        """
    def trace(self) -> Tensor:
        """The sum of a matrix's main diagonal; TF1's takes the matrices in the last two dims."""
    def tril(self, diagonal: builtins.int = 0) -> Tensor:
        """The lower triangle of each matrix (last two dims), on and below the diagonal `diagonal`; zeros above."""
    def triu(self, diagonal: builtins.int = 0) -> Tensor:
        """The upper triangle of each matrix (last two dims), on and above the diagonal `diagonal`; zeros below."""
    def band_part(self, num_lower: builtins.int, num_upper: builtins.int) -> Tensor:
        """Each matrix's band: `num_lower` diagonals below the main one and `num_upper` above (negative: all)."""
    def atan2(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """The angle of the point (other, input) in radians, in [-pi, pi]."""
    def arctan2(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """The angle of the point (other, input) in radians, in [-pi, pi]."""
    def atan2_(self, other: Union[Tensor, builtins.float]) -> Self:
        """In place, the angle of the point (other, input) in radians, in [-pi, pi]. Returns this tensor."""
    def arctan2_(self, other: Union[Tensor, builtins.float]) -> Self:
        """In place, the angle of the point (other, input) in radians, in [-pi, pi]. Returns this tensor."""
    def hypot(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """sqrt(input² + other²), without overflow for large operands."""
    def hypot_(self, other: Union[Tensor, builtins.float]) -> Self:
        """In place, sqrt(input² + other²), without overflow for large operands. Returns this tensor."""
    def fmod(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """The remainder of input / other rounded toward zero: it has the sign of input (C's fmod)."""
    def fmod_(self, other: Union[Tensor, builtins.float]) -> Self:
        """In place, the remainder of input / other rounded toward zero: it has the sign of input (C's fmod). Returns
        this tensor.
        """
    def pow(self, exponent: Union[Tensor, builtins.float]) -> Tensor:
        """input raised to the power exponent; either may be a number."""
    def pow_(self, exponent: Union[Tensor, builtins.float]) -> Self:
        """In place, input raised to the power exponent; either may be a number. Returns this tensor."""
    def copysign(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """The magnitude of input with the sign of other (the sign bit, so -0.0 counts as negative)."""
    def copysign_(self, other: Union[Tensor, builtins.float]) -> Self:
        """In place, the magnitude of input with the sign of other (the sign bit, so -0.0 counts as negative). Returns
        this tensor.
        """
    def xlogy(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """input·log(other), and 0 where input is 0 (unless other is NaN)."""
    def xlogy_(self, other: Union[Tensor, builtins.float]) -> Self:
        """In place, input·log(other), and 0 where input is 0 (unless other is NaN). Returns this tensor."""
    def squared_difference(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """(input - other)², elementwise."""
    def logaddexp(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """log(e^input + e^other), without overflow."""
    def fmax(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """The larger of input and other, ignoring a NaN (maximum propagates it)."""
    def fmin(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """The smaller of input and other, ignoring a NaN (minimum propagates it)."""
    def clamp_min(self, min: Union[Tensor, builtins.float]) -> Tensor:
        """input raised to at least min (NaN in either stays NaN); min may be a tensor or a number."""
    def clamp_min_(self, min: Union[Tensor, builtins.float]) -> Self:
        """In place, input raised to at least min (NaN in either stays NaN); min may be a tensor or a number. Returns
        this tensor.
        """
    def clamp_max(self, max: Union[Tensor, builtins.float]) -> Tensor:
        """input lowered to at most max (NaN in either stays NaN); max may be a tensor or a number."""
    def clamp_max_(self, max: Union[Tensor, builtins.float]) -> Self:
        """In place, input lowered to at most max (NaN in either stays NaN); max may be a tensor or a number. Returns
        this tensor.
        """
    def lerp(self, end: Union[Tensor, builtins.float], weight: Union[Tensor, builtins.float]) -> Tensor:
        """The linear interpolation input + weight·(end - input); weight may be a tensor or a number."""
    def lerp_(self, end: Union[Tensor, builtins.float], weight: Union[Tensor, builtins.float]) -> Self:
        """In place, the linear interpolation input + weight·(end - input); weight may be a tensor or a number. Returns
        this tensor.
        """
    def logical_and(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """Whether both input and other are true (nonzero), elementwise."""
    def logical_or(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """Whether input or other is true (nonzero), elementwise."""
    def logical_xor(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """Whether exactly one of input and other is true (nonzero), elementwise."""
    def logical_not(self) -> Tensor:
        """Whether input is false (zero), elementwise."""
    def isnan(self) -> Tensor:
        """Whether each element is NaN."""
    def isinf(self) -> Tensor:
        """Whether each element is +inf or -inf."""
    def isposinf(self) -> Tensor:
        """Whether each element is +inf."""
    def isneginf(self) -> Tensor:
        """Whether each element is -inf."""
    def isfinite(self) -> Tensor:
        """Whether each element is finite: neither NaN nor infinite."""
    def nan_to_num(
        self,
        nan: builtins.float = 0.0,
        posinf: Optional[builtins.float] = None,
        neginf: Optional[builtins.float] = None,
    ) -> Tensor:
        """NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (None: the dtype's extremes)."""
    def nan_to_num_(
        self,
        nan: builtins.float = 0.0,
        posinf: Optional[builtins.float] = None,
        neginf: Optional[builtins.float] = None,
    ) -> Self:
        """In place, naN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (None: the dtype's extremes). Returns
        this tensor.
        """
    def eq(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """Whether input equals other, elementwise (NaN equals nothing)."""
    def ne(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """Whether input differs from other, elementwise (NaN differs from everything)."""
    def not_equal(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """Whether input differs from other, elementwise (NaN differs from everything)."""
    def lt(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """Whether input < other, elementwise."""
    def less(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """Whether input < other, elementwise."""
    def le(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """Whether input <= other, elementwise."""
    def less_equal(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """Whether input <= other, elementwise."""
    def gt(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """Whether input > other, elementwise."""
    def greater(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """Whether input > other, elementwise."""
    def ge(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """Whether input >= other, elementwise."""
    def greater_equal(self, other: Union[Tensor, builtins.float]) -> Tensor:
        """Whether input >= other, elementwise."""
    def isclose(
        self,
        other: Union[Tensor, builtins.float],
        rtol: builtins.float = 1e-05,
        atol: builtins.float = 1e-08,
        equal_nan: builtins.bool = False,
    ) -> Tensor:
        """Whether |input - other| <= atol + rtol·|other|; NaNs are close only with equal_nan."""
    def prod(
        self,
        dim: Union[builtins.int, Sequence[builtins.int], None] = None,
        keepdim: builtins.bool = False,
    ) -> Tensor:
        """The product of the elements over `dim` (all of them by default)."""
    def cumprod(self, dim: builtins.int) -> Tensor:
        """Running products along `dim`."""
    def var(
        self,
        dim: Union[builtins.int, Sequence[builtins.int], None] = None,
        unbiased: Optional[builtins.bool] = None,
        keepdim: builtins.bool = False,
        correction: Optional[builtins.float] = None,
    ) -> Tensor:
        """The variance over `dim`: Σ(x - mean)² / (N - correction). torch's default is the sample variance
        (correction=1; unbiased=False is correction=0); TF1's `reduce_variance` is the population variance.
        """
    def std(
        self,
        dim: Union[builtins.int, Sequence[builtins.int], None] = None,
        unbiased: Optional[builtins.bool] = None,
        keepdim: builtins.bool = False,
        correction: Optional[builtins.float] = None,
    ) -> Tensor:
        """The standard deviation over `dim`: the square root of `var` with the same arguments."""
    def norm(
        self,
        p: Union[builtins.float, str] = 'fro',
        dim: Union[builtins.int, Sequence[builtins.int], None] = None,
        keepdim: builtins.bool = False,
    ) -> Tensor:
        """The p-norm over `dim` (all dims by default): 'fro' and 2 are Euclidean, 1 sums |x|, inf and -inf are the
        largest and smallest |x|, 0 counts the nonzero elements, any other p is (Σ|x|^p)^(1/p). TF1: `ord` 1 or inf
        over a two-element `axis` is a matrix norm.
        """
    def all(
        self,
        dim: Union[builtins.int, Sequence[builtins.int], None] = None,
        keepdim: builtins.bool = False,
    ) -> Tensor:
        """Whether every element over `dim` is true (nonzero); a bool tensor. TF1's `reduce_all` takes bool tensors
        only.
        """
    def any(
        self,
        dim: Union[builtins.int, Sequence[builtins.int], None] = None,
        keepdim: builtins.bool = False,
    ) -> Tensor:
        """Whether some element over `dim` is true (nonzero); a bool tensor. TF1's `reduce_any` takes bool tensors
        only.
        """
    def count_nonzero(self, dim: Union[builtins.int, Sequence[builtins.int], None] = None) -> Tensor:
        """The number of nonzero (true, NaN) elements over `dim` (all of them by default), as int64 (TF1: `dtype`)."""
    def argmax(
        self,
        dim: Union[builtins.int, Sequence[builtins.int], None] = None,
        keepdim: builtins.bool = False,
    ) -> Tensor:
        """The index of the largest element along `dim` (of the flattened tensor when `dim` is None; TF1's `axis=None`
        is dim 0), as int64; the first of equal elements, and NaN counts as the largest.
        """
    def argmin(
        self,
        dim: Union[builtins.int, Sequence[builtins.int], None] = None,
        keepdim: builtins.bool = False,
    ) -> Tensor:
        """The index of the smallest element along `dim` (of the flattened tensor when `dim` is None; TF1's `axis=None`
        is dim 0), as int64; the first of equal elements, and a NaN is picked as in `argmax`.
        """
    def argsort(
        self,
        dim: builtins.int = -1,
        descending: builtins.bool = False,
        stable: builtins.bool = False,
    ) -> Tensor:
        """The indices that sort the elements along `dim` (ascending unless `descending`, or TF1's
        `direction='DESCENDING'`), as int64. The sort is stable, and NaN sorts above every number.
        """
    def take_along_dim(
        self,
        indices: Union[Tensor, builtins.float],
        dim: Union[builtins.int, Sequence[builtins.int], None] = None,
    ) -> Tensor:
        """The elements of `input` at `indices` along `dim` (of the flattened tensors when `dim` is None), the other
        dims broadcasting: what `argmax(dim, keepdim=True)` and `argsort` point at.
        """
    def gather(self, dim: builtins.int, index: Union[Tensor, builtins.float]) -> Tensor:
        """One element along `dim` per index element: out[i][j] = input[index[i][j]][j] for dim 0."""
    def scatter(
        self,
        dim: builtins.int,
        index: Union[Tensor, builtins.float],
        src: Union[Tensor, builtins.float],
        reduce: Optional[str] = None,
    ) -> Tensor:
        """A copy of the input with src[i][j] (or a number) written at [index[i][j]][j] for dim 0."""
    def scatter_add(
        self,
        dim: builtins.int,
        index: Union[Tensor, builtins.float],
        src: Union[Tensor, builtins.float],
    ) -> Tensor:
        """A copy of the input with src[i][j] added at [index[i][j]][j] for dim 0 (in order: deterministic)."""
    def index_select(self, dim: Optional[builtins.int], index: Union[Tensor, builtins.float]) -> Tensor:
        """Whole slices along `dim`, one per index element (TF1's gather: any index shape, batch_dims)."""
    def index_add(
        self,
        dim: builtins.int,
        index: Union[Tensor, builtins.float],
        source: Union[Tensor, builtins.float],
        alpha: builtins.float = 1,
    ) -> Tensor:
        """A copy of the input with alpha * source added along `dim` at `index` (in order: deterministic)."""
    def take(self, index: Union[Tensor, builtins.float]) -> Tensor:
        """Elements of the input as if it were 1-D, in the shape of `index` (negative ones count from the end)."""
    def masked_fill(self, mask: Union[Tensor, builtins.float], value: builtins.float) -> Tensor:
        """`value` where the bool `mask` (broadcast with the input) is true, the input elsewhere."""
    def argwhere(self) -> Tensor:
        """The coordinates of the non-zero elements, an int64 (count, input.dim()) tensor (TF1: where(cond))."""
    def one_hot(self, num_classes: builtins.int = -1) -> Tensor:
        """One-hot rows along a new dim of `num_classes` (torch: int64; TF1: float32, off rows out of range)."""
    def boolean_mask(self, mask: Union[Tensor, builtins.float], axis: Optional[builtins.int] = None) -> Tensor:
        """The slices where the bool `mask` over the dims from `axis` on is true (tensor[mask] for axis 0)."""
    def gather_nd(self, indices: Union[Tensor, builtins.float], batch_dims: builtins.int = 0) -> Tensor:
        """Slices of params at the coordinates in the last dim of indices: out[i...] = params[indices[i...]]."""
    def scatter_nd(
        self,
        updates: Union[Tensor, builtins.float],
        shape: Union[builtins.int, Sequence[builtins.int], None],
    ) -> Tensor:
        """Zeros of `shape` with updates added at the coordinates in indices' last dim (in order: deterministic)."""
    def tensordot(
        self,
        b: Union[Tensor, builtins.float],
        dims: Union[builtins.int, Sequence[Union[builtins.int, Sequence[builtins.int]]]] = 2,
    ) -> Tensor:
        """The sum of products over the last `dims` dims of `a` and the first `dims` of `b`, or over the dims paired by
        two lists; the output has `a`'s other dims, then `b`'s.
        """
    def outer(self, vec2: Union[Tensor, builtins.float]) -> Tensor:
        """The outer product of two 1-D tensors: `out[i, j] = input[i] * vec2[j]`."""
    def ger(self, vec2: Union[Tensor, builtins.float]) -> Tensor:
        """The outer product of two 1-D tensors: `out[i, j] = input[i] * vec2[j]`."""
    def dot(self, tensor: Union[Tensor, builtins.float]) -> Tensor:
        """The dot product of two 1-D tensors of the same size."""
    def vdot(self, tensor: Union[Tensor, builtins.float]) -> Tensor:
        """The dot product of two 1-D tensors of the same size."""
    def mv(self, vec: Union[Tensor, builtins.float]) -> Tensor:
        """The product of a matrix and a vector."""
    def addmm(
        self,
        mat1: Union[Tensor, builtins.float],
        mat2: Union[Tensor, builtins.float],
        beta: builtins.float = 1,
        alpha: builtins.float = 1,
    ) -> Tensor:
        """`beta * input + alpha * (mat1 @ mat2)` for matrices `mat1` and `mat2`; `input` broadcasts."""
    def addmv(
        self,
        mat: Union[Tensor, builtins.float],
        vec: Union[Tensor, builtins.float],
        beta: builtins.float = 1,
        alpha: builtins.float = 1,
    ) -> Tensor:
        """`beta * input + alpha * (mat @ vec)`; `input` broadcasts."""
    def baddbmm(
        self,
        batch1: Union[Tensor, builtins.float],
        batch2: Union[Tensor, builtins.float],
        beta: builtins.float = 1,
        alpha: builtins.float = 1,
    ) -> Tensor:
        """`beta * input + alpha * bmm(batch1, batch2)`; `input` broadcasts."""
    def softmax(self, dim: Optional[builtins.int]) -> Tensor:
        """exp(x) / sum(exp(x)) along `dim`, computed stably (TF's axis defaults to the last)."""
    def log_softmax(self, dim: Optional[builtins.int]) -> Tensor:
        """log(softmax(x)) along `dim`, computed stably as x - logsumexp(x) (TF's axis defaults to the last)."""
    # --- end of generated methods ---
    def __neg__(self) -> Tensor: ...
    def __abs__(self) -> Tensor: ...
    def __pos__(self) -> Tensor: ...
    def __pow__(self, other: Union[_Scalar, Tensor], modulo: None = None, /) -> Tensor: ...
    def __rpow__(self, other: _Scalar, modulo: None = None, /) -> Tensor: ...
    def __add__(self, other: _Operand, /) -> Tensor: ...
    def __radd__(self, other: _Operand, /) -> Tensor: ...
    def __sub__(self, other: _Operand, /) -> Tensor: ...
    def __rsub__(self, other: _Operand, /) -> Tensor: ...
    def __mul__(self, other: _Operand, /) -> Tensor: ...
    # The ignore: a one-element integer tensor is an index (__index__), so mypy sees `list * tensor`
    # as list repetition too; at runtime a list does repeat (as with torch) and other operands multiply.
    def __rmul__(self, other: _Operand, /) -> Tensor: ...  # type: ignore[misc]
    def __truediv__(self, other: _Operand, /) -> Tensor: ...
    def __rtruediv__(self, other: _Operand, /) -> Tensor: ...
    def __floordiv__(self, other: _Operand, /) -> Tensor: ...
    def __rfloordiv__(self, other: _Operand, /) -> Tensor: ...
    def __mod__(self, other: _Operand, /) -> Tensor: ...
    def __rmod__(self, other: _Operand, /) -> Tensor: ...
    def floor_divide(self, other: _Operand) -> Tensor:
        """``x // other``, rounding toward negative infinity; integer division by zero raises."""
    def remainder(self, other: _Operand) -> Tensor:
        """``x % other`` with the sign of ``other``; integer remainder by zero raises."""
    def add(self, other: _Operand) -> Tensor: ...
    def sub(self, other: _Operand) -> Tensor: ...
    def mul(self, other: _Operand) -> Tensor: ...
    def div(self, other: _Operand) -> Tensor: ...
    def maximum(self, other: _Operand) -> Tensor: ...
    def minimum(self, other: _Operand) -> Tensor: ...

    # reductions
    def sum(self, dim: _Dims = None, keepdim: Optional[builtins.bool] = None) -> Tensor: ...
    def mean(self, dim: _Dims = None, keepdim: Optional[builtins.bool] = None) -> Tensor: ...
    def amax(self, dim: _Dims = None, keepdim: Optional[builtins.bool] = None) -> Tensor: ...
    def amin(self, dim: _Dims = None, keepdim: Optional[builtins.bool] = None) -> Tensor: ...
    # max/min/topk/sort are defined in rustgrad/_reductions.py, as compositions of the op table's ops.
    @overload
    def max(self, dim: None = None, keepdim: builtins.bool = False) -> Tensor:
        """The maximum over all elements; with an int ``dim``, the named tuple ``(values, indices)``
        along it; with a tensor, the elementwise maximum."""
    @overload
    def max(self, dim: Tensor, keepdim: builtins.bool = False) -> Tensor: ...
    @overload
    def max(self, dim: builtins.int, keepdim: builtins.bool = False) -> _return_types.max: ...
    @overload
    def min(self, dim: None = None, keepdim: builtins.bool = False) -> Tensor:
        """As ``max``, for the smallest elements."""
    @overload
    def min(self, dim: Tensor, keepdim: builtins.bool = False) -> Tensor: ...
    @overload
    def min(self, dim: builtins.int, keepdim: builtins.bool = False) -> _return_types.min: ...
    def topk(
        self, k: builtins.int, dim: builtins.int = -1, largest: builtins.bool = True, sorted: builtins.bool = True
    ) -> _return_types.topk:
        """The ``k`` largest (or smallest) elements along ``dim`` and their indices."""
    def sort(
        self, dim: builtins.int = -1, descending: builtins.bool = False, stable: builtins.bool = False
    ) -> _return_types.sort:
        """The elements sorted along ``dim`` and the indices they came from."""

    # comparisons: elementwise, giving bool tensors. The ignores: mypy sees numpy's reflected
    # comparisons accept a Tensor (it has __array__) and return an ndarray, but numpy defers to
    # these methods at runtime (__array_priority__), so `ndarray < tensor` is a Tensor.
    def __lt__(self, other: _Operand, /) -> Tensor: ...  # type: ignore[misc]
    def __le__(self, other: _Operand, /) -> Tensor: ...  # type: ignore[misc]
    def __gt__(self, other: _Operand, /) -> Tensor: ...  # type: ignore[misc]
    def __ge__(self, other: _Operand, /) -> Tensor: ...  # type: ignore[misc]
    def __eq__(self, other: _Operand, /) -> Tensor: ...  # type: ignore[override]
    def __ne__(self, other: _Operand, /) -> Tensor: ...  # type: ignore[override]
    def __hash__(self) -> builtins.int:
        """By identity, so tensors can be dict keys (optimizer state)."""

    # conversion
    def item(self) -> Union[builtins.float, builtins.int, builtins.bool]:
        """The value of a one-element tensor: a float, an int or a bool, by its dtype."""
    def tolist(self) -> Any:
        """Nested lists of numbers, as deep as the tensor's rank; a number for a 0-d tensor."""
    def numpy(self) -> NDArray[Any]:
        """A numpy array sharing this tensor's memory (a copy for bool tensors)."""
    def __array__(self, dtype: Optional[DTypeLike] = None, copy: Optional[builtins.bool] = None) -> NDArray[Any]:
        """Shares memory as ``numpy()`` does, and like it refuses a tensor that requires grad;
        ``copy=False`` raises ``InvalidArgumentError`` (a ValueError) when a copy is needed."""
    def __reduce__(self) -> tuple[Any, tuple[bytes, str, tuple[builtins.int, ...], builtins.bool]]:
        """Pickles the values, dtype, shape and ``requires_grad`` (not ``.grad`` or the history)."""
    def __deepcopy__(self, memo: dict[builtins.int, Any], /) -> Tensor:
        """Copies a leaf with ``requires_grad`` and ``.grad``; a non-leaf raises ``GradientError``."""
    def __dlpack__(
        self,
        *,
        stream: Optional[Any] = None,
        max_version: Optional[tuple[builtins.int, builtins.int]] = None,
        dl_device: Optional[Any] = None,
        copy: Optional[builtins.bool] = None,
    ) -> Any:
        """A DLPack capsule viewing this tensor's memory."""
    def __dlpack_device__(self) -> tuple[builtins.int, builtins.int]: ...
    def clone(self) -> Tensor: ...
    def detach(self) -> Tensor: ...
    def detach_(self) -> Self: ...
    @overload
    def to(self, dtype: Union[_DTypeLike, Tensor], /) -> Tensor: ...
    @overload
    def to(self, device: Optional[_DeviceLike], dtype: Optional[_DTypeLike] = None, /) -> Tensor: ...
    @overload
    def to(self, *, dtype: Optional[_DTypeLike] = None, device: Optional[_DeviceLike] = None) -> Tensor: ...
    def float(self) -> Tensor: ...
    def double(self) -> Tensor: ...
    def bool(self) -> Tensor: ...
    def long(self) -> Tensor: ...
    def int(self) -> Tensor: ...
    def byte(self) -> Tensor: ...
    @overload
    def type(self, dtype: None = None) -> str:
        """The tensor type's name, e.g. ``'rustgrad.LongTensor'``."""
    @overload
    def type(self, dtype: Union[_DTypeLike, str]) -> Tensor:
        """Cast as ``to(dtype)``; a tensor type name such as ``'torch.LongTensor'`` works too."""
    def is_signed(self) -> builtins.bool: ...
    def cpu(self) -> Self: ...

    # in place (each returns self)
    def zero_(self) -> Self: ...
    def fill_(self, value: Union[_Scalar, Tensor]) -> Self:
        """A number or a one-element tensor."""
    def add_(self, other: _Operand, alpha: Optional[_Scalar] = None) -> Self: ...
    def addcmul(self, tensor1: _Operand, tensor2: _Operand, *, value: _Scalar = 1) -> Tensor:
        """``self + value * tensor1 * tensor2``: see ``rustgrad.addcmul``."""
    def addcdiv(self, tensor1: _Operand, tensor2: _Operand, *, value: _Scalar = 1) -> Tensor:
        """``self + value * tensor1 / tensor2``: see ``rustgrad.addcdiv``."""
    def addcmul_(self, tensor1: _Operand, tensor2: _Operand, *, value: _Scalar = 1) -> Self:
        """In place, ``self + value * tensor1 * tensor2`` (an optimizer's ``exp_avg_sq.addcmul_(g, g, value=...)``)."""
    def addcdiv_(self, tensor1: _Operand, tensor2: _Operand, *, value: _Scalar = 1) -> Self:
        """In place, ``self + value * tensor1 / tensor2`` (an optimizer's ``p.addcdiv_(exp_avg, denom, value=-lr)``)."""
    def sub_(self, other: _Operand) -> Self: ...
    def mul_(self, other: _Operand) -> Self: ...
    def div_(self, other: _Operand) -> Self: ...
    def clamp_(self, min: Optional[builtins.float] = None, max: Optional[builtins.float] = None) -> Self: ...
    def copy_(self, src: _Operand) -> Self: ...
    def __iadd__(self, other: _Operand, /) -> Self: ...
    def __isub__(self, other: _Operand, /) -> Self: ...
    def __imul__(self, other: _Operand, /) -> Self: ...
    def __itruediv__(self, other: _Operand, /) -> Self: ...
    def __ifloordiv__(self, other: _Operand, /) -> Self: ...
    def __imod__(self, other: _Operand, /) -> Self: ...
    def floor_divide_(self, other: _Operand) -> Self: ...
    def remainder_(self, other: _Operand) -> Self: ...
    # random (set by rustgrad._random)
    def uniform_(self, a: builtins.float = 0.0, b: builtins.float = 1.0, *, generator: _GeneratorLike = None) -> Self:
        """Samples from U[a, b)."""
    def normal_(
        self, mean: builtins.float = 0.0, std: builtins.float = 1.0, *, generator: _GeneratorLike = None
    ) -> Self:
        """Samples from N(mean, std²)."""
    def bernoulli_(self, p: Union[builtins.float, Tensor] = 0.5, *, generator: _GeneratorLike = None) -> Self:
        """1 with probability ``p`` (a number or a tensor that broadcasts to self), else 0."""
    def random_(
        self,
        from_: Optional[builtins.int] = None,
        to: Optional[builtins.int] = None,
        *,
        generator: _GeneratorLike = None,
    ) -> Self:
        """Integers from [from, to), [0, to), or 0 to the largest integer the dtype holds exactly."""
    def bernoulli(self, p: Optional[builtins.float] = None, *, generator: _GeneratorLike = None) -> Tensor: ...
    def multinomial(
        self, num_samples: builtins.int, replacement: builtins.bool = False, *, generator: _GeneratorLike = None
    ) -> Tensor: ...

    # indexing
    def __getitem__(self, key: _Index, /) -> Tensor: ...
    def __setitem__(self, key: _Index, value: _Operand, /) -> None: ...
    def __len__(self) -> builtins.int: ...
    def __iter__(self) -> Iterator[Tensor]: ...
    def __bool__(self) -> builtins.bool: ...
    def __float__(self) -> builtins.float: ...
    def __int__(self) -> builtins.int:
        """Truncates; NaN raises ``InvalidArgumentError`` and infinity ``NumericOverflowError``."""
    def __index__(self) -> builtins.int:
        """A one-element integer (or bool) tensor as an index (``range(t)``, ``seq[t]``)."""

    # autograd
    def backward(
        self,
        gradient: Optional[_Operand] = None,
        retain_graph: Optional[builtins.bool] = None,
        create_graph: builtins.bool = False,
        inputs: None = None,
    ) -> None:
        """``create_graph=True`` records the pass, so ``.grad`` can be differentiated again; ``inputs=`` raises."""
    def retain_grad(self) -> None:
        """Keeps this non-leaf tensor's gradient in ``.grad`` after ``backward()``."""
    def register_hook(self, hook: Callable[[Tensor], Optional[Tensor]]) -> RemovableHandle:
        """Calls ``hook(grad)`` with this tensor's gradient during backward; a Tensor it returns replaces it."""
    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], object]) -> RemovableHandle:
        """Calls ``hook(tensor)`` after backward has updated this leaf's ``.grad``."""

# ----- autograd graph nodes ------------------------------------------------------------------

@final
class Node:
    """A node of the backward graph (``tensor.grad_fn``); module ``rustgrad.autograd``."""

    def name(self) -> str: ...
    @property
    def op_name(self) -> str: ...
    @property
    def is_custom(self) -> builtins.bool: ...
    @property
    def output_shapes(self) -> list[list[builtins.int]]: ...
    @property
    def next_functions(self) -> tuple[tuple[Union[Node, AccumulateGrad, None], builtins.int], ...]: ...
    def __eq__(self, other: object, /) -> builtins.bool: ...
    def __hash__(self) -> builtins.int: ...

@final
class AccumulateGrad:
    """The sink of a leaf tensor's gradient; module ``rustgrad.autograd``."""

    @property
    def variable(self) -> Tensor: ...
    def name(self) -> str: ...
    def __eq__(self, other: object, /) -> builtins.bool: ...
    def __hash__(self) -> builtins.int: ...

@final
class RemovableHandle:
    """What ``Tensor.register_hook`` returns: ``remove()`` unregisters the hook (also a context manager);
    module ``rustgrad.autograd``."""

    def remove(self) -> None: ...
    @property
    def id(self) -> builtins.int: ...
    def __enter__(self) -> RemovableHandle: ...
    def __exit__(self, *_args: object) -> None: ...

# ----- static graphs ---------------------------------------------------------------------------

@final
class IndexItems:
    """A parsed index key (ints, slices, None, ``...``, bools, and index tensors' places): the argument of
    a graph ``index``, ``advanced_index`` or ``index_put`` op."""

    def __repr__(self) -> str: ...

@final
class OpSpec:
    """One op of the op table (rust/ops/): callable on eager tensors, applied by static graphs."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def torch_aliases(self) -> list[str]: ...
    @property
    def tf(self) -> list[str]: ...
    @property
    def doc(self) -> str: ...
    @property
    def differentiable(self) -> builtins.bool: ...
    @property
    def varargs(self) -> builtins.bool:
        """Whether the method also takes its one list-of-ints argument as separate ints (``x.permute(1, 0)``)."""
    @property
    def inputs(self) -> list[tuple[str, str, builtins.bool]]: ...
    @property
    def params(self) -> list[tuple[str, str, list[str], str, Optional[str], Optional[str]]]: ...
    @property
    def roles(self) -> list[str]: ...
    @property
    def torch_order(self) -> list[str]: ...
    @property
    def torch_front(self) -> tuple[builtins.bool, builtins.bool, builtins.bool, builtins.bool]: ...
    def __call__(self, *args: Any) -> Tensor: ...
    def in_place(self, *args: Any) -> None: ...
    def __repr__(self) -> str: ...

ops: dict[str, OpSpec]
"""The op table: ``{name: OpSpec}`` in declaration order."""

def _parse_index_key(key: Any) -> object:
    """The one index-key parser, as the static front uses it: ``IndexItems`` for a basic key, a bool
    ``Tensor`` for a numpy or eager mask, the graph tensor that is the whole key, or
    ``(IndexItems, [index tensors])`` for a key with index tensors (advanced indexing)."""

@final
class GraphCore:
    """The core of ``rustgrad.static.Graph``: nodes are named by integer ids."""

    def __new__(cls) -> Self: ...
    def placeholder(self, dtype: _DTypeLike, shape: _PartialShape, name: Optional[str] = None) -> builtins.int: ...
    def constant(self, array: NDArray[Any], name: Optional[str] = None) -> builtins.int: ...
    def random(
        self,
        kind: Literal["normal", "uniform", "truncated_normal", "integers"],
        a: Union[builtins.float, builtins.int],
        b: Union[builtins.float, builtins.int],
        shape: Sequence[builtins.int],
        dtype: _DTypeLike,
        seed: Optional[tuple[builtins.int, builtins.int]] = None,
        name: Optional[str] = None,
        dims: Optional[builtins.int] = None,
    ) -> builtins.int:
        """A random node (``integers``: ints in [a, b)); ``seed`` is TF1's (graph seed, op seed)
        pair. With ``dims``, a 1-D integer node, the shape is its value at run time."""
    def shuffle(
        self, input: builtins.int, seed: Optional[tuple[builtins.int, builtins.int]] = None, name: Optional[str] = None
    ) -> builtins.int:
        """A random node: ``input`` with its first dim shuffled."""
    def range(
        self, start: builtins.int, limit: builtins.int, delta: builtins.int, name: Optional[str] = None
    ) -> builtins.int:
        """TF's ``Range`` of three 0-d nodes of one dtype."""
    def fill(
        self,
        value: builtins.int,
        dims: Optional[builtins.int] = None,
        shape: Optional[Sequence[builtins.int]] = None,
        name: Optional[str] = None,
    ) -> builtins.int:
        """TF's ``Fill`` of the 0-d node ``value`` over ``shape``, or over the values of the 1-D node ``dims``."""
    def introspect(
        self,
        kind: str,
        input: builtins.int,
        out_type: Optional[_DTypeLike] = None,
        name: Optional[str] = None,
    ) -> builtins.int:
        """TF's ``Shape`` (``"shape"``), ``Size`` (``"size"``) or ``Rank`` (``"rank"``) of the node ``input``."""
    def reshape_to(self, input: builtins.int, dims: builtins.int, name: Optional[str] = None) -> builtins.int:
        """TF's ``Reshape`` of ``input`` to the shape the 1-D integer node ``dims`` holds at run time."""
    def variable(
        self, dtype: _DTypeLike, shape: Sequence[builtins.int], name: Optional[str] = None
    ) -> tuple[builtins.int, builtins.int]:
        """Returns ``(variable index, id of its read node)``."""
    def apply(
        self,
        spec: OpSpec,
        inputs: Sequence[builtins.int],
        name: Optional[str] = None,
        args: Optional[tuple[Any, ...]] = None,
        numbers: Optional[Sequence[Optional[builtins.float]]] = None,
    ) -> builtins.int:
        """Adds a node applying an op of the table to ``inputs``, with its other arguments ``args``;
        ``numbers[i]`` is the Python number input i was made from, if any."""
    def op(
        self, kind: str, args: tuple[Any, ...], inputs: Sequence[builtins.int], name: Optional[str] = None
    ) -> builtins.int: ...
    def assign(
        self,
        var: builtins.int,
        mode: str,
        value: builtins.int,
        name: Optional[str] = None,
        use_locking: builtins.bool = False,
    ) -> builtins.int:
        """``mode`` is ``"add"``, ``"sub"`` or anything else for a plain assignment. With
        ``use_locking``, runs holding the assign update the variable one at a time."""
    def apply_adam(
        self,
        var: builtins.int,
        m: builtins.int,
        v: builtins.int,
        scalars: Sequence[builtins.int],
        grad: builtins.int,
        name: Optional[str] = None,
        use_locking: builtins.bool = False,
    ) -> builtins.int:
        """TF1's ``ApplyAdam`` of the variables ``var``, ``m``, ``v``; ``scalars`` are the nodes of
        beta1_power, beta2_power, lr, beta1, beta2 and epsilon, in that order."""
    def begin_edit(self) -> None:
        """Begins an undoable edit by this thread (edits nest); waits while another thread's is open."""
    def end_edit(self, undo: builtins.bool) -> None:
        """Ends this thread's innermost edit; with ``undo``, removes everything it added."""
    def group(self, inputs: Sequence[builtins.int], name: Optional[str] = None) -> builtins.int:
        """A node without a value that runs after ``inputs`` (its control inputs)."""
    def function_call(
        self,
        name: str,
        backward: Callable[[list[builtins.int]], Sequence[Optional[builtins.int]]],
        outputs: Sequence[builtins.int],
        inputs: Sequence[builtins.int],
    ) -> tuple[builtins.int, list[builtins.int]]: ...
    def gradients(
        self,
        ys: Sequence[builtins.int],
        xs: Sequence[builtins.int],
        grad_ys: Sequence[Optional[builtins.int]],
        stops: Sequence[builtins.int] = ...,
    ) -> list[Optional[builtins.int]]: ...
    def num_nodes(self) -> builtins.int: ...
    def node_name(self, id: builtins.int) -> str: ...
    def node_type(self, id: builtins.int) -> str: ...
    def node_dtype(self, id: builtins.int) -> dtype: ...
    def node_shape(self, id: builtins.int) -> Optional[list[Optional[builtins.int]]]: ...
    def node_shape_str(self, id: builtins.int) -> str: ...
    def node_inputs(self, id: builtins.int) -> list[builtins.int]: ...
    def node_control_inputs(self, id: builtins.int) -> list[builtins.int]: ...
    def push_control_frame(self, controls: Optional[Sequence[builtins.int]]) -> builtins.int:
        """Opens a ``control_dependencies`` block of the calling thread (``None`` clears the outer ones)."""
    def pop_control_frame(self) -> None:
        """Closes the calling thread's innermost ``control_dependencies`` block."""
    def node_has_value(self, id: builtins.int) -> builtins.bool: ...
    def node_variable(self, id: builtins.int) -> Optional[builtins.int]: ...
    def node_is_custom(self, id: builtins.int) -> builtins.bool: ...
    def variable_info(self, var: builtins.int) -> tuple[str, builtins.int, list[builtins.int]]:
        """``(name, id of the read node, shape)``."""
    def num_variables(self) -> builtins.int: ...
    def name_scope(self) -> str:
        """The calling thread's name scope (``""`` at the root)."""
    def set_name_scope(self, scope: str) -> None:
        """Sets the calling thread's name scope: nodes it adds are named ``scope/Name``."""
    def unique_name(self, name: str, mark_as_used: builtins.bool = True) -> str:
        """``name`` under the calling thread's name scope, made unique as TF's ``Graph.unique_name``."""
    # Debugging ops (rust/python/static_debug.rs).
    def print_op(
        self,
        input: builtins.int,
        data: Sequence[builtins.int],
        message: str,
        first_n: Optional[builtins.int] = None,
        summarize: builtins.int = 3,
        name: Optional[str] = None,
    ) -> builtins.int:
        """TF's ``Print``: ``input``'s value, and a line on standard error each time it runs."""
    def assert_op(
        self,
        condition: builtins.int,
        data: Sequence[Optional[str]],
        tensors: Sequence[builtins.int],
        summarize: builtins.int = 3,
        name: Optional[str] = None,
    ) -> builtins.int:
        """TF's ``Assert``: ``data`` items are texts, or None for the next of ``tensors``."""
    def check_numerics(self, input: builtins.int, message: str, name: Optional[str] = None) -> builtins.int:
        """TF's ``CheckNumerics``: ``input``'s value; the run fails when it holds NaN or Inf."""
    def node_constant_value(self, id: builtins.int) -> Optional[NDArray[Any]]:
        """The value of a constant node as a numpy array, or None for any other node."""
    # Static control flow (issue 16, ctrlflow; rust/python/static_control_flow.rs).
    def push_frame(self, kind: str) -> builtins.int:
        """Opens a frame ("branch", "loop_cond" or "loop_body") of the calling thread; returns its id."""
    def pop_frame(self, frame: builtins.int) -> None:
        """Closes the calling thread's innermost frame, ``frame``."""
    def current_frame(self) -> builtins.int:
        """The calling thread's innermost open frame (0 outside control flow)."""
    def node_frame(self, id: builtins.int) -> builtins.int:
        """The frame a node belongs to (0 outside control flow)."""
    def frame_arg(self, dtype: _DTypeLike, shape: _PartialShape, name: Optional[str] = None) -> builtins.int:
        """The next loop variable of the current (loop) frame, with the invariant ``shape``."""
    def cond(
        self,
        pred: builtins.int,
        branches: Sequence[builtins.int],
        outputs: Sequence[Sequence[builtins.int]],
        name: Optional[str] = None,
    ) -> list[builtins.int]:
        """A Cond node over closed branch frames; returns its output nodes."""
    def while_loop(
        self,
        cond: builtins.int,
        body: builtins.int,
        inits: Sequence[builtins.int],
        cond_output: builtins.int,
        body_outputs: Sequence[builtins.int],
        max_iterations: Optional[builtins.int] = None,
        back_prop: builtins.bool = True,
        name: Optional[str] = None,
    ) -> list[builtins.int]:
        """A While node over closed cond and body frames; returns its output nodes."""
    def loop_stack(self, loop_output: builtins.int, value: builtins.int) -> builtins.int:
        """The values a node of a loop's body had in each iteration, stacked along a new first
        dim (``loop_output`` is one of the loop's outputs, ``value`` the body node)."""

@final
class SessionCore:
    """The core of ``rustgrad.static.Session``: cached plans and variable values."""

    def __new__(cls, graph: GraphCore) -> Self: ...
    def run(
        self,
        fetches: Sequence[builtins.int],
        feeds: Sequence[builtins.int],
        values: Sequence[NDArray[Any]],
        trace: Optional[list[tuple[str, str, builtins.float]]] = None,
        memory: Optional[list[Any]] = None,
    ) -> list[Optional[NDArray[Any]]]:
        """One array (None for a node without a value) per fetch. With ``trace``, appends
        ``(node name, op type, seconds)`` for every node run; with ``memory``,
        ``(step, node name, op type, stored, released)`` for every step."""
    def close(self) -> None: ...
    def plan_cache_size(self) -> builtins.int:
        """How many compiled plans the session holds (at most ``plan_cache_capacity``)."""
    plan_cache_capacity: ClassVar[builtins.int]
    """How many compiled plans a session keeps; the least recently used goes first."""
    @property
    def closed(self) -> builtins.bool: ...
    def variable_value(self, var: builtins.int) -> Optional[NDArray[Any]]: ...
    def set_variable_value(self, var: builtins.int, array: NDArray[Any]) -> None: ...

# ----- functions ---------------------------------------------------------------------------------

def _full(
    shape: Sequence[builtins.int], value: _Scalar, dtype: _DTypeLike, requires_grad: builtins.bool
) -> Tensor: ...

_GeneratorLike: TypeAlias = Union["Generator", builtins.int, None]
"""A ``Generator``, None for the default one, or an int seeding a private generator for one call."""
_Distribution: TypeAlias = Literal["normal", "uniform", "truncated_normal", "integers", "bernoulli"]

@final
class Generator:
    """torch's ``Generator``: a seedable source of random numbers for ``generator=``; threads may share one."""

    def __new__(cls, device: Optional[_DeviceLike] = None) -> Self:
        """A new generator, seeded with torch's default seed (67280421310721)."""
    def manual_seed(self, seed: builtins.int) -> Self:
        """Restarts the sequence from ``seed``, an int in [-2**63, 2**64) (negative seeds wrap)."""
    def seed(self) -> builtins.int:
        """Restarts the sequence from a non-deterministic seed; returns it."""
    def initial_seed(self) -> builtins.int:
        """The seed the current sequence started from."""
    def get_state(self) -> Tensor:
        """The state as a uint8 tensor, for ``set_state``."""
    def set_state(self, new_state: Tensor) -> Self:
        """Restores a state from ``get_state``."""
    @property
    def device(self) -> _device: ...

default_generator: Generator

def _random(
    shape: Sequence[builtins.int],
    dtype: _DTypeLike,
    kind: _Distribution,
    a: Union[builtins.float, builtins.int],
    b: Union[builtins.float, builtins.int],
    requires_grad: builtins.bool,
    generator: _GeneratorLike = None,
    op: Optional[str] = None,
) -> Tensor:
    """Draws of a distribution (``integers``: ints in [a, b); ``bernoulli``: p = a); ``op`` names the call."""
def _fill_random(
    tensor: Tensor,
    op: str,
    kind: _Distribution,
    a: Union[builtins.float, builtins.int],
    b: Union[builtins.float, builtins.int],
    generator: _GeneratorLike = None,
) -> None:
    """Overwrites ``tensor`` with draws of a distribution, as ``_random`` describes them."""
def _randperm(
    n: builtins.int, dtype: _DTypeLike, requires_grad: builtins.bool, generator: _GeneratorLike = None
) -> Tensor: ...
def _bernoulli(input: Tensor, generator: _GeneratorLike = None, into: Optional[Tensor] = None) -> Optional[Tensor]:
    """Coin flips of the probabilities ``input``; with ``into``, written into it (broadcast) and None returned."""
def _multinomial(
    input: Tensor, num_samples: builtins.int, replacement: builtins.bool, generator: _GeneratorLike = None
) -> Tensor: ...
def _normal(mean: Tensor, std: Tensor, generator: _GeneratorLike = None) -> Tensor: ...
def _range_values(
    start: builtins.float, limit: builtins.float, delta: builtins.float, dtype: _DTypeLike
) -> Tensor:
    """TF's ``range`` of numbers in ``dtype``."""
def _from_numpy(array: NDArray[Any], requires_grad: builtins.bool, share: builtins.bool = False) -> Tensor: ...
def from_dlpack(obj: Any) -> Tensor:
    """A tensor sharing memory with any DLPack producer (copied when the layout does not allow sharing)."""
def set_num_threads(threads: builtins.int) -> None: ...
def get_num_threads() -> builtins.int: ...
def empty_cache() -> None:
    """Frees the large buffers (128 KiB and more) that rustgrad keeps for reuse after their tensors die."""
def memory_cached() -> builtins.int:
    """Bytes of freed tensor memory rustgrad keeps for reuse: at most the smaller of
    512 MiB and an eighth of the memory the process may use."""
def _after_fork_in_child() -> None: ...

# Kernel threads' spin setting (rust/python/threading.rs).
def set_spin_us(us: builtins.int) -> None:
    """Sets how long (µs, 0 to 1,000,000) kernel helper threads spin after a job before they park; 0 parks at once."""
def get_spin_us() -> builtins.int:
    """Microseconds kernel helper threads spin after a job (default 300, or RUSTGRAD_SPIN_US at start-up)."""
def _spin_us_env_problem() -> Optional[builtins.str]: ...
def _spin_helper_count() -> builtins.int: ...
def backward(
    tensors: Union[Tensor, Iterable[Tensor]],
    grad_tensors: Union[Tensor, Iterable[Optional[Tensor]], None] = None,
    retain_graph: Optional[builtins.bool] = None,
    create_graph: builtins.bool = False,
) -> None: ...
@overload
def grad(
    outputs: Union[Tensor, Iterable[Tensor]],
    inputs: Union[Tensor, Iterable[Tensor]],
    grad_outputs: Union[Tensor, Iterable[Optional[Tensor]], None] = None,
    retain_graph: Optional[builtins.bool] = None,
    create_graph: builtins.bool = False,
    allow_unused: Literal[False] = False,
) -> tuple[Tensor, ...]: ...
@overload
def grad(
    outputs: Union[Tensor, Iterable[Tensor]],
    inputs: Union[Tensor, Iterable[Tensor]],
    grad_outputs: Union[Tensor, Iterable[Optional[Tensor]], None] = None,
    retain_graph: Optional[builtins.bool] = None,
    create_graph: builtins.bool = False,
    allow_unused: builtins.bool = False,
) -> tuple[Optional[Tensor], ...]: ...
def is_grad_enabled() -> builtins.bool: ...
def _set_grad_enabled(enabled: builtins.bool) -> None: ...
def _set_detect_anomaly(enabled: builtins.bool) -> None: ...
def is_anomaly_enabled() -> builtins.bool: ...
def _apply_function(cls: type, ctx_class: type, graph_value: type, graph_path: object, args: tuple[Any, ...]) -> Any:
    """``Function.apply`` for eager tensors; returns ``graph_path`` when an argument is a graph tensor."""

def _save_tensors(
    items: tuple[Any, ...],
) -> Optional[tuple[tuple[Optional[Tensor], ...], tuple[Optional[builtins.int], ...]]]:
    """Detached aliases of tensors (None stays None) and their versions; None if an item is neither."""

def _first_changed(saved: tuple[Any, ...], versions: tuple[Any, ...]) -> Optional[builtins.int]:
    """The index of the first saved tensor modified in place since it was saved, if any."""

# higher (issue 16)
def _with_history(tensor: Tensor, node: Node, output_nr: builtins.int) -> Tensor:
    """An alias of ``tensor`` (same data and version counter) that is output ``output_nr`` of ``node``."""

# ddpoverlap: end-of-backward callbacks
def _queue_callback(callback: Callable[[], object]) -> None:
    """Runs ``callback()`` once the running backward pass is over (``Variable._execution_engine.queue_callback``)."""

# end ddpoverlap
def _panic_for_test(message: str) -> NoReturn:
    """Always raises ``rustgrad.errors.InternalError`` (a Rust panic caught by the guard)."""

def _matmul(a: Tensor, b: Tensor) -> Tensor: ...
def _where(condition: Union[Tensor, _ArrayLike], x: _Operand, y: _Operand) -> Tensor: ...
def _adam_update(
    params: list[Tensor],
    grads: list[Tensor],
    exp_avgs: list[Tensor],
    exp_avg_sqs: list[Tensor],
    max_exp_avg_sqs: Optional[list[Tensor]],
    steps: Union[list[builtins.int], list[Tensor]],
    *,
    lr: Union[builtins.float, Tensor],
    beta1: builtins.float,
    beta2: builtins.float,
    eps: builtins.float,
    weight_decay: builtins.float,
    decoupled: builtins.bool,
    maximize: builtins.bool,
) -> None:
    """One Adam/AdamW step over every parameter, each in one pass; checks all before writing any."""

# mpistatic (issue 17): static mode's collectives
@final
class Communicator:
    """The communicator of a process group, as static graphs' collectives use it."""

    @property
    def rank(self) -> builtins.int: ...
    @property
    def size(self) -> builtins.int: ...
    @property
    def transport(self) -> str:
        """How the collectives reach MPI: directly from Rust, or through mpi4py."""
    def allreduce_mean(self, tensors: list[Tensor], deterministic: builtins.bool = True) -> Tensor:
        """The mean over the ranks of ``tensors``, fused into one flat buffer, with the GIL released."""

def _mpi_communicator(
    comm: builtins.int,
    handle_bytes: builtins.int,
    byte: builtins.int,
    float: builtins.int,
    double: builtins.int,
    sum: builtins.int,
    library: Optional[str] = None,
) -> Communicator:
    """A communicator calling MPI from Rust, on mpi4py's handles (``MPI._handleof``)."""

def _mpi4py_communicator(comm: Any, mpi: Any) -> Communicator:
    """A communicator over an mpi4py communicator (the fallback)."""

def _collective_seconds() -> tuple[builtins.int, builtins.float]:
    """How many collective nodes ran and the seconds they took since the last call; resets both."""

def _static_allreduce(
    graph: GraphCore,
    comm: Communicator,
    inputs: list[builtins.int],
    names: list[str],
    deterministic: builtins.bool = True,
    name: Optional[str] = None,
) -> builtins.int:
    """Adds a ``HorovodAllreduce`` node: the mean over the ranks of ``inputs``, one flat buffer."""

def _static_broadcast(
    graph: GraphCore,
    comm: Communicator,
    inputs: list[builtins.int],
    names: list[str],
    root: builtins.int,
    name: Optional[str] = None,
) -> builtins.int:
    """Adds a ``HorovodBroadcast`` node: rank ``root``'s values of ``inputs``, one flat buffer."""

def _static_unfuse(
    graph: GraphCore, input: builtins.int, offset: builtins.int, shape: list[builtins.int], name: Optional[str] = None
) -> builtins.int:
    """Adds a node viewing ``shape``'s worth of elements from ``offset`` of the fused buffer ``input``."""


# ----- rustgrad.compile (rust/python/compile.rs) --------------------------------

@final
class _CompiledProgram:
    """A traced call, replayable (rustgrad/_compile.py)."""

    @property
    def signature(self) -> builtins.str:
        """Everything that decides what the program computes."""
    @property
    def fused_leaf_steps(self) -> builtins.int:
        """How many leaves' SGD steps run fused (one pass per leaf; the same bits)."""
    @property
    def fused_products(self) -> builtins.int:
        """How many of those steps also run the matrix product that makes their gradient."""
    def __len__(self) -> builtins.int: ...
    def check(self, feeds: list[Tensor]) -> Optional[builtins.str]:
        """Why the program does not apply to these arguments and the current state, or None."""
    def run(self, feeds: list[Tensor]) -> Optional[list[Tensor]]:
        """Runs the program; None (and nothing changed) when a guard fails."""

def _compile_begin(feeds: list[Tensor]) -> None: ...
def _compile_end(outputs: list[Any]) -> tuple[Optional[_CompiledProgram], Optional[builtins.str]]: ...
def _compile_abort() -> None: ...
def _compile_stop(reason: builtins.str) -> None: ...
def _compile_tracing() -> builtins.bool: ...
