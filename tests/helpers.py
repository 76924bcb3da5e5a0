"""Helpers shared by tests (importable as `helpers` thanks to pytest's pythonpath setting)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"


def shared_fixture(*parts: str) -> Path:
    """A path under ../shared/fixtures; the test is skipped with a clear reason if it is absent."""
    path = SHARED_FIXTURES.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real fixtures not present: {path} (clone the project with ../shared beside it)")
    return path
