"""A calib store as a folder of Parquet files: `calib export --parquet DIR` writes it, `open_store(DIR)` reads it.

The folder holds every base table of the store, found in the store's catalog rather than listed here,
and a manifest (`calib-export.json`) saying what it holds:

    DIR/calib-export.json                                 calib version, migrations, tables, views
    DIR/sessions/tool=gemini-cli/month=2025-06/data_0.parquet
    DIR/calls/tool=.../month=.../data_0.parquet           a table whose rows each belong to a session
    DIR/parts/tool=.../month=.../data_0.parquet           (a NOT NULL `session_uid`), by the session's
                                                          tool and start month (YYYY-MM, or `unknown`)
    DIR/files/data_0.parquet                              every other table, one file

Partitions are hive-style, so DuckDB, Spark or Trino read a table with its `tool` and `month` columns
from `DIR/TABLE/**/*.parquet`. A partition key that a table holds as a column of its own is written
only in the folder name (the session's `tool` in `sessions`), which is where readers take it from.

Read back (`connect_export`), the folder is an in-memory DuckDB database in which each table is a
view over its files (partition keys that are not the table's columns left out), except the count
cache (`COUNT_CACHES`), which is loaded into memory so that scoring can add counts; the counts added
are never written back to the folder. The store's views (`call_chain`, ...) are made again from the
SQL the manifest keeps. Nothing here knows `Store`: `calib.store.store` opens a folder through
`connect_export`, and exports a store through `write_export`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calib.core.errors import StoreError, UsageError
from calib.core.home import expand_home
from calib.core.progress import Progress
from calib.core.version import __version__

if TYPE_CHECKING:
    import duckdb

MANIFEST = "calib-export.json"
FORMAT = "calib-parquet-export"
FORMAT_VERSION = 1
# The table every partitioned row is placed by, the key it names the session by, and its two keys.
SESSIONS = "sessions"
SESSION_KEY = "session_uid"
TOOL, MONTH = "tool", "month"
UNKNOWN = "unknown"
# The tables `calib score` writes counts into (`text_counts`; `part_estimates` was that table before
# migration 014 made it a view): loaded into memory rather than viewed, so counting works on a folder.
COUNT_CACHES = frozenset({"text_counts", "part_estimates"})
# Names that become folder names and SQL identifiers; types that go into SQL unquoted.
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_UNSAFE_TYPE = re.compile(r"'|;|--|/\*")


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@dataclass(slots=True)
class ParquetExport:
    """What `calib export --parquet` wrote: per table its rows, files and partition keys."""

    out: str
    schema_version: int
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    views: list[str] = field(default_factory=list)
    replaced: bool = False

    @property
    def rows(self) -> int:
        """Rows written, over every table."""
        return sum(t["rows"] for t in self.tables.values())

    def to_dict(self) -> dict[str, Any]:
        """The `calib export --json` document."""
        return {
            "out": self.out,
            "schema_version": self.schema_version,
            "replaced": self.replaced,
            "tables": self.tables,
            "views": self.views,
        }


def is_export(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a folder holding a calib Parquet export's manifest."""
    return Path(path, MANIFEST).is_file()


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of the export in the folder `path`; a `StoreError` if it is unreadable or malformed."""
    where = Path(path, MANIFEST)
    try:
        document = json.loads(where.read_text(encoding="utf-8"))
    except OSError as exc:
        raise StoreError(f"cannot read the export's manifest: {exc.strerror}", path=str(where)) from None
    except ValueError:
        document = None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise StoreError(
            "not a calib export: its manifest is malformed",
            path=str(where),
            hint="export the store again with `calib export --parquet`",
        )
    if document.get("format_version") != FORMAT_VERSION:
        raise StoreError(
            f"the export has format version {document.get('format_version')!r}, this calib reads {FORMAT_VERSION}",
            path=str(where),
            hint="read it with the calib that wrote it, or export the store again",
        )
    tables, views = document.get("tables"), document.get("views")
    if (
        not isinstance(tables, dict)
        or not isinstance(views, list)
        or not isinstance(document.get("migrations"), list)
        or not all(isinstance(t, dict) and _NAME.match(n) for n, t in tables.items())
    ):
        raise StoreError(
            "not a calib export: its manifest lacks its tables, views or migrations",
            path=str(where),
            hint="export the store again with `calib export --parquet`",
        )
    return document


# -- writing ---------------------------------------------------------------------------------------


def check_out_dir(out: Path) -> bool:
    """Refuse (`UsageError`) an `out` that is a file, or a folder holding anything but an earlier export.

    Returns whether `out` holds an earlier export, which an export replaces. Nothing is changed.
    """
    hint = "name a new or empty folder, or one an earlier `calib export --parquet` wrote; nothing was changed"
    if not out.exists():
        return False
    if not out.is_dir():
        raise UsageError(f"cannot export to {out}: it is a file", hint=hint)
    entries = sorted(p.name for p in out.iterdir())
    if not entries:
        return False
    if MANIFEST not in entries:
        raise UsageError(f"cannot export to {out}: the folder is not empty and not a calib export", hint=hint)
    try:
        known = {MANIFEST, *read_manifest(out)["tables"]}
    except StoreError as exc:
        raise UsageError(f"cannot export to {out}: {exc.what}", hint=hint) from None
    stray = [name for name in entries if name not in known]
    if stray:
        raise UsageError(
            f"cannot export to {out}: it holds {stray[0]!r}, which a calib export does not write", hint=hint
        )
    return True


def _tables(con: duckdb.DuckDBPyConnection) -> dict[str, list[dict[str, Any]]]:
    """Every base table of the store, with its columns in order."""
    rows = con.execute(
        "SELECT t.table_name, c.column_name, c.data_type, c.is_nullable "
        "FROM duckdb_tables() t JOIN duckdb_columns() c "
        "ON c.database_name = t.database_name AND c.schema_name = t.schema_name AND c.table_name = t.table_name "
        "WHERE t.database_name = current_database() AND t.schema_name = 'main' AND NOT t.temporary "
        "AND NOT t.internal ORDER BY t.table_name, c.column_index"
    ).fetchall()
    tables: dict[str, list[dict[str, Any]]] = {}
    for table, column, type_, nullable in rows:
        tables.setdefault(table, []).append({"name": column, "type": type_, "nullable": bool(nullable)})
    return tables


def _views(con: duckdb.DuckDBPyConnection) -> list[dict[str, str]]:
    """The store's own views, in the order they were made (a view may read an earlier one)."""
    rows = con.execute(
        "SELECT view_name, sql FROM duckdb_views() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND NOT internal AND NOT temporary ORDER BY view_oid"
    ).fetchall()
    return [{"name": name, "sql": sql} for name, sql in rows]


def _partition_keys(table: str, columns: Sequence[Mapping[str, Any]], session_tables: bool) -> list[str]:
    """The partition keys of `table` (none if its rows do not each belong to a session).

    A key is named `tool` or `month` unless the table has a column of that name holding something
    else (only `sessions.tool` is the key's own value), then `session_tool` or `session_month`.
    """
    names = {c["name"] for c in columns}
    key = next((c for c in columns if c["name"] == SESSION_KEY), None)
    if not session_tables or key is None or key["nullable"]:
        return []
    keys = []
    for base in (TOOL, MONTH):
        name = base
        while name in names and not (table == SESSIONS and name == TOOL):
            name = f"session_{name}"
        keys.append(name)
    return keys


def _copy_sql(table: str, keys: Sequence[str], target: Path) -> str:
    """The COPY writing `table` to `target`: partitioned by its session's tool and month with `keys`."""
    options = "FORMAT PARQUET, COMPRESSION ZSTD"
    if not keys:
        return (
            f"COPY (SELECT * FROM {_ident(table)}) TO {_literal(str(target / 'data_0.parquet'))} ({options})"
        )
    tool_key, month_key = keys
    month = f"coalesce(strftime(s.started_at, '%Y-%m'), '{UNKNOWN}') AS {_ident(month_key)}"
    if table == SESSIONS:  # the key is the session's own `tool` column
        select = f"SELECT s.*, {month} FROM {_ident(SESSIONS)} s"
    else:
        select = (
            f"SELECT t.*, coalesce(s.tool, '{UNKNOWN}') AS {_ident(tool_key)}, {month} "
            f"FROM {_ident(table)} t LEFT JOIN {_ident(SESSIONS)} s ON s.{SESSION_KEY} = t.{SESSION_KEY}"
        )
    partition = ", ".join(_ident(k) for k in keys)
    return f"COPY ({select}) TO {_literal(str(target))} ({options}, PARTITION_BY ({partition}))"


def write_export(
    con: duckdb.DuckDBPyConnection,
    out: str | os.PathLike[str],
    *,
    source: str | None = None,
    progress: Progress | None = None,
) -> ParquetExport:
    """Write every base table and view of the calib store open on `con` to the folder `out` (see the module).

    `out` must be absent, empty, or an earlier export, which is replaced only once the new one is
    complete; anything else is refused (`UsageError`) and left as it is. `source` (the store's path)
    goes into the manifest.
    """
    out = expand_home(out)
    replaced = check_out_dir(out)
    tables = _tables(con)
    views = _views(con)
    migrations: list[dict[str, Any]] = [
        {"version": int(v), "name": str(n)}
        for v, n in con.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
    ]
    sessions = {c["name"] for c in tables.get(SESSIONS, [])}
    session_tables = {SESSION_KEY, TOOL, "started_at"} <= sessions
    schema_version: int = max((m["version"] for m in migrations), default=0)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".calib-export", dir=out.parent))
    try:
        manifest_tables: dict[str, dict[str, Any]] = {}
        for done, (table, columns) in enumerate(tables.items()):
            if progress is not None:
                progress(done, len(tables), table)
            keys = _partition_keys(table, columns, session_tables)
            target = work / table
            target.mkdir()
            row = con.execute(_copy_sql(table, keys, target)).fetchone()
            rows = int(row[0]) if row else 0
            if keys and not rows:  # an empty partitioned COPY writes no file: write one with the schema
                con.execute(_copy_sql(table, [], target))
            manifest_tables[table] = {
                "columns": columns,
                "partition_by": keys if rows else [],
                "rows": rows,
                "files": sum(1 for _ in target.rglob("*.parquet")),
            }
        if progress is not None:
            progress(len(tables), len(tables), "")
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "calib_version": __version__,
            "exported_at": datetime.now(UTC).replace(microsecond=0).isoformat(),
            "source": source,
            "schema_version": schema_version,
            "migrations": migrations,
            "partitioning": {
                TOOL: "the tool of the row's session (`unknown` without one)",
                MONTH: f"the month its session started, YYYY-MM (`{UNKNOWN}` without a start time)",
            },
            "tables": manifest_tables,
            "views": views,
        }
        (work / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        _swap_in(work, out, replaced)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return ParquetExport(
        out=str(out),
        schema_version=schema_version,
        tables={n: {k: v for k, v in t.items() if k != "columns"} for n, t in manifest_tables.items()},
        views=[v["name"] for v in views],
        replaced=replaced,
    )


def _swap_in(work: Path, out: Path, replaced: bool) -> None:
    """Move the finished export `work` to `out`, then delete the earlier export `out` held."""
    if not replaced:
        if out.exists():
            out.rmdir()  # empty (checked): a folder that gained files since is not removed
        work.rename(out)
        return
    old = work.with_name(work.name + ".old")
    out.rename(old)
    try:
        work.rename(out)
    except BaseException:
        old.rename(out)
        raise
    shutil.rmtree(old)


# -- reading ---------------------------------------------------------------------------------------


def _type(column: Mapping[str, Any], where: Path) -> str:
    type_ = column.get("type")
    if not isinstance(type_, str) or _UNSAFE_TYPE.search(type_):
        raise StoreError(
            f"not a calib export: column {column.get('name')!r} has the type {type_!r}",
            path=str(where),
            hint="export the store again with `calib export --parquet`",
        )
    return type_


def _table_sql(root: Path, table: str, spec: Mapping[str, Any]) -> str:
    """The CREATE statement that makes `table` of the export at `root` in the reading database."""
    columns = spec.get("columns") or []
    keys = spec.get("partition_by") or []
    where = root / MANIFEST
    if not columns or not all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in columns):
        raise StoreError(f"not a calib export: table {table!r} has no columns", path=str(where))
    if not spec.get("rows"):
        listed = ", ".join(f"{_ident(c['name'])} {_type(c, where)}" for c in columns)
        return f"CREATE TABLE {_ident(table)} ({listed})"
    select = [f"CAST({_ident(c['name'])} AS {_type(c, where)}) AS {_ident(c['name'])}" for c in columns]
    files = _literal(str(root / table / "**" / "*.parquet"))
    # partition values are text (a tool named `2024` is not a number); without keys, no folder name
    # above the export (`.../source=x/DIR`) may turn into a column
    hive = "hive_partitioning = true, hive_types_autocast = false" if keys else "hive_partitioning = false"
    body = f"SELECT {', '.join(select)} FROM read_parquet({files}, {hive})"
    kind = "TABLE" if table in COUNT_CACHES else "VIEW"
    return f"CREATE {kind} {_ident(table)} AS {body}"


def _create_views(con: duckdb.DuckDBPyConnection, views: Sequence[Any], where: Path) -> None:
    """Make the store's views again; one that reads a view not made yet waits for a later round."""
    import duckdb

    pending: list[tuple[str, str]] = []
    for view in views:
        sql = view.get("sql") if isinstance(view, dict) else None
        statements = con.extract_statements(sql) if isinstance(sql, str) else []
        # exactly one CREATE VIEW: a manifest can add views, never run anything else
        if len(statements) != 1 or not re.match(r"\s*CREATE\s+(OR\s+REPLACE\s+)?VIEW\s", sql or "", re.I):
            raise StoreError(
                f"not a calib export: the view {view.get('name') if isinstance(view, dict) else view!r} "
                "is not one CREATE VIEW statement",
                path=str(where),
            )
        pending.append((str(view["name"]), statements[0].query))
    while pending:
        waiting: list[tuple[str, str]] = []
        error: duckdb.Error | None = None
        for name, sql in pending:
            try:
                con.execute(sql)
            except duckdb.Error as exc:
                waiting.append((name, sql))
                error = exc
        if len(waiting) == len(pending):
            raise StoreError(
                f"cannot make the view {waiting[0][0]} of the export: {str(error).splitlines()[0]}",
                path=str(where),
                hint="export the store again with this calib",
            )
        pending = waiting


def connect_export(
    path: str | os.PathLike[str], config: Mapping[str, Any], migrations: Sequence[int]
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection (made with `config`) holding the export in the folder `path`.

    Each table is a view over its Parquet files, but the count cache (`COUNT_CACHES`), which is loaded
    into memory: counts added to it are lost when the connection closes. `migrations` are the versions
    this calib knows; an export written with other ones is refused (it cannot be migrated in place).
    """
    import duckdb

    root = expand_home(path).resolve()
    manifest = read_manifest(root)
    where = root / MANIFEST
    applied = {m.get("version") for m in manifest["migrations"] if isinstance(m, dict)}
    newer = sorted(v for v in applied if isinstance(v, int) and v not in migrations)
    if newer:
        raise StoreError(
            f"the export was written by a newer calib (migration {newer[-1]})",
            path=str(root),
            hint="upgrade calib, or export the store with this one",
        )
    older = sorted(set(migrations) - applied)
    if older:
        raise StoreError(
            f"the export was written before migration {older[0]}, and an export cannot be migrated",
            path=str(root),
            hint="export the store again with this calib (`calib export --parquet`)",
        )
    con = duckdb.connect(":memory:", config=dict(config))
    try:
        con.execute("SET enable_progress_bar = false")  # as in every store: stdout may carry --json
        for table, spec in manifest["tables"].items():
            try:
                con.execute(_table_sql(root, table, spec))
            except duckdb.Error as exc:
                raise StoreError(
                    f"cannot read the table {table} of the export: {str(exc).splitlines()[0]}",
                    path=str(root / table),
                    hint="export the store again with `calib export --parquet`",
                ) from exc
        _create_views(con, manifest["views"], where)
    except BaseException:
        con.close()
        raise
    return con
