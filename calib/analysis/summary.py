"""A report's `summary.json`: its format, its canonical text, the files it names, and reading it back.

The summary is what `calib report` gathers (`calib.analysis.build`) and what the markdown, the figures
and the regression gate (`calib.analysis.gate`) read. Its text is canonical: keys sorted, two-space
indent, UTF-8, figures rounded by `calib.core.figures.round_figures`, final newline.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from calib.core.errors import InputError
from calib.core.figures import round_figures

__all__ = [
    "CONFIG_FILE",
    "FIGURES",
    "MARKDOWN_FILE",
    "SUMMARY_FILE",
    "SUMMARY_FORMAT",
    "dumps_summary",
    "load_summary",
]

SUMMARY_FORMAT = "calib-report/1"

# The files of a report folder. A summary names its figures (`figures`) and a fitted calibration
# (`calibration.config`) by these names, never by path.
SUMMARY_FILE = "summary.json"
MARKDOWN_FILE = "report.md"
CONFIG_FILE = "calibration.json"
FIGURES = {
    "distribution": "error_distribution.png",
    "predicted": "predicted_vs_actual.png",
    "kinds": "content_kinds.png",
    "breaks": "breaks.png",
    "before_after": "before_after.png",
    "replay": "replay_timeline.png",
}


def dumps_summary(summary: dict[str, Any]) -> str:
    """The canonical text of a summary: sorted keys, two-space indent, UTF-8, final newline."""
    return (
        json.dumps(round_figures(summary), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
        + "\n"
    )


def load_summary(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a report's `summary.json` (the baseline), checking it is one."""
    target = Path(path)
    try:
        text = target.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(
            f"cannot read the baseline: {exc.strerror}",
            path=str(target),
            hint="commit a summary.json written by `calib report`",
        ) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"the baseline is not valid JSON: {exc.msg}", path=str(target), line=exc.lineno
        ) from None
    if (
        not isinstance(doc, dict)
        or doc.get("format") != SUMMARY_FORMAT
        or not isinstance(doc.get("groups"), list)
    ):
        raise InputError(
            f"not a calib report summary (expected format {SUMMARY_FORMAT!r})",
            path=str(target),
            hint="pass the summary.json that `calib report` wrote",
        )
    return doc
