"""The ingest pipeline: find sources, pick an importer for each, parse, and write them atomically.

Speed: sources are parsed in forked worker processes (one per core), many small files per call, into
Arrow tables handed over through RAM-backed files; a writer thread puts the rows of many files into
the store a batch of about `BATCH_BYTES` of sources at a time while parsing goes on (smaller ones
near the end, so that little is left to write once parsing ends), in transactions of about
`TRANSACTION_BYTES`, with DuckDB on one thread and its memory capped, so memory stays flat however
much is ingested. A batch that fails is written again file by file, so a bad file adds
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
import gc
import os
import queue
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeAlias

from calib.core.errors import CalibError, InputError, UsageError
from calib.core.home import expand_home
from calib.core.paths import readable_path
from calib.core.progress import Progress
from calib.ingest.cache import tree_snapshot, unchanged_since_last_ingest, write_manifest
from calib.ingest.result import IngestResult
from calib.ingest.sources import Source, default_paths, file_state, find_sources
from calib.ingest.workers import Budget, Task, run_tasks
from calib.ingest.writer import Aborted, Written, commit, write_batch, writer_settings
from calib.store.store import Store, check_store_file, default_db_path, open_store
from calib.store.writes import FileState, FileWrite

# Source bytes whose rows are gathered and written at once. (With `IN_FLIGHT_BYTES` this bounds what
# ingest holds: at 64 and 128 MB its process tree peaked at 600 MB on a 317 MB corpus, at 32 and 64 MB
# at 550 MB, for the same CPU.)
BATCH_BYTES = 32 << 20
# Near the end batches shrink to half the bytes still to parse, down to this: what is left to write
# once parsing ends is a small batch, not up to a whole one.
LAST_BATCH_BYTES = 4 << 20
# Source bytes written in one transaction (of several batches; see `Store.begin`).
TRANSACTION_BYTES = 256 << 20
# Source bytes parsed and not yet written (beyond one batch being gathered): bounds memory.
IN_FLIGHT_BYTES = 64 << 20

# One file or folder to ingest: text, bytes (a Linux name is bytes) or a path object.
PathArg: TypeAlias = str | bytes | os.PathLike[str] | os.PathLike[bytes]


# -- the pipeline ----------------------------------------------------------------------------------


def _unchanged(before: FileState | None, state: FileState) -> bool:
    return before is not None and (before.size, before.mtime_ns, before.fingerprint, before.importer) == (
        state.size,
        state.mtime_ns,
        state.fingerprint,
        state.importer,
    )


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """The cycle collector off while ingest runs (on again after, if it was).

    Ingest makes no reference cycles, but it makes objects by the hundred thousand (Arrow tables,
    rows, results) and imports DuckDB and pyarrow while it runs: the collector would only scan them
    again and again. Parsing workers turn it back on (`calib.ingest.workers`).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def given_paths(paths: PathArg | Iterable[PathArg]) -> list[Path]:
    """The paths to ingest as `Path`s with `~` expanded: a lone path is one path, not its characters.

    Raises `TypeError` for what is not a path nor an iterable of paths, and `UsageError` for an empty
    path (an unset shell variable), before anything is read.
    """
    if isinstance(paths, str | bytes | os.PathLike):
        paths = [paths]
    try:
        given = list(paths)
    except TypeError:
        raise TypeError(f"paths must be a path or an iterable of paths, not {type(paths).__name__}") from None
    out = []
    for path in given:
        if not isinstance(path, str | bytes | os.PathLike):
            raise TypeError(f"paths must hold paths (str, bytes or os.PathLike), not {type(path).__name__}")
        text = os.fsdecode(path)  # bytes (and paths of bytes) decoded as Python decodes file names
        if not text:
            raise UsageError(
                "an empty path names no file or folder",
                hint="name the sessions to ingest (an unset shell variable expands to an empty path)",
            )
        out.append(expand_home(text))
    return out


def ingest(
    paths: PathArg | Iterable[PathArg] = (),
    *,
    store: Store | None = None,
    db: str | os.PathLike[str] | None = None,
    format: str | None = None,
    full: bool = False,
    progress: Progress | None = None,
    workers: int | None = None,
    raise_on_error: bool = False,
) -> IngestResult:
    """Import the given files and folders (or every agent's default folders) into the store.

    `paths` is one path or an iterable of them (see `given_paths`); paths (and `db`) may start with
    `~`, as on the command line. Each source is parsed completely
    before anything is written, and written in one transaction with other sources; a bad file adds
    nothing and never stops the others: its error is in the result's `errors` (and its repr), and
    `raise_on_error=True` raises it once every other source is stored (as `result.raise_for_errors()`
    does). Lines a source's importer left out (a damaged line, a last line still being written) are
    the result's `warnings`. Unchanged files (same size, modification time and fingerprint as at
    the last ingest) are not parsed again unless `full` is set; an append-only log is read on from
    where the last ingest stopped. `workers` parse in parallel (default: one per core).
    """
    resolved = given_paths(paths)
    with _no_cycle_collection():
        result = _ingest(resolved, store, db, format, full, progress, workers)
    if raise_on_error:
        result.raise_for_errors()
    return result


def _ingest(
    paths: list[Path],
    store: Store | None,
    db: str | os.PathLike[str] | None,
    format: str | None,
    full: bool,
    progress: Progress | None,
    workers: int | None,
) -> IngestResult:
    resolved = paths or default_paths()
    if not resolved:
        raise UsageError(
            "no path given and no agent data found in the default folders",
            hint="pass the folder that holds your sessions, e.g. `calib ingest ~/.gemini`",
        )
    owned = store is None
    db_path = expand_home(db) if db is not None else default_db_path()
    if owned:
        check_store_file(db_path)  # another program's database is refused before anything is read
    if owned and not full:
        same = unchanged_since_last_ingest(resolved, db_path, format)
        if same is not None:
            return IngestResult(**same)
    # Taken before anything is read, so that a change made while this run reads shows next time.
    tree = tree_snapshot(resolved) if owned else None
    walked: list[CalibError] = []  # what walking skipped and says why (a FIFO named like a log)
    sources, skipped, errors = find_sources(resolved, format, walked)
    result = IngestResult(skipped=skipped, errors=errors, files=len(sources), warnings=walked)
    if store is not None and store.in_transaction:
        raise UsageError("the store has a transaction open", hint="commit or roll it back before ingesting")
    # A store that does not exist yet holds nothing to compare with: it is created by the writer
    # while the first sources are parsed, rather than before.
    lazy = _LazyStore(store, db_path, deferred=owned and not db_path.exists())
    states: list[tuple[Source, FileState]] = []
    try:
        known = {} if lazy.deferred else lazy.get().file_states()
        tasks: list[Task] = []
        done_count = 0
        real_folders: dict[str, str] = {}
        for source in sources:
            try:
                state = file_state(source, real_folders)
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
            task = Task(len(tasks), source.path, source.importer.name, state, None if full else before, 0)
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
    if result.warnings:  # a source parsed twice (after an aborted transaction) warns once
        result.warnings = list({(w.path, w.line, str(w)): w for w in result.warnings}.values())
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


def _ingest_tasks(
    lazy: _LazyStore,
    tasks: list[Task],
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
    if not tasks:
        return
    batches: queue.Queue[list[tuple[Task, FileWrite]] | None] = queue.Queue(maxsize=1)
    budget = Budget(IN_FLIGHT_BYTES)
    written = Written()  # committed
    failure: list[BaseException] = []
    aborted: list[Aborted] = []
    # DuckDB is loaded and opened only once the workers are forked: a fork taken while this thread
    # is inside DuckDB would leave the children with its locks held.
    forked = threading.Event()

    ended = threading.Event()  # the writer has taken the last batch

    def writer() -> None:
        forked.wait()
        try:
            store = lazy.get()
            with writer_settings(store):
                write_all(store)
        except BaseException as exc:  # re-raised in the calling thread
            failure.append(exc)
            # Batches still coming free their budget, so that the parsing side can finish.
            while not ended.is_set() and (item := batches.get()) is not None:
                budget.release(sum(task.nbytes for task, _ in item))

    def write_all(store: Store) -> None:
        open_tx = Written()  # written inside the transaction still open
        open_bytes = 0
        try:
            while (batch := batches.get()) is not None:
                nbytes = sum(task.nbytes for task, _ in batch)
                try:
                    if failure or aborted:
                        continue
                    if span and not store.in_transaction:
                        store.begin()
                    write_batch(store, batch, open_tx.result, workers)
                    open_tx.result.read += len(batch)
                    open_tx.result.resumed += sum(unit.append for _, unit in batch)
                    open_tx.result.masked += sum(task.masked for task, _ in batch)
                    open_tx.result.recovered += sum(task.recovered for task, _ in batch)
                    open_tx.tasks.extend(task.index for task, _ in batch)
                    open_bytes += nbytes
                    if open_bytes >= span:
                        if store.in_transaction:
                            commit(store)
                        written.merge(open_tx)
                        open_tx, open_bytes = Written(), 0
                except Aborted as exc:
                    aborted.append(exc)
                except BaseException as exc:  # re-raised in the calling thread
                    failure.append(exc)
                finally:
                    budget.release(nbytes)
            ended.set()
            if store.in_transaction and not (failure or aborted):
                commit(store)
                written.merge(open_tx)
            if not (failure or aborted):
                # Under the settings above rather than at close under the connection's own: a small
                # ingest's last commit stays in the log, and writing it out then took twice as long.
                # The rows are committed already: if this fails, the log keeps them until the next try.
                import duckdb

                with contextlib.suppress(duckdb.Error):
                    store.checkpoint()
        except Aborted as exc:  # the last commit failed: nothing of it was stored
            aborted.append(exc)
        finally:
            if store.in_transaction:
                store.rollback()

    thread = threading.Thread(target=writer, name="calib-ingest-writer", daemon=True)
    thread.start()
    parse_failed: set[int] = set()
    unparsed = sum(task.nbytes for task in tasks)
    try:
        batch: list[tuple[Task, FileWrite]] = []
        batch_bytes = 0
        for done in run_tasks(tasks, workers, budget, forked):
            task = tasks[done.index]
            unparsed -= task.nbytes
            done_count += 1
            if done.warnings:
                result.warnings.extend(done.warnings)
            if done.more_warnings:  # set, not added: a source parsed twice (see below) counts once
                result.warnings_left_out[readable_path(task.path)] = done.more_warnings
            if progress is not None:
                progress(min(done_count, total), total, str(task.path))
            if done.error is not None or done.unit is None:
                if done.error is not None:
                    result.errors.append(done.error)
                parse_failed.add(done.index)
                budget.release(task.nbytes)
                continue
            task.masked, task.recovered = done.masked, done.recovered
            batch.append((task, done.unit))
            batch_bytes += task.nbytes
            budget.hold(task.nbytes)
            if batch_bytes >= min(BATCH_BYTES, max(LAST_BATCH_BYTES, unparsed // 2)):
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
    for index, task in enumerate(left):  # a fresh numbering: `run_tasks` looks tasks up by index
        task.index = index
    _ingest_tasks(lazy, left, result, workers, progress, total - len(left), total, span=0)


# The package exports `ingest` under this name: `calib.ingest` is the ingest layer's package.
ingest_sessions = ingest
