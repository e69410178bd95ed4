"""The docs stay true: api.md is what gen_api.py generates, every ```python block runs,
and the migration tables' supported / not supported marks match the package."""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest

import rustgrad
import rustgrad.compat.v1 as tf

DOCS = Path(__file__).resolve().parent.parent / "docs"
RUNNABLE = ["getting-started.md", "eager.md", "migrating-from-pytorch.md", "migrating-from-tf1.md"]
FENCE = re.compile(r"^```python[ \t]*([^\n]*)\n(.*?)^```[ \t]*$", re.S | re.M)
ROW = re.compile(r"^\| `([\w.]+)` \| (supported|not supported|raises) \|", re.M)


def python_blocks() -> list:
    params = []
    for name in RUNNABLE:
        text = (DOCS / name).read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            marks = [pytest.mark.skip(reason="marked no-run")] if "no-run" in match.group(1).split() else []
            params.append(pytest.param(match.group(2), id=f"{name}:{line}", marks=marks))
    return params


def test_api_md_is_up_to_date(tmp_path):
    out = tmp_path / "api.md"
    result = subprocess.run([sys.executable, str(DOCS / "gen_api.py"), str(out)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    expected = out.read_text(encoding="utf-8")
    assert (DOCS / "api.md").read_text(encoding="utf-8") == expected, (
        "docs/api.md is out of date: run `python docs/gen_api.py`"
    )


@pytest.mark.parametrize("source", python_blocks())
def test_doc_snippet_runs(source, run_python):
    result = run_python(source, timeout=60)
    assert result.returncode == 0, f"snippet failed:\n{source}\nstderr:\n{result.stderr}"


def _exists(root: object, dotted: str) -> bool:
    try:
        functools.reduce(getattr, dotted.split("."), root)
    except AttributeError:
        return False
    return True


def _resolve(name: str) -> bool:
    head, _, rest = name.partition(".")
    roots = {"torch": rustgrad, "Tensor": rustgrad.Tensor, "tf": tf}
    return _exists(roots[head], rest)


@pytest.mark.parametrize("page", ["migrating-from-pytorch.md", "migrating-from-tf1.md"])
def test_migration_tables_match_the_package(page):
    rows = ROW.findall((DOCS / page).read_text(encoding="utf-8"))
    assert len(rows) > 50
    wrong = [f"{name}: marked {status}" for name, status in rows if _resolve(name) != (status != "not supported")]
    assert not wrong, f"{page} table disagrees with the package:\n" + "\n".join(wrong)
