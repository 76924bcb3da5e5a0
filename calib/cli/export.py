"""`calib export`: the store in another form (`--parquet DIR`: Parquet files for DuckDB, Spark or Trino)."""

from pathlib import Path
from typing import Annotated

import typer

from calib.cli.common import (
    DbOption,
    JsonOption,
    QuietOption,
    console,
    fail,
    progress_bar,
    require_store,
    table,
)
from calib.cli.output import emit_json
from calib.core.errors import CalibError, UsageError


def export(
    parquet: Annotated[
        Path | None,
        typer.Option(
            "--parquet",
            help="Write every table as Parquet files under this folder (tables with sessions partitioned "
            "by tool and month) with a manifest; `--db DIR` reads the folder back. The folder must be "
            "new, empty or an earlier export, which is replaced.",
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Export the store: as Parquet files (--parquet DIR) to pool or query on a bigger host."""
    from calib.store.store import export_parquet

    if parquet is None:
        fail(UsageError("nothing to export", hint="name what to write, e.g. --parquet DIR"))
    require_store(db)
    try:
        with progress_bar("export", quiet) as progress:
            result = export_parquet(db, parquet, progress=progress)
    except CalibError as exc:
        fail(exc)
    if as_json:
        emit_json(result.to_dict())
        return
    rows = table("table", "rows", "files", "partitioned by")
    for name, t in result.tables.items():
        rows.add_row(name, str(t["rows"]), str(t["files"]), ", ".join(t["partition_by"]) or "-")
    console().print(rows)
    typer.echo(
        f"{'replaced' if result.replaced else 'wrote'} {result.out}: {len(result.tables)} tables, "
        f"{result.rows} rows, {len(result.views)} views (schema {result.schema_version}); "
        f"`calib score --db {result.out}` reads it back"
    )
