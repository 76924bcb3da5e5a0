"""`calib cost`: what the logged calls cost, per session, model, agent or day, cache included.

Every call with usage is priced alone from the price table `genai-prices` ships (`calib.analysis.prices`:
input as the whole prompt with its cache reads and writes at their own rates, output with the reasoning
billed as output, each call's tier by its own prompt), then the calls are summed per group. The calls
are the store's: one per API call, deduplicated the way each importer defines a call (Claude Code by
message and request id, Codex by its `token_count` events), which for Claude Code and Codex is the way
ccusage counts them too.

What the figures cannot see is said beside them: the models the table has no price for (their tokens
are summed, their dollars are not), the calls that recorded no cache field (priced as all uncached),
the calls whose output is a streaming placeholder (Claude Code 2.0.x-2.1.6x; billed as recorded, as
ccusage does), and the calls without usage (neither tokens nor dollars).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from calib.analysis.context import pick_sessions
from calib.analysis.prices import package_version, price_calls
from calib.core.errors import UsageError
from calib.store.store import Store, open_store

# What `calib cost --by` groups by, and the key columns of each.
GROUPINGS: dict[str, tuple[str, ...]] = {
    "session": ("session", "agent", "file"),
    "model": ("provider", "model"),
    "agent": ("agent",),
    "day": ("day",),
}
DEFAULT_BY = "session"
# Each row's figures, after its keys.
FIGURES = (
    "calls",
    "priced_calls",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "usd",
    "usd_input",
    "usd_output",
    "unpriced_calls",
    "uncached_calls",
    "no_usage_calls",
)

# One row per call, with what pricing reads: Claude Code's raw usage splits cache writes by lifetime;
# gemini's prompt leaves out the tool-use prompt tokens, which are billed as input too.
_CALLS = """
SELECT c.call_uid, c.session_uid AS session, s.tool AS agent, s.source_path AS file, c.seq, c.ts,
       c.provider, c.model, c.usage_style,
       c.ctx + CASE WHEN c.usage_style = 'gemini' THEN coalesce(c.tool_prompt, 0) ELSE 0 END AS ctx,
       c.output, c.reasoning, c.cache_read, c.cache_write, c.output_placeholder,
       TRY_CAST(json_extract_string(c.usage_raw, '$.cache_creation.ephemeral_5m_input_tokens') AS BIGINT)
         AS cache_write_5m,
       TRY_CAST(json_extract_string(c.usage_raw, '$.cache_creation.ephemeral_1h_input_tokens') AS BIGINT)
         AS cache_write_1h
FROM calls c JOIN sessions s USING (session_uid)
WHERE ($sessions IS NULL OR list_contains($sessions, c.session_uid)) AND ($agent IS NULL OR s.tool = $agent)
ORDER BY c.session_uid, c.seq
"""


@dataclass
class CostReport:
    """`calib cost`'s result: one row per group (`rows`, `FIGURES` after the keys), the totals, and
    what the figures leave out."""

    by: str
    rows: list[dict[str, Any]]
    total: dict[str, Any]
    prices: str  # the price table: "genai-prices X.Y.Z"
    unpriced_models: list[str] = field(default_factory=list)
    placeholder_outputs: int = 0
    # "provider/model as table-provider/table-model": found under another provider's entry of the table
    # (an agent's own provider name, such as OpenCode's `opencode` or a gateway, that the table lacks)
    priced_elsewhere: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The report as `calib cost --json` prints it."""
        return {
            "by": self.by,
            "rows": self.rows,
            "total": self.total,
            "prices": self.prices,
            "unpriced_models": self.unpriced_models,
            "priced_elsewhere": self.priced_elsewhere,
            "notes": self.notes(),
        }

    def notes(self) -> list[str]:
        """What the figures cannot see, one sentence each (empty when nothing is left out)."""
        out = []
        if self.unpriced_models:
            out.append(
                f"{self.total['unpriced_calls']} calls of models {self.prices} has no price for "
                f"({', '.join(self.unpriced_models)}): their tokens are counted, their dollars are not"
            )
        if self.priced_elsewhere:
            out.append(
                "priced under another provider's entry of the table, found by the model's name: "
                + ", ".join(self.priced_elsewhere)
            )
        if self.total["uncached_calls"]:
            out.append(
                f"{self.total['uncached_calls']} calls recorded no cache field: priced as all uncached input"
            )
        if self.placeholder_outputs:
            out.append(
                f"{self.placeholder_outputs} calls recorded a streaming placeholder as their output (Claude "
                "Code 2.0.x-2.1.6x): billed as recorded, as ccusage does, so their output is undercounted"
            )
        if self.total["no_usage_calls"]:
            out.append(f"{self.total['no_usage_calls']} calls have no usage: neither tokens nor dollars")
        return out


def cost_calls(
    store: Store, *, session: str | None = None, agent: str | None = None, uids: Sequence[str] | None = None
) -> pl.DataFrame:
    """Every call of the store (or of one `session`, or one `agent`, or of the sessions `uids`), priced
    (`price_calls`), with the billed output as `output_tokens` and its UTC `day`."""
    if session is not None:
        uids = pick_sessions(store, session, every=False)[0]
    if agent is not None:
        check_agent(store, agent)
    return price_calls(logged_calls(store, uids=uids, agent=agent)).with_columns(
        pl.col("ts").dt.date().alias("day")
    )


def logged_calls(
    store: Store, *, uids: Sequence[str] | None = None, agent: str | None = None
) -> pl.DataFrame:
    """The calls `cost_calls` prices, as logged (of the sessions `uids`, or of one `agent`, or all)."""
    return store.query(_CALLS, {"sessions": None if uids is None else list(uids), "agent": agent})


def check_agent(store: Store, agent: str) -> None:
    """A usage error naming the store's agents unless `agent` has a session in it."""
    known = set(store.query("SELECT DISTINCT tool FROM sessions")["tool"].to_list())
    if agent not in known:
        raise UsageError(
            f"no session of agent {agent!r} in the store",
            hint="agents in it: " + (", ".join(sorted(known)) or "none (run `calib ingest PATH` first)"),
        )


def summarise_cost(calls: pl.DataFrame, by: str = DEFAULT_BY) -> list[dict[str, Any]]:
    """`cost_calls` summed per group of `by` (`GROUPINGS`), groups in key order."""
    keys = _keys(by)
    if calls.is_empty():
        return []
    has_usage = pl.col("ctx").is_not_null()
    frame = calls.group_by(keys).agg(
        pl.len().alias("calls"),
        pl.col("usd").is_not_null().sum().alias("priced_calls"),
        pl.col("ctx").sum().alias("input_tokens"),
        pl.col("cache_read").sum().alias("cache_read_tokens"),
        pl.col("cache_write").sum().alias("cache_write_tokens"),
        pl.col("output_tokens").sum().alias("output_tokens"),
        # a group with no priced call has no dollar figure, not $0
        pl.when(pl.col("usd").is_not_null().any()).then(pl.col("usd").sum()).alias("usd"),
        pl.when(pl.col("usd").is_not_null().any()).then(pl.col("usd_input").sum()).alias("usd_input"),
        pl.when(pl.col("usd").is_not_null().any()).then(pl.col("usd_output").sum()).alias("usd_output"),
        (has_usage & pl.col("usd").is_null()).sum().alias("unpriced_calls"),
        pl.col("uncached").sum().alias("uncached_calls"),
        (~has_usage).sum().alias("no_usage_calls"),
    )
    frame = frame.sort(keys, nulls_last=True)
    return [_rounded(row) for row in frame.select(*keys, *FIGURES).iter_rows(named=True)]


def _keys(by: str) -> list[str]:
    """The key columns of grouping `by`, or a usage error naming the groupings."""
    if by not in GROUPINGS:
        raise UsageError(f"cannot group costs by {by!r}", hint="use one of: " + ", ".join(GROUPINGS))
    return list(GROUPINGS[by])


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    """Dollars to the micro-dollar (a float sum's last digits are noise), days as ISO dates."""
    out = dict(row)
    for key in ("usd", "usd_input", "usd_output"):
        if out.get(key) is not None:
            out[key] = round(out[key], 6)
    if out.get("day") is not None:
        out["day"] = out["day"].isoformat()
    return out


def run_cost(
    db: str | os.PathLike[str] | None = None,
    *,
    by: str = DEFAULT_BY,
    session: str | None = None,
    agent: str | None = None,
) -> CostReport:
    """`calib cost`: the store's calls (or one `session`'s, or one `agent`'s) priced and summed per
    group of `by` (`session`, `model`, `agent` or `day`), with the totals and what they leave out."""
    _keys(by)  # a wrong --by fails before the store is read
    version = package_version()
    with open_store(db, read_only=True) as store:
        calls = cost_calls(store, session=session, agent=agent)
    rows = summarise_cost(calls, by)
    everything = summarise_cost(calls.with_columns(pl.lit("all").alias("agent")), "agent")
    total = {k: v for k, v in everything[0].items() if k != "agent"} if everything else _empty_total()
    unknown = calls.filter(pl.col("ctx").is_not_null() & pl.col("usd").is_null())
    models = sorted(
        {f"{p}/{m}" if p else str(m) for p, m in unknown.select("provider", "model").unique().iter_rows()}
    )
    placeholders = int(calls["output_placeholder"].fill_null(False).sum()) if calls.height else 0
    found = calls.filter(pl.col("priced_as").is_not_null()).select("provider", "model", "priced_as").unique()
    elsewhere = sorted(f"{p}/{m} as {a}" for p, m, a in found.iter_rows() if a.split("/")[0] != p)
    return CostReport(by, rows, total, f"genai-prices {version}", models, placeholders, elsewhere)


def _empty_total() -> dict[str, Any]:
    return {k: (None if k.startswith("usd") else 0) for k in FIGURES}
