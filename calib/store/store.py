"""The DuckDB store: one file, its schema through numbered migrations, transactions, polars reads.

How rows are laid out for it is `calib.store.columns`; how a batch of them is written,
`calib.store.writes`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from calib.core.errors import NotAStoreError, StoreError, UsageError
from calib.core.home import expand_home
from calib.core.progress import Progress
from calib.core.records import Record
from calib.store import default_db_path, failures, parquet
from calib.store.columns import records_to_tables
from calib.store.kept import COUNTS, KeptCounts
from calib.store.writes import BatchWriter, FileState, FileWrite, WriteCounts, supersede

if TYPE_CHECKING:
    import duckdb
    import polars as pl
    import pyarrow as pa

_MIGRATION_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")


def migrations() -> list[tuple[int, str, str]]:
    """The numbered migrations shipped in `calib/store/migrations`, as (version, name, sql), in order."""
    found = []
    for entry in resources.files("calib.store.migrations").iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise StoreError("two migrations share a number", hint="renumber the files in calib/store/migrations")
    return found


# Every connection calib opens: DuckDB never fetches or loads an extension by itself. Without this,
# a file of another format (an agent's SQLite database given as --db) or a query naming one makes
# DuckDB download the extension that reads it, and then write calib's tables into that file.
CONNECT_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
# DuckDB's memory (its cache of table blocks and the state of joins, sorts and windows, which spill to
# its temporary folder beyond it): by default 80% of the machine's RAM, so a store of a few GB would
# fill it. Capped, each command's memory stays flat however large the store; `$CALIB_MEMORY_LIMIT`
# (a DuckDB size such as "2GB") raises it on a bigger host.
# At 160 MB a batch of the per-call frame fits (its temporary tables are dropped as they are used);
# 256 MB added 100 MB to every reading command's peak, 96 MB ran out on the scale benchmark's stores.
DEFAULT_MEMORY_LIMIT = "160MB"


def limit_memory(con: duckdb.DuckDBPyConnection) -> None:
    """Cap DuckDB's memory on `con` (`DEFAULT_MEMORY_LIMIT`, or `$CALIB_MEMORY_LIMIT`)."""
    import duckdb

    limit = os.environ.get("CALIB_MEMORY_LIMIT") or DEFAULT_MEMORY_LIMIT
    try:
        con.execute("SET memory_limit = ?", [limit])
    except duckdb.Error as exc:
        con.close()
        raise StoreError(
            f"CALIB_MEMORY_LIMIT is not a size DuckDB accepts: {limit!r}", hint='use a size such as "2GB"'
        ) from exc


# What `release_cache` lets DuckDB keep: room for the temporary tables a command builds once and
# reads throughout (the count table, the flagged parts), never the cached blocks of the store's tables.
CACHE_FLOOR = "48MB"


def release_cache(con: duckdb.DuckDBPyConnection) -> None:
    """Have DuckDB drop the blocks of table data it keeps cached, up to its memory limit, after a scan.

    DuckDB keeps each block it read until the limit is reached, though a command that reads the store
    a batch at a time reads each block once: after the scans of a whole table that a command starts
    with, or after a batch, that cache is memory the command no longer needs. Lowering the limit for a
    moment evicts it down to `CACHE_FLOOR`; the limit `limit_memory` sets is then set again. Best
    effort: a limit DuckDB cannot meet at once is left as it was.
    """
    import duckdb

    try:
        con.execute("SET memory_limit = ?", [CACHE_FLOOR])
    except duckdb.Error:
        pass
    finally:
        limit_memory(con)  # (DuckDB reports its limit rounded: it is set again as configured)


# A DuckDB database file: an 8-byte checksum, then this magic.
_DUCKDB_MAGIC = b"DUCK"
_SQLITE_MAGIC = b"SQLite format 3\x00"
# What DuckDB opens instead of a local file: a URL (`s3://`, `https://`, `hf://`, ...; a path keeps one
# slash of `//`) through an extension, MotherDuck (`md:`), or a database in memory that the command loses.
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):(?=/)|^(md|motherduck):", re.I)
_MEMORY = ":memory:"


def _not_a_file(path: Path) -> str | None:
    """What `path` names if it is not a local file DuckDB would open as one, else None."""
    text = str(path)
    if text == "-":
        return "standard input or output (-)"
    if text.startswith(_MEMORY):
        return f"an in-memory database ({_MEMORY})"
    url = _URL.match(text)
    if url:
        return f"a URL ({url.group(1) or url.group(2)}:)"
    return None


def check_store_file(path: Path, *, create: bool = True) -> None:
    """Refuse, before DuckDB opens it, a path that is not a calib store (nor, with `create`, a new one).

    Raises `NotAStoreError` (a usage error) for a path that is no local file (`-`, a URL, `:memory:`),
    for a missing or empty store when `create` is False, for a folder (but a Parquet export when `create`
    is False: it can be read, never written), and for an existing file that is not a DuckDB database
    (such as an agent's SQLite database); nothing is created or written.
    """
    other = _not_a_file(path)
    if other is not None:
        raise NotAStoreError(
            f"the store must be a local file, not {other}",
            hint="pass --db or CALIB_DB a file path, such as ./calib.duckdb",
        )
    try:
        with path.open("rb") as fh:
            head = fh.read(16)
    except (FileNotFoundError, NotADirectoryError):
        if not create:
            raise NotAStoreError(f"no calib store at {path}", hint="run `calib ingest` first") from None
        return  # a new store: making its folder, or opening it, reports what is wrong
    except IsADirectoryError:
        if not parquet.is_export(path):
            raise NotAStoreError(
                f"not a calib store: {path} is a folder",
                hint="point --db at a .duckdb file, or at a folder `calib export --parquet` wrote",
            ) from None
        if create:
            raise NotAStoreError(
                f"{path} is a Parquet export, which calib only reads",
                hint="ingest into a .duckdb store, then `calib export --parquet` it again",
            ) from None
        return  # read through `open_store`, as a `ParquetStore`
    except OSError as exc:
        raise StoreError(f"cannot open the store: {exc.strerror}", path=str(path)) from None
    if not head:
        if not create:
            raise NotAStoreError(
                f"no calib store in {path}: the file is empty", hint="run `calib ingest` first"
            )
        return  # an empty file holds nothing: `Store` makes it a new store
    if head[8:12] != _DUCKDB_MAGIC:
        kind = "a SQLite database" if head.startswith(_SQLITE_MAGIC) else "not a DuckDB database"
        raise NotAStoreError(
            f"not a calib store: {path} is {kind}",
            hint="point --db at a store made by `calib ingest`, or at a new path; the file was not touched",
        )


# How long a reader waits for a writer's exclusive lock to go: another reader saving its counts holds it
# for a moment (`KeptCounts.save`); an ingest holds it throughout, and then the reader says so.
READ_WAIT = 2.0
# DuckDB's refusal to open a file this process already has open with other settings (read-only or not).
_SAME_PROCESS = "different configuration than existing connections"


def _fill_empty(path: Path) -> None:
    """Make `path`, if it is an empty file, a new empty DuckDB database (DuckDB refuses a file of 0 bytes).

    A new database is written in the temporary folder and its bytes copied into the file, which stays
    the user's own (its permissions, owner and any link to it are kept).
    """
    import duckdb

    try:
        if path.stat().st_size:
            return
    except OSError:
        return  # a new store: DuckDB creates it
    with tempfile.TemporaryDirectory(prefix="calib-new-") as folder:
        fresh = Path(folder, "new.duckdb")
        duckdb.connect(str(fresh), config=dict(CONNECT_CONFIG)).close()
        try:
            shutil.copyfile(fresh, path)
        except OSError as exc:
            raise StoreError(f"cannot write the store: {exc.strerror}", path=str(path)) from None


def _spill_folder(path: Path) -> Path:
    """Where a read-only open of the store at `path` has DuckDB spill: a folder of this process's own."""
    name = f"{path.name}.{os.getpid()}.tmp"
    if os.access(path.parent, os.W_OK):
        return path.with_name(name)
    return Path(tempfile.gettempdir(), f"calib-{name}")


# What a store that could not be opened says first (the cause follows).
_OPENING = "cannot open the store: "


class Store:
    """One DuckDB file holding sessions, calls and parts; the object notebooks and the CLI share.

    Opened read-only, it takes a shared lock: it can be read beside other readers, and on a medium that
    cannot be written. The counts scoring makes are then kept aside (`calib.store.kept`) and read with
    the stored ones; with `persist` they are written into the store when it closes, and an older store
    is upgraded when it opens, where the file can be written then.
    """

    _kept: KeptCounts | None = None  # counts kept aside (a store file opened read-only)

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        create: bool = True,
        persist: bool = False,
    ):
        self.path = expand_home(path) if path is not None else default_db_path()
        self.read_only = read_only
        # with `read_only`: an older store is upgraded at open, and the counts made are written into the
        # store at close, each in a short read-write open where the file can be written then
        self.persist = persist and read_only
        self._aside = read_only  # counts go aside (`KeptCounts`), not into the store's table
        self._transaction = False  # a transaction opened by `begin` that `write_batch` calls join
        check_store_file(self.path, create=create and not read_only)
        if not read_only and not self.path.parent.exists():
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the store's folder: {exc.strerror}",
                    path=str(self.path.parent),
                    hint="pass --db with a path in a folder you can write",
                ) from None
        if not read_only:
            _fill_empty(self.path)
        self.con = self._connect(read_only=read_only, wait=READ_WAIT if read_only else 0.0)
        try:
            self._check_calib_tables()
            if not read_only:
                self.migrate()
            else:
                self._check_version()
                missing = self._missing_migrations()
                if missing:
                    self._upgrade(missing[0])
        except BaseException:
            self.con.close()
            raise

    def _connect(self, *, read_only: bool, wait: float = 0.0) -> duckdb.DuckDBPyConnection:
        """A connection to the store's file, set up as every calib connection is; a read-only one waits
        up to `wait` seconds for another process's exclusive lock to go."""
        import duckdb

        deadline = time.monotonic() + wait
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=read_only, config=dict(CONNECT_CONFIG))
                break
            except duckdb.Error as exc:
                if read_only and _SAME_PROCESS in str(exc):
                    # this process has the file open read-write (a notebook's store): DuckDB lets it be
                    # opened only that way again, and this store still writes nothing of its own into it
                    read_only = False
                    continue
                if failures.is_lock_conflict(exc) and time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                raise self._open_error(exc) from exc
        # DuckDB draws its own progress bar on stdout, which would corrupt a `--json` document; in
        # Jupyter it refuses the setting without ipywidgets, and draws no text bar there anyway.
        with contextlib.suppress(duckdb.Error):
            con.execute("SET enable_progress_bar = false")
        if read_only:
            # What outgrows DuckDB's memory spills to `<store>.tmp`, which readers side by side would
            # share (and the first to end would delete): each spills to a folder of its own, beside the
            # store where it can be written, else in the temporary folder. DuckDB makes it if needed.
            with contextlib.suppress(duckdb.Error):
                con.execute("SET temp_directory = ?", [str(_spill_folder(self.path))])
        limit_memory(con)
        return con

    def _open_error(self, exc: Exception) -> StoreError:
        """The one-line error of DuckDB refusing to open the store's file."""
        import duckdb

        if _SAME_PROCESS in str(exc):
            return StoreError(
                "the store is open read-only in this process", path=str(self.path), hint="close it first"
            )
        failure = failures.explain(exc, str(self.path), doing=_OPENING)
        if failure is not None:
            return failure
        first = str(exc).splitlines()[0]
        if isinstance(exc, duckdb.IOException):
            return StoreError(f"{_OPENING}{first}", path=str(self.path))
        return StoreError(
            f"not a calib store: {first}",
            path=str(self.path),
            hint="point --db at a DuckDB file made by calib, or at a new path",
        )

    def _upgrade(self, missing: int) -> None:
        """Apply the migrations an older store lacks, on a short read-write open, then open it read-only
        again (only with `persist`: a plain read-only store is never written)."""
        what = f"the store was written by an older calib and needs migration {missing}"
        if not self.persist:
            raise StoreError(
                f"{what}, which a store opened read-only cannot make",
                path=str(self.path),
                hint="open it once read-write (any calib command does), or read it with the calib that wrote it",
            )
        self.con.close()
        try:
            self.con = self._connect(read_only=False)
        except StoreError as exc:
            held = exc.hint == failures.LOCK_HINT  # another process has it open: it can be made later
            raise StoreError(
                f"{what}, which cannot be made here: {exc.what.removeprefix(_OPENING)}",
                path=exc.path,
                hint=exc.hint
                if held
                else "run any calib command on it once where it can be written, or read it with the calib "
                "that wrote it",
            ) from exc
        try:
            self.migrate()
        finally:
            self.con.close()
        self.con = self._connect(read_only=True, wait=READ_WAIT)

    # -- lifecycle -----------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection; with `persist`, write the counts kept aside into the store if it can
        be written now (else they are dropped: the next command counts those texts again)."""
        self._close(save=True)

    def _close(self, *, save: bool) -> None:
        kept, self._kept = self._kept, None
        if kept is None:
            self.con.close()
            return
        # (a file that cannot be written now, such as one on a read-only medium, cannot take them)
        keep = save and self.persist and os.access(self.path, os.W_OK)
        try:
            try:
                kept.detach(self.con, keep=keep)
            finally:
                self.con.close()
            if keep and kept.changed:
                self._save(kept)
        finally:
            kept.discard()

    def _save(self, kept: KeptCounts) -> None:
        """Write the kept counts into the store on a short read-write open, if one is allowed now."""
        import duckdb

        try:
            con = self._connect(read_only=False)
        except StoreError:
            return  # a read-only medium, or another process has the store open
        try:
            kept.save(con)
        except duckdb.Error:
            pass  # (rolled back) the store is as it was: the texts are counted again next time
        finally:
            con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        # a command that failed or was interrupted (Ctrl-C reaches here as DuckDB's "Query interrupted",
        # an Exception, as often as a KeyboardInterrupt) closes without writing its kept counts
        self._close(save=exc is None)
        # DuckDB failing under a command: said with the store's path (a damaged block, a full disk)
        failure = failures.explain(exc, str(self.path)) if exc is not None else None
        if failure is not None:
            raise failure from exc

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

    def _check_calib_tables(self) -> None:
        """Refuse a DuckDB database of something else: calib's tables never go into another's file."""
        tables = {
            row[0]
            for row in self.con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database()"
            ).fetchall()
        }
        if tables and "schema_migrations" not in tables:
            raise NotAStoreError(
                f"not a calib store: {self.path} is a DuckDB database with other tables",
                hint="point --db at a store made by `calib ingest`, or at a new path; the file was not changed",
            )

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

    def _missing_migrations(self) -> list[int]:
        """The migrations this calib knows that the store lacks, in order."""
        applied = set(self.applied_migrations())
        return [v for v, _, _ in migrations() if v not in applied]

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

    # -- the count cache (`calib.scoring.counts` decides what to count) ------------------------------

    def counts_sql(self) -> str:
        """The count cache (`text_counts`' rows) as SQL a query on any cursor of this store can read
        FROM: the table, or with counts kept aside, the stored counts with those."""
        return COUNTS if self._kept is None else f"({self._kept.sql})"

    def forget_counts(self, sources: Sequence[str], version: str) -> None:
        """Drop the counts of `sources` made with a version other than `version` (an estimator changed)."""
        params = {"sources": list(sources), "version": version}
        if not self._aside:
            self.con.execute(
                f"DELETE FROM {COUNTS} WHERE list_contains($sources, source) AND version <> $version", params
            )
            return
        stale = self.con.execute(
            f"SELECT 1 FROM {self.counts_sql()} WHERE list_contains($sources, source) AND version <> $version LIMIT 1",
            params,
        ).fetchone()
        if stale:
            self._kept_counts().forget(self.con, sources, version)

    def add_counts(self, counts: pa.Table) -> None:
        """Add counts (`text_counts`' columns) to the cache: into the store, or kept aside."""
        con = self.con
        con.register("_new_counts", counts)
        try:
            if self._aside:
                self._kept_counts().add(con, "_new_counts")
            else:
                con.execute(f"INSERT INTO {COUNTS} BY NAME SELECT * FROM _new_counts")
        finally:
            con.unregister("_new_counts")

    def _kept_counts(self) -> KeptCounts:
        if self._kept is None:
            self._kept = KeptCounts(self.con)
        return self._kept

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
        units = supersede(list(units))
        if self._transaction:
            return self._write_batch(units)
        self.con.execute("BEGIN TRANSACTION")
        try:
            counts = self._write_batch(units)
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

    def _write_batch(self, units: list[FileWrite]) -> WriteCounts:
        writer = BatchWriter(self.con)
        try:
            counts = writer.rows(units)
            writer.files([u.file for u in units if u.file is not None])
            return counts
        finally:
            writer.close()


def open_store(
    path: str | os.PathLike[str] | None = None,
    *,
    read_only: bool = False,
    create: bool = True,
    persist: bool = False,
) -> Store:
    """Open (creating and migrating if needed) the store at `path`, `$CALIB_DB` or `./calib.duckdb`.

    With `create=False` (or `read_only`), a missing store is an error rather than a new empty one. A
    path that is not a calib store (another program's database, a URL) is refused before it is opened.
    `read_only` opens it beside other readers and on a medium that cannot be written: it is never
    written, and the counts scoring makes are kept in memory; with `persist` too (the reading
    commands), an older store is upgraded and the counts are written into the store when it closes, each
    where the file can be written then. A folder written by `calib export --parquet` opens read-only as
    a `ParquetStore`.
    """
    if parquet.is_export(expand_home(path) if path is not None else default_db_path()):
        return ParquetStore(path if path is not None else default_db_path())
    return Store(path, read_only=read_only, create=create, persist=persist)


class ParquetStore(Store):
    """A folder written by `calib export --parquet`, read-only: its tables are views over its Parquet files.

    The count cache is loaded into memory, so `calib score` can add counts to it; those counts are
    lost when the store closes, never written to the folder (see `calib.store.parquet`).
    """

    def __init__(self, path: str | os.PathLike[str]):
        # not Store.__init__, which opens a DuckDB file: this store is an in-memory database
        self.path = expand_home(path)
        self.read_only = True
        self.persist = False
        self._aside = False  # its count cache is a table in memory: counts go straight into it
        self._transaction = False
        self.con = parquet.connect_export(self.path, CONNECT_CONFIG, [v for v, _, _ in migrations()])
        limit_memory(self.con)


def export_parquet(
    db: str | os.PathLike[str] | None, out: str | os.PathLike[str], *, progress: Progress | None = None
) -> parquet.ParquetExport:
    """`calib export --parquet`: write every table of the store at `db` as Parquet files under `out`.

    Tables with sessions are partitioned by the session's tool and start month; the manifest
    (`calib-export.json`) lets `open_store(out)` read the folder back (see `calib.store.parquet`).
    `out` must be new, empty or an earlier export (replaced once the new one is complete).
    """
    with open_store(db, read_only=True, persist=True) as store:
        if isinstance(store, ParquetStore):
            raise UsageError(
                f"{store.path} is already a Parquet export",
                hint="copy the folder, or export its .duckdb store",
            )
        return parquet.write_export(store.con, out, source=str(store.path.resolve()), progress=progress)
