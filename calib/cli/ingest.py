"""`calib ingest`."""

from pathlib import Path
from typing import Annotated

import typer

from calib.cli.common import DbOption, FormatOption, JsonOption, QuietOption, fail, progress_bar, say
from calib.cli.output import emit_ingest
from calib.core.errors import CalibError


def ingest(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Session files or folders (default: each agent's data folder).",
            readable=False,  # ingest reports an unreadable path itself, and imports the others
        ),
    ] = None,
    format: FormatOption = None,
    full: Annotated[
        bool, typer.Option("--full", help="Re-read files even when unchanged since the last ingest.")
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Import agent session logs into the store."""
    from calib.ingest.pipeline import ingest as run_ingest

    try:
        with progress_bar("ingest", quiet) as progress:
            result = run_ingest(paths or [], db=db, format=format, full=full, progress=progress)
    except CalibError as exc:
        fail(exc)
    for error in result.errors:
        say(f"Error: {error}", err=True)
    for warning in result.warnings:
        say(f"Warning: {warning}", err=True)
    emit_ingest(result, as_json)
    if result.errors:
        raise typer.Exit(1)
