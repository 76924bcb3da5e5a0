"""`calib replay`: the agents' /context display and compaction rules, replayed on every call."""

from pathlib import Path
from typing import Annotated

import typer

from calib.analysis.rules import ALL_RULES, OWN_RULE, RULE_NAMES
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
from calib.core.errors import CalibError

# Paragraphs of `calib replay --help` (rich rewraps each one to the terminal).
_HELP = "\n\n".join(
    " ".join(paragraph.split())
    for paragraph in (
        """Replay the agents' /context display and compaction rules on every call against the true
        context.""",
        """Each session is replayed under its own agent's rule, for the version that wrote it
        (gemini-cli, OpenCode 1.x or 2.x, Claude Code, Codex, Dexto). --rule NAME (repeatable) picks
        rules instead; --rule own beside them keeps each session's own; --rule all is every rule.""",
        """Windows (--window). auto, the default: an agent keeps each model's real context window when
        one of its sessions reaches half of its threshold. When none does (nothing would ever compact:
        small or sample sessions), the agent is replayed on a what-if window: every model it used gets a
        window of one size, shaped like its own (output limit and input cap in proportion), chosen so
        that the agent's threshold sits at the median prompt of its calls; about half of its calls are
        then over the threshold and the rule's timing shows. The output says which windows each agent
        got and why. real: the real windows only. what-if: what-if windows for every agent. N: every
        model's window scaled to N tokens.""",
        """Per agent and rule, the lines count compactions, not calls: early (fired while the true
        context was still under the threshold; by how many tokens), late (a request sent over the
        threshold before the rule compacted; by how many tokens), on time, missed (sent over the window)
        and refused (gemini-cli's guard stopped a request that fit). They read the policy raw, the
        agent's own count.""",
    )
)


def replay(
    estimator: Annotated[
        list[str] | None,
        typer.Option("--estimator", "-e", help=estimator_help("Estimator to replay", "chars4, cjk")),
    ] = None,
    policy: Annotated[
        list[str] | None,
        typer.Option(
            "--policy",
            help="Reasoning/cache policy (repeatable; default all: raw, include, strip-all-but-last, "
            "strip-all, ui-sum). The summary lines read `raw`, the agent's own count.",
        ),
    ] = None,
    rule: Annotated[
        list[str] | None,
        typer.Option(
            "--rule",
            help=f"Agent rule (repeatable; default {OWN_RULE}: each session under its own agent's rule for "
            f"its version; {ALL_RULES}: every rule; or " + ", ".join(RULE_NAMES) + ").",
        ),
    ] = None,
    windows: Annotated[
        Path | None,
        typer.Option(
            "--windows",
            help='JSON file of model windows: {"model": {"context": N, ...}} (the real windows --window '
            "auto and real use).",
            readable=False,  # read (and its errors told on one line) by the library
        ),
    ] = None,
    window: Annotated[
        str,
        typer.Option(
            "--window",
            help="auto (default): real windows, or what-if ones for an agent whose sessions never reach half "
            "the threshold; real; what-if; or N tokens for every model.",
        ),
    ] = "auto",
    threshold: Annotated[
        str | None,
        typer.Option(
            "--threshold",
            help="Shares of the window to sweep, e.g. 0.5,0.7,0.85,0.95: per agent and share, the compactions "
            "that would fire, the calls that would go over the window and the headroom at each firing.",
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    from calib.analysis.replay import run_replay

    require_store(db)
    try:
        with progress_bar("replay", quiet) as progress:
            result = run_replay(
                db,
                estimator,
                rules=rule,
                policies=policy,
                windows=windows,
                window=window,
                progress=progress,
                thresholds=threshold,
            )
    except CalibError as exc:
        fail(exc)
    if result.unknown_models:
        say(
            f"Warning: no context window for {', '.join(result.unknown_models)}; their calls are left out "
            "(add them with --windows FILE or --window N)",
            err=True,
        )
    document = result.to_dict()
    if as_json:
        emit_json(document)
        return
    rows = table(
        "agent", "rule", "estimator", "policy", "window", "calls", "fires", "early", "late", "on time",
        "missed", "refused", "|err| p50", "|err| p90", "rel p90",
    )  # fmt: skip
    seen: set[tuple[str, str, str, str]] = set()
    for r in document["summary"]:
        name = r["estimator"]
        if not r["uses_estimator"]:
            # the same figures for every estimator: show them once
            key = (r["agent"], r["rule"], r["policy"], r["window_kind"])
            if key in seen:
                continue
            seen.add(key)
            name = "(any)"
        kind = r["window_kind"]
        shown = f"{r['window_max']:,}" if kind == "fixed" and r["window_max"] else kind
        rule_name = r["rule"] if r["own"] else f"{r['rule']} (other)"
        rows.add_row(
            r["agent"], rule_name, name, r["policy"], shown,
            *(str(r[k]) for k in ("calls", "fires", "early_fires", "late_events", "on_time", "missed_events",
                                  "refused_events")),
            fmt(r["err_p50"], "{:.0f}"), fmt(r["err_p90"], "{:.0f}"), fmt(r["rel_err_p90"], "{:.2%}"),
        )  # fmt: skip
    rows.caption = (
        "calls: decided calls; fires: compactions; early/late/on time/missed/refused: compactions and "
        "overruns, not calls (calib replay --help)"
    )
    console(wide=True).print(rows)
    say(result.windows_line())
    for line in result.lines():
        say(line)
    if result.sweep is not None:
        say(
            "Threshold sweep (each session's own rule and the agent's count, compacting at a share of the window):"
        )
        for line in result.sweep.lines():
            say(f"  {line}")


replay.__doc__ = _HELP
