"""The per-call frame: each call's usage, segments and kept reasoning, the window and thresholds it is
judged on, and each rule's decision on it (`_decide`), with what a long session's next piece goes on
from (`ReplayCarry`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import polars as pl

from calib.analysis.accountant import tracked_display
from calib.analysis.replay.plan import WindowPlan
from calib.analysis.rules import ClineRule, GeminiRule, Rule
from calib.runtime import Calibration, Tracker

# Chain breaks after which the history was rewritten: no count from before them applies.
_RESET_REASONS = ("compaction", "rewound")

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
    "own",
    "window_kind",
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
    "event",
    "margin",
    "error",
)

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


# What the next batch needs of the last call of a session that it goes on with (`ReplayCarry`): its
# segment and reset counts so far, and the sums of its open segment up to and with it.
_CALL_CARRY: dict[str, Any] = {
    "_seg0": pl.Int64,
    "_open_resent": pl.Int64,
    "_open_reas": pl.Int64,
    "_last_reas": pl.Int64,
    "_rseg0": pl.Int64,
}
# ... and of its rows under each rule and policy, per estimator: the count shown last, its reset
# segment, whether it compacted and its outcome.
_DECIDE_CARRY: dict[str, Any] = {
    "_latest0": pl.Float64,
    "_rseg_end": pl.Int64,
    "_compact0": pl.Boolean,
    "_outcome0": pl.String,
}


@dataclass
class ReplayCarry:
    """Where `replay_batch` left the last session of a batch, for the next batch to go on with when it
    holds the rest of that session (a long session is read in pieces: `calib.scoring.chain`). Every
    figure of a call depends on the calls before it in its session only through these running values,
    so a session replayed in pieces gives the rows it gives whole."""

    calls: pl.DataFrame | None = None  # per session (one): `_CALL_CARRY`
    decided: dict[tuple[str, str], pl.DataFrame] = field(default_factory=dict)  # per rule, policy
    # per rule and policy, the tracker of each calibrated estimator on the session going on
    trackers: dict[tuple[str, str], dict[tuple[str, str], Tracker]] = field(default_factory=dict)


def _carried(
    frame: pl.DataFrame, carry: pl.DataFrame | None, on: list[str], schema: dict[str, Any]
) -> pl.DataFrame:
    """`frame` with the columns of `carry` (null where it has no row): joined only when the carry's
    session is in `frame`, the first session of a batch that goes on with it."""
    going_on = (
        carry is not None
        and not carry.is_empty()
        and frame.height > 0
        and frame.get_column("session_uid")[0] == carry.get_column("session_uid")[0]
    )
    if going_on and carry is not None:
        return frame.join(carry, on=on, how="left", maintain_order="left")
    return frame.with_columns(pl.lit(None, dtype).alias(name) for name, dtype in schema.items())


def _call_frame(
    chain: pl.DataFrame, usage: pl.DataFrame, going_on: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Per call: usage, visible output, resent reasoning, content and kept-reasoning sums (going on
    from `going_on`, `_CALL_CARRY` of the session's previous piece, where a batch begins inside it)."""
    f = chain.join(usage, on="call_uid", how="left").sort("session_uid", "seq")
    if going_on is not None:
        f = _carried(f, going_on, ["session_uid"], _CALL_CARRY)

    def plus(expr: pl.Expr, carried: pl.Expr) -> pl.Expr:
        # a batch of whole sessions (nearly every one) reads no carry: its columns are not even made
        return expr if going_on is None else expr + carried

    has = (pl.col("usage_status") == "ok") & pl.col("ctx").is_not_null()
    f = f.with_columns(
        has.alias("_has"),
        pl.when(has).then(pl.col("reasoning").fill_null(0)).otherwise(0).alias("_reas"),
        pl.col("output").fill_null(0).alias("_out"),
        pl.col("cache_write").fill_null(0).alias("_cw"),
        pl.sum_horizontal(
            pl.col(c).fill_null(0) for c in ("input", "output", "reasoning", "cache_read", "cache_write")
        ).alias("_ui"),
        plus(
            (pl.col("status") != "ok").cast(pl.Int64).cum_sum().over("session_uid"),
            pl.col("_seg0").fill_null(0),
        ).alias("_seg"),
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
    open_segment = pl.col("_seg") == pl.col("_seg0")  # the one the previous piece ended in (null: none)
    reas_prev = pl.col("_reas").shift(1).over(segment)
    f = f.with_columns(
        plus(
            pl.col("_resent").cum_sum().shift(1, fill_value=0).over(segment),
            pl.when(open_segment).then(pl.col("_open_resent")).otherwise(0),
        ).alias("_in_ctx"),
        plus(
            pl.col("_reas").cum_sum().shift(1, fill_value=0).over(segment),
            pl.when(open_segment).then(pl.col("_open_reas")).otherwise(0),
        ).alias("_reas_before"),
        (
            reas_prev.fill_null(0)
            if going_on is None
            else reas_prev.fill_null(pl.when(open_segment).then(pl.col("_last_reas")).otherwise(0))
        ).alias("_reas_prev"),
    )
    reset = pl.col("reason").is_in(list(_RESET_REASONS)).fill_null(False)
    f = f.with_columns(
        reset.alias("_reset"),
        plus(reset.cast(pl.Int64).cum_sum().over("session_uid"), pl.col("_rseg0").fill_null(0)).alias(
            "_rseg"
        ),
    )
    return f.with_columns((pl.col("ctx") - pl.col("_in_ctx")).alias("_content"))


def _call_carry(calls: pl.DataFrame) -> pl.DataFrame:
    """`_CALL_CARRY` of the last call of the last session of `calls` (a `_call_frame`)."""
    last = calls.tail(1)
    return last.select(
        "session_uid",
        pl.col("_seg").alias("_seg0"),
        (pl.col("_in_ctx") + pl.col("_resent")).alias("_open_resent"),
        (pl.col("_reas_before") + pl.col("_reas")).alias("_open_reas"),
        pl.col("_reas").alias("_last_reas"),
        pl.col("_rseg").alias("_rseg0"),
    ).cast(cast(Any, _CALL_CARRY))


def _window_frame(pairs: list[tuple[str, str | None]], plan: WindowPlan, rules: list[Rule]) -> pl.DataFrame:
    """Per (agent, model) of the calls: the window it is replayed on and each rule's threshold there."""
    rows: dict[str, list[Any]] = {
        "tool": [],
        "_mkey": [],
        "window": [],
        "max_output": [],
        "_max_prompt": [],
    }
    for rule in rules:
        rows[f"_thr|{rule.name}"] = []
    for agent, model in pairs:
        window = plan.window(agent, model)
        rows["tool"].append(agent)
        rows["_mkey"].append(_NULL_KEY if model is None else model)
        rows["window"].append(window.context if window else None)
        rows["max_output"].append(window.max_output if window else None)
        rows["_max_prompt"].append(window.max_prompt if window else None)
        for rule in rules:
            rows[f"_thr|{rule.name}"].append(rule.limit(window) if window else None)
    schema: dict[str, Any] = {
        "tool": pl.String,
        "_mkey": pl.String,
        "window": pl.Int64,
        "max_output": pl.Int64,
        "_max_prompt": pl.Int64,
    }
    schema.update({f"_thr|{rule.name}": pl.Float64 for rule in rules})
    return pl.DataFrame(rows, schema=schema)


def _decide(
    base: pl.DataFrame,
    rule: Rule,
    policy: str,
    carry: pl.DataFrame | None = None,
    *,
    pieces: bool = False,
    calibrations: Mapping[str, Calibration] | None = None,
    trackers: dict[tuple[str, str], Tracker] | None = None,
    own_only: bool = False,
) -> pl.DataFrame:
    """The rows of one rule and policy, for every estimator and call of `base`. With `pieces` (the batch
    begins or ends inside a long session), going on from `carry` (`_DECIDE_CARRY` of the session's
    previous piece, where the batch begins inside it), with the helper columns `_decide_carry` reads.
    The displayed counts of the estimators in `calibrations` are the runtime tracker's
    (`calib.analysis.accountant`), going on from `trackers` in pieces; with `own_only` (only the rows of
    sessions whose own rule this is are kept) only those are walked."""

    def cmp(left: pl.Expr, right: pl.Expr) -> pl.Expr:
        return left > right if rule.strict else left >= right

    last = pl.when(pl.col("_has")).then(_last_count(rule, policy).cast(pl.Float64)).otherwise(None)
    threshold = pl.col(f"_thr|{rule.name}")
    # counts from before a reset (a rewritten history) never apply after it
    group = ["estimator", "session_uid", "_rseg"]
    if pieces:
        frame = base.with_columns(threshold.alias("threshold"), last.alias("_last"))
        frame = _carried(frame, carry, ["estimator", "session_uid"], _DECIDE_CARRY)
        latest = (
            pl.col("_last")
            .shift(1)
            .forward_fill()
            .over(group)
            .fill_null(pl.when(pl.col("_rseg") == pl.col("_rseg_end")).then(pl.col("_latest0")))
        )
    else:  # whole sessions (nearly every batch): no carry read, none made
        frame = base.with_columns(threshold.alias("threshold"))
        latest = last.shift(1).forward_fill().over(group)
    frame = frame.with_columns(latest.alias("_latest"))
    known = pl.col("_latest").is_not_null()
    if isinstance(rule, ClineRule):
        # Cline's SDK estimates every request whole (system prompt, messages and tools), usage or not
        frame = frame.with_columns(
            pl.col("est_full").alias("displayed"),
            pl.lit("full").alias("basis"),
            pl.lit(None, pl.Float64).alias("guard"),
        )
    elif rule.chained:
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
    if calibrations:
        frame = tracked_display(frame, policy, calibrations, trackers, rule.name if own_only else None)
    # where the log lost what re-entered (Claude Code's streaming placeholders), the output as recorded
    resent = pl.coalesce(pl.col("carry"), pl.col("_out"))
    truth = pl.col("ctx") + resent if rule.counts_output else pl.col("ctx")
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
    in_session = ["estimator", "session_uid"]
    compacted = compact.shift(1).over(in_session)
    before = pl.col("outcome").shift(1).over(in_session)
    if pieces:
        compacted, before = compacted.fill_null(pl.col("_compact0")), before.fill_null(pl.col("_outcome0"))
    frame = frame.with_columns(
        outcome.alias("outcome"), (compact & ~compacted.fill_null(False)).alias("fires")
    )
    now = pl.col("outcome")
    starts = now.is_in(["late", "missed", "refused"]) & (before != now).fill_null(True)
    event = (
        pl.when(pl.col("fires") & (now == "early"))
        .then(pl.lit("early"))
        .when(pl.col("fires") & (now == "ok") & should & (before != "late").fill_null(True))
        .then(pl.lit("on-time"))
        .when(starts)
        .then(now)
        .otherwise(pl.lit(None, pl.String))
    )
    frame = frame.with_columns(
        event.alias("event"),
        (pl.col("truth") - pl.col("threshold")).alias("margin"),
        (pl.col("displayed") - pl.col("truth")).alias("error"),
        pl.lit(rule.name).alias("rule"),
        pl.lit(policy).alias("policy"),
        (pl.col("_own") == rule.name).fill_null(False).alias("own"),
    )
    return frame


def _decide_carry(frame: pl.DataFrame) -> pl.DataFrame:
    """`_DECIDE_CARRY` of the last call of the last session of `frame` (a `_decide` frame), per estimator."""
    uid = frame.get_column("session_uid").max()
    return (
        frame.filter(pl.col("session_uid") == uid)
        .group_by("estimator", "session_uid", maintain_order=True)
        .agg(
            pl.coalesce(pl.col("_last"), pl.col("_latest")).last().alias("_latest0"),
            pl.col("_rseg").last().alias("_rseg_end"),
            pl.col("compact").last().alias("_compact0"),
            pl.col("outcome").last().alias("_outcome0"),
        )
        .cast(cast(Any, _DECIDE_CARRY))
    )
