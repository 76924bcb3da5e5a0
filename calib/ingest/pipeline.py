"""The ingest pipeline: find sources, pick an importer for each, parse, and write them atomically.

Speed: sources are parsed in forked worker processes (one per core), many small files per call, into
Arrow tables handed over through RAM-backed files; a writer thread puts the rows of many files into
the store a batch of about `BATCH_BYTES` of sources at a time while parsing goes on, in transactions
of about `TRANSACTION_BYTES`, with DuckDB on one thread and its memory capped, so memory stays flat
however much is ingested. A batch that fails is written again file by file, so a bad file adds
nothing and the others still land; a transaction DuckDB aborts is rolled back and its sources are
written again a batch per transaction.

Incremental: unchanged sources (same size, modification time and fingerprint) are not read at all,
and when nothing at all changed `calib.ingest.cache` answers without opening the store. An
append-only log is read on from where the last ingest stopped when its importer implements
`parse_from`; a rewritten source replaces its sessions, and sessions it no longer holds are removed,
in the same transaction. `full=True` reads everything again.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calib.core.errors import CalibError, InputError, NotASessionError, StoreError, UsageError
from calib.core.progress import Progress
from calib.core.records import ParsedSession, Record
from calib.importers import (
    Importer,
    all_importers,
    get_importer,
    incremental,
    sniff_dir,
    sniff_file,
)
from calib.ingest.cache import (
    dir_fingerprint,
    file_fingerprint,
    tree_snapshot,
    unchanged_since_last_ingest,
    write_manifest,
)
from calib.ingest.result import IngestResult
from calib.store.store import FileState, Store, default_db_path, open_store

if TYPE_CHECKING:
    from calib.store.store import Columns, FileWrite, Tables

# Source bytes whose rows are gathered and written at once.
BATCH_BYTES = 64 << 20
# Source bytes written in one transaction (of several batches; see `Store.begin`).
TRANSACTION_BYTES = 256 << 20
# Source bytes parsed and not yet written (beyond one batch being gathered): bounds memory.
IN_FLIGHT_BYTES = 128 << 20
# DuckDB's memory while ingest writes (its block cache would otherwise grow with the store).
DUCKDB_MEMORY_LIMIT = "256MB"
# DuckDB compressions not tried while ingest writes (see `_writer_settings`).
INGEST_DISABLED_COMPRESSION = "fsst,zstd,dict_fsst"
# Below this much to parse, worker processes cost more than they save.
PARALLEL_MIN_BYTES = 4 << 20
# How much lower the parsing workers' scheduling priority is than the writer's.
WORKER_NICENESS = 10
# How long a parsing worker's Arrow allocator keeps freed pages for reuse (see `_worker_started`).
WORKER_ARROW_DECAY_MS = 10_000
# Source bytes parsed per worker call: small files share one conversion to Arrow.
CHUNK_BYTES = 8 << 20


@dataclass(slots=True)
class Source:
    """One unit an importer parses: a session file, a database, or a folder read as a whole."""

    path: Path
    importer: Importer


def default_paths() -> list[Path]:
    """Every existing default data folder of every registered agent."""
    return [p for importer in all_importers() for p in importer.default_paths() if p.exists()]


def find_sources(
    paths: Sequence[Path], format: str | None = None
) -> tuple[list[Source], list[str], list[CalibError]]:
    """Resolve paths into sources; returns (sources, skipped files, errors for unusable explicit paths)."""
    forced = get_importer(format) if format else None
    sources: list[Source] = []
    skipped: list[str] = []
    errors: list[CalibError] = []
    for path in paths:
        if not path.exists():
            errors.append(InputError("no such file or folder", path=str(path), hint="check the path"))
            continue
        if path.is_dir():
            sources.extend(_walk(path, forced, skipped))
            continue
        importer = forced or sniff_file(path)
        if importer is None:
            errors.append(
                NotASessionError(
                    "not a session file of any known agent",
                    path=str(path),
                    hint=f"pass --format with one of: {', '.join(i.name for i in all_importers())}",
                )
            )
            continue
        sources.append(Source(path, importer))
    return sources, skipped, errors


def _walk(root: Path, forced: Importer | None, skipped: list[str]) -> Iterator[Source]:
    claim = sniff_dir(root) if forced is None else (forced if forced.sniff_dir(root) else None)
    if claim is not None:
        yield Source(root, claim)
        return
    # os.walk includes hidden folders (such as .gemini and .opencode); sorted for a stable order.
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames.sort()
        kept = []
        for name in dirnames:
            sub = here / name
            owner = sniff_dir(sub) if forced is None else (forced if forced.sniff_dir(sub) else None)
            if owner is not None:
                yield Source(sub, owner)
            else:
                kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            file = here / name
            if forced is not None:
                head = _head(file)
                owner = forced if head is not None and forced.sniff_file(file, head) else None
            else:
                owner = sniff_file(file)
            if owner is None:
                skipped.append(str(file))
            else:
                yield Source(file, owner)


def _head(path: Path) -> bytes | None:
    from calib.importers import HEAD_BYTES

    try:
        with path.open("rb") as fh:
            return fh.read(HEAD_BYTES)
    except OSError:
        return None


def file_state(source: Source) -> FileState:
    """Size, modification time and a content fingerprint of a source (a folder: of every file in it).

    A SQLite database's `-wal` file holds commits not yet in the database file, so its size and
    modification time are part of the database's fingerprint.
    """
    path = source.path
    measure = dir_fingerprint if path.is_dir() else file_fingerprint
    size, mtime, fingerprint = measure(str(path))
    return FileState(
        path=str(path.resolve()),
        importer=source.importer.name,
        size=size,
        mtime_ns=mtime,
        fingerprint=fingerprint,
        session_uids=[],
        read_offset=None,
    )


def _input_error(source_path: Path, importer: str, exc: Exception) -> InputError:
    return InputError(
        f"cannot read this {importer} source: {type(exc).__name__}: {exc}",
        path=str(source_path),
        hint="the file may be damaged or from an unsupported version; other files were still imported",
    )


_READ_ERRORS = (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError, RecursionError)


def parse_source(source: Source) -> list[Record]:
    """Parse a whole source into records, turning unexpected failures into one-line input errors."""
    try:
        return list(source.importer.parse(source.path))
    except CalibError:
        raise
    except _READ_ERRORS as exc:
        raise _input_error(source.path, source.importer.name, exc) from exc


# -- parsing (in worker processes) -----------------------------------------------------------------


@dataclass(slots=True)
class _Task:
    index: int
    path: Path
    importer: str
    state: FileState
    before: FileState | None  # what the last ingest recorded; None forces a whole read
    nbytes: int


@dataclass(slots=True)
class _Done:
    """One parsed source: its rows (or the error), and where they sit in its chunk's tables."""

    index: int
    unit: FileWrite | None = None
    error: CalibError | None = None
    resumed: bool = False
    rows: dict[str, tuple[int, int]] = field(default_factory=dict)  # table -> (offset, length)


@dataclass(slots=True)
class _Chunk:
    """Sources parsed by one worker call: many small files share one conversion to Arrow."""

    index: int
    tasks: list[_Task]
    spool: str | None = None  # a folder to hand the tables over in (from a worker process)
    done: list[_Done] = field(default_factory=list)
    tables: Tables = field(default_factory=dict)
    spooled: list[str] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.tasks)

    def unspool(self) -> None:
        """Map the tables a worker left in the spool back (no copy) and remove their files."""
        if not self.spooled or self.spool is None:
            return
        import pyarrow as pa

        for table in self.spooled:
            name = os.path.join(self.spool, f"{self.index}.{table}.arrow")
            with pa.memory_map(name) as source:
                self.tables[table] = pa.ipc.open_stream(source).read_all()
            os.unlink(name)  # the mapping stays valid until the table is freed
        self.spooled = []

    def results(self) -> list[_Done]:
        """Each source's result, its rows sliced (without a copy) out of the chunk's tables."""
        for done in self.done:
            if done.unit is not None:
                done.unit.tables = {
                    table: self.tables[table].slice(offset, length)
                    for table, (offset, length) in done.rows.items()
                }
        return self.done


def _chunks(tasks: list[_Task], target: int) -> list[_Chunk]:
    """Consecutive tasks grouped until they hold about `target` source bytes (a big file alone)."""
    chunks: list[_Chunk] = []
    current: list[_Task] = []
    size = 0
    for task in tasks:
        current.append(task)
        size += task.nbytes
        if size >= target or len(current) >= 256:
            chunks.append(_Chunk(len(chunks), current))
            current, size = [], 0
    if current:
        chunks.append(_Chunk(len(chunks), current))
    return chunks


def _parse_columns(task: _Task) -> tuple[_Done, Columns | None]:
    """Parse one source into its rows in columns (or the error), updating `task.state`."""
    from calib.store.store import FileWrite, check_unique, records_to_columns

    importer = get_importer(task.importer)
    state = task.state
    try:
        reader = incremental(importer)
        increment = None
        if reader is not None:
            before = task.before
            if before is not None and before.read_offset is not None and before.resume is not None:
                increment = reader.parse_from(task.path, before.read_offset, before.resume)
            else:
                increment = reader.parse_from(task.path, 0, None)
        extra = None
        if increment is None:
            records = list(importer.parse(task.path))
            appended = False
        else:
            records = increment.records
            appended = increment.appended
            extra = increment.columns
            state.read_offset = increment.offset
            state.resume = increment.state or None
        state.session_uids = list(
            dict.fromkeys(r.session.uid for r in records if isinstance(r, ParsedSession))
        )
        if appended and task.before is not None:
            # The file still holds every session it held before, and the ones it has now.
            state.session_uids = list(dict.fromkeys([*task.before.session_uids, *state.session_uids]))
        columns = records_to_columns(records, extra)
        check_unique(columns)  # here, in parallel, rather than by the store's single writer
        return _Done(task.index, FileWrite({}, state, appended, unique=True), resumed=appended), columns
    except CalibError as exc:
        if exc.path is None:
            exc.path = str(task.path)
        return _Done(task.index, error=exc), None
    except _READ_ERRORS as exc:
        return _Done(task.index, error=_input_error(task.path, task.importer, exc)), None


def _parse_chunk(chunk: _Chunk) -> _Chunk:
    """Parse every source of a chunk and convert their rows to Arrow at once (worker or inline)."""
    import gc

    from calib.store.store import columns_to_tables, empty_columns

    # Parsing makes millions of objects and no reference cycles: the cycle collector would only
    # rescan them over and over (a fifth of the parse time).
    collect = gc.isenabled()
    gc.disable()
    try:
        merged = empty_columns()
        for task in chunk.tasks:
            done, columns = _parse_columns(task)
            chunk.done.append(done)
            if columns is None:
                continue
            for table, data in columns.items():
                into = merged[table]
                offset = len(next(iter(into.values())))
                length = len(next(iter(data.values())))
                for name, values in data.items():
                    into[name].extend(values)
                done.rows[table] = (offset, length)
        try:
            chunk.tables = columns_to_tables(merged)
        except _READ_ERRORS:
            # One source's rows cannot be stored as they are: find it by converting one at a time.
            return _parse_each(chunk)
        if chunk.spool is not None:
            _spool(chunk)
        return chunk
    finally:
        if collect:
            gc.enable()


def _parse_each(chunk: _Chunk) -> _Chunk:
    """A chunk parsed source by source, each with tables of its own (the slow path for bad rows)."""
    from calib.store.store import columns_to_tables

    out = _Chunk(chunk.index, chunk.tasks, chunk.spool)
    parts: list[Tables] = []
    for task in chunk.tasks:
        done, columns = _parse_columns(task)
        out.done.append(done)
        if columns is None:
            continue
        try:
            tables = columns_to_tables(columns)
        except _READ_ERRORS as exc:
            out.done[-1] = _Done(task.index, error=_input_error(task.path, task.importer, exc))
            continue
        parts.append(tables)
        done.rows = {t: (-len(parts), tables[t].num_rows) for t in tables}
    import pyarrow as pa

    # Stack the tables and turn each source's marker into its offset in the stack.
    offsets: dict[str, int] = {}
    stacked: dict[str, list[pa.Table]] = {}
    starts: list[dict[str, int]] = []
    for tables in parts:
        start = {}
        for table, rows in tables.items():
            start[table] = offsets.get(table, 0)
            offsets[table] = start[table] + rows.num_rows
            stacked.setdefault(table, []).append(rows)
        starts.append(start)
    out.tables = {t: pa.concat_tables(v) for t, v in stacked.items()}
    for done in out.done:
        if done.rows:
            n = -next(iter(done.rows.values()))[0] - 1
            done.rows = {t: (starts[n][t], length) for t, (_, length) in done.rows.items()}
    if out.spool is not None:
        _spool(out)
    return out


def _spool(chunk: _Chunk) -> None:
    """Leave the chunk's tables in its spool folder as Arrow IPC files, for the parent to map.

    Sending them through the pool's pipe costs the parent a copy per 64 KB read and one more per
    unpickle; a file in RAM-backed /dev/shm costs one write here and nothing there.
    """
    import pyarrow as pa

    assert chunk.spool is not None
    for table, rows in chunk.tables.items():
        with (
            pa.OSFile(os.path.join(chunk.spool, f"{chunk.index}.{table}.arrow"), "wb") as sink,
            pa.ipc.new_stream(sink, rows.schema) as writer,
        ):
            writer.write_table(rows)
        chunk.spooled.append(table)
    chunk.tables = {}


def _parse_task(task: _Task) -> _Done:
    """Parse one source on its own, here."""
    return _parse_chunk(_Chunk(0, [task])).results()[0]


class _Budget:
    """Blocks the feeding of work while too many source bytes are parsed but not yet written.

    Bytes `held` in the batch being gathered are only released once that batch is written, which
    needs more work fed first: so the feeding waits only while other bytes are still to be released.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.held = 0
        self.cond = threading.Condition()

    def _fits(self, n: int) -> bool:
        return self.used <= self.held or self.used + n <= self.limit

    def acquire(self, n: int) -> None:
        with self.cond:
            while not self._fits(n):
                self.cond.wait()
            self.used += n

    def try_acquire(self, n: int) -> bool:
        with self.cond:
            if not self._fits(n):
                return False
            self.used += n
            return True

    def wait(self) -> None:
        """Until some bytes are released."""
        with self.cond:
            used = self.used
            while self.used >= used and self.used > self.held:
                self.cond.wait()

    def hold(self, n: int) -> None:
        with self.cond:
            self.held += n
            self.cond.notify_all()

    def release(self, n: int, held: bool = False) -> None:
        with self.cond:
            if held:
                self.held -= n
            else:
                self.used -= n
            self.cond.notify_all()


def _run_tasks(
    tasks: list[_Task], workers: int, budget: _Budget, forked: threading.Event | None = None
) -> Iterator[_Done]:
    """Parse tasks in order: inline when small, else in `workers` forked processes.

    The caller releases each source's bytes from `budget` once its rows are written, so that
    parsing never runs more than the budget ahead of writing. `forked` is set once the workers are
    forked (at once when there are none): from then on other threads may load and open DuckDB.
    """
    total = sum(t.nbytes for t in tasks)
    if workers <= 1 or len(tasks) < 2 or total < PARALLEL_MIN_BYTES:
        if forked is not None:
            forked.set()
        for chunk in _chunks(tasks, CHUNK_BYTES):
            budget.acquire(chunk.nbytes)
            yield from _parse_chunk(chunk).results()
        return
    import multiprocessing
    import shutil
    import tempfile
    from collections import deque
    from concurrent.futures import Future, ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # Enough chunks to keep every worker busy, few enough that converting to Arrow is done in bulk.
    chunks = deque(_chunks(tasks, max(1 << 20, min(CHUNK_BYTES, total // (workers * 8)))))
    shm = "/dev/shm"
    spool = tempfile.mkdtemp(prefix="calib-ingest-", dir=shm if os.path.isdir(shm) else None)
    context = multiprocessing.get_context("fork")
    pending: deque[tuple[_Chunk, Future[_Chunk]]] = deque()

    def pool() -> ProcessPoolExecutor:
        # fork: the workers start at once with calib and the importers already imported. They only
        # parse (no DuckDB), so the threads of the parent that fork does not copy are never missed.
        return ProcessPoolExecutor(
            min(workers, len(chunks) or 1), mp_context=context, initializer=_worker_started
        )

    # Loaded once here rather than once per worker after the fork (with numpy it takes 0.2 s).
    import pyarrow  # noqa: F401

    executor = pool()
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
            while chunks or pending:
                # Hand out work while the budget allows; never block here, since only this thread
                # moves parsed rows on to the writer that frees the budget.
                while chunks and budget.try_acquire(chunks[0].nbytes):
                    chunk = chunks.popleft()
                    chunk.spool = spool
                    pending.append((chunk, executor.submit(_parse_chunk, chunk)))
                if forked is not None:
                    forked.set()  # the first submit forked every worker
                if not pending:
                    budget.wait()  # everything parsed is with the writer: wait for it to free some
                    continue
                sent, future = pending.popleft()
                try:
                    done = future.result()
                except BrokenProcessPool:
                    # A worker died (killed, out of memory) and took the pool with it: which source
                    # did it cannot be told, so the unfinished ones are parsed again one at a time.
                    executor.shutdown(wait=False, cancel_futures=True)
                    lost = [sent, *(c for c, _ in pending)]
                    pending.clear()
                    for chunk in lost:
                        yield from _isolated(chunk, spool, context)
                    executor = pool()
                    continue
                done.unspool()
                yield from done.results()
    finally:
        if forked is not None:
            forked.set()
        executor.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(spool, ignore_errors=True)


def _worker_started() -> None:
    """Parsing workers yield the CPU to the writer: with as many workers as cores, writing is the
    stage that finishes last, and parsing is already ahead of it by the in-flight budget.

    A worker converts chunk after chunk to Arrow: its allocator keeps the freed pages for the next
    chunk (`WORKER_ARROW_DECAY_MS`) rather than handing them back and faulting them in again.
    """
    import pyarrow as pa

    with contextlib.suppress(OSError, AttributeError):
        os.nice(WORKER_NICENESS)
    with contextlib.suppress(NotImplementedError):
        pa.jemalloc_set_decay_ms(WORKER_ARROW_DECAY_MS)


def _isolated(chunk: _Chunk, spool: str, context: Any) -> Iterator[_Done]:
    """Parse a chunk's sources each in a process of its own; a source that kills it fails alone."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    for task in chunk.tasks:
        alone = _Chunk(chunk.index, [task], spool)
        with ProcessPoolExecutor(1, mp_context=context) as executor:
            try:
                done = executor.submit(_parse_chunk, alone).result()
            except BrokenProcessPool:
                yield _Done(
                    task.index,
                    error=InputError(
                        "the process parsing this source stopped unexpectedly (out of memory?)",
                        path=str(task.path),
                        hint="ingest it alone, or with more memory; other files were still imported",
                    ),
                )
                continue
        done.unspool()
        yield from done.results()


# -- writing ---------------------------------------------------------------------------------------


class _Aborted(Exception):
    """A write inside a transaction that spans batches failed in DuckDB: the transaction is lost."""


def _write(store: Store, batch: list[tuple[_Task, FileWrite]], result: IngestResult, workers: int) -> None:
    """Write a batch in one transaction; if that fails, file by file so that only bad files fail.

    Inside a transaction opened by `Store.begin`, a failure that is not a CalibError may have
    aborted that transaction: it raises `_Aborted`, and the caller starts again without one.
    """
    if not batch:
        return
    try:
        result.add(store.write_batch([unit for _, unit in batch]))
        return
    except Exception as exc:  # any failure: find the file(s) behind it one by one
        _check_transaction(store, exc)
        if len(batch) == 1:
            _write_one(store, batch[0], result, workers, exc)
            return
    for item in batch:
        try:
            result.add(store.write_batch([item[1]]))
        except Exception as exc:
            _check_transaction(store, exc)
            _write_one(store, item, result, workers, exc)


def _commit(store: Store) -> None:
    try:
        store.commit()
    except Exception as exc:  # rolled back by `Store.commit`: its sources are written again
        raise _Aborted(str(exc)) from exc


def _check_transaction(store: Store, exc: Exception) -> None:
    if store.in_transaction and not isinstance(exc, CalibError):
        raise _Aborted(str(exc)) from exc


def _write_one(
    store: Store, item: tuple[_Task, FileWrite], result: IngestResult, workers: int, exc: Exception
) -> None:
    from calib.store.store import AppendConflict

    task, unit = item
    if isinstance(exc, AppendConflict) and unit.append:
        # The stored rows are not what this log was read on from: read it whole instead.
        task.before = None
        done = _parse_task(task)
        if done.unit is not None:
            try:
                result.add(store.write_batch([done.unit]))
                return
            except Exception as again:
                _check_transaction(store, again)
                exc = again
        elif done.error is not None:
            result.errors.append(done.error)
            return
    if isinstance(exc, CalibError):
        error: CalibError = exc
        if error.path is None:
            error.path = str(task.path)
    else:
        error = StoreError(
            f"cannot store the rows of this source: {str(exc).splitlines()[0]}",
            path=str(task.path),
            hint="report it with the file if you can; other files were still imported",
        )
    result.errors.append(error)


# -- the pipeline ----------------------------------------------------------------------------------


def _unchanged(before: FileState | None, state: FileState) -> bool:
    return before is not None and (before.size, before.mtime_ns, before.fingerprint, before.importer) == (
        state.size,
        state.mtime_ns,
        state.fingerprint,
        state.importer,
    )


def ingest(
    paths: Sequence[str | os.PathLike[str]] = (),
    *,
    store: Store | None = None,
    db: str | os.PathLike[str] | None = None,
    format: str | None = None,
    full: bool = False,
    progress: Progress | None = None,
    workers: int | None = None,
) -> IngestResult:
    """Import the given files and folders (or every agent's default folders) into the store.

    Each source is parsed completely before anything is written, and written in one transaction
    with other sources; a bad file adds nothing and never stops the others. Unchanged files (same
    size, modification time and fingerprint as at the last ingest) are not parsed again unless
    `full` is set; an append-only log is read on from where the last ingest stopped. `workers`
    parse in parallel (default: one per core).
    """
    resolved = [Path(p) for p in paths] if paths else default_paths()
    if not resolved:
        raise UsageError(
            "no path given and no agent data found in the default folders",
            hint="pass the folder that holds your sessions, e.g. `calib ingest ~/.gemini`",
        )
    owned = store is None
    db_path = Path(db) if db is not None else default_db_path()
    if owned and not full:
        same = unchanged_since_last_ingest(resolved, db_path, format)
        if same is not None:
            return IngestResult(**same)
    # Taken before anything is read, so that a change made while this run reads shows next time.
    tree = tree_snapshot(resolved) if owned else None
    sources, skipped, errors = find_sources(resolved, format)
    result = IngestResult(skipped=skipped, errors=errors, files=len(sources))
    if store is not None and store.in_transaction:
        raise UsageError("the store has a transaction open", hint="commit or roll it back before ingesting")
    # A store that does not exist yet holds nothing to compare with: it is created by the writer
    # while the first sources are parsed, rather than before.
    lazy = _LazyStore(store, db_path, deferred=owned and not db_path.exists())
    states: list[tuple[Source, FileState]] = []
    try:
        known = {} if lazy.deferred else lazy.get().file_states()
        tasks: list[_Task] = []
        done_count = 0
        for source in sources:
            try:
                state = file_state(source)
            except OSError as exc:
                result.errors.append(InputError(f"cannot read: {exc.strerror}", path=str(source.path)))
                done_count += 1
                continue
            states.append((source, state))
            before = known.get(state.path)
            if not full and _unchanged(before, state):
                result.unchanged += 1
                done_count += 1
                continue
            task = _Task(len(tasks), source.path, source.importer.name, state, None if full else before, 0)
            task.nbytes = state.size
            tasks.append(task)
        total = len(sources)
        if progress is not None:
            progress(done_count, total, "")
        _ingest_tasks(lazy, tasks, result, workers or os.cpu_count() or 1, progress, done_count, total)
        if progress is not None:
            progress(total, total, "")
    finally:
        if owned:
            lazy.close()
    if tree is not None:
        write_manifest(
            db_path,
            resolved,
            format,
            tree,
            [(str(src.path), st.importer, st.size, st.mtime_ns, st.fingerprint) for src, st in states],
            result.skipped,
            ok=not result.errors,  # files that failed are read again next time: no shortcut then
        )
    return result


class _LazyStore:
    """The store an ingest writes to, opened (created, if `deferred`) by whichever thread first needs it."""

    def __init__(self, store: Store | None, path: Path, *, deferred: bool) -> None:
        self._store = store
        self.path = path
        self.deferred = deferred and store is None
        self._lock = threading.Lock()

    def get(self) -> Store:
        with self._lock:
            if self._store is None:
                self._store = open_store(self.path)
            return self._store

    def close(self) -> None:
        """Close the store (creating it first if nothing did: an ingest always leaves one)."""
        self.get().close()


@contextlib.contextmanager
def _writer_settings(store: Store) -> Iterator[None]:
    """DuckDB settings for ingest's writer, and the connection's own ones back afterwards.

    DuckDB's own threads would only compete with the parsing workers for the cores, and an Arrow
    insert on one thread costs less CPU than on several. Its cache of the blocks just written would
    grow with the store: capped, memory stays flat however much is ingested. Of its string
    compressions, FSST (alone, in dictionaries, or ZSTD) halves the write speed of part texts and
    uids for a store 6% smaller: dictionaries and bit-packing stay on.
    """
    settings = store.con.execute(
        "SELECT current_setting('threads'), current_setting('memory_limit'), "
        "current_setting('disabled_compression_methods')"
    ).fetchone() or (1, None, "")
    store.con.execute("SET threads = 1")
    store.con.execute(f"SET memory_limit = '{DUCKDB_MEMORY_LIMIT}'")
    store.con.execute(f"SET disabled_compression_methods = '{INGEST_DISABLED_COMPRESSION}'")
    try:
        yield
    finally:
        store.con.execute(f"SET threads = {int(settings[0])}")
        if settings[1]:
            store.con.execute("SET memory_limit = ?", [str(settings[1])])
        store.con.execute("SET disabled_compression_methods = ?", [str(settings[2] or "")])


@dataclass
class _Written:
    """What the writer stored for a set of sources (final once their transaction commits)."""

    result: IngestResult = field(default_factory=IngestResult)
    tasks: list[int] = field(default_factory=list)

    def merge(self, other: _Written) -> None:
        self.result.merge(other.result)
        self.tasks.extend(other.tasks)


def _ingest_tasks(
    lazy: _LazyStore,
    tasks: list[_Task],
    result: IngestResult,
    workers: int,
    progress: Progress | None,
    done_count: int,
    total: int,
    span: int = TRANSACTION_BYTES,
) -> None:
    """Parse the tasks and write their rows; writing overlaps parsing in a thread.

    Batches are written inside transactions of about `span` source bytes (0: one per batch). If
    DuckDB aborts one of those, it is rolled back, and its sources and the ones not yet written are
    ingested again with a transaction per batch (the slower path, where a batch that fails is
    written file by file).
    """
    import queue

    if not tasks:
        return
    batches: queue.Queue[list[tuple[_Task, FileWrite]] | None] = queue.Queue(maxsize=1)
    budget = _Budget(IN_FLIGHT_BYTES)
    written = _Written()  # committed
    failure: list[BaseException] = []
    aborted: list[_Aborted] = []
    # DuckDB is loaded and opened only once the workers are forked: a fork taken while this thread
    # is inside DuckDB would leave the children with its locks held.
    forked = threading.Event()

    ended = threading.Event()  # the writer has taken the last batch

    def writer() -> None:
        forked.wait()
        try:
            store = lazy.get()
            with _writer_settings(store):
                write_all(store)
        except BaseException as exc:  # re-raised in the calling thread
            failure.append(exc)
            # Batches still coming free their budget, so that the parsing side can finish.
            while not ended.is_set() and (item := batches.get()) is not None:
                budget.release(sum(task.nbytes for task, _ in item))

    def write_all(store: Store) -> None:
        open_tx = _Written()  # written inside the transaction still open
        open_bytes = 0
        try:
            while (batch := batches.get()) is not None:
                nbytes = sum(task.nbytes for task, _ in batch)
                try:
                    if failure or aborted:
                        continue
                    if span and not store.in_transaction:
                        store.begin()
                    _write(store, batch, open_tx.result, workers)
                    open_tx.result.read += len(batch)
                    open_tx.result.resumed += sum(unit.append for _, unit in batch)
                    open_tx.tasks.extend(task.index for task, _ in batch)
                    open_bytes += nbytes
                    if open_bytes >= span:
                        if store.in_transaction:
                            _commit(store)
                        written.merge(open_tx)
                        open_tx, open_bytes = _Written(), 0
                except _Aborted as exc:
                    aborted.append(exc)
                except BaseException as exc:  # re-raised in the calling thread
                    failure.append(exc)
                finally:
                    budget.release(nbytes)
            ended.set()
            if store.in_transaction and not (failure or aborted):
                _commit(store)
                written.merge(open_tx)
            if not (failure or aborted):
                # Under the settings above rather than at close under the connection's own: a small
                # ingest's last commit stays in the log, and writing it out then took twice as long.
                # The rows are committed already: if this fails, the log keeps them until the next try.
                import duckdb

                with contextlib.suppress(duckdb.Error):
                    store.checkpoint()
        except _Aborted as exc:  # the last commit failed: nothing of it was stored
            aborted.append(exc)
        finally:
            if store.in_transaction:
                store.rollback()

    thread = threading.Thread(target=writer, name="calib-ingest-writer", daemon=True)
    thread.start()
    parse_failed: set[int] = set()
    try:
        batch: list[tuple[_Task, FileWrite]] = []
        batch_bytes = 0
        for done in _run_tasks(tasks, workers, budget, forked):
            task = tasks[done.index]
            done_count += 1
            if progress is not None:
                progress(min(done_count, total), total, str(task.path))
            if done.error is not None or done.unit is None:
                if done.error is not None:
                    result.errors.append(done.error)
                parse_failed.add(done.index)
                budget.release(task.nbytes)
                continue
            batch.append((task, done.unit))
            batch_bytes += task.nbytes
            budget.hold(task.nbytes)
            if batch_bytes >= BATCH_BYTES:
                budget.release(batch_bytes, held=True)
                batches.put(batch)
                batch, batch_bytes = [], 0
            if failure or aborted:
                break
        if batch:
            budget.release(batch_bytes, held=True)
            batches.put(batch)
    finally:
        forked.set()
        batches.put(None)
        thread.join()
    if failure:
        raise failure[0]
    result.merge(written.result)
    if not aborted:
        return
    final = parse_failed | set(written.tasks)
    left = [t for t in tasks if t.index not in final]
    for index, task in enumerate(left):  # a fresh numbering: `_run_tasks` looks tasks up by index
        task.index = index
    _ingest_tasks(lazy, left, result, workers, progress, total - len(left), total, span=0)


# The package exports `ingest` under this name: `calib.ingest` is the ingest layer's package.
ingest_sessions = ingest
