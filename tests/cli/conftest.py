"""A small store built the way a user builds one: `calib sample`'s files, then `calib ingest`."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from calib.cli.app import app
from calib.synth import write_sample


@pytest.fixture(scope="module")
def sessions_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two synthetic gemini-cli sessions in the JSONL layout."""
    out = tmp_path_factory.mktemp("cli") / "gemini"
    write_sample("gemini-cli", out, layout="gemini-jsonl", sessions=2, seed=1)
    return out


@pytest.fixture(scope="module")
def small_store(sessions_dir: Path) -> Path:
    """A store holding `sessions_dir`."""
    db = sessions_dir.parent / "small.duckdb"
    result = CliRunner().invoke(app, ["ingest", str(sessions_dir), "--db", str(db), "-q"])
    assert result.exit_code == 0, result.output
    return db
