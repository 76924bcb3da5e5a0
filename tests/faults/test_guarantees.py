"""The README's Guarantees name the test that checks each promise: every name given there is a test in
`tests/faults/` (a promise whose test was renamed or removed would go on being read as checked)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

FAULTS = Path(__file__).parent
README = FAULTS.parents[1] / "README.md"
# `test_x.py::test_name`, or `::test_name` after one of those (the same file), or `test_x.py` alone
_REFERENCE = re.compile(r"`(test_[a-z0-9_]+\.py)?(?:::(test_[a-z0-9_]+))?`")


def _guarantees() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Guarantees\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _tests_in(file: Path) -> set[str]:
    tree = ast.parse(file.read_text(encoding="utf-8"))
    return {
        node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }


def _references() -> list[tuple[str, str | None]]:
    found: list[tuple[str, str | None]] = []
    current: str | None = None
    for match in _REFERENCE.finditer(_guarantees()):
        file, test = match.groups()
        if file is None and test is None:
            continue
        current = file or current
        assert current is not None, f"`::{test}` before any file is named"
        found.append((current, test))
    return found


def test_every_test_the_guarantees_name_exists() -> None:
    references = _references()
    assert len(references) > 50  # the section names its tests (a parsing slip would find none)
    missing = []
    for file, test in references:
        path = FAULTS / file
        if not path.is_file():
            missing.append(file)
        elif test is not None and test not in _tests_in(path):
            missing.append(f"{file}::{test}")
    assert missing == []


def test_every_fault_test_file_is_named_in_the_guarantees() -> None:
    named = {file for file, _ in _references()}
    files = {p.name for p in FAULTS.glob("test_*.py")} - {Path(__file__).name}
    assert sorted(files - named) == []
