"""The `calib` typer app: the global options, and every command registered in the order `--help` lists them.

Each command lives in its own module (`calib.cli.ingest`, `calib.cli.estimators`, ...) as a plain
function; what they share is in `calib.cli.common`. Only this module knows the app, so the command
modules never import it back. They do without `from __future__ import annotations`: typer reads
every command's annotations on each start, and evaluating them from strings costs more.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from types import FrameType
from typing import Annotated, NoReturn

import typer

from calib.cli import flags
from calib.cli.common import Command, environment_error, is_debug, say, set_debug
from calib.cli.context import context
from calib.cli.cost import cost
from calib.cli.estimators import bench, estimators
from calib.cli.export import export
from calib.cli.fit import fit
from calib.cli.ingest import ingest
from calib.cli.replay import replay
from calib.cli.report import report
from calib.cli.sample import sample
from calib.cli.savings import savings
from calib.cli.score import score
from calib.cli.start import START, version_line
from calib.core.errors import CalibError, UsageError

COMMANDS = (ingest, estimators, bench, score, fit, sample, report, replay, context, savings, cost, export)

app = typer.Typer(
    name="calib",
    help="Score and calibrate the token estimators of AI coding agents against provider-reported usage.",
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def _main(
    ctx: typer.Context,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            *flags.VERSION, help="Print calib's version and exit.", callback=_show_version, is_eager=True
        ),
    ] = False,
) -> None:
    set_debug(debug)
    if ctx.invoked_subcommand is None:  # plain `calib`: where to start, not every command's options
        typer.echo(START)


for _command in COMMANDS:
    app.command(cls=Command)(_command)


def main() -> None:
    """Run the CLI (the console script goes through `calib.cli.main`, which may answer first)."""
    previous = signal.signal(signal.SIGINT, _interrupt)
    try:
        app()
    except SystemExit as exc:
        # typer turns Ctrl-C into a silent exit 130: say so, like any other way to stop
        if _interrupted(exc) and exc.code not in (0, None):
            _stop(exc)
        raise
    except CalibError as exc:  # raised outside a command's own handling
        if _interrupted(exc):
            _stop(exc)
        say(f"Error: {exc}", err=True)
        sys.exit(2 if isinstance(exc, UsageError) else 1)
    except Exception as exc:
        if _interrupted(exc):  # DuckDB raises "Query interrupted" from the KeyboardInterrupt
            _stop(exc)
        # The file system or DuckDB failing under a command (a folder that cannot be written, a full
        # disk): one line like every other error; `--debug` shows where.
        message = environment_error(exc)
        if message is None:
            raise
        if is_debug():
            traceback.print_exception(exc)
        say(f"Error: {message}", err=True)
        sys.exit(1)
    except KeyboardInterrupt as exc:  # reached only outside typer (it catches it within a command)
        _stop(exc)
    finally:
        signal.signal(signal.SIGINT, previous)


# -- Ctrl-C -------------------------------------------------------------------------------------------
#
# SIGINT raises KeyboardInterrupt as Python's own handler does, and is remembered: DuckDB turns it into
# a RuntimeError, typer into an exit code, so the flag is what tells an interrupted command from one
# that failed. The store is left as it was: reading commands write nothing, and a write is one
# transaction, rolled back when it is cut short.

INTERRUPTED = "Error: interrupted"
_signalled: list[bool] = []


def _interrupt(signum: int, frame: FrameType | None) -> None:
    _signalled.append(True)
    raise KeyboardInterrupt


def _interrupted(exc: BaseException) -> bool:
    """Whether `exc` ended the command because of Ctrl-C (SIGINT)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return bool(_signalled)


def _stop(exc: BaseException) -> NoReturn:
    """Say the command was interrupted, on one line, and exit 130 (128 + SIGINT, as shells do)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not cut this line short
    if is_debug():
        traceback.print_exception(exc)
    typer.echo(INTERRUPTED, err=True)
    # Not sys.exit: CPython remembers a KeyboardInterrupt that passed through code an extension had it
    # run, and then ends the process by SIGINT at exit whatever code it exits with (seen here: about
    # one interrupted `calib score` in ten ended -2 after this line). The command's stores and spools
    # are closed by now, as the exception unwound their `with` blocks; only the streams need flushing.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130)
