"""The docs stay true: api.md is what gen_api.py generates, every ```python block of the
README and of docs/*.md runs as written, and the migration tables' supported / not supported
marks match the package."""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _child import child_env

import rustgrad
import rustgrad.compat.v1 as tf

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
# Code that is not meant to run (shell commands, output listings) goes in a bash or text fence.
FENCE_LANGUAGES = {"python", "bash", "text", "rust"}
ROW = re.compile(r"^\| `([\w.]+)` \| (supported|not supported|raises) \|", re.M)


def fenced_blocks(path: Path) -> list[tuple[str, int, str]]:
    """(info string, line of the opening fence, body) of every ``` block in ``path``."""
    blocks = []
    opening = None
    body: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.startswith("```"):
            if opening is not None:
                body.append(line)
            continue
        if opening is None:
            opening = (line[3:].strip(), number)
            body = []
        else:
            assert line.strip() == "```", f"{path.name}:{number}: a closing fence carries text: {line!r}"
            blocks.append((*opening, "\n".join(body) + "\n"))
            opening = None
    assert opening is None, f"{path.name}:{opening[1]}: fence is never closed"
    return blocks


def python_blocks() -> list:
    return [
        pytest.param(body, id=f"{path.relative_to(ROOT)}:{line}")
        for path in PAGES
        for info, line, body in fenced_blocks(path)
        if info == "python"
    ]


def test_every_fence_names_a_language_the_doc_tests_know():
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: ```{info}"
        for path in PAGES
        for info, line, _ in fenced_blocks(path)
        if info not in FENCE_LANGUAGES
    ]
    assert not wrong, (
        "use ```python for code that runs as written, ```bash or ```text for the rest:\n" + "\n".join(wrong)
    )


def test_the_readme_and_every_page_are_checked():
    checked = {param.id.split(":")[0] for param in python_blocks()}
    assert {"README.md", "docs/getting-started.md", "docs/static-graphs.md"} <= checked, checked


def test_api_md_is_up_to_date(tmp_path):
    out = tmp_path / "api.md"
    result = subprocess.run([sys.executable, str(DOCS / "gen_api.py"), str(out)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    expected = out.read_text(encoding="utf-8")
    assert (DOCS / "api.md").read_text(encoding="utf-8") == expected, (
        "docs/api.md is out of date: run `python tools/generate.py`"
    )


@pytest.mark.parametrize("source", python_blocks())
def test_doc_snippet_runs(source, tmp_path):
    """Runs in a fresh interpreter, in an empty folder (a snippet may write files)."""
    env = child_env()
    result = subprocess.run(
        [sys.executable, "-c", source], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
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


@pytest.mark.parametrize("extra", ["test", "plot", "examples"])
def test_getting_started_names_what_each_extra_installs(extra):
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    (requirements,) = re.findall(rf"^{extra} = \[(.*)\]$", pyproject, re.M)
    packages = re.findall(r'"([A-Za-z0-9_-]+)', requirements)
    page = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    (comment,) = re.findall(rf"^pip install '\.\[{extra}\]' +# (.*)$", page, re.M)
    missing = [name for name in packages if name.lower() not in comment.lower()]
    assert packages and not missing, (
        f"getting-started.md says `[{extra}]` installs {comment!r}; it also installs {missing}"
    )


def test_ci_runs_the_readme_test_command_then_the_suite_without_avx512():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (command,) = re.findall(r"^pip install '\.\[test\]' && .*$", readme, re.M)
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert command in lines, f".ci/run no longer runs the README's test command {command!r} verbatim"
    portable = "RUSTGRAD_DISABLE_AVX512=1 python -m pytest"
    assert portable in lines[lines.index(command) + 1 :], f".ci/run must run `{portable}` after the README's command"
    for run in (command, portable):
        following = lines[lines.index(run) + 1]
        assert following.startswith("check $?"), f"the exit status of {run!r} (5: no tests) is not checked"


def test_the_mit_license_is_in_the_repo_and_named_for_the_wheel():
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert license_text.startswith("MIT License\n\nCopyright (c) 2026 the rustgrad authors\n")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^license = "MIT"$', pyproject, re.M)
    assert re.search(r'^license-files = \[.*"LICENSE".*\]$', pyproject, re.M), (
        "maturin copies only the files named in license-files into the wheel's .dist-info/licenses/"
    )
