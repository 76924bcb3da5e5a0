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
                    "Base estimator to calibrate: auto gives each provider the candidate base with the "
                    "lowest held-out error, over a charclass fallback that needs no tokenizer; a name "
                    "forces that base for every provider. " + estimator_names(calibrated=False)
                )
            ),
        ),
    ] = "auto",
    candidates: Annotated[
        list[str] | None,
        typer.Option(
            "--candidate",
            help=lazy_help(
                lambda: (
                    "With --base auto, a base to compare (repeatable; default: "
                    + ", ".join(_candidate_bases())
                    + ", each where it loads)."
                )
            ),
            show_default=False,
        ),
    ] = None,
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
                candidates=candidates,
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
        _print_summary(report)
    if errors:
        raise typer.Exit(1)


def _candidate_bases() -> tuple[str, ...]:
    from calib.calibration.selection import CANDIDATE_BASES

    return CANDIDATE_BASES


def _pair(r: dict[str, Any], figure: str, spec: str) -> str:
    return f"{fmt(r[f'{figure}_before'], spec)} → {fmt(r[f'{figure}_after'], spec)}"


def _print_summary(report: Any) -> None:
    """The human summary of `calib fit`: what was written, each provider's base, then the held-out
    figures per model against the reference."""
    written = f"wrote {report.out}" if report.out is not None else "wrote no config"
    held = f"held out {report.holdout_sessions} sessions ({report.holdout_calls} calls)"
    if report.sample_sessions is not None:
        held = f"bases fitted and compared on a sample of {report.sample_sessions} sessions, {held} of them"
    for folder in report.folders:
        tools = ", ".join(folder["tools"]) or "no sessions"
        say(f"read {folder['path']}: {folder['sessions']} sessions ({tools})")
    say(f"fitted on {report.train_calls} calls; {written}; {held}")
    _print_bases(report)
    shown = [r for r in report.rows if r["calls"] or r["e2e_calls"]]
    rows = table(
        "provider",
        "model",
        "calls",
        "base",
        "params from",
        "delta MAE before → after",
        "scored ctx p90",
        "scored ctx p99",
        "end-to-end p90",
        "end-to-end p99",
    )
    for r in shown:
        rows.add_row(
            r["provider"] or "",
            r["model"] or "",
            f"{r['calls']} / {r['e2e_calls']}",
            r["base"] or "",
            r["level"],
            _pair(r, "delta_mae", "{:.1f}"),
            _pair(r, "ctx_err_p90", "{:.2%}"),
            _pair(r, "ctx_err_p99", "{:.2%}"),
            _pair(r, "e2e_err_p90", "{:.2%}"),
            _pair(r, "e2e_err_p99", "{:.2%}"),
        )
    say(f"held-out figures per model: before = {report.before} as it is, after = the calibration written")
    console(wide=True).print(rows)
    hidden = len(report.rows) - len(shown)
    if hidden:
        say(f"({hidden} models fitted with no held-out call are not shown; the config has them)")
    typer.echo(
        "calls: scored / end-to-end. Scored: calls predicted from the previous call's usage whose "
        "chain holds; end-to-end: every call with usage, predicted as an agent would (breaks "
        "included, the full prompt plus the fitted overhead where there is no previous call), except "
        "the calls after a turn the log did not record (`unlogged_turn`)."
    )


def _print_bases(report: Any) -> None:
    """Each provider's base, with every candidate's held-out MAE and /context p90."""
    if not report.choices:
        return
    from calib.calibration.selection import PLAIN

    seen = {b for c in report.choices.values() for b in c.candidates}
    names = [b for b in (*report.compared, PLAIN) if b in seen]
    rows = table("provider", "base", "held-out calls", "why", *names)
    shown = {p: c for p, c in sorted(report.choices.items()) if c.calls}
    for provider, choice in shown.items():
        cells = []
        for name in names:
            f = choice.candidates.get(name)
            if not f or f.get("delta_mae") is None:
                cells.append("-")
                continue
            mark = "* " if name == choice.base else ""
            cells.append(f"{mark}{fmt(f['delta_mae'], '{:.1f}')} / {fmt(f['ctx_err_p90'], '{:.2%}')}")
        margin = choice.margin()
        why = choice.reason
        if margin is not None:
            why += f", {margin:.2f}x" if margin < 100 else ", >100x"
        rows.add_row(provider or "", choice.base, str(choice.calls), why, *cells)
    say(
        "base per provider (held-out delta MAE / scored ctx p90 of each candidate, calibrated; "
        "* the base chosen; Nx: the next best candidate's MAE over the chosen one's):"
    )
    console(wide=True).print(rows)
    for provider, choice in sorted(report.choices.items()):
        for model, own in sorted(choice.models.items()):
            errors = ", ".join(f"{b} {e:.1f}" for b, e in sorted(own.errors.items(), key=lambda i: i[1]))
            say(
                f"{provider}/{model} counts with {own.base}, not {choice.base}: MAE on its later "
                f"{own.calls} training calls, fitted on the earlier ones: {errors} (signed-rank z "
                f"{own.evidence:.1f})"
            )
    if len(shown) < len(report.choices):
        hidden = ", ".join(sorted(p for p in report.choices if p not in shown))
        say(f"(no held-out call of {hidden}: the fallback base, {report.fallback})")
    for name, reason in sorted(report.skipped.items()):
        say(f"not compared: {name} ({reason})")
