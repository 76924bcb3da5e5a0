"""Inputs the fault tests share: synthetic sessions in gemini-cli's JSONL layout, and a store of them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from faults.kit import run_calib

from calib.synth import write_sample


@pytest.fixture(scope="session")
def gemini_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four gemini-cli JSONL sessions, written once (copy them before changing anything)."""
    out = tmp_path_factory.mktemp("faults") / "gemini"
    write_sample("gemini-cli", out, layout="gemini-jsonl", sessions=4, seed=3)
    (out / "truth.json").unlink()
    return out


@pytest.fixture
def sessions(gemini_source: Path, tmp_path: Path) -> Path:
    """A private copy of the four sessions."""
    target = tmp_path / "data"
    shutil.copytree(gemini_source, target)
    return target


@pytest.fixture(scope="session")
def sample_store(gemini_source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the four sessions (copy it before writing to it)."""
    db = tmp_path_factory.mktemp("faults-store") / "calib.duckdb"
    result = run_calib("ingest", gemini_source, "--db", db, "-q")
    assert result.returncode == 0, result.stderr
    return db


@pytest.fixture
def store_copy(sample_store: Path, tmp_path: Path) -> Path:
    """A private copy of `sample_store`."""
    target = tmp_path / "store" / "calib.duckdb"
    target.parent.mkdir()
    shutil.copy(sample_store, target)
    return target
