"""The removal ledger: what each removal of text from the context really saved once the prompt cache
is counted, in tokens and dollars (`calib savings`).

A removal is text the logs show leaving the context between two calls (`calib.scoring.chain`):

- `compaction`: the history replaced by a summary (Claude Code `compact_boundary`, Codex `compacted`,
  gemini-cli compression, OpenCode and Dexto compaction): the chain's `compaction` break;
- `pruned`: tool outputs replaced by a placeholder the call before had not seen (OpenCode
  `time.compacted`, OpenCode 2 `time.pruned`, Dexto `compactedAt`, Claude Code microcompaction,
  gemini-cli masking where its saved output was read back): the frame's `removal == "pruned"`;
- `reasoning`: reasoning the agent stopped sending (Codex at a new user turn), whose count the
  provider had reported: the frame's `removal == "reasoning"`;
- `masked`: gemini-cli masking whose saved output is not on disk, so neither the text that left nor
  the moment is known: listed, with no figures.

Each event is call `k`, the first call after the removal. Its figures:

- `removed_estimated`: the calibrated count of the text that left, net of what replaced it (the
  placeholder; for a compaction the summary): for pruning the removed parts' count minus their
  placeholders', for reasoning the reported reasoning count, for a compaction the calibrated prompt of
  call `k-1` plus its carried output minus the parts of call `k`'s prompt that were already there,
  minus the summary;
- `removed_observed`: what the chain predicts for call `k` without the removal (`ctx[k-1] +
  carry[k-1]` plus the calibrated count of the new input, the summary left out) minus the prompt the
  provider reported. Null where call `k` or `k-1` has no usage, or the two calls are not comparable
  (another model, an error);
- context and cache before and after: `ctx_before` (`ctx[k-1]`), `ctx_after` (`ctx[k]`),
  `cache_read_before`, `cache_read_after`, `cache_write_next` (call `k`'s cache write: the prefix
  written again).

**The counterfactual.** The same session without the removal: every later call up to the next
compaction (or the end of the session) sends `R` more tokens (`R` = `removed_observed`, else
`removed_estimated`; a compaction that grew the context has a negative `R`), with the same outputs.
The window ends earlier at the first call whose prompt with the `R` tokens would not have fit the
model's window (`calib.analysis.windows`): the agent would have had to remove something by then.
`window_end` says which (`compaction`, `window` or `session`). What the logs recorded stays as it is;
only what the removal changed is modelled, from the recorded cache fields:

- call `k`: without the removal its prompt would have begun with what call `k-1` left in the cache
  (`cache_read + cache_write` of call `k-1` where the provider bills cache writes; all of `ctx[k-1]`
  where caching is implicit), read from there if call `k-1` was to the same model within the cache's
  lifetime (5 minutes; one hour after one-hour writes: a read alone proves nothing, a system prompt
  shared by every session stays cached); the rest of the prompt is written to the cache where the
  provider bills cache writes (Anthropic), but for the uncached tail the call recorded, and is
  uncached input where it does not (OpenAI and Gemini implicit caching: no write premium);
- every later call: the `R` tokens sit in the part of the prompt the recorded call read from the cache
  (cache reads), else in what it wrote (cache writes), else in its uncached input;
- a call that recorded no cache field is priced as uncached in both worlds, `R` included.

Both worlds are priced call by call from the same table (`calib.analysis.prices`). The net effect is
counterfactual minus recorded, by category (`net_uncached`, `net_cache_write`, `net_cache_read`, their
sum `net_tokens`) and in dollars (`net_usd`, null where the model has no price): positive is what the
removal saved. `paid_off_after` is the number of calls, from call `k`, until the running net in
dollars is no longer negative (null: never within the window). Each event is judged alone, every
other removal kept as recorded, so the nets of overlapping windows do not add up exactly. `call` is
the call's position in its session from 0, as in `calib score --calls`.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import polars as pl

from calib.analysis.batches import compact
from calib.analysis.context import load_calibration, pick_sessions
from calib.analysis.cost import check_agent, logged_calls
from calib.analysis.prices import price_calls
from calib.analysis.windows import WindowTable, load_windows
from calib.core.errors import UsageError
from calib.estimators.calibrated import CalibratedEstimator
from calib.scoring.chain import feature_batches
from calib.scoring.score import estimate_frame
from calib.store.store import Store

# The kinds of removal, in the order they are listed.
KINDS: tuple[str, ...] = ("compaction", "pruned", "reasoning", "masked")
# How long a cache entry lives without a read: Anthropic's default entries, and what OpenAI and Gemini
# keep an implicit prefix cache for at the least.
CACHE_LIFETIME = timedelta(minutes=5)
# Anthropic's one-hour entries (Claude Code writes them on some plans).
LONG_CACHE_LIFETIME = timedelta(hours=1)
# The breaks (beside none) after which the next call's prompt is compared with the chain's prediction for it.
_COMPARABLE = ("compaction", "negative_delta", "unrecorded")
# The columns of the ledger, in order.
COLUMNS = (
    "agent",
    "session",
    "file",
    "call",
    "kind",
    "provider",
    "model",
    "removed_estimated",
    "removed_observed",
    "basis",
    "ctx_before",
    "ctx_after",
    "cache_read_before",
    "cache_read_after",
    "cache_write_next",
    "caching",
    "calls_after",
    "window_end",
    "paid_off_after",
    "net_uncached",
    "net_cache_write",
    "net_cache_read",
    "net_tokens",
    "net_usd",
)
# The ledger's column types: text, counts, or dollars.
_TEXT = ("agent", "session", "file", "kind", "provider", "model", "basis", "caching", "window_end")
SCHEMA: dict[str, Any] = {
    c: pl.String if c in _TEXT else pl.Float64 if c == "net_usd" else pl.Int64 for c in COLUMNS
}
# The columns `with_prices` adds to each call, with their types.
_PRICED: dict[str, Any] = {
    "call_uid": pl.String,
    "agent": pl.String,
    "usage_style": pl.String,
    "output": pl.Int64,
    "reasoning": pl.Int64,
    "output_tokens": pl.Int64,
    "cache_read": pl.Int64,
    "cache_write": pl.Int64,
    "cache_write_5m": pl.Int64,
    "cache_write_1h": pl.Int64,
    "usd": pl.Float64,
    "usd_input": pl.Float64,
}
# The columns of `estimate_frame` the ledger reads of each call.
LEDGER_INPUT = (
    "session_uid",
    "call_uid",
    "seq",
    "tool",
    "file",
    "provider",
    "model",
    "reason",
    "removal",
    "ts",
    "ctx",
    "prev_ctx",
    "prev_carry",
    "est_appended",
    "est_removed",
    "est_full",
)
_SUMMARIES = """
SELECT call_uid, list(sent_text ORDER BY seq) AS texts
FROM appended_parts WHERE kind = 'summary' AND list_contains($calls, call_uid)
GROUP BY call_uid
"""


def removal_ledger(
    store: Store,
    config: str | os.PathLike[str] | CalibratedEstimator | None = None,
    *,
    session: str | None = None,
    agent: str | None = None,
) -> pl.DataFrame:
    """One row per removal event of the store's sessions (or of one `session`, or one `agent`'s), with
    the columns of `COLUMNS` (see the module's docstring), counted with the calibration `config` (a
    path, default ./calibration.json, or a loaded calibration)."""
    estimator = config if isinstance(config, CalibratedEstimator) else load_calibration(config)[1]
    calls = ledger_calls(store, estimator, session=session, agent=agent)
    return price_removals(calls, removal_events(store, estimator, calls))


def ledger_calls(
    store: Store,
    estimator: CalibratedEstimator,
    *,
    session: str | None = None,
    agent: str | None = None,
    every: bool = False,
) -> pl.DataFrame:
    """Every call of the store's sessions (or of one `session`, or one `agent`'s) in session order, with
    the calibration's counts of what was appended, what left and the whole prompt (`estimate_frame`),
    its cache fields and its price (`with_prices`: of the sessions with a removal, or of `every` one)."""
    uids = _sessions(store, session, agent)
    return with_prices(store, _calls(store, estimator, uids), every=every)


def with_prices(store: Store, calls: pl.DataFrame, *, every: bool = False) -> pl.DataFrame:
    """`calls` (the `LEDGER_INPUT` columns of `estimate_frame`) with their cache fields as logged and
    their price (`calib.analysis.prices.price_calls`), in session order. Only the sessions with a
    removal that has figures are priced (pricing is a Python call per call; `every`: all of them); the
    other sessions' dollars are null."""
    measured = pl.col("reason").is_in(["compaction", "pruned"]) | pl.col("removal").is_not_null()
    priced_uids = calls.filter(pl.lit(every) | measured)["session_uid"].unique()
    logged = logged_calls(store, uids=calls["session_uid"].unique().to_list())
    wanted = pl.col("session").is_in(priced_uids.implode())
    parts = [logged.filter(~wanted)]
    if priced_uids.len():  # else the price table is not even loaded
        parts.append(price_calls(logged.filter(wanted)))
    frame = pl.concat(parts, how="diagonal_relaxed")
    priced = frame.select(
        pl.col(c).cast(dt) if c in frame.columns else pl.lit(None, dt).alias(c) for c, dt in _PRICED.items()
    )
    return calls.join(priced, on="call_uid", how="left").sort("session_uid", "seq")


def _sessions(store: Store, session: str | None, agent: str | None) -> set[str]:
    """The uids of the sessions the ledger reads."""
    uids, info = pick_sessions(store, session, every=session is None)
    if agent is not None:
        check_agent(store, agent)
        uids = [u for u in uids if info[u]["tool"] == agent]
    return set(uids)


def _calls(store: Store, estimator: CalibratedEstimator, uids: set[str]) -> pl.DataFrame:
    """Every call of the sessions `uids`, with the calibration's counts of what was appended, what left
    and the whole prompt (`estimate_frame`), a batch of sessions at a time."""
    frames = []
    for batch in feature_batches(store, estimator.sources):
        batch = batch.filter(pl.col("session_uid").is_in(uids))
        if batch.height:
            estimated = estimate_frame(batch, estimator.name, estimator)
            frames.append(compact(estimated.select(LEDGER_INPUT)))  # not views of the whole batch
    if not frames:
        raise UsageError("the sessions asked for have no calls", hint="run `calib ingest PATH` first")
    return pl.concat(frames, how="vertical_relaxed")


# Each call's kind of removal (`KINDS`), null where nothing left: a compaction first (whatever else left
# with it), then what the frame's `removal` says, then a prune or a masking the log cannot place.
KIND = (
    pl.when(pl.col("reason") == "compaction")
    .then(pl.lit("compaction"))
    .when(pl.col("removal").is_not_null())
    .then(pl.col("removal"))
    .when(pl.col("reason").is_in(["pruned", "masked"]))
    .then(pl.col("reason"))
)


def removal_events(store: Store, estimator: CalibratedEstimator, calls: pl.DataFrame) -> pl.DataFrame:
    """The removal events of `calls` (`ledger_calls`' frame) with their removed tokens, estimated and
    observed, and what the counterfactual reads of the call before each."""
    frame = calls.with_columns(
        pl.col("est_full").shift(1).over("session_uid").alias("prev_full"),
        pl.col("cache_read").shift(1).over("session_uid").alias("cache_read_before"),
        pl.col("cache_write").shift(1).over("session_uid").alias("prev_cache_write"),
        pl.col("cache_write_1h").shift(1).over("session_uid").alias("prev_cache_write_1h"),
        pl.col("ts").shift(1).over("session_uid").alias("prev_ts"),
        pl.col("model").shift(1).over("session_uid").alias("prev_model"),
        KIND.alias("kind"),
    ).filter(pl.col("kind").is_not_null())
    compactions = frame.filter(pl.col("kind") == "compaction").select("call_uid", "provider", "model")
    summary_tokens: dict[str, float] = {}
    if compactions.height:
        summaries = store.query(_SUMMARIES, {"calls": compactions["call_uid"].to_list()})
        for row in summaries.join(compactions, on="call_uid").iter_rows(named=True):
            parts = [("summary", text) for text in row["texts"]]
            summary_tokens[row["call_uid"]] = float(
                estimator.count_parts(parts, row["provider"], row["model"])
            )
    summary = pl.col("call_uid").replace_strict(summary_tokens, default=0.0, return_dtype=pl.Float64)
    compaction = pl.col("kind") == "compaction"
    kept = pl.col("est_full") - pl.col("est_appended")
    estimated = (
        pl.when(compaction)
        .then(pl.col("prev_full") + pl.col("prev_carry") - kept - summary)
        .when(pl.col("removal").is_not_null())
        .then(pl.col("est_removed"))
        .otherwise(None)
    )
    new_input = pl.col("est_appended") - pl.when(compaction).then(summary).otherwise(0.0)
    comparable = pl.col("reason").is_null() | pl.col("reason").is_in(_COMPARABLE)
    observed = (
        pl.when(comparable & (pl.col("kind") != "masked"))
        .then(pl.col("prev_ctx") + pl.col("prev_carry") + new_input - pl.col("ctx"))
        .otherwise(None)
    )
    return frame.with_columns(
        estimated.round(0).alias("removed_estimated"), observed.round(0).alias("removed_observed")
    )


def session_caching(calls: pl.DataFrame) -> dict[str, str]:
    """Each session's caching: `explicit` (the provider billed cache writes), `implicit` (cache reads
    only), `none`."""
    per = calls.group_by("session_uid").agg(
        (pl.col("cache_write").fill_null(0) > 0).any().alias("writes"),
        (pl.col("cache_read").fill_null(0) > 0).any().alias("reads"),
    )
    return {
        uid: "explicit" if writes else "implicit" if reads else "none"
        for uid, writes, reads in per.iter_rows()
    }


def price_removals(calls: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """The ledger: each of `events` (`removal_events`) with the net effect of its removal over its
    window (module docstring), `calls` the frame the events came from."""
    caching = session_caching(calls)
    model_windows = load_windows()
    by_session = {uid: rows for (uid,), rows in calls.group_by("session_uid", maintain_order=True)}
    windows: list[dict[str, Any]] = []  # the counterfactual calls, each tagged with its event
    rows: list[dict[str, Any]] = []
    for event in events.iter_rows(named=True):
        mode = caching.get(event["session_uid"], "none")
        removed = _removed(event)
        row = {
            "agent": event["agent"] or event["tool"],
            "session": event["session_uid"],
            "file": event["file"],
            "call": event["seq"],
            "kind": event["kind"],
            "provider": event["provider"],
            "model": event["model"],
            "removed_estimated": _int(event["removed_estimated"]),
            "removed_observed": _int(event["removed_observed"]),
            "basis": None
            if removed is None
            else "observed"
            if event["removed_observed"] is not None
            else "estimated",
            "ctx_before": event["prev_ctx"],
            "ctx_after": event["ctx"],
            "cache_read_before": event["cache_read_before"],
            "cache_read_after": event["cache_read"],
            "cache_write_next": event["cache_write"],
            "caching": mode,
        }
        rows.append(row)
        if removed is None:
            continue
        later, row["window_end"] = _window(by_session[event["session_uid"]], event, removed, model_windows)
        before = {
            "model": event["prev_model"],
            "ts": event["prev_ts"],
            "ctx": event["prev_ctx"],
            "cache_read": event["cache_read_before"],
            "cache_write": event["prev_cache_write"],
            "cache_write_1h": event["prev_cache_write_1h"],
        }
        for i, call in enumerate(later.iter_rows(named=True)):
            first = i == 0
            cached, alive = (_left_in_cache(before, mode), _alive(call, before)) if first else (0, False)
            billed = _without(call, removed, mode, first=first, cached=cached, alive=alive)
            windows.append({"_event": len(rows) - 1, "_i": i, **billed})
    return _net(rows, windows)


def _removed(event: dict[str, Any]) -> float | None:
    """The tokens an event's counterfactual adds back: observed where known, else estimated."""
    observed = event["removed_observed"]
    return observed if observed is not None else event["removed_estimated"]


def without_removals(calls: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """One session's calls with usage (`calls`, its rows of `ledger_calls`' frame), billed as recorded
    and as they would have been without every removal of `events` (its rows of `removal_events`) at
    once: each call sends the tokens of every removal whose window it is in (a compaction, undone too,
    ends none), and the first call of each window reads what the call before it left in the cache in
    that same world. Columns: `call`,
    `input` and `input_without` (prompt tokens), `usd_input` and `usd_input_without` (input dollars,
    null without a price)."""
    mode = session_caching(calls).get(calls["session_uid"][0], "none") if calls.height else "none"
    model_windows = load_windows()
    extra: dict[int, float] = {}
    starts: set[int] = set()
    for event in events.iter_rows(named=True):
        removed = _removed(event)
        if removed is None:
            continue
        later, _ = _window(calls, event, removed, model_windows, compactions=False)
        for seq in later["seq"]:
            extra[seq] = extra.get(seq, 0.0) + removed
        starts.add(event["seq"])
    billed: list[dict[str, Any]] = []
    recorded: dict[str, Any] | None = None  # the call before, as recorded
    joint: dict[str, Any] | None = None  # the call before, without the removals
    for call in calls.filter(pl.col("ctx").is_not_null()).iter_rows(named=True):
        first = call["seq"] in starts and recorded is not None and joint is not None
        cached = _left_in_cache(joint, mode) if first and joint is not None else 0
        alive = _alive(call, recorded) if first and recorded is not None else False
        out = _without(call, extra.get(call["seq"], 0.0), mode, first=first, cached=cached, alive=alive)
        billed.append({"call": call["seq"], **out})
        recorded, joint = call, out
    if not billed:
        return pl.DataFrame(schema={"call": pl.Int64, "input": pl.Int64, "input_without": pl.Int64,
                                    "usd_input": pl.Float64, "usd_input_without": pl.Float64})  # fmt: skip
    frame = price_calls(pl.DataFrame(billed, infer_schema_length=None))
    return frame.select(
        "call",
        pl.col("rec_ctx").alias("input"),
        pl.col("ctx").alias("input_without"),
        pl.col("rec_usd_input").alias("usd_input"),
        pl.col("usd_input").alias("usd_input_without"),
    )


def _window(
    session: pl.DataFrame,
    event: dict[str, Any],
    removed: float,
    windows: WindowTable,
    *,
    compactions: bool = True,
) -> tuple[pl.DataFrame, str]:
    """The calls with usage an event's counterfactual runs over, from the event's call on, and why it
    ends: `compaction` (the next one: the removed text would have left then; not where the compactions
    are undone too, `compactions=False`), `window` (the prompt with the removed text would no longer fit
    the model's window, so the agent would have had to remove something by then) or `session` (its
    last call)."""
    later = session.filter(pl.col("seq") >= event["seq"])
    end = "session"
    stop = later.filter((pl.col("seq") > event["seq"]) & (pl.col("reason") == "compaction"))
    if stop.height and compactions:
        later = later.filter(pl.col("seq") < stop["seq"].min())
        end = "compaction"
    later = later.filter(pl.col("ctx").is_not_null())
    window = windows.lookup(event["model"])
    if window is not None and removed > 0:
        full = later.filter(pl.col("ctx") + removed > window.max_prompt)
        if full.height:
            later = later.filter(pl.col("seq") < full["seq"].min())
            end = "window"
    return later, end


def _alive(call: dict[str, Any], before: dict[str, Any]) -> bool:
    """Whether what call `before` left in the cache was still there for `call`: the same model, within
    the cache's lifetime (a read alone is no proof: a system prompt shared by every session stays cached
    for long; without times, a read is all there is)."""
    lifetime = LONG_CACHE_LIFETIME if (before.get("cache_write_1h") or 0) > 0 else CACHE_LIFETIME
    if before.get("model") != call["model"]:
        return False
    if call["ts"] is None or before.get("ts") is None:
        return (call["cache_read"] or 0) > 0
    return bool(call["ts"] - before["ts"] <= lifetime)


def _left_in_cache(before: dict[str, Any], mode: str) -> int:
    """What a call left in the cache: what it read and wrote where the provider bills writes, its whole
    prompt where caching is implicit."""
    if mode == "explicit":
        return (before.get("cache_read") or 0) + (before.get("cache_write") or 0)
    return before.get("ctx") or 0


def billed_as(call: dict[str, Any], total: int) -> dict[str, Any]:
    """A call of `ledger_calls`' frame with a prompt of `total` tokens in another world: the columns
    `price_calls` reads (its cache fields as recorded, for the caller to change), beside the recorded
    prompt, cache fields and dollars (`rec_*`)."""
    return {
        "call_uid": call["call_uid"],
        "provider": call["provider"],
        "model": call["model"],
        "ts": call["ts"],
        "usage_style": call["usage_style"],
        "output": call["output"],
        "reasoning": call["reasoning"],
        "ctx": total,
        "cache_read": call["cache_read"],
        "cache_write": call["cache_write"],
        "cache_write_5m": call["cache_write_5m"],
        "cache_write_1h": call["cache_write_1h"],
        "rec_ctx": call["ctx"],
        "rec_read": call["cache_read"] or 0,
        "rec_write": call["cache_write"] or 0,
        "rec_usd": call["usd"],
        "rec_usd_input": call["usd_input"],
    }


def _without(
    call: dict[str, Any], removed: float, mode: str, *, first: bool, cached: int = 0, alive: bool = False
) -> dict[str, Any]:
    """One call as it would have been billed with `removed` tokens more in its prompt. `first`: the
    first call after the removal, which could read `cached` tokens from the cache if it was `alive`."""
    ctx, read, write = call["ctx"], call["cache_read"], call["cache_write"]
    total = max(0, ctx + int(removed))
    out = billed_as(call, total)
    if mode == "none" or (read is None and write is None):
        return out  # priced as uncached in both worlds, the removed tokens included
    read, write = read or 0, write or 0
    new_read = (max(read, min(cached, total)) if alive else read) if first else None
    new_read, new_write = recached(ctx, read, write, total, mode, new_read)
    out["cache_read"], out["cache_write"] = new_read, new_write
    if new_write != write:
        # the extra writes are priced at the 5-minute rate; a call that wrote only one-hour entries
        # writes the extra ones the same way
        five, hour = call["cache_write_5m"], call["cache_write_1h"]
        if five is not None and hour is not None and five == 0 and hour > 0:
            out["cache_write_5m"], out["cache_write_1h"] = 0, new_write
        elif five is not None and hour is not None and new_write >= hour:
            out["cache_write_5m"], out["cache_write_1h"] = new_write - hour, hour
        else:
            out["cache_write_5m"], out["cache_write_1h"] = None, None
    return out


def recached(
    ctx: int, read: int, write: int, total: int, mode: str, read_to: int | None = None
) -> tuple[int, int]:
    """The cache reads and writes of a call recorded with a `ctx`-token prompt (`read`, `write`) whose
    prompt is `total` tokens in another world. At the call where the prompt first differs (`read_to`:
    what it can read from the cache there), the rest of the prompt is written where the provider bills
    writes (`mode` `explicit`), but for the uncached tail the call recorded, and is uncached input
    where it does not. On later calls the difference comes off (or onto) what held the prefix: the
    cache reads, else the writes (explicit), else the uncached input."""
    if read_to is not None:
        new_read = read_to
        if mode == "explicit":
            tail = min(max(0, ctx - read - write), total - new_read)
            new_write = max(0, total - new_read - tail)
        else:
            new_write = write
    elif read > 0:
        new_read, new_write = max(0, read + total - ctx), write
    elif mode == "explicit" and write > 0:
        new_read, new_write = read, max(0, write + total - ctx)
    else:
        new_read, new_write = read, write
    new_read = min(new_read, total)
    return new_read, min(new_write, total - new_read)


def _net(rows: list[dict[str, Any]], windows: list[dict[str, Any]]) -> pl.DataFrame:
    """The ledger frame: each event's row with the sums over its window of counterfactual minus recorded."""
    for row in rows:
        row.setdefault("window_end", None)
        row.update(calls_after=None, paid_off_after=None, net_uncached=None, net_cache_write=None,
                   net_cache_read=None, net_tokens=None, net_usd=None)  # fmt: skip
    if windows:
        frame = price_calls(pl.DataFrame(windows, infer_schema_length=None))
        frame = frame.with_columns(
            (pl.col("cache_read").fill_null(0) - pl.col("rec_read")).alias("d_read"),
            (pl.col("cache_write").fill_null(0) - pl.col("rec_write")).alias("d_write"),
            (pl.col("ctx") - pl.col("rec_ctx")).alias("d_tokens"),
            (pl.col("usd") - pl.col("rec_usd")).alias("d_usd"),
        )
        for (index,), window in frame.sort("_event", "_i").group_by("_event", maintain_order=True):
            row = rows[int(index)]
            read, write, tokens = (int(window[c].sum()) for c in ("d_read", "d_write", "d_tokens"))
            row.update(
                calls_after=window.height,
                net_cache_read=read,
                net_cache_write=write,
                net_uncached=tokens - read - write,
                net_tokens=tokens,
            )
            usd = window["d_usd"]
            if usd.null_count() == 0:
                running = usd.cum_sum().to_list()
                row["net_usd"] = round(running[-1], 6)
                row["paid_off_after"] = next((i + 1 for i, v in enumerate(running) if v >= 0), None)
    if not rows:
        return _empty()
    return pl.DataFrame([{c: r.get(c) for c in COLUMNS} for r in rows], schema=SCHEMA)


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMA)


# Each summary row's figures, after its keys (agent, kind).
SUMMARY_FIGURES = (
    "events",
    "observed",
    "removed_estimated",
    "removed_observed",
    "estimate_mae",
    "estimate_bias",
    "paid_off",
    "never",
    "paid_off_after_p50",
    "net_tokens",
    "net_usd",
    "unpriced",
)


def summarise_ledger(ledger: pl.DataFrame) -> list[dict[str, Any]]:
    """Per agent and kind: the events, how many were observed (`removed_observed` known), the tokens
    removed both ways, the estimate's mean absolute error and bias (estimated over observed) where
    both are known, how many paid off and after how many calls (median), how many never did (within
    their window, priced), the net tokens and dollars, and the events without a price."""
    if ledger.is_empty():
        return []
    both = pl.col("removed_observed").is_not_null() & pl.col("removed_estimated").is_not_null()
    priced = pl.col("net_usd").is_not_null()
    frame = (
        ledger.group_by("agent", "kind")
        .agg(
            pl.len().alias("events"),
            pl.col("removed_observed").is_not_null().sum().alias("observed"),
            _sum("removed_estimated"),
            _sum("removed_observed"),
            (pl.col("removed_estimated") - pl.col("removed_observed"))
            .abs()
            .filter(both)
            .mean()
            .alias("estimate_mae"),
            (
                pl.col("removed_estimated").filter(both).sum()
                / pl.col("removed_observed").filter(both).sum().replace(0, None)
            ).alias("estimate_bias"),
            (priced & pl.col("paid_off_after").is_not_null()).sum().alias("paid_off"),
            (priced & pl.col("paid_off_after").is_null()).sum().alias("never"),
            pl.col("paid_off_after").median().alias("paid_off_after_p50"),
            _sum("net_tokens"),
            pl.when(priced.any()).then(pl.col("net_usd").sum()).alias("net_usd"),
            (pl.col("calls_after").is_not_null() & ~priced).sum().alias("unpriced"),
        )
        .with_columns(
            pl.col("kind")
            .replace_strict({k: i for i, k in enumerate(KINDS)}, default=len(KINDS))
            .alias("_order")
        )
        .sort("agent", "_order")
    )
    out = []
    for row in frame.select("agent", "kind", *SUMMARY_FIGURES).iter_rows(named=True):
        for key in ("estimate_mae", "estimate_bias", "paid_off_after_p50"):
            if row[key] is not None:
                row[key] = round(row[key], 3)
        if row["net_usd"] is not None:
            row["net_usd"] = round(row["net_usd"], 6)
        out.append(row)
    return out


def _sum(column: str) -> pl.Expr:
    """A column's sum, null where none of the rows has a figure (not 0)."""
    return pl.when(pl.col(column).is_not_null().any()).then(pl.col(column).sum()).alias(column)
