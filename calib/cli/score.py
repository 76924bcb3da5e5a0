"""`calib score`."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from calib.cli.common import (
    DbOption,
    JsonOption,
    QuietOption,
    console,
    estimator_help,
    fail,
    fmt,
    progress_bar,
    require_store,
    say,
    table,
)
from calib.cli.output import emit_json
from calib.core.errors import CalibError, UsageError

if TYPE_CHECKING:
    from calib.scoring.score import Sessions


def _default_help() -> str:
    """What `calib score -e` says of its default and of `all` (read when the help is shown)."""
    from calib.estimators import ALL_ESTIMATORS, DEFAULT_SCORE_SET

    return (
        f"{', '.join(DEFAULT_SCORE_SET)}, those of them that can be used here (the agents' own rules, "
        f"charclass and o200k_base); `{ALL_ESTIMATORS}`: every fixed-name one that can be used here"
    )


def score(
    estimator: Annotated[
        list[str] | None,
        typer.Option(
            "--estimator",
            "-e",
            help=estimator_help("Estimator to score", _default_help),
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="A calibration config to score too, as calibrated:PATH (with or without --estimator).",
            readable=False,
        ),
    ] = None,
    sessions: Annotated[
        str, typer.Option("--sessions", help="all, or the train / holdout sessions of `calib fit`'s split.")
    ] = "all",
    calls: Annotated[
        Path | None,
        typer.Option(
            "--calls",
            help="Also write the per-call frame (one row per estimator × call: tool, session, call, "
            "file, provider, model, family, reason, removal, ctx, predicted_ctx, delta, "
            "estimated_delta, ...) to this .csv, .parquet or .jsonl file: a new one, or one it wrote "
            "before, which is replaced.",
        ),
    ] = None,
    overall: Annotated[
        bool,
        typer.Option("--overall", help="One row per estimator over every provider and model."),
    ] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Score estimators against the usage providers reported, per provider and model.

    With no --estimator, the default set: the agents' own rules (chars4, cjk, cjk:1.3), charclass and
    tiktoken:o200k_base, those of them that can be used here; `-e all` scores every fixed-name estimator
    that can be used here, beside any other names given. --config adds calibrated:PATH.

    Where the store holds estimates an agent logged itself beside the provider's count (Dexto's log,
    llxprt-code's token-usage log), they are scored too, as `agent:TOOL` over all of its models."""
    from calib.scoring.agents import AGENT_PREFIX
    from calib.scoring.score import score_store, summary_records

    if sessions not in ("all", "train", "holdout"):
        fail(UsageError(f"unknown --sessions {sessions!r}", hint="use all, train or holdout"))
    require_store(db)
    try:
        with progress_bar("score", quiet) as progress:
            summary = score_store(
                db,
                estimator,
                sessions=cast("Sessions", sessions),
                progress=progress,
                calls=calls,
                overall=overall,
                config=config,
            )
    except CalibError as exc:
        fail(exc)
    records = summary_records(summary)
    if as_json:
        emit_json(records)
        return
    rows = table(
        "estimator",
        "provider",
        "model",
        "scored",
        "coverage",
        "delta MAE",
        "delta bias",
        "ctx p50",
        "ctx p90",
        "ctx p99",
        "end-to-end",
        "e2e p50",
        "e2e p90",
        "e2e p99",
    )
    for r in records:
        spans = overall or r["estimator"].startswith(AGENT_PREFIX)  # an agent's pairs name no model
        rows.add_row(
            r["estimator"],
            "(all)" if spans else r["provider"] or "",
            "(all)" if spans else r["model"] or "",
            str(r["calls"]),
            fmt(r["coverage"], "{:.1%}"),
            fmt(r["delta_mae"], "{:.1f}"),
            fmt(r["delta_bias"], "{:.3f}"),
            *(fmt(r[k], "{:.2%}") for k in ("ctx_err_p50", "ctx_err_p90", "ctx_err_p99")),
            str(r["e2e_calls"]),
            *(fmt(r[k], "{:.2%}") for k in ("e2e_err_p50", "e2e_err_p90", "e2e_err_p99")),
        )
    console(wide=True).print(rows)
    typer.echo(
        "scored: calls predicted from the previous call's usage whose chain holds (coverage: their share "
        "of the calls with usage after the first); end-to-end: every call with usage, predicted as an "
        "agent would, chain breaks included, except after a turn the log did not record "
        "(`unlogged_turn`)."
    )
    seen = set()
    for r in records:
        key = (r["provider"], r["model"])
        reasons = {k: v for k, v in (r.get("breaks_by_reason") or {}).items() if v}
        if key in seen or not reasons:
            continue
        seen.add(key)
        detail = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))
        where = "all providers and models" if overall else f"{r['provider']}/{r['model']}"
        say(f"breaks in {where}: {detail}")
