"""User-defined differentiable functions, functional gradients, and checks.

``Function`` mirrors ``torch.autograd.Function``: ``forward(ctx, *args)`` and
``backward(ctx, *grads)`` are staticmethods and ``apply`` runs them. The Rust
reverse pass calls ``backward`` when it reaches the node.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Optional, Sequence

import numpy as np

from rustgrad import _rustgrad
from rustgrad._grad_mode import _decorate, enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from rustgrad._graph_value import GraphValue
from rustgrad._rustgrad import AccumulateGrad, Node, RemovableHandle, Tensor, backward, grad, is_anomaly_enabled
from rustgrad._variable import Variable  # ddpoverlap: Variable._execution_engine.queue_callback
from rustgrad.errors import ArgumentTypeError, GradientError

__all__ = [
    "Function",
    "FunctionCtx",
    "GradcheckError",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "grad",
    "gradcheck",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "set_detect_anomaly",
    "set_grad_enabled",
    "Node",
    "AccumulateGrad",
    "RemovableHandle",
    # ddpoverlap
    "Variable",
]


class FunctionCtx:
    """The ``ctx`` handed to ``forward`` and ``backward``. Any attribute may be stored on it."""

    # Class-level defaults: a new ctx (one per call of ``apply``) needs no ``__init__``.
    needs_input_grad: tuple[bool, ...] = ()
    _saved: tuple[Optional[Tensor], ...] = ()
    _saved_versions: tuple[Optional[int], ...] = ()
    _non_differentiable: tuple[Tensor, ...] = ()
    _released = False

    def save_for_backward(self, *tensors: Optional[Tensor]) -> None:
        """Keeps tensors for ``backward``; modifying them in place afterwards is detected."""
        # Detached aliases share the data and the version counter but not the
        # history, so saving an output does not make a reference cycle.
        eager = _rustgrad._save_tensors(tensors)
        if eager is not None:
            self._saved, self._saved_versions = eager
            return
        saved: list[Optional[Tensor]] = []
        versions: list[Optional[int]] = []
        for t in tensors:
            if t is None:
                saved.append(None)
                versions.append(None)
            elif isinstance(t, (Tensor, GraphValue)):
                saved.append(t.detach())
                versions.append(t._version)
            else:
                raise ArgumentTypeError(
                    f"save_for_backward can only save tensors (or None), got {type(t).__name__}; "
                    "store other values as ctx attributes"
                )
        self._saved = tuple(saved)
        self._saved_versions = tuple(versions)

    @property
    def saved_tensors(self) -> tuple[Optional[Tensor], ...]:
        if self._released:
            raise GradientError(
                "Trying to backward through the graph a second time (or directly access saved tensors "
                "after they have already been freed). Specify retain_graph=True if you need to "
                "backward through the graph a second time or to access saved tensors after calling "
                "backward."
            )
        changed = _rustgrad._first_changed(self._saved, self._saved_versions)
        if changed is not None:
            t, version = self._saved[changed], self._saved_versions[changed]
            assert t is not None
            raise GradientError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: a {t.dtype.name} tensor of shape {list(t.shape)} saved with "
                f"save_for_backward is at version {t._version}; expected version {version} "
                "instead. Clone it before modifying it in place."
            )
        return self._saved

    def mark_non_differentiable(self, *outputs: Tensor) -> None:
        """Outputs that get no gradient (e.g. integer-like indices or masks)."""
        self._non_differentiable = outputs

    def _release(self) -> None:
        self._saved = ()
        self._released = True


class _FunctionMeta(type):
    def __repr__(cls) -> str:
        return f"<autograd.Function {cls.__name__}>"


class Function(metaclass=_FunctionMeta):
    """Base class of user-defined differentiable ops.

    Subclasses define ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)``
    as staticmethods and are called through ``MyFunction.apply(*args)``.
    ``backward`` returns one gradient (or None) per argument of ``forward``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # As in PyTorch: making an instance is deprecated but allowed; calling it fails.
        warnings.warn(
            f"{type(self).__name__} should not be instantiated: the methods of an autograd.Function "
            f"are all static, so call {type(self).__name__}.apply(...) on the class itself",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise GradientError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method: call "
            f"{type(self).__name__}.apply(...) on the class, with forward and backward as staticmethods"
        )

    @classmethod
    def apply(cls, *args: Any) -> Any:
        if _CHECKED not in cls.__dict__:
            _check_complete(cls)
        # Runs forward with grad mode off and records the call (rust/python/autograd.rs).
        result = _rustgrad._apply_function(cls, FunctionCtx, GraphValue, _GRAPH_PATH, args)
        if result is _GRAPH_PATH:
            from rustgrad.static._gradients import apply_function

            return apply_function(cls, args, FunctionCtx())
        return result


# What ``_apply_function`` returns when an argument is a graph tensor.
_GRAPH_PATH = object()

# Set in a Function subclass's own ``__dict__`` once it is checked to define
# forward and backward (a subclass of it is checked again).
_CHECKED = "_rustgrad_checked_complete"


def _check_complete(cls: type) -> None:
    if "forward" not in _defined_methods(cls) or "backward" not in _defined_methods(cls):
        raise ArgumentTypeError(
            f"{cls.__name__} must define both forward(ctx, ...) and backward(ctx, ...) as staticmethods"
        )
    setattr(cls, _CHECKED, True)


def _defined_methods(cls: type) -> set[str]:
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass is Function:
            break
        names.update(vars(klass))
    return names


def set_detect_anomaly(mode: bool) -> None:
    """With anomaly detection on, backward raises at the first node that produces NaN."""
    _rustgrad._set_detect_anomaly(bool(mode))


class detect_anomaly:
    """Context manager (and decorator) form of ``set_detect_anomaly(True)``."""

    def __init__(self, mode: bool = True) -> None:
        self._mode = mode
        self._previous: list[bool] = []

    def __enter__(self) -> None:
        self._previous.append(is_anomaly_enabled())
        set_detect_anomaly(self._mode)

    def __exit__(self, *exc: object) -> None:
        set_detect_anomaly(self._previous.pop())

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        return _decorate(func, lambda: detect_anomaly(self._mode))


class GradcheckError(GradientError):
    """Raised by ``gradcheck`` when analytical and numerical gradients disagree."""


def _as_output_tuple(out: Any) -> tuple[Tensor, ...]:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def gradcheck(
    fn: Callable[..., Any],
    inputs: Any,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
) -> bool:
    """Compares the gradients from backward with central finite differences.

    Use float64 inputs with ``requires_grad=True``. Every output element is
    checked against every input element, so keep the tensors small.
    """
    inputs = _as_output_tuple(inputs)
    diff_inputs = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    if not diff_inputs:
        raise GradientError("gradcheck: at least one input tensor must have requires_grad=True")
    for t in diff_inputs:
        if t.dtype.name != "float64":
            raise GradientError(
                f"gradcheck: input of dtype {t.dtype.name} is not float64; finite differences need "
                "float64 inputs to be reliable"
            )
    with no_grad():
        outputs = _as_output_tuple(fn(*inputs))
    for out_index, out in enumerate(outputs):
        if not isinstance(out, Tensor) or not out.dtype.is_floating_point:
            continue
        numerical = [_numerical_jacobian(fn, inputs, t, out_index, eps) for t in diff_inputs]
        analytical = _analytical_jacobian(fn, inputs, diff_inputs, out_index)
        for i, (num, ana) in enumerate(zip(numerical, analytical)):
            if not np.allclose(ana, num, atol=atol, rtol=rtol, equal_nan=True):
                worst = np.unravel_index(np.nanargmax(np.abs(ana - num)), ana.shape)
                message = (
                    f"Jacobian mismatch for output {out_index} with respect to input {i}: "
                    f"at (output element, input element) {tuple(int(k) for k in worst)} backward gave "
                    f"{ana[worst]:.6g} but finite differences gave {num[worst]:.6g}\n"
                    f"numerical:\n{num}\nanalytical:\n{ana}"
                )
                if raise_exception:
                    raise GradcheckError(message)
                return False
    return True


def _numerical_jacobian(fn: Callable[..., Any], inputs: Sequence[Any], target: Tensor,
                        out_index: int, eps: float) -> np.ndarray:
    """d out[out_index] / d target by central differences, shape (out.numel, target.numel)."""
    with no_grad():
        base = target.detach()
        flat = base.reshape(-1)
        columns = []
        for k in range(base.numel()):
            original = float(flat[k].item())
            flat[k] = original + eps
            plus = _eval(fn, inputs, out_index)
            flat[k] = original - eps
            minus = _eval(fn, inputs, out_index)
            flat[k] = original
            columns.append((plus - minus) / (2 * eps))
    size = _eval(fn, inputs, out_index).size
    if not columns:
        return np.zeros((size, 0))
    return np.stack(columns, axis=1).reshape(size, len(columns))


def _eval(fn: Callable[..., Any], inputs: Sequence[Any], out_index: int) -> np.ndarray:
    out = _as_output_tuple(fn(*inputs))[out_index]
    # A copy: the output may be a view of an input that the caller is about to perturb.
    return np.array(out.detach() if isinstance(out, Tensor) else out, dtype=np.float64, copy=True).reshape(-1)


def _analytical_jacobian(fn: Callable[..., Any], inputs: Sequence[Any],
                         diff_inputs: Sequence[Tensor], out_index: int) -> list[np.ndarray]:
    with enable_grad():
        out = _as_output_tuple(fn(*inputs))[out_index]
    rows: list[list[np.ndarray]] = [[] for _ in diff_inputs]
    for k in range(out.numel()):
        seed = np.zeros(out.numel())
        seed[k] = 1.0
        grad_output = _rustgrad._from_numpy(seed.reshape(tuple(out.shape)), False).to(out.dtype)
        if out.grad_fn is None and not out.requires_grad:
            grads: Sequence[Optional[Tensor]] = [None] * len(diff_inputs)
        else:
            grads = grad([out], list(diff_inputs), [grad_output], retain_graph=True,
                         allow_unused=True)
        for i, (g, t) in enumerate(zip(grads, diff_inputs)):
            row = np.zeros(t.numel()) if g is None else np.asarray(g, dtype=np.float64).reshape(-1)
            rows[i].append(row)
    return [
        np.stack(r) if r else np.zeros((0, t.numel())) for r, t in zip(rows, diff_inputs)
    ]



# lead (issue 16): torch.autograd.functional's names.
from rustgrad.autograd import functional as functional  # noqa: E402
