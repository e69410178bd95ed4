"""``rustgrad.static.train`` (``tf.train``): TF1 optimizers and the checkpoint ``Saver``.

Each optimizer's ``minimize`` (or ``apply_gradients``) adds the update to the
graph and returns ONE operation; running it performs one training step::

    train_op = tf.train.AdamOptimizer(1e-3).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())   # after minimize: slots are variables too
        for batch in data:
            sess.run(train_op, feed_dict=...)

With ``use_locking=True`` every assign of the update locks its variable, so runs of
the training op from several threads apply their updates one at a time (see
``Variable.assign``). The updates follow TF1's formulas. Within one run every read of a variable sees
its value from the start of the run and assignments land when the run ends, so
each update is written as one expression of start-of-run values: the new slot
value (momentum accumulator, Adam moments) is computed once and both stored in
its slot and used for the variable's update. Slot variables (``<var>/Momentum``,
``<var>/Adam``, ``<var>/Adam_1``) and Adam's step counters ``beta1_power`` and
``beta2_power`` (β₁ᵗ and β₂ᵗ, advanced once per run of the training op) are
non-trainable Variables initialised to zeros (the powers to β₁ and β₂), so
``global_variables_initializer()`` created after ``minimize`` initialises them.
"""

from __future__ import annotations

import abc
import os
from typing import Any, Optional, Sequence, Union

import numpy as np

from rustgrad import _npz
from rustgrad.errors import (
    ArgumentTypeError,
    DataLossError,
    FailedPreconditionError,
    InvalidArgumentError,
    SerializationError,
)
from rustgrad.static._gradients import gradients
from rustgrad.static._graph import Graph, Operation, Tensor, convert_to_tensor, numpy_dtype
from rustgrad.static._variables import Variable, global_variables, trainable_variables

__all__ = [
    "AdamOptimizer",
    "GradientDescentOptimizer",
    "MomentumOptimizer",
    "Optimizer",
    "Saver",
]

GradsAndVars = Sequence[tuple[Optional[Tensor], Variable]]


class Optimizer(abc.ABC):
    """Base class of the TF1 optimizers: ``compute_gradients`` + ``apply_gradients`` = ``minimize``."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str) -> None:
        if not name:
            raise ValueError("Must specify the optimizer name")
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
            raise ValueError(
                f"No gradients provided for any variable, check your graph for ops that do not support "
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
            raise TypeError(f"compute_gradients: loss must be a graph Tensor, got {type(loss).__name__}")
        if var_list is None:
            var_list = trainable_variables(loss.graph)
        var_list = list(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError(f"compute_gradients: var_list must hold Variables, got {v!r}")
            if not v.dtype.is_floating_point:
                raise ValueError(f"Invalid type {v.dtype.name} for {v.name}, expected float32 or float64")
        grads = gradients(loss, var_list, grad_ys=grad_loss)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars: GradsAndVars, global_step: Optional[Variable] = None,
                        name: Optional[str] = None) -> Operation:
        """One operation that applies the gradients (pairs whose gradient is None are skipped) and,
        when given, adds 1 to ``global_step``."""
        pairs = [(g, v) for g, v in grads_and_vars]
        if not pairs:
            raise ValueError("No variables provided.")
        for _, v in pairs:
            if not isinstance(v, Variable):
                raise TypeError(f"apply_gradients: expected Variables, got {v!r}")
        pairs = [(g, v) for g, v in pairs if g is not None]
        if not pairs:
            raise ValueError(f"No gradients provided for any variable: {[v.name for _, v in grads_and_vars]}.")
        graph = pairs[0][1].graph
        seen: set[int] = set()
        for _, v in pairs:
            graph._own(v)
            if id(v) in seen:
                raise ValueError(f"Variable {v.name} appears more than once in grads_and_vars")
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
        key = (slot_name, id(var))
        if key not in self._slots:
            # A slot is named after its variable, whatever name scope the optimizer runs in (as TF1's).
            with var.graph.name_scope(None):
                zeros = var.graph._constant(np.zeros(tuple(var.shape)), var.dtype, f"{var.op.name}/{slot_name}/zeros")
                self._slots[key] = Variable(zeros, trainable=False, name=f"{var.op.name}/{slot_name}")
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
            raise TypeError(f"{type(self).__name__}: {name} must be a number or a graph Tensor, got "
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

    def _powers(self, graph: Graph, dtype: Any = None) -> tuple[Variable, Variable]:
        for value in (self._beta1, self._beta2):
            if isinstance(value, Tensor):
                raise TypeError("AdamOptimizer: beta1 and beta2 must be Python numbers")
        return (self._non_slot(graph, "beta1_power", float(self._beta1), dtype),
                self._non_slot(graph, "beta2_power", float(self._beta2), dtype))

    def _prepare(self, graph: Graph, var_list: list[Variable]) -> None:
        # TF1 creates the powers with the dtype of the first variable (by name).
        first = min(var_list, key=lambda v: v.name)
        self._powers(graph, first.dtype)
        for v in var_list:
            self._zeros_slot(v, self._name)
            self._zeros_slot(v, f"{self._name}_1")

    def _apply_dense(self, grad: Tensor, var: Variable) -> list[Tensor]:
        beta1_power, beta2_power = self._powers(var.graph)
        if beta1_power.dtype != var.dtype:
            beta1_power = var.graph._op("cast", (var.dtype,), [beta1_power])  # type: ignore[assignment]
            beta2_power = var.graph._op("cast", (var.dtype,), [beta2_power])  # type: ignore[assignment]
        lr = self._hyper(self._lr, var, "learning_rate")
        beta1, beta2 = float(self._beta1), float(self._beta2)
        epsilon = self._hyper(self._epsilon, var, "epsilon")
        m = self._zeros_slot(var, self._name)
        v = self._zeros_slot(var, f"{self._name}_1")
        lr_t = (1.0 - beta2_power).sqrt() * lr / (1.0 - beta1_power)
        new_m = m * beta1 + grad * (1.0 - beta1)
        new_v = v * beta2 + grad * grad * (1.0 - beta2)
        step = lr_t * new_m / (new_v.sqrt() + epsilon)
        locking = self._use_locking
        return [m.assign(new_m, use_locking=locking), v.assign(new_v, use_locking=locking),
                var.assign_sub(step, use_locking=locking)]

    def _finish(self, graph: Graph) -> list[Tensor]:
        beta1_power, beta2_power = self._powers(graph)
        return [beta1_power.assign(beta1_power * float(self._beta1), use_locking=self._use_locking),
                beta2_power.assign(beta2_power * float(self._beta2), use_locking=self._use_locking)]


class Saver:
    """Saves and restores variables' values, per Session, in numpy's open ``.npz`` format
    (one array per variable, keyed by the variable's name, e.g. ``"Variable"``, ``"w/Adam"``).

    ``var_list`` is a list of variables or a dict of name -> variable; by default, every global
    variable that exists when the Saver is made (so make it after ``minimize`` to include slots).
    """

    def __init__(self, var_list: Union[Sequence[Variable], dict[str, Variable], None] = None,
                 reshape: bool = False, sharded: bool = False, max_to_keep: int = 5,
                 keep_checkpoint_every_n_hours: float = 10000.0, name: Optional[str] = None,
                 restore_sequentially: bool = False, saver_def: Any = None, builder: Any = None,
                 defer_build: bool = False, allow_empty: bool = False, write_version: int = 2,
                 pad_step_number: bool = False, save_relative_paths: bool = False,
                 filename: Optional[str] = None) -> None:
        if var_list is None:
            var_list = global_variables()
        if isinstance(var_list, dict):
            named = dict(var_list)
        else:
            named = {}
            for v in var_list:
                if not isinstance(v, Variable):
                    raise TypeError(f"Saver: var_list must hold Variables, got {v!r}")
                key = v.op.name
                if key in named and named[key] is not v:
                    raise ValueError(f"At least two variables have the same name: {key}")
                named[key] = v
        for key, v in named.items():
            if not isinstance(v, Variable):
                raise TypeError(f"Saver: the value for {key!r} is not a Variable: {v!r}")
        if not named and not allow_empty:
            raise ValueError("No variables to save")
        self._vars = named
        self._filename = filename

    def save(self, sess: Any, save_path: Union[str, os.PathLike], global_step: Any = None,
             latest_filename: Optional[str] = None, meta_graph_suffix: str = "meta",
             write_meta_graph: bool = True, write_state: bool = True, strip_default_attrs: bool = False,
             save_debug_info: bool = False) -> str:
        """Writes the variables' values in ``sess`` to ``save_path`` (``save_path-<global_step>`` when
        a step is given) and returns the path written. The file is written through a temporary file
        renamed over it at the end, so a failed save leaves no partial file."""
        path = os.fspath(save_path)
        if global_step is not None:
            step = sess.run(global_step) if isinstance(global_step, Tensor) else global_step
            path = f"{path}-{int(step)}"
        parent = _npz.missing_parent(path)
        if parent is not None:
            raise InvalidArgumentError(f"Parent directory of {path} doesn't exist, can't save.")
        arrays = []
        for key, v in self._vars.items():
            self._check_session(sess, v)
            value = sess._core.variable_value(v._var)
            if value is None:
                raise FailedPreconditionError(
                    f"Saver.save: variable {key} is uninitialized in this session; run its initializer "
                    "(sess.run(global_variables_initializer())) before saving"
                )
            if not _npz.zip_name_ok(f"{key}.npy"):
                raise InvalidArgumentError(f"Saver.save: the name {key!r} cannot be stored in an .npz checkpoint")
            arrays.append((f"{key}.npy", np.asarray(value)))
        _npz.write_npz(path, arrays, "Saver.save", SerializationError)
        return path

    def restore(self, sess: Any, save_path: Union[str, os.PathLike]) -> None:
        """Sets the variables in ``sess`` to the values saved at ``save_path``.

        A missing path raises ``InvalidArgumentError``; a corrupt or truncated checkpoint raises
        ``DataLossError``, and then no variable changes.
        """
        path = os.fspath(save_path) if save_path is not None else None
        if path is None or not os.path.exists(path):
            raise InvalidArgumentError(f"The passed save_path is not a valid checkpoint: {path}")
        with _npz.NpzReader(path, "Saver.restore", DataLossError) as archive:
            values = {}
            for key, v in self._vars.items():
                self._check_session(sess, v)
                if f"{key}.npy" not in archive.names:
                    raise InvalidArgumentError(
                        f"Key {key} not found in checkpoint {path} (it holds: {sorted(archive.keys)})"
                    )
                value = archive.read_array(f"{key}.npy", f"variable {key}")
                if tuple(value.shape) != tuple(v.shape):
                    raise InvalidArgumentError(
                        f"Saver.restore: checkpoint value for {key} has shape {value.shape}, but the variable "
                        f"has shape {tuple(v.shape)}"
                    )
                values[key] = np.asarray(value, dtype=numpy_dtype(v.dtype), order="C")
        for key, v in self._vars.items():
            sess._core.set_variable_value(v._var, values[key])

    @staticmethod
    def _check_session(sess: Any, v: Variable) -> None:
        if getattr(sess, "graph", None) is not v.graph:
            raise InvalidArgumentError(f"Saver: variable {v.name} is not in the session's graph")

