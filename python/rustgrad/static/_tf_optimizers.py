"""TF1's ``RMSPropOptimizer`` and ``AdagradOptimizer``, with the formulas of its ApplyRMSProp,
ApplyCenteredRMSProp and ApplyAdagrad kernels (see ``_optimizers.py`` for the common machinery)."""

from __future__ import annotations

from typing import Union

from rustgrad.errors import InvalidArgumentError
from rustgrad.static._graph import Graph, Tensor
from rustgrad.static._optimizers import Optimizer
from rustgrad.static._variables import Variable

__all__ = ["AdagradOptimizer", "RMSPropOptimizer"]


class RMSPropOptimizer(Optimizer):
    """RMSProp, as TF1's ApplyRMSProp (``centered=False``) and ApplyCenteredRMSProp::

        ms  = ms + (grad^2 - ms) * (1 - decay)            # = decay * ms + (1 - decay) * grad^2
        mg  = mg + (grad - mg) * (1 - decay)              # centered only
        mom = momentum * mom + learning_rate * grad / sqrt(ms + epsilon)          # not centered
        mom = momentum * mom + learning_rate * grad / sqrt(ms - mg^2 + epsilon)   # centered
        var -= mom

    As in TF1, ``ms`` starts at ONE (not zero), ``epsilon`` is inside the square root, and the
    slots are ``get_slot(var, "rms")``, ``"momentum"`` and (centered) ``"mg"``, variables named
    ``<var>/RMSProp``, ``<var>/RMSProp_1`` (and ``<var>/RMSProp_2``) in that creation order:
    rms, mg, momentum.
    """

    def __init__(self, learning_rate: Union[float, Tensor], decay: Union[float, Tensor] = 0.9,
                 momentum: Union[float, Tensor] = 0.0, epsilon: Union[float, Tensor] = 1e-10,
                 use_locking: bool = False, centered: bool = False, name: str = "RMSProp") -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._decay = decay
        self._momentum = momentum
        self._epsilon = epsilon
        self._centered = bool(centered)

    def _prepare(self, graph: Graph, var_list: list[Variable]) -> None:
        for v in var_list:
            self._filled_slot(v, "rms", 1.0, self._name)
            if self._centered:
                self._filled_slot(v, "mg", 0.0, self._name)
            self._filled_slot(v, "momentum", 0.0, self._name)

    def _apply_dense(self, grad: Tensor, var: Variable) -> list[Tensor]:
        lr = self._hyper(self._learning_rate, var, "learning_rate")
        decay = self._hyper(self._decay, var, "decay")
        momentum = self._hyper(self._momentum, var, "momentum")
        epsilon = self._hyper(self._epsilon, var, "epsilon")
        ms = self.get_slot(var, "rms")
        mom = self.get_slot(var, "momentum")
        keep = 1.0 - decay
        new_ms = ms + (grad * grad - ms) * keep
        locking = self._use_locking
        updates = [ms.assign(new_ms, use_locking=locking)]
        if self._centered:
            mg = self.get_slot(var, "mg")
            new_mg = mg + (grad - mg) * keep
            denominator = new_ms - new_mg * new_mg + epsilon
            updates.append(mg.assign(new_mg, use_locking=locking))
        else:
            denominator = new_ms + epsilon
        new_mom = mom * momentum + grad * lr / denominator.sqrt()
        updates += [mom.assign(new_mom, use_locking=locking), var.assign_sub(new_mom, use_locking=locking)]
        return updates


class AdagradOptimizer(Optimizer):
    """Adagrad, as TF1's ApplyAdagrad::

        accumulator += grad^2
        var -= learning_rate * grad / sqrt(accumulator)

    The accumulator (``get_slot(var, "accumulator")``, the variable ``<var>/Adagrad``) starts at
    ``initial_accumulator_value``, which must be positive; there is no epsilon, as in TF1.
    """

    def __init__(self, learning_rate: Union[float, Tensor], initial_accumulator_value: float = 0.1,
                 use_locking: bool = False, name: str = "Adagrad") -> None:
        if not _positive_number(initial_accumulator_value):
            raise InvalidArgumentError(
                f"AdagradOptimizer: initial_accumulator_value must be positive: {initial_accumulator_value!r} "
                "(a Python number; TF1's default is 0.1)"
            )
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = float(initial_accumulator_value)

    def _prepare(self, graph: Graph, var_list: list[Variable]) -> None:
        for v in var_list:
            self._filled_slot(v, "accumulator", self._initial_accumulator_value, self._name)

    def _apply_dense(self, grad: Tensor, var: Variable) -> list[Tensor]:
        lr = self._hyper(self._learning_rate, var, "learning_rate")
        accumulator = self.get_slot(var, "accumulator")
        new_accumulator = accumulator + grad * grad
        locking = self._use_locking
        return [accumulator.assign(new_accumulator, use_locking=locking),
                var.assign_sub(grad * lr / new_accumulator.sqrt(), use_locking=locking)]


def _positive_number(value: object) -> bool:
    if isinstance(value, (Tensor, bool)):
        return False
    try:
        return float(value) > 0.0  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
