"""The ``nn`` module classes, one file per concern (as torch.nn.modules)."""

from __future__ import annotations

from rustgrad.nn.modules.activation import LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from rustgrad.nn.modules.container import ModuleDict, ModuleList, Sequential
from rustgrad.nn.modules.flatten import Flatten, Unflatten
from rustgrad.nn.modules.linear import Bilinear, Identity, Linear
from rustgrad.nn.modules.loss import CrossEntropyLoss, MSELoss, NLLLoss
from rustgrad.nn.modules.module import Module
from rustgrad.nn.modules.parameter_containers import ParameterDict, ParameterList
from rustgrad.nn.modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase

__all__ = [
    "GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase",
    "Bilinear", "CrossEntropyLoss", "Flatten", "Identity", "Linear", "LogSoftmax", "MSELoss", "Module", "ModuleDict",
    "ModuleList", "NLLLoss", "ParameterDict", "ParameterList", "ReLU", "Sequential", "Sigmoid", "Softmax", "Tanh",
    "Unflatten",
]
