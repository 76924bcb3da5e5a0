"""Read-only access to the agents' SQLite databases (Dexto's and OpenCode's), shared by their importers."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import NamedTuple

SQLITE_MAGIC = b"SQLite format 3\x00"


class Column(NamedTuple):
    """One column of a table, as `PRAGMA table_info` describes it."""

    name: str
    required: bool  # NOT NULL
    has_default: bool


def is_sqlite_file(path: Path) -> bool:
    """True when the file starts with SQLite's magic header."""
    with path.open("rb") as fh:
        return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC


def connect_readonly(path: Path) -> sqlite3.Connection:
    """Open a SQLite database without ever writing, locking for write, or creating files beside it."""
    resolved = path.resolve()
    uri = resolved.as_uri() + "?mode=ro"
    live = Path(f"{resolved}-wal").exists() or Path(f"{resolved}-journal").exists()
    if not live:
        # Nobody has it open for writing: `immutable` stops SQLite creating -wal/-shm for a WAL database.
        uri += "&immutable=1"
    return sqlite3.connect(uri, uri=True, timeout=10.0, isolation_level=None, check_same_thread=False)


def quote_identifier(name: str) -> str:
    """A table or column name quoted for SQL."""
    return '"' + name.replace('"', '""') + '"'


def table_names(con: sqlite3.Connection) -> list[str]:
    """The database's tables."""
    return [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]


def table_columns(con: sqlite3.Connection) -> dict[str, list[Column]]:
    """Each table's columns, in table order."""
    out = {}
    for table in table_names(con):
        rows = con.execute(f"PRAGMA table_info({quote_identifier(table)})").fetchall()
        # PRAGMA table_info: (cid, name, type, notnull, dflt_value, pk)
        out[table] = [Column(r[1], bool(r[3]), r[4] is not None) for r in rows]
    return out


def column_names(con: sqlite3.Connection) -> dict[str, set[str]]:
    """Each table's column names."""
    return {table: {c.name for c in columns} for table, columns in table_columns(con).items()}
