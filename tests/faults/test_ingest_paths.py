"""What ingest is given as paths: a lone path is one path, an empty path is a usage error before anything
is read, and a file or folder name that is not UTF-8 loses nothing under it and is shown as \\xNN."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from faults.kit import counts, error_line, rows, run_calib, session_files, tree_hashes

import calib
from calib.core.errors import UsageError
from calib.store.store import Store
from calib.synth import layouts, write_sample

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


# -- names that are not UTF-8 ---------------------------------------------------------------------------


def _rename(path: Path, name: bytes) -> Path:
    """Rename `path` to the raw bytes `name` in its folder (Linux names are bytes)."""
    target = os.path.join(os.fsencode(path.parent), name)
    os.rename(os.fsencode(path), target)
    return Path(os.fsdecode(target))


def _shown(path: Path) -> str:
    """How calib shows a path: its bytes, with those that are not UTF-8 as \\xNN."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _run_bytes(*args: str | Path) -> subprocess.CompletedProcess[bytes]:
    """`calib ARGS` with stdout and stderr as bytes, under a locale whose stdout is strict UTF-8."""
    env = {**os.environ, "LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8:strict"}
    return subprocess.run(
        [sys.executable, "-m", "calib", *map(os.fsencode, args)],
        capture_output=True,
        timeout=180,
        env=env,
    )


def test_sessions_under_a_folder_and_file_named_in_latin1_all_import_once(
    sessions: Path, tmp_path: Path
) -> None:
    logs = session_files(sessions)
    project = _rename(logs[0].parent.parent, b"caf\xe9")  # a project folder, named in Latin-1
    renamed = _rename(session_files(sessions)[1], b"session-2026-03-02T00-00-b\xe4d.jsonl")  # a log
    logs = session_files(sessions)
    moved = [p for p in logs if project in p.parents]
    assert len(logs) == 4 and moved and renamed in logs
    source = tree_hashes(sessions)
    db = tmp_path / "calib.duckdb"

    result = _run_bytes("ingest", sessions, "--db", db, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout.decode("utf-8"))  # strict: the document is UTF-8
    assert (doc["sessions"], doc["errors"], doc["warnings"]) == (4, [], [])
    assert _shown(project / ".project_root") in doc["skipped"]
    assert result.stderr == b""
    with Store(db, read_only=True) as store:
        stored = set(store.query("SELECT source_path FROM sessions")["source_path"].to_list())
        files = set(store.query("SELECT path FROM files")["path"].to_list())
    assert {_shown(moved[0]), _shown(renamed)} <= stored
    assert {_shown(p.resolve()) for p in logs} == files
    assert any("caf\\xe9" in p for p in files) and any("b\\xe4d" in p for p in files)

    # Again, without the record of the last ingest (so every file is looked up in the store): nothing
    # is read or added twice.
    before = rows(db)
    os.unlink(f"{db}.ingest.json")
    again = _run_bytes("ingest", sessions, "--db", db, "--json")
    assert again.returncode == 0, again.stderr
    doc = json.loads(again.stdout.decode("utf-8"))
    assert (doc["read"], doc["unchanged"], doc["sessions"]) == (0, 4, 0)
    assert rows(db) == before
    assert tree_hashes(sessions) == source


def test_a_latin1_file_named_on_the_command_line_imports_and_its_warnings_show_its_name(
    sessions: Path, tmp_path: Path
) -> None:
    log = _rename(session_files(sessions)[2], b"session-2026-03-02T00-00-\xff\xfe.jsonl")
    lines = log.read_bytes().split(b"\n")
    lines[3] = b"{damaged"
    log.write_bytes(b"\n".join(lines))
    db = tmp_path / "calib.duckdb"
    result = _run_bytes("ingest", log, "--db", db)
    assert result.returncode == 0, result.stderr
    shown = _shown(log)
    assert "\\xff\\xfe.jsonl" in shown
    warning = result.stderr.decode("utf-8").splitlines()
    assert len(warning) == 1 and warning[0].startswith("Warning: this line is not valid JSON")
    assert warning[0].endswith(f"; left out, the rest of the session was imported ({shown}:4)")
    assert counts(db)["sessions"] == 1


def test_an_unreadable_latin1_path_is_named_readably(tmp_path: Path) -> None:
    missing = tmp_path / os.fsdecode(b"gon\xe9")
    result = _run_bytes("ingest", missing, "--db", tmp_path / "calib.duckdb")
    assert result.returncode == 1
    assert result.stderr.decode("utf-8").splitlines() == [
        f"Error: no such file or folder ({_shown(missing)}); check the path"
    ]


@pytest.fixture(scope="module")
def every_layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two sessions of every layout calib.synth writes, each under a folder named `caf\\xe9-LAYOUT`."""
    root = tmp_path_factory.mktemp("latin1")
    for tool in ("gemini-cli", "opencode", "dexto", "claude-code", "codex", "llxprt"):
        for layout in layouts(tool):
            out = Path(os.fsdecode(os.path.join(os.fsencode(root), b"caf\xe9-" + layout.encode())))
            write_sample(tool, out, layout=layout, sessions=2, seed=5)
            (out / "truth.json").unlink()
    return root


def test_every_layout_imports_under_a_latin1_folder(every_layout: Path, tmp_path: Path) -> None:
    # The same data under plain names, for the rows expected.
    plain = tmp_path / "plain"
    shutil.copytree(every_layout, plain, symlinks=True)
    for entry in list(plain.iterdir()):
        entry.rename(plain / os.fsencode(entry.name).replace(b"\xe9", b"e").decode())
    expected = tmp_path / "plain.duckdb"
    assert run_calib("ingest", plain, "--db", expected, "-q").returncode == 0
    db = tmp_path / "calib.duckdb"
    result = _run_bytes("ingest", every_layout, "--db", db, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout.decode("utf-8"))
    assert doc["errors"] == []
    assert counts(db) == counts(expected)
    assert rows(db) == rows(expected)  # the same sessions, calls and parts, whatever the folder's name
