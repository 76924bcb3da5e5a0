"""`calib report`: the markdown report, and the regression gate CI runs."""

import math
from pathlib import Path
from typing import Annotated

import typer

from calib.cli.common import (
    DbOption,
    JsonOption,
    QuietOption,
    estimator_help,
    estimator_names,
    fail,
    lazy_help,
    progress_bar,
    require_store,
    say,
)
from calib.cli.output import emit_json
from calib.core.errors import CalibError, UsageError


def report(
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Folder to write report.md, summary.json and PNGs: a new or empty one, or an earlier "
            "report, which is replaced whole.",
        ),
    ] = Path("report"),
    estimator: Annotated[
        list[str] | None,
        typer.Option(
            "--estimator",
            "-e",
            # the default is `calib.analysis.build.REPORT_ESTIMATORS` (tests/cli/test_help.py checks):
            # importing that module to read it would cost `calib --help` 400 ms
            help=estimator_help(
                "Estimator to include",
                "those of chars4, cjk, tiktoken:o200k_base, charclass that can be used here",
                calibrated=False,
            ),
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="A calibration config to include as calibrated:BASE.", readable=False),
    ] = None,
    fit: Annotated[
        bool, typer.Option("--fit", help="Fit a calibration on the training sessions and include it.")
    ] = False,
    base: Annotated[
        str | None,
        typer.Option(
            "--base",
            help=lazy_help(
                lambda: "Base estimator for --fit (default charclass). " + estimator_names(calibrated=False)
            ),
        ),
    ] = None,
    figures: Annotated[bool, typer.Option("--figures/--no-figures", help="Draw the PNG figures.")] = True,
    replay_window: Annotated[
        int | None,
        typer.Option(
            "--replay-window",
            help="Replay with every model's window scaled to this many tokens (what-if). Without it, as `calib replay --window auto`: real windows, or what-if ones for an agent whose sessions never reach half its threshold.",
        ),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option("--baseline", help="An earlier summary.json to gate against.", readable=False),
    ] = None,
    max_regression: Annotated[
        float,
        typer.Option("--max-regression", help="Percent a figure may worsen before the gate fails.", min=0),
    ] = 5.0,
    fail_on_new_group: Annotated[
        bool, typer.Option("--fail-on-new-group", help="Fail when a group has no baseline.")
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Write a markdown report with figures and summary.json; with --baseline, exit 1 on a regression."""
    from calib.analysis.report import run_report

    if not math.isfinite(max_regression):  # click reads "nan" and "inf" as floats; nan% passes everything
        fail(
            UsageError(
                f"--max-regression {max_regression} is not a finite percent", hint="pass a number such as 5"
            )
        )
    require_store(db)
    try:
        with progress_bar("report", quiet) as progress:
            result = run_report(
                db,
                out=out,
                estimators=estimator,
                config=config,
                fit=fit,
                base=base,
                figures=figures,
                replay_window=replay_window,
                baseline=baseline,
                max_regression=max_regression,
                fail_on_new_group=fail_on_new_group,
                progress=progress,
            )
    except CalibError as exc:
        fail(exc)
    if as_json:
        emit_json(result.to_dict())
    else:
        say(f"wrote {', '.join(result.files)} to {result.out}")
        if result.gate is not None:
            for line in result.gate.lines():
                say(line)
    if result.failed:
        raise typer.Exit(1)
