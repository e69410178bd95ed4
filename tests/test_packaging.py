"""Builds the wheel, installs it into a fresh virtualenv and runs the demo there.

Slow (a release build plus a venv), so it runs only when asked:

    RUSTGRAD_PACKAGING_TEST=1 python -m pytest tests/test_packaging.py

It needs maturin (``pip install maturin``) and network access to PyPI for numpy.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    os.environ.get("RUSTGRAD_PACKAGING_TEST") != "1",
    reason="slow: set RUSTGRAD_PACKAGING_TEST=1 to build and install the wheel",
)


def run(*cmd: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_wheel_installs_into_a_fresh_venv_and_runs_the_demo(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    run(sys.executable, "-m", "maturin", "build", "--release", "--out", str(wheels))
    (wheel,) = wheels.glob("rustgrad-*.whl")
    assert "abi3" in wheel.name, "one wheel should serve every supported CPython"
    assert "manylinux" in wheel.name or "musllinux" in wheel.name, (
        f"{wheel.name}: PyPI refuses a plain linux tag (see docs/getting-started.md)"
    )
    with zipfile.ZipFile(wheel) as archive:
        licenses = [name for name in archive.namelist() if ".dist-info/licenses/" in name]
        assert [name.rsplit("/", 1)[1] for name in licenses] == ["LICENSE"], archive.namelist()
        assert b"MIT License" in archive.read(licenses[0])
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    run(python, "-m", "pip", "install", "--quiet", str(wheel), cwd=tmp_path)
    out = run(python, "-m", "rustgrad", "--steps", "30", cwd=tmp_path)
    assert "eager mode" in out and "static mode" in out and "µs per step" in out
    version = run(python, "-c", "import rustgrad; print(rustgrad.__version__)", cwd=tmp_path).strip()
    assert version == run(sys.executable, "-c", "import rustgrad; print(rustgrad.__version__)").strip()
