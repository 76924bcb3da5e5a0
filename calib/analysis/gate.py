"""The regression gate: compare a report's `summary.json` with a baseline committed earlier.

Groups are matched by (estimator, provider, model) over the `groups` of both summaries. For each
matched group four figures are compared, each of which is better when lower:

- `delta_mae`: mean |estimate - actual delta| over the scored calls, tokens;
- `ctx_err_p90`: 90th percentile of |predicted - actual context| / actual context over the scored
  calls (incremental calls whose chain holds);
- `e2e_err_p90`: the same percentile end to end: over every call with usage, each predicted as an
  agent would (from the previous call's usage, or the whole prompt plus the fitted static overhead
  where nothing precedes), chain breaks included;
- `bias_error`: |delta_bias - 1|, how far the sum of estimates is from the sum of actual deltas.

A figure regresses when it got worse (higher) by more than `max_regression` percent of the baseline
figure *and* by more than the metric's noise floor (`NOISE_FLOORS`: half a token of MAE, 0.001% of
context for either context error, 0.005 of bias), so a zero or tiny baseline does not turn rounding
into a failure. A figure the baseline has and the new summary has not (null, or not a finite number:
the group lost its scored or end-to-end calls, or an estimate overflowed) is a regression too, on its
own line, whether one figure of a group is gone or all of them. A figure the baseline lacks (it had no
such calls) and the new summary has is listed as new and never fails the gate. A group that is new (no
baseline) fails the gate only with `fail_on_new_group`; a group that disappeared is reported and never
fails it. Improvements are counted, not printed one by one: update the baseline to lock them in.

`load_summary` (reading a `summary.json` and checking it is one) is `calib.analysis.summary`'s. A
malformed baseline (a group without `estimator`, `calls` or `e2e_calls`, a figure missing, null where
the group had the calls it is computed over, or not a number) is a `BaselineError` naming the field,
never a pass; a baseline written before the end-to-end figures existed is one, to be regenerated.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

from calib.analysis.summary import GATED_FIGURES, check_summary, load_summary
from calib.core.errors import UsageError

__all__ = [
    "DEFAULT_MAX_REGRESSION",
    "GATE_METRICS",
    "NOISE_FLOORS",
    "GateResult",
    "Regression",
    "compare",
    "compare_files",
    "compare_summaries",
]

DEFAULT_MAX_REGRESSION = 5.0  # percent
GATE_METRICS: tuple[str, ...] = ("delta_mae", "ctx_err_p90", "e2e_err_p90", "bias_error")
NOISE_FLOORS: dict[str, float] = {
    "delta_mae": 0.5,
    "ctx_err_p90": 1e-5,
    "e2e_err_p90": 1e-5,
    "bias_error": 0.005,
}
# The summary fields the metrics are read from (`bias_error` from `delta_bias`), checked in a baseline.
assert set(GATED_FIGURES) == {"delta_bias" if m == "bias_error" else m for m in GATE_METRICS}

Key = tuple[str, str | None, str | None]


def _key(group: dict[str, Any]) -> Key:
    return (group["estimator"], group.get("provider"), group.get("model"))


def _name(key: Key) -> str:
    estimator, provider, model = key
    return f"{estimator} {provider or '?'}/{model or '?'}"


def _figure(group: dict[str, Any], metric: str) -> float | None:
    """A group's figure for `metric`; None when it has none (null, NaN or infinite are all "no figure")."""
    raw = group.get("delta_bias" if metric == "bias_error" else metric)
    if raw is None:
        return None
    value = float(raw)
    if not math.isfinite(value):
        return None
    return abs(value - 1.0) if metric == "bias_error" else value


def _fmt(metric: str, value: float | None) -> str:
    if value is None:
        return "null"
    percent = metric in ("ctx_err_p90", "e2e_err_p90")
    shown = value * 100 if percent else value
    if abs(shown) >= 1e9:  # an absurd figure reads better in powers of ten than as 200 digits
        text = f"{shown:.4g}"
    else:
        text = f"{shown:.4f}" if percent or metric != "delta_mae" else f"{shown:.2f}"
    return f"{text}%" if percent else text


@dataclass(frozen=True, slots=True)
class Regression:
    """One figure of one group that got worse beyond the tolerance, or is gone (`current` None)."""

    estimator: str
    provider: str | None
    model: str | None
    metric: str
    baseline: float
    current: float | None

    @property
    def change_pct(self) -> float | None:
        """Relative worsening in percent (None when the baseline is zero or the figure is gone)."""
        if self.current is None or self.baseline == 0:
            return None
        return (self.current - self.baseline) / abs(self.baseline) * 100

    def line(self, limit: float) -> str:
        """The one-line message the gate prints."""
        pct = self.change_pct
        if self.current is None:
            change = "the figure is gone"
        elif pct is None:
            change = "from zero"
        else:
            change = f"{pct:+.3g}%" if abs(pct) >= 1e9 else f"{pct:+.1f}%"
        return (
            f"worse: {_name((self.estimator, self.provider, self.model))} {self.metric} "
            f"{_fmt(self.metric, self.baseline)} -> {_fmt(self.metric, self.current)} "
            f"({change}, limit +{limit:g}%)"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        pct = self.change_pct
        return {
            "estimator": self.estimator,
            "provider": self.provider,
            "model": self.model,
            "metric": self.metric,
            "baseline": self.baseline,
            "current": self.current,
            "change_pct": None if pct is None else round(pct, 3),
        }


@dataclass
class GateResult:
    """The verdict: regressions, groups new or gone, and how many figures were compared."""

    max_regression: float
    fail_on_new_group: bool
    compared: int = 0  # figures compared
    groups: int = 0  # groups matched
    improved: int = 0  # figures better beyond the same tolerance
    regressions: list[Regression] = field(default_factory=list)
    new_groups: list[Key] = field(default_factory=list)
    missing_groups: list[Key] = field(default_factory=list)
    new_figures: list[Key] = field(default_factory=list)  # a figure the baseline had no calls for

    @property
    def passed(self) -> bool:
        """True when nothing regressed (and no new group appeared, if that fails the gate)."""
        return not self.regressions and not (self.fail_on_new_group and self.new_groups)

    def lines(self) -> list[str]:
        """What the gate prints: one line per regression, new or missing group, then the verdict."""
        out = [r.line(self.max_regression) for r in self.regressions]
        verb = "new group (fails the gate)" if self.fail_on_new_group else "new group (no baseline)"
        out += [f"{verb}: {_name(k)}" for k in self.new_groups]
        out += [f"missing group (in the baseline only): {_name(k)}" for k in self.missing_groups]
        out += [
            f"figures new since the baseline (it had no calls for them): {_name(k)}" for k in self.new_figures
        ]
        verdict = "PASS" if self.passed else "FAIL"
        out.append(
            f"gate {verdict}: {len(self.regressions)} regressions in {self.compared} figures of "
            f"{self.groups} groups (limit +{self.max_regression:g}%), {self.improved} improved, "
            f"{len(self.new_groups)} new groups, {len(self.missing_groups)} missing"
        )
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (part of `calib report --json`)."""

        def keys(items: list[Key]) -> list[dict[str, Any]]:
            return [{"estimator": e, "provider": p, "model": m} for e, p, m in items]

        return {
            "passed": self.passed,
            "max_regression": self.max_regression,
            "fail_on_new_group": self.fail_on_new_group,
            "metrics": list(GATE_METRICS),
            "compared": self.compared,
            "groups": self.groups,
            "improved": self.improved,
            "regressions": [r.to_dict() for r in self.regressions],
            "new_groups": keys(self.new_groups),
            "missing_groups": keys(self.missing_groups),
            "new_figures": keys(self.new_figures),
        }


def _sort_key(key: Key) -> tuple[str, str, str]:
    return (key[0], key[1] or "", key[2] or "")


def compare(
    current: dict[str, Any],
    baseline: dict[str, Any],
    *,
    max_regression: float = DEFAULT_MAX_REGRESSION,
    fail_on_new_group: bool = False,
) -> GateResult:
    """Compare two report summaries group by group (see the module docstring for the rule)."""
    if max_regression < 0:
        raise UsageError(f"--max-regression must be >= 0, got {max_regression}")
    # A baseline figure that is null or missing where there were calls is an error, never a pass
    # (`load_summary` has checked a baseline read from a file already, naming the file).
    check_summary(baseline)
    now = {_key(g): g for g in current.get("groups", [])}
    before = {_key(g): g for g in baseline.get("groups", [])}
    result = GateResult(max_regression=max_regression, fail_on_new_group=fail_on_new_group)
    result.new_groups = sorted(set(now) - set(before), key=_sort_key)
    result.missing_groups = sorted(set(before) - set(now), key=_sort_key)
    tolerance = max_regression / 100
    for key in sorted(set(now) & set(before), key=_sort_key):
        result.groups += 1
        appeared = False
        for metric in GATE_METRICS:
            old, new = _figure(before[key], metric), _figure(now[key], metric)
            if old is None:
                appeared = appeared or new is not None
                continue
            result.compared += 1
            if new is None:  # it was there and is not now: never a pass
                result.regressions.append(Regression(key[0], key[1], key[2], metric, old, None))
                continue
            change = new - old
            limit = max(tolerance * abs(old), NOISE_FLOORS[metric])
            if change > limit:
                result.regressions.append(Regression(key[0], key[1], key[2], metric, old, new))
            elif -change > limit:
                result.improved += 1
        if appeared:
            result.new_figures.append(key)
    return result


def compare_files(
    current: str | os.PathLike[str],
    baseline: str | os.PathLike[str],
    *,
    max_regression: float = DEFAULT_MAX_REGRESSION,
    fail_on_new_group: bool = False,
) -> GateResult:
    """`compare` on two `summary.json` files."""
    return compare(
        load_summary(current),
        load_summary(baseline),
        max_regression=max_regression,
        fail_on_new_group=fail_on_new_group,
    )


# The package exports `compare` under this clearer name.
compare_summaries = compare
