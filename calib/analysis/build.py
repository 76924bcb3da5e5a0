"""Building a report: score the estimators on every call of a store and gather the figures of the summary.

`build_report` scores the estimators on every call of a store (`calib.scoring.score`), adds a calibration
when one is given or fitted, classifies what each call appended (`calib.analysis.content`), replays the
agents' compaction rules (`calib.analysis.replay`), and gathers everything into one JSON-ready `summary`
dict (`calib.analysis.summary`); the markdown is `render_markdown(summary)`, a pure function of that dict,
so every number in `report.md` is a figure of `summary.json` rounded for display. The summary is
deterministic for the same store and options: keys sorted, lists in a fixed order, figures rounded by
`calib.core.figures.round_figures`, no timestamps, and no path of the machine that made the report (a
config is named by its file name and content hash); the one path in it is the source file of each of
the largest misses (`misses`), as the store recorded it at ingest, so a reader can open that log (the
removals listed in `savings` name their file by its name alone).

With a calibration, `savings` is the removal ledger of the sessions that removed text from their
context (`calib.analysis.savings.savings_section`), read from the same batches as the scores.

Accuracy comes in two views of the same calls (`calib.scoring.score.summarise`): *scored* (the
incremental calls whose chain holds: `calls`, `delta_mae`, `ctx_err_*`) and *end-to-end* (every call
with usage as an agent would predict it, breaks included: `e2e_calls`, `e2e_err_*`; the whole-prompt
family among them: `full_calls`, `full_err_*`). `groups`, `overall` and `breaks` carry both, and
`misses` lists the largest end-to-end misses of the breaks found only from the provider's count.
`model_error` (per provider and model) and `position_error` (per band of context sizes) give the
percentiles of the signed error of the predicted context over the scored calls, for the figures a
reader takes in at a glance.

Memory stays flat however large the store and however long a session: the calls are read a batch of
whole sessions at a time, a longer session in pieces of consecutive calls
(`calib.scoring.chain.FeatureTable`), and each batch is scored, classified and replayed, then dropped
(the replay goes on from where a session's previous piece ended: `calib.analysis.replay.ReplayCarry`).
What the summary needs of every call (its percentiles) waits in a spool on disk and is summarised one
estimator at a time with the same functions, so the figures are those of the whole frame; the figures
drawn (`Report.scores`) are the calls of a sample of whole sessions (`FIGURE_CALLS` calls or so, the
same sessions on every run), and say so when they are not all of them.

This module builds data only: it draws nothing and loads no plotting library (`calib.analysis.report`
writes the files and draws the figures).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from calib.analysis.batches import BATCH_ROWS, SessionSample, Spool, batch_calls, compact
from calib.analysis.content import CONTENT_KINDS, EMPTY_KIND, ContentKinds
from calib.analysis.markdown import render_markdown
from calib.analysis.removals import LEDGER_INPUT
from calib.analysis.replay import REPLAYED_COLUMNS, ReplayRun
from calib.analysis.rules import OWN_RULE
from calib.analysis.savings import savings_section
from calib.analysis.summary import CONFIG_FILE, SUMMARY_FORMAT
from calib.analysis.windows import window_size
from calib.calibration.fit import DEFAULT_BASE, Calibrator
from calib.calibration.pipeline import before_after
from calib.core.config import dumps as dumps_config
from calib.core.errors import UsageError
from calib.core.figures import round_figures
from calib.core.progress import Progress
from calib.estimators import list_estimators
from calib.estimators.calibrated import CalibratedEstimator
from calib.scoring.agents import agent_estimate_summary
from calib.scoring.chain import BREAK_REASONS, HOLDOUT_FRACTION, LOG_VISIBLE_REASONS, FeatureTable
from calib.scoring.score import SUMMARY_INPUT_COLUMNS, estimate_frame, score_frame, summarise
from calib.store.store import Store, release_cache

__all__ = [
    "FIGURE_CALLS",
    "FIGURE_COLUMNS",
    "MIN_DELTA",
    "MIN_FIGURE_CALLS",
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
# A provider/model or a band of context sizes is drawn (`model_error`, `position_error`) when it has
# at least this many scored calls: with fewer, its p10-p90 range is just its two extreme calls.
MIN_FIGURE_CALLS = 10


def report_estimators() -> list[str]:
    """The default estimators of a report that can be used here."""
    available = {info.name for info in list_estimators() if info.available}
    return [name for name in REPORT_ESTIMATORS if name in available]


@dataclass
class Report:
    """A built report: the JSON summary, plus the per-call frames the figures are drawn from."""

    summary: dict[str, Any]
    # per (estimator, call) of a sample of the sessions (all of a store of up to `FIGURE_CALLS` calls),
    # columns `FIGURE_COLUMNS`: what the figures draw
    scores: pl.DataFrame
    config: dict[str, Any] | None = None  # the calibration scored, if any
    timeline: pl.DataFrame | None = None  # the replayed session, if any
    sample_note: str | None = None  # which sessions `scores` holds, when not all of them

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


def _strings(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with its categorical columns (the spool's) as strings again."""
    return frame.with_columns(pl.col(pl.Categorical).cast(pl.String))


def _kinds(scores: pl.DataFrame) -> pl.DataFrame:
    """Per estimator and content kind, the scored calls' figures (unsorted). `delta_bias` sums over
    every scored call of the kind, and a call across which the log shows text leaving the context
    (a pruned tool output) has a delta of appended minus removed tokens, so a kind whose calls mostly
    shrank the context gets a negative or meaningless ratio; `append_bias` sums over the `append_calls`
    that only appended (no removal, delta > 0), which is what the figure draws."""
    ok = scores.filter(pl.col("status") == "ok")
    big = (pl.col("delta") >= MIN_DELTA) & (pl.col("delta") > 0)
    appended = pl.col("removal").is_null() & (pl.col("delta") > 0)
    return ok.group_by("estimator", "content_kind").agg(
        pl.len().cast(pl.Int64).alias("calls"),
        (pl.col("est_delta") - pl.col("delta")).abs().mean().alias("delta_mae"),
        (pl.col("est_delta").sum() / pl.col("delta").sum()).alias("delta_bias"),
        appended.sum().cast(pl.Int64).alias("append_calls"),
        (pl.col("est_delta").filter(appended).sum() / pl.col("delta").filter(appended).sum()).alias(
            "append_bias"
        ),
        (pl.col("est_delta") / pl.col("delta")).filter(big).median().alias("delta_ratio_p50"),
        pl.col("rel_error").quantile(0.9, "linear").alias("ctx_err_p90"),
        pl.col("delta").sum().alias("delta_tokens"),
    )


# The quantiles of the signed error kept per provider/model and per band of context sizes.
_SIGNED_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)
# Context sizes are banded in doublings: band k holds the calls with 2**k <= ctx < 2**(k+1).
_BAND_EDGES = pl.Series("edges", [2**k for k in range(48)], dtype=pl.Int64)


def _signed_quantiles(value: pl.Expr, prefix: str = "") -> list[pl.Expr]:
    return [value.quantile(q, "linear").alias(f"{prefix}p{round(q * 100):02d}") for q in _SIGNED_QUANTILES]


def _scored(scores: pl.DataFrame) -> pl.DataFrame:
    return scores.filter((pl.col("status") == "ok") & (pl.col("ctx") > 0))


def _model_error(scores: pl.DataFrame) -> pl.DataFrame:
    """Per estimator, provider and model, the quantiles (`p10` ... `p90`) of the signed relative error of
    the predicted context, `(pred - ctx) / ctx`, over the scored calls (unsorted): negative where the
    agent shows less than the provider counted."""
    signed = pl.col("error") / pl.col("ctx")
    return (
        _scored(scores)
        .group_by("estimator", "provider", "model")
        .agg(pl.len().cast(pl.Int64).alias("calls"), *_signed_quantiles(signed))
    )


def _position_error(scores: pl.DataFrame) -> pl.DataFrame:
    """Per estimator and band of context sizes (`ctx_from` <= ctx < `ctx_to`, doublings), over the scored
    calls: the quantiles of the signed relative error of the predicted context (`p10` ... `p90`), and of
    estimate / actual appended tokens of the calls appending at least `MIN_DELTA` (`ratio_p10` ...), the
    figure that shows whether an estimator's bias drifts as the context grows (unsorted)."""
    ok = _scored(scores)
    band = _BAND_EDGES.search_sorted(ok.get_column("ctx").cast(pl.Int64), side="right") - 1
    big = pl.col("delta") >= MIN_DELTA
    return (
        ok.with_columns(_BAND_EDGES.gather(band).alias("ctx_from"))
        .group_by("estimator", "ctx_from")
        .agg(
            pl.len().cast(pl.Int64).alias("calls"),
            *_signed_quantiles(pl.col("error") / pl.col("ctx")),
            big.sum().cast(pl.Int64).alias("ratio_calls"),
            *_signed_quantiles((pl.col("est_delta") / pl.col("delta")).filter(big), "ratio_"),
        )
        .with_columns((pl.col("ctx_from") * 2).alias("ctx_to"))
    )


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
    tally = _MissTally(estimator)
    tally.add(scores)
    return tally.result()


class _MissTally:
    """`_misses` of scores given a batch at a time: counts add up, and the largest misses of the batches
    seen so far are all that is kept (the largest of all are among them)."""

    def __init__(self, estimator: str) -> None:
        self.estimator = estimator
        self.e2e_calls = 0
        self.by_reason = dict.fromkeys(MISS_REASONS, 0)
        self.largest: pl.DataFrame | None = None

    def add(self, scores: pl.DataFrame) -> None:
        rows = scores.filter(pl.col("estimator") == self.estimator)
        self.e2e_calls += rows.filter(pl.col("family").is_not_null()).height
        missed = rows.filter(pl.col("family").is_not_null() & pl.col("reason").is_in(MISS_REASONS))
        for reason in MISS_REASONS:
            self.by_reason[reason] += missed.filter(pl.col("reason") == reason).height
        candidates = missed.select(
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
        if self.largest is not None:
            candidates = pl.concat([self.largest, candidates], how="vertical_relaxed")
        self.largest = compact(
            candidates.sort(
                ["rel_error", "session", "call"], descending=[True, False, False], nulls_last=True
            ).head(MISSES_LISTED)
        )

    def result(self) -> dict[str, Any]:
        e2e = self.e2e_calls
        return {
            "estimator": self.estimator,
            "e2e_calls": e2e,
            "by_reason": {
                r: {"calls": n, "share": n / e2e if e2e else None} for r, n in self.by_reason.items()
            },
            "largest": self.largest.to_dicts() if self.largest is not None else [],
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


# The columns of the scores kept per estimator until the summary's figures are computed: what
# `summarise` reads, the side of the split (for the before/after comparison) and the content kind (for
# `_kinds`); the strings among them as categories, and only the columns a figure reads are read back.
_KEPT_COLUMNS = (*(c for c in SUMMARY_INPUT_COLUMNS if c != "estimator"), "holdout", "content_kind")
_CATEGORIES = ("provider", "model", "status", "family", "reason", "removal", "content_kind")
_DISTRIBUTION_COLUMNS = ("status", "ctx", "delta", "est_delta", "error")
# What `_distribution`, `_model_error` and `_position_error` read, in one pass per estimator.
_ERROR_COLUMNS = (*_DISTRIBUTION_COLUMNS, "provider", "model")
_KINDS_COLUMNS = ("status", "content_kind", "removal", "delta", "est_delta", "rel_error")
# The sample of sessions the figures are drawn from (`Report.scores`).
FIGURE_COLUMNS = (
    "estimator",
    "session_uid",
    "seq",
    "tool",
    "provider",
    "model",
    "status",
    "family",
    "reason",
    "ctx",
    "delta",
    "est_delta",
    "pred",
    "error",
    "rel_error",
    "content_kind",
)
# The figures are drawn from the calls of a sample of sessions (`calib.analysis.batches.SessionSample`):
# about this many calls (every call of a smaller store).
FIGURE_CALLS = 10_000


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
    batch_rows: int = BATCH_ROWS,
) -> Report:
    """Score `estimators` (default: `report_estimators()`) on a store, plus a calibration read from
    `config` or, with `fit`, fitted on the training sessions; gather the report's figures. `replay`
    adds the replay of the agents' compaction rules, each session under its own agent's rule on the windows
    `calib replay` chooses by default (`auto`, `calib.analysis.replay`) or, given `replay_window`, every
    model's window scaled to that many tokens.

    The store is read a batch of whole sessions at a time (about `batch_rows` scored rows): each batch
    is scored, classified and replayed, and only what the summary needs is kept, the per-call figures of
    each estimator in a spool on disk until they are summarised one estimator at a time."""
    if config is not None and fit:
        raise UsageError("--config and --fit both name a calibration", hint="give one of them")
    if not 0 <= holdout_fraction < 1:
        raise UsageError(f"holdout fraction must be in [0, 1), got {holdout_fraction}")
    if replay_window is not None:
        window_size(replay_window)
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
    all_names = [*names, *([label] if grouped is not None else [])]
    facts = _store_facts(store)

    with Spool(prefix="calib-report-") as spool:
        # the store is read in this block; once it is done, only the spool is
        with ExitStack() as stack:
            content = stack.enter_context(ContentKinds(store))
            table = stack.enter_context(
                FeatureTable(store, sorted(sources), progress=progress, holdout_fraction=holdout_fraction)
            )
            if isinstance(grouped, Calibrator):
                # the fit reads the training calls (with its own counts only) a batch at a time; the
                # batches are read again after it
                grouped.fit_batches(table.batches(grouped.sources, holdout=False, label="fitting"))
                if not grouped.n_calls_:
                    raise UsageError(
                        "no scorable calls to fit on (every call is a baseline, a chain break or held out)",
                        hint="ingest more sessions, or drop --fit",
                    )
                doc = grouped.to_config()
            tally = _ReportTally(
                spool,
                names=all_names,
                first=names[0],
                misses=label if grouped is not None else names[0],
                compare=(before, label) if grouped is not None else None,
                holdout_fraction=holdout_fraction,
                sample_rows=FIGURE_CALLS * len(all_names),
            )
            # a calibration is replayed and counts the removal ledger as `calib replay` and `calib
            # savings` read it: a config from its file, a fitted one from the text of the config the
            # report writes
            counted: CalibratedEstimator | None = (
                grouped if isinstance(grouped, CalibratedEstimator) else None
            )
            if isinstance(grouped, Calibrator) and doc is not None:
                counted = CalibratedEstimator.from_config(json.loads(dumps_config(doc)), name=label)
            replayer = None
            if replay:
                replayer = _Replayer(
                    store, spool, names, label if grouped is not None else None, counted, replay_window
                )
                stack.callback(replayer.close)
            scorers: list[tuple[str, Any]] = [(name, None) for name in names]
            if grouped is not None:
                scorers.append((label, grouped))
                if before not in names:
                    scorers.append((before, None))  # for the before/after comparison only
            # the removal ledger reads the calibration's counts of every call (`calib.analysis.savings`)
            ledger = counted
            ledger_rows: list[pl.DataFrame] = []
            size = batch_calls(
                len(scorers) + (1 if replayer is not None and grouped is not None else 0), batch_rows
            )
            for batch in table.batches(batch_calls=size, label="scoring"):
                uids, seqs = batch.get_column("session_uid"), batch.get_column("seq")
                # a batch may begin or end inside a long session: its calls are from its first to its last
                kinds = content.for_sessions(uids[0], uids[-1], (seqs[0], seqs[-1])) if len(uids) else None
                scored = {name: score_frame(batch, name, g) for name, g in scorers}
                tally.add(batch, scored, kinds)
                if replayer is not None and len(uids):
                    replayer.add(batch, scored, uids[0], uids[-1])
                if ledger is not None:
                    ledger_rows.append(compact(estimate_frame(batch, label, ledger).select(LEDGER_INPUT)))
            savings = (
                savings_section(store, ledger, pl.concat(ledger_rows, how="vertical_relaxed"))
                if ledger is not None and ledger_rows
                else None
            )
        release_cache(store.con)  # what DuckDB cached of the store is not read again
        summary = _summary(tally, store_facts=facts, names=all_names)
        if grouped is not None and doc is not None and calibration is not None:
            calibration.update(tally.calibration(doc))
            summary["calibration"] = calibration
            summary["before_after"] = before_after(tally.compared(), before, label, grouped)
        summary["savings"] = savings
        agents = agent_estimate_summary(store)
        summary["agent_estimates"] = agents.to_dicts() if not agents.is_empty() else None
        report = Report(summary=summary, scores=tally.sample(), config=doc, sample_note=tally.sample_note())
        if replayer is not None:
            replayer.finish(report)
    summary.update(round_figures({k: summary[k] for k in summary}))
    return report


def _summary(tally: _ReportTally, *, store_facts: dict[str, Any], names: list[str]) -> dict[str, Any]:
    figures = tally.figures()
    return {
        "format": SUMMARY_FORMAT,
        "store": store_facts,
        "estimators": names,
        "min_delta": MIN_DELTA,
        "min_figure_calls": MIN_FIGURE_CALLS,
        "groups": _groups(figures.by_group),
        "overall": [
            {k: row[k] for k in ("estimator", *_GROUP_FIGURES)} for row in figures.overall.to_dicts()
        ],
        "distribution": figures.distribution,
        "model_error": figures.model_error,
        "position_error": figures.position_error,
        "content_kinds": figures.kinds,
        "content_chars": tally.content_chars(),
        "breaks": _breaks(figures.by_group),
        "misses": tally.misses.result(),
        "calibration": None,
        "before_after": None,
        "replay": None,
        "savings": None,
        "agent_estimates": None,
    }


@dataclass
class _Figures:
    """What `_ReportTally.figures` computes from the spooled scores."""

    by_group: pl.DataFrame
    overall: pl.DataFrame
    distribution: dict[str, Any]
    model_error: list[dict[str, Any]]
    position_error: list[dict[str, Any]]
    kinds: list[dict[str, Any]]


class _ReportTally:
    """What the summary needs from the scored calls, gathered a batch of whole sessions at a time.

    Each estimator's per-call figures (`_KEPT_COLUMNS`) wait in the spool; `figures` then reads them
    back one estimator at a time and computes on them what the summary computed on the whole frame of
    scores (`summarise`, `_distribution`, `_model_error`, `_position_error`, `_kinds`), so the numbers
    are the same; the percentiles per provider/model and per band of context sizes are exact, not
    sketched. Counts (the appended characters per kind, the misses, the calls and sessions on each side
    of the split) add up as the batches come, and the scatter and ECDF figures are drawn from a sample
    of sessions (`SessionSample`); the per-model, per-context-size and per-kind figures are drawn from
    the summary, so from every call.
    """

    def __init__(
        self,
        spool: Spool,
        *,
        names: list[str],
        first: str,
        misses: str,
        compare: tuple[str, str] | None,
        holdout_fraction: float,
        sample_rows: int,
    ) -> None:
        self.spool = spool
        self.holdout_fraction = holdout_fraction
        self.names = names
        self.first = first
        self.misses = _MissTally(misses)
        self.compare = compare
        self.chars = dict.fromkeys(CONTENT_KINDS, 0)
        self.sessions: dict[bool, set[str]] = {False: set(), True: set()}
        self.ok_calls = {False: 0, True: 0}
        self._sample = SessionSample(sample_rows, order="_eorder")

    def add(
        self, features: pl.DataFrame, scored: dict[str, pl.DataFrame], kinds: pl.DataFrame | None
    ) -> None:
        for holdout in (False, True):
            rows = features.filter(pl.col("holdout") == holdout)
            self.sessions[holdout].update(rows.get_column("session_uid").unique().to_list())
            self.ok_calls[holdout] += rows.filter(pl.col("status") == "ok").height
        figures = []
        for name, scores in scored.items():
            if kinds is not None:
                scores = scores.join(kinds, on="call_uid", how="left")
            else:
                scores = scores.with_columns(
                    pl.lit(None, pl.String).alias("content_kind"),
                    *(pl.lit(None, pl.Int64).alias(f"chars_{k}") for k in CONTENT_KINDS),
                )
            scores = scores.with_columns(
                pl.col("content_kind").fill_null(EMPTY_KIND),
                *(pl.col(f"chars_{k}").fill_null(0) for k in CONTENT_KINDS),
            )
            self.spool.append(
                ("scores", name),
                scores.select(_KEPT_COLUMNS).with_columns(
                    pl.col(c).cast(pl.Categorical) for c in _CATEGORIES
                ),
            )
            if name == self.first:
                ok = scores.filter(pl.col("status") == "ok")
                for k in CONTENT_KINDS:
                    self.chars[k] += int(ok[f"chars_{k}"].sum() or 0)
            if name == self.misses.estimator:
                self.misses.add(scores)
            if name in self.names:
                # each estimator's rank: a session cut between batches is given back as a whole one
                rank = pl.lit(self.names.index(name), pl.Int32).alias("_eorder")
                figures.append(scores.select(*FIGURE_COLUMNS, rank))
        if figures:
            self._sample.add(pl.concat(figures, how="vertical_relaxed"))

    def _scores(self, name: str, columns: Sequence[str] = _KEPT_COLUMNS) -> pl.DataFrame:
        rows = self.spool.read(("scores", name), columns=columns)
        return rows.with_columns(pl.lit(name).alias("estimator"))

    def figures(self) -> _Figures:
        """`summarise` per group and overall, `_distribution`, `_model_error`, `_position_error` and
        `_kinds` of every estimator's scores, computed one estimator at a time on the columns each
        reads."""
        keys = ["estimator", "provider", "model"]
        groups, overall, kinds, models, positions = [], [], [], [], []
        distribution: dict[str, Any] = {}
        summarised = [c for c in SUMMARY_INPUT_COLUMNS if c != "estimator"]
        for name in self.names:
            rows = self._scores(name, summarised)
            groups.append(_strings(summarise(rows)))
            rows = rows.with_columns(
                pl.lit(None, pl.String).alias("provider"), pl.lit(None, pl.String).alias("model")
            )
            overall.append(_strings(summarise(rows)))
            rows = self._scores(name, _ERROR_COLUMNS)
            distribution.update(_distribution(rows, [name]))
            models.append(_strings(_model_error(rows)))
            positions.append(_position_error(rows))
            del rows
            kinds.append(_strings(_kinds(self._scores(name, _KINDS_COLUMNS))))
        return _Figures(
            by_group=pl.concat(groups, how="vertical_relaxed").sort(keys, nulls_last=True),
            overall=pl.concat(overall, how="vertical_relaxed").sort(keys, nulls_last=True),
            distribution=distribution,
            model_error=pl.concat(models, how="vertical_relaxed").sort(keys, nulls_last=True).to_dicts(),
            position_error=pl.concat(positions, how="vertical_relaxed")
            .sort("estimator", "ctx_from")
            .to_dicts(),
            kinds=pl.concat(kinds, how="vertical_relaxed").sort("estimator", "content_kind").to_dicts(),
        )

    def content_chars(self) -> dict[str, int]:
        """The appended characters per kind of the first estimator's scored calls."""
        return dict(self.chars)

    def _on_held(self) -> bool:
        # the comparison's calls: the held-out ones, the training ones when none of them is scored
        return self.holdout_fraction > 0 and self.ok_calls[True] > 0

    def calibration(self, doc: dict[str, Any]) -> dict[str, Any]:
        """The calibration entry's figures: what was compared, on which side of the split."""
        assert self.compare is not None
        before, label = self.compare
        return {
            "label": label,
            "base": before,
            "sha256": hashlib.sha256(dumps_config(doc).encode("utf-8")).hexdigest(),
            "holdout_fraction": self.holdout_fraction,
            "compared_on": "holdout" if self._on_held() else "train",
            "train_sessions": len(self.sessions[False]),
            "holdout_sessions": len(self.sessions[True]),
            "train_calls": self.ok_calls[False],
            "holdout_calls": self.ok_calls[True],
        }

    def compared(self) -> pl.DataFrame:
        """`summarise` of the base and its calibration on the calls compared (`_on_held`)."""
        assert self.compare is not None
        held = self._on_held()
        columns = [*(c for c in SUMMARY_INPUT_COLUMNS if c != "estimator"), "holdout"]
        rows = [self._scores(name, columns).filter(pl.col("holdout") == held) for name in self.compare]
        return _strings(summarise(pl.concat(rows, how="vertical_relaxed")))

    def sample(self) -> pl.DataFrame:
        """The scored calls of the sessions sampled for the figures."""
        return self._sample.rows()

    def sample_note(self) -> str | None:
        """Which sessions the figures show, when not all of them."""
        shown, total = self._sample.sessions(), len(self.sessions[False] | self.sessions[True])
        return None if shown >= total else f"calls of {shown} sessions sampled from {total}"


# The replay section uses each agent's own count (policy `raw`), each session under its own agent's rule
# on `calib replay`'s windows (`auto`, or the what-if `replay_window`), and draws one session under its own.
REPLAY_POLICY = "raw"


class _Replayer:
    """The report's replay of the agents' compaction rules (`calib.analysis.replay.ReplayRun`) with its
    estimators, fed the report's own batches of scores: the summary rows, the session drawn and its timeline."""

    def __init__(
        self,
        store: Store,
        spool: Spool,
        names: Sequence[str],
        label: str | None,
        calibrated: Any,
        window: int | None,
    ) -> None:
        self.names = list(names)
        self.label = label
        self.window = window
        self.calibrated = calibrated if label is not None else None
        estimators = [*self.names, *([label] if self.calibrated is not None and label else [])]
        self.run = ReplayRun(
            store,
            estimators,
            rules=[OWN_RULE],
            policies=[REPLAY_POLICY],
            window="auto" if window is None else window,
            spool=spool,
            timeline_at=(OWN_RULE, REPLAY_POLICY),
            grouped={label: self.calibrated} if self.calibrated is not None and label else None,
        )

    def add(self, features: pl.DataFrame, scored: dict[str, pl.DataFrame], first: str, last: str) -> None:
        """Replay a batch of whole sessions (uids `first` to `last`), scored by each estimator."""
        frames = [scored[name] for name in self.names]
        if self.calibrated is not None and self.label is not None:
            frames.append(score_frame(features, self.label, self.calibrated))
        self.run.add(pl.concat([f.select(REPLAYED_COLUMNS) for f in frames], how="vertical_relaxed"))

    def finish(self, report: Report) -> None:
        report.summary["replay"] = self.run.report_section(self.window)
        if self.run.tally.session is not None:
            report.timeline = self.run.tally.timeline

    def close(self) -> None:
        self.run.close()
