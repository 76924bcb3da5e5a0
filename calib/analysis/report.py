"""`calib report`: write a report folder (`summary.json`, `report.md`, PNG figures, a fitted
`calibration.json`) and, given a baseline, judge it with the regression gate.

The report's data is built by `calib.analysis.build`, its markdown rendered by `calib.analysis.markdown`,
its summary's text and file names are `calib.analysis.summary`'s, and its figures are drawn by
`calib.analysis.plots` (matplotlib, loaded only when a figure is drawn).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from calib.analysis import plots
from calib.analysis.build import Report, build_report
from calib.analysis.content import CONTENT_KINDS
from calib.analysis.gate import DEFAULT_MAX_REGRESSION, GateResult, compare
from calib.analysis.markdown import render_markdown
from calib.analysis.replay import timeline_caption
from calib.analysis.summary import (
    CONFIG_FILE,
    FIGURES,
    MARKDOWN_FILE,
    SUMMARY_FILE,
    dumps_summary,
    load_summary,
)
from calib.core.config import dumps as dumps_config
from calib.core.errors import UsageError
from calib.core.figures import round_figures
from calib.core.progress import Progress
from calib.store.store import open_store

__all__ = ["ReportResult", "run_report", "write_report"]


def write_report(report: Report, out: str | os.PathLike[str], *, figures: bool = True) -> list[str]:
    """Write `summary.json`, `report.md`, the PNG figures and (for a fitted calibration)
    `calibration.json` into `out`; returns the file names written, in order."""
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    summary = report.summary
    names: list[str] = []
    if figures:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UsageError(
                "figures need matplotlib, which is not installed",
                hint="pip install 'calib[report]', or pass --no-figures",
            ) from None
        least = summary["min_figure_calls"]
        estimators = summary["estimators"]
        drawn = {
            "models": lambda: plots.model_error(
                pl.DataFrame(summary["model_error"], infer_schema_length=None),
                estimators=estimators,
                min_calls=least,
            ),
            "position": lambda: plots.position_error(
                pl.DataFrame(summary["position_error"], infer_schema_length=None),
                estimators=estimators,
                min_calls=least,
                min_delta=summary["min_delta"],
            ),
            "distribution": lambda: plots.error_distribution(
                report.scores, min_delta=summary["min_delta"], note=report.sample_note
            ),
            "predicted": lambda: plots.predicted_vs_actual(report.scores, note=report.sample_note),
            "kinds": lambda: plots.content_kind_bias(
                pl.DataFrame(summary["content_kinds"], infer_schema_length=None),
                order=CONTENT_KINDS,
                estimators=estimators,
                min_calls=least,
            ),
            "breaks": lambda: plots.breaks_by_reason(pl.DataFrame(summary["breaks"])),
        }
        if summary.get("before_after") is not None:
            calibration = summary["calibration"]
            drawn["before_after"] = lambda: plots.before_after(
                pl.DataFrame(summary["before_after"]),
                base=calibration["base"],
                calibrated=calibration["label"],
            )
        if report.timeline is not None:
            timeline = report.timeline
            info = summary["replay"].get("timeline") or {
                "session": _short(summary["replay"]["timeline_session"])
            }
            title, subtitle = timeline_caption(info)
            drawn["replay"] = lambda: plots.replay_timeline(timeline, title=title, subtitle=subtitle)
        for key, draw in drawn.items():
            fig = draw()
            plots.save_figure(fig, target / FIGURES[key])
            names.append(FIGURES[key])
    summary["figures"] = names
    if report.config is not None and (summary.get("calibration") or {}).get("source") == "fitted":
        (target / CONFIG_FILE).write_text(dumps_config(report.config), encoding="utf-8")
        written.append(CONFIG_FILE)
    _write_text(target / SUMMARY_FILE, dumps_summary(summary))
    _write_text(target / MARKDOWN_FILE, render_markdown(summary))
    return [SUMMARY_FILE, MARKDOWN_FILE, *written, *names]


def _short(text: str, limit: int = 48) -> str:
    """A long session uid cut in the middle, for a figure title."""
    return text if len(text) <= limit else text[: limit // 2 - 1] + "…" + text[-(limit // 2) :]


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8", newline="\n")
    os.replace(tmp, path)


# -- the command ----------------------------------------------------------------------------------


@dataclass
class ReportResult:
    """What `calib report` did: where it wrote, and the gate's verdict when a baseline was given."""

    out: str
    files: list[str]
    summary: dict[str, Any]
    gate: GateResult | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether the gate found a regression (exit code 1)."""
        return self.gate is not None and not self.gate.passed

    def to_dict(self) -> dict[str, Any]:
        """The `calib report --json` document."""
        return {
            "out": self.out,
            "files": self.files,
            "gate": self.gate.to_dict() if self.gate is not None else None,
            "summary": round_figures(self.summary),
        }


def run_report(
    db: str | os.PathLike[str] | None = None,
    *,
    out: str | os.PathLike[str] = "report",
    estimators: Sequence[str] | None = None,
    config: str | os.PathLike[str] | None = None,
    fit: bool = False,
    base: str | None = None,
    figures: bool = True,
    replay_window: int | None = None,
    baseline: str | os.PathLike[str] | None = None,
    max_regression: float | None = None,
    fail_on_new_group: bool = False,
    progress: Progress | None = None,
) -> ReportResult:
    """`calib report`: build the report of a store, write it to `out`, and with `baseline` (an earlier
    `summary.json`) compare the two with `calib.analysis.gate.compare`."""
    reference = load_summary(baseline) if baseline is not None else None  # fail early on a bad file
    with open_store(db, read_only=True, persist=True) as store:
        report = build_report(
            store,
            estimators=estimators,
            config=config,
            fit=fit,
            base=base,
            replay_window=replay_window,
            progress=progress,
        )
    files = write_report(report, out, figures=figures)
    gate = None
    if reference is not None:
        gate = compare(
            report.summary,
            reference,
            max_regression=DEFAULT_MAX_REGRESSION if max_regression is None else max_regression,
            fail_on_new_group=fail_on_new_group,
        )
    return ReportResult(out=str(out), files=files, summary=report.summary, gate=gate)
