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
  plus a static overhead); null when the call has no usage to compare with, or after an
  `unlogged_turn`: nothing was appended since the previous call, whose output the prompt carries, so
  the input that made the agent call the model again (tool results, a continuation prompt) is not in
  the log (gemini-cli sub-agents up to 0.36 record neither their tool calls nor the results) and no
  estimate from the log can be judged on the call. Every call with a family is in the end-to-end
  figures, breaks included; `status == "ok"` marks the incremental calls the scored figures keep;
- per count source and kind group, the counts of the appended parts (`a|SOURCE|GROUP`, a part pruned
  at or before call `k`'s time counts as its `pruned_text`) and of every part sent in call `k`
  (`f|SOURCE|GROUP`, the full prompt, pruned text once pruned).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import polars as pl

from calib.core.progress import Progress
from calib.core.records import DEFAULT_KIND_GROUP, KIND_GROUPS, RATIO_KEYS
from calib.scoring.counts import update_estimates
from calib.store.store import Store, release_cache

# Chain breaks, in the order they are tested (a call gets the first that applies).
BREAK_REASONS: tuple[str, ...] = (
    "missing_usage",  # either call has no per-call usage (missing, turn-summed, suspect) or no ctx
    "error",  # either call ended in an error
    "model_change",  # provider or model differs from the previous call
    "compaction",  # prompt_start moved, or a summary part was appended
    "rewound",  # prompt_end went backwards (history rewritten)
    "pruned",  # a part the previous call saw or produced was pruned, at a time that cannot be placed
    "masked",  # an appended part holds gemini-cli's <tool_output_masked> placeholder
    "unlogged_turn",  # nothing was appended after a call whose output is carried: its input went unrecorded
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
    "agent_version",
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


def session_sample(store: Store, max_calls: int) -> list[str] | None:
    """A stable sample of a store's sessions holding about `max_calls` calls of each provider, or None
    when no provider has more. Sessions are taken in the order of a hash of their uid (salted, so that
    the sample holds held-out and training sessions in the store's proportions), each while its
    provider (that of most of its calls) has fewer than `max_calls` calls in the sample: a provider with
    few calls is sampled whole, and the same store always gives the same sample."""
    rows = store.con.execute(
        "SELECT session_uid, count(*), mode(provider) FROM calls GROUP BY session_uid"
    ).fetchall()
    totals: dict[str | None, int] = {}
    for _, n, provider in rows:
        totals[provider] = totals.get(provider, 0) + int(n)
    if all(n <= max_calls for n in totals.values()):
        return None

    def rank(uid: str) -> bytes:
        return hashlib.blake2b(uid.encode("utf-8"), digest_size=8, salt=b"sample").digest()

    picked: list[str] = []
    taken: dict[str | None, int] = {}
    for uid, n, provider in sorted(rows, key=lambda r: rank(r[0])):
        if taken.get(provider, 0) < max_calls:
            picked.append(uid)
            taken[provider] = taken.get(provider, 0) + int(n)
    return picked


def agent_key(columns: Sequence[str]) -> pl.Expr:
    """The key a call's static overhead is fitted and looked up under: its `agent`, with the version
    the agent recorded as `AGENT@VERSION` (`calib.runtime.tool_keys` falls back from it) in a frame
    that has `agent_version`."""
    if "agent_version" not in columns:
        return pl.col("agent")
    versioned = pl.col("agent") + pl.lit("@") + pl.col("agent_version")
    return pl.when(pl.col("agent_version").is_not_null()).then(versioned).otherwise(pl.col("agent"))


def feature_column(scope: Literal["a", "f", "r"], source: str, group: str) -> str:
    """Name of the column holding a source's count of one kind group: appended (`a`), full prompt (`f`)
    or removed (`r`)."""
    return f"{scope}|{source}|{group}"


def _kind_case(column: str) -> str:
    cases = " ".join(f"WHEN '{kind}' THEN '{group}'" for kind, group in KIND_GROUPS.items())
    return f"CASE {column} {cases} ELSE '{DEFAULT_KIND_GROUP}' END"


# The version of the agent that wrote a session, as it recorded it in the session's `meta`: OpenCode's
# `version`, the last of Claude Code's `versions`, Codex's `cli_version` (gemini-cli and Dexto record
# none). `{meta}` is the meta column.
AGENT_VERSION_SQL = (
    "coalesce(json_extract_string({meta}, '$.version'), json_extract_string({meta}, '$.versions[#-1]'), "
    "json_extract_string({meta}, '$.cli_version'))"
)

# The store's call_chain (each call with its predecessor's columns and delta) with the session's tool
# and agent version, kept as a table because every later step joins it.
_CHAIN_SQL = f"""
CREATE OR REPLACE TEMP TABLE _chain AS
SELECT ch.call_uid, ch.session_uid, ch.seq, ch.ts, ch.provider, ch.model, ch.usage_status, ch.error,
       ch.ctx, ch.carry, ch.prompt_start, ch.prompt_end, s.tool, s.file, s.is_subagent, s.agent_version,
       ch.prev_uid, ch.prev_ctx, ch.prev_carry, ch.prev_start, ch.prev_end, ch.prev_ts,
       ch.prev_provider, ch.prev_model, ch.prev_status, ch.prev_error, ch.prev_placeholder, ch.bridged,
       ch.delta
FROM call_chain ch
JOIN (SELECT session_uid, tool, source_path AS file, is_subagent,
             {AGENT_VERSION_SQL.format(meta="meta")} AS agent_version
      FROM sessions WHERE session_uid $SCOPE) s USING (session_uid)
WHERE ch.session_uid $SCOPE$CALLS
"""

# Parts that can break a chain: summaries, masked outputs and pruned parts (few: found once for the
# store, then joined to every call of a batch).
_FLAG_PARTS_SQL = """
CREATE OR REPLACE TEMP TABLE _fp AS
SELECT session_uid, seq, call_uid, kind = 'summary' AS is_summary, contains(text, $marker) AS is_masked,
       pruned_at
FROM parts
WHERE kind = 'summary' OR contains(text, $marker) OR pruned_at IS NOT NULL
"""

_FLAGS_SQL = """
CREATE OR REPLACE TEMP TABLE _flags AS
SELECT ch.call_uid,
       bool_or(fp.is_summary AND fp.seq >= ch.prev_end AND fp.seq < ch.prompt_end) AS summary_between,
       bool_or(fp.is_masked AND fp.seq >= ch.prev_end AND fp.seq < ch.prompt_end) AS masked_between,
       -- a part the previous call saw, or one it produced (its carry), pruned at a time the call times
       -- cannot place (one of them unknown): it may have left before or after, so the chain breaks
       bool_or(fp.pruned_at IS NOT NULL
               AND ((fp.seq >= ch.prev_start AND fp.seq < ch.prev_end) OR fp.call_uid = ch.prev_uid)
               AND (ch.ts IS NULL OR ch.prev_ts IS NULL)) AS pruned_between
FROM _chain ch JOIN _fp fp ON fp.session_uid = ch.session_uid
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
SELECT ch.call_uid, p.part_uid, p.text_hash, p.call_uid AS owner, {_kind_case("p.kind")} AS grp,
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


def appended_parts_sql(scope: str, calls: str = "", chain: str = "call_chain") -> str:
    """The rows of the store's `appended_parts` view (migration 014: the parts appended between call k-1
    and call k) of the calls whose session uid is `scope` (an SQL condition such as `BETWEEN 'a' AND
    'b'`) and that meet `calls` (a condition on the calls' columns such as `AND seq < 100`, or nothing),
    read from `chain` (the store's `call_chain`, or a table of some of its rows). The view joins each
    call to its session's parts on a range of `seq`, which DuckDB runs as a hash join on the session
    followed by a filter: calls times parts, quadratic in a session's length (a 19,000-call session
    took seconds, a 48,000-call one minutes). Here each call lists the `seq`s it appended and joins
    them one to one, so the work is the rows it returns."""
    return f"""
SELECT ch.call_uid, ch.session_uid, p.part_uid, p.seq, p.role, p.kind, p.tool_name,
       p.call_uid IS NULL AS is_input,
       (p.call_uid IS NULL OR ch.prev_placeholder) AS framed,
       (p.pruned_at IS NOT NULL AND ch.ts IS NOT NULL AND p.pruned_at <= ch.ts) AS use_pruned,
       CASE WHEN p.pruned_at IS NOT NULL AND ch.ts IS NOT NULL AND p.pruned_at <= ch.ts
            THEN coalesce(p.pruned_text, '') ELSE p.text END AS sent_text,
       p.text_hash
FROM (
    SELECT call_uid, session_uid, prev_uid, prev_placeholder, ts,
           unnest(range(prev_end::BIGINT, prompt_end::BIGINT)) AS appended_seq
    FROM {chain}
    WHERE session_uid {scope} AND prev_uid IS NOT NULL {calls}
) ch
JOIN parts p ON p.session_uid = ch.session_uid AND p.seq = ch.appended_seq
WHERE p.session_uid {scope} AND p.resent
  AND (p.call_uid IS DISTINCT FROM ch.prev_uid OR ch.prev_placeholder)
"""


def piece_condition(first: str, first_seq: int, last: str, last_seq: int) -> str:
    """An SQL condition (`AND ...`) on `session_uid` and `seq` that, beside `session_uid BETWEEN first AND
    last`, keeps the calls from call `first_seq` of session `first` to call `last_seq` of session `last`
    (in session, then seq order): the calls of a batch, which may begin or end inside a long session."""
    a, b = _literal(first), _literal(last)
    after_first = f"(session_uid > {a} OR seq >= {int(first_seq)})"
    before_last = f"(session_uid < {b} OR seq <= {int(last_seq)})"
    return f"AND {after_first} AND {before_last}"


# The store's appended_parts (the parts appended between call k-1 and call k) with their kind group, of
# the batch's calls.
_APPENDED_SQL = f"""
CREATE OR REPLACE TEMP TABLE _appended AS
SELECT call_uid, part_uid, text_hash, {_kind_case("kind")} AS grp, framed, use_pruned
FROM ({appended_parts_sql("$SCOPE", chain="_chain")})
"""

# Input parts (messages) in session order, sent parts only, as a running count for range sums.
_MESSAGE_CUM_SQL = """
CREATE OR REPLACE TEMP TABLE _mcum AS
SELECT session_uid, seq,
       sum((call_uid IS NULL)::INT) OVER (PARTITION BY session_uid ORDER BY seq ROWS UNBOUNDED PRECEDING) AS m
FROM parts WHERE resent AND session_uid $SCOPE
"""

# A call after which the log shows nothing sent: no part was appended since the previous call, whose
# output the prompt carries. A model is called again only on new input (tool results, a user message,
# gemini-cli's "Please continue." after a turn that stopped short), so that input went unrecorded:
# gemini-cli sub-agents up to 0.36 record neither their tool calls nor the results. Seen before the
# call's count, unlike `unrecorded` (nothing appended and nothing carried, yet the context grew).
_UNLOGGED = "ch.prev_uid IS NOT NULL AND coalesce(a.parts, 0) = 0 AND coalesce(ch.prev_carry, 0) > 0"

_CALLS_SQL = f"""
SELECT ch.session_uid, ch.call_uid, ch.seq, ch.tool,
       CASE WHEN ch.is_subagent THEN ch.tool || '{SUBAGENT_SUFFIX}' ELSE ch.tool END AS agent,
       ch.agent_version, ch.file, ch.provider, ch.model, ch.is_subagent, ch.ts,
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
         WHEN {_UNLOGGED} THEN 'unlogged_turn'
         WHEN coalesce(a.parts, 0) = 0
              AND ch.delta > greatest({NEGATIVE_DELTA_TOKENS}, {NEGATIVE_DELTA_FRACTION} * ch.prev_ctx)
              THEN 'unrecorded'
         WHEN ch.delta + coalesce(rk.removed_known, 0) + coalesce(rc.removed_text_approx, 0)
              < -greatest({NEGATIVE_DELTA_TOKENS}, {NEGATIVE_DELTA_FRACTION} * ch.prev_ctx)
              THEN 'negative_delta'
       END AS reason,
       CASE
         WHEN ch.usage_status <> 'ok' OR ch.ctx IS NULL OR reason = 'unlogged_turn' THEN NULL
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


# Every per-call column below is built in DuckDB (whose memory is capped: what outgrows it spills to
# disk) and read back a batch of sessions at a time (`_features_sql`): the frame of a store of any
# size never has to be in memory at once. Sources are referred to by position (t0, q0: tokens and pruned
# tokens of the first source); `_tc` holds each counted text's counts, one column per source.
def _text_counts_sql(n_sources: int) -> str:
    cols = ",\n".join(
        f"max(tokens) FILTER (WHERE source = $sources[{i + 1}]) AS t{i}, "
        f"max(pruned_tokens) FILTER (WHERE source = $sources[{i + 1}]) AS q{i}"
        for i in range(n_sources)
    )
    return f"""
CREATE OR REPLACE TEMP TABLE _tc AS
SELECT text_hash,
{cols}
FROM text_counts WHERE list_contains($sources, source)
GROUP BY text_hash
"""


def _appended_counts_sql(sources: Sequence[str], index: Sequence[int]) -> str:
    # a part pruned by the call's time counts as its pruned text
    cols = ",\n".join(
        f"sum(CASE WHEN a.use_pruned THEN coalesce(tc.q{i}, 0) ELSE tc.t{i} END) FILTER (WHERE a.grp = '{g}')"
        f"::DOUBLE AS {_quote(feature_column('a', s, g))}"
        for i, s in zip(index, sources, strict=True)
        for g in RATIO_KEYS
    )
    return f"""
CREATE OR REPLACE TEMP TABLE _acounts AS
SELECT a.call_uid,
{cols}
FROM _appended a LEFT JOIN _tc tc USING (text_hash)
GROUP BY a.call_uid
"""


# The removed text's count minus its placeholder's, per source and kind group (reported reasoning
# counts are in `removed_known` instead).
def _removed_counts_sql(sources: Sequence[str], index: Sequence[int]) -> str:
    cols = ",\n".join(
        f"sum(tc.t{i} - coalesce(tc.q{i}, 0)) FILTER (WHERE r.grp = '{g}')::DOUBLE AS {_quote(feature_column('r', s, g))}"
        for i, s in zip(index, sources, strict=True)
        for g in RATIO_KEYS
    )
    return f"""
CREATE OR REPLACE TEMP TABLE _rcounts AS
SELECT r.call_uid,
{cols}
FROM _removed r LEFT JOIN _tc tc USING (text_hash)
WHERE NOT r.counted
GROUP BY r.call_uid
"""


# Kind group of a row of `parts p`, for the full-prompt sums below.
_PART_GROUP = _kind_case("p.kind")


# Full prompt sums by prefix sums (a range join would be quadratic in the session length): one row per
# sent part with a running sum per (source, kind group), read at prompt_start and prompt_end by ASOF
# joins; parts pruned by a call's time count their pruned text in that call's full prompt (`_fixes`).
def _full_counts_sql(sources: Sequence[str], index: Sequence[int]) -> tuple[str, str, str]:
    sums = ",\n".join(
        f"sum(CASE WHEN {_PART_GROUP} = '{g}' THEN coalesce(tc.t{i}, 0) ELSE 0 END) OVER w AS c{i}_{g}"
        for i in index
        for g in RATIO_KEYS
    )
    cum = f"""
CREATE OR REPLACE TEMP TABLE _cum AS
SELECT p.session_uid, p.seq,
{sums}
FROM parts p LEFT JOIN _tc tc ON tc.text_hash = p.text_hash
WHERE p.resent AND p.session_uid $SCOPE
WINDOW w AS (PARTITION BY p.session_uid ORDER BY p.seq ROWS UNBOUNDED PRECEDING)
"""
    fix_cols = ",\n".join(
        f"sum(coalesce(tc.q{i}, 0) - coalesce(tc.t{i}, 0)) FILTER (WHERE {_PART_GROUP} = '{g}') AS x{i}_{g}"
        for i in index
        for g in RATIO_KEYS
    )
    fixes = f"""
CREATE OR REPLACE TEMP TABLE _fixes AS
SELECT ch.call_uid,
{fix_cols}
FROM _chain ch
JOIN parts p ON p.session_uid = ch.session_uid AND p.pruned_at IS NOT NULL AND p.resent
  AND p.seq >= ch.prompt_start AND p.seq < ch.prompt_end AND ch.ts IS NOT NULL AND p.pruned_at <= ch.ts
LEFT JOIN _tc tc ON tc.text_hash = p.text_hash
GROUP BY ch.call_uid
"""
    diffs = ",\n".join(
        f"(coalesce(hi.c{i}_{g}, 0) - coalesce(lo.c{i}_{g}, 0) + coalesce(x.x{i}_{g}, 0))::DOUBLE "
        f"AS {_quote(feature_column('f', s, g))}"
        for i, s in zip(index, sources, strict=True)
        for g in RATIO_KEYS
    )
    full = f"""
CREATE OR REPLACE TEMP TABLE _fcounts AS
SELECT ch.call_uid,
{diffs}
FROM _chain ch
ASOF LEFT JOIN _cum hi ON hi.session_uid = ch.session_uid AND ch.prompt_end > hi.seq
ASOF LEFT JOIN _cum lo ON lo.session_uid = ch.session_uid AND ch.prompt_start > lo.seq
LEFT JOIN _fixes x ON x.call_uid = ch.call_uid
"""
    return cum, fixes, full


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _features_sql(sources: Sequence[str]) -> str:
    """The batch's calls with their chain columns and, per source, their counts (0 where none), in
    session order."""
    chain = ", ".join(f"c.{_quote(col)}" for col in CHAIN_COLUMNS if col not in ("status", "holdout"))
    counts = [feature_column(scope, s, g) for scope in ("a", "r", "f") for s in sources for g in RATIO_KEYS]
    alias = {"a": "ac", "r": "rc", "f": "fc"}
    picked = "".join(
        f",\n       coalesce({alias[c[0]]}.{_quote(c)}, 0)::DOUBLE AS {_quote(c)}" for c in counts
    )
    joins = (
        "LEFT JOIN _acounts ac USING (call_uid) LEFT JOIN _rcounts rc USING (call_uid) "
        "LEFT JOIN _fcounts fc USING (call_uid)"
        if sources
        else ""
    )
    return f"""
SELECT {chain},
       CASE WHEN c.first AND c.reason IS NULL THEN 'baseline' WHEN c.reason IS NULL THEN 'ok' ELSE 'break' END
         AS status,
       h.holdout{picked}
FROM _calls c JOIN _scope h USING (session_uid)
{joins}
ORDER BY c.session_uid, c.seq
"""


_TEMP_TABLES = (
    "_chain",
    "_flags",
    "_removed",
    "_removed_calls",
    "_removed_known",
    "_appended",
    "_mcum",
    "_calls",
    "_acounts",
    "_rcounts",
    "_cum",
    "_fixes",
    "_fcounts",
)

# Calls per batch that `feature_batches` yields.
BATCH_CALLS = 20_000

# The phase `FeatureTable.batches` reports to its progress when its caller names none of its own.
READING = "reading calls"


def features(
    store: Store,
    sources: Sequence[str] = (),
    *,
    progress: Progress | None = None,
    holdout_fraction: float = HOLDOUT_FRACTION,
) -> pl.DataFrame:
    """One row per call: chain status and break reason, family, removal, delta, message counts, and per
    source the counts of the appended parts, of the full prompt and of the removed text by kind group
    (columns `a|SOURCE|GROUP`, `f|SOURCE|GROUP`, `r|SOURCE|GROUP`). The whole store at once: see
    `feature_batches` for the same rows a batch at a time."""
    batches = list(feature_batches(store, sources, progress=progress, holdout_fraction=holdout_fraction))
    return pl.concat(batches, how="vertical") if len(batches) > 1 else batches[0]


def feature_batches(
    store: Store,
    sources: Sequence[str] = (),
    *,
    progress: Progress | None = None,
    holdout_fraction: float = HOLDOUT_FRACTION,
    batch_calls: int = BATCH_CALLS,
) -> Iterator[pl.DataFrame]:
    """The rows of `features` in session order, `batch_calls` calls at a time (at least one frame,
    possibly empty): memory stays flat however many calls the store holds."""
    with FeatureTable(store, sources, progress=progress, holdout_fraction=holdout_fraction) as table:
        yield from table.batches(batch_calls=batch_calls)


class FeatureTable:
    """The per-call frame of `features`, read in batches of whole sessions (a session longer than a
    batch in pieces of consecutive calls), as often as needed, for all sources or a few: each batch is
    built in DuckDB from its sessions alone, so that neither DuckDB nor Python ever holds the frame of
    the whole store, nor of one long session (use it as a `with` block)."""

    def __init__(
        self,
        store: Store,
        sources: Sequence[str] = (),
        *,
        progress: Progress | None = None,
        holdout_fraction: float = HOLDOUT_FRACTION,
        sessions: Sequence[str] | None = None,
    ) -> None:
        self.store = store
        self.sources = sorted(set(sources))
        self.progress = progress
        self.holdout_fraction = holdout_fraction
        # only these sessions (their texts alone are counted), or None: the whole store
        self.only = None if sessions is None else sorted(set(sessions))
        self._sessions: list[tuple[str, int, bool]] = []  # (session_uid, calls, held out)

    def __enter__(self) -> FeatureTable:
        if self.sources:
            update_estimates(self.store, self.sources, self.progress, sessions=self.only)
        con = self.store.con
        try:
            con.execute(_FLAG_PARTS_SQL, {"marker": MASK_MARKER})
            if self.sources:
                con.execute(_text_counts_sql(len(self.sources)), {"sources": self.sources})
        except BaseException:
            self._drop()
            raise
        rows = con.execute(
            "SELECT session_uid, count(*) FROM calls GROUP BY session_uid ORDER BY session_uid"
        )
        only = None if self.only is None else set(self.only)
        self._sessions = [
            (uid, int(n), is_holdout(uid, self.holdout_fraction))
            for uid, n in rows.fetchall()
            if only is None or uid in only
        ]
        release_cache(con)  # the scans of every text above left up to DuckDB's limit cached
        return self

    def __exit__(self, *exc: object) -> None:
        self._drop()

    def _drop(self) -> None:
        for table in (*_TEMP_TABLES, "_fp", "_tc", "_scope"):
            self.store.con.execute(f"DROP TABLE IF EXISTS {table}")

    def count(self, holdout: bool | None = None) -> int:
        """Calls in the table (of the held-out sessions, or of the others)."""
        return sum(n for _, n, held in self._sessions if holdout is None or held == holdout)

    def batches(
        self,
        sources: Sequence[str] | None = None,
        *,
        holdout: bool | None = None,
        batch_calls: int = BATCH_CALLS,
        label: str | None = READING,
    ) -> Iterator[pl.DataFrame]:
        """The rows in session order, whole sessions of about `batch_calls` calls at a time (at least
        one frame, possibly empty), with the chain columns and the counts of `sources` (default: all of
        the table's); `holdout` keeps only the held-out sessions (True) or the others (False). A
        session of more than `batch_calls` calls comes in batches of its own of `batch_calls`
        consecutive calls, in order: a reader that carries something from call to call within a
        session (the replay) goes on from the last batch's last call.

        The calls are reported to the table's `progress` as the phase `label` (None: not reported):
        a batch's as each step of building it in DuckDB ends, and all of them once the caller asks for
        the next batch, its work on this one done. So the bar moves within a batch too: a store of up
        to `batch_calls` calls is one batch, and more, smaller batches would cost each a few tenths of
        a second of fixed work in DuckDB."""
        import pyarrow as pa

        picked = self.sources if sources is None else sorted(set(sources))
        unknown = set(picked) - set(self.sources)
        if unknown:
            raise ValueError(f"no counts of {sorted(unknown)} in this table")
        schema = _empty_schema(picked)
        con = self.store.con
        total = self.count(holdout)
        progress = self.progress if label is not None and total else None
        phase = label or ""
        if progress is not None:
            progress(0, total, phase)
        done = 0
        yielded = False
        for batch in _session_groups(
            [(uid, n, held) for uid, n, held in self._sessions if holdout is None or held == holdout],
            batch_calls,
        ):
            group = batch.sessions
            scope = pa.table(
                {
                    "session_uid": pa.array([uid for uid, _, _ in group], pa.string()),
                    "holdout": pa.array([held for _, held, _ in group], pa.bool_()),
                }
            )
            con.register("_scope_rows", scope)
            try:
                con.execute("CREATE OR REPLACE TEMP TABLE _scope AS SELECT * FROM _scope_rows")
            finally:
                con.unregister("_scope_rows")
            calls = batch.calls
            step = None if progress is None else _steps_of(progress, phase, total, done, calls)
            # the running sums over a long session's parts are made for its first piece, kept for the others
            kept = _SESSION_TABLES if batch.seqs is not None and not batch.last else ()
            try:
                frame = _build_features(
                    self.store,
                    self.sources,
                    picked,
                    group[0][0],
                    group[-1][0],
                    seqs=batch.seqs,
                    reuse=batch.seqs is not None and not batch.first,
                    on_step=step,
                    members=None if self.only is None else [uid for uid, _, _ in group],
                )
            except BaseException:
                kept = ()
                raise
            finally:
                for table in _TEMP_TABLES:
                    if table not in kept:
                        con.execute(f"DROP TABLE IF EXISTS {table}")
                release_cache(con)  # the next batch reads other blocks
            if batch.seqs is None or not frame.is_empty() or (batch.last and not yielded):
                yielded = True
                yield frame.select(list(schema)).cast(cast(Any, schema))
            done += calls
            if progress is not None:
                progress(done, total, phase)
        if not yielded:
            yield pl.DataFrame(schema=schema)


def _steps_of(
    progress: Progress, phase: str, total: int, before: int, calls: int
) -> Callable[[int, int], None]:
    """What `_build_features` reports its steps through: a batch of `calls` calls after `before` others,
    taken by the steps up to its last call, which the caller's work on the batch completes."""

    def step(i: int, steps: int) -> None:
        progress(before + calls * i // (steps + 1), total, phase)

    return step


@dataclass(frozen=True, slots=True)
class _Batch:
    """What one batch reads: whole sessions as (uid, held out, calls), or the calls of one session with
    `seqs[0] <= seq < seqs[1]` (None: to its end), its `first` and `last` piece marked."""

    sessions: list[tuple[str, bool, int]]
    calls: int
    seqs: tuple[int, int | None] | None = None
    first: bool = True
    last: bool = True


def _session_groups(sessions: list[tuple[str, int, bool]], batch_calls: int) -> Iterator[_Batch]:
    """Sessions in order as (uid, held out, calls), grouped so that a group holds about `batch_calls`
    calls; a longer session is read in pieces of `batch_calls` calls (its calls' `seq` are 0 to n-1),
    one batch each, so that no batch outgrows the others however long one session is."""
    group: list[tuple[str, bool, int]] = []
    calls = 0
    for uid, n, held in sessions:
        if group and calls + n > batch_calls:
            yield _Batch(group, calls)
            group, calls = [], 0
        if n > batch_calls:
            pieces = -(-n // batch_calls)
            for k in range(pieces):
                last = k == pieces - 1
                size = n - k * batch_calls if last else batch_calls
                seqs = (k * batch_calls, None if last else (k + 1) * batch_calls)
                yield _Batch([(uid, held, n)], size, seqs, first=k == 0, last=last)
            continue
        group.append((uid, held, n))
        calls += n
    if group:
        yield _Batch(group, calls)


def _empty_schema(sources: Sequence[str]) -> dict[str, pl.DataType | type[pl.DataType]]:
    counts = [feature_column(scope, s, g) for scope in ("a", "r", "f") for s in sources for g in RATIO_KEYS]
    return {**_CHAIN_SCHEMA, **dict.fromkeys(counts, pl.Float64)}


# The polars type of each chain column (a batch is cast to it, so that batches always concatenate).
_CHAIN_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "session_uid": pl.String,
    "call_uid": pl.String,
    "seq": pl.Int32,
    "tool": pl.String,
    "agent": pl.String,
    "agent_version": pl.String,
    "file": pl.String,
    "provider": pl.String,
    "model": pl.String,
    "is_subagent": pl.Boolean,
    "holdout": pl.Boolean,
    "status": pl.String,
    "reason": pl.String,
    "family": pl.String,
    "removal": pl.String,
    "ts": pl.Datetime("us"),
    "ctx": pl.Int64,
    "prev_ctx": pl.Int64,
    "prev_carry": pl.Int64,
    "delta": pl.Int64,
    "removed_known": pl.Int64,
    "after_placeholder": pl.Boolean,
    "bridged": pl.Int32,
    "parts": pl.Int64,
    "messages": pl.Int64,
    "full_messages": pl.Int64,
}


def _build_features(
    store: Store,
    sources: Sequence[str],
    picked: Sequence[str],
    lo: str,
    hi: str,
    *,
    seqs: tuple[int, int | None] | None = None,
    reuse: bool = False,
    on_step: Callable[[int, int], None] | None = None,
    members: Sequence[str] | None = None,
) -> pl.DataFrame:
    """The per-call frame of the sessions in `_scope` (with their `holdout`), counts of the `picked`
    sources (`_tc` holds the counts of `sources`, in that order); `on_step(i, steps)` is called as
    each of the `steps` statements ends. With `seqs`, the one session in `_scope` is read from call
    `seqs[0]` to before `seqs[1]` (None: to its end): the rows are those of the whole session's frame,
    since every column of a call is built from the session's parts and the call before it (which
    `call_chain` gives whatever the range). The running sums over the session's parts (`_mcum`,
    `_cum`), which every piece reads, are made for the first piece and kept: `reuse` them after it.

    Each temporary table is dropped once no later statement reads it: they are held in DuckDB's
    memory, so the most a batch holds at once is a few of them, not all."""
    # The batch's sessions as a range of uids (`$SCOPE`): a plain filter that DuckDB pushes into the
    # scans and through the views' windows, so that a batch costs its own size, not the store's;
    # `_scope` then keeps the batch's sessions only.
    # A batch of a sample of sessions (`members`) spans the store's range: it names its sessions instead.
    scope = f"BETWEEN {_literal(lo)} AND {_literal(hi)}"
    if members is not None:
        scope = f"IN ({', '.join(_literal(uid) for uid in members)})"
    # A piece's calls: filtered after `call_chain`'s window, which reads the session's calls before them.
    calls = ""
    if seqs is not None:
        calls = f" AND ch.seq >= {int(seqs[0])}" + (
            f" AND ch.seq < {int(seqs[1])}" if seqs[1] is not None else ""
        )
    statements = [_CHAIN_SQL, _FLAGS_SQL, _REMOVED_SQL, _REMOVED_CALLS_SQL, _REMOVED_KNOWN_SQL, _APPENDED_SQL]
    statements += [_MESSAGE_CUM_SQL, f"CREATE OR REPLACE TEMP TABLE _calls AS {_CALLS_SQL}"]
    if picked:
        index = [sources.index(s) for s in picked]
        statements += [_appended_counts_sql(picked, index), _removed_counts_sql(picked, index)]
        statements += _full_counts_sql(picked, index)
    if reuse:
        statements = [sql for sql in statements if _made(sql) not in _SESSION_TABLES]
    keep = _SESSION_TABLES if seqs is not None else ()
    con = store.con
    steps = len(statements) + 1  # and the final select
    for i, sql in enumerate(statements):
        con.execute(sql.replace("$SCOPE", scope).replace("$CALLS", calls))
        later = " ".join(statements[i + 1 :]) + _features_sql(picked)
        for made in _CREATED.findall(" ".join(statements[: i + 1])):
            if made not in keep and not re.search(rf"\b{made}\b", later):
                con.execute(f"DROP TABLE IF EXISTS {made}")
        if on_step is not None:
            on_step(i + 1, steps)
    frame = con.execute(_features_sql(picked)).pl()
    if on_step is not None:
        on_step(steps, steps)
    return frame


# The temporary table a statement of `_build_features` makes.
_CREATED = re.compile(r"CREATE OR REPLACE TEMP TABLE (\w+)")
# The running sums over a session's parts, which every piece of a long session reads (made once).
_SESSION_TABLES = ("_mcum", "_cum")


def _made(sql: str) -> str | None:
    """The temporary table a statement makes (None: it makes none)."""
    found = _CREATED.search(sql)
    return found.group(1) if found else None


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
