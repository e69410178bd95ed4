"""The fitted coefficients in the Rust source come from the scripts in tools/: each script's fit,
run here, gives the constants the kernels use (within a tolerance far below any edit of one,
since least squares may differ in its last bits between BLAS builds)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _constants(path: str, name: str, float_type: str) -> np.ndarray:
    """The `from_bits` values of the Rust array constant `name` in `path`, in order."""
    source = (ROOT / path).read_text()
    body = re.search(rf"const {name}: \[{float_type}; \d+\] = \[(.*?)\];", source, re.S)
    assert body, f"{name} not found in {path}"
    bits = [int(h, 16) for h in re.findall(rf"{float_type}::from_bits\(0x([0-9a-f]+)\)", body.group(1))]
    dtype, view = (np.uint32, np.float32) if float_type == "f32" else (np.uint64, np.float64)
    return np.array(bits, dtype=dtype).view(view)


def test_atan2_s_polynomial_is_the_fit_of_tools_fit_atan() -> None:
    fitted = _tool("fit_atan").fit()
    used = _constants("rust/kernels/vecmath/trig.rs", "ATAN_UNIT", "f32")
    assert len(used) == len(fitted) == 8
    np.testing.assert_allclose(used, fitted, rtol=1e-6)


def test_erfc_s_polynomial_is_the_fit_of_tools_fit_erfc() -> None:
    fitted, worst = _tool("fit_erfc").fit()
    used = _constants("rust/kernels/vecmath/special.rs", "ERFC_SCALED", "f64")
    assert len(used) == len(fitted) == 11
    np.testing.assert_allclose(used, fitted, rtol=1e-6)
    assert worst < 4e-9
