"""What the commands share: the common options, help texts that list a registry, error reporting, the
progress bar and table helpers.

Text from logs and paths (a model name, a file name) is never printed raw: `say` and `fail` show its
control characters escaped (`calib.core.printable`), and every cell of a `table` is plain text, escaped
the same way and never read as rich markup, so that a model named `[/bold]` prints as itself.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperCommand

from calib.cli import flags
from calib.core.errors import CalibError, UsageError
from calib.core.home import expand_home
from calib.core.printable import printable

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
# The sessions a command over a store's calls reads (`calib cost`, `calib savings`).
SessionOption = Annotated[
    str | None,
    typer.Option("--session", help="Only this session: a uid or native id (or a unique start of one)."),
]
AgentOption = Annotated[
    str | None,
    typer.Option("--agent", help="Only this agent's sessions (claude-code, codex, gemini-cli, ...)."),
]


# -- help texts that list a registry's names --------------------------------------------------------
#
# Rendered when a command's help is shown, never at start-up: typer reads every option of every command
# on each run, and naming the synth layouts alone would load the writer of every agent (~50 ms).

_LAZY_HELP: dict[str, Callable[[], str]] = {}


def lazy_help(render: Callable[[], str]) -> str:
    """A stand-in for an option's help text, replaced by `render()` when `Command` shows the help."""
    key = f"(help {len(_LAZY_HELP)})"
    _LAZY_HELP[key] = render
    return key


class Command(TyperCommand):
    """A typer command whose options' `lazy_help` texts are rendered when its help is shown (every
    command of the app is registered with it)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """Render the lazy help texts, then the help as typer does."""
        for param in self.params:
            render = _LAZY_HELP.get(getattr(param, "help", None) or "")
            if render is not None:
                param.help = render()  # type: ignore[attr-defined]  # options and arguments have one
        super().format_help(ctx, formatter)


def estimator_names(*, calibrated: bool = True) -> str:
    """The estimator registry's names as a sentence: the fixed names, then the forms that take an
    argument (`hf:PATH`, ...); `calibrated=False` leaves out `calibrated:PATH`."""
    from calib.estimators import specs

    fixed: list[str] = []
    forms: list[str] = []
    for spec in specs():
        if not spec.is_family:
            fixed.append(spec.name)
        elif calibrated or spec.family != "calibrated":
            # a family's description starts with its form ("hf:PATH: a local tokenizer.json ...")
            form = spec.description.split(": ", 1)[0]
            forms.append(form if form.startswith(spec.name) and " " not in form else spec.name + "ARG")
    text = f"Names: {', '.join(fixed)}"
    if forms:
        text += f"; or with an argument: {', '.join(forms)}"
    return text + ". `calib estimators` lists them with what each needs."


def estimator_help(what: str, default: str | Callable[[], str], *, calibrated: bool = True) -> str:
    """The `lazy_help` of an `--estimator/-e` option: `what` it does, its `default` (or a function that
    says it when the help is shown), and every name the registry accepts (see `estimator_names`)."""

    def render() -> str:
        said = default() if callable(default) else default
        return f"{what} (repeatable; default: {said}). {estimator_names(calibrated=calibrated)}"

    return lazy_help(render)


def _importer_help() -> str:
    from calib.importers import importer_names

    return f"Importer to use instead of sniffing: {', '.join(importer_names())}."


FormatOption = Annotated[str | None, typer.Option("--format", "-f", help=lazy_help(_importer_help))]

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
        from calib.store.failures import explain

        # a lock, a damaged file, or the OS error DuckDB names on a later line (a full disk)
        failure = explain(exc)
        if failure is not None:
            return str(failure)
        what = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if type(exc).__name__ == "OutOfMemoryException":
            # calib caps DuckDB's memory (calib.store.store.DEFAULT_MEMORY_LIMIT): say how to raise it
            return f"the store failed: {what} (set CALIB_MEMORY_LIMIT to a larger size, such as 1GB)"
        return f"the store failed: {what}"
    return None


def say(text: object, *, err: bool = False) -> None:
    """Print one line (on stderr with `err`), its control characters escaped: it may hold log text."""
    typer.echo(printable(text), err=err)


def fail(error: CalibError) -> NoReturn:
    """Report an error on one line of stderr and exit 1 (2 for usage errors)."""
    if _state["debug"]:
        traceback.print_exception(error)
    say(f"Error: {error}", err=True)
    raise typer.Exit(2 if isinstance(error, UsageError) else 1)


def require_store(db: Path | None) -> None:
    """Fail (exit 2) unless `--db` (or `$CALIB_DB`, or ./calib.duckdb) names an existing calib store.

    For the commands that only read a store: they never create one, nor its folders.
    """
    from calib.store import default_db_path
    from calib.store.store import check_store_file

    try:
        check_store_file(expand_home(db) if db is not None else default_db_path(), create=False)
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
    from rich.table import Column
    from rich.text import Text

    class RateColumn(ProgressColumn):
        """Items per second (files, texts counted, calls scored) over the last few seconds."""

        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            return Text("" if speed is None else f"{speed:,.0f}/s", style="progress.data.speed")

    # The counts, rate and times keep their width; the bar and what is being done share the rest
    # (a phase such as "counting texts (tiktoken:o200k_base)", or the file being ingested).
    with Progress(
        TextColumn(label),
        BarColumn(bar_width=None, table_column=Column(ratio=1)),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        # a file name, shown as it is: its control characters escaped, its brackets never markup
        TextColumn(
            "{task.description}",
            markup=False,
            table_column=Column(ratio=3, no_wrap=True, overflow="ellipsis"),
        ),
        console=Console(stderr=True),
        transient=True,
        expand=True,
    ) as bar:
        task = bar.add_task("", total=None)
        phase: list[int] = [-1, 0]  # the total and the count last reported

        def update(done: int, total: int, what: str) -> None:
            # A new phase (counting texts for the next estimator, then scoring calls) has a total of
            # its own or counts from the start again: its rate and time left restart.
            # The files of an ingest show by name; the phases of other work say what they are.
            shown = printable(Path(what).name if "/" in what or os.sep in what else what)
            if total != phase[0] or done < phase[1]:
                bar.reset(task, total=total, description=shown)
            phase[:] = [total, done]
            bar.update(task, completed=done, total=total, description=shown)

        yield update


def table(*columns: str, title: str | None = None) -> Table:
    """A rich table with these column headers, whose string cells are shown as plain text: control
    characters escaped, brackets never read as markup."""
    return _plain_cells_table()(*columns, title=title)


@cache
def _plain_cells_table() -> type[Table]:
    from rich.table import Table
    from rich.text import Text

    class PlainCells(Table):
        """A table whose string cells are `Text`: printed as they are, not parsed as markup."""

        def add_row(self, *renderables: Any, **kwargs: Any) -> None:
            cells = (Text(printable(c)) if isinstance(c, str) else c for c in renderables)
            super().add_row(*cells, **kwargs)

    return PlainCells


def console(*, wide: bool = False) -> Console:
    """A rich console on stdout; `wide` ones do not squeeze tables to 80 columns when piped."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 200) if wide else Console()


def escape(text: str) -> str:
    """`text` with rich markup and control characters escaped, to print as it is with a rich console."""
    from rich.markup import escape as rich_escape

    return rich_escape(printable(text))


def fmt(value: Any, spec: str) -> str:
    """A figure formatted with `spec`, or "-" when there is none."""
    return "-" if value is None else spec.format(value)
