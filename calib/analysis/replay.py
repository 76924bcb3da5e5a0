"""Replay: what each agent's `/context` would have shown on every recorded call, and when its
compaction rule would have fired, judged against the context the provider actually counted.

Public data API (polars frames; the report and plots are built from these):

- `replay(store, estimators, rules=None, policies=None, windows=None) -> pl.DataFrame`: one row per
  call × rule × estimator × policy, columns `REPLAY_COLUMNS`.
- `summarise_replay(frame) -> pl.DataFrame`: one row per rule × estimator × policy, columns
  `SUMMARY_COLUMNS`.
- `timeline(frame, session_uid, *, rule="dexto", policy="raw") -> pl.DataFrame`: one row per
  call × estimator of one session, columns `TIMELINE_COLUMNS` (what `calib.analysis.plots.replay_timeline` draws).
- `pick_session(frame, *, rule="dexto", policy="raw") -> str | None`: the session worth plotting.
- `run_replay(db, estimators, *, rules, policies, windows) -> ReplayReport`: `calib replay`.

`replay` holds the whole frame; `calib replay` and the report never do: `replay_store` scores and replays
a batch of whole sessions at a time (`replay_batch`) and `ReplayTally` adds up each batch's rows, keeping
on disk only the errors a percentile needs, so their memory stays flat however large the store.

Every decision is made per call and independently: the replay asks, before each recorded call k,
what the rule would have shown and decided given the calls before it; it does not rebuild the history
a compaction would have left (the recorded session goes on as it was recorded).

Quantities of a recorded call m (the usage normalised by the importers, `calib.core.usage`):

- `vis[m]`: visible output that re-enters the next prompt, `min(carry, output)`, where for
  OpenAI-style usage `output` first loses `reasoning` (completion tokens include it);
- `resent[m] = carry[m] - vis[m]`: reasoning that re-entered the next prompt in the recording
  (OpenCode re-sends reasoning parts to the same model; Gemini and OpenAI-style usage never do);
- a *segment* is a run of calls from a chain start (a baseline or a break of `calib.scoring.score`) to the
  next one; reasoning kept in context does not survive a segment start (compaction, model change);
- `content[m] = ctx[m] - sum(resent[j], j < m in the segment)`: the prompt without reasoning;
- `kept_P(m)`, the reasoning a policy keeps in the prompt of call m: `include` (strip none)
  `sum(reasoning[j], j < m in the segment)`; `strip-all-but-last` `reasoning[m-1]`; `strip-all` 0;
- `U[m] = input + output + reasoning + cache_read + cache_write` as recorded (what agents' UIs add
  up; it counts Gemini- and OpenAI-style cached tokens twice, since their `input` already holds them).

Each rule (`calib.analysis.rules`, with the table of the count `L_P[m]` it reads off a finished call m
under policy P) gives, before call k, the context the agent would display (`displayed`, with its `basis`)
and its threshold; `compact` is the rule's own comparison of the two, and `guard` gemini-cli's pre-send
estimate of the request, which refuses it (`refuse`) when over the window.

Truth (`truth`) is the provider's count for call k itself, whatever the policy (it is what was sent):
`ctx[k]` for `gemini-cli` and `dexto`, which compare a prompt; `ctx[k] + carry[k]` for the OpenCode
rules, whose count includes the step's output (the context once call k has finished). A call without
usage has no truth. `should` applies the rule's own comparison to the truth; `over_window` is
`ctx[k] > W.max_prompt` (the input cap, else the window): a request that would fail.

`outcome` of each call (exactly one): `no_window` (model not in the window table), `unknown` (no
truth), and otherwise, where `compact` is the rule's decision and `refuse` the guard's:

- `early`: `compact` and not `should` (compacted while under the threshold in truth);
- `missed`: not `compact`, not `refuse` and `over_window` (sent, and would fail);
- `late`: not `compact` and `should`, the request fitting or refused (over the threshold in truth);
- `refused`: not `compact`, `refuse` and not `over_window` (the guard stopped a request that fits);
- `ok`: otherwise (compacted when it should, or neither).

`fires` marks the call at which compaction would really run: `compact` at call k but not at the call
before in the session. `margin = truth - threshold`; `error = displayed - truth`. The summary's
error figures cover calls with chain status `ok` only (breaks never enter error figures), and
`wasted_tokens` adds `threshold - truth` over early firing calls: the room left under the threshold
when an early compaction would have run.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from calib.analysis.batches import Spool, batch_calls, compact
from calib.analysis.rules import (
    OWN_RULE,
    RULES,
    GeminiRule,
    Rule,
    own_rule,
    resolve_policies,
    resolve_rules,
    rule_params,
)
from calib.analysis.windows import WindowTable, fixed_windows, load_windows
from calib.core.errors import UsageError
from calib.core.progress import Progress
from calib.estimators import grouped_estimator
from calib.scoring.chain import FeatureTable
from calib.scoring.score import score_frame, summary_records
from calib.store.store import Store, open_store

# Chain breaks after which the history was rewritten: no count from before them applies.
_RESET_REASONS = ("compaction", "rewound")
DEFAULT_ESTIMATORS: tuple[str, ...] = ("chars4", "cjk")

# -- the per-call frame -------------------------------------------------------------------------------

REPLAY_COLUMNS = (
    "rule",
    "estimator",
    "policy",
    "session_uid",
    "call_uid",
    "seq",
    "tool",
    "provider",
    "model",
    "is_subagent",
    "status",
    "reason",
    "window",
    "max_output",
    "threshold",
    "displayed",
    "basis",
    "guard",
    "truth",
    "ctx",
    "compact",
    "refuse",
    "fires",
    "should",
    "over_window",
    "outcome",
    "margin",
    "error",
)

_USAGE_SQL = """
SELECT call_uid, usage_style, usage_status, input, output, reasoning, cache_read, cache_write, total, carry
FROM calls
"""

_NULL_KEY = "\x00"


def _last_count(rule: Rule, policy: str) -> pl.Expr:
    """`L_P[m]`: the count the rule reads off call m once it finished (table in `calib.analysis.rules`)."""
    if policy == "ui-sum":
        return pl.col("_ui")
    ctx, content = pl.col("ctx"), pl.col("_content")
    if rule.count == "prompt":
        if policy == "raw":
            return ctx
        kept = {"include": "_reas_before", "strip-all-but-last": "_reas_prev", "strip-all": None}[policy]
        return content + pl.col(kept) if kept else content
    if policy == "raw":
        if rule.count == "total":
            return pl.when(pl.col("total") > 0).then(pl.col("total")).otherwise(ctx + pl.col("_out"))
        if rule.count == "prompt-write+output":
            return ctx - pl.col("_cw") + pl.col("_out")
        return ctx + pl.col("_out")
    after = content + pl.col("_vis")
    if policy == "include":
        after = after + pl.col("_reas_before") + pl.col("_reas")
    elif policy == "strip-all-but-last":
        after = after + pl.col("_reas")
    if rule.count == "prompt-write+output":
        after = after - pl.col("_cw")
    return after


def _call_frame(chain: pl.DataFrame, usage: pl.DataFrame) -> pl.DataFrame:
    """Per call: usage, visible output, resent reasoning, content and kept-reasoning sums."""
    f = chain.join(usage, on="call_uid", how="left").sort("session_uid", "seq")
    has = (pl.col("usage_status") == "ok") & pl.col("ctx").is_not_null()
    f = f.with_columns(
        has.alias("_has"),
        pl.when(has).then(pl.col("reasoning").fill_null(0)).otherwise(0).alias("_reas"),
        pl.col("output").fill_null(0).alias("_out"),
        pl.col("cache_write").fill_null(0).alias("_cw"),
        pl.sum_horizontal(
            pl.col(c).fill_null(0) for c in ("input", "output", "reasoning", "cache_read", "cache_write")
        ).alias("_ui"),
        (pl.col("status") != "ok").cast(pl.Int64).cum_sum().over("session_uid").alias("_seg"),
    )
    visible_output = (
        pl.when(pl.col("usage_style") == "openai")
        .then((pl.col("_out") - pl.col("_reas")).clip(lower_bound=0))
        .otherwise(pl.col("_out"))
    )
    carry = pl.col("carry").fill_null(0)
    f = f.with_columns(
        pl.when(pl.col("_has")).then(pl.min_horizontal(carry, visible_output)).otherwise(0).alias("_vis"),
    ).with_columns(
        pl.when(pl.col("_has")).then(carry - pl.col("_vis")).otherwise(0).alias("_resent"),
    )
    segment = ["session_uid", "_seg"]
    f = f.with_columns(
        pl.col("_resent").cum_sum().shift(1, fill_value=0).over(segment).alias("_in_ctx"),
        pl.col("_reas").cum_sum().shift(1, fill_value=0).over(segment).alias("_reas_before"),
        pl.col("_reas").shift(1, fill_value=0).over(segment).alias("_reas_prev"),
    )
    reset = pl.col("reason").is_in(list(_RESET_REASONS)).fill_null(False)
    f = f.with_columns(
        reset.alias("_reset"), reset.cast(pl.Int64).cum_sum().over("session_uid").alias("_rseg")
    )
    return f.with_columns((pl.col("ctx") - pl.col("_in_ctx")).alias("_content"))


def _window_frame(models: list[str | None], table: WindowTable, rules: list[Rule]) -> pl.DataFrame:
    rows: dict[str, list[Any]] = {"_mkey": [], "window": [], "max_output": [], "_max_prompt": []}
    for rule in rules:
        rows[f"_thr|{rule.name}"] = []
    for model in models:
        window = table.lookup(model)
        rows["_mkey"].append(_NULL_KEY if model is None else model)
        rows["window"].append(window.context if window else None)
        rows["max_output"].append(window.max_output if window else None)
        rows["_max_prompt"].append(window.max_prompt if window else None)
        for rule in rules:
            rows[f"_thr|{rule.name}"].append(rule.limit(window) if window else None)
    schema: dict[str, Any] = {
        "_mkey": pl.String,
        "window": pl.Int64,
        "max_output": pl.Int64,
        "_max_prompt": pl.Int64,
    }
    schema.update({f"_thr|{rule.name}": pl.Float64 for rule in rules})
    return pl.DataFrame(rows, schema=schema)


def _decide(base: pl.DataFrame, rule: Rule, policy: str) -> pl.DataFrame:
    """The rows of one rule and policy, for every estimator and call of `base`."""

    def cmp(left: pl.Expr, right: pl.Expr) -> pl.Expr:
        return left > right if rule.strict else left >= right

    last = pl.when(pl.col("_has")).then(_last_count(rule, policy).cast(pl.Float64)).otherwise(None)
    threshold = pl.col(f"_thr|{rule.name}")
    frame = base.with_columns(threshold.alias("threshold"))
    # counts from before a reset (a rewritten history) never apply after it
    group = ["estimator", "session_uid", "_rseg"]
    latest = last.shift(1).forward_fill().over(group)
    frame = frame.with_columns(latest.alias("_latest"))
    known = pl.col("_latest").is_not_null()
    if rule.chained:
        # the estimate covers everything appended since the latest call with usage: a call's
        # `est_delta` already spans the calls whose usage was lost (the chain bridges them)
        frame = frame.with_columns(
            pl.when(known)
            .then(pl.col("_latest") + pl.col("est_delta"))
            .otherwise(pl.col("est_full"))
            .alias("displayed"),
            pl.when(known).then(pl.lit("chained")).otherwise(pl.lit("full")).alias("basis"),
            pl.lit(None, pl.Float64).alias("guard"),
        )
    else:
        # gemini-cli re-estimates the history after a compression; OpenCode waits for the next step
        restart = pl.col("est_full") if isinstance(rule, GeminiRule) else pl.lit(0.0)
        frame = frame.with_columns(
            pl.when(known)
            .then(pl.col("_latest"))
            .when(pl.col("_reset"))
            .then(restart)
            .otherwise(0.0)
            .alias("displayed"),
            pl.when(known)
            .then(pl.lit("actual"))
            .when(pl.col("_reset") & isinstance(rule, GeminiRule))
            .then(pl.lit("full"))
            .otherwise(pl.lit("none"))
            .alias("basis"),
        )
        if rule.guard:
            guard = pl.when(known).then(pl.col("_latest") + pl.col("est_delta")).otherwise(pl.col("est_full"))
            frame = frame.with_columns(guard.alias("guard"))
        else:
            frame = frame.with_columns(pl.lit(None, pl.Float64).alias("guard"))
    truth = pl.col("ctx") + pl.col("carry") if rule.counts_output else pl.col("ctx")
    has_window = pl.col("threshold").is_not_null()
    frame = frame.with_columns(
        pl.when(pl.col("_has")).then(truth.cast(pl.Float64)).alias("truth"),
        (has_window & cmp(pl.col("displayed"), pl.col("threshold"))).fill_null(False).alias("compact"),
    ).with_columns(
        (has_window & ~pl.col("compact") & (pl.col("guard") > pl.col("window")))
        .fill_null(False)
        .alias("refuse"),
        cmp(pl.col("truth"), pl.col("threshold")).alias("should"),
        pl.when(pl.col("_has")).then(pl.col("ctx") > pl.col("_max_prompt")).alias("over_window"),
    )
    compact, refuse, should, over = (pl.col(c) for c in ("compact", "refuse", "should", "over_window"))
    outcome = (
        pl.when(~has_window)
        .then(pl.lit("no_window"))
        .when(pl.col("truth").is_null())
        .then(pl.lit("unknown"))
        .when(compact & should)
        .then(pl.lit("ok"))
        .when(compact)
        .then(pl.lit("early"))
        .when(over & refuse)
        .then(pl.lit("late"))
        .when(over)
        .then(pl.lit("missed"))
        .when(refuse)
        .then(pl.lit("refused"))
        .when(should)
        .then(pl.lit("late"))
        .otherwise(pl.lit("ok"))
    )
    frame = frame.with_columns(
        outcome.alias("outcome"),
        (compact & ~compact.shift(1).over("estimator", "session_uid").fill_null(False)).alias("fires"),
        (pl.col("truth") - pl.col("threshold")).alias("margin"),
        (pl.col("displayed") - pl.col("truth")).alias("error"),
        pl.lit(rule.name).alias("rule"),
        pl.lit(policy).alias("policy"),
    )
    return frame.select(REPLAY_COLUMNS)


def replay(
    store: Store,
    estimators: Sequence[str],
    rules: Sequence[str | Rule] | None = None,
    policies: Sequence[str] | None = None,
    windows: WindowTable | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    progress: Progress | None = None,
) -> pl.DataFrame:
    """Replay each agent rule on every call of the store, per estimator and reasoning policy: one row
    per call × rule × estimator × policy (columns `REPLAY_COLUMNS`, defined in the module docstring).

    The whole frame is in memory; `run_replay` (and the report) summarise the same rows a batch of
    sessions at a time instead (`ReplayTally`)."""
    names = _estimator_names(estimators)
    rule_list, wanted = _rules_to_run(rules)
    policy_list = resolve_policies(policies)
    table = load_windows(windows)
    graded = [(name, _grouped(name)) for name in names]
    own = _own_rules(store) if wanted is not None else None
    batches = list(_scored_batches(store, graded, progress=progress))
    scores = batches[0] if len(batches) == 1 else pl.concat(batches, how="vertical")
    del batches
    if scores.is_empty():
        return _empty_frame()
    usage = store.query(_USAGE_SQL)
    frames = list(replay_batch(scores, usage, names, rule_list, policy_list, table, own, wanted))
    return pl.concat(frames, how="vertical") if frames else _empty_frame()


def _estimator_names(estimators: Sequence[str]) -> list[str]:
    names = list(dict.fromkeys(estimators))
    if not names:
        raise UsageError("no estimator to replay", hint="pass --estimator NAME (see `calib estimators`)")
    return names


def _grouped(name: str) -> Any | None:
    """The estimator of `name` when its counts are applied per (provider, model) (a calibration), else
    None (the counts of the source `name` itself): as `calib.scoring.score.score` applies it."""
    return grouped_estimator(name)


def _scored_batches(
    store: Store,
    estimators: Sequence[tuple[str, Any | None]],
    *,
    progress: Progress | None = None,
    calls: int | None = None,
) -> Iterator[pl.DataFrame]:
    """Per batch of whole sessions (about `calls` calls, None: the whole store at once), the scores of
    each estimator (`calib.scoring.score.score_frame`), one estimator after the other."""
    sources = sorted({s for name, grouped in estimators for s in (grouped.sources if grouped else [name])})
    with FeatureTable(store, sources, progress=progress) as table:
        for batch in table.batches(batch_calls=calls or sys.maxsize):
            scored = [score_frame(batch, name, grouped) for name, grouped in estimators]
            yield pl.concat(scored, how="vertical_relaxed")


# Columns of the per-call frame that `_decide` does not read.
_NOT_DECIDED = (
    "usage_style",
    "usage_status",
    "input",
    "output",
    "reasoning",
    "cache_read",
    "cache_write",
    "_seg",
    "_resent",
    "_in_ctx",
    "_mkey",
)


# What `replay_batch` reads of the scores: each call's chain columns (of the first estimator's rows),
# then every estimator's estimates.
_CHAIN_READ = (
    "session_uid",
    "call_uid",
    "seq",
    "tool",
    "provider",
    "model",
    "is_subagent",
    "status",
    "reason",
    "ctx",
)
REPLAYED_COLUMNS = ("estimator", *_CHAIN_READ, "est_delta", "est_full")


def replay_batch(
    scores: pl.DataFrame,
    usage: pl.DataFrame,
    names: Sequence[str],
    rule_list: Sequence[Rule],
    policy_list: Sequence[str],
    table: WindowTable,
    own: pl.DataFrame | None = None,
    wanted: Sequence[str] | None = None,
) -> Iterator[pl.DataFrame]:
    """The replay rows of whole sessions, one frame per rule and policy (in that order): `scores` are
    their calls scored by each estimator of `names`, `usage` the calls' usage (`_USAGE_SQL`); with
    `own` (per session, its own rule), only the rows of the `wanted` rules and of each session's own."""
    chain = scores.filter(pl.col("estimator") == names[0]).select(_CHAIN_READ)
    calls = _call_frame(chain, usage)
    models = calls.get_column("model").unique().to_list()
    windows_frame = _window_frame(models, table, list(rule_list))
    calls = (
        calls.with_columns(pl.col("model").fill_null(_NULL_KEY).alias("_mkey"))
        .join(windows_frame, on="_mkey", how="left")
        .drop(_NOT_DECIDED)  # what `_decide` does not read: not copied per estimator
    )
    order = pl.DataFrame({"estimator": list(names), "_eorder": list(range(len(names)))})
    base = (
        scores.select("estimator", "call_uid", "est_delta", "est_full")
        .join(calls, on="call_uid", how="inner")
        .join(order, on="estimator", how="left")
        .sort("_eorder", "session_uid", "seq")
        .drop("_eorder")
    )
    for rule in rule_list:
        for policy in policy_list:
            frame = _decide(base, rule, policy)
            if own is not None:
                frame = frame.join(own, on="session_uid", how="left").filter(
                    pl.col("rule").is_in(list(wanted or [])) | (pl.col("rule") == pl.col("_own"))
                )
                frame = frame.drop("_own")
            yield frame


def _rules_to_run(rules: Sequence[str | Rule] | None) -> tuple[list[Rule], list[str] | None]:
    """The rules to compute, and with `own` among the requested ones (each session under its own agent's
    rule for its version) the names of the rules also kept for every session (None: no `own`)."""
    if rules is None or OWN_RULE not in rules:
        return resolve_rules(rules), None
    named = [r for r in rules if r != OWN_RULE]
    rule_list = resolve_rules(named) if named else []
    given = {r.name for r in rule_list}
    wanted = list(given)
    return rule_list + [cls() for name, cls in RULES.items() if name not in given], wanted


def _own_rules(store: Store) -> pl.DataFrame:
    """Per session, the name of its own agent's rule for the version it recorded (`own_rule`)."""
    uids, own = [], []
    for uid, tool, meta in store.con.execute("SELECT session_uid, tool, meta FROM sessions").fetchall():
        info = json.loads(meta) if isinstance(meta, str) else (meta or {})
        versions = info.get("versions")
        version = info.get("version") or (versions[-1] if isinstance(versions, list) and versions else None)
        rule = own_rule(tool, version if isinstance(version, str) else None)
        uids.append(uid)
        own.append(rule.name if rule is not None else None)
    return pl.DataFrame(
        {"session_uid": uids, "_own": own}, schema={"session_uid": pl.String, "_own": pl.String}
    )


def _empty_frame() -> pl.DataFrame:
    strings = {"rule", "estimator", "policy", "session_uid", "call_uid", "tool", "provider", "model"}
    strings |= {"status", "reason", "basis", "outcome"}
    booleans = {"is_subagent", "compact", "refuse", "fires", "should", "over_window"}
    ints = {"seq", "window", "max_output", "ctx"}
    schema: dict[str, Any] = {}
    for col in REPLAY_COLUMNS:
        if col in strings:
            schema[col] = pl.String
        elif col in booleans:
            schema[col] = pl.Boolean
        elif col in ints:
            schema[col] = pl.Int64
        else:
            schema[col] = pl.Float64
    return pl.DataFrame(schema=schema)


# -- summary ------------------------------------------------------------------------------------------

SUMMARY_COLUMNS = (
    "rule",
    "estimator",
    "policy",
    "uses_estimator",
    "calls",
    "compact",
    "fires",
    "should",
    "early",
    "late",
    "missed",
    "refused",
    "unknown",
    "no_window",
    "scored",
    "err_p50",
    "err_p90",
    "rel_err_p50",
    "rel_err_p90",
    "err_mean",
    "early_fires",
    "wasted_tokens",
)


def summarise_replay(frame: pl.DataFrame) -> pl.DataFrame:
    """Per rule × estimator × policy: decisions (`calls` with a truth and a window), how many compact,
    fire and should compact, the `early` / `late` / `missed` / `refused` calls, calls without truth or
    window, the error of the displayed context in tokens (|displayed - truth| p50/p90, relative p50/p90,
    signed mean) over calls with chain status ok (`scored`), and `wasted_tokens` (threshold - truth
    summed over the `early_fires` calls)."""
    abs_err = pl.col("error").abs()
    scored, early_fire = _SCORED, _EARLY_FIRE
    out = frame.group_by(_SUMMARY_KEYS, maintain_order=True).agg(
        *_count_aggs(),
        abs_err.filter(scored).quantile(0.5, "linear").alias("err_p50"),
        abs_err.filter(scored).quantile(0.9, "linear").alias("err_p90"),
        (abs_err / pl.col("truth")).filter(scored).quantile(0.5, "linear").alias("rel_err_p50"),
        (abs_err / pl.col("truth")).filter(scored).quantile(0.9, "linear").alias("rel_err_p90"),
        pl.col("error").filter(scored).mean().alias("err_mean"),
        (pl.col("threshold") - pl.col("truth")).filter(early_fire).sum().alias("wasted_tokens"),
    )
    return _with_uses_estimator(out).select(SUMMARY_COLUMNS)


_SUMMARY_KEYS = ["rule", "estimator", "policy"]
_DECIDED = ~pl.col("outcome").is_in(["unknown", "no_window"])
_SCORED = _DECIDED & (pl.col("status") == "ok") & pl.col("error").is_not_null()
_EARLY_FIRE = pl.col("fires") & (pl.col("outcome") == "early")
# The summary's counts, in `SUMMARY_COLUMNS` order.
_COUNTS = (
    "calls",
    "compact",
    "fires",
    "should",
    "early",
    "late",
    "missed",
    "refused",
    "unknown",
    "no_window",
    "scored",
    "early_fires",
)


def _count_aggs() -> list[pl.Expr]:
    def count(cond: pl.Expr) -> pl.Expr:
        return cond.fill_null(False).sum().cast(pl.Int64)

    decided = _DECIDED
    return [
        count(decided).alias("calls"),
        count(decided & pl.col("compact")).alias("compact"),
        count(decided & pl.col("fires")).alias("fires"),
        count(decided & pl.col("should")).alias("should"),
        *(count(pl.col("outcome") == name).alias(name) for name in ("early", "late", "missed", "refused")),
        count(pl.col("outcome") == "unknown").alias("unknown"),
        count(pl.col("outcome") == "no_window").alias("no_window"),
        count(_SCORED).alias("scored"),
        count(_EARLY_FIRE).alias("early_fires"),
    ]


def _with_uses_estimator(frame: pl.DataFrame) -> pl.DataFrame:
    uses = {name: cls.uses_estimator for name, cls in RULES.items()}
    return frame.with_columns(
        pl.col("rule").replace_strict(uses, default=True, return_dtype=pl.Boolean).alias("uses_estimator")
    )


class ReplayTally:
    """`summarise_replay`, `unknown_models` and (for one rule and policy) `pick_session` and its
    `timeline`, of replay rows given a frame at a time: the frames of `replay_batch`, each holding whole
    sessions. Counts are added up as frames come; the errors of each group (which its percentiles need
    all of) wait in a `Spool` on disk, and the summary computes every figure on them as
    `summarise_replay` does on the whole frame, so the two give the same numbers.

    `order` gives the summary's row order (rules, then policies, then estimators, as `replay` makes
    the frame); `timeline_at` the (rule, policy) whose session to pick and keep the timeline of."""

    def __init__(
        self,
        order: tuple[Sequence[str], Sequence[str], Sequence[str]],
        spool: Spool,
        *,
        timeline_at: tuple[str, str] | None = None,
    ) -> None:
        rules, policies, estimators = order
        self._rank = {
            "rule": {name: i for i, name in enumerate(rules)},
            "policy": {name: i for i, name in enumerate(policies)},
            "estimator": {name: i for i, name in enumerate(estimators)},
        }
        self._spool = spool
        self._codes: dict[str, int] = {}
        self._names: list[str] = []
        self._counts: dict[tuple[str, str, str], list[int]] = {}
        self._unknown: set[str | None] = set()
        self.timeline_at = timeline_at
        self._best: tuple[float, int, str] | None = None
        self.timeline: pl.DataFrame | None = None

    def add(self, frame: pl.DataFrame) -> None:
        """Count the rows of whole sessions (any rules, estimators and policies)."""
        if frame.is_empty():
            return
        pairs = frame.select("rule", "policy").unique(maintain_order=True).rows()
        if len(pairs) > 1:
            for rule, policy in pairs:
                self._add(frame.filter((pl.col("rule") == rule) & (pl.col("policy") == policy)), rule, policy)
        else:
            self._add(frame, *pairs[0])

    def _add(self, frame: pl.DataFrame, rule: str, policy: str) -> None:
        # the rows of one rule and policy
        counts = frame.group_by("estimator", maintain_order=True).agg(*_count_aggs())
        for row in counts.iter_rows():
            if row[0] not in self._codes:
                self._codes[row[0]] = len(self._names)
                self._names.append(row[0])
            total = self._counts.setdefault((rule, row[0], policy), [0] * len(_COUNTS))
            for i, n in enumerate(row[1:]):
                total[i] += n
        # each estimator's errors, in the order of the rows (the estimator as a number: less to keep)
        code = pl.col("estimator").replace_strict(self._codes, default=None, return_dtype=pl.UInt16)
        errors = frame.filter(_SCORED).select(
            code, "error", (pl.col("error").abs() / pl.col("truth")).alias("rel")
        )
        self._spool.append(("errors", rule, policy), errors)
        wasted = frame.filter(_EARLY_FIRE).select(
            code, (pl.col("threshold") - pl.col("truth")).alias("wasted")
        )
        self._spool.append(("wasted", rule, policy), wasted)
        missing = frame.filter(pl.col("outcome") == "no_window").get_column("model").unique().to_list()
        self._unknown.update(missing)
        if (rule, policy) == self.timeline_at:
            self._pick(frame, rule, policy)

    def _pick(self, frame: pl.DataFrame, rule: str, policy: str) -> None:
        # `pick_session` on these sessions; the best so far wins over them unless they come closer
        rows = frame.filter(
            (pl.col("rule") == rule) & (pl.col("policy") == policy) & pl.col("truth").is_not_null()
        ).filter(pl.col("threshold") > 0)
        if rows.is_empty():
            return
        best = (
            rows.group_by("session_uid")
            .agg((pl.col("truth") / pl.col("threshold")).max().alias("reach"), pl.len().alias("n"))
            .sort(["reach", "n", "session_uid"], descending=[True, True, False])
            .row(0)
        )
        reach, n, uid = float(best[1]), int(best[2]), str(best[0])
        if self._best is not None:
            held_reach, held_n, held_uid = self._best
            if (reach, n) < (held_reach, held_n) or ((reach, n) == (held_reach, held_n) and uid > held_uid):
                return
        self._best = (reach, n, uid)
        self.timeline = compact(timeline(frame, uid, rule=rule, policy=policy))

    @property
    def session(self) -> str | None:
        """The session `pick_session` picks among all the rows (None without `timeline_at`)."""
        return self._best[2] if self._best is not None else None

    def rules(self) -> set[str]:
        """The rules that have rows."""
        return {key[0] for key in self._counts}

    def unknown_models(self) -> list[str]:
        """`unknown_models` of all the rows."""
        return sorted("?" if m is None else m for m in self._unknown)

    def summary(self) -> pl.DataFrame:
        """`summarise_replay` of all the rows."""
        rank = self._rank
        keys = sorted(
            self._counts,
            key=lambda k: (
                rank["rule"].get(k[0], -1),
                rank["policy"].get(k[2], -1),
                rank["estimator"].get(k[1], -1),
            ),
        )
        figures: dict[tuple[str, str, str], dict[str, Any]] = {}
        for rule, policy in dict.fromkeys((k[0], k[2]) for k in keys):
            figures.update(self._figures(rule, policy))
        rows: dict[str, list[Any]] = {name: [] for name in (*_SUMMARY_KEYS, *_COUNTS, *_VALUE_FIGURES)}
        empty = {**dict.fromkeys(_VALUE_FIGURES), "wasted_tokens": 0.0}
        for key in keys:
            for name, value in zip(_SUMMARY_KEYS, key, strict=True):
                rows[name].append(value)
            for name, n in zip(_COUNTS, self._counts[key], strict=True):
                rows[name].append(n)
            found = figures.get(key, empty)
            for name in _VALUE_FIGURES:
                rows[name].append(found.get(name, empty[name]))
        schema: dict[str, Any] = dict.fromkeys(_SUMMARY_KEYS, pl.String)
        schema.update(dict.fromkeys(_COUNTS, pl.Int64))
        schema.update(dict.fromkeys(_VALUE_FIGURES, pl.Float64))
        return _with_uses_estimator(pl.DataFrame(rows, schema=schema)).select(SUMMARY_COLUMNS)

    def _figures(self, rule: str, policy: str) -> dict[tuple[str, str, str], dict[str, Any]]:
        # the figures of one rule and policy per estimator, aggregated as `summarise_replay` aggregates
        # them (a group_by: the same kernels, on the same values in the same order)
        errors = self._spool.read(("errors", rule, policy), {"estimator": pl.UInt16})
        wasted = self._spool.read(("wasted", rule, policy), {"estimator": pl.UInt16})
        names = self._names
        out: dict[tuple[str, str, str], dict[str, Any]] = {}
        abs_err = pl.col("error").abs()
        if not errors.is_empty():
            table = errors.group_by("estimator", maintain_order=True).agg(
                abs_err.quantile(0.5, "linear").alias("err_p50"),
                abs_err.quantile(0.9, "linear").alias("err_p90"),
                pl.col("rel").quantile(0.5, "linear").alias("rel_err_p50"),
                pl.col("rel").quantile(0.9, "linear").alias("rel_err_p90"),
                pl.col("error").mean().alias("err_mean"),
            )
            for row in table.iter_rows(named=True):
                out[(rule, names[row.pop("estimator")], policy)] = row
        if not wasted.is_empty():
            sums = wasted.group_by("estimator", maintain_order=True).agg(pl.col("wasted").sum())
            for code, total in sums.iter_rows():
                out.setdefault((rule, names[code], policy), {})["wasted_tokens"] = total
        return out


_VALUE_FIGURES = ("err_p50", "err_p90", "rel_err_p50", "rel_err_p90", "err_mean", "wasted_tokens")


# -- one session --------------------------------------------------------------------------------------

TIMELINE_COLUMNS = (
    "seq",
    "call_uid",
    "estimator",
    "actual",
    "displayed",
    "threshold",
    "window",
    "compact",
    "fires",
    "refuse",
    "outcome",
    "break",
    "rule",
    "policy",
)


def timeline(
    frame: pl.DataFrame, session_uid: str, *, rule: str = "dexto", policy: str = "raw"
) -> pl.DataFrame:
    """One session under one rule and policy: per call × estimator, the true context (`actual`, the
    rule's truth), the displayed context, threshold, window, the decisions, and the chain `break`
    reason where calib restarted the chain (columns `TIMELINE_COLUMNS`)."""
    rows = frame.filter(
        (pl.col("session_uid") == session_uid) & (pl.col("rule") == rule) & (pl.col("policy") == policy)
    )
    return rows.select(
        "seq",
        "call_uid",
        "estimator",
        pl.col("truth").alias("actual"),
        "displayed",
        "threshold",
        "window",
        "compact",
        "fires",
        "refuse",
        "outcome",
        pl.when(pl.col("status") == "break").then(pl.col("reason")).alias("break"),
        "rule",
        "policy",
    )


def pick_session(frame: pl.DataFrame, *, rule: str = "dexto", policy: str = "raw") -> str | None:
    """The session whose true context comes closest to (or goes furthest over) the rule's threshold,
    the longest one on a tie: the one whose timeline shows the most."""
    rows = frame.filter(
        (pl.col("rule") == rule) & (pl.col("policy") == policy) & pl.col("truth").is_not_null()
    ).filter(pl.col("threshold") > 0)
    if rows.is_empty():
        return None
    best = (
        rows.group_by("session_uid")
        .agg((pl.col("truth") / pl.col("threshold")).max().alias("reach"), pl.len().alias("n"))
        .sort(["reach", "n", "session_uid"], descending=[True, True, False])
    )
    return str(best.item(0, "session_uid"))


def unknown_models(frame: pl.DataFrame) -> list[str]:
    """Models whose calls had no window in the table (shown as `?` for a call without a model)."""
    missing = frame.filter(pl.col("outcome") == "no_window").get_column("model").unique().to_list()
    return sorted("?" if m is None else m for m in missing)


# -- the command --------------------------------------------------------------------------------------


@dataclass
class ReplayReport:
    """What `calib replay` prints: the summary, the windows and rules used, and unknown models."""

    summary: pl.DataFrame
    estimators: list[str]
    rules: list[dict[str, Any]]
    policies: list[str]
    windows: dict[str, dict[str, int | None]]
    unknown_models: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The report as one JSON document (floats rounded, NaN as null)."""
        return {
            "estimators": self.estimators,
            "rules": self.rules,
            "policies": self.policies,
            "windows": self.windows,
            "unknown_models": self.unknown_models,
            "summary": summary_records(self.summary),
        }


def run_replay(
    db: str | os.PathLike[str] | None = None,
    estimators: Sequence[str] | None = None,
    *,
    rules: Sequence[str | Rule] | None = None,
    policies: Sequence[str] | None = None,
    windows: WindowTable | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    window: int | None = None,
    progress: Progress | None = None,
) -> ReplayReport:
    """`calib replay`: replay the rules on a store (default estimators `chars4` and `cjk`) and summarise;
    `window` gives every model that context window instead (a what-if)."""
    if window is not None and windows is not None:
        raise UsageError("--window and --windows together", hint="pass one of them")
    if window is not None:
        if window <= 0:
            raise UsageError(f"window of {window} tokens", hint="pass a positive token count")
        table = fixed_windows(window)
    else:
        table = load_windows(windows)
    names = list(dict.fromkeys(estimators)) if estimators else list(DEFAULT_ESTIMATORS)
    rule_list, wanted = _rules_to_run(rules)
    policy_list = resolve_policies(policies)
    with open_store(db, create=False) as store, Spool(prefix="calib-replay-") as spool:
        tally = replay_store(store, names, rules, policy_list, table, spool=spool, progress=progress)
        summary = tally.summary()
    if wanted is not None:  # `own`: the rules some session was replayed under
        used = tally.rules()
        rule_list = [r for r in rule_list if r.name in used]
    return ReplayReport(
        summary=summary,
        estimators=names,
        rules=[rule_params(r) for r in rule_list],
        policies=policy_list,
        windows=table.to_dict(),
        unknown_models=tally.unknown_models(),
    )


def replay_store(
    store: Store,
    estimators: Sequence[str],
    rules: Sequence[str | Rule] | None = None,
    policies: Sequence[str] | None = None,
    windows: WindowTable | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    spool: Spool,
    progress: Progress | None = None,
    calls: int | None = None,
    timeline_at: tuple[str, str] | None = None,
) -> ReplayTally:
    """The rows of `replay`, tallied a batch of whole sessions at a time (at most `calls` calls, by
    default `calib.analysis.batches.BATCH_ROWS` rows over the estimators): memory holds one batch's rows,
    whatever the size of the store; the errors wait in `spool`, which has to stay open until the tally's
    summary is computed."""
    names = _estimator_names(estimators)
    rule_list, wanted = _rules_to_run(rules)
    policy_list = resolve_policies(policies)
    table = load_windows(windows)
    graded = [(name, _grouped(name)) for name in names]
    own = _own_rules(store) if wanted is not None else None
    tally = ReplayTally(([r.name for r in rule_list], policy_list, names), spool, timeline_at=timeline_at)
    # the usage is read on a cursor of its own, beside the features read on the store's connection
    cursor = store.con.cursor()
    try:
        size = calls or batch_calls(len(names))
        for scores in _scored_batches(store, graded, progress=progress, calls=size):
            if scores.is_empty():
                continue
            uids = scores.get_column("session_uid")
            usage = batch_usage(cursor, uids[0], uids[-1])
            for frame in replay_batch(scores, usage, names, rule_list, policy_list, table, own, wanted):
                tally.add(frame)
    finally:
        cursor.close()
    return tally


def batch_usage(con: Any, first: str, last: str) -> pl.DataFrame:
    """The usage columns `replay_batch` reads, of the calls of the sessions whose uid sorts from `first`
    to `last` (on a DuckDB connection or cursor of the store)."""
    where = f"WHERE session_uid BETWEEN {_literal(first)} AND {_literal(last)}\n"
    result: pl.DataFrame = con.execute(_USAGE_SQL + where).pl()
    return result


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# The package exports `replay` under this name: `calib.analysis.replay` is the module once anything imports it.
replay_calls = replay
