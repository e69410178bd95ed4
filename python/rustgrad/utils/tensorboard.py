"""``rustgrad.utils.tensorboard``: torch's ``SummaryWriter`` for eager code, writing TensorBoard event files.

It shares one writer with ``rustgrad.static.summary`` (``rustgrad._tensorboard``): TensorBoard's own
protocol buffers and ``EventFileWriter`` from the optional ``tensorboard`` package
(``pip install 'rustgrad[tensorboard]'``). Importing this module does not need the package;
making a ``SummaryWriter`` does.
"""

from __future__ import annotations

from rustgrad.errors import RustgradError


class TensorBoardNotFoundError(RustgradError, ModuleNotFoundError):
    """Writing TensorBoard files without the optional ``tensorboard`` package installed."""


from rustgrad.utils._summary_writer import SummaryWriter  # noqa: E402 - it raises the error above

__all__ = ["SummaryWriter", "TensorBoardNotFoundError"]
