"""Writing parsed rows into the store: batches in transactions, and what to do when one fails.

A batch that fails is written again file by file, so that a bad file adds nothing and the others
still land. Inside a transaction spanning batches, a failure DuckDB raised (not a CalibError) may have
aborted the transaction: `Aborted` tells the pipeline to write those sources again without one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from calib.core.errors import CalibError, StoreError
from calib.ingest.result import IngestResult
from calib.ingest.workers import Task, parse_task
from calib.store.store import Store
from calib.store.writes import AppendConflict, FileWrite

# DuckDB compressions not tried while ingest writes (see `_writer_settings`).
INGEST_DISABLED_COMPRESSION = "fsst,zstd,dict_fsst"


class Aborted(Exception):
    """A write inside a transaction that spans batches failed in DuckDB: the transaction is lost."""


def write_batch(
    store: Store, batch: list[tuple[Task, FileWrite]], result: IngestResult, workers: int
) -> None:
    """Write a batch in one transaction; if that fails, file by file so that only bad files fail.

    Inside a transaction opened by `Store.begin`, a failure that is not a CalibError may have
    aborted that transaction: it raises `Aborted`, and the caller starts again without one.
    """
    if not batch:
        return
    try:
        result.add(store.write_batch([unit for _, unit in batch]))
        return
    except Exception as exc:  # any failure: find the file(s) behind it one by one
        check_transaction(store, exc)
        if len(batch) == 1:
            write_one(store, batch[0], result, workers, exc)
            return
    for item in batch:
        try:
            result.add(store.write_batch([item[1]]))
        except Exception as exc:
            check_transaction(store, exc)
            write_one(store, item, result, workers, exc)


def commit(store: Store) -> None:
    try:
        store.commit()
    except Exception as exc:  # rolled back by `Store.commit`: its sources are written again
        raise Aborted(str(exc)) from exc


def check_transaction(store: Store, exc: Exception) -> None:
    if store.in_transaction and not isinstance(exc, CalibError):
        raise Aborted(str(exc)) from exc


def write_one(
    store: Store, item: tuple[Task, FileWrite], result: IngestResult, workers: int, exc: Exception
) -> None:
    task, unit = item
    if isinstance(exc, AppendConflict) and unit.append:
        # The stored rows are not what this log was read on from: read it whole instead.
        task.before = None
        done = parse_task(task)
        if done.unit is not None:
            try:
                result.add(store.write_batch([done.unit]))
                return
            except Exception as again:
                check_transaction(store, again)
                exc = again
        elif done.error is not None:
            result.errors.append(done.error)
            return
    if isinstance(exc, CalibError):
        error: CalibError = exc
        if error.path is None:
            error.path = str(task.path)
    elif type(exc).__name__ == "OutOfMemoryException":
        # DuckDB ran out of the memory calib allows it (`calib.store.store.DEFAULT_MEMORY_LIMIT`)
        error = StoreError(
            f"cannot store the rows of this source: {str(exc).splitlines()[0]}",
            path=str(task.path),
            hint="set CALIB_MEMORY_LIMIT to a larger size, such as 1GB; other files were still imported",
        )
    else:
        error = StoreError(
            f"cannot store the rows of this source: {str(exc).splitlines()[0]}",
            path=str(task.path),
            hint="report it with the file if you can; other files were still imported",
        )
    result.errors.append(error)


@contextlib.contextmanager
def writer_settings(store: Store) -> Iterator[None]:
    """DuckDB settings for ingest's writer, and the connection's own ones back afterwards.

    DuckDB's own threads would only compete with the parsing workers for the cores, and an Arrow
    insert on one thread costs less CPU than on several. (Its memory is the store's cap,
    `calib.store.store.DEFAULT_MEMORY_LIMIT`: the cache of the blocks just written would otherwise
    grow with the store; 160 MB writes as fast as 256 MB did, 128 MB costs 10% more CPU.) Of its string
    compressions, FSST (alone, in dictionaries, or ZSTD) halves the write speed of part texts and
    uids for a store 6% smaller: dictionaries and bit-packing stay on.
    """
    settings = store.con.execute(
        "SELECT current_setting('threads'), current_setting('disabled_compression_methods')"
    ).fetchone() or (1, "")
    store.con.execute("SET threads = 1")
    store.con.execute(f"SET disabled_compression_methods = '{INGEST_DISABLED_COMPRESSION}'")
    try:
        yield
    finally:
        store.con.execute(f"SET threads = {int(settings[0])}")
        store.con.execute("SET disabled_compression_methods = ?", [str(settings[1] or "")])


@dataclass
class Written:
    """What the writer stored for a set of sources (final once their transaction commits)."""

    result: IngestResult = field(default_factory=IngestResult)
    tasks: list[int] = field(default_factory=list)

    def merge(self, other: Written) -> None:
        self.result.merge(other.result)
        self.tasks.extend(other.tasks)
