"""Typing and packaging: the stubs of the compiled core match it, the public API is typed well
enough for ``mypy --strict`` user code (the examples), the examples run, and the version has
one source (Cargo.toml).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import rustgrad

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
EXAMPLE_SCRIPTS = sorted(EXAMPLES.glob("*.py"))
# Entries for genuine stubtest false positives only, each with a comment saying why.
STUBTEST_ALLOWLIST = ROOT / "tests" / "stubtest_allowlist.txt"
PACKAGE_DIR = Path(rustgrad.__file__).resolve().parent


def _env() -> dict[str, str]:
    """The environment for child processes: they import the same rustgrad as this session."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_DIR.parent), env.get("PYTHONPATH")) if p)
    return env


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def mypy() -> None:
    pytest.importorskip("mypy", reason="mypy is needed for the typing tests (pip install '.[test]')")


def test_stub_and_marker_ship_with_the_package() -> None:
    assert (PACKAGE_DIR / "_rustgrad.pyi").is_file()
    assert (PACKAGE_DIR / "py.typed").is_file()


@pytest.mark.usefixtures("mypy")
def test_stubtest_compiled_module() -> None:
    args = [sys.executable, "-m", "mypy.stubtest", "rustgrad._rustgrad"]
    if STUBTEST_ALLOWLIST.exists():
        args += ["--allowlist", str(STUBTEST_ALLOWLIST)]
    result = _run(args, timeout=300)
    assert result.returncode == 0, f"stubtest found differences:\n{result.stdout}\n{result.stderr}"


@pytest.mark.usefixtures("mypy")
def test_examples_pass_mypy_strict() -> None:
    assert EXAMPLE_SCRIPTS, "no example scripts found"
    result = _run([sys.executable, "-m", "mypy", "--strict", "examples"], timeout=300)
    assert result.returncode == 0, f"mypy --strict examples/ failed:\n{result.stdout}\n{result.stderr}"


@pytest.mark.parametrize("script", EXAMPLE_SCRIPTS, ids=lambda p: p.name)
def test_example_runs(script: Path) -> None:
    result = _run([sys.executable, str(script)], timeout=120)
    assert result.returncode == 0, f"{script.name} failed:\n{result.stdout}\n{result.stderr}"
    assert result.stdout.strip(), f"{script.name} printed nothing"


def _cargo_version() -> str:
    text = (ROOT / "Cargo.toml").read_text(encoding="utf-8")
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11: the [package] table's version line
        package = re.search(r"^\[package\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
        assert package is not None, "Cargo.toml has no [package] table"
        match = re.search(r'^version\s*=\s*"([^"]+)"', package.group(1), re.M)
        assert match is not None, "Cargo.toml [package] has no version"
        return match.group(1)
    version = tomllib.loads(text)["package"]["version"]
    assert isinstance(version, str)
    return version


def test_version_comes_from_cargo_toml() -> None:
    assert rustgrad.__version__ == _cargo_version()
    assert rustgrad.__version__ == rustgrad._rustgrad.__version__


def test_pyproject_version_is_dynamic() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    project = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    assert project is not None
    assert re.search(r'^dynamic\s*=\s*\[[^\]]*"version"', project.group(1), re.M)
    assert not re.search(r"^version\s*=", project.group(1), re.M), "version must come from Cargo.toml only"
