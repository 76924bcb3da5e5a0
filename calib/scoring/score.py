"""Scoring token estimators against the usage providers reported, call by call.

For call `k` of a session with a valid predecessor `k-1`:

- `delta[k] = ctx[k] - ctx[k-1] - carry[k-1]`: what the provider counted for the text appended between
  the two calls;
- `est_delta[k]`: the estimator's count of the appended parts, i.e. the parts with
  `prompt_end[k-1] <= seq < prompt_end[k]` that are sent (`resent`) and that call `k-1` did not
  produce itself (its output is already in `carry[k-1]`). A part pruned at or before call `k`'s time
  counts as its `pruned_text`;
- `pred[k] = ctx[k-1] + carry[k-1] + est_delta[k]` (Dexto's `/context` formula) against `ctx[k]`;
- `est_full[k]`: the estimate of every part sent in call `k` (`prompt_start <= seq < prompt_end`,
  `resent`, pruned text once pruned); `ctx[k] - est_full[k]` is the static overhead (system prompt and
  tool schemas, which no agent stores).

A call with a predecessor is scored (`status = "ok"`) unless the chain breaks between the two calls,
in which case `status = "break"` and `reason` is the first of `BREAK_REASONS` that applies. The first
call of a session is a `baseline` (never a break; sub-agent sessions are counted apart). Breaks never
enter the error figures.

"Messages" (the unit of the per-message framing overhead a calibration fits) are the appended parts
the agent sent as input, i.e. whose `call_uid` is NULL (user text, tool results, summaries); model
output carries no framing of its own, its tokens come back through `carry`. This counts the same thing
for every agent, whatever it does with `message_id` (gemini-cli groups all tool results of a step in
one turn, Dexto gives each its own message), and it is the definition `calib.synth` builds usage with.
For the full estimate they are the input parts sent in the call.

Counts per part are computed once per count source and kept in the `part_estimates` table (keyed by
source and part, with the source's version and a hash of the part's texts to spot stale rows), so
scoring again, or with another calibration of the same base, only re-reads the store.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from calib.core.errors import UsageError
from calib.core.progress import Progress
from calib.core.records import DEFAULT_KIND_GROUP, KIND_GROUPS, RATIO_KEYS
from calib.estimators import charclass, get_estimator, list_estimators
from calib.estimators.charclass import CLASS_PREFIX, class_sources

if TYPE_CHECKING:
    import polars as pl

    from calib.store.store import Store

# Chain breaks, in the order they are tested (a call gets the first that applies).
BREAK_REASONS: tuple[str, ...] = (
    "missing_usage",  # either call has no per-call usage (missing, turn-summed, suspect) or no ctx
    "error",  # either call ended in an error
    "model_change",  # provider or model differs from the previous call
    "compaction",  # prompt_start moved, or a summary part was appended
    "rewound",  # prompt_end went backwards (history rewritten)
    "pruned",  # a part the previous call saw was pruned between the two calls
    "masked",  # an appended part holds gemini-cli's <tool_output_masked> placeholder
    "unrecorded",  # nothing was appended, yet delta > max(NEGATIVE_DELTA_TOKENS, NEGATIVE_DELTA_FRACTION * ctx[k-1])
    "negative_delta",  # delta < -max(NEGATIVE_DELTA_TOKENS, NEGATIVE_DELTA_FRACTION * ctx[k-1])
)
# A delta this negative means the context lost text (an unrecorded compaction, pruning or masking, or
# a system prompt that changed); tokenizer boundary effects make a few tokens of negative delta normal.
# The same bound on a delta with no appended part means the log lost what was sent (gemini-cli
# sub-agent turns whose tool calls and results are not recorded add thousands of tokens that way).
NEGATIVE_DELTA_TOKENS = 100
NEGATIVE_DELTA_FRACTION = 0.01
MASK_MARKER = "<tool_output_masked>"

# Share of sessions `calib fit` holds out for validation (chosen by a hash of the session uid).
HOLDOUT_FRACTION = 0.2

Sessions = Literal["all", "train", "holdout"]

# Columns of the per-call frame, before any count source is added.
CHAIN_COLUMNS = (
    "session_uid",
    "call_uid",
    "seq",
    "tool",
    "provider",
    "model",
    "is_subagent",
    "holdout",
    "status",
    "reason",
    "ts",
    "ctx",
    "prev_ctx",
    "prev_carry",
    "delta",
    "parts",
    "messages",
    "full_messages",
)


def is_holdout(session_uid: str, fraction: float = HOLDOUT_FRACTION) -> bool:
    """Whether a session is held out for validation: a stable hash of its uid, below `fraction`."""
    digest = hashlib.blake2b(session_uid.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64 < fraction


# -- per-part counts ------------------------------------------------------------------------------


@dataclass(slots=True)
class _CountJob:
    """Sources counted in one pass over the texts (one estimator, or every character class)."""

    sources: list[str]
    version: str
    count: Callable[[list[str]], dict[str, list[int]]]


def _jobs(sources: Sequence[str]) -> list[_CountJob]:
    jobs: list[_CountJob] = []
    classes = [s for s in sources if s.startswith(CLASS_PREFIX)]
    if classes:
        known = class_sources()
        unknown = sorted(set(classes) - set(known))
        if unknown:
            raise UsageError(
                f"unknown character class {unknown[0]!r}", hint=f"valid classes: {', '.join(known)}"
            )
        names = list(charclass.CLASSES)

        def count_classes(texts: list[str]) -> dict[str, list[int]]:
            frame = charclass.class_counts(texts)
            return {CLASS_PREFIX + name: frame[name].to_list() for name in names}

        # the class names stand for the class definitions: renaming or adding one recounts everything
        jobs.append(_CountJob(known, "classes:" + ",".join(names), count_classes))
    for source in sources:
        if source.startswith(CLASS_PREFIX):
            continue
        estimator = get_estimator(source)

        def count_texts(
            texts: list[str], estimator: Any = estimator, source: str = source
        ) -> dict[str, list[int]]:
            return {source: estimator.count_many(texts)}

        jobs.append(_CountJob([source], str(getattr(estimator, "version", 1)), count_texts))
    return jobs


_BATCH = 20_000


def update_estimates(store: Store, sources: Sequence[str], progress: Progress | None = None) -> int:
    """Count every part (and its pruned text) with each source whose stored count is missing or stale.

    Returns the number of parts counted. Sources are estimator names or `class:<name>` counts.
    """
    import pyarrow as pa

    con = store.con
    con.execute(
        "DELETE FROM part_estimates e WHERE NOT EXISTS (SELECT 1 FROM parts p WHERE p.part_uid = e.part_uid)"
    )
    done = 0
    for job in _jobs(sorted(set(sources))):
        # rows of an older version, or of a part whose text changed since, go first; the parts then
        # without a row are counted (so each (source, part) keeps exactly one row)
        con.execute(
            "DELETE FROM part_estimates e WHERE list_contains($sources, e.source) AND (e.version <> $version "
            "OR e.text_hash <> (SELECT hash(p.text, p.pruned_text) FROM parts p WHERE p.part_uid = e.part_uid))",
            {"sources": job.sources, "version": job.version},
        )
        # a job writes all its sources together, so its first source tells which parts lack counts
        missing = (
            "FROM parts p WHERE NOT EXISTS (SELECT 1 FROM part_estimates e "
            "WHERE e.source = $source AND e.part_uid = p.part_uid)"
        )
        row = con.execute(f"SELECT count(*) {missing}", {"source": job.sources[0]}).fetchone()
        total = int(row[0]) if row else 0
        if not total:
            continue
        label = ", ".join(job.sources) if len(job.sources) == 1 else "character classes"
        reader = con.cursor()
        try:
            result = reader.execute(
                f"SELECT p.part_uid, p.text, p.pruned_text, hash(p.text, p.pruned_text) AS h {missing}",
                {"source": job.sources[0]},
            )
            # to_arrow_reader replaces fetch_record_batch in duckdb 1.4
            fetch = getattr(result, "to_arrow_reader", None) or result.fetch_record_batch
            counted = 0
            for batch in fetch(_BATCH):
                uids = batch.column(0).to_pylist()
                texts = batch.column(1).to_pylist()
                pruned = batch.column(2).to_pylist()
                hashes = batch.column(3)
                counts = job.count(texts)
                pruned_idx = [i for i, t in enumerate(pruned) if t is not None]
                pruned_counts = job.count([pruned[i] for i in pruned_idx]) if pruned_idx else {}
                columns: dict[str, list[Any]] = {name: [] for name in ("source", "tokens", "pruned_tokens")}
                for source in job.sources:
                    pc: list[int | None] = [None] * len(uids)
                    for j, i in enumerate(pruned_idx):
                        pc[i] = pruned_counts[source][j]
                    columns["source"] += [source] * len(uids)
                    columns["tokens"] += counts[source]
                    columns["pruned_tokens"] += pc
                n = len(job.sources)
                table = pa.table(
                    {
                        "source": pa.array(columns["source"], pa.string()),
                        "part_uid": pa.array(uids * n, pa.string()),
                        "version": pa.array([job.version] * (len(uids) * n), pa.string()),
                        "text_hash": pa.concat_arrays([hashes] * n),
                        "tokens": pa.array(columns["tokens"], pa.int64()),
                        "pruned_tokens": pa.array(columns["pruned_tokens"], pa.int64()),
                    }
                )
                con.register("_new_estimates", table)
                try:
                    con.execute("INSERT INTO part_estimates BY NAME SELECT * FROM _new_estimates")
                finally:
                    con.unregister("_new_estimates")
                counted += len(uids)
                if progress is not None:
                    progress(counted, total, label)
        finally:
            reader.close()
        done += total
    return done


# -- the per-call frame -----------------------------------------------------------------------------


def _kind_case(column: str) -> str:
    cases = " ".join(f"WHEN '{kind}' THEN '{group}'" for kind, group in KIND_GROUPS.items())
    return f"CASE {column} {cases} ELSE '{DEFAULT_KIND_GROUP}' END"


_CHAIN_SQL = """
CREATE OR REPLACE TEMP TABLE _chain AS
WITH c AS (
    SELECT c.call_uid, c.session_uid, c.seq, c.ts, c.provider, c.model, c.usage_status, c.error,
           c.ctx, c.carry, c.prompt_start, c.prompt_end, s.tool, s.is_subagent,
           lag(c.call_uid) OVER w AS prev_uid,
           lag(c.ctx) OVER w AS prev_ctx,
           lag(c.carry) OVER w AS prev_carry,
           lag(c.prompt_start) OVER w AS prev_start,
           lag(c.prompt_end) OVER w AS prev_end,
           lag(c.ts) OVER w AS prev_ts,
           lag(c.provider) OVER w AS prev_provider,
           lag(c.model) OVER w AS prev_model,
           lag(c.usage_status) OVER w AS prev_status,
           lag(c.error) OVER w AS prev_error
    FROM calls c JOIN sessions s USING (session_uid)
    WINDOW w AS (PARTITION BY c.session_uid ORDER BY c.seq)
)
SELECT *, ctx - prev_ctx - prev_carry AS delta FROM c
"""

# Parts that can break a chain: summaries, masked outputs and pruned parts (few, so joined to every call).
_FLAGS_SQL = """
CREATE OR REPLACE TEMP TABLE _flags AS
WITH fp AS (
    SELECT session_uid, seq, kind = 'summary' AS is_summary, contains(text, $marker) AS is_masked, pruned_at
    FROM parts
    WHERE kind = 'summary' OR contains(text, $marker) OR pruned_at IS NOT NULL
)
SELECT ch.call_uid,
       bool_or(fp.is_summary AND fp.seq >= ch.prev_end AND fp.seq < ch.prompt_end) AS summary_between,
       bool_or(fp.is_masked AND fp.seq >= ch.prev_end AND fp.seq < ch.prompt_end) AS masked_between,
       -- unknown call times cannot place the pruning, so a pruned part then breaks the chain
       bool_or(fp.pruned_at IS NOT NULL AND fp.seq >= ch.prev_start AND fp.seq < ch.prev_end
               AND (ch.ts IS NULL OR ch.prev_ts IS NULL
                    OR (fp.pruned_at > ch.prev_ts AND fp.pruned_at <= ch.ts))) AS pruned_between
FROM _chain ch JOIN fp ON fp.session_uid = ch.session_uid
WHERE ch.prev_uid IS NOT NULL
GROUP BY ch.call_uid
"""

# The parts appended between call k-1 and call k, with the text each was sent as.
_APPENDED_SQL = """
CREATE OR REPLACE TEMP TABLE _appended AS
SELECT ch.call_uid, p.part_uid, {group} AS grp, p.call_uid IS NULL AS is_input,
       (p.pruned_at IS NOT NULL AND ch.ts IS NOT NULL AND p.pruned_at <= ch.ts) AS use_pruned
FROM _chain ch JOIN parts p
  ON p.session_uid = ch.session_uid AND p.seq >= ch.prev_end AND p.seq < ch.prompt_end
WHERE ch.prev_uid IS NOT NULL AND p.resent AND p.call_uid IS DISTINCT FROM ch.prev_uid
"""

# Input parts (messages) in session order, sent parts only, as a running count for range sums.
_MESSAGE_CUM_SQL = """
CREATE OR REPLACE TEMP TABLE _mcum AS
SELECT session_uid, seq,
       sum((call_uid IS NULL)::INT) OVER (PARTITION BY session_uid ORDER BY seq ROWS UNBOUNDED PRECEDING) AS m
FROM parts WHERE resent
"""

_CALLS_SQL = f"""
SELECT ch.session_uid, ch.call_uid, ch.seq, ch.tool, ch.provider, ch.model, ch.is_subagent, ch.ts,
       ch.ctx, ch.prev_ctx, ch.prev_carry, ch.delta,
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
         WHEN ch.delta < -greatest({NEGATIVE_DELTA_TOKENS}, {NEGATIVE_DELTA_FRACTION} * ch.prev_ctx)
              THEN 'negative_delta'
       END AS reason,
       coalesce(a.parts, 0) AS parts,
       coalesce(a.messages, 0) AS messages,
       coalesce(hi.m, 0) - coalesce(lo.m, 0) AS full_messages,
       ch.prev_uid IS NULL AS first
FROM _chain ch
LEFT JOIN _flags f USING (call_uid)
LEFT JOIN (SELECT call_uid, count(*) AS parts, count(*) FILTER (WHERE is_input) AS messages FROM _appended GROUP BY call_uid) a
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


# Full prompt sums by prefix sums (a range join would be quadratic in the session length): one row per
# sent part with a running sum per (source, kind group), read at prompt_start and prompt_end by ASOF
# joins. The sources are columns (s0, s1, ...), not rows, which keeps the table as long as `parts`.
def _full_counts_sql(n_sources: int, group: str) -> tuple[str, str]:
    joins = "\n".join(
        f"LEFT JOIN part_estimates e{i} ON e{i}.part_uid = p.part_uid AND e{i}.source = $sources[{i + 1}]"
        for i in range(n_sources)
    )
    sums = ",\n".join(
        f"sum(CASE WHEN {group} = '{g}' THEN coalesce(e{i}.tokens, 0) ELSE 0 END) OVER w AS c{i}_{g}"
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
_PRUNED_FIXES_SQL = """
SELECT ch.call_uid, e.source, {group} AS grp, sum(coalesce(e.pruned_tokens, 0) - e.tokens)::DOUBLE AS fix
FROM _chain ch
JOIN parts p ON p.session_uid = ch.session_uid AND p.pruned_at IS NOT NULL AND p.resent
  AND p.seq >= ch.prompt_start AND p.seq < ch.prompt_end AND ch.ts IS NOT NULL AND p.pruned_at <= ch.ts
JOIN part_estimates e ON e.part_uid = p.part_uid AND list_contains($sources, e.source)
GROUP BY ALL
"""


def feature_column(scope: Literal["a", "f"], source: str, group: str) -> str:
    """Name of the column holding a source's count of one kind group, appended (`a`) or full (`f`)."""
    return f"{scope}|{source}|{group}"


def features(
    store: Store,
    sources: Sequence[str] = (),
    *,
    progress: Progress | None = None,
    holdout_fraction: float = HOLDOUT_FRACTION,
) -> pl.DataFrame:
    """One row per call: chain status and break reason, delta, message counts, and per source the
    counts of the appended parts and of the full prompt by kind group (columns `a|SOURCE|GROUP`,
    `f|SOURCE|GROUP`)."""
    import polars as pl

    sources = sorted(set(sources))
    if sources:
        update_estimates(store, sources, progress)
    con = store.con
    group = _kind_case("p.kind")
    con.execute(_CHAIN_SQL)
    con.execute(_FLAGS_SQL, {"marker": MASK_MARKER})
    con.execute(_APPENDED_SQL.format(group=group))
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
        cum_sql, full_sql = _full_counts_sql(len(sources), group)
        con.execute(cum_sql, {"sources": sources})
        full = con.execute(full_sql).pl()
        fixes = con.execute(_PRUNED_FIXES_SQL.format(group=group), {"sources": sources}).pl()
        calls = calls.join(_wide_full(full, fixes, sources), on="call_uid", how="left")
        count_cols = [c for c in calls.columns if c.startswith(("a|", "f|"))]
        calls = calls.with_columns(pl.col(count_cols).fill_null(0).cast(pl.Float64))
    for table in ("_chain", "_flags", "_appended", "_mcum", "_cum"):
        con.execute(f"DROP TABLE IF EXISTS {table}")
    return calls.sort("session_uid", "seq")


def _wide_appended(appended: pl.DataFrame, sources: list[str]) -> pl.DataFrame:
    import polars as pl

    columns = [feature_column("a", s, g) for s in sources for g in RATIO_KEYS]
    if appended.is_empty():
        return pl.DataFrame(schema={"call_uid": pl.String, **dict.fromkeys(columns, pl.Float64)})
    wide = appended.with_columns(
        pl.concat_str(pl.lit("a|"), pl.col("source"), pl.lit("|"), pl.col("grp")).alias("column")
    ).pivot(on="column", index="call_uid", values="tokens", aggregate_function="sum")
    missing = [c for c in columns if c not in wide.columns]
    return wide.with_columns(pl.lit(0.0).alias(c) for c in missing).select("call_uid", *columns)


def _wide_full(full: pl.DataFrame, fixes: pl.DataFrame, sources: list[str]) -> pl.DataFrame:
    import polars as pl

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


# -- scoring ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Plan:
    """How one estimator's counts are made from the per-call count columns."""

    name: str
    sources: list[str]
    grouped: Any | None = None  # an estimator with `for_group` (calibrated), else None


def _plan(name: str) -> _Plan:
    estimator: Any = get_estimator(name)
    if hasattr(estimator, "for_group"):
        return _Plan(name, list(estimator.sources), estimator)
    return _Plan(name, [name])


def _apply(plan: _Plan, frame: pl.DataFrame) -> pl.DataFrame:
    """Add `est_delta` and `est_full` for one estimator."""
    import polars as pl

    if plan.grouped is None:
        source = plan.sources[0]
        return frame.with_columns(
            pl.sum_horizontal(feature_column("a", source, g) for g in RATIO_KEYS).alias("est_delta"),
            pl.sum_horizontal(feature_column("f", source, g) for g in RATIO_KEYS).alias("est_full"),
        )
    # A calibrated estimator: per (provider, model), each part counts ratio[kind group] times the
    # weighted sum of its sources' counts, and each message adds the framing overhead.
    keys = frame.select("provider", "model").unique()
    coef_names = [f"k|{s}|{g}" for s in plan.sources for g in RATIO_KEYS]
    rows: dict[str, list[Any]] = {name: [] for name in ["_p", "_m", *coef_names, "k|messages"]}
    for provider, model in keys.iter_rows():
        params = plan.grouped.for_group(provider, model)
        rows["_p"].append(_NULL_KEY if provider is None else provider)
        rows["_m"].append(_NULL_KEY if model is None else model)
        weights: Mapping[str, float] = params.source_weights
        for source in plan.sources:
            for g in RATIO_KEYS:
                rows[f"k|{source}|{g}"].append(params.ratios[g] * weights.get(source, 0.0))
        rows["k|messages"].append(params.message_overhead)
    coefs = pl.DataFrame(
        rows,
        schema={"_p": pl.String, "_m": pl.String, **dict.fromkeys([*coef_names, "k|messages"], pl.Float64)},
    )
    joined = (
        frame.with_row_index("_row")
        .with_columns(
            pl.col("provider").fill_null(_NULL_KEY).alias("_p"),
            pl.col("model").fill_null(_NULL_KEY).alias("_m"),
        )
        .join(coefs, on=["_p", "_m"], how="left")
        .sort("_row")
    )

    def combo(scope: Literal["a", "f"], messages: str) -> pl.Expr:
        terms = [
            pl.col(feature_column(scope, s, g)) * pl.col(f"k|{s}|{g}")
            for s in plan.sources
            for g in RATIO_KEYS
        ]
        return pl.sum_horizontal(*terms, pl.col(messages) * pl.col("k|messages"))

    return joined.with_columns(
        combo("a", "messages").alias("est_delta"), combo("f", "full_messages").alias("est_full")
    ).drop(["_row", "_p", "_m", *coef_names, "k|messages"])


# Stands for a missing provider or model in join keys (polars joins never match nulls by default).
_NULL_KEY = "\x00"


SCORE_COLUMNS = (
    "estimator",
    *CHAIN_COLUMNS,
    "est_delta",
    "pred",
    "error",
    "rel_error",
    "est_full",
    "static_residual",
)


def _select_sessions(frame: pl.DataFrame, sessions: Sessions) -> pl.DataFrame:
    import polars as pl

    if sessions == "all":
        return frame
    if sessions not in ("train", "holdout"):
        raise UsageError(f"unknown session split {sessions!r}", hint="use all, train or holdout")
    return frame.filter(pl.col("holdout") == (sessions == "holdout"))


def score(
    store: Store,
    estimators: Sequence[str],
    *,
    sessions: Sessions = "all",
    holdout_fraction: float = HOLDOUT_FRACTION,
    progress: Progress | None = None,
) -> pl.DataFrame:
    """Score each estimator on every call: one row per (estimator, call) with `est_delta`, `pred`,
    `error` (pred - ctx), `rel_error` (|error| / ctx) and the full-prompt estimate; chain breaks keep
    their `reason` and carry no error."""
    import polars as pl

    if not estimators:
        raise UsageError("no estimator to score", hint="pass --estimator NAME (see `calib estimators`)")
    plans = [_plan(name) for name in dict.fromkeys(estimators)]
    sources = sorted({s for plan in plans for s in plan.sources})
    frame = features(store, sources, progress=progress, holdout_fraction=holdout_fraction)
    frame = _select_sessions(frame, sessions)
    out = [score_frame(frame, plan.name, plan.grouped) for plan in plans]
    return pl.concat(out, how="vertical_relaxed")


def score_frame(frame: pl.DataFrame, name: str, grouped: Any | None = None) -> pl.DataFrame:
    """Score one estimator on a `features` frame: its counts are the columns of the source `name`, or,
    for a grouped (calibrated) estimator, `grouped.for_group(...)` applied to `grouped.sources`."""
    import polars as pl

    plan = _Plan(name, list(grouped.sources) if grouped is not None else [name], grouped)
    scored = _apply(plan, frame)
    ok = pl.col("status") == "ok"
    scored = scored.with_columns(
        pl.when(ok)
        .then(pl.col("prev_ctx") + pl.col("prev_carry") + pl.col("est_delta"))
        .otherwise(None)
        .alias("pred"),
        pl.lit(name).alias("estimator"),
    ).with_columns(
        (pl.col("pred") - pl.col("ctx")).alias("error"),
        ((pl.col("pred") - pl.col("ctx")).abs() / pl.col("ctx")).alias("rel_error"),
        pl.when(pl.col("ctx").is_not_null() & (pl.col("reason") != "missing_usage").fill_null(True))
        .then(pl.col("ctx") - pl.col("est_full"))
        .otherwise(None)
        .alias("static_residual"),
    )
    return scored.select(SCORE_COLUMNS)


def summarise(scores: pl.DataFrame) -> pl.DataFrame:
    """Per estimator × provider × model: scored calls, breaks (also by reason), baselines, `delta_mae`,
    `delta_bias` (sum of estimates over sum of actual deltas), `ctx_err_p50/p90/p99` (|pred - ctx| / ctx,
    as fractions) and the median static overhead (`ctx - est_full` over calls with usage)."""
    import polars as pl

    keys = ["estimator", "provider", "model"]
    ok = pl.col("status") == "ok"
    reasons = [(pl.col("reason") == reason).sum().cast(pl.Int64).alias(reason) for reason in BREAK_REASONS]
    out = (
        scores.group_by(keys)
        .agg(
            ok.sum().cast(pl.Int64).alias("calls"),
            (pl.col("status") == "break").sum().cast(pl.Int64).alias("breaks"),
            ((pl.col("status") == "baseline") & ~pl.col("is_subagent"))
            .sum()
            .cast(pl.Int64)
            .alias("baselines"),
            ((pl.col("status") == "baseline") & pl.col("is_subagent"))
            .sum()
            .cast(pl.Int64)
            .alias("subagent_baselines"),
            pl.struct(reasons).alias("breaks_by_reason"),
            (pl.col("est_delta") - pl.col("delta")).abs().filter(ok).mean().alias("delta_mae"),
            (pl.col("est_delta").filter(ok).sum() / pl.col("delta").filter(ok).sum()).alias("delta_bias"),
            pl.col("rel_error").filter(ok).quantile(0.5, "linear").alias("ctx_err_p50"),
            pl.col("rel_error").filter(ok).quantile(0.9, "linear").alias("ctx_err_p90"),
            pl.col("rel_error").filter(ok).quantile(0.99, "linear").alias("ctx_err_p99"),
            (pl.col("error") / pl.col("ctx")).filter(ok).mean().alias("ctx_err_mean"),
            pl.col("static_residual").median().alias("static_overhead_p50"),
        )
        .sort(keys, nulls_last=True)
    )
    return out


def summary_records(summary: pl.DataFrame, digits: int = 6) -> list[dict[str, Any]]:
    """The summary as JSON-ready rows (floats rounded, NaN as null)."""
    import math

    records = []
    for row in summary.to_dicts():
        for key, value in row.items():
            if isinstance(value, float):
                row[key] = None if math.isnan(value) or math.isinf(value) else round(value, digits)
        records.append(row)
    return records


def default_estimators() -> list[str]:
    """The estimators `calib score` runs when none is named: every fixed-name one usable here."""
    return [info.name for info in list_estimators() if info.available and not info.name.endswith(":")]


def score_store(
    db: str | os.PathLike[str] | None = None,
    estimators: Sequence[str] | None = None,
    *,
    sessions: Sessions = "all",
    holdout_fraction: float = HOLDOUT_FRACTION,
    progress: Progress | None = None,
) -> pl.DataFrame:
    """`calib score`: score estimators (default: every fixed-name one that loads) on a store, summarised
    per estimator × provider × model (see `summarise`)."""
    from calib.store.store import open_store

    with open_store(db) as store:
        rows = score(
            store,
            list(estimators) if estimators else default_estimators(),
            sessions=sessions,
            holdout_fraction=holdout_fraction,
            progress=progress,
        )
    return summarise(rows)


# The package exports `score` under this name: `calib.scoring.score` is the module once anything imports it.
score_calls = score
