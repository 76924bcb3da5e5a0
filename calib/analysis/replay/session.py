"""One session: its timeline under a rule and policy (`timeline`, `timeline_caption`), and which session
is worth drawing (`pick_session`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from calib.analysis.rules import OWN_RULE

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
