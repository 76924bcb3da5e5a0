"""A report's `summary.json`: its format, its canonical text, the files it names, and reading it back.

The summary is what `calib report` gathers (`calib.analysis.build`) and what the markdown, the figures
and the regression gate (`calib.analysis.gate`) read. Its text is canonical: keys sorted, two-space
indent, UTF-8, figures rounded by `calib.core.figures.round_figures`, final newline.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any

from calib.core.errors import BaselineError
from calib.core.figures import round_figures
from calib.core.home import expand_home
from calib.core.jsonfile import read_json_file

__all__ = [
    "CONFIG_FILE",
    "FIGURES",
    "FIGURE_CALLS",
    "GATED_FIGURES",
    "MARKDOWN_FILE",
    "SAVINGS_FIGURE",
    "SUMMARY_FILE",
    "SUMMARY_FORMAT",
    "check_summary",
    "dumps_summary",
    "load_summary",
    "savings_figure",
]

SUMMARY_FORMAT = "calib-report/1"

# The files of a report folder. A summary names its figures (`figures`) and a fitted calibration
# (`calibration.config`) by these names, never by path.
SUMMARY_FILE = "summary.json"
MARKDOWN_FILE = "report.md"
CONFIG_FILE = "calibration.json"
FIGURES = {
    "models": "per_model_error.png",
    "position": "error_by_context_size.png",
    "distribution": "error_distribution.png",
    "predicted": "predicted_vs_actual.png",
    "kinds": "content_kinds.png",
    "breaks": "breaks.png",
    "before_after": "before_after.png",
    "replay": "replay_timeline.png",
}
# Each agent's removal timeline (`savings.timelines`): one figure per agent, named after it.
SAVINGS_FIGURE = re.compile(r"savings_[a-z0-9-]+\.png")


def savings_figure(agent: str) -> str:
    """The file name of an agent's removal timeline (it matches `SAVINGS_FIGURE`)."""
    return "savings_" + (re.sub(r"[^a-z0-9-]+", "-", agent.lower()).strip("-") or "agent") + ".png"


def dumps_summary(summary: dict[str, Any]) -> str:
    """The canonical text of a summary: sorted keys, two-space indent, UTF-8, final newline."""
    return (
        json.dumps(round_figures(summary), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
        + "\n"
    )


# The group figures the regression gate reads (`calib.analysis.gate` judges `delta_bias` by its distance
# from 1), each with the count of calls it is computed over: the scored figures over `calls`, the
# end-to-end one over `e2e_calls`. A group with such calls has the figure as a number; one without any
# has it null.
GATED_FIGURES = ("delta_mae", "ctx_err_p90", "delta_bias", "e2e_err_p90")
FIGURE_CALLS: dict[str, str] = {
    "delta_mae": "calls",
    "ctx_err_p90": "calls",
    "delta_bias": "calls",
    "e2e_err_p90": "e2e_calls",
}
_CALLS_NAMES = {"calls": "scored calls", "e2e_calls": "end-to-end calls"}
_REGENERATE = "regenerate it with `calib report` (the summary.json it writes)"
# What a missing end-to-end field means: the baseline was written before calib gated on it.
_OLDER = "is missing (the baseline predates the end-to-end figures)"


def load_summary(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a report's `summary.json` (the baseline), checking it is one (`check_summary`).

    Every problem raises `BaselineError` (a usage error: exit code 2) naming the file and, for a
    malformed group, the field.
    """
    target = expand_home(path)
    _, doc = read_json_file(
        target,
        "the baseline",
        hint="commit a summary.json written by `calib report`",
        fix=_REGENERATE,
        error=BaselineError,
    )
    if (
        not isinstance(doc, dict)
        or doc.get("format") != SUMMARY_FORMAT
        or not isinstance(doc.get("groups"), list)
    ):
        raise BaselineError(
            f"not a calib report summary (expected format {SUMMARY_FORMAT!r})",
            path=str(target),
            hint="pass the summary.json that `calib report` wrote",
        )
    check_summary(doc, str(target))
    return doc


def check_summary(doc: dict[str, Any], path: str | None = None) -> None:
    """Check the `groups` of a summary the gate compares; raise `BaselineError` naming the bad field.

    Each group is an object with a string `estimator`, string-or-null `provider` and `model`, and for
    every figure of `GATED_FIGURES` its count of calls (`FIGURE_CALLS`: `calls` for the scored figures,
    `e2e_calls` for the end-to-end one) as an integer and the figure as a finite number, or null when
    that count is 0. A figure null or missing where there were calls would otherwise pass the gate
    unseen; a baseline written before calib reported a figure lacks it and has to be regenerated.
    """
    groups = doc.get("groups")
    if not isinstance(groups, list):
        raise BaselineError("malformed baseline: `groups` is not a list", path=path, hint=_REGENERATE)
    for index, group in enumerate(groups):
        where = f"groups[{index}]"

        def bad(field: str, what: str, where: str = where) -> BaselineError:
            return BaselineError(f"malformed baseline: {where}.{field} {what}", path=path, hint=_REGENERATE)

        if not isinstance(group, dict):
            raise BaselineError(f"malformed baseline: {where} is not an object", path=path, hint=_REGENERATE)
        estimator = group.get("estimator")
        if not isinstance(estimator, str) or not estimator:
            raise bad("estimator", "is missing" if estimator is None else "is not a name")
        for key in ("provider", "model"):
            if not isinstance(group.get(key), str | None):
                raise bad(key, "is not a string or null")
        counts: dict[str, int] = {}
        for key in dict.fromkeys(FIGURE_CALLS[figure] for figure in GATED_FIGURES):
            if key not in group:
                raise bad(key, "is missing" if key == "calls" else _OLDER)
            value = group[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise bad(key, f"is not a count of calls ({json.dumps(value)})")
            counts[key] = value
        for figure in GATED_FIGURES:
            if figure not in group:
                raise bad(figure, "is missing" if FIGURE_CALLS[figure] == "calls" else _OLDER)
            value = group[figure]
            if value is None:
                calls = counts[FIGURE_CALLS[figure]]
                if calls:
                    raise bad(figure, f"is null in a group of {calls} {_CALLS_NAMES[FIGURE_CALLS[figure]]}")
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise bad(figure, f"is not a number ({json.dumps(value)})")
