"""User-defined differentiable functions, functional gradients, and checks.

``Function`` mirrors ``torch.autograd.Function``: ``forward(ctx, *args)`` and
``backward(ctx, *grads)`` are staticmethods and ``apply`` runs them. The Rust
reverse pass calls ``backward`` when it reaches the node.
"""

from __future__ import annotations

import functools
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
    "gradgradcheck",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "once_differentiable",
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
    # The tensors given to save_for_backward, and which of them forward returned
    # (their output index, set when the call is recorded): under create_graph,
    # saved_tensors gives each its history back.
    _saved_sources: tuple[Any, ...] = ()
    _saved_output_index: tuple[Optional[int], ...] = ()
    # This call's tape node, lent by the engine while a create_graph backward runs.
    _node: Optional[Node] = None
    _non_differentiable: tuple[Tensor, ...] = ()
    _released = False

    def save_for_backward(self, *tensors: Optional[Tensor]) -> None:
        """Keeps tensors for ``backward``; modifying them in place afterwards is detected."""
        # Detached aliases share the data and the version counter but not the
        # history, so saving an output does not make a reference cycle.
        eager = _rustgrad._save_tensors(tensors)
        self._saved_sources = tensors
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
        if self._node is not None and is_grad_enabled():
            return self._saved_with_history(self._node)
        return self._saved

    def _saved_with_history(self, node: Node) -> tuple[Optional[Tensor], ...]:
        """The saved tensors for a backward that is recorded (torch's SavedVariable unpack):
        a saved output as that output of ``node``, any other tensor (an input) as itself."""
        index = self._saved_output_index or (None,) * len(self._saved)
        unpacked: list[Optional[Tensor]] = []
        for alias, source, output_nr in zip(self._saved, self._saved_sources, index):
            if alias is None or not isinstance(alias, Tensor):
                unpacked.append(alias)
            elif output_nr is not None:
                unpacked.append(_rustgrad._with_history(alias, node, output_nr))
            else:
                unpacked.append(source)
        return tuple(unpacked)

    def mark_non_differentiable(self, *outputs: Tensor) -> None:
        """Outputs that get no gradient (e.g. integer-like indices or masks)."""
        self._non_differentiable = outputs

    def _release(self) -> None:
        self._saved = ()
        self._saved_sources = ()
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


_ONCE_DIFFERENTIABLE_ERROR = "trying to differentiate twice a function that was marked with @once_differentiable"


class _DelayedError(Function):
    """Passes tensors through; differentiating it raises (see ``once_differentiable``)."""

    @staticmethod
    def forward(ctx: FunctionCtx, *tensors: Tensor) -> Any:
        copies = tuple(t.clone() for t in tensors)
        return copies[0] if len(copies) == 1 else copies

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Tensor) -> Any:
        raise GradientError(_ONCE_DIFFERENTIABLE_ERROR)


def once_differentiable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorates a Function's ``backward`` that is not itself differentiable (torch's).

    ``backward`` runs without recording. When its gradients would be recorded
    (``create_graph=True``), they come out of a node whose own backward raises, so a
    second differentiation fails loudly instead of giving a wrong answer.
    """

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with no_grad():
            outputs = fn(ctx, *args)
        if not is_grad_enabled():
            return outputs
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        items = (outputs,) if single else outputs
        # Detached copies that require grad, so the error node is recorded.
        tensors = [t.detach().requires_grad_() for t in items if isinstance(t, Tensor) and t.dtype.is_floating_point]
        if not tensors:
            return outputs
        wrapped = _DelayedError.apply(*tensors)
        wrapped = iter((wrapped,) if len(tensors) == 1 else wrapped)
        result = tuple(
            next(wrapped) if isinstance(t, Tensor) and t.dtype.is_floating_point else t for t in items
        )
        return result[0] if single else result

    return wrapper


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
                gap = np.abs(ana - num)
                # Where only NaNs differ (NaN on one side), the first such element.
                at = np.nanargmax(gap) if not np.all(np.isnan(gap)) else np.argmax(np.isnan(ana) != np.isnan(num))
                worst = np.unravel_index(at, ana.shape)
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
        columns = []
        for k in range(base.numel()):
            # Written through an N-d index: a non-contiguous input has no flat view.
            at = tuple(int(i) for i in np.unravel_index(k, tuple(base.shape)))
            original = float(base[at].item())
            base[at] = original + eps
            plus = _eval(fn, inputs, out_index)
            base[at] = original - eps
            minus = _eval(fn, inputs, out_index)
            base[at] = original
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



def _random_grad_output(out: Tensor, rng: np.random.Generator, non_contiguous: bool) -> Tensor:
    """A grad_output for ``out``: uniform in [-1, 1), of its dtype, requiring grad."""
    shape = tuple(out.shape)
    if not non_contiguous:
        values = rng.uniform(-1.0, 1.0, shape)
        return _rustgrad._from_numpy(values, False).to(out.dtype).requires_grad_()
    # Every other element of a twice-as-long last dim: a strided leaf.
    values = rng.uniform(-1.0, 1.0, shape + (2,))
    wide = _rustgrad._from_numpy(values, False).to(out.dtype)
    return wide.select(-1, 0).requires_grad_()


def gradgradcheck(
    func: Callable[..., Any],
    inputs: Any,
    grad_outputs: Any = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
) -> bool:
    """Checks second derivatives: ``gradcheck`` of the function that maps
    ``(inputs, grad_outputs)`` to the gradients of ``func`` (taken with
    ``create_graph=True``), as ``torch.autograd.gradgradcheck``.

    Without ``grad_outputs``, random ones (fixed seed, float64 like the outputs)
    that require grad are used, so the check covers the derivatives in them too.
    """
    inputs = _as_output_tuple(inputs)
    diff_positions = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if grad_outputs is None:
        with enable_grad():
            outputs = _differentiable_outputs(func(*inputs))
        rng = np.random.default_rng(0)
        grad_outputs = tuple(_random_grad_output(o, rng, gen_non_contig_grad_outputs) for o in outputs)
    else:
        grad_outputs = _as_output_tuple(grad_outputs)
    n_grads = len(grad_outputs)

    def first_derivatives(*args: Any) -> tuple[Tensor, ...]:
        input_args, gos = args[: len(args) - n_grads], args[len(args) - n_grads :]
        with enable_grad():
            outputs = _differentiable_outputs(func(*input_args))
            if len(outputs) != n_grads:
                raise GradientError(
                    f"gradgradcheck: func has {len(outputs)} differentiable outputs but {n_grads} "
                    "grad_outputs were given; give one per output that requires grad"
                )
            diff_inputs = [input_args[i] for i in diff_positions]
            grads = grad(list(outputs), diff_inputs, list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception
    )


def _differentiable_outputs(out: Any) -> tuple[Tensor, ...]:
    """The outputs that carry a gradient: float tensors that require grad."""
    return tuple(o for o in _as_output_tuple(out) if isinstance(o, Tensor) and o.requires_grad)


# lead (issue 16): torch.autograd.functional's names.
from rustgrad.autograd import functional as functional  # noqa: E402
