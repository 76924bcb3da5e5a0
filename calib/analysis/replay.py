"""Replay: what each agent's `/context` would have shown on every recorded call, and when its
compaction rule would have fired, judged against the context the provider actually counted.

Public data API (polars frames; the report and plots are built from these):

- `replay(store, estimators, rules=None, policies=None, windows=None, *, window="real") -> pl.DataFrame`:
  one row per call × rule × estimator × policy, columns `REPLAY_COLUMNS`.
- `summarise_replay(frame) -> pl.DataFrame`: one row per agent × rule × estimator × policy (and window
  kind), columns `SUMMARY_COLUMNS`.
- `timeline(frame, session_uid, *, rule="own", policy="raw") -> pl.DataFrame`: one row per
  call × estimator of one session, columns `TIMELINE_COLUMNS` (what `calib.analysis.plots.replay_timeline` draws).
- `pick_session(frame, *, rule="own", policy="raw") -> str | None`: the session worth plotting.
- `run_replay(db, estimators, *, rules, policies, windows, window) -> ReplayReport`: `calib replay`, whose
  `lines()` are the per-rule sentences it prints.

`replay` holds the whole frame; `calib replay` and the report never do: `ReplayRun` scores and replays
a batch of whole sessions at a time (`replay_batch`), a session longer than a batch in pieces of
consecutive calls, each going on from where the last one ended (`ReplayCarry`), and `ReplayTally` adds
up each batch's rows, keeping on disk only the values a percentile needs, so their memory stays flat
however large the store and however long a session.

Rules. A rule named `own` (`calib.analysis.rules.OWN_RULE`, the default of `calib replay` and of the
report) replays each session under the rule of the agent that wrote it, for the version that wrote it
(`calib.analysis.rules.own_rule`): gemini-cli sessions under `gemini-cli`, OpenCode 1.x under `opencode`
and 2.x under `opencode-2`, Claude Code under the band of its version, Codex and Dexto under theirs.
Other rules can be named beside it to compare them on the same sessions; `all` names every rule. The
column `own` says whether a row's rule is its session's own.

Windows (`window`, `calib replay --window`; `plan_windows` makes the `WindowPlan`): a rule's threshold
is a share of the model's context window (`calib.analysis.windows`), and sessions that never come near
it teach nothing: nothing fires, nothing is early or late. So:

- `real`: each model's own window (the built-in table, or `--windows FILE`).
- `auto` (`calib replay`'s and the report's default): an agent keeps the real windows if any of its
  sessions reaches half of its real threshold (`NEAR_SHARE`; the largest prompt of its calls to a model
  over the threshold of its own rule on that model's window). Otherwise (every session of that agent
  stays under half of it: small or sample sessions) the agent gets a *what-if window*: one size N for
  every model it used, each model's window scaled to N tokens with its output limit and input cap in
  proportion (`calib.analysis.windows.Window.scaled`), N the smallest size at which the agent's own rule,
  on the window of the model most of its calls went to, puts its threshold at the median prompt of the
  agent's calls (halfway between the two middle prompts, so no call sits exactly on it;
  `calib.analysis.rules.what_if_window`). About half of its calls are then over the threshold and the
  sessions that cross it do so wherever they happen to, as under a real window, so the rule's timing
  (early, late) shows. The rules' own constants (reserves, buffers) are kept, and every rule replayed on
  an agent's calls uses the same windows, so rules compare on them. Folders whose sessions fill their
  windows keep the real ones; `WindowPlan.describe` says in one line which agents got which, and why.
- `what-if`: a what-if window for every agent, whatever its sessions' size.
- a number N: every model's window scaled to N tokens (`calib.analysis.windows.fixed_windows`).

The column `window_kind` says which applied to a row: `real`, `what-if`, or `fixed` (a number).

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
`ctx[k]` for `gemini-cli` and `dexto`, which compare a prompt; `ctx[k] + carry[k]` for the OpenCode,
Claude Code and Codex rules, whose count includes the step's output (the context once call k has
finished), with the output as recorded where the log lost the count of what re-entered (`carry`
unknown: Claude Code's streaming placeholders, a few tokens short of the real output). A call without
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
before in the session. `margin = truth - threshold`; `error = displayed - truth`.

`event` counts compactions rather than calls (the earlier call of the session and estimator decides):
`early` where compaction fires early (`fires` and `early`: it runs `-margin` tokens under the
threshold); `on-time` where it fires with the truth over the threshold and the call before was not
late; `late` at the first call of a run of late calls (the first request sent `margin` tokens over the
threshold without compacting); `missed` and `refused` at the first call of such a run. The summary
counts events (`early_fires`, `on_time`, `late_events`, `missed_events`, `refused_events`) and gives
how far they were from the threshold (`early_by_*`, `late_by_*`: min, median, max of |margin| at the
event), beside the counts of calls per outcome. Its error figures cover calls with chain status `ok`
only (breaks never enter error figures), and `wasted_tokens` adds `threshold - truth` over early
firing calls: the room left under the threshold when an early compaction would have run.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

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
    what_if_window,
)
from calib.analysis.windows import Window, WindowTable, fixed_windows, load_windows, window_size
from calib.core.errors import UsageError
from calib.core.progress import Progress
from calib.estimators import grouped_estimator
from calib.scoring.chain import FeatureTable, piece_condition
from calib.scoring.score import score_frame, summary_records
from calib.store.store import Store, open_store

# Chain breaks after which the history was rewritten: no count from before them applies.
_RESET_REASONS = ("compaction", "rewound")
DEFAULT_ESTIMATORS: tuple[str, ...] = ("chars4", "cjk")
# `window` modes besides a number of tokens (see the module docstring).
WINDOW_MODES: tuple[str, ...] = ("auto", "real", "what-if")
# `auto` keeps an agent's real windows once a session of it reaches this share of its real threshold.
NEAR_SHARE = 0.5

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

_USAGE_SQL = """
SELECT call_uid, usage_style, usage_status, input, output, reasoning, cache_read, cache_write, total, carry
FROM calls
"""
# The version an agent recorded: OpenCode's `version`, else the last of Claude Code's `versions`.
_VERSION_SQL = (
    "coalesce(json_extract_string(meta, '$.version'), json_extract_string(meta, '$.versions[#-1]'))"
)
_SESSIONS_SQL = f"SELECT session_uid, tool, {_VERSION_SQL} AS version FROM sessions\n"

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
    base: pl.DataFrame, rule: Rule, policy: str, carry: pl.DataFrame | None = None, *, pieces: bool = False
) -> pl.DataFrame:
    """The rows of one rule and policy, for every estimator and call of `base`. With `pieces` (the batch
    begins or ends inside a long session), going on from `carry` (`_DECIDE_CARRY` of the session's
    previous piece, where the batch begins inside it), with the helper columns `_decide_carry` reads."""

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


def replay(
    store: Store,
    estimators: Sequence[str],
    rules: Sequence[str | Rule] | None = None,
    policies: Sequence[str] | None = None,
    windows: WindowTable | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    window: int | str = "real",
    progress: Progress | None = None,
) -> pl.DataFrame:
    """Replay each agent rule on every call of the store, per estimator and reasoning policy: one row
    per call × rule × estimator × policy (columns `REPLAY_COLUMNS`, defined in the module docstring).
    `rules` None is every rule; `window` is `real` (the table's windows), `auto`, `what-if` or a
    number of tokens (module docstring).

    The whole frame is in memory; `run_replay` (and the report) summarise the same rows a batch of
    sessions at a time instead (`ReplayTally`)."""
    names = _estimator_names(estimators)
    rule_list, wanted = _rules_to_run(rules)
    policy_list = resolve_policies(policies)
    plan = plan_windows(store, rule_list, windows, window)
    graded = [(name, _grouped(name)) for name in names]
    batches = list(_scored_batches(store, graded, progress=progress))
    scores = batches[0] if len(batches) == 1 else pl.concat(batches, how="vertical")
    del batches
    if scores.is_empty():
        return _empty_frame()
    usage = store.query(_USAGE_SQL)
    sessions = store.query(_SESSIONS_SQL)
    frames = list(replay_batch(scores, usage, names, rule_list, policy_list, plan, sessions, wanted))
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
    """Per batch of whole sessions or piece of a long one (about `calls` calls, None: the whole store
    at once), the scores of each estimator (`calib.scoring.score.score_frame`), one after the other."""
    sources = sorted({s for name, grouped in estimators for s in (grouped.sources if grouped else [name])})
    with FeatureTable(store, sources, progress=progress) as table:
        for batch in table.batches(batch_calls=calls or sys.maxsize, label="replaying"):
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
    *_CALL_CARRY,
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
    windows: WindowPlan | WindowTable,
    sessions: pl.DataFrame | None = None,
    wanted: Sequence[str] | None = None,
    carry: ReplayCarry | None = None,
) -> Iterator[pl.DataFrame]:
    """The replay rows of whole sessions, one frame per rule and policy (in that order): `scores` are
    their calls scored by each estimator of `names`, `usage` the calls' usage (`_USAGE_SQL`), `sessions`
    their agent and version (`_SESSIONS_SQL`; None: no session has a rule of its own), `windows` the plan
    of `plan_windows` (a bare table: its real windows); with `wanted` (`own` was asked for), only the
    rows of the `wanted` rules and of each session's own. Batches given one after another may cut a
    long session in pieces when they share a `carry`, which each leaves for the next: given only to a
    batch that begins or ends inside a session (None: whole sessions, nothing carried)."""
    plan = windows if isinstance(windows, WindowPlan) else WindowPlan("real", windows)
    chain = scores.filter(pl.col("estimator") == names[0]).select(_CHAIN_READ)
    calls = _call_frame(chain, usage, carry.calls if carry is not None else None)
    if carry is not None and calls.height:
        carry.calls = _call_carry(calls)
    per_session = _session_plan(calls, sessions, plan)
    calls = calls.join(per_session, on="session_uid", how="left").with_columns(
        pl.col("model").fill_null(_NULL_KEY).alias("_mkey")
    )
    pairs = [
        (agent, None if m == _NULL_KEY else m)
        for agent, m in calls.select("tool", "_mkey").unique().sort("tool", "_mkey").rows()
    ]
    windows_frame = _window_frame(pairs, plan, list(rule_list))
    # what `_decide` does not read: not copied per estimator (the carried columns exist only going on)
    calls = calls.join(windows_frame, on=["tool", "_mkey"], how="left").drop(_NOT_DECIDED, strict=False)
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
            key = (rule.name, policy)
            frame = _decide(
                base,
                rule,
                policy,
                carry.decided.get(key) if carry is not None else None,
                pieces=carry is not None,
            )
            if carry is not None and frame.height:
                carry.decided[key] = _decide_carry(frame)
            frame = frame.select(REPLAY_COLUMNS)
            if wanted is not None:
                frame = frame.filter(pl.col("rule").is_in(list(wanted)) | pl.col("own"))
            yield frame


# Whether a session has calls after `seq` (the last of a batch: the next batch goes on with it); a
# session's calls are numbered 0 to n-1 (`calib.scoring.chain`).
_GOES_ON_SQL = "SELECT EXISTS (SELECT 1 FROM calls WHERE session_uid = ? AND seq > ?)"


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


def _session_plan(calls: pl.DataFrame, sessions: pl.DataFrame | None, plan: WindowPlan) -> pl.DataFrame:
    """Per session of `calls`: the name of its own rule (`_own`, null without one) and the kind of window
    its agent's calls are replayed on (`window_kind`)."""
    info: dict[str, tuple[str | None, str | None]] = {}
    if sessions is not None:
        for uid, tool, version in sessions.select("session_uid", "tool", "version").iter_rows():
            info[uid] = (tool, version)
    uids, owns, kinds = [], [], []
    for uid, tool in (
        calls.select("session_uid", "tool").unique("session_uid", maintain_order=True).iter_rows()
    ):
        agent, version = info.get(uid, (tool, None))
        own = own_rule(agent, version) if sessions is not None else None
        uids.append(uid)
        owns.append(own.name if own is not None else None)
        kinds.append(plan.kind(tool))
    return pl.DataFrame(
        {"session_uid": uids, "_own": owns, "window_kind": kinds},
        schema={"session_uid": pl.String, "_own": pl.String, "window_kind": pl.String},
    )


def _empty_frame() -> pl.DataFrame:
    strings = {"rule", "estimator", "policy", "session_uid", "call_uid", "tool", "provider", "model"}
    strings |= {"status", "reason", "basis", "outcome", "event", "window_kind"}
    booleans = {"is_subagent", "compact", "refuse", "fires", "should", "over_window", "own"}
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


# -- windows ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentWindows:
    """How an agent's sessions were windowed: `kind` (`real`, `what-if` or `fixed`), how many sessions
    it has, and `reach`, its largest prompt over the threshold of its own rule on the model's real
    window (None where no call has both a usage and a known window)."""

    agent: str
    kind: str
    sessions: int
    reach: float | None

    def to_dict(self) -> dict[str, Any]:
        """As JSON."""
        reach = None if self.reach is None else round(self.reach, 4)
        return {"agent": self.agent, "kind": self.kind, "sessions": self.sessions, "reach": reach}


@dataclass
class WindowPlan:
    """The windows a replay uses: the `table` of real windows (or, `fixed`, every model at that many
    tokens), per agent whether its calls get real or what-if windows (`mode`: module docstring), and
    the what-if size of each agent that gets one (`what_if`: every model it used, scaled to that many
    tokens)."""

    mode: str
    table: WindowTable
    agents: dict[str, AgentWindows] = field(default_factory=dict)
    fixed: int | None = None
    what_if: dict[str, int] = field(default_factory=dict)

    def kind(self, agent: str | None) -> str:
        """The window kind of an agent's calls."""
        if self.fixed is not None:
            return "fixed"
        found = self.agents.get(agent or "")
        if found is not None:
            return found.kind
        return "what-if" if self.mode == "what-if" else "real"

    def window(self, agent: str | None, model: str | None) -> Window | None:
        """The window an agent's calls to `model` are replayed on (None: the model has none)."""
        real = self.table.lookup(model)
        size = self.what_if.get(agent or "")
        return real.scaled(size) if real is not None and size is not None else real

    def describe(self) -> str:
        """One line: which windows each agent's calls were replayed on, and why."""
        if self.fixed is not None:
            return (
                f"windows: what-if, every model's window scaled to {self.fixed:,} tokens "
                "(output limit and input cap in proportion; --window N)"
            )

        def named(agents: list[AgentWindows], of: str) -> str:
            shown = []
            for i, a in enumerate(agents):
                size = self.what_if.get(a.agent) if a.kind == "what-if" else None
                first = i == 0
                sized = "" if size is None else f"{size:,}{' tokens' if first else ''}; "
                if a.reach is None:
                    shown.append(f"{a.agent} ({sized}no known window)")
                else:
                    shown.append(
                        f"{a.agent} ({sized}{'peak at ' if first else ''}{a.reach:.0%}{of if first else ''})"
                    )
            return ", ".join(shown)

        real = [a for a in self.agents.values() if a.kind == "real"]
        what_if = [a for a in self.agents.values() if a.kind == "what-if"]
        parts = []
        if real:
            why = (
                f": a session reaches {NEAR_SHARE:.0%} of its threshold or more"
                if self.mode == "auto"
                else ""
            )
            parts.append(f"real for {named(real, ' of the threshold')}{why}")
        if what_if:
            why = (
                f"no session of theirs reaches {NEAR_SHARE:.0%} of the real threshold, so"
                if self.mode == "auto"
                else "as asked (--window what-if),"
            )
            parts.append(
                f"what-if for {named(what_if, ' of the real threshold')}: {why} every model the agent used "
                "gets a window of that size, shaped like its own, putting the agent's threshold at the median "
                "prompt of its calls"
            )
        if not parts:
            return "windows: each model's own (no session to replay)"
        tail = ""
        if self.mode == "auto":
            tail = (
                " (calib replay --window real: the real windows)"
                if what_if
                else " (calib replay --window what-if: what-if windows)"
            )
        return "windows: " + "; ".join(parts) + tail

    def to_dict(self) -> dict[str, Any]:
        """As JSON: the mode, each agent's choice (with its what-if window size) and the line."""
        return {
            "mode": self.mode if self.fixed is None else self.fixed,
            "agents": [
                {**a.to_dict(), "what_if_window": self.what_if.get(a.agent)} for a in self.agents.values()
            ],
            "line": self.describe(),
        }


# The version is read once per session, before the join: a long session's `meta` (a list entry per
# compaction) copied onto each of its calls would fill DuckDB's memory.
_PEAKS_SQL = f"""
SELECT s.tool, s.version, c.model, max(c.ctx), count(*)
FROM calls c JOIN ({_SESSIONS_SQL}) s USING (session_uid)
WHERE c.usage_status = 'ok' AND c.ctx IS NOT NULL
GROUP BY ALL
"""
# Per agent: halfway between the two middle prompts of its calls (sorted), the median or just under it
# for an odd count, so that no call sits exactly on the threshold it becomes.
_MIDDLE_SQL = """
WITH ranked AS (
    SELECT s.tool, c.ctx,
           row_number() OVER (PARTITION BY s.tool ORDER BY c.ctx) AS r,
           count(*) OVER (PARTITION BY s.tool) AS n
    FROM calls c JOIN sessions s USING (session_uid)
    WHERE c.usage_status = 'ok' AND c.ctx IS NOT NULL AND s.tool IN ({agents})
)
SELECT tool, avg(ctx)
FROM ranked
WHERE (n = 1 AND r = 1) OR (n > 1 AND (r = n // 2 OR r = n // 2 + 1))
GROUP BY ALL
"""


def plan_windows(
    store: Store,
    rules: Sequence[Rule],
    windows: WindowTable | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    window: int | str | None = "real",
    *,
    con: Any | None = None,
) -> WindowPlan:
    """The windows to replay the store on (`window`: `real`, `auto`, `what-if`, or a number of tokens for
    every model; the module docstring), from two aggregates over the store's calls (read on `con`, a
    cursor of the store, if given)."""
    con = con if con is not None else store.con
    if isinstance(window, str) and window.isdigit():
        window = int(window)
    if window is None:
        window = "real"
    if isinstance(window, int) and not isinstance(window, bool):
        window = window_size(window)
        if windows is not None:
            raise UsageError("--window N and --windows together", hint="pass one of them")
        table, fixed, mode = fixed_windows(window), window, "fixed"
    elif window in WINDOW_MODES:
        table, fixed, mode = load_windows(windows), None, str(window)
    else:
        raise UsageError(f"window {window!r}", hint=f"pass {', '.join(WINDOW_MODES)} or a number of tokens")
    counts = dict(con.execute("SELECT tool, count(*) FROM sessions GROUP BY tool").fetchall())
    reach: dict[str, float] = {}
    # what sizes an agent's what-if window: its own rule (of the version) on the model of most of its calls
    main: dict[str, tuple[int, str, str]] = {}
    for tool, version, model, peak, n in con.execute(_PEAKS_SQL).fetchall():
        found = table.lookup(model)
        reference = own_rule(tool, version) or (rules[0] if rules else None)
        if reference is None or found is None or fixed is not None:
            continue
        held = main.get(tool)
        if held is None or (n, version or "", model or "") > held:
            main[tool] = (n, version or "", model or "")
        limit = reference.limit(found)
        share = peak / limit if limit > 0 else math.inf
        reach[tool] = max(reach.get(tool, 0.0), share)
    agents = {}
    for tool in sorted(counts):
        if fixed is not None:
            kind = "fixed"
        elif mode == "what-if" or (mode == "auto" and tool in reach and reach[tool] < NEAR_SHARE):
            kind = "what-if"
        else:
            kind = "real"
        agents[tool] = AgentWindows(tool, kind, int(counts[tool]), reach.get(tool))
    what_if: dict[str, int] = {}
    sized = [tool for tool, a in agents.items() if a.kind == "what-if" and tool in main]
    if sized:
        query = _MIDDLE_SQL.format(agents=", ".join(_literal(tool) for tool in sized))
        for tool, middle in con.execute(query).fetchall():
            _, version, model = main[tool]
            reference = own_rule(tool, version or None) or (rules[0] if rules else None)
            found = table.lookup(model or None)
            if reference is None or found is None or middle is None or middle <= 0:
                continue
            what_if[tool] = what_if_window(reference, found, float(middle)).context
    return WindowPlan(mode, table, agents, fixed, what_if)


def batch_sessions(con: Any, first: str, last: str) -> pl.DataFrame:
    """The agent and recorded version of the sessions whose uid sorts from `first` to `last`."""
    where = f"WHERE session_uid BETWEEN {_literal(first)} AND {_literal(last)}\n"
    result: pl.DataFrame = con.execute(_SESSIONS_SQL + where).pl()
    return result


# -- summary ------------------------------------------------------------------------------------------

# How far early compactions fired under the threshold, and late ones ran over it (tokens).
_EVENT_DISTANCES = (
    "early_by_min",
    "early_by_p50",
    "early_by_max",
    "late_by_min",
    "late_by_p50",
    "late_by_max",
)

SUMMARY_COLUMNS = (
    "agent",
    "rule",
    "estimator",
    "policy",
    "window_kind",
    "own",
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
    "on_time",
    "late_events",
    "missed_events",
    "refused_events",
    *_EVENT_DISTANCES,
    "window_min",
    "window_max",
)


def summarise_replay(frame: pl.DataFrame) -> pl.DataFrame:
    """Per agent × rule × estimator × policy × window kind (agents in name order, then rules, policies and
    estimators in the order of the frame): decisions (`calls` with a truth and a window), how many
    compact, fire and should compact, the `early` / `late` / `missed` / `refused` calls, calls without
    truth or window, the error of the displayed context in tokens (|displayed - truth| p50/p90, relative
    p50/p90, signed mean) over calls with chain status ok (`scored`), `wasted_tokens` (threshold - truth
    summed over the `early_fires` calls), the events with how far from the threshold they were
    (module docstring), whether the rule is the sessions' own, and the windows' range."""
    abs_err = pl.col("error").abs()
    scored = _SCORED
    by = pl.col("margin").abs()
    early, late = pl.col("event") == "early", pl.col("event") == "late"
    out = (
        frame.with_columns(pl.col("tool").alias("agent"))
        .group_by(_SUMMARY_KEYS, maintain_order=True)
        .agg(
            *_count_aggs(),
            abs_err.filter(scored).quantile(0.5, "linear").alias("err_p50"),
            abs_err.filter(scored).quantile(0.9, "linear").alias("err_p90"),
            (abs_err / pl.col("truth")).filter(scored).quantile(0.5, "linear").alias("rel_err_p50"),
            (abs_err / pl.col("truth")).filter(scored).quantile(0.9, "linear").alias("rel_err_p90"),
            pl.col("error").filter(scored).mean().alias("err_mean"),
            (pl.col("threshold") - pl.col("truth")).filter(_EARLY_FIRE).sum().alias("wasted_tokens"),
            by.filter(early).min().alias("early_by_min"),
            by.filter(early).quantile(0.5, "linear").alias("early_by_p50"),
            by.filter(early).max().alias("early_by_max"),
            by.filter(late).min().alias("late_by_min"),
            by.filter(late).quantile(0.5, "linear").alias("late_by_p50"),
            by.filter(late).max().alias("late_by_max"),
            pl.col("own").any().alias("own"),
            pl.col("window").min().alias("window_min"),
            pl.col("window").max().alias("window_max"),
        )
    )
    out = _with_uses_estimator(_cast_figures(out))
    rank = {
        key: {name: i for i, name in enumerate(frame.get_column(key).unique(maintain_order=True).to_list())}
        for key in ("rule", "policy", "estimator")
    }
    return _ordered(out, rank).select(SUMMARY_COLUMNS)


_SUMMARY_KEYS = ["agent", "rule", "estimator", "policy", "window_kind"]
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
    "on_time",
    "late_events",
    "missed_events",
    "refused_events",
)
_VALUE_FIGURES = (
    "err_p50",
    "err_p90",
    "rel_err_p50",
    "rel_err_p90",
    "err_mean",
    "wasted_tokens",
    *_EVENT_DISTANCES,
)
_EVENT_CODES = {"early": 0, "late": 1}


def _count_aggs() -> list[pl.Expr]:
    def count(cond: pl.Expr) -> pl.Expr:
        return cond.fill_null(False).sum().cast(pl.Int64)

    decided = _DECIDED
    event = pl.col("event")
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
        count(event == "on-time").alias("on_time"),
        *(count(event == name).alias(f"{name}_events") for name in ("late", "missed", "refused")),
    ]


def _cast_figures(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(
        *(pl.col(c).cast(pl.Int64) for c in _COUNTS),
        *(pl.col(c).cast(pl.Float64) for c in _VALUE_FIGURES),
        pl.col("window_min").cast(pl.Int64),
        pl.col("window_max").cast(pl.Int64),
    )


def _ordered(frame: pl.DataFrame, rank: dict[str, dict[str, int]]) -> pl.DataFrame:
    """Agents by name, then rules, policies and estimators by `rank`, then window kinds."""
    if frame.is_empty():
        return frame
    keys = [
        (
            row["agent"] or "",
            rank["rule"].get(row["rule"], -1),
            rank["policy"].get(row["policy"], -1),
            rank["estimator"].get(row["estimator"], -1),
            row["window_kind"] or "",
        )
        for row in frame.select(_SUMMARY_KEYS).iter_rows(named=True)
    ]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return frame[order]


def _with_uses_estimator(frame: pl.DataFrame) -> pl.DataFrame:
    uses = {name: cls.uses_estimator for name, cls in RULES.items()}
    return frame.with_columns(
        pl.col("rule").replace_strict(uses, default=True, return_dtype=pl.Boolean).alias("uses_estimator")
    )


class ReplayTally:
    """`summarise_replay`, `unknown_models` and (for one rule and policy) `pick_session` and its
    `timeline`, of replay rows given a frame at a time: the frames of `replay_batch`, each holding whole
    sessions or a piece of one (say which with `batch`). Counts are added up as frames come; the
    values of each group that a percentile needs all of (errors, distances of events from the
    threshold) wait in a `Spool` on disk, and the summary computes every figure on them as
    `summarise_replay` does on the whole frame, so the two give the same numbers.

    `order` gives the summary's row order within an agent (rules, then policies, then estimators, as
    `replay` makes the frame); `timeline_at` the (rule, policy) whose session to pick and keep the
    timeline of (rule `own`: each session under its own rule)."""

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
        # (agent, window kind, estimator) as a number: less to keep per spooled row
        self._codes: dict[tuple[str, str, str], int] = {}
        self._groups: list[tuple[str, str, str]] = []
        self._counts: dict[tuple[str, str, str, str, str], list[int]] = {}
        self._extra: dict[tuple[str, str, str, str, str], list[Any]] = {}
        self._unknown: set[str | None] = set()
        self.timeline_at = timeline_at
        self._best: tuple[tuple[Any, ...], str] | None = None
        self._timeline: pl.DataFrame | None = None
        # The last session of the batch being added (`batch`), which the next batch may go on with: it
        # is judged for the timeline once complete, from what its pieces gave (`_open`).
        self._last: str | None = None
        self._open: tuple[str, pl.DataFrame | None, list[pl.DataFrame]] | None = None

    def batch(self, first: str, last: str | None) -> None:
        """Say that the frames added next hold the calls from session `first` on, up to session `last`
        where that one may go on in the next batch (None: the batch ends with a whole session). A session
        may be cut between batches; the last one of such a batch is picked for the timeline or not once
        the next batch begins with another."""
        if self._open is not None and self._open[0] != first:
            self._settle()
        self._last = last

    def add(self, frame: pl.DataFrame) -> None:
        """Count the rows of whole sessions, or of the pieces of one session in order (any rules,
        estimators and policies)."""
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
        frame = frame.with_columns(pl.col("tool").alias("agent"))
        counts = frame.group_by("agent", "window_kind", "estimator", maintain_order=True).agg(
            *_count_aggs(),
            pl.col("own").any().alias("own"),
            pl.col("window").min().alias("window_min"),
            pl.col("window").max().alias("window_max"),
        )
        width = len(_COUNTS)
        for row in counts.iter_rows():
            group = (row[0], row[1], row[2])
            if group not in self._codes:
                self._codes[group] = len(self._groups)
                self._groups.append(group)
            key = (row[0], rule, row[2], policy, row[1])
            total = self._counts.setdefault(key, [0] * width)
            for i, n in enumerate(row[3 : 3 + width]):
                total[i] += n
            own, low, high = row[3 + width :]
            extra = self._extra.setdefault(key, [False, None, None])
            extra[0] = extra[0] or bool(own)
            if low is not None:
                extra[1] = low if extra[1] is None else min(extra[1], low)
                extra[2] = high if extra[2] is None else max(extra[2], high)
        # each group's values, in the order of the rows
        mapping = {"\x1f".join(group): code for group, code in self._codes.items()}
        code = (
            pl.concat_str(["agent", "window_kind", "estimator"], separator="\x1f")
            .replace_strict(mapping, default=None, return_dtype=pl.UInt32)
            .alias("group")
        )
        errors = frame.filter(_SCORED).select(
            code, "error", (pl.col("error").abs() / pl.col("truth")).alias("rel")
        )
        self._spool.append(("errors", rule, policy), errors)
        wasted = frame.filter(_EARLY_FIRE).select(
            code, (pl.col("threshold") - pl.col("truth")).alias("wasted")
        )
        self._spool.append(("wasted", rule, policy), wasted)
        events = frame.filter(pl.col("event").is_in(list(_EVENT_CODES))).select(
            code,
            pl.col("event").replace_strict(_EVENT_CODES, return_dtype=pl.UInt8).alias("kind"),
            pl.col("margin").abs().alias("by"),
        )
        self._spool.append(("by", rule, policy), events)
        missing = frame.filter(pl.col("outcome") == "no_window").get_column("model").unique().to_list()
        self._unknown.update(missing)
        if self.timeline_at is not None and policy == self.timeline_at[1]:
            wanted = self.timeline_at[0]
            if wanted in (OWN_RULE, rule):
                self._pick(frame.drop("agent"), wanted, policy)

    def _pick(self, frame: pl.DataFrame, rule: str, policy: str) -> None:
        # `pick_session` on these sessions; the best so far wins over them unless they rank higher
        stats = _session_stats(frame, rule, policy)
        going = self._last
        if going is not None:
            # the batch's last session may go on in the next batch: gather it until it is complete
            rows = timeline(frame, going, rule=rule, policy=policy)
            mine = stats.filter(pl.col("session_uid") == going)
            stats = stats.filter(pl.col("session_uid") != going)
            if not rows.is_empty() or not mine.is_empty():
                if self._open is None or self._open[0] != going:
                    self._open = (going, None, [])
                _, held, pieces = self._open
                if not mine.is_empty():
                    held = mine if held is None else _merged_stats(held, mine)
                if not rows.is_empty():
                    pieces.append(compact(rows))
                self._open = (going, held, pieces)
        best = _best_session(stats)
        if best is not None:
            self._consider(best, lambda uid: compact(timeline(frame, uid, rule=rule, policy=policy)))

    def _consider(self, best: tuple[tuple[Any, ...], str], rows: Callable[[str], pl.DataFrame]) -> None:
        """Take `best` (a rank key and a session) as the session to draw unless the one held ranks higher."""
        key, uid = best
        if self._best is not None:
            held_key, held_uid = self._best
            if key < held_key or (key == held_key and uid > held_uid):
                return
        self._best = (key, uid)
        self._timeline = rows(uid)

    def _settle(self) -> None:
        """Judge the session held open, now complete."""
        if self._open is None:
            return
        _, stats, pieces = self._open
        self._open = None
        best = _best_session(stats) if stats is not None else None
        if best is not None:
            self._consider(best, lambda _: self._joined(pieces))

    def _joined(self, pieces: list[pl.DataFrame]) -> pl.DataFrame:
        """The timeline of a session from those of its pieces, in the order of its whole frame: each
        estimator's calls in turn."""
        if len(pieces) == 1:
            return pieces[0]
        rank = self._rank["estimator"]
        order = pl.col("estimator").replace_strict(rank, default=len(rank), return_dtype=pl.Int64)
        return pl.concat(pieces, how="vertical").sort(order, "seq", maintain_order=True)

    @property
    def session(self) -> str | None:
        """The session `pick_session` picks among all the rows (None without `timeline_at`)."""
        self._settle()
        return self._best[1] if self._best is not None else None

    @property
    def timeline(self) -> pl.DataFrame | None:
        """The `timeline` of `session` (None without one)."""
        self._settle()
        return self._timeline

    def rules(self) -> set[str]:
        """The rules that have rows."""
        return {key[1] for key in self._counts}

    def unknown_models(self) -> list[str]:
        """`unknown_models` of all the rows."""
        return sorted("?" if m is None else m for m in self._unknown)

    def summary(self) -> pl.DataFrame:
        """`summarise_replay` of all the rows."""
        figures: dict[tuple[str, str, str, str, str], dict[str, Any]] = {}
        for rule, policy in dict.fromkeys((k[1], k[3]) for k in self._counts):
            figures.update(self._figures(rule, policy))
        names = (*_SUMMARY_KEYS, *_COUNTS, *_VALUE_FIGURES, "own", "window_min", "window_max")
        rows: dict[str, list[Any]] = {name: [] for name in names}
        empty = {**dict.fromkeys(_VALUE_FIGURES), "wasted_tokens": 0.0}
        for key, counts in self._counts.items():
            for name, value in zip(_SUMMARY_KEYS, key, strict=True):
                rows[name].append(value)
            for name, n in zip(_COUNTS, counts, strict=True):
                rows[name].append(n)
            found = figures.get(key, empty)
            for name in _VALUE_FIGURES:
                rows[name].append(found.get(name, empty[name]))
            own, low, high = self._extra[key]
            rows["own"].append(own)
            rows["window_min"].append(low)
            rows["window_max"].append(high)
        schema: dict[str, Any] = dict.fromkeys(_SUMMARY_KEYS, pl.String)
        schema.update(dict.fromkeys(_COUNTS, pl.Int64))
        schema.update(dict.fromkeys(_VALUE_FIGURES, pl.Float64))
        schema.update({"own": pl.Boolean, "window_min": pl.Int64, "window_max": pl.Int64})
        frame = _with_uses_estimator(pl.DataFrame(rows, schema=schema))
        return _ordered(frame, self._rank).select(SUMMARY_COLUMNS)

    def _figures(self, rule: str, policy: str) -> dict[tuple[str, str, str, str, str], dict[str, Any]]:
        # the figures of one rule and policy per group, aggregated as `summarise_replay` aggregates
        # them (a group_by: the same kernels, on the same values in the same order)
        errors = self._spool.read(("errors", rule, policy), {"group": pl.UInt32})
        wasted = self._spool.read(("wasted", rule, policy), {"group": pl.UInt32})
        events = self._spool.read(("by", rule, policy), {"group": pl.UInt32, "kind": pl.UInt8})
        out: dict[tuple[str, str, str, str, str], dict[str, Any]] = {}

        def slot(code: int) -> dict[str, Any]:
            agent, kind, estimator = self._groups[code]
            return out.setdefault((agent, rule, estimator, policy, kind), {})

        abs_err = pl.col("error").abs()
        if not errors.is_empty():
            table = errors.group_by("group", maintain_order=True).agg(
                abs_err.quantile(0.5, "linear").alias("err_p50"),
                abs_err.quantile(0.9, "linear").alias("err_p90"),
                pl.col("rel").quantile(0.5, "linear").alias("rel_err_p50"),
                pl.col("rel").quantile(0.9, "linear").alias("rel_err_p90"),
                pl.col("error").mean().alias("err_mean"),
            )
            for row in table.iter_rows(named=True):
                slot(row.pop("group")).update(row)
        if not wasted.is_empty():
            sums = wasted.group_by("group", maintain_order=True).agg(pl.col("wasted").sum())
            for code, total in sums.iter_rows():
                slot(code)["wasted_tokens"] = total
        if not events.is_empty():
            by = pl.col("by")
            spans = events.group_by("group", "kind", maintain_order=True).agg(
                by.min().alias("min"), by.quantile(0.5, "linear").alias("p50"), by.max().alias("max")
            )
            names = {code: name for name, code in _EVENT_CODES.items()}
            for code, kind, low, mid, high in spans.iter_rows():
                prefix = names[kind]
                slot(code).update(
                    {f"{prefix}_by_min": low, f"{prefix}_by_p50": mid, f"{prefix}_by_max": high}
                )
        return out


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
    "should",
    "outcome",
    "event",
    "status",
    "break",
    "basis",
    "rule",
    "policy",
    "tool",
    "model",
    "window_kind",
)


def _selected(rule: str, policy: str) -> pl.Expr:
    which = pl.col("own") if rule == OWN_RULE else pl.col("rule") == rule
    return which & (pl.col("policy") == policy)


def timeline(
    frame: pl.DataFrame, session_uid: str, *, rule: str = OWN_RULE, policy: str = "raw"
) -> pl.DataFrame:
    """One session under one rule (`own`: the session's own) and policy: per call × estimator, the true
    context (`actual`, the rule's truth), the displayed context, threshold, window, the decisions and
    events, the chain status and the `break` reason where calib restarted the chain (columns
    `TIMELINE_COLUMNS`)."""
    rows = frame.filter((pl.col("session_uid") == session_uid) & _selected(rule, policy))
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
        "should",
        "outcome",
        "event",
        "status",
        pl.when(pl.col("status") == "break").then(pl.col("reason")).alias("break"),
        "basis",
        "rule",
        "policy",
        "tool",
        "model",
        "window_kind",
    )


# Longer sessions show no more of a rule's timing, and draw as a dense band.
_PICK_CALLS = 200


def _ranked_sessions(frame: pl.DataFrame, rule: str, policy: str) -> tuple[tuple[Any, ...], str] | None:
    """The best session of `frame` to draw under `rule` and `policy`, with its rank key (higher first)."""
    return _best_session(_session_stats(frame, rule, policy))


def _session_stats(frame: pl.DataFrame, rule: str, policy: str) -> pl.DataFrame:
    """Per session of `frame` under `rule` and `policy`, what ranks it for the timeline (`_best_session`):
    figures that add up over the pieces of a session cut between batches (`_merged_stats`)."""
    rows = frame.filter(_selected(rule, policy) & pl.col("truth").is_not_null()).filter(
        pl.col("threshold") > 0
    )
    per_call = rows.group_by("session_uid", "seq").agg(
        (pl.col("truth") >= pl.col("threshold")).any().alias("over"),
        (pl.col("basis") == "chained").any().alias("chained"),
        (pl.col("compact").n_unique() > 1).alias("disagree"),
        (pl.col("truth") / pl.col("threshold")).max().alias("reach"),
        pl.col("event").is_not_null().sum().alias("events"),
    )
    return per_call.group_by("session_uid").agg(
        pl.col("over").any().alias("crosses"),
        pl.col("chained").any(),
        pl.col("disagree").any(),
        pl.col("reach").max(),
        pl.len().cast(pl.Int64).alias("n"),
        pl.col("events").sum().cast(pl.Int64),
    )


def _merged_stats(held: pl.DataFrame, more: pl.DataFrame) -> pl.DataFrame:
    """`_session_stats` of a session from those of two of its pieces."""
    return (
        pl.concat([held, more], how="vertical")
        .group_by("session_uid")
        .agg(
            pl.col("crosses").any(),
            pl.col("chained").any(),
            pl.col("disagree").any(),
            pl.col("reach").max(),
            pl.col("n").sum(),
            pl.col("events").sum(),
        )
    )


def _best_session(stats: pl.DataFrame) -> tuple[tuple[Any, ...], str] | None:
    """The session of `_session_stats` to draw, with its rank key (higher first; the first uid on a tie)."""
    if stats.is_empty():
        return None
    ranked = (
        stats.with_columns(pl.col("reach").clip(upper_bound=1.0), pl.col("n").clip(upper_bound=_PICK_CALLS))
        .sort(
            ["crosses", "chained", "disagree", "reach", "n", "events", "session_uid"],
            descending=[True, True, True, True, True, True, False],
        )
        .row(0)
    )
    uid, crosses, chained, disagree, reach, n, events = ranked
    return (bool(crosses), bool(chained), bool(disagree), float(reach), int(n), int(events)), str(uid)


def pick_session(frame: pl.DataFrame, *, rule: str = OWN_RULE, policy: str = "raw") -> str | None:
    """The session whose timeline shows the most of the rule (`own`: each session's own): one whose true
    context crosses the threshold, under a rule that displays an estimate, where the estimators
    disagree on a decision, coming closest to the threshold, then the longest (up to 200 calls) with
    the most events; the first uid on a tie."""
    best = _ranked_sessions(frame, rule, policy)
    return None if best is None else best[1]


def unknown_models(frame: pl.DataFrame) -> list[str]:
    """Models whose calls had no window in the table (shown as `?` for a call without a model)."""
    missing = frame.filter(pl.col("outcome") == "no_window").get_column("model").unique().to_list()
    return sorted("?" if m is None else m for m in missing)


# -- the command --------------------------------------------------------------------------------------


def _tokens(n: int, what: str, low: float | None, mid: float | None, high: float | None) -> str:
    """`3 early (by 120-4,500 tokens, median 800)`: events and how far from the threshold they were."""
    if n == 0 or low is None or high is None:
        return f"{n} {what}"
    if round(low) == round(high):
        return f"{n} {what} (by {low:,.0f} tokens)"
    middle = f", median {mid:,.0f}" if n > 2 and mid is not None else ""
    return f"{n} {what} (by {low:,.0f}-{high:,.0f} tokens{middle})"


def _window_label(row: Mapping[str, Any]) -> str:
    kind = row["window_kind"]
    if kind == "fixed":
        return f"{row['window_max']:,}-token windows" if row.get("window_max") else "fixed windows"
    return f"{kind} windows"


_EVENT_FIGURES = (
    "early_fires",
    "early_by_min",
    "early_by_p50",
    "early_by_max",
    "late_events",
    "late_by_min",
    "late_by_p50",
    "late_by_max",
    "on_time",
    "missed_events",
    "refused_events",
)


def replay_lines(summary: pl.DataFrame | Sequence[Mapping[str, Any]], policy: str | None = None) -> list[str]:
    """One sentence per agent × rule (× estimator, where the estimators' events differ) of a replay
    summary, under `policy` (default `raw` if replayed, else the first): how many compactions would
    fire early and how many requests would go over the threshold first (late), by how many tokens, e.g.
    `gemini-cli: gemini-cli rule, what-if windows, any estimator: 0 early, 2 late (by 35-410 tokens)`."""
    rows = summary.to_dicts() if isinstance(summary, pl.DataFrame) else [dict(r) for r in summary]
    if not rows:
        return []
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    chosen = policy or ("raw" if "raw" in policies else policies[0])
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        if r["policy"] == chosen and r["calls"]:
            groups.setdefault((r["agent"], r["rule"], r["window_kind"]), []).append(r)
    lines: list[str] = []
    for group in groups.values():
        # the same events whatever the estimator (the rule reads the provider's count): one line
        same = len({tuple(r[k] for k in _EVENT_FIGURES) for r in group}) == 1
        for r in group[:1] if same else group:
            name = "any estimator" if same and (len(group) > 1 or not r["uses_estimator"]) else r["estimator"]
            rule = f"{r['rule']} rule" + ("" if r["own"] else " (not its own)")
            parts = [
                _tokens(r["early_fires"], "early", r["early_by_min"], r["early_by_p50"], r["early_by_max"]),
                _tokens(r["late_events"], "late", r["late_by_min"], r["late_by_p50"], r["late_by_max"]),
            ]
            if r["on_time"]:
                parts.append(f"{r['on_time']} on time")
            if r["missed_events"]:
                parts.append(f"{r['missed_events']} missed")
            if r["refused_events"]:
                parts.append(f"{r['refused_events']} refused")
            lines.append(f"{r['agent']}: {rule}, {_window_label(r)}, {name}: {', '.join(parts)}")
    return lines


@dataclass
class ReplayReport:
    """What `calib replay` prints: the summary, the windows and rules used, and unknown models."""

    summary: pl.DataFrame
    estimators: list[str]
    rules: list[dict[str, Any]]
    policies: list[str]
    windows: dict[str, dict[str, int | None]]
    unknown_models: list[str] = field(default_factory=list)
    plan: WindowPlan | None = None

    def lines(self) -> list[str]:
        """The per-rule sentences (`replay_lines`)."""
        return replay_lines(self.summary)

    def windows_line(self) -> str:
        """Which windows were used, and why, in one line."""
        return self.plan.describe() if self.plan is not None else "windows: each model's own"

    def to_dict(self) -> dict[str, Any]:
        """The report as one JSON document (floats rounded, NaN as null)."""
        return {
            "estimators": self.estimators,
            "rules": self.rules,
            "policies": self.policies,
            "windows": self.windows,
            "window": self.plan.to_dict() if self.plan is not None else None,
            "unknown_models": self.unknown_models,
            "lines": self.lines(),
            "summary": summary_records(self.summary),
        }


def run_replay(
    db: str | os.PathLike[str] | None = None,
    estimators: Sequence[str] | None = None,
    *,
    rules: Sequence[str | Rule] | None = None,
    policies: Sequence[str] | None = None,
    windows: WindowTable | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    window: int | str | None = "auto",
    progress: Progress | None = None,
) -> ReplayReport:
    """`calib replay`: replay the rules (default `own`: each session under its own agent's rule) on a
    store with the estimators (default `chars4` and `cjk`) and summarise; `window` chooses the windows
    (`auto` by default: real ones unless an agent's sessions stay under half their threshold; the module
    docstring)."""
    names = list(dict.fromkeys(estimators)) if estimators else list(DEFAULT_ESTIMATORS)
    asked = list(rules) if rules else [OWN_RULE]
    with open_store(db, read_only=True, persist=True) as store, Spool(prefix="calib-replay-") as spool:
        with ReplayRun(
            store, names, rules=asked, policies=policies, windows=windows, window=window, spool=spool
        ) as run:
            for scores in _scored_batches(
                store, run.graded, progress=progress, calls=batch_calls(len(names))
            ):
                run.add(scores)
        summary = run.tally.summary()
    return ReplayReport(
        summary=summary,
        estimators=names,
        rules=[rule_params(r) for r in run.rules_used()],
        policies=run.policies,
        windows=run.plan.table.to_dict(),
        unknown_models=run.tally.unknown_models(),
        plan=run.plan,
    )


class ReplayRun:
    """A replay of a store a batch at a time (whole sessions, or a piece of a long one) into a
    `ReplayTally` (`tally`): what `calib replay` and the report share. Give `add` the scores of each
    batch (`REPLAYED_COLUMNS`, every estimator of `names`); the run reads their usage and sessions on
    a cursor of its own."""

    def __init__(
        self,
        store: Store,
        estimators: Sequence[str],
        *,
        rules: Sequence[str | Rule] | None = None,
        policies: Sequence[str] | None = None,
        windows: WindowTable | Mapping[str, Any] | str | os.PathLike[str] | None = None,
        window: int | str | None = "real",
        spool: Spool,
        timeline_at: tuple[str, str] | None = None,
    ) -> None:
        self.names = _estimator_names(estimators)
        self.rule_list, self.wanted = _rules_to_run(rules)
        self.policies = resolve_policies(policies)
        # the usage is read on a cursor of its own, beside the features read on the store's connection
        self._cursor = store.con.cursor()
        self._carry = ReplayCarry()
        self._closed = False
        self._info: dict[str, Any] | None = None
        try:
            self.plan = plan_windows(store, self.rule_list, windows, window, con=self._cursor)
        except BaseException:
            self._cursor.close()
            raise
        self.tally = ReplayTally(
            ([r.name for r in self.rule_list], self.policies, self.names), spool, timeline_at=timeline_at
        )

    @property
    def graded(self) -> list[tuple[str, Any | None]]:
        """The estimators to score the batches with (`_scored_batches`), each with its grouped counter."""
        return [(name, _grouped(name)) for name in self.names]

    def __enter__(self) -> ReplayRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, scores: pl.DataFrame) -> None:
        """Replay the calls of a batch, scored by each estimator: whole sessions, or a piece of a long
        session whose earlier calls the batches before gave (in session order)."""
        if scores.is_empty():
            return
        uids = scores.get_column("session_uid")
        first, last = str(uids.min()), str(uids.max())
        seqs = (
            int(scores.filter(pl.col("session_uid") == first).select(pl.col("seq").min()).item()),
            int(scores.filter(pl.col("session_uid") == last).select(pl.col("seq").max()).item()),
        )
        usage = batch_usage(self._cursor, first, last, seqs)
        sessions = batch_sessions(self._cursor, first, last)
        # A batch that begins or ends inside a session (a piece of a long one) goes on from the last
        # batch, or leaves what the next goes on with; a batch of whole sessions carries nothing.
        found = self._cursor.execute(_GOES_ON_SQL, [last, seqs[1]]).fetchone()
        pieces = seqs[0] > 0 or bool(found and found[0])
        self.tally.batch(first, last if pieces else None)
        for frame in replay_batch(
            scores,
            usage,
            self.names,
            self.rule_list,
            self.policies,
            self.plan,
            sessions,
            self.wanted,
            self._carry if pieces else None,
        ):
            self.tally.add(frame)

    def rules_used(self) -> list[Rule]:
        """The rules replayed: with `own`, those some session was replayed under."""
        if self.wanted is None:
            return list(self.rule_list)
        used = self.tally.rules()
        return [r for r in self.rule_list if r.name in used]

    def timeline_info(self) -> dict[str, Any] | None:
        """What titles the timeline of the session picked: its agent, project folder, start date, model,
        rule and window (None without one; read before the run closes)."""
        if self._closed:
            return self._info
        line, uid = self.tally.timeline, self.tally.session
        if line is None or uid is None or line.is_empty():
            return None
        found = self._cursor.execute(
            "SELECT tool, project, started_at FROM sessions WHERE session_uid = ?", [uid]
        ).fetchone()
        tool, project, started = found if found is not None else (None, None, None)
        models = line.get_column("model").drop_nulls()
        model = str(models.mode().sort()[0]) if len(models) else None
        real = self.plan.table.lookup(model) if self.plan.fixed is None else None
        used = self.plan.window(tool, model)
        thresholds = line.get_column("threshold").drop_nulls()
        windows = line.get_column("window").drop_nulls()
        return {
            "session": uid,
            "agent": tool,
            "project": _basename(project),
            "date": started.date().isoformat() if started is not None else None,
            "model": model,
            "rule": str(line.item(0, "rule")),
            "window_kind": str(line.item(0, "window_kind")),
            "window": max(windows.to_list()) if len(windows) else None,
            "real_window": real.context if real is not None else None,
            "prompt_cap": used.input if used is not None else None,
            "threshold": max(thresholds.to_list()) if len(thresholds) else None,
        }

    def report_section(self, window: int | None) -> dict[str, Any]:
        """The report's `replay` section (`calib.analysis.build`): the summary rows and the session drawn."""
        info = self.timeline_info()
        summary = self.tally.summary()
        return {
            "window": window,
            "policy": self.policies[0],
            "windows": self.plan.describe(),
            "lines": replay_lines(summary),
            "rows": summary.to_dicts(),
            "timeline_rule": info["rule"] if info is not None else None,
            "timeline_session": self.tally.session,
            "timeline": info,
            "unknown_models": self.tally.unknown_models(),
        }

    def close(self) -> None:
        """Close the run's cursor (what titles the timeline is read first)."""
        if self._closed:
            return
        try:
            self._info = self.timeline_info() if self.tally.timeline_at is not None else None
        finally:
            self._closed = True
            self._cursor.close()


def _basename(path: str | None) -> str | None:
    if not path:
        return None
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or None


def timeline_caption(info: Mapping[str, Any]) -> tuple[str, str]:
    """A timeline's title (agent, project, date, model) and subtitle (rule, window and threshold)."""
    title = " · ".join(
        str(v) for v in (info.get("agent"), info.get("project"), info.get("date"), info.get("model")) if v
    )
    rule = f"{info.get('rule')} rule"
    window, real, threshold = info.get("window"), info.get("real_window"), info.get("threshold")
    kind = info.get("window_kind")
    if window is None:
        where = "no known window"
    elif kind == "what-if":
        where = f"what-if window of {window:,} tokens" + (f" (real: {real:,})" if real else "")
    elif kind == "fixed":
        where = f"what-if window of {window:,} tokens for every model"
    else:
        where = f"its model's window of {window:,} tokens"
    cap = info.get("prompt_cap")
    if window is not None and cap:
        where += f", prompt cap {cap:,}"
    threshold_text = f", threshold {threshold:,.0f}" if threshold is not None else ""
    return title or str(info.get("session")), f"{rule} on {where}{threshold_text}"


def replay_store(
    store: Store,
    estimators: Sequence[str],
    rules: Sequence[str | Rule] | None = None,
    policies: Sequence[str] | None = None,
    windows: WindowTable | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    spool: Spool,
    window: int | str | None = "real",
    progress: Progress | None = None,
    calls: int | None = None,
    timeline_at: tuple[str, str] | None = None,
) -> ReplayTally:
    """The rows of `replay`, tallied a batch of sessions at a time (at most `calls` calls, by
    default `calib.analysis.batches.BATCH_ROWS` rows over the estimators): memory holds one batch's rows,
    whatever the size of the store; the errors wait in `spool`, which has to stay open until the tally's
    summary is computed."""
    with ReplayRun(
        store,
        estimators,
        rules=rules,
        policies=policies,
        windows=windows,
        window=window,
        spool=spool,
        timeline_at=timeline_at,
    ) as run:
        size = calls or batch_calls(len(run.names))
        for scores in _scored_batches(store, run.graded, progress=progress, calls=size):
            run.add(scores)
    return run.tally


def batch_usage(con: Any, first: str, last: str, seqs: tuple[int, int] | None = None) -> pl.DataFrame:
    """The usage columns `replay_batch` reads, of the calls of the sessions whose uid sorts from `first`
    to `last` (on a DuckDB connection or cursor of the store); with `seqs`, only from call `seqs[0]` of
    `first` to call `seqs[1]` of `last` (a batch that begins or ends inside a long session)."""
    where = f"WHERE session_uid BETWEEN {_literal(first)} AND {_literal(last)}\n"
    if seqs is not None:
        where += piece_condition(first, seqs[0], last, seqs[1]) + "\n"
    result: pl.DataFrame = con.execute(_USAGE_SQL + where).pl()
    return result


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# The package exports `replay` under this name: `calib.analysis.replay` is the module once anything imports it.
replay_calls = replay
