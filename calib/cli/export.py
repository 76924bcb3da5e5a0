"""`calib export`: the store in another form (`--parquet DIR`: Parquet files for DuckDB, Spark or Trino),
or a calibration in a form an agent vendors (`--runtime NAME DIR`: a runtime with the config beside it)."""

from pathlib import Path
from typing import Annotated

import typer

from calib.calibration.vendor import CONFIG_FILE, DEFAULT_CONFIG, GUIDE_FILE, RUNTIMES
from calib.cli.common import (
    DbOption,
    JsonOption,
    QuietOption,
    console,
    fail,
    progress_bar,
    require_store,
    say,
    table,
)
from calib.cli.output import emit_json
from calib.core.errors import CalibError, UsageError

_NAMES = ", ".join(RUNTIMES)


def export(
    folder: Annotated[
        Path | None,
        typer.Argument(
            metavar="[DIR]",
            help="With --runtime: the folder to write the runtime and its config into (created if missing; "
            "other files there are left alone).",
            show_default=False,
        ),
    ] = None,
    parquet: Annotated[
        Path | None,
        typer.Option(
            "--parquet",
            help="Write every table as Parquet files under this folder (tables with sessions partitioned "
            "by tool and month) with a manifest; `--db DIR` reads the folder back. The folder must be "
            "new, empty or an earlier export, which is replaced.",
        ),
    ] = None,
    runtime: Annotated[
        str | None,
        typer.Option(
            "--runtime",
            metavar="NAME",
            help=f"Write the runtime NAME ({_NAMES}) into DIR, with the calibration config beside it as "
            f"{CONFIG_FILE} and {GUIDE_FILE} saying how to call it: "
            + "; ".join(f"{name}: {', '.join(n for _, n in spec.files)}" for name, spec in RUNTIMES.items())
            + ".",
            show_default=False,
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help=f"With --runtime: the calibration config to write beside it (default ./{DEFAULT_CONFIG}, "
            "where `calib fit` writes it).",
            show_default=False,
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Export the store as Parquet files (--parquet DIR), or a calibration with a runtime (--runtime NAME DIR)."""
    if runtime is not None or folder is not None or config is not None:
        _export_runtime(runtime, folder, config, parquet, as_json, db)
        return
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
    say(
        f"{'replaced' if result.replaced else 'wrote'} {result.out}: {len(result.tables)} tables, "
        f"{result.rows} rows, {len(result.views)} views (schema {result.schema_version}); "
        f"`calib score --db {result.out}` reads it back"
    )


def _export_runtime(
    runtime: str | None,
    folder: Path | None,
    config: Path | None,
    parquet: Path | None,
    as_json: bool,
    db: Path | None,
) -> None:
    """`calib export --runtime NAME DIR [--config PATH]`."""
    from calib.calibration.vendor import get_runtime, vendor_runtime
    from calib.store import default_db_path

    if runtime is None:
        if folder is None:
            fail(
                UsageError("--config is read only with --runtime", hint=f"add --runtime NAME DIR ({_NAMES})")
            )
        fail(
            UsageError(
                f"a folder ({folder}) was given without --runtime",
                hint=f"--parquet takes its folder as its value; drop {folder}"
                if parquet is not None
                else f"name what to write there: --runtime NAME {folder} ({_NAMES}), or --parquet {folder}",
            )
        )
    if parquet is not None:
        fail(
            UsageError("--runtime and --parquet cannot be combined", hint="run `calib export` once for each")
        )
    try:
        get_runtime(runtime)
    except CalibError as exc:
        fail(exc)
    if folder is None:
        fail(
            UsageError(
                f"--runtime {runtime} needs the folder to write into",
                hint=f"name it, e.g. `calib export --runtime {runtime} DIR`",
            )
        )
    try:
        result = vendor_runtime(
            runtime,
            folder,
            config if config is not None else DEFAULT_CONFIG,
            store=db if db is not None else default_db_path(),  # never written over (`~` expanded there)
        )
    except CalibError as exc:
        fail(exc)
    if as_json:
        emit_json(result.to_dict())
        return
    for name in result.files:
        say(f"{'replaced' if name in result.replaced else 'wrote'} {result.out / name}")
    say(
        f"{RUNTIMES[result.runtime].language} runtime and {result.config} (base {result.base}, "
        f"{len(result.providers)} providers) in {result.out}; how to call it: {result.guide}"
    )
