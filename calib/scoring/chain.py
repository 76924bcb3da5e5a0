"""The per-call frame: each call beside its predecessor, whether the chain holds, and the counts.

`features` builds one row per call from the store's `call_chain` and `appended_parts` views (where
`delta` and the appended parts are defined, once for every reader):

- `status` is `baseline` for the first call of a session (never a break; sub-agent sessions are
  counted apart), `ok` when the chain holds between call `k-1` and call `k`, else `break` with
  `reason` the first of `BREAK_REASONS` that applies. Breaks never enter the error figures;
- `parts` and `messages` count the appended parts and, of those, the agent's input ("messages", the
  unit of the per-message framing overhead a calibration fits: parts whose `call_uid` is NULL, i.e.
  user text, tool results, summaries; model output carries no framing of its own, its tokens come back
  through `carry`). This counts the same thing for every agent, whatever it does with `message_id`
  (gemini-cli groups all tool results of a step in one turn, Dexto gives each its own message), and it
  is the definition `calib.synth` builds usage with. After a call whose output count is a streaming
  placeholder, that call's output blocks are appended too and each counts as a message: their framing
  (block wrappers, tool-use ids) is no longer covered by a carried count (the view's `framed`;
  `after_placeholder` marks such calls). The same holds across calls whose usage was lost: the call
  after them builds on the last call with usage, and `bridged` counts the calls skipped (the store's
  `call_chain`), whose output blocks are appended (as model text, not framed as messages).
  `full_messages` counts the input parts sent in the call (`prompt_start <= seq < prompt_end`,
  `resent`);
- `removal`: what the log shows leaving the context between the two calls, estimated rather than
  breaking the chain: `pruned` (a tool output the previous call saw was replaced by its placeholder:
  OpenCode's `time.compacted`, Dexto's `compactedAt`, Claude Code's microcompaction) or `reasoning`
  (the agent dropped reasoning whose token count its call reported: Codex at a new user turn).
  `removed_known` is the reported reasoning count that left (exact, not estimated); the text that
  left is counted per source as `r|SOURCE|GROUP` (the removed text's count minus its placeholder's,
  so the same calibration prices both sides);
- `family`: how an agent predicts the call from what the log shows before it: `incremental` when the
  previous call's usage is there to build on (the same provider and model, no compaction or rewrite
  between), `full` otherwise (the first call, after a compaction or a model change: the whole prompt
  plus a static overhead); null when the call has no usage to compare with. Every call with a family
  is in the end-to-end figures, breaks included; `status == "ok"` marks the incremental calls the
  scored figures keep;
- per count source and kind group, the counts of the appended parts (`a|SOURCE|GROUP`, a part pruned
  at or before call `k`'s time counts as its `pruned_text`) and of every part sent in call `k`
  (`f|SOURCE|GROUP`, the full prompt, pruned text once pruned).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal

import polars as pl

from calib.core.progress import Progress
from calib.core.records import DEFAULT_KIND_GROUP, KIND_GROUPS, RATIO_KEYS
from calib.scoring.counts import update_estimates
from calib.store.store import Store

# Chain breaks, in the order they are tested (a call gets the first that applies).
BREAK_REASONS: tuple[str, ...] = (
    "missing_usage",  # either call has no per-call usage (missing, turn-summed, suspect) or no ctx
    "error",  # either call ended in an error
    "model_change",  # provider or model differs from the previous call
    "compaction",  # prompt_start moved, or a summary part was appended
    "rewound",  # prompt_end went backwards (history rewritten)
    "pruned",  # a part the previous call saw or produced was pruned, at a time that cannot be placed
    "masked",  # an appended part holds gemini-cli's <tool_output_masked> placeholder
    "unrecorded",  # nothing was appended, yet delta > max(NEGATIVE_DELTA_TOKENS, NEGATIVE_DELTA_FRACTION * ctx[k-1])
    "negative_delta",  # delta + removed < -max(NEGATIVE_DELTA_TOKENS, NEGATIVE_DELTA_FRACTION * ctx[k-1])
)
# The reasons a reader can see in the log without the call's own count; the others ("unrecorded",
# "negative_delta") are found only by comparing with the count the provider reported.
LOG_VISIBLE_REASONS: tuple[str, ...] = BREAK_REASONS[:-2]
# How the log shows what left the context between two calls (the frame's `removal`).
REMOVAL_KINDS: tuple[str, ...] = ("pruned", "reasoning")
# The families of prediction (the frame's `family`).
FAMILIES: tuple[str, ...] = ("incremental", "full")
# A delta this negative means the context lost text (an unrecorded compaction, pruning or masking, or
# a system prompt that changed); tokenizer boundary effects make a few tokens of negative delta normal.
# The same bound on a delta with no appended part means the log lost what was sent (gemini-cli
# sub-agent turns whose tool calls and results are not recorded add thousands of tokens that way).
NEGATIVE_DELTA_TOKENS = 100
NEGATIVE_DELTA_FRACTION = 0.01
MASK_MARKER = "<tool_output_masked>"

# A sub-agent sends a system prompt of its own: its static overhead is keyed `TOOL/subagent` (the
# frame's `agent`), which the runtime falls back from to `TOOL`.
SUBAGENT_SUFFIX = "/subagent"

# Share of sessions `calib fit` holds out for validation (chosen by a hash of the session uid).
HOLDOUT_FRACTION = 0.2

# Columns of the per-call frame, before any count source is added.
CHAIN_COLUMNS = (
    "session_uid",
    "call_uid",
    "seq",
    "tool",
    "agent",
    "file",
    "provider",
    "model",
    "is_subagent",
    "holdout",
    "status",
    "reason",
    "family",
    "removal",
    "ts",
    "ctx",
    "prev_ctx",
    "prev_carry",
    "delta",
    "removed_known",
    "after_placeholder",
    "bridged",
    "parts",
    "messages",
    "full_messages",
)


def is_holdout(session_uid: str, fraction: float = HOLDOUT_FRACTION) -> bool:
    """Whether a session is held out for validation: a stable hash of its uid, below `fraction`."""
    digest = hashlib.blake2b(session_uid.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64 < fraction


def feature_column(scope: Literal["a", "f", "r"], source: str, group: str) -> str:
    """Name of the column holding a source's count of one kind group: appended (`a`), full prompt (`f`)
    or removed (`r`)."""
    return f"{scope}|{source}|{group}"


def _kind_case(column: str) -> str:
    cases = " ".join(f"WHEN '{kind}' THEN '{group}'" for kind, group in KIND_GROUPS.items())
    return f"CASE {column} {cases} ELSE '{DEFAULT_KIND_GROUP}' END"


# The store's call_chain (each call with its predecessor's columns and delta) with the session's tool,
# kept as a table because every later step joins it.
_CHAIN_SQL = """
CREATE OR REPLACE TEMP TABLE _chain AS
SELECT ch.call_uid, ch.session_uid, ch.seq, ch.ts, ch.provider, ch.model, ch.usage_status, ch.error,
       ch.ctx, ch.carry, ch.prompt_start, ch.prompt_end, s.tool, s.source_path AS file, s.is_subagent,
       ch.prev_uid, ch.prev_ctx, ch.prev_carry, ch.prev_start, ch.prev_end, ch.prev_ts,
       ch.prev_provider, ch.prev_model, ch.prev_status, ch.prev_error, ch.prev_placeholder, ch.bridged,
       ch.delta
FROM call_chain ch JOIN sessions s USING (session_uid)
"""

# Parts that can break a chain: summaries, masked outputs and pruned parts (few, so joined to every call).
_FLAGS_SQL = """
CREATE OR REPLACE TEMP TABLE _flags AS
WITH fp AS (
    SELECT session_uid, seq, call_uid, kind = 'summary' AS is_summary, contains(text, $marker) AS is_masked,
           pruned_at
    FROM parts
    WHERE kind = 'summary' OR contains(text, $marker) OR pruned_at IS NOT NULL
)
SELECT ch.call_uid,
       bool_or(fp.is_summary AND fp.seq >= ch.prev_end AND fp.seq < ch.prompt_end) AS summary_between,
       bool_or(fp.is_masked AND fp.seq >= ch.prev_end AND fp.seq < ch.prompt_end) AS masked_between,
       -- a part the previous call saw, or one it produced (its carry), pruned at a time the call times
       -- cannot place (one of them unknown): it may have left before or after, so the chain breaks
       bool_or(fp.pruned_at IS NOT NULL
               AND ((fp.seq >= ch.prev_start AND fp.seq < ch.prev_end) OR fp.call_uid = ch.prev_uid)
               AND (ch.ts IS NULL OR ch.prev_ts IS NULL)) AS pruned_between
FROM _chain ch JOIN fp ON fp.session_uid = ch.session_uid
WHERE ch.prev_uid IS NOT NULL
GROUP BY ch.call_uid
"""

# The parts that left the context between call k-1 and call k: sent parts the previous call saw (or
# produced) that were pruned after it and by call k. Reasoning whose call reported its token count
# leaves with exactly that count (`counted`, once per call); other text leaves as its count minus
# its placeholder's. `approx` (UTF-8 bytes / 3 of what left: at least the tokens of prose, code and
# CJK text alike) lets the chain test for a drop beyond what left before any estimator is chosen.
_REMOVED_SQL = f"""
CREATE OR REPLACE TEMP TABLE _removed AS
SELECT ch.call_uid, p.part_uid, p.call_uid AS owner, {_kind_case("p.kind")} AS grp,
       (p.kind = 'reasoning' AND coalesce(oc.reasoning, 0) > 0) AS counted,
       coalesce(oc.reasoning, 0) AS owner_reasoning,
       (octet_length(encode(p.text)) - octet_length(encode(coalesce(p.pruned_text, '')))) / 3.0 AS approx
FROM _chain ch
JOIN parts p ON p.session_uid = ch.session_uid AND p.pruned_at IS NOT NULL AND p.resent
  AND ((p.seq >= ch.prev_start AND p.seq < ch.prev_end) OR p.call_uid = ch.prev_uid)
  AND p.pruned_at > ch.prev_ts AND p.pruned_at <= ch.ts
LEFT JOIN calls oc ON oc.call_uid = p.call_uid
WHERE ch.prev_uid IS NOT NULL
"""

_REMOVED_CALLS_SQL = """
CREATE OR REPLACE TEMP TABLE _removed_calls AS
SELECT call_uid,
       CASE WHEN bool_and(counted) THEN 'reasoning' ELSE 'pruned' END AS removal,
       coalesce(sum(approx) FILTER (WHERE NOT counted), 0) AS removed_text_approx
FROM _removed GROUP BY call_uid
"""

_REMOVED_KNOWN_SQL = """
CREATE OR REPLACE TEMP TABLE _removed_known AS
SELECT call_uid, sum(owner_reasoning)::BIGINT AS removed_known
FROM (SELECT DISTINCT call_uid, owner, owner_reasoning FROM _removed WHERE counted)
GROUP BY call_uid
"""

# The store's appended_parts (the parts appended between call k-1 and call k) with their kind group.
_APPENDED_SQL = f"""
CREATE OR REPLACE TEMP TABLE _appended AS
SELECT call_uid, part_uid, {_kind_case("kind")} AS grp, framed, use_pruned
FROM appended_parts
"""

# Input parts (messages) in session order, sent parts only, as a running count for range sums.
_MESSAGE_CUM_SQL = """
CREATE OR REPLACE TEMP TABLE _mcum AS
SELECT session_uid, seq,
       sum((call_uid IS NULL)::INT) OVER (PARTITION BY session_uid ORDER BY seq ROWS UNBOUNDED PRECEDING) AS m
FROM parts WHERE resent
"""

_CALLS_SQL = f"""
SELECT ch.session_uid, ch.call_uid, ch.seq, ch.tool,
       CASE WHEN ch.is_subagent THEN ch.tool || '{SUBAGENT_SUFFIX}' ELSE ch.tool END AS agent,
       ch.file, ch.provider, ch.model, ch.is_subagent, ch.ts,
       ch.ctx, ch.prev_ctx, ch.prev_carry, ch.delta, ch.prev_placeholder AS after_placeholder, ch.bridged,
       CASE
         WHEN ch.prev_uid IS NULL AND ch.usage_status = 'ok' AND ch.ctx IS NOT NULL THEN NULL
         WHEN ch.prev_uid IS NULL THEN 'missing_usage'
         WHEN ch.usage_status <> 'ok' OR ch.prev_status <> 'ok' OR ch.ctx IS NULL OR ch.prev_ctx IS NULL
              OR ch.prev_carry IS NULL THEN 'missing_usage'
         WHEN ch.error IS NOT NULL OR ch.prev_error IS NOT NULL THEN 'error'
         WHEN ch.provider IS DISTINCT FROM ch.prev_provider OR ch.model IS DISTINCT FROM ch.prev_model
              THEN 'model_change'
         WHEN ch.prompt_start <> ch.prev_start OR coalesce(f.summary_between, FALSE) THEN 'compaction'
         WHEN ch.prompt_end < ch.prev_end THEN 'rewound'
         WHEN coalesce(f.pruned_between, FALSE) THEN 'pruned'
         WHEN coalesce(f.masked_between, FALSE) THEN 'masked'
         WHEN coalesce(a.parts, 0) = 0
              AND ch.delta > greatest({NEGATIVE_DELTA_TOKENS}, {NEGATIVE_DELTA_FRACTION} * ch.prev_ctx)
              THEN 'unrecorded'
         WHEN ch.delta + coalesce(rk.removed_known, 0) + coalesce(rc.removed_text_approx, 0)
              < -greatest({NEGATIVE_DELTA_TOKENS}, {NEGATIVE_DELTA_FRACTION} * ch.prev_ctx)
              THEN 'negative_delta'
       END AS reason,
       CASE
         WHEN ch.usage_status <> 'ok' OR ch.ctx IS NULL THEN NULL
         WHEN ch.prev_uid IS NULL OR ch.prev_status <> 'ok' OR ch.prev_ctx IS NULL OR ch.prev_carry IS NULL
              OR ch.provider IS DISTINCT FROM ch.prev_provider OR ch.model IS DISTINCT FROM ch.prev_model
              OR ch.prompt_start <> ch.prev_start OR coalesce(f.summary_between, FALSE)
              OR ch.prompt_end < ch.prev_end THEN 'full'
         ELSE 'incremental'
       END AS family,
       rc.removal,
       coalesce(rk.removed_known, 0) AS removed_known,
       coalesce(a.parts, 0) AS parts,
       coalesce(a.messages, 0) AS messages,
       coalesce(hi.m, 0) - coalesce(lo.m, 0) AS full_messages,
       ch.prev_uid IS NULL AS first
FROM _chain ch
LEFT JOIN _flags f USING (call_uid)
LEFT JOIN _removed_calls rc USING (call_uid)
LEFT JOIN _removed_known rk USING (call_uid)
LEFT JOIN (SELECT call_uid, count(*) AS parts, count(*) FILTER (WHERE framed) AS messages FROM _appended GROUP BY call_uid) a
  USING (call_uid)
ASOF LEFT JOIN _mcum hi ON hi.session_uid = ch.session_uid AND ch.prompt_end > hi.seq
ASOF LEFT JOIN _mcum lo ON lo.session_uid = ch.session_uid AND ch.prompt_start > lo.seq
"""

_APPENDED_COUNTS_SQL = """
SELECT e.source, a.call_uid, a.grp,
       sum(CASE WHEN a.use_pruned THEN coalesce(e.pruned_tokens, 0) ELSE e.tokens END)::DOUBLE AS tokens
FROM _appended a JOIN part_estimates e ON e.part_uid = a.part_uid
WHERE list_contains($sources, e.source)
GROUP BY ALL
"""

# The removed text's count minus its placeholder's, per source and kind group (reported reasoning
# counts are in `removed_known` instead).
_REMOVED_COUNTS_SQL = """
SELECT r.call_uid, e.source, r.grp,
       sum(e.tokens - coalesce(e.pruned_tokens, 0))::DOUBLE AS tokens
FROM _removed r JOIN part_estimates e ON e.part_uid = r.part_uid
WHERE NOT r.counted AND list_contains($sources, e.source)
GROUP BY ALL
"""

# Kind group of a row of `parts p`, for the full-prompt sums below.
_PART_GROUP = _kind_case("p.kind")


# Full prompt sums by prefix sums (a range join would be quadratic in the session length): one row per
# sent part with a running sum per (source, kind group), read at prompt_start and prompt_end by ASOF
# joins. The sources are columns (s0, s1, ...), not rows, which keeps the table as long as `parts`.
def _full_counts_sql(n_sources: int) -> tuple[str, str]:
    joins = "\n".join(
        f"LEFT JOIN part_estimates e{i} ON e{i}.part_uid = p.part_uid AND e{i}.source = $sources[{i + 1}]"
        for i in range(n_sources)
    )
    sums = ",\n".join(
        f"sum(CASE WHEN {_PART_GROUP} = '{g}' THEN coalesce(e{i}.tokens, 0) ELSE 0 END) OVER w AS c{i}_{g}"
        for i in range(n_sources)
        for g in RATIO_KEYS
    )
    cum = f"""
CREATE OR REPLACE TEMP TABLE _cum AS
SELECT p.session_uid, p.seq,
{sums}
FROM parts p
{joins}
WHERE p.resent
WINDOW w AS (PARTITION BY p.session_uid ORDER BY p.seq ROWS UNBOUNDED PRECEDING)
"""
    diffs = ",\n".join(
        f"coalesce(hi.c{i}_{g}, 0) - coalesce(lo.c{i}_{g}, 0) AS f{i}_{g}"
        for i in range(n_sources)
        for g in RATIO_KEYS
    )
    select = f"""
SELECT ch.call_uid,
{diffs}
FROM _chain ch
ASOF LEFT JOIN _cum hi ON hi.session_uid = ch.session_uid AND ch.prompt_end > hi.seq
ASOF LEFT JOIN _cum lo ON lo.session_uid = ch.session_uid AND ch.prompt_start > lo.seq
"""
    return cum, select


# Parts pruned by a call's time count their pruned text in that call's full prompt.
_PRUNED_FIXES_SQL = f"""
SELECT ch.call_uid, e.source, {_PART_GROUP} AS grp, sum(coalesce(e.pruned_tokens, 0) - e.tokens)::DOUBLE AS fix
FROM _chain ch
JOIN parts p ON p.session_uid = ch.session_uid AND p.pruned_at IS NOT NULL AND p.resent
  AND p.seq >= ch.prompt_start AND p.seq < ch.prompt_end AND ch.ts IS NOT NULL AND p.pruned_at <= ch.ts
JOIN part_estimates e ON e.part_uid = p.part_uid AND list_contains($sources, e.source)
GROUP BY ALL
"""

_TEMP_TABLES = (
    "_chain",
    "_flags",
    "_removed",
    "_removed_calls",
    "_removed_known",
    "_appended",
    "_mcum",
    "_cum",
)


def features(
    store: Store,
    sources: Sequence[str] = (),
    *,
    progress: Progress | None = None,
    holdout_fraction: float = HOLDOUT_FRACTION,
) -> pl.DataFrame:
    """One row per call: chain status and break reason, family, removal, delta, message counts, and per
    source the counts of the appended parts, of the full prompt and of the removed text by kind group
    (columns `a|SOURCE|GROUP`, `f|SOURCE|GROUP`, `r|SOURCE|GROUP`)."""
    sources = sorted(set(sources))
    if sources:
        update_estimates(store, sources, progress)
    con = store.con
    con.execute(_CHAIN_SQL)
    con.execute(_FLAGS_SQL, {"marker": MASK_MARKER})
    con.execute(_REMOVED_SQL)
    con.execute(_REMOVED_CALLS_SQL)
    con.execute(_REMOVED_KNOWN_SQL)
    con.execute(_APPENDED_SQL)
    con.execute(_MESSAGE_CUM_SQL)
    calls = con.execute(_CALLS_SQL).pl()
    calls = calls.with_columns(
        pl.when(pl.col("first") & pl.col("reason").is_null())
        .then(pl.lit("baseline"))
        .when(pl.col("reason").is_null())
        .then(pl.lit("ok"))
        .otherwise(pl.lit("break"))
        .alias("status")
    ).drop("first")
    sessions = calls.select("session_uid").unique()
    sessions = sessions.with_columns(
        pl.col("session_uid")
        .map_elements(lambda uid: is_holdout(uid, holdout_fraction), return_dtype=pl.Boolean)
        .alias("holdout")
    )
    calls = calls.join(sessions, on="session_uid", how="left").select(CHAIN_COLUMNS)
    if sources:
        appended = con.execute(_APPENDED_COUNTS_SQL, {"sources": sources}).pl()
        calls = calls.join(_wide_appended(appended, sources), on="call_uid", how="left")
        removed = con.execute(_REMOVED_COUNTS_SQL, {"sources": sources}).pl()
        calls = calls.join(_wide_appended(removed, sources, "r"), on="call_uid", how="left")
        cum_sql, full_sql = _full_counts_sql(len(sources))
        con.execute(cum_sql, {"sources": sources})
        full = con.execute(full_sql).pl()
        fixes = con.execute(_PRUNED_FIXES_SQL, {"sources": sources}).pl()
        calls = calls.join(_wide_full(full, fixes, sources), on="call_uid", how="left")
        count_cols = [c for c in calls.columns if c.startswith(("a|", "f|", "r|"))]
        calls = calls.with_columns(pl.col(count_cols).fill_null(0).cast(pl.Float64))
    for table in _TEMP_TABLES:
        con.execute(f"DROP TABLE IF EXISTS {table}")
    return calls.sort("session_uid", "seq")


def _wide_appended(
    appended: pl.DataFrame, sources: list[str], scope: Literal["a", "r"] = "a"
) -> pl.DataFrame:
    """Long counts (call_uid, source, grp, tokens) as one column per source and kind group."""
    columns = [feature_column(scope, s, g) for s in sources for g in RATIO_KEYS]
    if appended.is_empty():
        return pl.DataFrame(schema={"call_uid": pl.String, **dict.fromkeys(columns, pl.Float64)})
    wide = appended.with_columns(
        pl.concat_str(pl.lit(f"{scope}|"), pl.col("source"), pl.lit("|"), pl.col("grp")).alias("column")
    ).pivot(on="column", index="call_uid", values="tokens", aggregate_function="sum")
    missing = [c for c in columns if c not in wide.columns]
    return wide.with_columns(pl.lit(0.0).alias(c) for c in missing).select("call_uid", *columns)


def _wide_full(full: pl.DataFrame, fixes: pl.DataFrame, sources: list[str]) -> pl.DataFrame:
    names = {f"f{i}_{g}": feature_column("f", s, g) for i, s in enumerate(sources) for g in RATIO_KEYS}
    out = full.rename(names).with_columns(pl.col(list(names.values())).cast(pl.Float64))
    if fixes.is_empty():
        return out
    wide = fixes.with_columns(
        pl.concat_str(pl.lit("f|"), pl.col("source"), pl.lit("|"), pl.col("grp")).alias("column")
    ).pivot(on="column", index="call_uid", values="fix", aggregate_function="sum")
    fixed = [c for c in wide.columns if c != "call_uid"]
    out = out.join(wide.rename({c: f"_fix{c}" for c in fixed}), on="call_uid", how="left")
    return out.with_columns((pl.col(c) + pl.col(f"_fix{c}").fill_null(0.0)).alias(c) for c in fixed).drop(
        [f"_fix{c}" for c in fixed]
    )
