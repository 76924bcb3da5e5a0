"""The regression gate given a figure that was in the baseline and is null now: a regression with its own
line, exit 1, never a pass calling the group "on one side only"."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from faults.kit import json_of, run_calib, session_files, tree_hashes

from calib.analysis.gate import compare
from calib.analysis.summary import SUMMARY_FORMAT

FIGURES = {"delta_mae": 40.0, "delta_bias": 0.8, "ctx_err_p90": 0.01, "e2e_err_p90": 0.02}
NO_FIGURES = dict.fromkeys(FIGURES)


def _group(model: str = "m1", **fields: Any) -> dict[str, Any]:
    row = {"estimator": "chars4", "provider": "openai", "model": model, "calls": 100, "e2e_calls": 120}
    row.update(FIGURES)
    row.update(fields)
    return row


def _summary(*groups: dict[str, Any]) -> dict[str, Any]:
    return {"format": SUMMARY_FORMAT, "groups": list(groups)}


def test_a_group_whose_every_figure_is_null_now_fails_the_gate() -> None:
    base = _summary(_group(), _group("m2"))
    now = _summary(_group(calls=0, e2e_calls=0, **NO_FIGURES), _group("m2"))
    result = compare(now, base, max_regression=5)
    assert not result.passed
    assert [(r.model, r.metric, r.current) for r in result.regressions] == [
        ("m1", "delta_mae", None),
        ("m1", "ctx_err_p90", None),
        ("m1", "e2e_err_p90", None),
        ("m1", "bias_error", None),
    ]
    assert result.lines() == [
        "worse: chars4 openai/m1 delta_mae 40.00 -> null (the figure is gone, limit +5%)",
        "worse: chars4 openai/m1 ctx_err_p90 1.0000% -> null (the figure is gone, limit +5%)",
        "worse: chars4 openai/m1 e2e_err_p90 2.0000% -> null (the figure is gone, limit +5%)",
        "worse: chars4 openai/m1 bias_error 0.2000 -> null (the figure is gone, limit +5%)",
        "gate FAIL: 4 regressions in 8 figures of 2 groups (limit +5%), 0 improved, 0 new groups, 0 missing",
    ]
    regression = result.to_dict()["regressions"][0]
    assert (regression["current"], regression["change_pct"]) == (None, None)


def test_one_figure_gone_is_one_regression_and_a_figure_that_appears_is_not() -> None:
    base = _summary(_group(), _group("m2", calls=0, delta_mae=None, delta_bias=None, ctx_err_p90=None))
    now = _summary(_group(e2e_calls=0, e2e_err_p90=None), _group("m2"))
    result = compare(now, base)
    assert [(r.model, r.metric) for r in result.regressions] == [("m1", "e2e_err_p90")]
    assert result.new_figures == [("chars4", "openai", "m2")]
    assert "figures new since the baseline (it had no calls for them): chars4 openai/m2" in result.lines()
    assert result.lines()[-1].startswith("gate FAIL: 1 regressions in 5 figures of 2 groups")
    # with the figure back, the same comparison passes: the appearing figures never fail it
    assert compare(_summary(_group(), _group("m2")), base).passed


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_figure_that_is_not_a_number_now_counts_as_gone(value: float) -> None:
    # a summary built in memory, before its figures are rounded to null for summary.json
    result = compare(_summary(_group(delta_mae=value)), _summary(_group()))
    assert [(r.metric, r.current) for r in result.regressions] == [("delta_mae", None)]
    assert not result.passed


def _strip_usage(folder: Path, model: str) -> None:
    """The sessions of `model` as an agent that stopped recording token counts writes them."""
    for path in session_files(folder):
        lines = path.read_text(encoding="utf-8").splitlines()
        if not any(f'"model":"{model}"' in line for line in lines):
            continue
        out = []
        for line in lines:
            record = json.loads(line)
            if record.get("type") == "gemini":
                record.pop("tokens", None)
            out.append(json.dumps(record))
        path.write_text("\n".join(out) + "\n", encoding="utf-8")


def test_the_gate_fails_when_a_group_lost_every_figure(
    sessions: Path, store_copy: Path, tmp_path: Path
) -> None:
    # the baseline: the report of the four sessions as recorded (store_copy holds them)
    report = ["report", "-e", "chars4", "--no-figures"]
    base = run_calib(*report, "--db", store_copy, "--out", tmp_path / "base")
    assert base.returncode == 0, base.stderr
    baseline = tmp_path / "base" / "summary.json"
    figures = next(g for g in json.loads(baseline.read_text())["groups"] if g["model"] == "gemini-2.5-flash")
    assert all(figures[name] is not None for name in FIGURES)

    changed = tmp_path / "changed"
    shutil.copytree(sessions, changed)
    _strip_usage(changed, "gemini-2.5-flash")
    after = run_calib("ingest", changed, "--db", tmp_path / "after.duckdb", "-q")
    assert after.returncode == 0, after.stderr
    source = tree_hashes(baseline)
    gate = [*report, "--db", tmp_path / "after.duckdb", "--baseline", baseline, "--max-regression", "5"]
    result = run_calib(*gate, "--out", tmp_path / "now")
    assert result.returncode == 1, result.stdout
    lines = result.stdout.splitlines()
    assert [line for line in lines if line.startswith("worse: ")] == [
        f"worse: chars4 google/gemini-2.5-flash delta_mae {figures['delta_mae']:.2f} -> null "
        "(the figure is gone, limit +5%)",
        f"worse: chars4 google/gemini-2.5-flash ctx_err_p90 {figures['ctx_err_p90'] * 100:.4f}% -> null "
        "(the figure is gone, limit +5%)",
        f"worse: chars4 google/gemini-2.5-flash e2e_err_p90 {figures['e2e_err_p90'] * 100:.4f}% -> null "
        "(the figure is gone, limit +5%)",
        f"worse: chars4 google/gemini-2.5-flash bias_error {abs(figures['delta_bias'] - 1):.4f} -> null "
        "(the figure is gone, limit +5%)",
    ]
    assert lines[-1] == (
        "gate FAIL: 4 regressions in 12 figures of 3 groups (limit +5%), 0 improved, 0 new groups, 0 missing"
    )
    assert not any("one side only" in line for line in lines)
    assert tree_hashes(baseline) == source
    as_json = run_calib(*gate, "--out", tmp_path / "json", "--json")
    assert as_json.returncode == 1
    verdict = json_of(as_json)["gate"]
    assert verdict["passed"] is False
    assert [(r["metric"], r["current"]) for r in verdict["regressions"]] == [
        ("delta_mae", None),
        ("ctx_err_p90", None),
        ("e2e_err_p90", None),
        ("bias_error", None),
    ]
