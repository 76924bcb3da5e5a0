"""`calib report --baseline` (the regression gate) given a malformed baseline: one line naming the file
and the field, exit 2; a null or missing figure is an error, never a pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from faults.kit import counts, error_line, run_calib, tree_hashes

HINT = "regenerate it with `calib report` (the summary.json it writes)"


@pytest.fixture
def baseline(store_copy: Path, tmp_path: Path) -> Path:
    """A real baseline: the report of the sample store."""
    out = tmp_path / "baseline"
    result = run_calib("report", "--db", store_copy, "-e", "chars4", "--no-figures", "--out", out)
    assert result.returncode == 0, result.stderr
    return out / "summary.json"


def _edit(path: Path, change: Any) -> None:
    doc = json.loads(path.read_text())
    change(doc["groups"])
    path.write_text(json.dumps(doc))


def _gate(store: Path, baseline: Path, tmp_path: Path) -> Any:
    return run_calib(
        "report",
        "--db",
        store,
        "-e",
        "chars4",
        "--no-figures",
        "--out",
        tmp_path / "now",
        "--baseline",
        baseline,
    )


def test_the_unchanged_baseline_passes(store_copy: Path, baseline: Path, tmp_path: Path) -> None:
    result = _gate(store_copy, baseline, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "gate PASS" in result.stdout


@pytest.mark.parametrize(
    ("change", "what"),
    [
        (lambda g: g[0].pop("estimator"), "groups[0].estimator is missing"),
        (lambda g: g[0].pop("calls"), "groups[0].calls is missing"),
        (lambda g: g[1].update(calls="many"), 'groups[1].calls is not a count of calls ("many")'),
        (lambda g: g[0].update(delta_mae="12.5"), 'groups[0].delta_mae is not a number ("12.5")'),
        (lambda g: g[0].update(provider=3), "groups[0].provider is not a string or null"),
        (lambda g: g.__setitem__(0, ["chars4"]), "groups[0] is not an object"),
    ],
    ids=["no-estimator", "no-calls", "calls-type", "figure-type", "provider-type", "group-type"],
)
def test_a_malformed_baseline_is_one_line_naming_the_field(
    change: Any, what: str, store_copy: Path, baseline: Path, tmp_path: Path
) -> None:
    _edit(baseline, change)
    stored, source = counts(store_copy), tree_hashes(baseline)
    result = _gate(store_copy, baseline, tmp_path)
    assert result.returncode == 2
    assert error_line(result) == f"Error: malformed baseline: {what} ({baseline}); {HINT}"
    assert counts(store_copy) == stored and tree_hashes(baseline) == source
    assert not (tmp_path / "now").exists()  # refused before anything was written


@pytest.mark.parametrize("figure", ["delta_mae", "ctx_err_p90", "delta_bias"])
def test_a_null_or_missing_figure_is_an_error_never_a_pass(
    figure: str, store_copy: Path, baseline: Path, tmp_path: Path
) -> None:
    calls = json.loads(baseline.read_text())["groups"][0]["calls"]
    _edit(baseline, lambda g: g[0].update({figure: None}))
    result = _gate(store_copy, baseline, tmp_path)
    assert result.returncode == 2
    assert error_line(result) == (
        f"Error: malformed baseline: groups[0].{figure} is null in a group of {calls} scored calls "
        f"({baseline}); {HINT}"
    )
    _edit(baseline, lambda g: g[0].pop(figure))
    result = _gate(store_copy, baseline, tmp_path)
    assert result.returncode == 2
    assert (
        error_line(result) == f"Error: malformed baseline: groups[0].{figure} is missing ({baseline}); {HINT}"
    )
