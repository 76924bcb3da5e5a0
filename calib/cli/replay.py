"""`calib replay`: the agents' /context display and compaction rules, replayed on every call."""

from pathlib import Path
from typing import Annotated

import typer

from calib.analysis.rules import OWN_RULE, RULE_NAMES
from calib.cli.common import (
    DbOption,
    JsonOption,
    QuietOption,
    console,
    fail,
    fmt,
    progress_bar,
    require_store,
    table,
)
from calib.cli.output import emit_json
from calib.core.errors import CalibError


def replay(
    estimator: Annotated[
        list[str] | None,
        typer.Option("--estimator", "-e", help="Estimator to replay (repeatable; default: chars4, cjk)."),
    ] = None,
    policy: Annotated[
        list[str] | None,
        typer.Option(
            "--policy",
            help="Reasoning/cache policy (repeatable; default all: raw, include, strip-all-but-last, "
            "strip-all, ui-sum).",
        ),
    ] = None,
    rule: Annotated[
        list[str] | None,
        typer.Option(
            "--rule",
            help="Agent rule (repeatable; default all: "
            + ", ".join(RULE_NAMES)
            + f"); {OWN_RULE}: each session under its own agent's rule for its version.",
        ),
    ] = None,
    windows: Annotated[
        Path | None,
        typer.Option(
            "--windows",
            help='JSON file of model windows: {"model": {"context": N, ...}}.',
            readable=False,  # read (and its errors told on one line) by the library
        ),
    ] = None,
    window: Annotated[
        int | None, typer.Option("--window", help="What-if: give every model this context window (tokens).")
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Replay the agents' /context display and compaction rules on every call against the true context."""
    from calib.analysis.replay import run_replay

    require_store(db)
    try:
        with progress_bar("count", quiet) as progress:
            result = run_replay(
                db, estimator, rules=rule, policies=policy, windows=windows, window=window, progress=progress
            )
    except CalibError as exc:
        fail(exc)
    if result.unknown_models:
        typer.echo(
            f"Warning: no context window for {', '.join(result.unknown_models)}; their calls are left out "
            "(add them with --windows FILE or --window N)",
            err=True,
        )
    document = result.to_dict()
    if as_json:
        emit_json(document)
        return
    rows = table(
        "rule", "estimator", "policy", "calls", "compact", "early", "late", "missed", "refused",
        "|err| p50", "|err| p90", "rel p90", "wasted",
    )  # fmt: skip
    seen: set[tuple[str, str]] = set()
    for r in document["summary"]:
        name = r["estimator"]
        if not r["uses_estimator"]:
            # the same figures for every estimator: show them once
            if (r["rule"], r["policy"]) in seen:
                continue
            seen.add((r["rule"], r["policy"]))
            name = "(any)"
        rows.add_row(
            r["rule"], name, r["policy"],
            *(str(r[k]) for k in ("calls", "compact", "early", "late", "missed", "refused")),
            fmt(r["err_p50"], "{:.0f}"), fmt(r["err_p90"], "{:.0f}"), fmt(r["rel_err_p90"], "{:.2%}"),
            fmt(r["wasted_tokens"], "{:.0f}"),
        )  # fmt: skip
    console(wide=True).print(rows)
    typer.echo("windows: " + ", ".join(f"{k} {v['context']}" for k, v in document["windows"].items()))
