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
    "GraphCore",
    "SessionCore",
    "IndexItems",
    "float32",
    "float64",
    "bool",
    "_full",
    "_random",
    "_from_numpy",
    "from_dlpack",
    "manual_seed",
    "set_num_threads",
    "get_num_threads",
    "empty_cache",
    "memory_cached",
    "_after_fork_in_child",
    "backward",
    "grad",
    "is_grad_enabled",
    "_set_grad_enabled",
    "_set_detect_anomaly",
    "is_anomaly_enabled",
    "_save_tensors",
    "_apply_function",
    "_first_changed",
    "_panic_for_test",
    "_matmul",
    "_where",
    "_parse_index_key",
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
    """``rustgrad.float32``, ``rustgrad.float64`` and ``rustgrad.bool``: singletons (no constructor)."""

    @property
    def is_floating_point(self) -> builtins.bool: ...
    @property
    def itemsize(self) -> builtins.int: ...
    @property
    def name(self) -> str: ...
    def __reduce__(self) -> str:
        """The name of the module attribute (``"float32"``): unpickling gives the same singleton."""
    def __eq__(self, other: object, /) -> builtins.bool: ...
    def __hash__(self) -> builtins.int: ...

float32: Final[dtype]
float64: Final[dtype]
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
    def flatten(self) -> Tensor: ...
    def unsqueeze(self, dim: builtins.int) -> Tensor: ...
    def squeeze(self, dim: Optional[builtins.int] = None) -> Tensor: ...
    def contiguous(self) -> Tensor: ...

    # math
    def clamp(self, min: Optional[builtins.float] = None, max: Optional[builtins.float] = None) -> Tensor: ...
    def clip(self, min: Optional[builtins.float] = None, max: Optional[builtins.float] = None) -> Tensor: ...
    def relu(self) -> Tensor: ...
    def exp(self) -> Tensor: ...
    def log(self) -> Tensor: ...
    def sqrt(self) -> Tensor: ...
    def tanh(self) -> Tensor: ...
    def sigmoid(self) -> Tensor: ...
    def abs(self) -> Tensor: ...
    def neg(self) -> Tensor: ...
    def sign(self) -> Tensor: ...
    def square(self) -> Tensor: ...
    def __neg__(self) -> Tensor: ...
    def __abs__(self) -> Tensor: ...
    def __pos__(self) -> Tensor: ...
    def pow(self, exponent: Union[_Scalar, Tensor]) -> Tensor:
        """A tensor exponent must have one element and not require grad."""
    def __pow__(self, other: Union[_Scalar, Tensor], modulo: None = None, /) -> Tensor: ...
    def __rpow__(self, other: _Scalar, modulo: None = None, /) -> Tensor: ...
    def __add__(self, other: _Operand, /) -> Tensor: ...
    def __radd__(self, other: _Operand, /) -> Tensor: ...
    def __sub__(self, other: _Operand, /) -> Tensor: ...
    def __rsub__(self, other: _Operand, /) -> Tensor: ...
    def __mul__(self, other: _Operand, /) -> Tensor: ...
    def __rmul__(self, other: _Operand, /) -> Tensor: ...
    def __truediv__(self, other: _Operand, /) -> Tensor: ...
    def __rtruediv__(self, other: _Operand, /) -> Tensor: ...
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
    def max(self) -> Tensor:
        """The maximum over all elements (use ``amax(dim)`` for a reduction along dims)."""
    def min(self) -> Tensor: ...

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
    def item(self) -> builtins.float:
        """The value of a one-element tensor: a float (a bool for bool tensors)."""
    def tolist(self) -> Any:
        """Nested lists of floats (bools), as deep as the tensor's rank; a number for a 0-d tensor."""
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
    def cpu(self) -> Self: ...

    # in place (each returns self)
    def zero_(self) -> Self: ...
    def fill_(self, value: Union[_Scalar, Tensor]) -> Self:
        """A number or a one-element tensor."""
    def add_(self, other: _Operand, alpha: Optional[builtins.float] = None) -> Self: ...
    def sub_(self, other: _Operand) -> Self: ...
    def mul_(self, other: _Operand) -> Self: ...
    def div_(self, other: _Operand) -> Self: ...
    def clamp_(self, min: Optional[builtins.float] = None, max: Optional[builtins.float] = None) -> Self: ...
    def copy_(self, src: _Operand) -> Self: ...
    def __iadd__(self, other: _Operand, /) -> Self: ...
    def __isub__(self, other: _Operand, /) -> Self: ...
    def __imul__(self, other: _Operand, /) -> Self: ...
    def __itruediv__(self, other: _Operand, /) -> Self: ...

    # indexing
    def __getitem__(self, key: _Index, /) -> Tensor: ...
    def __setitem__(self, key: _Index, value: _Operand, /) -> None: ...
    def __len__(self) -> builtins.int: ...
    def __iter__(self) -> Iterator[Tensor]: ...
    def __bool__(self) -> builtins.bool: ...
    def __float__(self) -> builtins.float: ...
    def __int__(self) -> builtins.int:
        """Truncates; NaN raises ``InvalidArgumentError`` and infinity ``NumericOverflowError``."""

    # autograd
    def backward(
        self,
        gradient: Optional[_Operand] = None,
        retain_graph: Optional[builtins.bool] = None,
        create_graph: builtins.bool = False,
        inputs: None = None,
    ) -> None:
        """``create_graph=True`` (higher-order gradients) and ``inputs=`` raise ``GradientError``."""
    def retain_grad(self) -> None:
        """Keeps this non-leaf tensor's gradient in ``.grad`` after ``backward()``."""

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

# ----- static graphs ---------------------------------------------------------------------------

@final
class IndexItems:
    """A parsed basic index key (ints, slices, None, ``...``, bools): the argument of a graph ``index`` op."""

    def __repr__(self) -> str: ...

def _parse_index_key(key: Any) -> object:
    """The one index-key parser, as the static front uses it: ``IndexItems`` for a basic key, a bool
    ``Tensor`` for a numpy or eager mask, or the graph tensor that is the whole key."""

@final
class GraphCore:
    """The core of ``rustgrad.static.Graph``: nodes are named by integer ids."""

    def __new__(cls) -> Self: ...
    def placeholder(self, dtype: _DTypeLike, shape: _PartialShape, name: Optional[str] = None) -> builtins.int: ...
    def constant(self, array: NDArray[Any], name: Optional[str] = None) -> builtins.int: ...
    def random(
        self,
        kind: Literal["normal", "uniform"],
        a: builtins.float,
        b: builtins.float,
        shape: Sequence[builtins.int],
        dtype: _DTypeLike,
        seed: Optional[builtins.int] = None,
        name: Optional[str] = None,
    ) -> builtins.int: ...
    def variable(
        self, dtype: _DTypeLike, shape: Sequence[builtins.int], name: Optional[str] = None
    ) -> tuple[builtins.int, builtins.int]:
        """Returns ``(variable index, id of its read node)``."""
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
    def begin_edit(self) -> None:
        """Begins an undoable edit by this thread (edits nest); waits while another thread's is open."""
    def end_edit(self, undo: builtins.bool) -> None:
        """Ends this thread's innermost edit; with ``undo``, removes everything it added."""
    def group(self, inputs: Sequence[builtins.int], name: Optional[str] = None) -> builtins.int: ...
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
    def node_has_value(self, id: builtins.int) -> builtins.bool: ...
    def node_variable(self, id: builtins.int) -> Optional[builtins.int]: ...
    def node_is_custom(self, id: builtins.int) -> builtins.bool: ...
    def variable_info(self, var: builtins.int) -> tuple[str, builtins.int, list[builtins.int]]:
        """``(name, id of the read node, shape)``."""
    def num_variables(self) -> builtins.int: ...

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
    ) -> list[Optional[NDArray[Any]]]:
        """One array (None for a node without a value) per fetch. With ``trace``, appends
        ``(node name, op type, seconds)`` for every node run."""
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
    shape: Sequence[builtins.int], value: builtins.float, dtype: _DTypeLike, requires_grad: builtins.bool
) -> Tensor: ...
def _random(
    shape: Sequence[builtins.int],
    dtype: _DTypeLike,
    kind: Literal["normal", "uniform"],
    a: builtins.float,
    b: builtins.float,
    requires_grad: builtins.bool,
    seed: Optional[builtins.int] = None,
) -> Tensor: ...
def _from_numpy(array: NDArray[Any], requires_grad: builtins.bool, share: builtins.bool = False) -> Tensor: ...
def manual_seed(seed: builtins.int) -> None:
    """Seeds the generator; ``seed`` is an int in [-2**63, 2**64) (negative seeds wrap, as in torch)."""
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
def backward(
    tensors: Union[Tensor, Iterable[Tensor]],
    grad_tensors: Union[Tensor, Iterable[Optional[Tensor]], None] = None,
    retain_graph: Optional[builtins.bool] = None,
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

def _panic_for_test(message: str) -> NoReturn:
    """Always raises ``rustgrad.errors.InternalError`` (a Rust panic caught by the guard)."""

def _matmul(a: Tensor, b: Tensor) -> Tensor: ...
def _where(condition: Union[Tensor, _ArrayLike], x: _Operand, y: _Operand) -> Tensor: ...
