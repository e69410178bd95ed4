"""Rules of the Rust source that the compiler does not check by itself.

Every unsafe operation has its own SAFETY line, and unsafe functions must spell
out their unsafe operations (`unsafe_op_in_unsafe_fn` is denied crate-wide).
Runs only in a source checkout (the wheel has no rust/ folder).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

RUST = Path(__file__).resolve().parent.parent / "rust"

pytestmark = pytest.mark.skipif(not RUST.is_dir(), reason="needs the source tree")


def rust_files() -> list[Path]:
    return sorted(RUST.rglob("*.rs"))


def test_unsafe_operations_inside_unsafe_functions_must_be_marked():
    lib = (RUST / "lib.rs").read_text()
    assert "#![deny(unsafe_op_in_unsafe_fn)]" in lib


def test_every_unsafe_block_has_a_safety_comment_just_above_it():
    missing = []
    for path in rust_files():
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if not re.search(r"unsafe\s*\{", line) or "SAFETY" in line:
                continue
            if not any("SAFETY" in above for above in lines[max(0, number - 3) : number]):
                missing.append(f"{path.relative_to(RUST.parent)}:{number + 1}: {line.strip()}")
    assert not missing, "unsafe blocks without a SAFETY comment in the 3 lines above:\n" + "\n".join(missing)


def test_panics_outside_tests_say_why_they_cannot_happen():
    unexplained = []
    # Test modules sit at the end of each file, or in their own `*_tests.rs` file.
    for path in (p for p in rust_files() if not p.name.endswith("_tests.rs")):
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if "#[cfg(test)]" in line:
                break
            if re.search(r"\.unwrap\(\)|\.expect\(|panic!\(|unreachable!\(", line) and "// invariant:" not in line:
                unexplained.append(f"{path.relative_to(RUST.parent)}:{number + 1}: {line.strip()}")
    assert not unexplained, "panic sites without an '// invariant:' comment:\n" + "\n".join(unexplained)
