"""Checks of ``tf.layers``' arguments (``static/layers.py``), with TF's messages."""

from __future__ import annotations

import numbers
from typing import Any, Callable, Optional, Union

from rustgrad.errors import ArgumentTypeError, InvalidArgumentError
from rustgrad.static._graph import Tensor

_ACTIVATIONS = ("relu", "relu6", "elu", "selu", "softplus", "softsign", "sigmoid", "tanh", "softmax", "swish",
                "leaky_relu")


def _tf() -> Any:
    from rustgrad import static

    return static


def _activation(activation: Any, layer: str) -> Optional[Callable[[Tensor], Tensor]]:
    """``activation`` as a callable: a callable, None, or a name such as ``'relu'`` (or ``'linear'``)."""
    if activation is None or callable(activation):
        return activation
    if isinstance(activation, str):
        if activation == "linear":
            return None
        if activation in _ACTIVATIONS:
            nn = _tf().nn
            return getattr(nn, activation, None) or getattr(_tf(), activation)
        raise InvalidArgumentError(f"{layer}: unknown activation {activation!r}; pass a callable such as "
                                   f"tf.nn.relu or one of {', '.join(_ACTIVATIONS)}, 'linear'")
    raise ArgumentTypeError(f"{layer}: activation must be a callable, a name or None, got {type(activation).__name__}")


def _tuple(value: Any, n: int, what: str, layer: str) -> tuple[int, ...]:
    """An int or a sequence of ``n`` ints as a tuple of ``n`` positive ints (TF's ``normalize_tuple``)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        values = (int(value),) * n
    else:
        try:
            values = tuple(value)
        except TypeError:
            raise ArgumentTypeError(f"{layer}: the `{what}` argument must be a tuple of {n} integers. Received: "
                                    f"{value!r}") from None
        if len(values) != n or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                                       for v in values):
            raise InvalidArgumentError(f"{layer}: the `{what}` argument must be a tuple of {n} integers. "
                                       f"Received: {value!r}")
        values = tuple(int(v) for v in values)
    if any(v <= 0 for v in values):
        raise InvalidArgumentError(f"{layer}: the `{what}` argument must be positive, got {value!r}")
    return values


def _padding(padding: Any, layer: str) -> str:
    value = padding.lower() if isinstance(padding, str) else padding
    if value not in ("valid", "same"):
        raise InvalidArgumentError(f'{layer}: the `padding` argument must be one of "valid", "same". '
                                   f"Received: {padding!r}")
    return value.upper()


def _data_format(data_format: Any, layer: str) -> str:
    value = data_format.lower() if isinstance(data_format, str) else data_format
    if value not in ("channels_last", "channels_first"):
        raise InvalidArgumentError(f'{layer}: the `data_format` argument must be one of "channels_first", '
                                   f'"channels_last". Received: {data_format!r}')
    return value


def _rate(rate: Any, layer: str) -> float:
    if isinstance(rate, bool) or not isinstance(rate, numbers.Real):
        raise ArgumentTypeError(f"{layer}: rate must be a float in [0, 1), got {type(rate).__name__}")
    if not 0.0 <= float(rate) < 1.0:
        raise InvalidArgumentError(f"{layer}: rate must be a float in the range [0, 1), got {float(rate):g}")
    return float(rate)


def _training_flag(training: Any, layer: str) -> Union[bool, Tensor]:
    """A Python bool, or a scalar bool graph tensor (a placeholder) chosen at run time."""
    if isinstance(training, Tensor):
        if training.dtype != _tf().bool:
            raise ArgumentTypeError(f"{layer}: training must be a Python bool or a bool tensor, got a "
                                    f"{training.dtype.name} tensor")
        return training
    if training is None or isinstance(training, (bool, numbers.Integral)) or type(training).__name__ == "bool_":
        return bool(training)
    raise ArgumentTypeError(f"{layer}: training must be a Python bool or a bool tensor, got "
                            f"{type(training).__name__}")
