from __future__ import annotations

import subprocess
import sys

import polars as pl
import pytest
from analysis.biased_sessions import biased_session
from analysis.sessions import APPENDS, CJK_TEXT, EXPECTED_KINDS, chars4, kinds_session, unrecorded_session

from calib.analysis import build
from calib.analysis.build import MISS_REASONS, MISSES_LISTED, build_report
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
    for key in ("calls", "breaks", "baselines", "delta_mae", "delta_bias", "ctx_err_p90", "coverage"):
        assert group[key] == pytest.approx(expected[key], rel=1e-5)
    for key in ("e2e_calls", "e2e_err_p50", "e2e_err_p90", "e2e_err_p99", "full_calls", "full_err_p90"):
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
    with pytest.raises(UsageError, match="window of 0 tokens is out of range"):
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


def test_end_to_end_figures_count_the_breaks_and_the_first_calls(store: Store) -> None:
    # two sessions of 5 scored calls, then one call each that the log shows nothing for
    a, b = unrecorded_session("t:a", (2000,)), unrecorded_session("t:b", (2000, -600))
    store.write([a, b])
    summary = build_report(store, estimators=["chars4", "cjk"], replay=False).summary
    group = next(g for g in summary["groups"] if g["estimator"] == "chars4")
    assert (group["calls"], group["e2e_calls"], group["full_calls"]) == (10, 15, 2)
    assert group["breaks_by_reason"]["unrecorded"] == 2 and group["breaks_by_reason"]["negative_delta"] == 1
    # 10 scored of the 13 calls with usage that have a predecessor
    assert group["coverage"] == pytest.approx(10 / 13, rel=1e-5)
    # the first call is predicted from its whole prompt, with no static overhead for a plain estimator
    first = chars4("start the task please")
    assert group["full_err_p50"] == pytest.approx((3000 - first) / 3000, rel=1e-5)
    assert group["full_err_mean"] == pytest.approx((first - 3000) / 3000, rel=1e-5)
    # end to end the breaks and first calls are there: the high percentiles are theirs
    assert group["e2e_err_p99"] > group["ctx_err_p99"] and group["e2e_err_p90"] > group["ctx_err_p90"]
    overall = next(r for r in summary["overall"] if r["estimator"] == "chars4")
    assert (overall["e2e_calls"], overall["full_calls"], overall["removal_calls"]) == (15, 2, 0)
    breaks = summary["breaks"][0]
    assert breaks["coverage"] == group["coverage"] and breaks["removal_calls"] == 0
    assert breaks["unrecorded"] == 2 and breaks["negative_delta"] == 1


def test_misses_lists_the_breaks_found_only_from_the_count(store: Store) -> None:
    a, b = unrecorded_session("t:a", (2000,)), unrecorded_session("t:b", (2000, -600))
    store.write([kinds_session(), b, a])
    summary = build_report(store, estimators=["chars4", "cjk"], replay=False).summary
    misses = summary["misses"]
    assert misses["estimator"] == "chars4"  # no calibration: the first estimator
    assert misses["e2e_calls"] == 6 + 7 + 8
    assert misses["by_reason"] == {
        "unrecorded": {"calls": 2, "share": pytest.approx(2 / 21, rel=1e-5)},
        "negative_delta": {"calls": 1, "share": pytest.approx(1 / 21, rel=1e-5)},
    }
    before = a.calls[5].ctx
    assert before is not None
    # the same miss in two sessions: ordered by session, then call; the smaller miss after them
    assert misses["largest"] == [
        {
            "tool": "test",
            "file": f"/logs/{uid}.jsonl",
            "session": uid,
            "call": 6,
            "provider": "openai",
            "model": "m1",
            "reason": "unrecorded",
            "ctx": before + 2000,
            "predicted": before,
            "error": -2000,
            "rel_error": pytest.approx(2000 / (before + 2000), rel=1e-5),
        }
        for uid in ("t:a", "t:b")
    ] + [
        {
            "tool": "test",
            "file": "/logs/t:b.jsonl",
            "session": "t:b",
            "call": 7,
            "provider": "openai",
            "model": "m1",
            "reason": "negative_delta",
            "ctx": before + 1400,
            "predicted": before + 2000,
            "error": 600,
            "rel_error": pytest.approx(600 / (before + 1400), rel=1e-5),
        }
    ]


def test_misses_keeps_the_largest_of_the_calibrated_estimator(store: Store) -> None:
    jumps = tuple(150 * (k + 1) * (-1) ** k for k in range(MISSES_LISTED + 3))
    store.write([unrecorded_session("t:many", jumps), kinds_session("t:k2")])
    report = build_report(store, estimators=["chars4"], fit=True, holdout_fraction=0, replay=False)
    misses = report.summary["misses"]
    label = report.summary["calibration"]["label"]
    assert misses["estimator"] == label == "calibrated:charclass"
    assert misses["by_reason"]["unrecorded"]["calls"] == (len(jumps) + 1) // 2
    assert misses["by_reason"]["negative_delta"]["calls"] == len(jumps) // 2
    largest = misses["largest"]
    assert len(largest) == MISSES_LISTED
    errors = [m["rel_error"] for m in largest]
    assert errors == sorted(errors, reverse=True) and len(set(errors)) == len(errors)
    # the calls listed are the calibrated estimator's largest: every one left out missed by less
    rows = report.scores.filter((pl.col("estimator") == label) & pl.col("reason").is_in(MISS_REASONS))
    assert rows.height == len(jumps)
    left_out = rows.filter(~pl.col("seq").is_in([m["call"] for m in largest]))
    assert left_out.height == len(jumps) - MISSES_LISTED
    assert left_out["rel_error"].max() < min(errors)
    first = rows.sort("rel_error", descending=True).row(0, named=True)
    assert (largest[0]["call"], largest[0]["predicted"]) == (
        first["seq"],
        pytest.approx(first["pred"], rel=1e-5),
    )


def _sessions() -> list:
    """Sessions of every content kind, with breaks the log does not show, under several uids (so that
    some are held out)."""
    jumps = [(2000,), (2000, -600), (150, -300, 450)]
    parsed = [unrecorded_session(f"t:u{i}", jumps[i % len(jumps)]) for i in range(9)]
    return parsed + [kinds_session(f"t:k{i}") for i in range(6)]


def test_the_report_is_the_same_whatever_its_batches(store: Store) -> None:
    sessions = _sessions()
    for parsed in sessions:
        parsed.session.tool = "dexto"  # an agent with a rule of its own: the report replays its sessions
    store.write(sessions)
    options = {"estimators": ["chars4", "cjk"], "fit": True, "holdout_fraction": 0.4, "replay_window": 4_000}
    whole = build_report(store, **options)
    assert whole.summary["calibration"]["holdout_sessions"] > 0
    assert whole.summary["replay"]["rows"] and whole.timeline is not None
    for rows in (1, 7):  # a session per batch, a few
        batched = build_report(store, batch_rows=rows, **options)
        assert batched.summary == whole.summary, rows
        assert batched.config == whole.config
        assert batched.scores.equals(whole.scores)
        assert batched.timeline is not None and batched.timeline.equals(whole.timeline)


def test_the_figures_draw_a_sample_of_the_sessions(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    store.write(_sessions())
    everything = build_report(store, estimators=["chars4"], replay=False)
    assert everything.sample_note is None
    assert everything.scores.select("session_uid").n_unique() == 15
    monkeypatch.setattr(build, "FIGURE_CALLS", 20)
    sampled = build_report(store, estimators=["chars4"], replay=False)
    # the summary reads every call; the figures the calls of a few whole sessions
    assert sampled.summary == everything.summary
    kept = sampled.scores.select("session_uid").n_unique()
    assert 1 < kept < 15 and sampled.sample_note == f"calls of {kept} sessions sampled from 15"
    for uid in sampled.scores["session_uid"].unique():
        rows = sampled.scores.filter(pl.col("session_uid") == uid)
        assert rows.equals(everything.scores.filter(pl.col("session_uid") == uid))


def test_per_model_error_is_the_signed_error_of_each_models_scored_calls(store: Store) -> None:
    store.write(
        [
            biased_session("t:a", model="m1", calls=12, factor=2.0),
            biased_session("t:b", model="m2", calls=16, factor=0.5),
        ]
    )
    summary = build_report(store, estimators=["chars4"], replay=False).summary
    assert summary["min_figure_calls"] == build.MIN_FIGURE_CALLS
    rows = {r["model"]: r for r in summary["model_error"]}
    # m1: the provider counts 1,000 tokens for each output chars4 counts as 500, so call k (k = 1..11,
    # ctx 3000 + 1000 k) is predicted 500 low; the median call is k = 6
    m1 = rows["m1"]
    assert (m1["estimator"], m1["provider"], m1["calls"]) == ("chars4", "openai", 11)
    assert m1["p50"] == pytest.approx(-500 / 9000, rel=1e-5)
    assert m1["p10"] < m1["p25"] < m1["p50"] < m1["p75"] < m1["p90"] < 0
    # m2: 250 counted for 500 estimated, calls k = 1..15 at ctx 3000 + 250 k: predicted 250 high
    m2 = rows["m2"]
    assert m2["calls"] == 15 and m2["p50"] == pytest.approx(250 / 5000, rel=1e-5)
    assert 0 < m2["p10"] < m2["p90"]


def test_position_error_bands_the_scored_calls_by_context_size(store: Store) -> None:
    store.write([biased_session(f"t:{i}", calls=24, factor=2.0) for i in range(3)])
    report = build_report(store, estimators=["chars4"], replay=False)
    bands = report.summary["position_error"]
    scored = report.scores.filter(pl.col("status") == "ok")
    assert sum(b["calls"] for b in bands) == scored.height == 3 * 23
    for band in bands:
        low, high = band["ctx_from"], band["ctx_to"]
        assert high == 2 * low and low & (low - 1) == 0  # doublings from a power of two
        inside = scored.filter((pl.col("ctx") >= low) & (pl.col("ctx") < high))
        assert band["calls"] == inside.height
        assert band["p50"] == pytest.approx((inside["error"] / inside["ctx"]).median(), rel=1e-5)
        # every appended output is counted as half of what the provider counts, whatever the size
        assert band["ratio_calls"] == inside.height and band["ratio_p50"] == pytest.approx(0.5)
    assert [b["ctx_from"] for b in bands] == [2048, 4096, 8192, 16384]


def test_content_kinds_give_the_bias_of_the_calls_that_only_appended(store: Store) -> None:
    store.write([kinds_session()])
    summary = build_report(store, estimators=["chars4"], replay=False).summary
    for row in summary["content_kinds"]:
        if row["content_kind"] != "empty":
            # nothing leaves these sessions' context: every scored call only appended
            assert row["append_calls"] == row["calls"] == 1
            assert row["append_bias"] == pytest.approx(row["delta_bias"], rel=1e-6)
