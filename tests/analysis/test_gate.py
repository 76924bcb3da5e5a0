from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from analysis.sessions import unrecorded_session
from helpers import ROOT
from typer.testing import CliRunner

from calib.analysis.build import build_report
from calib.analysis.gate import NOISE_FLOORS, compare
from calib.analysis.markdown import render_markdown
from calib.analysis.summary import SUMMARY_FORMAT, dumps_summary, load_summary
from calib.cli.app import app
from calib.core.errors import BaselineError, UsageError
from calib.ingest.pipeline import ingest
from calib.store.store import Store

SAMPLE = ROOT / "datasets" / "sample"
BASELINE = ROOT / "reports" / "baseline"


def _group(estimator: str = "chars4", model: str = "m1", **figures: Any) -> dict[str, Any]:
    row = {
        "estimator": estimator,
        "provider": "openai",
        "model": model,
        "calls": 100,
        "delta_mae": 40.0,
        "delta_bias": 0.8,
        "ctx_err_p90": 0.01,
        "e2e_calls": 120,
        "e2e_err_p90": 0.02,
    }
    row.update(figures)
    return row


def _summary(*groups: dict[str, Any]) -> dict[str, Any]:
    return {"format": SUMMARY_FORMAT, "groups": list(groups)}


def test_nothing_changed_passes() -> None:
    base = _summary(_group(), _group("cjk"))
    result = compare(copy.deepcopy(base), base)
    assert result.passed and not result.regressions
    assert (result.groups, result.compared, result.improved) == (2, 8, 0)
    assert result.lines() == [
        "gate PASS: 0 regressions in 8 figures of 2 groups (limit +5%), 0 improved, 0 new groups, 0 missing"
    ]


def test_worse_beyond_the_limit_fails_with_one_line_per_figure() -> None:
    base = _summary(_group(), _group("cjk"))
    now = _summary(_group(delta_mae=44.4, ctx_err_p90=0.0104), _group("cjk"))  # +11%, +4%
    result = compare(now, base, max_regression=5)
    assert not result.passed
    assert [(r.estimator, r.metric) for r in result.regressions] == [("chars4", "delta_mae")]
    assert result.lines()[0] == "worse: chars4 openai/m1 delta_mae 40.00 -> 44.40 (+11.0%, limit +5%)"
    assert result.lines()[-1].startswith("gate FAIL: 1 regressions in 8 figures")
    assert compare(now, base, max_regression=12).passed


def test_bias_is_judged_by_its_distance_from_one() -> None:
    base = _summary(_group(delta_bias=0.8))
    # 0.8 -> 1.15: bias error 0.2 -> 0.15, better although the figure went up
    better = compare(_summary(_group(delta_bias=1.15)), base)
    assert better.passed and better.improved == 1
    worse = compare(_summary(_group(delta_bias=0.7)), base)  # bias error 0.2 -> 0.3
    assert [r.metric for r in worse.regressions] == ["bias_error"]
    assert worse.regressions[0].current == pytest.approx(0.3)


def test_noise_floor_keeps_tiny_baselines_from_failing() -> None:
    base = _summary(_group(delta_mae=0.0, delta_bias=1.0, ctx_err_p90=0.0, e2e_err_p90=0.0))
    tiny = _summary(
        _group(
            delta_mae=NOISE_FLOORS["delta_mae"] * 0.9, delta_bias=1.004, ctx_err_p90=5e-6, e2e_err_p90=5e-6
        )
    )
    assert compare(tiny, base, max_regression=0).passed
    big = _summary(_group(delta_mae=2.0, delta_bias=1.0, ctx_err_p90=0.0, e2e_err_p90=0.0))
    result = compare(big, base, max_regression=0)
    assert not result.passed
    assert result.lines()[0] == "worse: chars4 openai/m1 delta_mae 0.00 -> 2.00 (from zero, limit +0%)"


def test_new_and_missing_groups() -> None:
    base = _summary(_group(), _group(model="old"))
    now = _summary(_group(), _group("tiktoken:o200k_base"))
    lenient = compare(now, base)
    assert lenient.passed
    assert lenient.new_groups == [("tiktoken:o200k_base", "openai", "m1")]
    assert lenient.missing_groups == [("chars4", "openai", "old")]
    assert "new group (no baseline): tiktoken:o200k_base openai/m1" in lenient.lines()
    assert "missing group (in the baseline only): chars4 openai/old" in lenient.lines()
    strict = compare(now, base, fail_on_new_group=True)
    assert not strict.passed and not strict.regressions


def test_a_group_left_without_scored_calls_regresses_on_every_scored_figure() -> None:
    base = _summary(_group())
    now = _summary(_group(calls=0, delta_mae=None, delta_bias=None, ctx_err_p90=None))
    result = compare(now, base)
    assert not result.passed and result.compared == 4
    assert [r.metric for r in result.regressions] == ["delta_mae", "ctx_err_p90", "bias_error"]
    assert "worse: chars4 openai/m1 delta_mae 40.00 -> null (the figure is gone, limit +5%)" in result.lines()
    # the other way round (the baseline had no scored calls) the figures are new, not a regression
    back = compare(base, now)
    assert back.passed and back.compared == 1
    assert back.new_figures == [("chars4", "openai", "m1")]
    assert "figures new since the baseline (it had no calls for them): chars4 openai/m1" in back.lines()


def test_an_absurd_figure_prints_in_powers_of_ten() -> None:
    result = compare(_summary(_group(delta_mae=4.65167e202)), _summary(_group()))
    assert (
        result.lines()[0] == "worse: chars4 openai/m1 delta_mae 40.00 -> 4.652e+202 (+1.16e+203%, limit +5%)"
    )


def test_end_to_end_regression_fails_the_gate() -> None:
    base = _summary(_group(), _group("cjk"))
    now = _summary(_group(e2e_err_p90=0.022), _group("cjk", e2e_err_p90=0.0205))  # +10%, +2.5%
    result = compare(now, base)
    assert not result.passed
    assert [(r.estimator, r.metric) for r in result.regressions] == [("chars4", "e2e_err_p90")]
    assert result.lines()[0] == "worse: chars4 openai/m1 e2e_err_p90 2.0000% -> 2.2000% (+10.0%, limit +5%)"
    assert result.to_dict()["metrics"] == ["delta_mae", "ctx_err_p90", "e2e_err_p90", "bias_error"]
    better = compare(_summary(_group(e2e_err_p90=0.01)), _summary(_group()))
    assert better.passed and better.improved == 1
    # a group with no scored calls on either side is still gated end to end
    unscored = {"calls": 0, "delta_mae": None, "delta_bias": None, "ctx_err_p90": None}
    worse = compare(_summary(_group(**unscored, e2e_err_p90=0.03)), _summary(_group(**unscored)))
    assert [r.metric for r in worse.regressions] == ["e2e_err_p90"] and worse.compared == 1


def test_end_to_end_figure_of_the_baseline_is_null_only_without_end_to_end_calls() -> None:
    empty = _group(calls=0, delta_mae=None, delta_bias=None, ctx_err_p90=None, e2e_calls=0, e2e_err_p90=None)
    assert compare(_summary(empty), _summary(empty)).passed
    # scored figures keep the `calls` rule: no scored calls, yet end-to-end calls with a figure
    scored_none = _group(calls=0, delta_mae=None, delta_bias=None, ctx_err_p90=None)
    assert compare(_summary(scored_none), _summary(scored_none)).compared == 1
    with pytest.raises(
        BaselineError, match=r"groups\[0\]\.e2e_err_p90 is null in a group of 120 end-to-end calls"
    ):
        compare(_summary(_group()), _summary(_group(e2e_err_p90=None)))
    with pytest.raises(
        BaselineError, match=r"groups\[0\]\.ctx_err_p90 is null in a group of 100 scored calls"
    ):
        compare(_summary(_group()), _summary(_group(e2e_calls=0, e2e_err_p90=None, ctx_err_p90=None)))


def test_a_baseline_from_before_the_end_to_end_figures_asks_to_be_regenerated() -> None:
    old = _group()
    del old["e2e_calls"], old["e2e_err_p90"]
    with pytest.raises(BaselineError) as err:
        compare(_summary(_group()), _summary(old))
    assert str(err.value) == (
        "malformed baseline: groups[0].e2e_calls is missing (the baseline predates the end-to-end figures); "
        "regenerate it with `calib report` (the summary.json it writes)"
    )
    no_figure = _group()
    del no_figure["e2e_err_p90"]
    with pytest.raises(BaselineError, match=r"groups\[0\]\.e2e_err_p90 is missing \(the baseline predates"):
        compare(_summary(_group()), _summary(no_figure))


def test_gate_on_reports_of_two_stores_that_differ_only_in_a_call_the_log_lost(tmp_path: Path) -> None:
    def summary(name: str, jump: int) -> dict[str, Any]:
        with Store(tmp_path / f"{name}.duckdb") as s:
            s.write([unrecorded_session("t:a", (jump,))])
            return json.loads(
                dumps_summary(build_report(s, estimators=["chars4", "cjk"], replay=False).summary)
            )

    base, same, worse = summary("base", 2000), summary("same", 2000), summary("worse", 4000)
    passed = compare(same, base, fail_on_new_group=True)
    assert passed.passed and (passed.groups, passed.compared) == (2, 8)
    # the scored calls are the same; the unrecorded call end to end missed by twice as many tokens
    result = compare(worse, base)
    assert [(r.estimator, r.metric) for r in result.regressions] == [
        ("chars4", "e2e_err_p90"),
        ("cjk", "e2e_err_p90"),
    ]
    old = next(g for g in base["groups"] if g["estimator"] == "chars4")
    new = next(g for g in worse["groups"] if g["estimator"] == "chars4")
    assert (result.regressions[0].baseline, result.regressions[0].current) == (
        old["e2e_err_p90"],
        new["e2e_err_p90"],
    )
    assert result.lines()[-1].startswith("gate FAIL: 2 regressions in 8 figures of 2 groups")


def test_negative_limit_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        compare(_summary(), _summary(), max_regression=-1)


# -- end to end on the bundled sample ---------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if not SAMPLE.is_dir():
        pytest.skip(f"the bundled sample is not generated yet: {SAMPLE} (run `make sample`)")
    db = tmp_path_factory.mktemp("gate") / "sample.duckdb"
    with Store(db) as s:
        ingest([SAMPLE], store=s)
    yield db


def _report(db: Path, out: Path, *args: str) -> Any:
    return CliRunner().invoke(app, ["report", "--db", str(db), "--out", str(out), "--no-figures", *args])


def _scaled(config: dict[str, Any], factor: float) -> dict[str, Any]:
    """The same calibration with every kind ratio multiplied by `factor`."""
    doc = copy.deepcopy(config)

    def scale(params: dict[str, Any]) -> None:
        params["ratios"] = {k: round(v * factor, 6) for k, v in params["ratios"].items()}

    scale(doc["default"])
    for provider in doc["providers"].values():
        scale(provider["params"])
        for model in provider["models"].values():
            scale(model)
    return doc


def test_gate_fails_when_the_calibration_is_swapped_for_a_worse_one(sample_db: Path, tmp_path: Path) -> None:
    fitted = _report(sample_db, tmp_path / "fitted", "--fit")
    assert fitted.exit_code == 0, fitted.output
    good = tmp_path / "good.json"
    good.write_bytes((tmp_path / "fitted" / "calibration.json").read_bytes())
    worse = tmp_path / "worse.json"
    worse.write_text(json.dumps(_scaled(json.loads(good.read_text()), 0.7)), encoding="utf-8")

    base = _report(sample_db, tmp_path / "base", "--config", str(good))
    assert base.exit_code == 0, base.output
    baseline = tmp_path / "base" / "summary.json"

    same = _report(sample_db, tmp_path / "same", "--config", str(good), "--baseline", str(baseline))
    assert same.exit_code == 0, same.output
    assert same.stdout.splitlines()[-1].startswith("gate PASS: 0 regressions")

    swapped = _report(sample_db, tmp_path / "swapped", "--config", str(worse), "--baseline", str(baseline))
    assert swapped.exit_code == 1, swapped.output
    lines = swapped.stdout.splitlines()
    worse_lines = [line for line in lines if line.startswith("worse: ")]
    assert worse_lines and all(line.startswith("worse: calibrated:charclass ") for line in worse_lines)
    assert any(" delta_mae " in line for line in worse_lines)
    assert lines[-1].startswith(f"gate FAIL: {len(worse_lines)} regressions")
    # the raw estimators did not change
    assert not any("worse: chars4" in line for line in lines)

    as_json = _report(
        sample_db, tmp_path / "j", "--config", str(worse), "--baseline", str(baseline), "--json"
    )
    assert as_json.exit_code == 1
    gate = json.loads(as_json.stdout)["gate"]
    assert gate["passed"] is False and len(gate["regressions"]) == len(worse_lines)
    assert {r["estimator"] for r in gate["regressions"]} == {"calibrated:charclass"}


def test_gate_on_a_new_estimator_group_follows_the_flag(sample_db: Path, tmp_path: Path) -> None:
    assert _report(sample_db, tmp_path / "base", "-e", "chars4").exit_code == 0
    baseline = str(tmp_path / "base" / "summary.json")
    added = ["-e", "chars4", "-e", "cjk", "--baseline", baseline]
    lenient = _report(sample_db, tmp_path / "a", *added)
    assert lenient.exit_code == 0, lenient.output
    assert any(line.startswith("new group (no baseline): cjk ") for line in lenient.stdout.splitlines())
    strict = _report(sample_db, tmp_path / "b", *added, "--fail-on-new-group")
    assert strict.exit_code == 1
    assert any(line.startswith("new group (fails the gate): cjk ") for line in strict.stdout.splitlines())


def test_the_committed_baseline_passes_and_is_self_consistent(sample_db: Path, tmp_path: Path) -> None:
    summary_path = BASELINE / "summary.json"
    if not summary_path.is_file():
        pytest.skip(f"no committed baseline yet: {summary_path} (see reports/README.md)")
    committed = load_summary(summary_path)
    # the committed markdown is the summary rendered, and its figures are there
    assert (BASELINE / "report.md").read_text(encoding="utf-8") == render_markdown(committed)
    for name in committed["figures"]:
        assert (BASELINE / name).is_file(), name
    # the documented command, run again on the sample, passes the gate against it
    result = CliRunner().invoke(
        app,
        [
            "report",
            "--db",
            str(sample_db),
            "--fit",
            "--out",
            str(tmp_path / "now"),
            "--baseline",
            str(summary_path),
            "--fail-on-new-group",
        ],
    )
    assert result.exit_code == 0, result.output
    last = result.stdout.splitlines()[-1]
    assert last.startswith("gate PASS: 0 regressions") and "0 new groups, 0 missing" in last
