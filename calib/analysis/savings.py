"""`calib savings`: the removal ledger (`calib.analysis.removals`) with its summary, and what-if pruning
(`calib.analysis.pruning`) on the same sessions, as one report for the command and for `--json`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from calib.analysis.context import load_calibration
from calib.analysis.prices import package_version
from calib.analysis.pruning import parse_policy, summarise_what_if, what_if_pruning
from calib.analysis.removals import removal_ledger, summarise_ledger
from calib.store.store import open_store

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
    with open_store(db, read_only=True) as store:
        ledger = removal_ledger(store, config, session=session, agent=agent)
        replayed = (
            what_if_pruning(store, load_calibration(config)[1], policies, session=session, agent=agent)
            if policies
            else None
        )
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
