"""`calib fit`, the main job: ingest -> score -> fit -> export -> summary, in one function."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from calib.calibration.export import export_config
from calib.calibration.fit import DEFAULT_BASE, Calibrator
from calib.core.errors import UsageError
from calib.core.figures import round_figures
from calib.core.progress import Progress
from calib.estimators.calibrated import CalibratedEstimator
from calib.ingest.pipeline import ingest as run_ingest
from calib.ingest.result import IngestResult
from calib.ingest.sources import default_paths
from calib.scoring.chain import HOLDOUT_FRACTION, features
from calib.scoring.score import score_frame, summarise
from calib.store.store import open_store

DEFAULT_OUT = "calibration.json"

# Figures compared before (the base estimator as it is) and after calibration, on held-out sessions:
# the scored ones (incremental calls whose chain holds) and the end-to-end ones (every call with usage,
# each predicted as an agent would, breaks included; the full-prompt family among them).
BEFORE_AFTER_FIGURES = (
    "delta_mae",
    "delta_bias",
    "ctx_err_p50",
    "ctx_err_p90",
    "ctx_err_p99",
    "e2e_err_p50",
    "e2e_err_p90",
    "e2e_err_p99",
    "full_err_p50",
    "full_err_p90",
)


@dataclass
class FitReport:
    """What `calib fit` did: the ingest, the calls used, the config written and held-out figures."""

    base: str
    before: str  # the estimator the calibration is compared with: the base, uncalibrated
    out: str | None
    config: dict[str, Any]
    train_calls: int
    holdout_calls: int
    holdout_sessions: int
    rows: list[dict[str, Any]] = field(default_factory=list)  # per provider/model, before vs after
    ingest: IngestResult | None = None

    def to_dict(self) -> dict[str, Any]:
        """The `calib fit --json` document."""
        return {
            "base": self.base,
            "before": self.before,
            "out": self.out,
            "train_calls": self.train_calls,
            "holdout_calls": self.holdout_calls,
            "holdout_sessions": self.holdout_sessions,
            "models": self.rows,
            "ingest": self.ingest.to_dict() if self.ingest is not None else None,
            "config": self.config,
        }


def run_fit(
    paths: Sequence[str | os.PathLike[str]] = (),
    *,
    db: str | os.PathLike[str] | None = None,
    base: str = DEFAULT_BASE,
    out: str | os.PathLike[str] | None = DEFAULT_OUT,
    holdout_fraction: float = HOLDOUT_FRACTION,
    ingest: bool = True,
    format: str | None = None,
    progress: Progress | None = None,
    **params: Any,
) -> FitReport:
    """Ingest `paths` (or the agents' default folders), fit a calibration of `base` on the training
    sessions, write the config to `out` (None: do not write) and compare the base with its
    calibration on the held-out sessions, per provider and model."""
    if not 0 <= holdout_fraction < 1:
        raise UsageError(f"holdout fraction must be in [0, 1), got {holdout_fraction}")
    if base.startswith("calibrated:"):
        raise UsageError(
            "a calibrated estimator cannot be the base of a calibration", hint="use e.g. --base charclass"
        )
    calibrator = Calibrator(base, holdout_fraction=holdout_fraction, **params)
    before = base  # the base as it is, against its calibration
    with open_store(db) as store:
        ingested = None
        if ingest and (paths or default_paths()):
            ingested = run_ingest(paths, store=store, format=format, progress=progress)
        elif paths:
            raise UsageError("paths given with ingest turned off", hint="drop the paths or allow ingest")
        sources = sorted({*calibrator.sources, before})
        frame = features(store, sources, progress=progress, holdout_fraction=holdout_fraction)
    train = frame.filter(~pl.col("holdout"))
    held = frame.filter(pl.col("holdout"))
    if train.filter(pl.col("status") == "ok").is_empty():
        raise UsageError(
            "no scorable calls to fit on (every call is a baseline, a chain break or held out)",
            hint="ingest more sessions, or lower --holdout",
        )
    calibrator.fit(train)
    config = export_config(calibrator, out)
    # compare on the held-out sessions (on the training ones when nothing is held out)
    check = held if holdout_fraction > 0 else train
    scored = pl.concat(
        [score_frame(check, before), score_frame(check, f"calibrated:{base}", calibrator)],
        how="vertical_relaxed",
    )
    summary = summarise(scored)
    groups = {(p, m) for p, m in frame.select("provider", "model").unique().iter_rows()}
    rows = round_figures(before_after(summary, before, f"calibrated:{base}", calibrator, groups))
    ok = pl.col("status") == "ok"
    return FitReport(
        base=base,
        before=before,
        out=str(Path(out)) if out is not None else None,
        config=config,
        train_calls=train.filter(ok).height,
        holdout_calls=held.filter(ok).height,
        holdout_sessions=held.select("session_uid").n_unique(),
        rows=rows,
        ingest=ingested,
    )


def before_after(
    summary: pl.DataFrame,
    before: str,
    after: str,
    calibration: Calibrator | CalibratedEstimator,
    groups: set[tuple[str | None, str | None]] | None = None,
) -> list[dict[str, Any]]:
    """Per (provider, model), the figures of `before` and `after` side by side from a `summarise`
    frame, with the config level whose parameters apply; `groups` (default: those in `summary`) are
    listed in provider and model order, a group without scored calls with its figures None."""
    keyed = {(r["estimator"], r["provider"], r["model"]): r for r in summary.to_dicts()}
    if groups is None:
        groups = {(p, m) for _, p, m in keyed}
    rows = []
    for provider, model in sorted(groups, key=lambda k: (k[0] or "", k[1] or "")):
        b = keyed.get((before, provider, model), {})
        a = keyed.get((after, provider, model), {})
        row: dict[str, Any] = {
            "provider": provider,
            "model": model,
            "calls": a.get("calls", 0),
            "e2e_calls": a.get("e2e_calls", 0),
            "coverage": a.get("coverage"),
            "level": calibration.for_group(provider, model).level,
        }
        for figure in BEFORE_AFTER_FIGURES:
            row[f"{figure}_before"] = b.get(figure)
            row[f"{figure}_after"] = a.get(figure)
        rows.append(row)
    return rows
