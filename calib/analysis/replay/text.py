"""What `calib replay` prints: one sentence per agent × rule of a summary (`replay_lines`), and the
report as text and JSON (`ReplayReport`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from calib.analysis.replay.plan import WindowPlan
from calib.analysis.sweep import ThresholdSweep
from calib.scoring.score import summary_records


def _tokens(n: int, what: str, low: float | None, mid: float | None, high: float | None) -> str:
    """`3 early (by 120-4,500 tokens, median 800)`: events and how far from the threshold they were."""
    if n == 0 or low is None or high is None:
        return f"{n} {what}"
    if round(low) == round(high):
        return f"{n} {what} (by {low:,.0f} tokens)"
    middle = f", median {mid:,.0f}" if n > 2 and mid is not None else ""
    return f"{n} {what} (by {low:,.0f}-{high:,.0f} tokens{middle})"


def _window_label(row: Mapping[str, Any]) -> str:
    kind = row["window_kind"]
    if kind == "fixed":
        return f"{row['window_max']:,}-token windows" if row.get("window_max") else "fixed windows"
    return f"{kind} windows"


_EVENT_FIGURES = (
    "early_fires",
    "early_by_min",
    "early_by_p50",
    "early_by_max",
    "late_events",
    "late_by_min",
    "late_by_p50",
    "late_by_max",
    "on_time",
    "missed_events",
    "refused_events",
)


def replay_lines(summary: pl.DataFrame | Sequence[Mapping[str, Any]], policy: str | None = None) -> list[str]:
    """One sentence per agent × rule (× estimator, where the estimators' events differ) of a replay
    summary, under `policy` (default `raw` if replayed, else the first): how many compactions would
    fire early and how many requests would go over the threshold first (late), by how many tokens, e.g.
    `gemini-cli: gemini-cli rule, what-if windows, any estimator: 0 early, 2 late (by 35-410 tokens)`."""
    rows = summary.to_dicts() if isinstance(summary, pl.DataFrame) else [dict(r) for r in summary]
    if not rows:
        return []
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    chosen = policy or ("raw" if "raw" in policies else policies[0])
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        if r["policy"] == chosen and r["calls"]:
            groups.setdefault((r["agent"], r["rule"], r["window_kind"]), []).append(r)
    lines: list[str] = []
    for group in groups.values():
        # estimators with the same events (the rule reads the provider's count) share one line
        alike: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for r in group:
            alike.setdefault(tuple(r[k] for k in _EVENT_FIGURES), []).append(r)
        for same in alike.values():
            r = same[0]
            if len(same) == len(group) and (len(group) > 1 or not r["uses_estimator"]):
                name = "any estimator"
            else:
                name = ", ".join(x["estimator"] for x in same)
            rule = f"{r['rule']} rule" + ("" if r["own"] else " (not its own)")
            parts = [
                _tokens(r["early_fires"], "early", r["early_by_min"], r["early_by_p50"], r["early_by_max"]),
                _tokens(r["late_events"], "late", r["late_by_min"], r["late_by_p50"], r["late_by_max"]),
            ]
            if r["on_time"]:
                parts.append(f"{r['on_time']} on time")
            if r["missed_events"]:
                parts.append(f"{r['missed_events']} missed")
            if r["refused_events"]:
                parts.append(f"{r['refused_events']} refused")
            lines.append(f"{r['agent']}: {rule}, {_window_label(r)}, {name}: {', '.join(parts)}")
    return lines


@dataclass
class ReplayReport:
    """What `calib replay` prints: the summary, the windows and rules used, and unknown models."""

    summary: pl.DataFrame
    estimators: list[str]
    rules: list[dict[str, Any]]
    policies: list[str]
    windows: dict[str, dict[str, int | None]]
    unknown_models: list[str] = field(default_factory=list)
    plan: WindowPlan | None = None
    sweep: ThresholdSweep | None = None  # `calib replay --threshold`

    def lines(self) -> list[str]:
        """The per-rule sentences (`replay_lines`)."""
        return replay_lines(self.summary)

    def windows_line(self) -> str:
        """Which windows were used, and why, in one line."""
        return self.plan.describe() if self.plan is not None else "windows: each model's own"

    def to_dict(self) -> dict[str, Any]:
        """The report as one JSON document (floats rounded, NaN as null)."""
        return {
            "estimators": self.estimators,
            "rules": self.rules,
            "policies": self.policies,
            "windows": self.windows,
            "window": self.plan.to_dict() if self.plan is not None else None,
            "unknown_models": self.unknown_models,
            "lines": self.lines(),
            "summary": summary_records(self.summary),
            **({"thresholds": self.sweep.to_dict()} if self.sweep is not None else {}),
        }
