"""``RNN``, ``LSTM`` and ``GRU`` and their single-step cells, with torch's arguments, parameter
names, initialisation, shapes and messages.

A layer projects the inputs of all time steps in one product (``x W_ihᵀ + b``), so each step
only multiplies the hidden state by ``W_hhᵀ`` and applies the gate arithmetic.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, Optional, Union

import rustgrad
from rustgrad._creation import empty
from rustgrad._rustgrad import Tensor
from rustgrad.errors import ArgumentTypeError, InvalidArgumentError, ShapeError
from rustgrad.nn import init
from rustgrad.nn.modules import _rnn_steps as steps
from rustgrad.nn.modules.module import Module
from rustgrad.nn.parameter import Parameter

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
_NONLINEARITIES = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}


def _check_tensor(owner: str, name: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise ArgumentTypeError(f"{owner}: argument '{name}' must be a Tensor, not {type(value).__name__}")
    return value


def _check_sizes(input_size: Any, hidden_size: Any) -> None:
    for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ArgumentTypeError(f"{name} should be of type int, got: {type(value).__name__}")
    if hidden_size <= 0:
        raise InvalidArgumentError("hidden_size must be greater than zero")


def _dropout(x: Tensor, p: float) -> Tensor:
    """Inverted dropout: zeroes each element with probability ``p`` and scales the rest by 1/(1-p)."""
    if p >= 1:
        return x * 0.0
    keep = (rustgrad.rand_like(x) >= p).to(x.dtype)
    return x * keep * (1.0 / (1.0 - p))


class RNNBase(Module):
    """The shared machinery of ``RNN``, ``LSTM`` and ``GRU``: the parameters of every layer and
    direction, their initialisation, the input and state checks, and the run over layers."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        _check_sizes(input_size, hidden_size)
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):  # type: ignore[operator]
            raise InvalidArgumentError("dropout should be a number in range [0, 1] representing the probability of "
                                       "an element being zeroed")
        if isinstance(num_layers, bool) or not isinstance(num_layers, int):
            raise ArgumentTypeError(f"num_layers should be of type int, got: {type(num_layers).__name__}")
        if num_layers <= 0:
            raise InvalidArgumentError("num_layers must be greater than zero")
        if proj_size != 0:
            raise InvalidArgumentError(
                f"LSTM(proj_size={proj_size}): projections are not supported by rustgrad; use proj_size=0 and "
                "a Linear layer on the output instead")
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
                f"num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                stacklevel=2,
            )
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = 0
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names: list[str] = []
        for layer in range(num_layers):
            for direction in range(self._directions):
                layer_input = input_size if layer == 0 else hidden_size * self._directions
                suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(empty(shape, device=device, dtype=dtype)))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()

    @property
    def _directions(self) -> int:
        return 2 if self.bidirectional else 1

    def reset_parameters(self) -> None:
        """Draws every weight and bias from U(-1/√hidden_size, 1/√hidden_size), as torch."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """Does nothing: torch packs the weights for cuDNN here; on the CPU there is nothing to pack."""

    @property
    def _flat_weights(self) -> list[Parameter]:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters grouped per layer and direction, as torch's ``all_weights``."""
        per = 4 if self.bias else 2
        flat = self._flat_weights
        return [flat[i:i + per] for i in range(0, len(flat), per)]

    def _layer_weights(self, layer: int, direction: int) -> tuple[Tensor, Tensor, Optional[Tensor], Optional[Tensor]]:
        suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
        w_ih = getattr(self, "weight_ih" + suffix)
        w_hh = getattr(self, "weight_hh" + suffix)
        if not self.bias:
            return w_ih, w_hh, None, None
        return w_ih, w_hh, getattr(self, "bias_ih" + suffix), getattr(self, "bias_hh" + suffix)

    def _check_input_size(self, input: Tensor) -> None:
        weight = self.weight_ih_l0
        if input.dtype != weight.dtype:
            raise InvalidArgumentError(f"input must have the type {weight.dtype}, got type {input.dtype}")
        if input.shape[-1] != self.input_size:
            raise ShapeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {input.shape[-1]}")

    def _expected_hidden_size(self, time_major: Tensor) -> tuple[int, int, int]:
        return (self.num_layers * self._directions, time_major.shape[1], self.hidden_size)

    @staticmethod
    def _check_hidden_size(hx: Tensor, expected: tuple[int, ...], message: str = "Expected hidden size {}, got {}"
                           ) -> None:
        if tuple(hx.shape) != expected:
            raise ShapeError(message.format(expected, list(hx.shape)))

    def _run(self, x: Tensor, h0: Tensor, c0: Optional[Tensor]) -> tuple[Tensor, Tensor, Optional[Tensor]]:
        """Runs every layer over a time-major ``x`` (L, N, H_in) from the states ``h0`` (and ``c0``)
        of shape (D·num_layers, N, H); returns the last layer's output and the final states."""
        h_list = h0.unbind(0)
        c_list = c0.unbind(0) if c0 is not None else None
        h_n: list[Tensor] = []
        c_n: list[Tensor] = []
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0 and self.training:
                x = _dropout(x, self.dropout)
            outputs = []
            for direction in range(self._directions):
                index = layer * self._directions + direction
                c_init = c_list[index] if c_list is not None else None
                out, h, c = steps.run_direction(self.mode, x, self._layer_weights(layer, direction), h_list[index],
                                                c_init, reverse=direction == 1)
                outputs.append(out)
                h_n.append(h)
                if c is not None:
                    c_n.append(c)
            x = outputs[0] if len(outputs) == 1 else rustgrad.cat(outputs, 2)
        return x, rustgrad.stack(h_n, 0), rustgrad.stack(c_n, 0) if c0 is not None else None

    def _time_major(self, input: Tensor) -> Tensor:
        return input.transpose(0, 1) if self.batch_first else input

    def _batch_layout(self, output: Tensor) -> Tensor:
        return output.transpose(0, 1) if self.batch_first else output

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class _SingleStateRNN(RNNBase):
    """``RNN`` and ``GRU``: one hidden state; ``forward`` returns ``(output, h_n)``."""

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> tuple[Tensor, Tensor]:
        name = "GRU" if self.mode == "GRU" else "RNN"  # torch's names, also for subclasses
        _check_tensor(f"{name}.forward()", "input", input)
        if input.dim() not in (2, 3):
            kind = "tensor" if name == "RNN" else "input"
            raise InvalidArgumentError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D {kind}")
        batched = input.dim() == 3
        if hx is not None:
            _check_tensor(f"{name}.forward()", "hx", hx)
            want = 3 if batched else 2
            if hx.dim() != want:
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise ShapeError(f"For {kind} input, hx should also be {want}-D but got {hx.dim()}-D tensor")
        input = self._time_major(input) if batched else input.unsqueeze(1)
        self._check_input_size(input)
        expected = self._expected_hidden_size(input)
        if hx is None:
            hx = rustgrad.zeros(expected, dtype=input.dtype)
        else:
            self._check_hidden_size(hx, expected if batched else (expected[0], expected[2]))
            hx = hx if batched else hx.unsqueeze(1)
        output, h_n, _ = self._run(input, hx, None)
        if not batched:
            return output.squeeze(1), h_n.squeeze(1)
        return self._batch_layout(output), h_n


class RNN(_SingleStateRNN):
    """Elman RNN: h_t = act(x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh), with act ``tanh`` or ``relu``.

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False,
    dropout=0.0, bidirectional=False)``; ``forward(input, hx=None)`` returns ``(output, h_n)``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in _NONLINEARITIES:
            raise InvalidArgumentError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(_NONLINEARITIES[nonlinearity], input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype)

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s + f", nonlinearity={self.nonlinearity}" if self.nonlinearity != "tanh" else s


class GRU(_SingleStateRNN):
    """Gated recurrent unit, gates in torch's order (r, z, n):
    r = σ(W_ir x + b_ir + W_hr h + b_hr), z = σ(W_iz x + b_iz + W_hz h + b_hz),
    n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)), h' = (1 - z) ⊙ n + z ⊙ h.
    ``forward(input, hx=None)`` returns ``(output, h_n)``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)


class LSTM(RNNBase):
    """Long short-term memory, gates in torch's order (i, f, g, o):
    c' = σ(f) ⊙ c + σ(i) ⊙ tanh(g), h' = σ(o) ⊙ tanh(c').
    ``forward(input, hx=None)`` with ``hx = (h_0, c_0)`` returns ``(output, (h_n, c_n))``.
    ``proj_size`` other than 0 is refused."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Optional[tuple[Tensor, Tensor]] = None
                ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        _check_tensor("LSTM.forward()", "input", input)
        if input.dim() not in (2, 3):
            raise InvalidArgumentError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D input")
        batched = input.dim() == 3
        if hx is not None:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise ArgumentTypeError("LSTM.forward(): hx must be a tuple (h_0, c_0) of two Tensors")
            h0, c0 = (_check_tensor("LSTM.forward()", name, v) for name, v in zip(("h_0", "c_0"), hx))
            want = 3 if batched else 2
            if h0.dim() != want or c0.dim() != want:
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise ShapeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                 f"({h0.dim()}-D, {c0.dim()}-D) tensors")
        if not batched:
            input = input.unsqueeze(1)
        else:
            input = self._time_major(input)
        self._check_input_size(input)
        expected = self._expected_hidden_size(input)
        if hx is None:
            h0 = c0 = rustgrad.zeros(expected, dtype=input.dtype)
        else:
            shown = expected if batched else (expected[0], expected[2])
            self._check_hidden_size(h0, shown, "Expected hidden[0] size {}, got {}")
            self._check_hidden_size(c0, shown, "Expected hidden[1] size {}, got {}")
            if not batched:
                h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
        output, h_n, c_n = self._run(input, h0, c0)
        assert c_n is not None  # invariant: an LSTM run carries a cell state
        if not batched:
            return output.squeeze(1), (h_n.squeeze(1), c_n.squeeze(1))
        return self._batch_layout(output), (h_n, c_n)


class RNNCellBase(Module):
    """The shared parameters, initialisation and checks of the single-step cells."""

    _cell_name = "RNNCellBase"  # the name torch's messages give, also for subclasses

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        _check_sizes(input_size, hidden_size)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draws every weight and bias from U(-1/√hidden_size, 1/√hidden_size), as torch."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _weights(self) -> tuple[Tensor, Tensor, Optional[Tensor], Optional[Tensor]]:
        return self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh

    def _check_input(self, input: Any) -> tuple[Tensor, bool]:
        name = self._cell_name
        _check_tensor(f"{name}.forward()", "input", input)
        if input.dim() not in (1, 2):
            raise InvalidArgumentError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        batched = input.dim() == 2
        input = input if batched else input.unsqueeze(0)
        if input.shape[1] != self.input_size:
            raise ShapeError(f"input has inconsistent input_size: got {input.shape[1]} expected {self.input_size}")
        return input, batched

    def _check_hidden(self, input: Tensor, hx: Any, batched: bool, label: str, index: int) -> Tensor:
        name = self._cell_name
        if hx is None:
            return rustgrad.zeros((input.shape[0], self.hidden_size), dtype=input.dtype)
        _check_tensor(f"{name}.forward()", label, hx)
        if hx.dim() not in (1, 2):
            raise InvalidArgumentError(f"{name}: Expected {label} to be 1D or 2D, got {hx.dim()}D instead")
        if (hx.dim() == 2) != batched:
            raise ShapeError(f"{name}: input and {label} must both be batched (2-D) or unbatched (1-D), got "
                             f"{input.dim() if batched else 1}-D input and {hx.dim()}-D {label}")
        hx = hx if batched else hx.unsqueeze(0)
        if hx.shape[0] != input.shape[0]:
            raise ShapeError(f"Input batch size {input.shape[0]} doesn't match hidden{index} batch size "
                             f"{hx.shape[0]}")
        if hx.shape[1] != self.hidden_size:
            raise ShapeError(f"hidden{index} has inconsistent hidden_size: got {hx.shape[1]}, expected "
                             f"{self.hidden_size}")
        return hx

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s


class RNNCell(RNNCellBase):
    """One Elman step: h' = act(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh), act ``tanh`` or ``relu``.
    ``forward(input, hx=None)`` returns h'; input (N, H_in) or unbatched (H_in,)."""

    _cell_name = "RNNCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in _NONLINEARITIES:
            raise InvalidArgumentError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        input, batched = self._check_input(input)
        h = self._check_hidden(input, hx, batched, "hidden", 0)
        h = steps.cell_step(_NONLINEARITIES[self.nonlinearity], input, h, None, self._weights())[0]
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step, gates (i, f, g, o). ``forward(input, hx=None)`` with ``hx = (h, c)`` returns
    ``(h', c')``; input (N, H_in) or unbatched (H_in,)."""

    _cell_name = "LSTMCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Optional[Union[tuple[Tensor, Tensor], list[Tensor]]] = None
                ) -> tuple[Tensor, Tensor]:
        input, batched = self._check_input(input)
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise ArgumentTypeError("LSTMCell.forward(): hx must be a tuple (h, c) of two Tensors")
        h = self._check_hidden(input, None if hx is None else hx[0], batched, "hx[0]", 0)
        c = self._check_hidden(input, None if hx is None else hx[1], batched, "hx[1]", 1)
        h, c_new = steps.cell_step("LSTM", input, h, c, self._weights())
        assert c_new is not None  # invariant: an LSTM step returns a cell state
        return (h, c_new) if batched else (h.squeeze(0), c_new.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step, gates (r, z, n), with n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)).
    ``forward(input, hx=None)`` returns h'; input (N, H_in) or unbatched (H_in,)."""

    _cell_name = "GRUCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        input, batched = self._check_input(input)
        h = self._check_hidden(input, hx, batched, "hidden", 0)
        h = steps.cell_step("GRU", input, h, None, self._weights())[0]
        return h if batched else h.squeeze(0)
