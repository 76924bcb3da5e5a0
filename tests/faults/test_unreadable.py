"""Files and folders calib cannot read are errors with the OS's reason (exit 1), the rest imports;
folders reached through symbolic links are walked, each once, and a link loop ends."""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from faults.kit import counts, json_of, rows, run_calib, session_files, tree_hashes

_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def _as_ordinary_user() -> Callable[[], None] | None:
    """For root, who reads any file: the subprocess gives up the capabilities that allow it."""
    if os.geteuid() != 0:
        return None
    if not sys.platform.startswith("linux"):
        pytest.skip("running as root, and only Linux can drop the capability to read any file")

    def drop() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
            if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")

    return drop


def test_unreadable_file_and_folder_are_errors_and_the_rest_imports(sessions: Path, tmp_path: Path) -> None:
    logs = session_files(sessions)
    secret_file = logs[0]
    secret_dir = logs[1].parent.parent / "locked"
    secret_dir.mkdir()
    os.replace(logs[1], secret_dir / logs[1].name)
    source = tree_hashes(sessions)
    secret_file.chmod(0)
    secret_dir.chmod(0)
    db = tmp_path / "calib.duckdb"
    try:
        result = run_calib("ingest", sessions, "--db", db, "--json", preexec=_as_ordinary_user())
    finally:
        secret_file.chmod(0o644)
        secret_dir.chmod(0o755)
    assert result.returncode == 1, result.stderr
    hint = "check its permissions; other files were still imported"
    errors = json_of(result)["errors"]
    assert sorted(errors, key=lambda e: e["path"]) == sorted(
        [
            {"path": str(p), "line": None, "message": f"cannot read: Permission denied ({p}); {hint}"}
            for p in (secret_file, secret_dir)
        ],
        key=lambda e: e["path"],
    )
    assert sorted(result.stderr.splitlines()) == sorted(f"Error: {e['message']}" for e in errors)
    assert counts(db)["sessions"] == 2  # the two readable sessions
    assert tree_hashes(sessions) == source


def test_an_unreadable_file_named_explicitly_is_not_called_a_non_session(
    sessions: Path, tmp_path: Path
) -> None:
    log = session_files(sessions)[0]
    log.chmod(0)
    try:
        result = run_calib("ingest", log, "--db", tmp_path / "calib.duckdb", preexec=_as_ordinary_user())
    finally:
        log.chmod(0o644)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"Error: cannot read: Permission denied ({log}); check its permissions; other files were still imported"
    ]


def test_symlinked_project_folders_are_followed_once(sessions: Path, tmp_path: Path) -> None:
    # ~/.gemini/tmp/<project> kept elsewhere and linked in, twice, plus a link back up (a loop).
    elsewhere = tmp_path / "elsewhere"
    projects = sorted(p for p in (sessions / ".gemini" / "tmp").iterdir() if p.is_dir())
    moved = projects[0]
    os.replace(moved, elsewhere)
    moved.symlink_to(elsewhere, target_is_directory=True)
    (sessions / ".gemini" / "tmp" / "again").symlink_to(elsewhere, target_is_directory=True)
    (elsewhere / "loop").symlink_to(sessions, target_is_directory=True)
    db = tmp_path / "calib.duckdb"
    result = run_calib("ingest", sessions, "--db", db, "--json")
    assert result.returncode == 0, result.stderr
    reference = tmp_path / "plain"
    os.replace(elsewhere, reference)  # the same sessions without links, for the expected rows
    for link in (moved, sessions / ".gemini" / "tmp" / "again", reference / "loop"):
        link.unlink()
    os.replace(reference, moved)
    plain = tmp_path / "plain.duckdb"
    assert run_calib("ingest", sessions, "--db", plain, "-q").returncode == 0
    assert rows(db) == rows(plain) and counts(db)["sessions"] == 4
