"""How a batch of sources' rows enters the store: replace or extend sessions, keep natural keys unique.

Rows are keyed naturally (session, call and part uids; log file and line). A source read whole
replaces its sessions, and the sessions it held at the last ingest but holds no more are removed
unless another file holds them; a log read on from where the last ingest stopped (`append`) adds
calls and parts to stored sessions. Every check raises before the first DELETE or INSERT, so that a
rejected batch leaves an open transaction as it was.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson

from calib.core.errors import StoreError
from calib.core.records import TABLES
from calib.store.columns import Tables

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

# pyarrow is imported where rows are written, not with this module: ingest imports the store before
# it starts parsing, and pyarrow.compute alone would then cost every ingest a few tens of milliseconds
# on the critical path instead of in the writer thread.


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


# Columns the store computes as rows are written, beside the records' own fields (table -> column ->
# SQL): a part's text hash keys the count cache (`text_counts`, migration 014).
DERIVED_COLUMNS: dict[str, dict[str, str]] = {"parts": {"text_hash": "hash(text, pruned_text)"}}


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


@dataclass(slots=True)
class FileWrite:
    """The rows one source yielded, and what to record about the source once they are stored.

    `append`: the rows continue sessions already stored (an append-only log read on from where the
    last ingest stopped): their session rows are replaced, their calls and parts are added to the
    stored ones, and any of those uids already stored is a conflict. Otherwise the rows replace their
    sessions whole, and sessions that the file held at the last ingest but no longer does are removed
    (unless another file still holds them).

    The tables come from `calib.store.columns`, which made sure that the calls, and the parts, of
    these rows have distinct uids; the writer does not compare them again.
    """

    tables: Tables
    file: FileState | None = None
    append: bool = False

    def session_uids(self) -> list[str]:
        """Uids of the sessions in these rows, in order."""
        table = self.tables.get("sessions")
        return [] if table is None else table.column("session_uid").to_pylist()


class AppendConflict(StoreError):
    """Rows meant to extend stored sessions collide with rows already stored; re-read the source whole."""


class BatchWriter:
    """Writes units of rows through one DuckDB connection, inside the transaction its caller holds."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self._registered: list[str] = []

    def close(self) -> None:
        """Drop the tables this writer registered on the connection."""
        for name in self._registered:
            with contextlib.suppress(Exception):
                self.con.unregister(name)
        self._registered = []

    def _keys(self, name: str, values: Iterable[str]) -> str:
        """Register `values` as the one-column table `name` (column `k`); returns `name`."""
        import pyarrow as pa

        self.con.register(name, pa.table({"k": pa.array(sorted(set(values)), pa.string())}))
        self._registered.append(name)
        return name

    def rows(self, units: list[FileWrite]) -> WriteCounts:
        # Every check here raises before the first DELETE or INSERT: `write_batch` inside an open
        # transaction relies on a CalibError leaving that transaction untouched.
        con = self.con
        counts = WriteCounts()
        merged = {
            table: concat_rows([u.tables[table] for u in units if table in u.tables])
            if any(table in u.tables for u in units)
            else None
            for table in TABLES
        }
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
                extra = "".join(f", {sql} AS {col}" for col, sql in DERIVED_COLUMNS.get(table, {}).items())
                con.execute(f"INSERT INTO {table} BY NAME SELECT *{extra} FROM {name}")
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

    def files(self, files: list[FileState]) -> None:
        import pyarrow as pa

        if not files:
            return
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


def concat_rows(tables: list[pa.Table]) -> pa.Table:
    """The tables' rows one after another, slices that continue each other joined back into one chunk.

    Ingest hands over each source's rows as a slice of the table its worker made for many sources.
    DuckDB's Arrow scan pays about 0.1 ms per chunk and column set up, more than the rows of a small
    source cost: the sources of a batch would cost more as chunks than as rows. Slices are joined
    without a copy (the joined chunk is a view of the same buffers), and only when every column of
    the next one starts where the last one ends in the same buffers.
    """
    import pyarrow as pa

    batches = [batch for table in tables for batch in table.to_batches() if batch.num_rows]
    if not batches or not all(_flat(field.type) for field in batches[0].schema):
        return pa.concat_tables(tables)
    runs: list[list[pa.RecordBatch]] = []
    for batch in batches:
        if runs and _continues(runs[-1][-1], batch):
            runs[-1].append(batch)
        else:
            runs.append([batch])
    if len(runs) == len(batches):
        return pa.concat_tables(tables)
    joined = [run[0] if len(run) == 1 else _join(run) for run in runs]
    return pa.Table.from_batches(joined, schema=tables[0].schema)


def _flat(kind: pa.DataType) -> bool:
    """A type whose arrays are a validity bitmap and flat buffers, no child arrays (slices join simply)."""
    import pyarrow as pa

    return bool(
        pa.types.is_string(kind)
        or pa.types.is_integer(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_timestamp(kind)
        or pa.types.is_floating(kind)
        or pa.types.is_null(kind)
    )


def _buffers(array: pa.Array) -> list[tuple[int, int] | None]:
    return [None if b is None else (b.address, b.size) for b in array.buffers()]


def _continues(before: pa.RecordBatch, after: pa.RecordBatch) -> bool:
    """True when every column of `after` is the slice that follows `before`'s in the same buffers."""
    if before.schema != after.schema:
        return False
    for a, b in zip(before.columns, after.columns, strict=True):
        if a.offset + len(a) != b.offset or _buffers(a) != _buffers(b):
            return False
    return True


def _join(run: list[pa.RecordBatch]) -> pa.RecordBatch:
    """One chunk of consecutive slices of the same buffers (see `_continues`): a view, no copy."""
    import pyarrow as pa

    first = run[0]
    length = sum(batch.num_rows for batch in run)
    columns = [
        pa.Array.from_buffers(column.type, length, column.buffers(), offset=column.offset)
        for column in first.columns
    ]
    return pa.RecordBatch.from_arrays(columns, schema=first.schema)


def supersede(units: list[FileWrite]) -> list[FileWrite]:
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
            unit = FileWrite(tables, unit.file, unit.append)
        later.update(uids)
        if unit.append:
            later_appended.update(uids)
        out.append(unit)
    out.reverse()
    return out
