"""The summary of replay rows: per agent × rule × estimator × policy × window kind, the counts of
decisions, outcomes and events, and the error figures (`summarise_replay`)."""

from __future__ import annotations

import polars as pl

from calib.analysis.accountant import TRACKER_POLICY
from calib.analysis.rules import RULES

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
    (package docstring), whether the rule is the sessions' own, and the windows' range."""
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
    """Whether a row's figures depend on its estimator: under a rule that estimates, and for a
    calibrated estimator under every policy the tracker counts (`calib.analysis.accountant`)."""
    uses = {name: cls.uses_estimator for name, cls in RULES.items()}
    tracked = pl.col("estimator").str.starts_with("calibrated") & pl.col("policy").is_in(list(TRACKER_POLICY))
    return frame.with_columns(
        (pl.col("rule").replace_strict(uses, default=True, return_dtype=pl.Boolean) | tracked).alias(
            "uses_estimator"
        )
    )


def unknown_models(frame: pl.DataFrame) -> list[str]:
    """Models whose calls had no window in the table (shown as `?` for a call without a model)."""
    missing = frame.filter(pl.col("outcome") == "no_window").get_column("model").unique().to_list()
    return sorted("?" if m is None else m for m in missing)
