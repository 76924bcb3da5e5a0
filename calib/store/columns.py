"""Records laid out as the store's rows: column lists, then Arrow tables, the form every write takes.

Ingest's parsing workers call these (in parallel, one source at a time) and hand the tables to the
store's single writer; `Store.write` calls them for records given directly. The columns and their
types are those of `calib.core.records.COLUMNS`; uids are checked distinct here, where the rows are
made, so the writer never compares them again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from calib.core.errors import StoreError
from calib.core.records import COLUMNS, TABLES, AgentEstimate, ParsedSession, Record

if TYPE_CHECKING:
    import pyarrow as pa

# Rows of the store's tables in columns: table -> column (store name) -> values in row order.
Columns = dict[str, dict[str, list[Any]]]
# The same rows as Arrow tables, what `Store.write_batch` takes and what crosses process boundaries.
Tables = dict[str, "pa.Table"]

_UNIQUE_HINT = "the importer must give every row of a session its own uid"


def table_schema(table: str) -> pa.Schema:
    """The Arrow schema rows of `table` are written with (store column names, record order)."""
    import pyarrow as pa

    kinds = {
        "int32": pa.int32(),
        "int64": pa.int64(),
        "timestamp": pa.timestamp("us"),
        "bool": pa.bool_(),
        "string": pa.string(),
        "json": pa.string(),  # serialised on the way in
    }
    return pa.schema([(column.name, kinds[column.kind]) for column in COLUMNS[table]])


def empty_columns() -> Columns:
    """Empty column lists for every table, to be filled row by row."""
    return {table: {column.name: [] for column in columns} for table, columns in COLUMNS.items()}


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


def _column_reader(table: str) -> Callable[[Sequence[Any]], dict[str, list[Any]]]:
    """A function turning rows of `table`'s record type into its columns, written out from `COLUMNS`.

    One list comprehension per column that names its field: CPython specialises `row.<field>` on a
    slotted record into a direct slot load, which `attrgetter` cannot (ingest lays out a quarter of
    a million parts per 300 MB of logs; this takes a third of the time the generic loop took).
    """
    lines = []
    for column in COLUMNS[table]:
        get = f"r.{column.field}"
        value = f"None if {get} is None else _dumps({get}).decode()" if column.kind == "json" else get
        lines.append(f"        {column.name!r}: [{value} for r in rows],")
    source = "def read(rows):\n    return {\n" + "\n".join(lines) + "\n    }\n"
    namespace: dict[str, Any] = {"_dumps": orjson.dumps}
    exec(compile(source, f"<calib.store.columns: {table}>", "exec"), namespace)
    reader: Callable[[Sequence[Any]], dict[str, list[Any]]] = namespace["read"]
    return reader


_TO_COLUMNS = {table: _column_reader(table) for table in TABLES}


def records_to_columns(records: Iterable[Record]) -> Columns:
    """The rows of parsed records in columns; a session given twice keeps its last version.

    Raises `StoreError` when two calls, or two parts, share a uid.
    """
    sessions: dict[str, ParsedSession] = {}
    estimates: list[AgentEstimate] = []
    for record in records:
        if isinstance(record, ParsedSession):
            sessions.pop(record.session.uid, None)  # the last one wins, in the position it came last
            sessions[record.session.uid] = record
        elif isinstance(record, AgentEstimate):
            estimates.append(record)
        # an `InputWarning` is reported by ingest, never stored
    rows: dict[str, Sequence[Any]] = {
        "sessions": [p.session for p in sessions.values()],
        "calls": [c for p in sessions.values() for c in p.calls],
        "parts": [x for p in sessions.values() for x in p.parts],
        "agent_estimates": estimates,
    }
    out: Columns = {table: _TO_COLUMNS[table](rows[table]) for table in TABLES}
    check_unique(out)
    return out


def records_to_tables(records: Iterable[Record]) -> Tables:
    """Arrow tables of parsed records, ready for `Store.write_batch`."""
    return columns_to_tables(records_to_columns(records))


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
