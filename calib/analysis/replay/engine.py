"""Replaying: scoring the store's calls with each estimator and turning a batch of them into replay rows,
per rule and policy (`replay_batch`), or the whole store at once (`replay`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

import polars as pl

from calib.analysis.accountant import calibrations as calibrations_of
from calib.analysis.replay.frame import (
    _CALL_CARRY,
    _NULL_KEY,
    REPLAY_COLUMNS,
    ReplayCarry,
    _call_carry,
    _call_frame,
    _decide,
    _decide_carry,
    _window_frame,
)
from calib.analysis.replay.plan import WindowPlan, _session_plan, plan_windows
from calib.analysis.replay.reads import _SESSIONS_SQL, _USAGE_SQL, owned_rules
from calib.analysis.rules import OWN_RULE, RULES, Rule, resolve_policies, resolve_rules
from calib.analysis.windows import WindowTable
from calib.core.errors import UsageError
from calib.core.progress import Progress
from calib.estimators import grouped_estimator
from calib.runtime import Calibration
from calib.scoring.chain import FeatureTable
from calib.scoring.score import score_frame
from calib.store.store import Store


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
    per call × rule × estimator × policy (columns `REPLAY_COLUMNS`, defined in the package docstring).
    `rules` None is every rule; `window` is `real` (the table's windows), `auto`, `what-if` or a
    number of tokens (package docstring).

    The whole frame is in memory; `run_replay` (and the report) summarise the same rows a batch of
    sessions at a time instead (`ReplayTally`)."""
    names = _estimator_names(estimators)
    rule_list, wanted = _rules_to_run(rules, owned_rules(store.con))
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
    frames = list(
        replay_batch(
            scores,
            usage,
            names,
            rule_list,
            policy_list,
            plan,
            sessions,
            wanted,
            calibrations=calibrations_of(graded),
        )
    )
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
REPLAYED_COLUMNS = ("estimator", *_CHAIN_READ, "est_delta", "est_full", "static")


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
    calibrations: Mapping[str, Calibration] | None = None,
    columns: Sequence[str] = REPLAY_COLUMNS,
) -> Iterator[pl.DataFrame]:
    """The replay rows of whole sessions, one frame per rule and policy (in that order): `scores` are
    their calls scored by each estimator of `names`, `usage` the calls' usage (`_USAGE_SQL`), `sessions`
    their agent and version (`_SESSIONS_SQL`; None: no session has a rule of its own), `windows` the plan
    of `plan_windows` (a bare table: its real windows); with `wanted` (`own` was asked for), only the
    rows of the `wanted` rules and of each session's own. Batches given one after another may cut a
    long session in pieces when they share a `carry`, which each leaves for the next: given only to a
    batch that begins or ends inside a session (None: whole sessions, nothing carried). The rows of the
    estimators in `calibrations` (`calib.analysis.accountant.calibrations`) are the runtime tracker's.
    `columns`: those of each frame (more than `REPLAY_COLUMNS` for a reader of the per-call frame)."""
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
    # the estimators whose displayed counts the runtime's tracker makes, from the resent reasoning and
    # the fitted static overhead too
    tracked = dict(calibrations or {})
    # what `_decide` does not read: not copied per estimator (the carried columns exist only going on)
    dropped = [c for c in _NOT_DECIDED if not (tracked and c == "_resent")]
    calls = calls.join(windows_frame, on=["tool", "_mkey"], how="left").drop(dropped, strict=False)
    order = pl.DataFrame({"estimator": list(names), "_eorder": list(range(len(names)))})
    base = (
        scores.select("estimator", "call_uid", "est_delta", "est_full", *(["static"] if tracked else []))
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
                calibrations=tracked,
                trackers=carry.trackers.setdefault(key, {}) if carry is not None else None,
                own_only=wanted is not None and rule.name not in wanted,
            )
            if carry is not None and frame.height:
                carry.decided[key] = _decide_carry(frame)
            frame = frame.select(columns)
            if wanted is not None:
                frame = frame.filter(pl.col("rule").is_in(list(wanted)) | pl.col("own"))
            yield frame


def _rules_to_run(
    rules: Sequence[str | Rule] | None, owned: Collection[str] | None = None
) -> tuple[list[Rule], list[str] | None]:
    """The rules to compute, and with `own` among the requested ones (each session under its own agent's
    rule for its version) the names of the rules also kept for every session (None: no `own`). `owned`:
    the rules some session owns (`owned_rules`; None: any may be), the only others `own` needs."""
    if rules is None or OWN_RULE not in rules:
        return resolve_rules(rules), None
    named = [r for r in rules if r != OWN_RULE]
    rule_list = resolve_rules(named) if named else []
    given = {r.name for r in rule_list}
    wanted = list(given)
    more = [cls() for name, cls in RULES.items() if name not in given and (owned is None or name in owned)]
    return rule_list + more, wanted


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


# `calib` exports `replay` under this name: `calib.analysis.replay` is this package once anything imports it.
replay_calls = replay
