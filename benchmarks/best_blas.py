"""numpy on its best BLAS kernel: the environment without the variables that
slow OpenBLAS on this machine. The benchmark scripts use it for numpy's side
only; tests and CI never change these variables."""

from __future__ import annotations

import os
import sys

SLOWING_VARIABLES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def environment() -> dict[str, str]:
    """This process's environment without the slowing variables."""
    return {k: v for k, v in os.environ.items() if k not in SLOWING_VARIABLES}


def reexec_without_slowing_variables() -> None:
    """Restarts this script without the slowing variables, if any is set (call it before importing numpy)."""
    if any(v in os.environ for v in SLOWING_VARIABLES):
        os.execve(sys.executable, [sys.executable, *sys.argv], environment())
