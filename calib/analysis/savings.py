"""`calib savings`: the removal ledger (`calib.analysis.removals`) with its summary, and what-if pruning
(`calib.analysis.pruning`) on the same sessions, as one report for the command and for `--json`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

import polars as pl

from calib.analysis.context import load_calibration
from calib.analysis.prices import package_version
from calib.analysis.pruning import parse_policy, summarise_what_if, what_if_pruning
from calib.analysis.removals import (
    ledger_calls,
    price_removals,
    removal_events,
    summarise_ledger,
    with_prices,
    without_removals,
)
from calib.estimators.calibrated import CalibratedEstimator
from calib.store.store import Store, open_store

# What the counterfactual assumes, as `calib savings` prints it.
ASSUMPTIONS = (
    "without a removal, every later call up to the next compaction sends the removed tokens too (the "
    "observed drop where the next call has usage, else the calibrated estimate), with the same output; "
    "the window ends earlier where the prompt would no longer have fit the model's window",
    "the first call after the removal would have read from the cache what the call before it left there, "
    "if that call was to the same model within the cache's lifetime (5 minutes; 1 hour after one-hour "
    "writes); the rest of its prompt is written to the cache where the provider bills cache writes "
    "(Anthropic) and uncached input where it does not (OpenAI, Gemini)",
    "on later calls the removed tokens sit where the recorded call had its prefix: cache reads, else cache "
    "writes, else uncached input",
    "each removal is judged alone, every other one kept as recorded",
)


@dataclass
class SavingsReport:
    """`calib savings`' result: the ledger's events, its summary per agent and kind, the totals, and
    what the figures assume and leave out."""

    events: list[dict[str, Any]]
    summary: list[dict[str, Any]]
    total: dict[str, Any]
    prices: str
    config: str
    unpriced_models: list[str] = field(default_factory=list)
    # what-if pruning (`calib.analysis.pruning`), when policies were asked for: per session and policy,
    # and per agent and policy
    what_if: list[dict[str, Any]] = field(default_factory=list)
    what_if_summary: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The report as `calib savings --json` prints it."""
        doc = {
            "events": self.events,
            "summary": self.summary,
            "total": self.total,
            "prices": self.prices,
            "config": self.config,
            "unpriced_models": self.unpriced_models,
            "assumptions": list(ASSUMPTIONS),
            "notes": self.notes(),
        }
        if self.what_if_summary:
            doc["what_if"] = {"sessions": self.what_if, "summary": self.what_if_summary}
        return doc

    def notes(self) -> list[str]:
        """What the figures cannot see, one sentence each."""
        out = []
        masked = sum(1 for e in self.events if e["kind"] == "masked")
        if masked:
            out.append(
                f"{masked} gemini-cli maskings have no figures: the masked output is not on disk "
                "(its file under tool-outputs/ is gone), so neither its size nor when it left is known"
            )
        unobserved = sum(1 for e in self.events if e["kind"] != "masked" and e["removed_observed"] is None)
        if unobserved:
            out.append(
                f"removals with no observed drop: {unobserved} (the call after the removal has no usage, or "
                "is to another model, or an error stands between): their net effect rests on the estimate"
            )
        uncached = sum(1 for e in self.events if e["caching"] == "none" and e["kind"] != "masked")
        if uncached:
            out.append(
                f"removals in sessions that recorded no cache field: {uncached} (priced as uncached input "
                "in both worlds, the removed tokens included)"
            )
        if self.unpriced_models:
            out.append(
                f"{self.prices} has no price for {', '.join(self.unpriced_models)}: those removals have "
                "tokens and no dollars, and are not judged paid off or not"
            )
        return out


def run_savings(
    db: str | os.PathLike[str] | None = None,
    config: str | os.PathLike[str] | None = None,
    *,
    session: str | None = None,
    agent: str | None = None,
    what_if: Sequence[str] = (),
) -> SavingsReport:
    """`calib savings`: the removal ledger of the store's sessions (or one `session`'s, or one
    `agent`'s), counted with the calibration `config`, with its summary per agent and kind; with
    `what_if` policies (`opencode`, `older-than:N`), each replayed on the same sessions and priced
    (`calib.analysis.pruning`)."""
    policies = [parse_policy(p) for p in dict.fromkeys(what_if)]  # a wrong policy fails before reading
    version = package_version()
    estimator = load_calibration(config)[1]
    with open_store(db, read_only=True) as store:
        # one reading of the store for both: every session priced when a policy is replayed on it
        calls = ledger_calls(store, estimator, session=session, agent=agent, every=bool(policies))
        ledger = price_removals(calls, removal_events(store, estimator, calls))
        replayed = what_if_pruning(store, estimator, policies, calls=calls) if policies else None
    summary = summarise_ledger(ledger)
    everything = summarise_ledger(
        ledger.with_columns(pl.lit("all").alias("agent"), pl.lit("all").alias("kind"))
    )
    total = {k: v for k, v in everything[0].items() if k not in ("agent", "kind")} if everything else {}
    unpriced = ledger.filter(pl.col("calls_after").is_not_null() & pl.col("net_usd").is_null())
    models = sorted({f"{p}/{m}" for p, m in unpriced.select("provider", "model").unique().iter_rows()})
    report = SavingsReport(
        ledger.to_dicts(),
        summary,
        total,
        f"genai-prices {version}",
        str(config or "calibration.json"),
        models,
    )
    if replayed is not None:
        report.what_if = replayed.to_dicts()
        report.what_if_summary = summarise_what_if(replayed)
    return report


# How many removals the report lists with the largest net saving, and with the largest net loss.
REPORT_LISTED = 5
# The fields of each removal the report lists.
_LISTED = (
    "agent",
    "session",
    "file",
    "call",
    "kind",
    "model",
    "removed",
    "paid_off_after",
    "net_tokens",
    "net_usd",
)


def savings_section(
    store: Store, estimator: CalibratedEstimator, calls: pl.DataFrame
) -> dict[str, Any] | None:
    """The report's removals section from `calls` (rows of `LEDGER_INPUT`, every call of the sessions
    to look at), or None without a removal: the ledger's summary per agent and kind and its totals, the
    removals with the largest net saving and loss (file by name, and call), and per agent one session
    (the one whose priced removals moved the most dollars, else the one with the most removals) billed
    call by call as recorded and without its removals (`without_removals`)."""
    marked = (
        pl.col("reason").is_in(["compaction", "pruned", "masked"]) | pl.col("removal").is_not_null()
    ).any()
    calls = calls.filter(marked.over("session_uid"))
    if calls.is_empty():
        return None
    priced = with_prices(store, calls)
    events = removal_events(store, estimator, priced)
    if events.is_empty():
        return None
    ledger = price_removals(priced, events)
    summary = summarise_ledger(ledger)
    everything = summarise_ledger(
        ledger.with_columns(pl.lit("all").alias("agent"), pl.lit("all").alias("kind"))
    )
    listed = ledger.filter(pl.col("net_usd").is_not_null()).with_columns(
        pl.col("file").map_elements(lambda f: PurePath(f).name, return_dtype=pl.String),
        pl.coalesce("removed_observed", "removed_estimated").alias("removed"),
    )
    return {
        "prices": f"genai-prices {package_version()}",
        "summary": summary,
        "total": {k: v for k, v in everything[0].items() if k not in ("agent", "kind")},
        "largest_saving": listed.filter(pl.col("net_usd") > 0)
        .sort("net_usd", "session", "call", descending=[True, False, False])
        .head(REPORT_LISTED)
        .select(_LISTED)
        .to_dicts(),
        "largest_loss": listed.filter(pl.col("net_usd") < 0)
        .sort("net_usd", "session", "call")
        .head(REPORT_LISTED)
        .select(_LISTED)
        .to_dicts(),
        "timelines": _timelines(priced, events, ledger),
    }


def _timelines(calls: pl.DataFrame, events: pl.DataFrame, ledger: pl.DataFrame) -> list[dict[str, Any]]:
    """Per agent, one session's calls as recorded and without its removals (`savings_section`)."""
    measured = ledger.filter(pl.col("kind") != "masked")
    if measured.is_empty():
        return []
    ranked = (
        measured.group_by("agent", "session")
        .agg(pl.col("net_usd").abs().sum().alias("_moved"), pl.len().alias("_events"))
        .sort("agent", "_moved", "_events", "session", descending=[False, True, True, False])
    )
    out = []
    for row in ranked.unique("agent", keep="first", maintain_order=True).iter_rows(named=True):
        uid = row["session"]
        session_calls = calls.filter(pl.col("session_uid") == uid)
        session_events = events.filter(pl.col("session_uid") == uid)
        timeline = without_removals(session_calls, session_events)
        out.append(
            {
                "agent": row["agent"],
                "session": uid,
                "file": PurePath(session_calls["file"][0]).name if session_calls["file"][0] else None,
                "model": session_calls["model"].drop_nulls().mode().sort()[0]
                if session_calls.height
                else None,
                "events": [
                    {"call": e["call"], "kind": e["kind"]}
                    for e in measured.filter(pl.col("session") == uid).sort("call").iter_rows(named=True)
                ],
                "calls": timeline.to_dicts(),
            }
        )
    return out
