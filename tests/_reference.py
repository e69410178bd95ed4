"""The reference programs from ../shared/reference (or the byte-identical copies in tests/data),
with their import line swapped for rustgrad's and their loop shortened."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def shared_path(name: str) -> Path:
    return HERE.parent.parent / "shared" / "reference" / name


def fallback_path(name: str) -> Path:
    return HERE / "data" / name


def source(name: str) -> str:
    path = shared_path(name) if shared_path(name).is_file() else fallback_path(name)
    return path.read_text()


def patched(name: str, import_line: str, replacement: str, iterations: int) -> str:
    """The program with `import_line` replaced and `range(500)` cut to `iterations`."""
    lines = source(name).splitlines(keepends=True)
    imports = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == import_line]
    assert len(imports) == 1, f"expected exactly one `{import_line}` line in the reference"
    lines[imports[0]] = replacement + "\n"
    src = "".join(lines)
    assert src.count("range(500)") == 1
    return src.replace("range(500)", f"range({iterations})")
