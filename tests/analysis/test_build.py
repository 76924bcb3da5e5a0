from __future__ import annotations

import subprocess
import sys

import pytest
from analysis.sessions import APPENDS, CJK_TEXT, EXPECTED_KINDS, chars4, kinds_session

from calib.analysis.build import build_report
from calib.core.errors import UsageError
from calib.scoring.score import score, summarise
from calib.store.store import Store


def test_report_figures_by_hand(store: Store) -> None:
    store.write([kinds_session()])
    report = build_report(store, estimators=["chars4"], replay=False)
    summary = report.summary
    by_kind = {r["content_kind"]: r for r in summary["content_kinds"]}
    assert set(by_kind) == set(EXPECTED_KINDS)
    for kind_name, (_, text, delta) in zip(EXPECTED_KINDS, APPENDS, strict=True):
        row = by_kind[kind_name]
        assert row["calls"] == 1
        assert row["delta_bias"] == pytest.approx(chars4(text) / delta, rel=1e-5)
        assert row["delta_mae"] == pytest.approx(abs(chars4(text) - delta), rel=1e-5)
    # the per-group figures are calib.scoring.score's, rounded
    expected = summarise(score(store, ["chars4"])).to_dicts()[0]
    group = summary["groups"][0]
    assert (group["estimator"], group["provider"], group["model"]) == ("chars4", "openai", "m1")
    for key in ("calls", "breaks", "baselines", "delta_mae", "delta_bias", "ctx_err_p90"):
        assert group[key] == pytest.approx(expected[key], rel=1e-5)
    assert summary["breaks"][0]["baselines"] == 1 and summary["breaks"][0]["calls"] == 5
    assert summary["content_chars"]["cjk"] == len(CJK_TEXT)
    assert summary["calibration"] is None and summary["before_after"] is None


def test_invalid_options_are_usage_errors(store: Store) -> None:
    store.write([kinds_session()])
    with pytest.raises(UsageError, match="both name a calibration"):
        build_report(store, config="x.json", fit=True)
    with pytest.raises(UsageError, match="holdout fraction"):
        build_report(store, holdout_fraction=1.0)
    with pytest.raises(UsageError, match="replay window"):
        build_report(store, replay_window=0)
    with pytest.raises(UsageError, match="given with --config"):
        build_report(store, estimators=["calibrated:x.json"])


def test_building_a_report_loads_no_plotting_code() -> None:
    code = (
        "import sys, calib.analysis.build\n"
        "loaded = [m for m in ('calib.analysis.plots', 'matplotlib') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
