"""``rustgrad.nn``: modules, parameters, initialisation and utilities with ``torch.nn``'s names.
``rustgrad.nn.functional`` has the functional ops (``import rustgrad.nn.functional as F``)."""

from __future__ import annotations

from rustgrad.nn import functional, init, utils
from rustgrad.nn.modules import *  # noqa: F403 - every module class
from rustgrad.nn.modules import __all__ as _module_names
from rustgrad.nn.parameter import Parameter

__all__ = [*_module_names, "Parameter", "functional", "init", "utils"]

# DistributedDataParallel (rustgrad/nn/parallel/).
from rustgrad.nn import parallel  # noqa: E402

__all__ += ["parallel"]
