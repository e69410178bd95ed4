"""``rustgrad.nn``: modules, parameters, initialisation and utilities with ``torch.nn``'s names.
``rustgrad.nn.functional`` has the functional ops (``import rustgrad.nn.functional as F``)."""

from __future__ import annotations

from rustgrad.nn import functional, init, utils
from rustgrad.nn.modules import (
    GRU,
    LSTM,
    RNN,
    Bilinear,
    CrossEntropyLoss,
    Flatten,
    GRUCell,
    Identity,
    Linear,
    LogSoftmax,
    LSTMCell,
    Module,
    ModuleDict,
    ModuleList,
    MSELoss,
    NLLLoss,
    ParameterDict,
    ParameterList,
    ReLU,
    RNNBase,
    RNNCell,
    RNNCellBase,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
    Unflatten,
)
from rustgrad.nn.parameter import Parameter

__all__ = [
    "GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase",
    "Bilinear", "CrossEntropyLoss", "Flatten", "Identity", "Linear", "LogSoftmax", "MSELoss", "Module", "ModuleDict",
    "ModuleList", "NLLLoss", "Parameter", "ParameterDict", "ParameterList", "ReLU", "Sequential", "Sigmoid", "Softmax",
    "Tanh", "Unflatten", "functional", "init", "utils",
]
