"""TF1's optimizer base class and its first three optimizers (see ``rustgrad.static.train``).

Each optimizer's ``minimize`` (or ``apply_gradients``) adds the update to the
graph and returns ONE operation; running it performs one training step.
Within one run every read of a variable sees its value from the start of the
run and assignments land when the run ends, so each update is written as one
expression of start-of-run values: the new slot value is computed once and both
stored in its slot and used for the variable's update.
"""

from __future__ import annotations

import abc
from typing import Any, Optional, Sequence, Union

import numpy as np

from rustgrad.errors import ArgumentTypeError, InvalidArgumentError
from rustgrad.static._gradients import gradients
from rustgrad.static._graph import Graph, Operation, Tensor, convert_to_tensor
from rustgrad.static._variables import Variable, trainable_variables

__all__ = ["AdamOptimizer", "GradientDescentOptimizer", "MomentumOptimizer", "Optimizer"]

GradsAndVars = Sequence[tuple[Optional[Tensor], Variable]]


class Optimizer(abc.ABC):
    """Base class of the TF1 optimizers: ``compute_gradients`` + ``apply_gradients`` = ``minimize``."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str) -> None:
        if not name:
            raise InvalidArgumentError(f"{type(self).__name__}: Must specify the optimizer name (name= is empty)")
        self._use_locking = use_locking
        self._name = name
        self._slots: dict[tuple[str, int], Variable] = {}
        self._non_slots: dict[tuple[str, int], Variable] = {}

    def get_name(self) -> str:
        return self._name

    # ----- the public TF1 methods -----

    def minimize(self, loss: Tensor, global_step: Optional[Variable] = None,
                 var_list: Optional[Sequence[Variable]] = None, gate_gradients: int = GATE_OP,
                 aggregation_method: Any = None, colocate_gradients_with_ops: bool = False,
                 name: Optional[str] = None, grad_loss: Any = None) -> Operation:
        """Adds the gradients of ``loss`` and the update of ``var_list`` (default: the trainable
        variables) to the graph; returns one operation that runs a training step."""
        grads_and_vars = self.compute_gradients(loss, var_list=var_list, grad_loss=grad_loss)
        usable = [v for g, v in grads_and_vars if g is not None]
        if not usable:
            raise InvalidArgumentError(
                f"minimize: No gradients provided for any variable, check your graph for ops that do not support "
                f"gradients, between variables {[v.name for _, v in grads_and_vars]} and loss {loss}."
            )
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss: Tensor, var_list: Optional[Sequence[Variable]] = None,
                          gate_gradients: int = GATE_OP, aggregation_method: Any = None,
                          colocate_gradients_with_ops: bool = False,
                          grad_loss: Any = None) -> list[tuple[Optional[Tensor], Variable]]:
        """A list of (gradient, variable) pairs; the gradient is None where ``loss`` does not depend
        on the variable."""
        if callable(loss) and not isinstance(loss, Tensor):
            raise ArgumentTypeError("compute_gradients: a callable loss is an eager-mode feature; "
                                    "pass a graph Tensor")
        if not isinstance(loss, Tensor):
            raise ArgumentTypeError(f"compute_gradients: loss must be a graph Tensor, got {type(loss).__name__}")
        if var_list is None:
            var_list = trainable_variables(loss.graph)
        var_list = list(var_list)
        if not var_list:
            raise InvalidArgumentError("compute_gradients: No variables to optimize. Create trainable variables "
                                       "before minimize, or pass var_list=")
        for v in var_list:
            if not isinstance(v, Variable):
                raise ArgumentTypeError(f"compute_gradients: var_list must hold Variables, got {v!r}")
            if not v.dtype.is_floating_point:
                raise InvalidArgumentError(
                    f"compute_gradients: Invalid type {v.dtype.name} for {v.name}, expected float32 or float64; "
                    "leave integer variables out of var_list (or make them trainable=False)"
                )
        grads = gradients(loss, var_list, grad_ys=grad_loss)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars: GradsAndVars, global_step: Optional[Variable] = None,
                        name: Optional[str] = None) -> Operation:
        """One operation that applies the gradients (pairs whose gradient is None are skipped) and,
        when given, adds 1 to ``global_step``."""
        pairs = [(g, v) for g, v in grads_and_vars]
        if not pairs:
            raise InvalidArgumentError("apply_gradients: No variables provided; pass (gradient, variable) pairs")
        for _, v in pairs:
            if not isinstance(v, Variable):
                raise ArgumentTypeError(f"apply_gradients: expected Variables, got {v!r}")
        pairs = [(g, v) for g, v in pairs if g is not None]
        if not pairs:
            raise InvalidArgumentError(f"apply_gradients: No gradients provided for any variable: "
                                       f"{[v.name for _, v in grads_and_vars]}.")
        graph = pairs[0][1].graph
        seen: set[int] = set()
        for _, v in pairs:
            graph._own(v)
            if id(v) in seen:
                raise InvalidArgumentError(
                    f"apply_gradients: Variable {v.name} appears more than once in grads_and_vars; "
                    "sum its gradients into one pair"
                )
            seen.add(id(v))
        updates: list[Tensor] = []
        self._prepare(graph, [v for _, v in pairs])
        for g, v in pairs:
            grad = convert_to_tensor(g, v.dtype, graph)
            updates.extend(self._apply_dense(grad, v))
        updates.extend(self._finish(graph))
        if global_step is not None:
            updates.append(global_step.assign_add(1))
        return Operation(graph, graph._core.group([u._id for u in updates], name or self._name))

    def get_slot(self, var: Variable, name: str) -> Optional[Variable]:
        return self._slots.get((name, id(var)))

    def get_slot_names(self) -> list[str]:
        return sorted({name for name, _ in self._slots})

    def variables(self) -> list[Variable]:
        """The optimizer's own variables: its slots and step counters."""
        return list(self._non_slots.values()) + list(self._slots.values())

    # ----- for subclasses -----

    def _prepare(self, graph: Graph, var_list: list[Variable]) -> None:  # noqa: B027 - optional hook
        """Creates variables shared by all updates (none by default)."""

    @abc.abstractmethod
    def _apply_dense(self, grad: Tensor, var: Variable) -> list[Tensor]:
        """The assign ops that update ``var`` (and its slots) from ``grad``."""

    def _finish(self, graph: Graph) -> list[Tensor]:
        return []

    def _zeros_slot(self, var: Variable, slot_name: str) -> Variable:
        return self._filled_slot(var, slot_name, 0.0, slot_name)

    def _filled_slot(self, var: Variable, slot_name: str, value: float, variable_name: str) -> Variable:
        """The slot ``slot_name`` of ``var`` (what ``get_slot`` takes): a non-trainable variable of
        ``var``'s shape and dtype, filled with ``value``, named ``<var>/<variable_name>`` (the graph
        adds ``_1``, ``_2`` when one optimizer makes several slots under the same name, as TF1's do)."""
        key = (slot_name, id(var))
        if key not in self._slots:
            name = f"{var.op.name}/{variable_name}"
            # A slot is named after its variable, whatever name scope the optimizer runs in (as TF1's).
            with var.graph.name_scope(None):
                filled = var.graph._constant(np.full(tuple(var.shape), value), var.dtype, f"{name}/Initializer")
                self._slots[key] = Variable(filled, trainable=False, name=name)
        return self._slots[key]

    def _non_slot(self, graph: Graph, name: str, value: float, dtype: Any) -> Variable:
        key = (name, id(graph))
        if key not in self._non_slots:
            initial = graph._constant(np.asarray(value), dtype, f"{name}/initial_value")
            self._non_slots[key] = Variable(initial, trainable=False, name=name)
        return self._non_slots[key]

    def _hyper(self, value: Any, var: Variable, name: str) -> Any:
        """A hyperparameter as a Python float, or as a graph tensor of ``var``'s dtype."""
        if isinstance(value, Tensor):
            return value if value.dtype == var.dtype else var.graph._op("cast", (var.dtype,), [value])
        if callable(value):
            value = value()
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ArgumentTypeError(f"{type(self).__name__}: {name} must be a number or a graph Tensor, got "
                                    f"{value!r}") from None


class GradientDescentOptimizer(Optimizer):
    """Plain gradient descent: ``var -= learning_rate * grad``."""

    def __init__(self, learning_rate: Union[float, Tensor], use_locking: bool = False,
                 name: str = "GradientDescent") -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _apply_dense(self, grad: Tensor, var: Variable) -> list[Tensor]:
        lr = self._hyper(self._learning_rate, var, "learning_rate")
        return [var.assign_sub(grad * lr, use_locking=self._use_locking)]


class MomentumOptimizer(Optimizer):
    """Momentum, as TF1's ApplyMomentum::

        accum = momentum * accum + grad
        var -= learning_rate * accum                                  (use_nesterov=False)
        var -= learning_rate * grad + learning_rate * momentum * accum (use_nesterov=True)

    (``learning_rate`` multiplies the accumulator, unlike ``torch.optim.SGD`` where the
    accumulator holds gradients only; both agree for a constant learning rate.)
    """

    def __init__(self, learning_rate: Union[float, Tensor], momentum: Union[float, Tensor],
                 use_locking: bool = False, name: str = "Momentum", use_nesterov: bool = False) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _prepare(self, graph: Graph, var_list: list[Variable]) -> None:
        for v in var_list:
            self._zeros_slot(v, self._name)

    def _apply_dense(self, grad: Tensor, var: Variable) -> list[Tensor]:
        lr = self._hyper(self._learning_rate, var, "learning_rate")
        momentum = self._hyper(self._momentum, var, "momentum")
        accum = self._zeros_slot(var, self._name)
        new_accum = accum * momentum + grad  # start-of-run accum: the update uses the new value below
        step = grad * lr + new_accum * momentum * lr if self._use_nesterov else new_accum * lr
        locking = self._use_locking
        return [accum.assign(new_accum, use_locking=locking), var.assign_sub(step, use_locking=locking)]


class AdamOptimizer(Optimizer):
    """Adam, as TF1's ApplyAdam (t counts the runs of the training op, from 1)::

        lr_t = learning_rate * sqrt(1 - beta2^t) / (1 - beta1^t)
        m = beta1 * m + (1 - beta1) * grad
        v = beta2 * v + (1 - beta2) * grad^2
        var -= lr_t * m / (sqrt(v) + epsilon)

    β₁ᵗ and β₂ᵗ are kept in the non-trainable variables ``beta1_power`` and ``beta2_power``
    (initialised to β₁ and β₂ and multiplied by them at the end of each step), as in TF1.
    """

    def __init__(self, learning_rate: Union[float, Tensor] = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, use_locking: bool = False, name: str = "Adam") -> None:
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon
        self._graph: Optional[Graph] = None
        self._scalars: dict[tuple[str, int, Any], list[Tensor]] = {}

    def _powers(self, graph: Graph, dtype: Any = None) -> tuple[Variable, Variable]:
        for value in (self._beta1, self._beta2):
            if isinstance(value, Tensor):
                raise ArgumentTypeError("AdamOptimizer: beta1 and beta2 must be Python numbers")
        return (self._non_slot(graph, "beta1_power", float(self._beta1), dtype),
                self._non_slot(graph, "beta2_power", float(self._beta2), dtype))

    def _prepare(self, graph: Graph, var_list: list[Variable]) -> None:
        # TF1 creates the powers with the dtype of the first variable (by name).
        first = min(var_list, key=lambda v: v.name)
        self._powers(graph, first.dtype)
        self._scalars = {}  # the hyperparameters' tensors are made anew for each apply_gradients
        for v in var_list:
            self._zeros_slot(v, self._name)
            self._zeros_slot(v, f"{self._name}_1")

    def _apply_dense(self, grad: Tensor, var: Variable) -> list[Tensor]:
        """One ``ApplyAdam`` op (TF1's ``training_ops.apply_adam``): the fused update of ``var`` and
        both its slots in one pass; its value is the variable's new value."""
        graph = var.graph
        beta1_power, beta2_power = self._powers(graph)
        if beta1_power.dtype != var.dtype:
            beta1_power = graph._op("cast", (var.dtype,), [beta1_power])  # type: ignore[assignment]
            beta2_power = graph._op("cast", (var.dtype,), [beta2_power])  # type: ignore[assignment]
        m = self._zeros_slot(var, self._name)
        v = self._zeros_slot(var, f"{self._name}_1")
        scalars = [beta1_power, beta2_power, *self._scalar_tensors(var)]
        node = graph._core.apply_adam(var._var, m._var, v._var, [t._id for t in scalars], grad._id, None,
                                      bool(self._use_locking))
        return [Tensor(graph, node)]

    def _scalar_tensors(self, var: Variable) -> list[Tensor]:
        """learning_rate, beta1, beta2 and epsilon as scalar tensors of ``var``'s dtype, made once per dtype."""
        key = ("scalars", id(var.graph), var.dtype)
        cached = self._scalars.get(key)
        if cached is None:
            values = [self._hyper(self._lr, var, "learning_rate"), float(self._beta1), float(self._beta2),
                      self._hyper(self._epsilon, var, "epsilon")]
            cached = [value if isinstance(value, Tensor) else convert_to_tensor(value, var.dtype, var.graph)
                      for value in values]
            self._scalars[key] = cached
        return cached

    def _finish(self, graph: Graph) -> list[Tensor]:
        beta1_power, beta2_power = self._powers(graph)
        return [beta1_power.assign(beta1_power * float(self._beta1), use_locking=self._use_locking),
                beta2_power.assign(beta2_power * float(self._beta2), use_locking=self._use_locking)]
