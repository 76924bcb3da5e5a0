"""The DuckDB store: schema through numbered migrations, writes of parsed sessions, polars reads."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from calib.errors import StoreError
from calib.records import AgentEstimate, Call, ParsedSession, Part, Record, Session

if TYPE_CHECKING:
    import duckdb
    import polars as pl
    import pyarrow as pa

DEFAULT_DB = "calib.duckdb"
_MIGRATION_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")


def default_db_path() -> Path:
    """The store path: `$CALIB_DB` if set, else `./calib.duckdb`."""
    return Path(os.environ.get("CALIB_DB") or DEFAULT_DB)


def migrations() -> list[tuple[int, str, str]]:
    """The numbered migrations shipped in `calib/migrations`, as (version, name, sql), in order."""
    found = []
    for entry in resources.files("calib.migrations").iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise StoreError("two migrations share a number", hint="renumber the files in calib/migrations")
    return found


@dataclass(slots=True)
class WriteCounts:
    """Rows a write added: keys that were not in the store before it."""

    sessions: int = 0
    calls: int = 0
    parts: int = 0
    estimates: int = 0

    def __iadd__(self, other: WriteCounts) -> WriteCounts:
        self.sessions += other.sessions
        self.calls += other.calls
        self.parts += other.parts
        self.estimates += other.estimates
        return self


@dataclass(slots=True)
class FileState:
    """What the store remembers about a source file from the last ingest."""

    path: str
    importer: str
    size: int
    mtime_ns: int
    fingerprint: str
    session_uids: list[str]
    read_offset: int | None


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


# Columns of each table in record order; JSON columns are serialised on the way in.
_SESSION_COLS = [f.name for f in fields(Session)]
_CALL_COLS = [f.name for f in fields(Call)]
_PART_COLS = [f.name for f in fields(Part)]
_ESTIMATE_COLS = [f.name for f in fields(AgentEstimate)]
_RENAME = {
    "sessions": {"uid": "session_uid"},
    "calls": {"uid": "call_uid"},
    "parts": {"uid": "part_uid"},
    "agent_estimates": {},
}
_JSON_COLS = {"meta", "usage_raw"}


def _arrow(records: Sequence[Any], cols: list[str], table: str) -> pa.Table:
    import pyarrow as pa

    rename = _RENAME[table]
    data: dict[str, list[Any]] = {}
    for col in cols:
        values = [getattr(r, col) for r in records]
        if col in _JSON_COLS:
            values = [_json(v) for v in values]
        data[rename.get(col, col)] = values
    return pa.table(data)


class Store:
    """One DuckDB file holding sessions, calls and parts; the object notebooks and the CLI share."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, read_only: bool = False):
        import duckdb

        self.path = Path(path) if path is not None else default_db_path()
        self.read_only = read_only
        if read_only and not self.path.exists():
            raise StoreError(
                "no store yet", path=str(self.path), hint="run `calib ingest` first or pass --db PATH"
            )
        if not read_only and self.path.parent and not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.con: duckdb.DuckDBPyConnection = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.IOException as exc:
            msg = str(exc)
            if "lock" in msg.lower():
                holder = re.search(r"PID (\d+)", msg)
                who = f" by process {holder.group(1)}" if holder else " by another process"
                raise StoreError(
                    f"the store is locked{who}",
                    path=str(self.path),
                    hint="close the other calib or DuckDB session, or use --db to pick another store",
                ) from exc
            raise StoreError(f"cannot open the store: {msg.splitlines()[0]}", path=str(self.path)) from exc
        except duckdb.Error as exc:
            raise StoreError(
                f"not a calib store: {str(exc).splitlines()[0]}",
                path=str(self.path),
                hint="point --db at a DuckDB file made by calib, or at a new path",
            ) from exc
        if not read_only:
            self.migrate()
        else:
            self._check_version()

    # -- lifecycle -----------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection."""
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Store {self.path}>"

    # -- schema --------------------------------------------------------------------------------------

    def applied_migrations(self) -> list[int]:
        """Versions of the migrations applied to this store."""
        exists = self.con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_migrations'"
        ).fetchone()
        if not exists or not exists[0]:
            return []
        return [
            row[0]
            for row in self.con.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
        ]

    def _check_version(self) -> None:
        applied = self.applied_migrations()
        known = {v for v, _, _ in migrations()}
        newer = [v for v in applied if v not in known]
        if newer:
            raise StoreError(
                f"the store was written by a newer calib (migration {max(newer)})",
                path=str(self.path),
                hint="upgrade calib or use another --db",
            )

    def migrate(self) -> list[int]:
        """Apply the migrations this store lacks, each in its own transaction; returns the new versions."""
        self.con.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
        )
        self._check_version()
        done = set(self.applied_migrations())
        applied = []
        for version, name, sql in migrations():
            if version in done:
                continue
            self.con.execute("BEGIN TRANSACTION")
            try:
                self.con.execute(sql)
                self.con.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                    [version, name, datetime.now(UTC).replace(tzinfo=None)],
                )
                self.con.execute("COMMIT")
            except Exception:
                self.con.execute("ROLLBACK")
                raise
            applied.append(version)
        return applied

    # -- reads ---------------------------------------------------------------------------------------

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> pl.DataFrame:
        """Run SQL against the store and return a polars DataFrame."""
        return self.con.execute(sql, params).pl()

    def sessions(self) -> pl.DataFrame:
        """All sessions, ordered by tool and start time."""
        return self.query("SELECT * FROM sessions ORDER BY tool, started_at, session_uid")

    def calls(self) -> pl.DataFrame:
        """All calls with their `delta` (chain breaks not applied), in session order."""
        return self.query("SELECT * FROM call_deltas ORDER BY session_uid, seq")

    def parts(self, session_uid: str | None = None) -> pl.DataFrame:
        """All parts (or one session's) in conversation order."""
        if session_uid is None:
            return self.query("SELECT * FROM parts ORDER BY session_uid, seq")
        return self.query("SELECT * FROM parts WHERE session_uid = ? ORDER BY seq", [session_uid])

    def agent_estimates(self) -> pl.DataFrame:
        """Estimate-versus-actual pairs the agents logged themselves."""
        return self.query("SELECT * FROM agent_estimates ORDER BY source_path, line")

    def counts(self) -> dict[str, int]:
        """Row counts of the main tables."""
        out = {}
        for table in ("sessions", "calls", "parts", "agent_estimates"):
            row = self.con.execute(f"SELECT count(*) FROM {table}").fetchone()
            out[table] = int(row[0]) if row else 0
        return out

    # -- file bookkeeping ----------------------------------------------------------------------------

    def file_state(self, path: str) -> FileState | None:
        """What the last ingest recorded for `path`, if anything."""
        row = self.con.execute(
            "SELECT path, importer, size, mtime_ns, fingerprint, session_uids, read_offset FROM files WHERE path = ?",
            [path],
        ).fetchone()
        return FileState(*row) if row else None

    def file_states(self) -> dict[str, FileState]:
        """Every file the store has ingested, by path."""
        rows = self.con.execute(
            "SELECT path, importer, size, mtime_ns, fingerprint, session_uids, read_offset FROM files"
        ).fetchall()
        return {r[0]: FileState(*r) for r in rows}

    # -- writes --------------------------------------------------------------------------------------

    def write(self, records: Iterable[Record], *, file: FileState | None = None) -> WriteCounts:
        """Write parsed records in one transaction, replacing any earlier rows of the same sessions.

        Rows are keyed naturally (session, call and part uids; log file and line), so writing the same
        records twice adds nothing. Nothing is written if any step fails.
        """
        sessions: list[ParsedSession] = []
        estimates: list[AgentEstimate] = []
        for record in records:
            if isinstance(record, ParsedSession):
                sessions.append(record)
            else:
                estimates.append(record)
        if self.read_only:
            raise StoreError("the store is open read-only", path=str(self.path))
        self.con.execute("BEGIN TRANSACTION")
        try:
            counts = self._write(sessions, estimates)
            if file is not None:
                self._record_file(file)
            self.con.execute("COMMIT")
        except Exception:
            self.con.execute("ROLLBACK")
            raise
        return counts

    def _write(self, sessions: list[ParsedSession], estimates: list[AgentEstimate]) -> WriteCounts:
        counts = WriteCounts()
        con = self.con
        if sessions:
            uids = [p.session.uid for p in sessions]
            if len(set(uids)) != len(uids):
                # The same session twice in one write: the last one wins, as on re-ingest.
                last = {p.session.uid: p for p in sessions}
                sessions = list(last.values())
                uids = list(last)
            new_sessions = _arrow([p.session for p in sessions], _SESSION_COLS, "sessions")
            new_calls = _arrow([c for p in sessions for c in p.calls], _CALL_COLS, "calls")
            new_parts = _arrow([x for p in sessions for x in p.parts], _PART_COLS, "parts")
            con.register("_new_sessions", new_sessions)
            con.register("_new_calls", new_calls)
            con.register("_new_parts", new_parts)
            try:
                counts.sessions = _count_new(con, "sessions", "session_uid", "_new_sessions")
                counts.calls = _count_new(con, "calls", "call_uid", "_new_calls")
                counts.parts = _count_new(con, "parts", "part_uid", "_new_parts")
                con.execute("CREATE OR REPLACE TEMP TABLE _uids AS SELECT session_uid FROM _new_sessions")
                for table in ("parts", "calls", "sessions"):
                    con.execute(f"DELETE FROM {table} WHERE session_uid IN (SELECT session_uid FROM _uids)")
                con.execute("INSERT INTO sessions BY NAME SELECT * FROM _new_sessions")
                con.execute("INSERT INTO calls BY NAME SELECT * FROM _new_calls")
                con.execute("INSERT INTO parts BY NAME SELECT * FROM _new_parts")
            finally:
                for name in ("_new_sessions", "_new_calls", "_new_parts"):
                    con.unregister(name)
        if estimates:
            new_est = _arrow(estimates, _ESTIMATE_COLS, "agent_estimates")
            con.register("_new_est", new_est)
            try:
                row = con.execute(
                    "SELECT count(*) FROM _new_est n WHERE NOT EXISTS (SELECT 1 FROM agent_estimates a "
                    "WHERE a.source_path = n.source_path AND a.line = n.line)"
                ).fetchone()
                counts.estimates = int(row[0]) if row else 0
                con.execute(
                    "DELETE FROM agent_estimates a USING _new_est n "
                    "WHERE a.source_path = n.source_path AND a.line = n.line"
                )
                con.execute("INSERT INTO agent_estimates BY NAME SELECT * FROM _new_est")
            finally:
                con.unregister("_new_est")
        return counts

    def _record_file(self, file: FileState) -> None:
        self.con.execute(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                file.path,
                file.importer,
                file.size,
                file.mtime_ns,
                file.fingerprint,
                file.session_uids,
                file.read_offset,
                datetime.now(UTC).replace(tzinfo=None),
            ],
        )

    def ingest(self, paths: Sequence[str | os.PathLike[str]] = (), **kwargs: Any) -> Any:
        """Import agent session files into this store; see `calib.ingest.ingest`."""
        from calib.ingest import ingest

        return ingest(paths, store=self, **kwargs)


def _count_new(con: duckdb.DuckDBPyConnection, table: str, key: str, new: str) -> int:
    row = con.execute(
        f"SELECT count(*) FROM {new} n WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE t.{key} = n.{key})"
    ).fetchone()
    return int(row[0]) if row else 0


def open_store(path: str | os.PathLike[str] | None = None, *, read_only: bool = False) -> Store:
    """Open (creating and migrating if needed) the store at `path`, `$CALIB_DB` or `./calib.duckdb`."""
    return Store(path, read_only=read_only)
