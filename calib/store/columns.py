"""Records laid out as the store's rows: column lists, then Arrow tables, the form every write takes.

Ingest's parsing workers call these (in parallel, one source at a time) and hand the tables to the
store's single writer; `Store.write` calls them for records given directly. The columns and their
types are those of `calib.core.records.COLUMNS`; uids are checked distinct here, where the rows are
made, so the writer never compares them again. A `LaidOutSession` is laid out from its rows, without
making its records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from calib.core.errors import StoreError
from calib.core.jsontext import json_column
from calib.core.records import (
    COLUMNS,
    TABLES,
    AgentEstimate,
    Column,
    LaidOutSession,
    ParsedSession,
    Part,
    Record,
)

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
        arrays = []
        for field in schema:
            try:
                arrays.append(_array(data[field.name], field.type, pool))
            except OverflowError as exc:
                # Importers bound every count (`calib.core.usage.MAX_COUNT`); should a number still not
                # fit, this is a ValueError, which costs ingest only the source it came from.
                raise ValueError(f"{table}.{field.name} holds a number beyond {field.type}: {exc}") from exc
        out[table] = pa.Table.from_arrays(arrays, schema=schema)
    return out


_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)


def _array(values: list[Any], kind: pa.DataType, pool: pa.MemoryPool) -> pa.Array:
    """`values` as an Arrow array of type `kind`.

    Timestamps go as microsecond counts, each distinct one worked out once: the rows of a message
    share its timestamp object, and pyarrow takes a datetime apart field by field (as many
    conversions as values; a tenth of the conversion of a large ingest).
    """
    import pyarrow as pa

    if pa.types.is_timestamp(kind) and kind.tz is None and kind.unit == "us":
        micros: dict[datetime | None, int | None] = {None: None}
        try:
            counts = [
                micros[v] if v in micros else micros.setdefault(v, (v - _EPOCH) // _MICROSECOND)
                for v in values
            ]
        except TypeError:  # not a naive datetime (pyarrow says what it makes of it)
            pass
        else:
            return pa.array(counts, pa.int64(), memory_pool=pool).view(kind)
    return pa.array(values, type=kind, memory_pool=pool)


def _column_reader(table: str) -> Callable[[Sequence[Any]], dict[str, list[Any]]]:
    """A function turning rows of `table`'s record type into its columns, written out from `COLUMNS`.

    One list comprehension per column that names its field: CPython specialises `row.<field>` on a
    slotted record into a direct slot load, which `attrgetter` cannot (ingest lays out a quarter of
    a million parts per 300 MB of logs; this takes a third of the time the generic loop took).
    """
    lines = []
    for column in COLUMNS[table]:
        get = f"r.{column.field}"
        if column.kind == "json":
            lines.append(f"        {column.name!r}: _json([{get} for r in rows]),")
        else:
            lines.append(f"        {column.name!r}: [{get} for r in rows],")
    source = "def read(rows):\n    return {\n" + "\n".join(lines) + "\n    }\n"
    namespace: dict[str, Any] = {"_json": json_column}
    exec(compile(source, f"<calib.store.columns: {table}>", "exec"), namespace)
    reader: Callable[[Sequence[Any]], dict[str, list[Any]]] = namespace["read"]
    return reader


_TO_COLUMNS = {table: _column_reader(table) for table in TABLES}

# The part columns a `LaidOutSession`'s part rows hold, in order (the fields from `role` on), and the
# default of each (taken by the columns after a row's last field). Its call rows hold every column.
_PART_ROW_COLUMNS = COLUMNS["parts"][3:]
assert [c.field for c in COLUMNS["parts"][:3]] == ["uid", "session_uid", "seq"]
_PART_ROW_DEFAULTS = [Part.__dataclass_fields__[c.field].default for c in _PART_ROW_COLUMNS]


def _add_rows(out: dict[str, list[Any]], columns: Sequence[Column], rows: list[tuple[Any, ...]]) -> None:
    """Add rows of `columns`' values (a row may stop early: see `_PART_ROW_DEFAULTS`) to `out`."""
    for column, values in zip(columns, zip(*rows, strict=True), strict=False):
        if column.kind == "json":
            values = tuple(json_column(values))
        out[column.name] += values


def _laid_out_columns(sessions: Iterable[ParsedSession]) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """The calls and the parts of the sessions in columns, a `LaidOutSession`'s straight from its rows."""
    calls: dict[str, list[Any]] = {column.name: [] for column in COLUMNS["calls"]}
    parts: dict[str, list[Any]] = {column.name: [] for column in COLUMNS["parts"]}
    # records of the sessions (or of their calls or parts) not laid out, since the last rows added
    records: dict[str, list[Any]] = {"calls": [], "parts": []}

    def add_records(table: str, out: dict[str, list[Any]]) -> None:
        if records[table]:
            for name, values in _TO_COLUMNS[table](records[table]).items():
                out[name] += values
            records[table].clear()

    for parsed in sessions:
        if not isinstance(parsed, LaidOutSession):
            records["calls"] += parsed.calls
            records["parts"] += parsed.parts
            continue
        if parsed.calls_laid_out:
            add_records("calls", calls)
            if parsed.call_rows:
                _add_rows(calls, COLUMNS["calls"], parsed.call_rows)
        else:
            records["calls"] += parsed.calls
        if not parsed.parts_laid_out:
            records["parts"] += parsed.parts
            continue
        add_records("parts", parts)
        rows = parsed.part_rows
        if not rows:
            continue
        n = len(rows)
        seqs = range(parsed.first_seq, parsed.first_seq + n)
        prefix = parsed.uid_prefix
        parts["part_uid"] += [prefix + str(seq) for seq in seqs]
        parts["session_uid"] += [parsed.session.uid] * n
        parts["seq"] += seqs
        _add_rows(parts, _PART_ROW_COLUMNS, rows)
        width = len(rows[0])
        for column, default in zip(_PART_ROW_COLUMNS[width:], _PART_ROW_DEFAULTS[width:], strict=True):
            parts[column.name] += [default] * n
    add_records("calls", calls)
    add_records("parts", parts)
    return calls, parts


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
    calls, parts = _laid_out_columns(sessions.values())
    tables: Columns = {
        "sessions": _TO_COLUMNS["sessions"]([p.session for p in sessions.values()]),
        "calls": calls,
        "parts": parts,
        "agent_estimates": _TO_COLUMNS["agent_estimates"](estimates),
    }
    out = {table: tables[table] for table in TABLES}  # in the order the store writes them
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
