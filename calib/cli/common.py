"""What the commands share: the common options, error reporting, the progress bar and table helpers."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from calib.cli import flags
from calib.core.errors import CalibError, UsageError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

DbOption = Annotated[
    Path | None,
    typer.Option(
        *flags.DB, envvar=flags.DB_ENV, help="The DuckDB store (default ./calib.duckdb).", show_default=False
    ),
]
JsonOption = Annotated[
    bool, typer.Option(*flags.JSON, help="Print one JSON document on stdout and nothing else.")
]
QuietOption = Annotated[bool, typer.Option(*flags.QUIET, help="No progress bar.")]
FormatOption = Annotated[
    str | None, typer.Option("--format", "-f", help="Importer to use instead of sniffing.")
]

_state = {"debug": False}


def set_debug(debug: bool) -> None:
    """Show a traceback with every error reported by `fail` (the global `--debug`)."""
    _state["debug"] = debug


def is_debug() -> bool:
    """Whether `--debug` was given."""
    return _state["debug"]


def environment_error(exc: BaseException) -> str | None:
    """The one-line message of an OSError or a DuckDB error raised under a command, else None."""
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"
    if type(exc).__module__.startswith(("duckdb", "_duckdb")):
        what = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if type(exc).__name__ == "OutOfMemoryException":
            # calib caps DuckDB's memory (calib.store.store.DEFAULT_MEMORY_LIMIT): say how to raise it
            return f"the store failed: {what} (set CALIB_MEMORY_LIMIT to a larger size, such as 1GB)"
        return f"the store failed: {what}"
    return None


def fail(error: CalibError) -> NoReturn:
    """Report an error on one line of stderr and exit 1 (2 for usage errors)."""
    if _state["debug"]:
        traceback.print_exception(error)
    typer.echo(f"Error: {error}", err=True)
    raise typer.Exit(2 if isinstance(error, UsageError) else 1)


def require_store(db: Path | None) -> None:
    """Fail (exit 2) unless `--db` (or `$CALIB_DB`, or ./calib.duckdb) names an existing calib store.

    For the commands that only read a store: they never create one, nor its folders.
    """
    from calib.store import default_db_path
    from calib.store.store import check_store_file

    try:
        check_store_file(db.expanduser() if db is not None else default_db_path(), create=False)
    except CalibError as exc:
        fail(exc)


@contextmanager
def progress_bar(label: str, quiet: bool) -> Iterator[Callable[[int, int, str], None] | None]:
    """A rich progress bar on stderr, or None when quiet or stderr is not a terminal."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class RateColumn(ProgressColumn):
        """Items per second (files, texts counted, calls scored) over the last few seconds."""

        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            return Text("" if speed is None else f"{speed:,.0f}/s", style="progress.data.speed")

    with Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("", total=None)
        phase: list[int | None] = [None]

        def update(done: int, total: int, what: str) -> None:
            # a new total is a new phase (counting texts, then scoring calls): rate and time left restart
            if total != phase[0]:
                phase[0] = total
                bar.reset(task, total=total)
            bar.update(task, completed=done, total=total, description=Path(what).name if what else "")

        yield update


def table(*columns: str, title: str | None = None) -> Table:
    """A rich table with these column headers."""
    from rich.table import Table

    return Table(*columns, title=title)


def console(*, wide: bool = False) -> Console:
    """A rich console on stdout; `wide` ones do not squeeze tables to 80 columns when piped."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 200) if wide else Console()


def escape(text: str) -> str:
    """`text` with rich markup escaped, to print as it is."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def fmt(value: Any, spec: str) -> str:
    """A figure formatted with `spec`, or "-" when there is none."""
    return "-" if value is None else spec.format(value)
