"""`--db` pointing at the wrong thing: another program's database, a store that does not exist, a folder
that cannot be made. Nothing is opened, created or written that the user did not ask for."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import pytest
from faults.kit import counts, error_line, listing, run_calib, tree_hashes

from calib.store.store import Store

READERS = (
    ("score", "-e", "chars4"),
    ("report", "-e", "chars4", "--no-figures"),
    ("replay", "-e", "chars4"),
)


def _agent_sqlite(path: Path) -> Path:
    """A small SQLite database like the ones agents keep (OpenCode's opencode.db)."""
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE session (id TEXT PRIMARY KEY, title TEXT)")
    con.execute("INSERT INTO session VALUES ('ses_1', 'hello')")
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize("command", ["ingest", "fit", *(c[0] for c in READERS)])
def test_an_agents_sqlite_database_as_db_is_refused_untouched(
    command: str, sessions: Path, tmp_path: Path
) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    db = _agent_sqlite(agent / "opencode.db")
    before, entries = tree_hashes(db), listing(agent)
    args: tuple[str | Path, ...] = (command,)
    if command in ("ingest", "fit"):
        args += (sessions,)
    args += next((c[1:] for c in READERS if c[0] == command), ())
    result = run_calib(*args, "--db", db, "--out" if command in ("fit", "report") else "-q",
                       *((tmp_path / "out",) if command in ("fit", "report") else ()))  # fmt: skip
    assert result.returncode == 2
    assert error_line(result) == (
        f"Error: not a calib store: {db} is a SQLite database; point --db at a store made by "
        "`calib ingest`, or at a new path; the file was not touched"
    )
    assert tree_hashes(db) == before and listing(agent) == entries  # no -wal, no .ingest.json
    assert not (tmp_path / "out").exists()


def test_a_duckdb_database_of_another_program_is_refused_unchanged(sessions: Path, tmp_path: Path) -> None:
    other = tmp_path / "analytics.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE events (id INTEGER)")
    con.close()
    before = tree_hashes(other)
    result = run_calib("ingest", sessions, "--db", other)
    assert result.returncode == 2
    assert error_line(result) == (
        f"Error: not a calib store: {other} is a DuckDB database with other tables; point --db at a "
        "store made by `calib ingest`, or at a new path; the file was not changed"
    )
    assert tree_hashes(other) == before
    con = duckdb.connect(str(other), read_only=True)
    assert [r[0] for r in con.execute("SHOW TABLES").fetchall()] == ["events"]
    con.close()


def test_every_connection_has_extension_autoloading_off(store_copy: Path) -> None:
    for read_only in (False, True):
        with Store(store_copy, read_only=read_only) as store:
            settings = store.con.execute(
                "SELECT current_setting('autoinstall_known_extensions'), "
                "current_setting('autoload_known_extensions')"
            ).fetchone()
        assert settings == (False, False)


@pytest.mark.parametrize("command", READERS, ids=[c[0] for c in READERS])
def test_reading_commands_never_create_a_store(command: tuple[str, ...], tmp_path: Path) -> None:
    db = tmp_path / "typo" / "nested" / "typo.duckdb"
    result = run_calib(*command, "--db", db, cwd=tmp_path)
    assert result.returncode == 2
    assert error_line(result) == f"Error: no calib store at {db}; run `calib ingest` first"
    assert result.stdout == ""
    assert listing(tmp_path) == []  # no store, no parent folders, no report folder


def test_the_default_store_is_not_created_by_score(tmp_path: Path) -> None:
    result = run_calib("score", "-e", "chars4", cwd=tmp_path)
    assert result.returncode == 2
    assert error_line(result) == "Error: no calib store at calib.duckdb; run `calib ingest` first"
    assert listing(tmp_path) == []


def test_ingest_still_creates_the_store_and_its_folders(sessions: Path, tmp_path: Path) -> None:
    db = tmp_path / "new" / "deeper" / "calib.duckdb"
    result = run_calib("ingest", sessions, "--db", db, "-q")
    assert result.returncode == 0, result.stderr
    assert counts(db)["sessions"] == 4


def test_a_store_folder_that_cannot_be_made_is_one_line(sessions: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    db = blocker / "sub" / "calib.duckdb"
    result = run_calib("ingest", sessions, "--db", db)
    assert result.returncode == 1
    assert error_line(result) == (
        f"Error: cannot create the store's folder: Not a directory ({blocker / 'sub'}); "
        "pass --db with a path in a folder you can write"
    )
    assert blocker.read_text() == "not a folder"
