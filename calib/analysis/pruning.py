"""What-if pruning: a pruning policy replayed on the logged sessions, priced with the prompt cache.

The question a user of an agent asks before turning pruning on: would it have paid off on my
sessions? Pruning replaces old tool outputs with a short placeholder, so every later prompt is
smaller, but the prompt changes in the middle: the cached prefix after the first pruned output is lost
and is written (Anthropic) or sent uncached (OpenAI, Gemini) again at the next call. This module
replays a policy over each session as the log recorded it and prices both worlds call by call from the
same table as `calib cost` (`calib.analysis.prices`).

Policies (`parse_policy`):

- `opencode`: OpenCode's own pruning, at the end of each turn (before the call that sends a new user
  message): walking the history back from the newest part, skipping the two newest user turns and
  stopping at a summary or an output pruned already, it adds up the tool outputs' `length / 4`; once
  that passes 40,000, every older tool output (but the `skill` tool's) is marked; the marks are applied
  only if they come to more than 20,000. A pruned output is sent as `[Old tool result content cleared]`.
- `older-than:N`: at each new user turn, every tool output produced N or more user turns before it is
  pruned (the same placeholder).

Outputs the log shows pruned already stay as the log has them: a policy only adds to what the agent did.
What a pruned output saves is its calibrated count minus its placeholder's, counted with the
parameters of the call it is pruned before.

The world with the policy, call by call (`ctx` and the cache fields as recorded, `S` the savings of
the outputs pruned so far that are still in the call's prompt):

- the prompt is `ctx - S`;
- at a call where the policy prunes, the cache can be read only up to the first output pruned there
  (its position: the recorded prompt minus the calibrated count of every part from that output on,
  minus what earlier prunes saved before it), and at most what the recorded call read; the rest of
  the prompt is written to the cache where the provider bills writes (Anthropic), but for the
  uncached tail the call recorded, and is uncached input where it does not;
- at every other call the savings come off the part of the prompt the recorded call read from the
  cache, else off what it wrote, else off its uncached input;
- outputs are the same; a call without cache fields is priced as uncached in both worlds.

The net effect per session is recorded minus with-policy (positive: the policy would have saved), by
input category and in dollars (null where the model has no price). The session's own compactions and
removals stay as recorded; a policy that would have kept a session below its compaction threshold does
not move that compaction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from calib.analysis.prices import price_calls
from calib.analysis.removals import billed_as, ledger_calls, recached, session_caching
from calib.core.errors import UsageError
from calib.estimators.calibrated import CalibratedEstimator
from calib.store.store import Store

# OpenCode's pruning (packages/opencode/src/session/compaction.ts): the newest tool output tokens it
# keeps, the least it prunes at once, and the tools it never prunes.
OPENCODE_PROTECT = 40_000
OPENCODE_MINIMUM = 20_000
OPENCODE_PROTECTED_TOOLS = frozenset({"skill"})
OPENCODE_PROTECTED_TURNS = 2
# What a pruned output is sent as (OpenCode's placeholder; the policy `older-than:N` uses it too).
PLACEHOLDER = "[Old tool result content cleared]"
POLICY_HELP = "opencode, or older-than:N (every tool output N or more user turns old)"
# The columns of `what_if`'s frame, one row per session and policy.
COLUMNS = (
    "agent",
    "session",
    "file",
    "policy",
    "calls",
    "prunes",
    "outputs_pruned",
    "tokens_pruned",
    "net_uncached",
    "net_cache_write",
    "net_cache_read",
    "net_tokens",
    "net_usd",
)

SCHEMA: dict[str, Any] = {
    c: pl.String
    if c in ("agent", "session", "file", "policy")
    else pl.Float64
    if c == "net_usd"
    else pl.Int64
    for c in COLUMNS
}

_PARTS = """
SELECT p.session_uid, p.seq, p.kind, p.role, p.call_uid, p.tool_name, p.resent, p.pruned_at,
       length(p.text) AS chars, e.source, e.tokens, e.pruned_tokens
FROM parts p LEFT JOIN part_estimates e ON e.part_uid = p.part_uid AND list_contains($sources, e.source)
WHERE list_contains($sessions, p.session_uid)
ORDER BY p.session_uid, p.seq
"""
_BOUNDS = """
SELECT call_uid, prompt_start, prompt_end FROM calls WHERE list_contains($sessions, session_uid)
"""


@dataclass(frozen=True)
class Policy:
    """A pruning policy: `opencode`, or `older-than` with its number of turns."""

    name: str
    turns: int = 0

    @property
    def label(self) -> str:
        return f"older-than:{self.turns}" if self.name == "older-than" else self.name


def parse_policy(text: str) -> Policy:
    """A policy from its name (`opencode`, `older-than:N`), or a usage error naming the policies."""
    if text == "opencode":
        return Policy("opencode")
    found = re.fullmatch(r"older-than:(\d+)", text)
    if found and int(found.group(1)) >= 1:
        return Policy("older-than", int(found.group(1)))
    raise UsageError(f"unknown pruning policy {text!r}", hint=f"use {POLICY_HELP}")


@dataclass
class _Part:
    seq: int
    kind: str
    tool: str | None
    turn: int  # user turns before it (a user message is in its own turn)
    chars: int
    counts: dict[str, float]  # base counts per source, of the text as the log has it at the time
    logged_prune: Any  # when the log pruned it, or None
    sent: bool


def what_if_pruning(
    store: Store,
    estimator: CalibratedEstimator,
    policies: Sequence[Policy],
    *,
    session: str | None = None,
    agent: str | None = None,
    calls: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One row per session and policy (`COLUMNS`): how many times the policy pruned, how many outputs
    and calibrated tokens, and the net effect of the policy by input category and in dollars. `calls`:
    `ledger_calls(..., every=True)` of those sessions when the caller has it already."""
    if calls is None:
        calls = ledger_calls(store, estimator, session=session, agent=agent, every=True)
    uids = calls["session_uid"].unique().to_list()
    bounds = store.query(_BOUNDS, {"sessions": uids})
    calls = calls.join(bounds, on="call_uid", how="left")
    parts = _parts(store, estimator, uids)
    caching = session_caching(calls)
    placeholder_counts: dict[tuple[Any, Any], float] = {}
    rows: list[dict[str, Any]] = []
    billed: list[dict[str, Any]] = []
    for (uid,), session_calls in calls.group_by("session_uid", maintain_order=True):
        session_parts = parts.get(str(uid), [])
        for policy in policies:
            row, with_policy = _replay(
                session_calls,
                session_parts,
                policy,
                estimator,
                caching.get(str(uid), "none"),
                placeholder_counts,
            )
            for call in with_policy:
                call["_row"] = len(rows)
            rows.append(row)
            billed.extend(with_policy)
    return _net(rows, billed)


def _parts(store: Store, estimator: CalibratedEstimator, uids: list[str]) -> dict[str, list[_Part]]:
    """Each session's parts in order, with their base counts per source of the calibration."""
    frame = store.query(_PARTS, {"sessions": uids, "sources": list(estimator.sources)})
    out: dict[str, list[_Part]] = {}
    current: dict[tuple[str, int], _Part] = {}
    turns: dict[str, int] = {}
    for row in frame.iter_rows(named=True):
        key = (row["session_uid"], row["seq"])
        part = current.get(key)
        if part is None:
            uid = row["session_uid"]
            user = row["kind"] == "user_text" and row["call_uid"] is None
            turns[uid] = turns.get(uid, 0) + (1 if user else 0)
            part = _Part(row["seq"], row["kind"], row["tool_name"], turns[uid], row["chars"] or 0, {},
                         row["pruned_at"], bool(row["resent"]))  # fmt: skip
            current[key] = part
            out.setdefault(uid, []).append(part)
        if row["source"] is not None:
            part.counts[row["source"]] = float(row["tokens"])
    return out


def _tokens(part: _Part, estimator: CalibratedEstimator, provider: Any, model: Any) -> float:
    """A part's calibrated count for a (provider, model), without message framing."""
    group = estimator.for_group(provider, model)
    base = sum(group.source_weights.get(s, 0.0) * n for s, n in part.counts.items())
    return group.ratios[estimator.calibration.group(part.kind)] * base


def _placeholder(
    estimator: CalibratedEstimator, provider: Any, model: Any, cache: dict[tuple[Any, Any], float]
) -> float:
    key = (provider, model)
    if key not in cache:
        cache[key] = float(estimator.count_parts([("tool_result", PLACEHOLDER)], provider, model, messages=0))
    return cache[key]


def _choose(policy: Policy, history: list[_Part], pruned: set[int], turn: int) -> list[_Part]:
    """The tool outputs `policy` prunes before the first call of user turn `turn` (`history`: the
    parts of the prompt before the new user message, oldest first; `pruned`: seqs pruned already)."""
    outputs = [p for p in history if p.kind == "tool_result" and p.sent and p.seq not in pruned]
    if policy.name == "older-than":
        return [p for p in outputs if turn - p.turn >= policy.turns]
    total, marked, amount = 0, [], 0
    newest = max((p.turn for p in history), default=0)
    for part in reversed(history):
        if part.kind == "summary" or (part.kind == "tool_result" and part.seq in pruned):
            break
        if newest - part.turn < OPENCODE_PROTECTED_TURNS or part.kind != "tool_result" or not part.sent:
            continue
        if part.tool in OPENCODE_PROTECTED_TOOLS:
            continue
        estimate = round(part.chars / 4)
        total += estimate
        if total > OPENCODE_PROTECT:
            marked.append(part)
            amount += estimate
    return marked if amount > OPENCODE_MINIMUM else []


def _replay(
    calls: pl.DataFrame,
    parts: list[_Part],
    policy: Policy,
    estimator: CalibratedEstimator,
    mode: str,
    placeholders: dict[tuple[Any, Any], float],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One session under one policy: its summary row and its calls as billed with the policy."""
    first = calls.row(0, named=True)
    row: dict[str, Any] = {
        "agent": first["agent"] or first["tool"],
        "session": first["session_uid"],
        "file": first["file"],
        "policy": policy.label,
        "calls": calls.height,
        "prunes": 0,
        "outputs_pruned": 0,
        "tokens_pruned": 0.0,
    }
    by_seq = {p.seq: p for p in parts}
    saved: dict[int, float] = {}  # seq -> tokens the policy's prune of it saves
    billed: list[dict[str, Any]] = []
    previous: dict[str, Any] | None = None  # the previous call with usage, as billed with the policy
    previous_end = 0
    for call in calls.iter_rows(named=True):
        start, end = call["prompt_start"] or 0, call["prompt_end"] or 0
        in_prompt = [by_seq[s] for s in range(start, end) if s in by_seq]
        new_user = [p for p in in_prompt if p.seq >= previous_end and p.kind == "user_text" and p.turn > 0]
        previous_end = end
        pruned_now: list[_Part] = []
        if new_user and previous is not None:
            opening = new_user[0]
            history = [p for p in in_prompt if p.seq < opening.seq]
            logged = {
                p.seq
                for p in history
                if p.logged_prune is not None and call["ts"] and p.logged_prune <= call["ts"]
            }
            pruned_now = _choose(policy, history, set(saved) | logged, opening.turn)
            holder = _placeholder(estimator, call["provider"], call["model"], placeholders)
            for part in pruned_now:
                gain = _tokens(part, estimator, call["provider"], call["model"]) - holder
                if gain > 0:
                    saved[part.seq] = gain
            pruned_now = [p for p in pruned_now if p.seq in saved]
            if pruned_now:
                row["prunes"] += 1
                row["outputs_pruned"] += len(pruned_now)
                row["tokens_pruned"] += sum(saved[p.seq] for p in pruned_now)
        if call["ctx"] is None:
            continue
        savings = sum(v for s, v in saved.items() if start <= s < end)
        billed_call = _billed(call, savings, pruned_now, in_prompt, saved, mode, estimator)
        billed.append(billed_call)
        previous = billed_call
    row["tokens_pruned"] = round(row["tokens_pruned"])
    return row, billed


def _billed(
    call: dict[str, Any],
    savings: float,
    pruned_now: list[_Part],
    in_prompt: list[_Part],
    saved: dict[int, float],
    mode: str,
    estimator: CalibratedEstimator,
) -> dict[str, Any]:
    """One call as billed with the policy (module docstring)."""
    ctx, read, write = call["ctx"], call["cache_read"], call["cache_write"]
    total = max(0, ctx - round(savings))
    out = billed_as(call, total)
    if mode == "none" or (read is None and write is None) or total == ctx:
        return out
    # the writes that change are priced at the 5-minute rate
    out["cache_write_5m"], out["cache_write_1h"] = None, None
    read, write = read or 0, write or 0
    read_to = None
    if pruned_now:
        first = min(p.seq for p in pruned_now)
        after = sum(
            _tokens(p, estimator, call["provider"], call["model"])
            for p in in_prompt
            if p.seq >= first and p.sent
        )
        here = {p.seq for p in in_prompt}
        before_saved = sum(v for s, v in saved.items() if s < first and s in here)
        position = max(0, round(ctx - after - before_saved))
        read_to = min(max(0, read - round(before_saved)), position, total)
    out["cache_read"], out["cache_write"] = recached(ctx, read, write, total, mode, read_to)
    return out


def _net(rows: list[dict[str, Any]], billed: list[dict[str, Any]]) -> pl.DataFrame:
    """The frame: each session's row with the sums over its calls of recorded minus with-policy."""
    for row in rows:
        row.update(net_uncached=0, net_cache_write=0, net_cache_read=0, net_tokens=0, net_usd=None)
    if billed:
        frame = price_calls(pl.DataFrame(billed, infer_schema_length=None))
        frame = frame.with_columns(
            (pl.col("rec_read") - pl.col("cache_read").fill_null(0)).alias("d_read"),
            (pl.col("rec_write") - pl.col("cache_write").fill_null(0)).alias("d_write"),
            (pl.col("rec_ctx") - pl.col("ctx")).alias("d_tokens"),
            (pl.col("rec_usd") - pl.col("usd")).alias("d_usd"),
        )
        for (index,), calls in frame.group_by("_row", maintain_order=True):
            row = rows[int(index)]
            read, write, tokens = (int(calls[c].sum()) for c in ("d_read", "d_write", "d_tokens"))
            row.update(
                net_cache_read=read,
                net_cache_write=write,
                net_uncached=tokens - read - write,
                net_tokens=tokens,
            )
            if calls["d_usd"].null_count() == 0:
                row["net_usd"] = round(float(calls["d_usd"].sum()), 6)
    return pl.DataFrame([{c: r.get(c) for c in COLUMNS} for r in rows], schema=SCHEMA)


def summarise_what_if(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """Per agent and policy: the sessions, those the policy pruned in, how many of those it would have
    paid off in (net dollars above 0) and lost in, the prunes, outputs and tokens pruned, and the net
    tokens and dollars."""
    if frame.is_empty():
        return []
    touched = pl.col("prunes") > 0
    priced = pl.col("net_usd").is_not_null()
    out = (
        frame.group_by("agent", "policy")
        .agg(
            pl.len().alias("sessions"),
            touched.sum().alias("pruned_sessions"),
            (touched & priced & (pl.col("net_usd") > 0)).sum().alias("paid_off"),
            (touched & priced & (pl.col("net_usd") <= 0)).sum().alias("lost"),
            pl.col("prunes").sum(),
            pl.col("outputs_pruned").sum(),
            pl.col("tokens_pruned").sum(),
            pl.col("net_tokens").sum(),
            pl.when(priced.any()).then(pl.col("net_usd").sum()).alias("net_usd"),
            (touched & ~priced).sum().alias("unpriced"),
        )
        .sort("agent", "policy")
    )
    rows = out.to_dicts()
    for row in rows:
        if row["net_usd"] is not None:
            row["net_usd"] = round(row["net_usd"], 6)
    return rows
