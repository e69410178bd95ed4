"""The ``nn`` module classes, one file per concern (as torch.nn.modules)."""

from __future__ import annotations

from rustgrad.nn.modules.activation import (
    ELU,
    GELU,
    SELU,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from rustgrad.nn.modules.container import ModuleDict, ModuleList, Sequential
from rustgrad.nn.modules.conv import Conv1d, Conv2d, ConvTranspose2d
from rustgrad.nn.modules.distance import CosineSimilarity
from rustgrad.nn.modules.dropout import Dropout
from rustgrad.nn.modules.flatten import Flatten, Unflatten
from rustgrad.nn.modules.linear import Bilinear, Identity, Linear
from rustgrad.nn.modules.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from rustgrad.nn.modules.module import Module
from rustgrad.nn.modules.normalization import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm
from rustgrad.nn.modules.parameter_containers import ParameterDict, ParameterList
from rustgrad.nn.modules.pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from rustgrad.nn.modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from rustgrad.nn.modules.sparse import Embedding

__all__ = [
    "GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase",
    "AdaptiveAvgPool2d", "AvgPool2d", "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "Bilinear",
    "Conv1d", "Conv2d", "ConvTranspose2d", "CosineSimilarity", "CrossEntropyLoss", "Dropout", "ELU",
    "Embedding", "Flatten", "GELU", "GroupNorm", "Hardtanh", "HuberLoss", "Identity", "KLDivLoss", "L1Loss",
    "LayerNorm", "LeakyReLU", "Linear", "LogSigmoid", "LogSoftmax", "MSELoss", "MaxPool2d", "Module",
    "ModuleDict", "ModuleList", "NLLLoss", "ParameterDict", "ParameterList", "ReLU", "ReLU6", "SELU",
    "Sequential", "SiLU", "Sigmoid", "SmoothL1Loss", "Softmax", "Softplus", "Tanh", "Unflatten",
]
