"""The `calib` command line: each command parses options, calls one public function, renders the result."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from calib.errors import CalibError, UsageError

app = typer.Typer(
    name="calib",
    help="Score and calibrate the token estimators of AI coding agents against provider-reported usage.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_state = {"debug": False}

DbOption = Annotated[
    Path | None,
    typer.Option(
        "--db", envvar="CALIB_DB", help="The DuckDB store (default ./calib.duckdb).", show_default=False
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON document on stdout and nothing else.")
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]


def emit_json(document: Any) -> None:
    """Print one JSON document on stdout (sorted keys, so output is stable)."""
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n")


def fail(error: CalibError) -> None:
    """Report an error on one line of stderr and exit 1 (2 for usage errors)."""
    if _state["debug"]:
        import traceback

        traceback.print_exception(error)
    typer.echo(f"Error: {error}", err=True)
    raise typer.Exit(2 if isinstance(error, UsageError) else 1)


@contextmanager
def progress_bar(label: str, quiet: bool) -> Iterator[Callable[[int, int, str], None] | None]:
    """A rich progress bar on stderr, or None when quiet or stderr is not a terminal."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("", total=None)

        def update(done: int, total: int, what: str) -> None:
            bar.update(task, completed=done, total=total, description=Path(what).name if what else "")

        yield update


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
) -> None:
    _state["debug"] = debug


@app.command()
def ingest(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Session files or folders (default: each agent's data folder)."),
    ] = None,
    format: Annotated[
        str | None, typer.Option("--format", "-f", help="Importer to use instead of sniffing.")
    ] = None,
    full: Annotated[
        bool, typer.Option("--full", help="Re-read files even when unchanged since the last ingest.")
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Import agent session logs into the store."""
    from calib.ingest import ingest as run_ingest

    try:
        with progress_bar("ingest", quiet) as progress:
            result = run_ingest(paths or [], db=db, format=format, full=full, progress=progress)
    except CalibError as exc:
        fail(exc)
        return
    for error in result.errors:
        typer.echo(f"Error: {error}", err=True)
    if as_json:
        emit_json(result.to_dict())
    else:
        typer.echo(
            f"{result.files} files: added {result.sessions} sessions, {result.calls} calls, {result.parts} parts"
            + (f"; {result.unchanged} unchanged" if result.unchanged else "")
            + (f"; skipped {len(result.skipped)} files that are not sessions" if result.skipped else "")
            + (f"; {len(result.errors)} failed" if result.errors else "")
        )
    if result.errors:
        raise typer.Exit(1)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except CalibError as exc:  # raised outside a command's own handling
        typer.echo(f"Error: {exc}", err=True)
        sys.exit(2 if isinstance(exc, UsageError) else 1)
