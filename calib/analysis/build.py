"""Building a report: score the estimators on every call of a store and gather the figures of the summary.

`build_report` scores the estimators on every call of a store (`calib.scoring.score`), adds a calibration
when one is given or fitted, classifies what each call appended (`calib.analysis.content`), replays the
agents' compaction rules (`calib.analysis.replay`), and gathers everything into one JSON-ready `summary`
dict (`calib.analysis.summary`); the markdown is `render_markdown(summary)`, a pure function of that dict,
so every number in `report.md` is a figure of `summary.json` rounded for display. The summary is
deterministic for the same store and options: keys sorted, lists in a fixed order, figures rounded by
`calib.core.figures.round_figures`, no timestamps, and no path of the machine that made the report (a
config is named by its file name and content hash); the one path in it is the source file of each of
the largest misses (`misses`), as the store recorded it at ingest, so a reader can open that log.

Accuracy comes in two views of the same calls (`calib.scoring.score.summarise`): *scored* (the
incremental calls whose chain holds: `calls`, `delta_mae`, `ctx_err_*`) and *end-to-end* (every call
with usage as an agent would predict it, breaks included: `e2e_calls`, `e2e_err_*`; the whole-prompt
family among them: `full_calls`, `full_err_*`). `groups`, `overall` and `breaks` carry both, and
`misses` lists the largest end-to-end misses of the breaks found only from the provider's count.

This module builds data only: it draws nothing and loads no plotting library (`calib.analysis.report`
writes the files and draws the figures).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from calib.analysis.content import CONTENT_KINDS, EMPTY_KIND, appended_content
from calib.analysis.markdown import render_markdown
from calib.analysis.replay import pick_session, replay_calls, summarise_replay, timeline, unknown_models
from calib.analysis.summary import CONFIG_FILE, SUMMARY_FORMAT
from calib.analysis.windows import fixed_windows
from calib.calibration.fit import DEFAULT_BASE, Calibrator
from calib.calibration.pipeline import before_after
from calib.core.config import dumps as dumps_config
from calib.core.errors import UsageError
from calib.core.figures import round_figures
from calib.core.progress import Progress
from calib.estimators import list_estimators
from calib.estimators.calibrated import CalibratedEstimator
from calib.scoring.chain import BREAK_REASONS, HOLDOUT_FRACTION, LOG_VISIBLE_REASONS, features
from calib.scoring.score import score_frame, summarise
from calib.store.store import Store

__all__ = [
    "MIN_DELTA",
    "MISSES_LISTED",
    "MISS_REASONS",
    "REPORT_ESTIMATORS",
    "Report",
    "build_report",
    "report_estimators",
]

# The estimators a report scores when none is named (those usable here).
REPORT_ESTIMATORS: tuple[str, ...] = ("chars4", "cjk", "tiktoken:o200k_base", "charclass")
# Ratio figures use calls appending at least this many tokens (see calib.analysis.plots.MIN_DELTA).
MIN_DELTA = 50


def report_estimators() -> list[str]:
    """The default estimators of a report that can be used here."""
    available = {info.name for info in list_estimators() if info.available}
    return [name for name in REPORT_ESTIMATORS if name in available]


@dataclass
class Report:
    """A built report: the JSON summary, plus the per-call frames the figures are drawn from."""

    summary: dict[str, Any]
    scores: pl.DataFrame  # per (estimator, call), with `content_kind`
    config: dict[str, Any] | None = None  # the calibration scored, if any
    timeline: pl.DataFrame | None = None  # the replayed session, if any

    @property
    def markdown(self) -> str:
        """The report as markdown (a function of `summary` only)."""
        return render_markdown(self.summary)


# Figures of `summarise` kept per group (`groups`) and per estimator (`overall`): the scored view, its
# coverage and the calls with a removal estimated, the end-to-end view, and its full-prompt family.
_GROUP_FIGURES = (
    "calls",
    "coverage",
    "removal_calls",
    "breaks",
    "baselines",
    "subagent_baselines",
    "delta_mae",
    "delta_bias",
    "ctx_err_p50",
    "ctx_err_p90",
    "ctx_err_p99",
    "ctx_err_mean",
    "e2e_calls",
    "e2e_err_p50",
    "e2e_err_p90",
    "e2e_err_p99",
    "e2e_err_mean",
    "full_calls",
    "full_err_p50",
    "full_err_p90",
    "full_err_mean",
    "static_overhead_p50",
)


def _groups(summary: pl.DataFrame) -> list[dict[str, Any]]:
    out = []
    for row in summary.to_dicts():
        item = {k: row[k] for k in ("estimator", "provider", "model", *_GROUP_FIGURES)}
        item["breaks_by_reason"] = {r: int(row["breaks_by_reason"][r] or 0) for r in BREAK_REASONS}
        out.append(item)
    return out


def _quantiles(values: pl.Series, qs: Sequence[float]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for q in qs:
        key = f"p{round(q * 100):02d}"
        out[key] = None if values.is_empty() else values.quantile(q, "linear")
    return out


def _distribution(scores: pl.DataFrame, names: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    ok = scores.filter(pl.col("status") == "ok")
    for name in names:
        rows = ok.filter(pl.col("estimator") == name)
        signed = (rows["error"] / rows["ctx"]).drop_nulls()
        big = rows.filter(pl.col("delta") >= MIN_DELTA)
        ratio = (big["est_delta"] / big["delta"]).drop_nulls()
        out[name] = {
            "calls": rows.height,
            "ctx_rel_error": _quantiles(signed, (0.01, 0.1, 0.5, 0.9, 0.99)),
            "under_share": None if rows.is_empty() else rows.select((pl.col("error") < 0).mean()).item(),
            "delta_ratio_calls": big.height,
            "delta_ratio": _quantiles(ratio, (0.1, 0.25, 0.5, 0.75, 0.9)),
        }
    return out


def _kinds(scores: pl.DataFrame) -> list[dict[str, Any]]:
    ok = scores.filter(pl.col("status") == "ok")
    big = (pl.col("delta") >= MIN_DELTA) & (pl.col("delta") > 0)
    table = (
        ok.group_by("estimator", "content_kind")
        .agg(
            pl.len().cast(pl.Int64).alias("calls"),
            (pl.col("est_delta") - pl.col("delta")).abs().mean().alias("delta_mae"),
            (pl.col("est_delta").sum() / pl.col("delta").sum()).alias("delta_bias"),
            (pl.col("est_delta") / pl.col("delta")).filter(big).median().alias("delta_ratio_p50"),
            pl.col("rel_error").quantile(0.9, "linear").alias("ctx_err_p90"),
            pl.col("delta").sum().alias("delta_tokens"),
        )
        .sort("estimator", "content_kind")
    )
    return table.to_dicts()


def _kind_chars(scores: pl.DataFrame) -> dict[str, int]:
    if scores.is_empty():
        return dict.fromkeys(CONTENT_KINDS, 0)
    first = scores["estimator"][0]
    ok = scores.filter((pl.col("status") == "ok") & (pl.col("estimator") == first))
    return {k: int(ok[f"chars_{k}"].sum() or 0) for k in CONTENT_KINDS}


def _breaks(summary: pl.DataFrame) -> list[dict[str, Any]]:
    if summary.is_empty():
        return []
    first = summary["estimator"][0]
    out = []
    for row in summary.filter(pl.col("estimator") == first).to_dicts():
        item = {
            "provider": row["provider"],
            "model": row["model"],
            "calls": row["calls"],
            "coverage": row["coverage"],
            "removal_calls": row["removal_calls"],
            "breaks": row["breaks"],
            "baselines": row["baselines"],
            "subagent_baselines": row["subagent_baselines"],
            "after_placeholder": row["after_placeholder"],
        }
        item.update({r: int(row["breaks_by_reason"][r] or 0) for r in BREAK_REASONS})
        out.append(item)
    return out


# Breaks found only by comparing with the provider's count (the log shows nothing): the calls an agent
# really misses, listed in `misses`; how many of them the summary lists.
MISS_REASONS: tuple[str, ...] = tuple(r for r in BREAK_REASONS if r not in LOG_VISIBLE_REASONS)
MISSES_LISTED = 10


def _misses(scores: pl.DataFrame, estimator: str) -> dict[str, Any]:
    """The largest end-to-end misses of one estimator: the calls whose break is found only from the
    count (`MISS_REASONS`), the `MISSES_LISTED` largest by relative error (ties by session, then call),
    and per reason how many there are and their share of the estimator's end-to-end calls."""
    rows = scores.filter(pl.col("estimator") == estimator)
    e2e_calls = rows.filter(pl.col("family").is_not_null()).height
    missed = rows.filter(pl.col("family").is_not_null() & pl.col("reason").is_in(MISS_REASONS))
    by_reason: dict[str, dict[str, Any]] = {}
    for reason in MISS_REASONS:
        n = missed.filter(pl.col("reason") == reason).height
        by_reason[reason] = {"calls": n, "share": n / e2e_calls if e2e_calls else None}
    largest = (
        missed.sort(["rel_error", "session_uid", "seq"], descending=[True, False, False], nulls_last=True)
        .head(MISSES_LISTED)
        .select(
            "tool",
            "file",
            pl.col("session_uid").alias("session"),
            pl.col("seq").alias("call"),
            "provider",
            "model",
            "reason",
            "ctx",
            pl.col("pred").alias("predicted"),
            "error",
            "rel_error",
        )
    )
    return {
        "estimator": estimator,
        "e2e_calls": e2e_calls,
        "by_reason": by_reason,
        "largest": largest.to_dicts(),
    }


def _store_facts(store: Store) -> dict[str, Any]:
    counts = store.counts()
    tools = store.con.execute("SELECT tool, count(*) FROM sessions GROUP BY tool ORDER BY tool").fetchall()
    placeholders = store.con.execute("SELECT count(*) FROM calls WHERE output_placeholder").fetchone()
    return {
        "placeholder_calls": int(placeholders[0]) if placeholders else 0,
        "sessions": counts["sessions"],
        "calls": counts["calls"],
        "parts": counts["parts"],
        "sessions_by_tool": {str(tool): int(n) for tool, n in tools},
    }


def build_report(
    store: Store,
    *,
    estimators: Sequence[str] | None = None,
    config: str | os.PathLike[str] | None = None,
    fit: bool = False,
    base: str | None = None,
    holdout_fraction: float = HOLDOUT_FRACTION,
    replay: bool = True,
    replay_window: int | None = None,
    progress: Progress | None = None,
) -> Report:
    """Score `estimators` (default: `report_estimators()`) on a store, plus a calibration read from
    `config` or, with `fit`, fitted on the training sessions; gather the report's figures. `replay`
    adds the replay of the agents' compaction rules, with each model's own context window or, given
    `replay_window`, that many tokens for every model."""
    if config is not None and fit:
        raise UsageError("--config and --fit both name a calibration", hint="give one of them")
    if not 0 <= holdout_fraction < 1:
        raise UsageError(f"holdout fraction must be in [0, 1), got {holdout_fraction}")
    if replay_window is not None and replay_window <= 0:
        raise UsageError(f"replay window of {replay_window} tokens", hint="pass a positive token count")
    names = list(dict.fromkeys(estimators or report_estimators()))
    if not names:
        raise UsageError("no estimator to report on", hint="pass --estimator NAME (see `calib estimators`)")
    if any(n.startswith("calibrated:") for n in names):
        raise UsageError("calibrated estimators are given with --config", hint="use --config PATH")

    grouped: Any = None
    calibration: dict[str, Any] | None = None
    doc: dict[str, Any] | None = None
    if config is not None:
        grouped = CalibratedEstimator.from_path(config)
        doc = grouped.doc
        holdout_fraction = float(doc.get("fit", {}).get("holdout_fraction", holdout_fraction))
        calibration = {"source": "config", "config": Path(config).name}
    elif fit:
        grouped = Calibrator(base or DEFAULT_BASE, holdout_fraction=holdout_fraction)
        calibration = {"source": "fitted", "config": CONFIG_FILE}
    before: str = grouped.base if grouped is not None else ""
    label = f"calibrated:{before}"
    sources = set(names)
    if grouped is not None:
        sources.update(grouped.sources)
        sources.add(before)
    frame = features(store, sorted(sources), progress=progress, holdout_fraction=holdout_fraction)
    ok = pl.col("status") == "ok"
    train = frame.filter(~pl.col("holdout"))
    held = frame.filter(pl.col("holdout"))
    if isinstance(grouped, Calibrator):
        if train.filter(ok).is_empty():
            raise UsageError(
                "no scorable calls to fit on (every call is a baseline, a chain break or held out)",
                hint="ingest more sessions, or drop --fit",
            )
        grouped.fit(train)
        doc = grouped.to_config()

    content = appended_content(store)
    scored = [score_frame(frame, name) for name in names]
    if grouped is not None:
        scored.append(score_frame(frame, label, grouped))
    scores = pl.concat(scored, how="vertical_relaxed")
    scores = scores.join(content, on="call_uid", how="left").with_columns(
        pl.col("content_kind").fill_null(EMPTY_KIND),
        *(pl.col(f"chars_{k}").fill_null(0) for k in CONTENT_KINDS),
    )
    by_group = summarise(scores)
    overall = summarise(
        scores.with_columns(pl.lit(None, pl.String).alias("provider"), pl.lit(None, pl.String).alias("model"))
    )
    all_names = [*names, *([label] if grouped is not None else [])]

    summary: dict[str, Any] = {
        "format": SUMMARY_FORMAT,
        "store": _store_facts(store),
        "estimators": all_names,
        "min_delta": MIN_DELTA,
        "groups": _groups(by_group),
        "overall": [{k: row[k] for k in ("estimator", *_GROUP_FIGURES)} for row in overall.to_dicts()],
        "distribution": _distribution(scores, all_names),
        "content_kinds": _kinds(scores),
        "content_chars": _kind_chars(scores),
        "breaks": _breaks(by_group),
        "misses": _misses(scores, label if grouped is not None else names[0]),
        "calibration": None,
        "before_after": None,
        "replay": None,
    }
    if grouped is not None and doc is not None and calibration is not None:
        check = held if holdout_fraction > 0 and not held.filter(ok).is_empty() else train
        compared = summarise(
            pl.concat(
                [score_frame(check, before), score_frame(check, label, grouped)], how="vertical_relaxed"
            )
        )
        calibration.update(
            {
                "label": label,
                "base": before,
                "sha256": hashlib.sha256(dumps_config(doc).encode("utf-8")).hexdigest(),
                "holdout_fraction": holdout_fraction,
                "compared_on": "holdout" if check is held else "train",
                "train_sessions": train.select("session_uid").n_unique(),
                "holdout_sessions": held.select("session_uid").n_unique(),
                "train_calls": train.filter(ok).height,
                "holdout_calls": held.filter(ok).height,
            }
        )
        summary["calibration"] = calibration
        summary["before_after"] = before_after(compared, before, label, grouped)
    report = Report(summary=summary, scores=scores, config=doc)
    if replay:
        _add_replay(report, store, names, label if grouped is not None else None, doc, config, replay_window)
    summary.update(round_figures({k: summary[k] for k in summary}))
    return report


# The replay section uses each agent's own count (policy `raw`) and draws the session under the
# Dexto rule, the one whose displayed context is the estimator's.
REPLAY_POLICY = "raw"
TIMELINE_RULE = "dexto"


def _add_replay(
    report: Report,
    store: Store,
    names: Sequence[str],
    label: str | None,
    doc: dict[str, Any] | None,
    config: str | os.PathLike[str] | None,
    window: int | None = None,
) -> None:
    """Replay the agents' compaction rules with the report's estimators (`calib.analysis.replay`) and add the
    summary rows, the session drawn and its timeline to the report; `window` gives every model that
    context window instead of its own (a what-if)."""
    with tempfile.TemporaryDirectory(prefix="calib-report-") as tmp:
        estimators = list(names)
        calibrated = None
        if label is not None and doc is not None:
            # the replay takes estimators by name: a fitted calibration goes through a file
            path = Path(config) if config is not None else Path(tmp) / CONFIG_FILE
            if config is None:
                path.write_text(dumps_config(doc), encoding="utf-8")
            calibrated = f"calibrated:{path}"
            estimators.append(calibrated)
        windows = fixed_windows(window) if window is not None else None
        frame = replay_calls(store, estimators, policies=[REPLAY_POLICY], windows=windows)
    if calibrated is not None and label is not None:
        frame = frame.with_columns(pl.col("estimator").replace(calibrated, label))
    rows = summarise_replay(frame).sort("rule", "estimator", "policy").to_dicts()
    session = pick_session(frame, rule=TIMELINE_RULE, policy=REPLAY_POLICY)
    unknown = unknown_models(frame)
    report.summary["replay"] = {
        "window": window,
        "policy": REPLAY_POLICY,
        "rows": rows,
        "timeline_rule": TIMELINE_RULE,
        "timeline_session": session,
        "unknown_models": unknown,
    }
    if session is not None:
        report.timeline = timeline(frame, session, rule=TIMELINE_RULE, policy=REPLAY_POLICY)
