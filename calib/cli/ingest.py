"""`calib ingest`."""

from typing import Annotated

import typer

from calib.cli import flags
from calib.cli.common import DbOption, FormatOption, JsonOption, fail, progress_bar, say
from calib.cli.output import emit_ingest, warning_lines
from calib.core.errors import CalibError


def ingest(
    paths: Annotated[
        # Text, not Path: Path("") is ".", and an empty path (an unset shell variable) must be refused,
        # not read as the current folder (`calib.ingest.pipeline.given_paths` checks every path).
        list[str] | None,
        typer.Argument(
            help="Session files or folders (default: each agent's data folder).", show_default=False
        ),
    ] = None,
    format: FormatOption = None,
    full: Annotated[
        bool, typer.Option("--full", help="Re-read files even when unchanged since the last ingest.")
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: Annotated[
        bool, typer.Option(*flags.QUIET, help="No progress bar and no warnings (the summary counts them).")
    ] = False,
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
    if not quiet:  # quiet keeps the errors and the summary, which counts the warnings
        for line in warning_lines(result):
            say(line, err=True)
    emit_ingest(result, as_json)
    if result.errors:
        raise typer.Exit(1)
