"""`calib report`: write a report folder (`summary.json`, `report.md`, PNG figures, a fitted
`calibration.json`) and, given a baseline, judge it with the regression gate.

The report's data is built by `calib.analysis.build`, its markdown rendered by `calib.analysis.markdown`,
its summary's text and file names are `calib.analysis.summary`'s, and its figures are drawn by
`calib.analysis.plots` (matplotlib, loaded only when a figure is drawn). The folder is written whole:
built beside `--out` and swapped in at the end, replacing only an empty folder or an earlier report
(`calib.core.outputs`).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Sequence
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
    SAVINGS_FIGURE,
    SUMMARY_FILE,
    SUMMARY_FORMAT,
    dumps_summary,
    load_summary,
    savings_figure,
)
from calib.core.config import dumps as dumps_config
from calib.core.errors import UsageError
from calib.core.figures import round_figures
from calib.core.home import expand_home
from calib.core.outputs import OutputKind, check_output, output_folder, write_error
from calib.core.progress import Progress
from calib.importers import sniff_file
from calib.store import default_db_path
from calib.store.store import open_store

__all__ = ["ReportResult", "run_report", "write_report"]


# Every file a report folder may hold: an earlier report is replaced only when it holds nothing else.
REPORT_FILES = frozenset({SUMMARY_FILE, MARKDOWN_FILE, CONFIG_FILE, *FIGURES.values()})


def _foreign_report(folder: Path) -> str | None:
    """None when `folder` holds a report calib wrote and nothing else, else why not."""
    try:
        entries = sorted(p.name for p in folder.iterdir())
        summary = json.loads((folder / SUMMARY_FILE).read_bytes()) if SUMMARY_FILE in entries else None
    except (OSError, ValueError):
        summary = None
    if not isinstance(summary, dict) or summary.get("format") != SUMMARY_FORMAT:
        return "a folder that is not a calib report"
    stray = [name for name in entries if name not in REPORT_FILES and not SAVINGS_FIGURE.fullmatch(name)]
    if stray:
        return f"a calib report that also holds {stray[0]}, which calib did not write"
    return None


# `calib report --out`: a folder, replaced whole.
REPORT_OUTPUT = OutputKind(
    "the report",
    _foreign_report,
    hint="name a new or empty folder, or one `calib report` wrote",
    folder=True,
)


def write_report(
    report: Report,
    out: str | os.PathLike[str],
    *,
    figures: bool = True,
    store: str | os.PathLike[str] | None = None,
) -> list[str]:
    """Write `summary.json`, `report.md`, the PNG figures and (for a fitted calibration)
    `calibration.json` into `out`; returns the file names written, in order.

    `out` must be new, empty or an earlier report (else `UsageError`), and not the store `store`. The
    report is built in a folder beside it and replaces it whole at the end: if anything fails, `out`
    is as it was and the error names the file."""
    if figures:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UsageError(
                "figures need matplotlib, which is not installed",
                hint="pip install 'calib[report]', or pass --no-figures",
            ) from None
    target = expand_home(out)
    with output_folder(target, REPORT_OUTPUT, store=store, sniff=sniff_file) as work:
        names = _write_files(report, work, target, figures=figures)
    return names


def _write_files(report: Report, work: Path, target: Path, *, figures: bool) -> list[str]:
    """Write the report's files into `work`, the folder that becomes `target`."""
    written: list[str] = []
    summary = report.summary
    names: list[str] = []
    drawn = _figures(report) if figures else {}
    for key, draw in drawn.items():
        name = FIGURES[key] if key in FIGURES else savings_figure(key.removeprefix(_SAVINGS))
        _write(work, target, name, functools.partial(plots.save_figure, draw()))
        names.append(name)
    summary["figures"] = names
    if report.config is not None and (summary.get("calibration") or {}).get("source") == "fitted":
        _write(work, target, CONFIG_FILE, _text(dumps_config(report.config)))
        written.append(CONFIG_FILE)
    _write(work, target, SUMMARY_FILE, _text(dumps_summary(summary)))
    _write(work, target, MARKDOWN_FILE, _text(render_markdown(summary)))
    return [SUMMARY_FILE, MARKDOWN_FILE, *written, *names]


def _figures(report: Report) -> dict[str, Callable[[], Any]]:
    """The report's figures, by their key in `FIGURES`, each as the call that draws it."""
    summary = report.summary
    least = summary["min_figure_calls"]
    estimators = summary["estimators"]
    drawn: dict[str, Callable[[], Any]] = {
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
    for timeline in (summary.get("savings") or {}).get("timelines", []):
        drawn[_SAVINGS + timeline["agent"]] = functools.partial(plots.removal_timeline, timeline)
    if report.timeline is not None:
        timeline = report.timeline
        info = summary["replay"].get("timeline") or {"session": _short(summary["replay"]["timeline_session"])}
        title, subtitle = timeline_caption(info)
        drawn["replay"] = lambda: plots.replay_timeline(timeline, title=title, subtitle=subtitle)
    return drawn


# The key of an agent's removal timeline among the figures drawn: this prefix and the agent.
_SAVINGS = "savings:"


def _text(text: str) -> Callable[[Path], object]:
    """Writes `text` as UTF-8 with newlines as they are, to the path it is given."""
    return lambda path: path.write_text(text, encoding="utf-8", newline="\n")


def _write(work: Path, target: Path, name: str, write: Callable[[Path], object]) -> None:
    """`write` the file `name` into `work`; a failure is an error naming the file `target / name`."""
    try:
        write(work / name)
    except OSError as exc:
        raise write_error(exc, target / name) from None


def _short(text: str, limit: int = 48) -> str:
    """A long session uid cut in the middle, for a figure title."""
    return text if len(text) <= limit else text[: limit // 2 - 1] + "…" + text[-(limit // 2) :]


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
    out = expand_home(out)  # a `~user` naming nobody fails here, before any work
    reference = load_summary(baseline) if baseline is not None else None  # fail early on a bad file
    store_path = expand_home(db) if db is not None else default_db_path()
    check_output(out, REPORT_OUTPUT, store=store_path, sniff=sniff_file)  # before the work, not after
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
    files = write_report(report, out, figures=figures, store=store_path)
    gate = None
    if reference is not None:
        gate = compare(
            report.summary,
            reference,
            max_regression=DEFAULT_MAX_REGRESSION if max_regression is None else max_regression,
            fail_on_new_group=fail_on_new_group,
        )
    return ReportResult(out=str(out), files=files, summary=report.summary, gate=gate)
