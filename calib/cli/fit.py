"""`calib fit`: the main job, ingest → score → fit → export → summary."""

from pathlib import Path
from typing import Annotated, Any

import typer

from calib.cli.common import (
    DbOption,
    FormatOption,
    JsonOption,
    QuietOption,
    console,
    estimator_names,
    fail,
    fmt,
    lazy_help,
    progress_bar,
    say,
    table,
)
from calib.cli.output import emit_json, warning_lines
from calib.core.errors import CalibError, UsageError
from calib.core.home import expand_home


def fit(
    paths: Annotated[
        list[str] | None,  # text: Path("") is ".", and ingest refuses an empty path (see `calib ingest`)
        typer.Argument(
            help="Session files or folders to ingest first (default: each agent's data folder).",
            show_default=False,
        ),
    ] = None,
    base: Annotated[
        str,
        typer.Option(
            "--base",
            help=lazy_help(
                lambda: (
                    "Base estimator to calibrate (charclass needs no tokenizer at run time). "
                    + estimator_names(calibrated=False)
                )
            ),
        ),
    ] = "charclass",
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Where to write the calibration config: a new file, or an earlier config, which is replaced.",
        ),
    ] = Path("calibration.json"),
    holdout: Annotated[
        float, typer.Option("--holdout", help="Share of sessions held out to validate the fit.")
    ] = 0.2,
    format: FormatOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Ingest, score, fit per-provider/model calibration, export it, and compare on held-out sessions."""
    from calib.calibration.pipeline import run_fit
    from calib.store import default_db_path
    from calib.store.parquet import is_export

    # a Parquet export is read-only: it is fitted as it is, without ingesting each agent's folder
    exported = is_export(expand_home(db) if db is not None else default_db_path())
    if exported and paths:
        fail(
            UsageError(
                "a Parquet export is read-only: it cannot ingest the paths given",
                hint="drop the paths, or ingest into a .duckdb store and export it again",
            )
        )
    try:
        with progress_bar("fit", quiet) as progress:
            report = run_fit(
                paths or [],
                db=db,
                base=base,
                out=out,
                holdout_fraction=holdout,
                format=format,
                progress=progress,
                ingest=not exported,
            )
    except CalibError as exc:
        fail(exc)
    errors = report.ingest.errors if report.ingest is not None else []
    for error in errors:
        say(f"Error: {error}", err=True)
    for line in warning_lines(report.ingest) if report.ingest is not None else []:
        say(line, err=True)
    if as_json:
        emit_json(report.to_dict())
    else:
        written = f"wrote {report.out}" if report.out is not None else "wrote no config"
        say(
            f"fitted {report.base} calibration on {report.train_calls} calls; {written}; "
            f"held out {report.holdout_sessions} sessions ({report.holdout_calls} calls), "
            f"before = {report.before}, after = calibrated"
        )
        rows = table(
            "provider",
            "model",
            "calls",
            "params from",
            "delta MAE before → after",
            "scored ctx p90",
            "scored ctx p99",
            "end-to-end p90",
            "end-to-end p99",
        )

        def pair(r: dict[str, Any], figure: str, spec: str) -> str:
            return f"{fmt(r[f'{figure}_before'], spec)} → {fmt(r[f'{figure}_after'], spec)}"

        for r in report.rows:
            rows.add_row(
                r["provider"] or "",
                r["model"] or "",
                f"{r['calls']} / {r['e2e_calls']}",
                r["level"],
                pair(r, "delta_mae", "{:.1f}"),
                pair(r, "ctx_err_p90", "{:.2%}"),
                pair(r, "ctx_err_p99", "{:.2%}"),
                pair(r, "e2e_err_p90", "{:.2%}"),
                pair(r, "e2e_err_p99", "{:.2%}"),
            )
        console(wide=True).print(rows)
        typer.echo(
            "calls: scored / end-to-end. Scored: calls predicted from the previous call's usage whose "
            "chain holds; end-to-end: every call with usage, predicted as an agent would (breaks "
            "included, the full prompt plus the fitted overhead where there is no previous call)."
        )
    if errors:
        raise typer.Exit(1)
