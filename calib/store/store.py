"""The DuckDB store: schema through numbered migrations, writes of parsed sessions, polars reads."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from importlib import resources
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from calib.core.errors import StoreError
from calib.core.records import AgentEstimate, Call, ParsedSession, Part, Record, Session

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
    for entry in resources.files("calib.store.migrations").iterdir():
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
    resume: dict[str, Any] | None = None  # the importer's state for reading on from `read_offset`


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
_RECORD_COLS = {
    "sessions": _SESSION_COLS,
    "calls": _CALL_COLS,
    "parts": _PART_COLS,
    "agent_estimates": _ESTIMATE_COLS,
}
TABLES = ("sessions", "calls", "parts", "agent_estimates")

# Arrow type of each record field (store column names); fields not listed are strings.
_TYPES = {
    "seq": "int32",
    "prompt_start": "int32",
    "prompt_end": "int32",
    "line": "int32",
    "input": "int64",
    "output": "int64",
    "reasoning": "int64",
    "cache_read": "int64",
    "cache_write": "int64",
    "tool_prompt": "int64",
    "total": "int64",
    "ctx": "int64",
    "carry": "int64",
    "estimated": "int64",
    "actual": "int64",
    "started_at": "timestamp",
    "ended_at": "timestamp",
    "ts": "timestamp",
    "pruned_at": "timestamp",
    "is_subagent": "bool",
    "resent": "bool",
}

# Rows of the store's tables in columns: table -> column (store name) -> values in row order.
Columns = dict[str, dict[str, list[Any]]]
# The same rows as Arrow tables, what `Store.write_batch` takes and what crosses process boundaries.
Tables = dict[str, "pa.Table"]


def table_schema(table: str) -> pa.Schema:
    """The Arrow schema rows of `table` are written with (store column names, record order)."""
    import pyarrow as pa

    kinds = {
        "int32": pa.int32(),
        "int64": pa.int64(),
        "timestamp": pa.timestamp("us"),
        "bool": pa.bool_(),
        "string": pa.string(),
    }
    rename = _RENAME[table]
    return pa.schema(
        [(rename.get(col, col), kinds[_TYPES.get(col, "string")]) for col in _RECORD_COLS[table]]
    )


def empty_columns() -> Columns:
    """Empty column lists for every table, to be filled row by row."""
    return {table: {_RENAME[table].get(col, col): [] for col in cols} for table, cols in _RECORD_COLS.items()}


def arrow_memory_pool() -> pa.MemoryPool:
    """jemalloc when pyarrow has it, else the system allocator; not pyarrow's default mimalloc.

    Rows are converted to Arrow a batch at a time and freed once written. mimalloc hands freed pages
    back to the OS at once, so every batch of text faulted its pages in anew, which cost more than the
    conversion itself (a quarter of the parse time of a large ingest). jemalloc keeps them a while;
    ingest's parsing workers have it keep them longer (`calib.ingest.pipeline.WORKER_ARROW_DECAY_MS`).
    """
    import pyarrow as pa

    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:
        return pa.system_memory_pool()


def columns_to_tables(columns: Columns) -> Tables:
    """Arrow tables of filled column lists (JSON columns must already be serialised text)."""
    import pyarrow as pa

    pool = arrow_memory_pool()
    out: Tables = {}
    for table, data in columns.items():
        schema = table_schema(table)
        out[table] = pa.Table.from_arrays(
            [pa.array(data[name], type=schema.field(name).type, memory_pool=pool) for name in schema.names],
            schema=schema,
        )
    return out


def records_to_columns(
    records: Iterable[Record], extra: dict[str, dict[str, list[Any]]] | None = None
) -> Columns:
    """The rows of parsed records in columns; a session given twice keeps its last version.

    `extra` adds rows already in columns (record kind -> record field name -> values), after the
    rows of `records`; JSON fields among them are serialised here.
    """
    sessions: dict[str, ParsedSession] = {}
    estimates: list[AgentEstimate] = []
    for record in records:
        if isinstance(record, ParsedSession):
            sessions.pop(record.session.uid, None)  # the last one wins, in the position it came last
            sessions[record.session.uid] = record
        else:
            estimates.append(record)
    rows: dict[str, Sequence[Any]] = {
        "sessions": [p.session for p in sessions.values()],
        "calls": [c for p in sessions.values() for c in p.calls],
        "parts": [x for p in sessions.values() for x in p.parts],
        "agent_estimates": estimates,
    }
    out: Columns = {}
    for table, cols in _RECORD_COLS.items():
        rename = _RENAME[table]
        data: dict[str, list[Any]] = {}
        for col in cols:
            values = list(map(attrgetter(col), rows[table]))
            if col in _JSON_COLS:
                values = [None if v is None else orjson.dumps(v).decode() for v in values]
            more = (extra or {}).get(table, {}).get(col)
            if more:
                if col in _JSON_COLS:
                    more = [None if v is None else orjson.dumps(v).decode() for v in more]
                values.extend(more)
            data[rename.get(col, col)] = values
        out[table] = data
    return out


def records_to_tables(
    records: Iterable[Record], extra: dict[str, dict[str, list[Any]]] | None = None
) -> Tables:
    """Arrow tables of parsed records (and rows already in columns), ready for `Store.write_batch`."""
    return columns_to_tables(records_to_columns(records, extra))


@dataclass(slots=True)
class FileWrite:
    """The rows one source yielded, and what to record about the source once they are stored.

    `append`: the rows continue sessions already stored (an append-only log read on from where the
    last ingest stopped): their session rows are replaced, their calls and parts are added to the
    stored ones, and any of those uids already stored is a conflict. Otherwise the rows replace their
    sessions whole, and sessions that the file held at the last ingest but no longer does are removed
    (unless another file still holds them).

    `unique`: the call uids, and the part uids, of these rows are known to be distinct among themselves
    (`check_unique`, which ingest runs where it parses, in parallel). The store checks the rows of the
    other units of a write against each other; it never compares the uids of different sessions
    across writes either.
    """

    tables: Tables
    file: FileState | None = None
    append: bool = False
    unique: bool = False

    def session_uids(self) -> list[str]:
        """Uids of the sessions in these rows, in order."""
        table = self.tables.get("sessions")
        return [] if table is None else table.column("session_uid").to_pylist()


class AppendConflict(StoreError):
    """Rows meant to extend stored sessions collide with rows already stored; re-read the source whole."""


class Store:
    """One DuckDB file holding sessions, calls and parts; the object notebooks and the CLI share."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, read_only: bool = False):
        import duckdb

        self.path = Path(path) if path is not None else default_db_path()
        self.read_only = read_only
        self._transaction = False  # a transaction opened by `begin` that `write_batch` calls join
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
        # DuckDB draws its own progress bar on stdout, which would corrupt a `--json` document; in
        # Jupyter it refuses the setting without ipywidgets, and draws no text bar there anyway.
        with contextlib.suppress(duckdb.Error):
            self.con.execute("SET enable_progress_bar = false")
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

    _FILE_COLS = "path, importer, size, mtime_ns, fingerprint, session_uids, read_offset, resume"

    @staticmethod
    def _file_row(row: Sequence[Any]) -> FileState:
        path, importer, size, mtime_ns, fingerprint, session_uids, read_offset, resume = row
        return FileState(
            path,
            importer,
            size,
            mtime_ns,
            fingerprint,
            list(session_uids),
            read_offset,
            orjson.loads(resume) if resume else None,
        )

    def file_state(self, path: str) -> FileState | None:
        """What the last ingest recorded for `path`, if anything."""
        row = self.con.execute(f"SELECT {self._FILE_COLS} FROM files WHERE path = ?", [path]).fetchone()
        return self._file_row(row) if row else None

    def file_states(self) -> dict[str, FileState]:
        """Every file the store has ingested, by path."""
        rows = self.con.execute(f"SELECT {self._FILE_COLS} FROM files").fetchall()
        return {r[0]: self._file_row(r) for r in rows}

    # -- writes --------------------------------------------------------------------------------------

    def write(self, records: Iterable[Record], *, file: FileState | None = None) -> WriteCounts:
        """Write parsed records in one transaction, replacing any earlier rows of the same sessions.

        Rows are keyed naturally (session, call and part uids; log file and line), so writing the same
        records twice adds nothing. Nothing is written if any step fails.
        """
        return self.write_batch([FileWrite(records_to_tables(records), file)])

    def write_batch(self, units: Sequence[FileWrite]) -> WriteCounts:
        """Write the rows of many sources in one transaction, as if written one after another.

        A session that two sources yield keeps the later source's rows. Returns the rows added (keys
        that were not stored before). Nothing is written if any step fails.

        Between `begin` and `commit` the rows join that transaction instead. A `CalibError` then
        leaves the transaction as it was (every check raises before the first change); any other
        error may have aborted it, and only `rollback` is left.
        """
        if self.read_only:
            raise StoreError("the store is open read-only", path=str(self.path))
        units = _supersede(list(units))
        if self._transaction:
            counts = self._write_batch(units)
            self._record_files([u.file for u in units if u.file is not None])
            return counts
        self.con.execute("BEGIN TRANSACTION")
        try:
            counts = self._write_batch(units)
            self._record_files([u.file for u in units if u.file is not None])
            self.con.execute("COMMIT")
        except Exception:
            self.con.execute("ROLLBACK")
            raise
        return counts

    @property
    def in_transaction(self) -> bool:
        """True between `begin` and `commit` or `rollback`."""
        return self._transaction

    def begin(self) -> None:
        """Open a transaction that the following `write_batch` calls join.

        One transaction over many batches lets DuckDB write whole row groups straight to the file
        as they fill, where a commit per batch sends every row through the WAL first and then
        writes it again at the checkpoint (a third of the write time of a large ingest).
        """
        if self.read_only:
            raise StoreError("the store is open read-only", path=str(self.path))
        self.con.execute("BEGIN TRANSACTION")
        self._transaction = True

    def commit(self) -> None:
        """Commit the transaction `begin` opened; if that fails, it is rolled back and the error raised."""
        self._transaction = False
        try:
            self.con.execute("COMMIT")
        except Exception:
            with contextlib.suppress(Exception):
                self.con.execute("ROLLBACK")
            raise

    def rollback(self) -> None:
        """Undo everything written since `begin`."""
        self._transaction = False
        self.con.execute("ROLLBACK")

    def checkpoint(self) -> None:
        """Move what the write-ahead log holds into the database file now, not when the store closes."""
        self.con.execute("CHECKPOINT")

    def _keys(self, name: str, values: Iterable[str]) -> str:
        """Register `values` as the one-column table `name` (column `k`); returns `name`."""
        import pyarrow as pa

        self.con.register(name, pa.table({"k": pa.array(sorted(set(values)), pa.string())}))
        self._registered.append(name)
        return name

    def _write_batch(self, units: list[FileWrite]) -> WriteCounts:
        self._registered: list[str] = []
        try:
            return self._write_rows(units)
        finally:
            for name in self._registered:
                with contextlib.suppress(Exception):
                    self.con.unregister(name)

    def _write_rows(self, units: list[FileWrite]) -> WriteCounts:
        # Every check here raises before the first DELETE or INSERT: `write_batch` inside an open
        # transaction relies on a CalibError leaving that transaction untouched.
        import pyarrow as pa
        import pyarrow.compute as pc

        con = self.con
        counts = WriteCounts()
        merged = {
            table: pa.concat_tables([u.tables[table] for u in units if table in u.tables])
            if any(table in u.tables for u in units)
            else None
            for table in TABLES
        }
        unchecked = [u for u in units if not u.unique]
        for table, key in (("calls", "call_uid"), ("parts", "part_uid")):
            tables = [u.tables[table] for u in unchecked if table in u.tables]
            if not tables:
                continue
            new = pa.concat_tables(tables)
            if pc.count_distinct(new.column(key)).as_py() != new.num_rows:
                raise StoreError(
                    f"two {table} in one write share the uid {_duplicate_uid(new.column(key).to_pylist())!r}",
                    hint=_UNIQUE_HINT,
                )
        appended = {uid for u in units if u.append for uid in u.session_uids()}
        batch = appended | {uid for u in units if not u.append for uid in u.session_uids()}
        stale = self._stale_sessions([u for u in units if not u.append and u.file is not None], batch)
        stored: set[str] = set()
        if batch:
            keys = self._keys("_batch_sessions", batch)
            stored = {
                r[0]
                for r in con.execute(
                    f"SELECT session_uid FROM sessions WHERE session_uid IN (SELECT k FROM {keys})"
                ).fetchall()
            }
        missing = sorted(appended - stored)
        if missing:
            raise AppendConflict(f"session {missing[0]} to extend is not in the store")
        counts.sessions = len(batch - stored)
        if appended:
            self._keys("_appended", appended)
        if stored:
            self._keys("_stored", stored)
        for table, key in (("calls", "call_uid"), ("parts", "part_uid")):
            new = merged[table]
            if new is None or new.num_rows == 0:
                continue
            clash = 0
            if stored:
                con.register("_new_rows", new)
                self._registered.append("_new_rows")
                in_appended = (
                    "count(*) FILTER (WHERE t.session_uid IN (SELECT k FROM _appended))" if appended else "0"
                )
                row = con.execute(
                    f"SELECT count(*), {in_appended} FROM {table} t SEMI JOIN _new_rows n ON t.{key} = n.{key} "
                    "WHERE t.session_uid IN (SELECT k FROM _stored)"
                ).fetchone()
                clash, appended_clash = row if row else (0, 0)
                if appended_clash:
                    raise AppendConflict(f"{appended_clash} {table} to append are already stored")
            if table == "calls":
                counts.calls = new.num_rows - clash
            else:
                counts.parts = new.num_rows - clash
        gone = (stored - appended) | stale
        if gone:
            keys = self._keys("_gone", gone)
            for table in ("parts", "calls"):
                con.execute(f"DELETE FROM {table} WHERE session_uid IN (SELECT k FROM {keys})")
        if stored or stale:
            keys = self._keys("_replaced", stored | stale)
            con.execute(f"DELETE FROM sessions WHERE session_uid IN (SELECT k FROM {keys})")
        for table in ("sessions", "calls", "parts"):
            new = merged[table]
            if new is not None and new.num_rows:
                name = f"_new_{table}"
                con.register(name, new)
                self._registered.append(name)
                con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {name}")
        counts.estimates = self._write_estimates(units, merged["agent_estimates"])
        return counts

    def _stale_sessions(self, units: list[FileWrite], batch: set[str]) -> set[str]:
        """Sessions the re-read files held before, hold no more, and no other file holds."""
        if not units:
            return set()
        paths = self._keys("_batch_paths", (u.file.path for u in units if u.file is not None))
        before = self.con.execute(
            f"SELECT DISTINCT unnest(session_uids) FROM files WHERE path IN (SELECT k FROM {paths})"
        ).fetchall()
        candidates = {r[0] for r in before} - batch
        if not candidates:
            return set()
        keys = self._keys("_stale_candidates", candidates)
        held = self.con.execute(
            f"SELECT DISTINCT s FROM (SELECT unnest(session_uids) AS s FROM files "
            f"WHERE path NOT IN (SELECT k FROM {paths})) WHERE s IN (SELECT k FROM {keys})"
        ).fetchall()
        return candidates - {r[0] for r in held}

    def _write_estimates(self, units: list[FileWrite], new: pa.Table | None) -> int:
        con = self.con
        # A log read whole again replaces every pair it held (lines that vanished go with it).
        rewritten = {
            p
            for u in units
            if not u.append and "agent_estimates" in u.tables
            for p in u.tables["agent_estimates"].column("source_path").to_pylist()
        } | {u.file.path for u in units if not u.append and u.file is not None}
        added = 0
        if new is not None and new.num_rows:
            con.register("_new_est", new)
            self._registered.append("_new_est")
            row = con.execute(
                "SELECT count(*) FROM _new_est n WHERE NOT EXISTS (SELECT 1 FROM agent_estimates a "
                "WHERE a.source_path = n.source_path AND a.line = n.line)"
            ).fetchone()
            added = int(row[0]) if row else 0
            con.execute(
                "DELETE FROM agent_estimates a USING _new_est n "
                "WHERE a.source_path = n.source_path AND a.line = n.line"
            )
        if rewritten:
            keys = self._keys("_rewritten", rewritten)
            con.execute(f"DELETE FROM agent_estimates WHERE source_path IN (SELECT k FROM {keys})")
        if new is not None and new.num_rows:
            con.execute("INSERT INTO agent_estimates BY NAME SELECT * FROM _new_est")
        return added

    def _record_files(self, files: list[FileState]) -> None:
        if not files:
            return
        import pyarrow as pa

        now = datetime.now(UTC).replace(tzinfo=None)
        last = {f.path: f for f in files}  # a path written twice in one batch keeps its last state
        rows = pa.table(
            {
                "path": [f.path for f in last.values()],
                "importer": [f.importer for f in last.values()],
                "size": pa.array([f.size for f in last.values()], pa.int64()),
                "mtime_ns": pa.array([f.mtime_ns for f in last.values()], pa.int64()),
                "fingerprint": [f.fingerprint for f in last.values()],
                "session_uids": pa.array(
                    [list(f.session_uids) for f in last.values()], pa.list_(pa.string())
                ),
                "read_offset": pa.array([f.read_offset for f in last.values()], pa.int64()),
                "ingested_at": pa.array([now] * len(last), pa.timestamp("us")),
                "resume": [_json(f.resume) for f in last.values()],
            }
        )
        self.con.register("_new_files", rows)
        try:
            self.con.execute("DELETE FROM files WHERE path IN (SELECT path FROM _new_files)")
            self.con.execute("INSERT INTO files BY NAME SELECT * FROM _new_files")
        finally:
            self.con.unregister("_new_files")


_UNIQUE_HINT = "the importer must give every row of a session its own uid"


def _duplicate_uid(uids: Sequence[str]) -> str | None:
    """The first uid that `uids` holds twice (None when they are distinct)."""
    if len(set(uids)) == len(uids):
        return None
    seen: set[str] = set()
    return next(u for u in uids if u in seen or seen.add(u))  # type: ignore[func-returns-value]


def check_unique(columns: Columns) -> None:
    """Raise `StoreError` when two calls, or two parts, of `columns` share a uid."""
    for table, key in (("calls", "call_uid"), ("parts", "part_uid")):
        dup = _duplicate_uid(columns[table][key])
        if dup is not None:
            raise StoreError(f"two {table} share the uid {dup!r}", hint=_UNIQUE_HINT)


def _supersede(units: list[FileWrite]) -> list[FileWrite]:
    """Drop the rows of sessions that a later unit of the batch yields again (the later one wins)."""
    later: set[str] = set()
    later_appended: set[str] = set()
    out: list[FileWrite] = []
    for unit in reversed(units):
        uids = unit.session_uids()
        dropped = [uid for uid in uids if uid in later]
        if dropped:
            if unit.append or later_appended.intersection(dropped):
                raise AppendConflict(f"session {dropped[0]} is extended and rewritten in one batch")
            import pyarrow as pa
            import pyarrow.compute as pc

            gone = pa.array(dropped, pa.string())
            tables = {}
            for table, rows in unit.tables.items():
                if table == "agent_estimates" or rows.num_rows == 0:
                    tables[table] = rows
                else:
                    tables[table] = rows.filter(pc.invert(pc.is_in(rows.column("session_uid"), gone)))
            unit = FileWrite(tables, unit.file, unit.append, unit.unique)
        later.update(uids)
        if unit.append:
            later_appended.update(uids)
        out.append(unit)
    out.reverse()
    return out


def open_store(path: str | os.PathLike[str] | None = None, *, read_only: bool = False) -> Store:
    """Open (creating and migrating if needed) the store at `path`, `$CALIB_DB` or `./calib.duckdb`."""
    return Store(path, read_only=read_only)
