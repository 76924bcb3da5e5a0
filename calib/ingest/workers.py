"""Parsing sources into the store's rows, in forked worker processes or inline.

Sources are parsed in worker processes (one per core), many small files per call, into Arrow tables
handed back through RAM-backed files (`/dev/shm`). A chunk whose rows cannot be converted is parsed
again source by source; a worker that dies (out of memory, killed) costs only the source it was on.
Parsing never runs more than an in-flight budget ahead of writing (`Budget`).
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import stat
import sys
import threading
import time
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calib.core.errors import CalibError, InputError, InputWarning
from calib.core.memory import megabytes, memory_error
from calib.core.paths import file_kind, readable_path
from calib.core.records import ParsedSession, Record
from calib.core.tally import WarningTally
from calib.importers import get_importer, incremental
from calib.ingest.sources import not_regular_error
from calib.store.columns import Columns, Tables, columns_to_tables, empty_columns, records_to_columns
from calib.store.writes import FileState, FileWrite

# Below this much to parse, worker processes cost more than they save.
PARALLEL_MIN_BYTES = 4 << 20
# How much lower the parsing workers' scheduling priority is than the writer's.
WORKER_NICENESS = 10
# How long a parsing worker's Arrow allocator keeps freed pages for reuse (see `_worker_started`).
WORKER_ARROW_DECAY_MS = 10_000
# Source bytes parsed per worker call: small files share one conversion to Arrow.
CHUNK_BYTES = 8 << 20


def input_error(source_path: Path, importer: str, exc: Exception) -> InputError:
    return InputError(
        f"cannot read this {importer} source: {type(exc).__name__}: {exc}",
        path=str(source_path),
        hint="the file may be damaged or from an unsupported version; other files were still imported",
    )


READ_ERRORS = (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError, RecursionError)


@dataclass(slots=True)
class Task:
    index: int
    path: Path
    importer: str
    state: FileState
    before: FileState | None  # what the last ingest recorded; None forces a whole read
    nbytes: int
    masked: int = 0  # masked tool outputs in its sessions (`Done.masked`), counted once written
    recovered: int = 0


@dataclass(slots=True)
class Done:
    """One parsed source: its rows (or the error), and where they sit in its chunk's tables."""

    index: int
    unit: FileWrite | None = None
    error: CalibError | None = None
    # What the importer left out, and where: the first few in full (`WarningTally`), the rest counted.
    warnings: list[InputWarning] = field(default_factory=list)
    more_warnings: int = 0
    resumed: bool = False
    rows: dict[str, tuple[int, int]] = field(default_factory=dict)  # table -> (offset, length)
    # masked tool outputs in its sessions, and those read back (the sessions' `meta` counts them)
    masked: int = 0
    recovered: int = 0


@dataclass(slots=True)
class Chunk:
    """Sources parsed by one worker call: many small files share one conversion to Arrow."""

    index: int
    tasks: list[Task]
    spool: str | None = None  # a folder to hand the tables over in (from a worker process)
    done: list[Done] = field(default_factory=list)
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

    def results(self) -> list[Done]:
        """Each source's result, its rows sliced (without a copy) out of the chunk's tables."""
        for done in self.done:
            if done.unit is not None:
                done.unit.tables = {
                    table: self.tables[table].slice(offset, length)
                    for table, (offset, length) in done.rows.items()
                }
        return self.done


def _chunks(tasks: list[Task], target: int) -> list[Chunk]:
    """Consecutive tasks grouped until they hold about `target` source bytes (a big file alone)."""
    chunks: list[Chunk] = []
    current: list[Task] = []
    size = 0
    for task in tasks:
        current.append(task)
        size += task.nbytes
        if size >= target or len(current) >= 256:
            chunks.append(Chunk(len(chunks), current))
            current, size = [], 0
    if current:
        chunks.append(Chunk(len(chunks), current))
    return chunks


def _parse_columns(task: Task) -> tuple[Done, Columns | None]:
    """Parse one source into its rows in columns (or the error), updating `task.state`."""
    importer = get_importer(task.importer)
    state = task.state
    try:
        mode = os.stat(task.path).st_mode
    except OSError:
        pass  # the importer's own read reports it
    else:
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # replaced since it was found: never opened
            return Done(task.index, error=not_regular_error(task.path, file_kind(mode))), None
    try:
        reader = incremental(importer)
        increment = None
        if reader is not None:
            before = task.before
            if before is not None and before.read_offset is not None and before.resume is not None:
                increment = reader.parse_from(task.path, before.read_offset, before.resume)
            else:
                increment = reader.parse_from(task.path, 0, None)
        parsed: Iterable[Record]
        if increment is None:
            parsed = importer.parse(task.path)
            appended = False
        else:
            parsed = increment.records
            appended = increment.appended
            state.read_offset = increment.offset
            state.resume = increment.state or None
        # Warnings (`InputWarning` records: lines left out of a source read anyway) are reported, not
        # stored, and only the first few in full: a log of a million damaged lines would otherwise cost
        # a million of them (one type check per record: records are sessions, not lines).
        warned = WarningTally(str(task.path))
        records: list[Record] = []
        for record in parsed:
            if isinstance(record, InputWarning):
                if record.path is None:
                    record.path = str(task.path)
                warned.append(record)
            else:
                records.append(record)
        # Stored as the store keeps text (a uid may hold a file name that is not UTF-8).
        state.session_uids = list(
            dict.fromkeys(readable_path(r.session.uid) for r in records if isinstance(r, ParsedSession))
        )
        if appended and task.before is not None:
            # The file still holds every session it held before, and the ones it has now.
            state.session_uids = list(dict.fromkeys([*task.before.session_uids, *state.session_uids]))
        # Laid out (and its uids checked) here, in parallel, rather than by the store's single writer.
        columns = records_to_columns(records)
        done = Done(task.index, FileWrite({}, state, appended), warnings=warned.kept, resumed=appended)
        done.more_warnings = warned.more
        for record in records:
            meta = record.session.meta if isinstance(record, ParsedSession) else None
            if meta:
                done.masked += int(meta.get("masked_tool_outputs") or 0)
                done.recovered += int(meta.get("recovered_tool_outputs") or 0)
        return done, columns
    except CalibError as exc:
        if exc.path is None:
            exc.path = str(task.path)
        return Done(task.index, error=exc), None
    except READ_ERRORS as exc:
        return Done(task.index, error=input_error(task.path, task.importer, exc)), None
    except MemoryError:
        # what the source's rows held is freed with this frame: the other sources go on
        return Done(task.index, error=memory_error(task.path, task.nbytes)), None


def _parse_chunk(chunk: Chunk) -> Chunk:
    """Parse every source of a chunk and convert their rows to Arrow at once (worker or inline)."""
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
            chunk.tables = _tables(merged)
        except READ_ERRORS:
            # One source's rows cannot be stored as they are: find it by converting one at a time.
            return _parse_each(chunk)
        if chunk.spool is not None:
            _spool(chunk)
        return chunk
    finally:
        if collect:
            gc.enable()


def _tables(columns: Columns) -> Tables:
    """`columns_to_tables`, with text that holds a file name's bytes that are not UTF-8 made storable."""
    try:
        return columns_to_tables(columns)
    except UnicodeEncodeError:
        # A source path, a project folder or an id taken from a name that is not UTF-8: stored with
        # those bytes as \xNN (`readable_path`), as every message shows it; other text is unchanged.
        return columns_to_tables(
            {
                table: {
                    name: [readable_path(v) if isinstance(v, str) else v for v in values]
                    if any(isinstance(v, str) and not v.isascii() for v in values)
                    else values
                    for name, values in data.items()
                }
                for table, data in columns.items()
            }
        )


def _parse_each(chunk: Chunk) -> Chunk:
    """A chunk parsed source by source, each with tables of its own (the slow path for bad rows)."""
    out = Chunk(chunk.index, chunk.tasks, chunk.spool)
    parts: list[Tables] = []
    for task in chunk.tasks:
        done, columns = _parse_columns(task)
        out.done.append(done)
        if columns is None:
            continue
        try:
            tables = _tables(columns)
        except READ_ERRORS as exc:
            out.done[-1] = Done(task.index, error=input_error(task.path, task.importer, exc))
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


def _spool(chunk: Chunk) -> None:
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


def parse_task(task: Task) -> Done:
    """Parse one source on its own, here."""
    return _parse_chunk(Chunk(0, [task])).results()[0]


class Budget:
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


def run_tasks(
    tasks: list[Task], workers: int, budget: Budget, forked: threading.Event | None = None
) -> Iterator[Done]:
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
    where = shm if os.path.isdir(shm) else tempfile.gettempdir()
    _remove_orphan_spools(where)
    spool = tempfile.mkdtemp(prefix=f"{_SPOOL_PREFIX}{os.getpid()}-", dir=where)
    context = multiprocessing.get_context("fork")
    pending: deque[tuple[Chunk, Future[Chunk]]] = deque()

    def pool() -> ProcessPoolExecutor:
        # fork: the workers start at once with calib and the importers already imported. They only
        # parse (no DuckDB), so the threads of the parent that fork does not copy are never missed.
        return ProcessPoolExecutor(
            min(workers, len(chunks) or 1),
            mp_context=context,
            initializer=_worker_started,
            initargs=(os.getpid(),),
        )

    # Loaded once here rather than once per worker after the fork (with numpy it takes 0.2 s).
    import pyarrow  # noqa: F401

    # Every object so far is frozen until the workers are forked: the workers' cycle collector then
    # never visits them, which would copy each page that holds one (the parent's own pages stay
    # shared, as `gc.freeze` documents).
    gc.freeze()
    frozen = True
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
                if frozen:  # the first submit forked every worker
                    gc.unfreeze()
                    frozen = False
                if forked is not None:
                    forked.set()
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
        if frozen:
            gc.unfreeze()
        if forked is not None:
            forked.set()
        executor.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(spool, ignore_errors=True)


_SPOOL_PREFIX = "calib-ingest-"


def _remove_orphan_spools(where: str) -> None:
    """Remove the spool folders of ingests that were killed (their pid is gone): they hold RAM."""
    import shutil

    try:
        names = [n for n in os.listdir(where) if n.startswith(_SPOOL_PREFIX)]
    except OSError:
        return
    for name in names:
        pid = name[len(_SPOOL_PREFIX) :].partition("-")[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(where, name), ignore_errors=True)
        except OSError:
            pass  # alive, another user's


def _die_with_parent(parent: int) -> None:
    """End this worker when the process that forked it ends, however it ends (SIGKILL included).

    Linux: the kernel sends SIGKILL on the parent's death (`prctl(PR_SET_PDEATHSIG)`; the fork is
    made by the parent's main thread, whose end is the process's). Elsewhere: a thread that watches
    the parent pid. Either way, a parent gone before this ran means exiting now.
    """
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            ok = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            ok = False
    else:
        ok = False
    if not ok:

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, name="calib-parent-watch", daemon=True).start()
    if os.getppid() != parent:
        os._exit(1)


_PR_SET_PDEATHSIG = 1


def _worker_started(parent: int) -> None:
    """Parsing workers die with the ingest that started them, and yield the CPU to its writer: with
    as many workers as cores, writing is the stage that finishes last, and parsing is already ahead
    of it by the in-flight budget.

    A worker converts chunk after chunk to Arrow: its allocators keep the freed pages for the next
    source and chunk (`WORKER_ARROW_DECAY_MS`, `_keep_freed_memory`) rather than handing them back
    and faulting them in again. The cycle collector, off in the ingest that forked it, is on again
    (`_parse_chunk` turns it off while it parses).
    """
    gc.enable()
    _die_with_parent(parent)
    import pyarrow as pa

    with contextlib.suppress(OSError, AttributeError):
        os.nice(WORKER_NICENESS)
    with contextlib.suppress(NotImplementedError):
        pa.jemalloc_set_decay_ms(WORKER_ARROW_DECAY_MS)
    _keep_freed_memory()


# glibc's `mallopt` parameters, and what a parsing worker sets them to (see `_keep_freed_memory`).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
WORKER_MALLOC_TRIM_BYTES = 256 << 20
WORKER_MALLOC_MMAP_BYTES = 32 << 20


def _keep_freed_memory() -> None:
    """Have glibc keep the memory a worker frees for its next source (Linux; elsewhere nothing).

    A source's bytes and its decoded JSON are freed once its rows are laid out; by default glibc
    hands the top of its heap back to the system, and serves a file's bytes from pages mapped for
    it alone, so that the next source faults all of them in again (and has them zeroed): a third of
    a worker's system time. Kept, they are reused; a worker's memory stays at what its largest
    chunk needed, which the chunk size bounds.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(_M_TRIM_THRESHOLD, WORKER_MALLOC_TRIM_BYTES)
        libc.mallopt(_M_MMAP_THRESHOLD, WORKER_MALLOC_MMAP_BYTES)
    except (OSError, AttributeError):
        pass


def _isolated(chunk: Chunk, spool: str, context: Any) -> Iterator[Done]:
    """Parse a chunk's sources each in a process of its own; a source that kills it fails alone."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    for task in chunk.tasks:
        alone = Chunk(chunk.index, [task], spool)
        with ProcessPoolExecutor(
            1, mp_context=context, initializer=_die_with_parent, initargs=(os.getpid(),)
        ) as executor:
            try:
                done = executor.submit(_parse_chunk, alone).result()
            except BrokenProcessPool:
                yield Done(
                    task.index,
                    error=InputError(
                        f"the process parsing this source ({megabytes(task.nbytes)}) stopped unexpectedly "
                        "(out of memory?)",
                        path=str(task.path),
                        hint="ingest it alone, or with more memory; other files were still imported",
                    ),
                )
                continue
        done.unspool()
        yield from done.results()
