"""Which estimators `calib score` scores: the default set with no `-e`, every usable one with `-e all`,
and a calibration named with `--config`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import chars4_config
from typer.testing import CliRunner

import calib.estimators as registry
from calib.cli.app import app
from calib.estimators import ALL_ESTIMATORS, DEFAULT_SCORE_SET, list_estimators, specs
from calib.scoring.score import available_estimators, score_names, score_store


def _score(*args: str | Path) -> list[dict[str, Any]]:
    """The rows `calib score ARGS --overall --json` prints (one per estimator)."""
    result = CliRunner().invoke(app, ["score", *map(str, args), "--overall", "--json", "-q"])
    assert result.exit_code == 0, result.output
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


def _estimators(rows: list[dict[str, Any]]) -> list[str]:
    names = [row["estimator"] for row in rows]
    assert len(names) == len(set(names)), names  # each scored once
    return names


def _usable_fixed_names() -> set[str]:
    """The fixed-name estimators the registry says can be used here."""
    fixed = {spec.name for spec in specs() if not spec.is_family}
    return {info.name for info in list_estimators() if info.available and info.name in fixed}


def test_the_default_set_holds_every_agent_rule_and_only_fixed_names() -> None:
    fixed = {spec.name: spec for spec in specs() if not spec.is_family}
    assert set(DEFAULT_SCORE_SET) <= set(fixed)
    # the rules the agents ship are the heuristics module's fixed names (chars4, cjk, cjk:1.3)
    rules = {name for name, spec in fixed.items() if spec.factory.startswith("calib.estimators.heuristics:")}
    assert rules == {"chars4", "cjk", "cjk:1.3"}
    assert rules <= set(DEFAULT_SCORE_SET)
    assert {"charclass", "tiktoken:o200k_base"} <= set(DEFAULT_SCORE_SET)
    assert ALL_ESTIMATORS not in fixed  # `all` names no estimator of its own


def test_score_with_no_estimator_scores_the_default_set(small_store: Path) -> None:
    names = _estimators(_score("--db", small_store))
    usable = _usable_fixed_names()
    assert set(names) == {name for name in DEFAULT_SCORE_SET if name in usable}
    assert {"chars4", "cjk", "cjk:1.3", "charclass"} <= set(names)  # no package needed for these
    assert not set(names) - set(DEFAULT_SCORE_SET)  # no Hugging Face vocabulary, no cl100k_base


def test_a_default_member_that_cannot_be_used_here_is_left_out(
    small_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # cjk:1.3 made to say it needs a package: `str` called with the reason returns it
    spec = next(s for s in specs() if s.name == "cjk:1.3")
    missing = dataclasses.replace(spec, probe="builtins:str:needs a package this test withholds")
    monkeypatch.setitem(registry._SPECS, "cjk:1.3", missing)
    names = set(_estimators(_score("--db", small_store)))
    assert "cjk:1.3" not in names
    assert {"chars4", "cjk", "charclass"} <= names
    assert "cjk:1.3" not in available_estimators()  # nor in `-e all`


def test_all_scores_every_usable_fixed_name_estimator(small_store: Path) -> None:
    names = _estimators(_score("--db", small_store, "-e", ALL_ESTIMATORS))
    assert set(names) == _usable_fixed_names()
    assert set(names) - set(DEFAULT_SCORE_SET)  # more than the default set


def test_all_merges_with_other_names_each_once_in_order(small_store: Path) -> None:
    names = score_names(["cjk:2", ALL_ESTIMATORS, "chars4", "cjk:2"])
    assert names == ["cjk:2", *available_estimators()]
    assert names.count("chars4") == 1
    scored = _estimators(_score("--db", small_store, "-e", "cjk:2", "-e", "all", "-e", "chars4"))
    assert set(scored) == {"cjk:2", *_usable_fixed_names()}


def test_config_adds_the_calibration_to_the_default_set_and_to_named_ones(
    small_store: Path, tmp_path: Path
) -> None:
    config = chars4_config(tmp_path / "calibration.json")
    calibrated = f"calibrated:{config}"
    rows = _score("--db", small_store, "--config", config)
    default = set(_estimators(_score("--db", small_store)))
    assert set(_estimators(rows)) == default | {calibrated}
    # the config counts len/4 with ratios of 1 and no framing: the figures of chars4 itself
    by_name = {row["estimator"]: row for row in rows}
    for figure in ("calls", "e2e_calls", "delta_mae", "delta_bias", "ctx_err_p50", "e2e_err_p90"):
        assert by_name[calibrated][figure] == by_name["chars4"][figure], figure
    assert by_name["chars4"]["calls"] > 0
    named = _score("--db", small_store, "-e", "cjk", "--config", config)
    assert _estimators(named) == sorted(["cjk", calibrated])
    # named both ways, it is scored once
    twice = _score("--db", small_store, "-e", calibrated, "--config", config)
    assert _estimators(twice) == [calibrated]


def test_score_store_takes_the_config_too(small_store: Path, tmp_path: Path) -> None:
    config = chars4_config(tmp_path / "calibration.json")
    summary = score_store(small_store, ["chars4"], config=config, overall=True)
    assert summary["estimator"].to_list() == sorted(["chars4", f"calibrated:{config}"])


@pytest.mark.parametrize("name", ["absent.json", ".", "empty.json"])
def test_an_unreadable_config_is_one_error_line(small_store: Path, tmp_path: Path, name: str) -> None:
    path = tmp_path / name  # nothing there, a folder, or a JSON document that is no config
    if name == "empty.json":
        path.write_text("{}", encoding="utf-8")
    result = CliRunner().invoke(app, ["score", "--db", str(small_store), "--config", str(path), "-q"])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    assert str(path) in lines[0]
    assert lines[0].endswith(("run `calib fit` to write one", "re-export it with `calib fit`"))
