"""`calib ingest`."""

from typing import Annotated

import typer

from calib.cli import flags
from calib.cli.common import DbOption, FormatOption, JsonOption, fail, progress_bar, say
from calib.cli.output import emit_ingest, emit_json, warning_lines
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
    where: Annotated[
        bool,
        typer.Option(
            "--where",
            help="Print the folders where each agent keeps its sessions on this machine, found or not "
            "(those found are what an ingest with no path reads), and import nothing.",
        ),
    ] = False,
) -> None:
    """Import agent session logs into the store."""
    if where:
        _print_agent_folders(as_json)
        return
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


def _print_agent_folders(as_json: bool) -> None:
    from calib.core.paths import readable_path
    from calib.ingest.sources import AgentFolder, agent_folders

    folders = agent_folders()
    if as_json:
        emit_json({"folders": [folder.to_dict() for folder in folders]})
        return
    # Text: per agent, each folder found, else its first folder and how many others were looked at
    # (the editors' folders are looked for under every OS's layout: --json lists them all).
    by_tool: dict[str, list[AgentFolder]] = {}
    for folder in folders:
        by_tool.setdefault(folder.tool, []).append(folder)
    width = max(len(tool) for tool in by_tool)
    for tool, own in by_tool.items():
        found = [folder for folder in own if folder.exists]
        for folder in found:
            say(f"{tool:<{width}}  found      {readable_path(folder.path)}")
        if not found:
            more = f" (and {len(own) - 1} more)" if len(own) > 1 else ""
            say(f"{tool:<{width}}  not found  {readable_path(own[0].path)}{more}")
    found_count = sum(folder.exists for folder in folders)
    say(f"{found_count} of {len(folders)} folders found; `calib ingest` with no path reads those found.")
