"""What ingest is given as paths: a lone path is one path, and an empty path is a usage error before
anything is read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from faults.kit import counts, error_line, run_calib

import calib
from calib.core.errors import UsageError

EMPTY_PATH = (
    "Error: an empty path names no file or folder; name the sessions to ingest "
    "(an unset shell variable expands to an empty path)"
)


# -- a lone path, and what is not a path --------------------------------------------------------------


@pytest.mark.parametrize("kind", [str, Path, os.fsencode])
def test_a_lone_path_is_one_path_not_its_characters(
    kind: object, sessions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Relative, so that iterating the string's characters would look for "d", "a", "t" (and never "/").
    monkeypatch.chdir(sessions.parent)
    result = calib.ingest_sessions(kind(sessions.name), db=tmp_path / "calib.duckdb")  # type: ignore[operator]
    assert result.ok, result
    assert (result.files, result.sessions) == (4, 4)
    assert counts(tmp_path / "calib.duckdb")["sessions"] == 4


@pytest.mark.parametrize("given", [42, None, [42], ["ok", None], [b"ok", 3.5]])
def test_what_is_not_a_path_is_a_type_error_before_anything_is_read(given: object, tmp_path: Path) -> None:
    db = tmp_path / "calib.duckdb"
    with pytest.raises(TypeError, match="path"):
        calib.ingest_sessions(given, db=db)  # type: ignore[arg-type]
    assert not db.exists()


# -- an empty path --------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [[""], ["", "SESSIONS"], ["SESSIONS", ""]])
def test_an_empty_path_is_a_usage_error_before_anything_is_walked(
    args: list[str], sessions: Path, tmp_path: Path
) -> None:
    db = tmp_path / "calib.duckdb"
    given = [str(sessions) if a == "SESSIONS" else a for a in args]
    result = run_calib("ingest", *given, "--db", db, cwd=sessions)  # "" would be the sessions folder
    assert result.returncode == 2
    assert error_line(result) == EMPTY_PATH
    assert result.stdout == ""
    assert not db.exists()


def test_an_empty_path_is_refused_by_the_quick_path_too(sessions: Path, tmp_path: Path) -> None:
    db = tmp_path / "calib.duckdb"
    assert run_calib("ingest", ".", "--db", db, "-q", cwd=sessions).returncode == 0
    # Nothing changed since: the quick path would answer "" (the same folder) as unchanged.
    result = run_calib("ingest", "", "--db", db, "--json", cwd=sessions)
    assert result.returncode == 2
    assert error_line(result) == EMPTY_PATH
    assert result.stdout == ""


def test_an_empty_path_given_to_fit_or_the_api_is_a_usage_error(sessions: Path, tmp_path: Path) -> None:
    db = tmp_path / "calib.duckdb"
    result = run_calib("fit", "", "--db", db, "--out", tmp_path / "calibration.json", cwd=sessions)
    assert result.returncode == 2
    assert error_line(result) == EMPTY_PATH
    with pytest.raises(UsageError, match="an empty path"):
        calib.ingest_sessions([sessions, ""], db=db)
    with pytest.raises(UsageError, match="an empty path"):
        calib.ingest_sessions("", db=db)
    assert not db.exists()
