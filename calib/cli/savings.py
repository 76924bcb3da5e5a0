"""`calib savings`: what each removal of text from the context saved, once the prompt cache is counted."""

from pathlib import Path
from typing import Annotated, Any

import typer

from calib.cli.common import (
    AgentOption,
    DbOption,
    JsonOption,
    SessionOption,
    console,
    fail,
    fmt,
    require_store,
    say,
    table,
)
from calib.cli.output import emit_json
from calib.core.errors import CalibError

_HELP = "\n\n".join(
    " ".join(paragraph.split())
    for paragraph in (
        """What pruning, compaction and dropped reasoning really saved: one line per removal the logs
        show, net of what it did to the prompt cache, in tokens and dollars.""",
        """For each removal: the tokens that left as the calibration counts them and as the next
        reported prompt shows them, the context and the cache reads before and after, the cache write
        it caused, after how many calls it paid for itself, and its net effect up to the next
        compaction against the same session without it (input tokens by category, and dollars from the
        price table the genai-prices package ships, offline). The calibration is ./calibration.json
        (what calib fit writes) unless --config names one. Default: the summary per agent and kind,
        with the removals that saved and lost the most; --session lists every removal of a session;
        --json gives every removal with the summary and what the figures assume.""",
        """--what-if POLICY replays a pruning policy on the same sessions, on top of what the agent
        removed itself, and prices it the same way: OpenCode's own (keep the newest 40,000 tokens of
        tool output, prune when more than 20,000 can go) or older-than:N (prune every tool output N or
        more user turns old), per agent and policy: in how many sessions it would have paid off.""",
    )
)

# How many removals `calib savings` shows with the largest net saving, and with the largest net loss.
SHOWN = 5


def savings(
    session: SessionOption = None,
    agent: AgentOption = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="Calibration config (default ./calibration.json).", readable=False),
    ] = None,
    what_if: Annotated[
        list[str] | None,
        typer.Option(
            "--what-if",
            help="Also replay a pruning policy on the sessions and price it: opencode, or older-than:N "
            "(every tool output N or more user turns old). Repeatable.",
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    from calib.analysis.savings import run_savings

    require_store(db)
    try:
        report = run_savings(db, config, session=session, agent=agent, what_if=what_if or ())
    except CalibError as exc:
        fail(exc)
    if as_json:
        emit_json(report.to_dict())
        return
    out = console(wide=True)
    rows = table(
        "agent", "kind", "events", "observed", "removed est.", "removed obs.", "est. error",
        "paid off", "never", "after (p50)", "net tokens", "net USD", title="removals",
    )  # fmt: skip
    for row in [*report.summary, {"agent": "total", "kind": "", **report.total}] if report.summary else []:
        rows.add_row(
            row["agent"],
            row["kind"],
            f"{row['events']:,}",
            f"{row['observed']:,}",
            fmt(row["removed_estimated"], "{:,}"),
            fmt(row["removed_observed"], "{:,}"),
            fmt(row["estimate_mae"], "{:,.0f}"),
            f"{row['paid_off']:,}",
            f"{row['never']:,}",
            fmt(row["paid_off_after_p50"], "{:g}"),
            fmt(row["net_tokens"], "{:,}"),
            fmt(row["net_usd"], "{:,.2f}"),
        )
    out.print(rows)
    events = [e for e in report.events if e["net_usd"] is not None]
    if session is not None:
        _events(out, "every removal", report.events)
    elif events:
        ranked = sorted(events, key=lambda e: e["net_usd"], reverse=True)
        _events(out, "largest net saving", [e for e in ranked[:SHOWN] if e["net_usd"] > 0])
        _events(out, "largest net loss", [e for e in ranked[::-1][:SHOWN] if e["net_usd"] < 0])
    if report.what_if_summary:
        _what_if(out, report.what_if_summary)
    say(
        f"Prices: {report.prices} (offline); counts: {report.config}. est. error: mean |estimated - "
        "observed| tokens removed. net: what the session without the removal would have cost more "
        "(positive: saved), up to the next compaction. paid off / never: within that window, in dollars."
    )
    for line in report.to_dict()["assumptions"]:
        say(f"Assumed: {line}.")
    for note in report.notes():
        say(f"Note: {note}.")


def _events(out: Any, title: str, events: list[dict[str, Any]]) -> None:
    """A table of removals, one line each, with the file and call to find them by."""
    if not events:
        return
    rows = table(
        "file", "call", "kind", "model", "removed", "ctx before → after", "cache write",
        "calls", "paid off after", "net tokens", "net USD", title=title,
    )  # fmt: skip
    for e in events:
        removed = e["removed_observed"] if e["removed_observed"] is not None else e["removed_estimated"]
        rows.add_row(
            Path(e["file"]).name if e["file"] else "-",
            str(e["call"]),
            e["kind"],
            e["model"] or "-",
            fmt(removed, "{:,}"),
            f"{fmt(e['ctx_before'], '{:,}')} → {fmt(e['ctx_after'], '{:,}')}",
            fmt(e["cache_write_next"], "{:,}"),
            fmt(e["calls_after"], "{:,}"),
            ("never" if e["paid_off_after"] is None else f"{e['paid_off_after']:,}")
            if e["net_usd"] is not None
            else "-",
            fmt(e["net_tokens"], "{:,}"),
            fmt(e["net_usd"], "{:,.4f}"),
        )
    out.print(rows)


def _what_if(out: Any, rows: list[dict[str, Any]]) -> None:
    """The what-if table: per agent and policy, what pruning would have done to the sessions."""
    shown = table(
        "agent", "policy", "sessions", "pruned in", "paid off", "lost", "prunes", "outputs",
        "tokens pruned", "net tokens", "net USD", title="what-if pruning (net: what the policy would have saved)",
    )  # fmt: skip
    for row in rows:
        shown.add_row(
            row["agent"],
            row["policy"],
            f"{row['sessions']:,}",
            f"{row['pruned_sessions']:,}",
            f"{row['paid_off']:,}",
            f"{row['lost']:,}",
            f"{row['prunes']:,}",
            f"{row['outputs_pruned']:,}",
            f"{row['tokens_pruned']:,}",
            f"{row['net_tokens']:,}",
            fmt(row["net_usd"], "{:,.2f}"),
        )
    out.print(shown)


savings.__doc__ = _HELP
