from __future__ import annotations

import json
import math
import re
from pathlib import Path

import polars as pl
import pytest
from scoring.sessions import basic, break_chain, chain
from typer.testing import CliRunner

from calib.cli.app import app
from calib.core.errors import UsageError
from calib.core.figures import round_figure
from calib.estimators import ALL_ESTIMATORS, DEFAULT_SCORE_SET
from calib.estimators.calibrated import GroupCalibration
from calib.scoring.chain import BREAK_REASONS, features
from calib.scoring.score import (
    SCORE_COLUMNS,
    call_frame,
    score,
    score_frame,
    score_store,
    summarise,
    summary_records,
)
from calib.store.store import Store


def test_delta_estimate_and_prediction_by_hand(store: Store) -> None:
    store.write([basic()])
    rows = score(store, ["chars4"]).sort("seq")
    assert rows.columns == list(SCORE_COLUMNS)
    assert rows["status"].to_list() == ["baseline", "ok", "ok"]
    assert rows["delta"].to_list() == [None, 160, 30]
    # the appended parts exclude what call k-1 produced (its carry) and parts never re-sent
    assert rows["est_delta"].to_list() == [0.0, 150.0, 25.0]
    assert rows["messages"].to_list() == [0, 2, 1]
    # call 0 has nothing to build on: the full family, the whole prompt with no overhead (a plain
    # estimator has none); calls 1 and 2 build on the previous call's usage
    assert rows["family"].to_list() == ["full", "incremental", "incremental"]
    assert rows["pred"].to_list() == [10.0, 1170.0, 1215.0]
    assert rows["error"].to_list() == [-990.0, -10.0, -5.0]
    # full prompt of call 1: p0 + p1 + p3 + p4 + p5 (the reasoning part was never sent back)
    assert rows["est_full"].to_list() == [10.0, 182.0, 10 + 20 + 2 + 100 + 50 + 10 + 25.0]
    assert rows["full_messages"].to_list() == [1, 3, 4]
    assert rows["static_residual"][0] == 990.0


def test_summary_figures(store: Store) -> None:
    store.write([basic()])
    summary = summarise(score(store, ["chars4", "cjk"]))
    row = summary.filter(pl.col("estimator") == "chars4").to_dicts()[0]
    assert (row["calls"], row["breaks"], row["baselines"], row["subagent_baselines"]) == (2, 0, 1, 0)
    # end to end adds the first call, predicted in full: 10 tokens of text for a prompt of 1000
    assert (row["e2e_calls"], row["full_calls"], row["coverage"]) == (3, 1, 1.0)
    assert row["full_err_p50"] == pytest.approx(0.99)
    e2e = sorted([10 / 1180, 5 / 1220, 0.99])
    assert row["e2e_err_p50"] == pytest.approx(e2e[1])
    assert row["e2e_err_mean"] == pytest.approx((-10 / 1180 - 5 / 1220 - 0.99) / 3)
    assert row["delta_mae"] == pytest.approx(7.5)
    assert row["delta_err_p50"] == pytest.approx(7.5)  # |-10| and |-5|
    assert row["delta_bias"] == pytest.approx(175 / 190)
    rel = sorted([10 / 1180, 5 / 1220])
    assert row["ctx_err_p50"] == pytest.approx((rel[0] + rel[1]) / 2)
    assert row["ctx_err_p99"] == pytest.approx(rel[0] + 0.99 * (rel[1] - rel[0]))
    assert row["breaks_by_reason"] == dict.fromkeys(BREAK_REASONS, 0)
    assert summary.height == 2


# How an agent predicts the call after each break: from the previous call's usage, or in full.
_BREAK_FAMILY = {
    "missing_usage": None,
    "error": "incremental",
    "model_change": "full",
    "compaction": "full",
    "compaction_summary": "full",
    "rewound": "full",
    "pruned": "incremental",
    "masked": "incremental",
    "unlogged_turn": None,
    "unrecorded": "incremental",
    "negative_delta": "incremental",
}


@pytest.mark.parametrize("reason", [*BREAK_REASONS, "compaction_summary"])
def test_breaks_are_left_out_of_scored_figures_but_kept_end_to_end(store: Store, reason: str) -> None:
    session = chain(f"t:{reason}")
    break_chain(reason, session)
    store.write([session])
    rows = score(store, ["chars4"]).sort("seq")
    assert rows["status"].to_list() == ["baseline", "ok", "break"]
    family = _BREAK_FAMILY[reason]
    assert rows["family"][2] == family
    assert (rows["pred"][2] is None) == (family is None)
    summary = summarise(rows)  # a model change puts the break in the new model's row
    assert summary["breaks"].sum() == 1 and summary["calls"].sum() == 1
    assert summary["breaks_by_reason"].struct.field(reason.removesuffix("_summary")).sum() == 1
    # end to end: every call with usage; the scored call is one of the two after the first
    assert summary["e2e_calls"].sum() == (2 if family is None else 3)
    overall = summarise(rows.with_columns(pl.lit("m").alias("model")))
    assert overall["coverage"][0] == pytest.approx(1 / (1 if family is None else 2))


def test_unbroken_chain_and_subagent_baseline(store: Store) -> None:
    store.write([chain("t:main"), chain("t:sub", subagent=True)])
    rows = score(store, ["chars4"])
    assert rows.filter(pl.col("status") == "break").is_empty()
    ok = rows.filter(pl.col("status") == "ok")
    assert ok["delta"].to_list() == [12] * 4
    assert ok["est_delta"].to_list() == [10.0] * 4
    summary = summarise(rows).to_dicts()[0]
    assert (summary["baselines"], summary["subagent_baselines"], summary["calls"]) == (1, 1, 4)


class _Grouped:
    """A grouped (calibrated) estimator with the same parameters for every (provider, model)."""

    sources = ("chars4",)

    def for_group(self, provider: str | None, model: str | None) -> GroupCalibration:
        return GroupCalibration(
            "default", {"model": 1.0, "tool": 2.0, "user": 1.0}, 3.0, {"chars4": 1.0}, None
        )


def test_grouped_estimator_applies_ratios_and_message_overhead(store: Store) -> None:
    store.write([basic()])
    rows = score_frame(features(store, ["chars4"]), "grouped", _Grouped()).sort("seq")
    # call 1: 150 tool tokens x 2 + 2 messages x 3; call 2: 25 user tokens + 1 message x 3
    assert rows["est_delta"].to_list() == [0.0, 306.0, 28.0]
    assert rows["estimator"].unique().to_list() == ["grouped"]
    # the full prompt of call 1: 10 user + 22 model + 150 x 2 tool, and 3 messages x 3
    assert rows["est_full"][1] == 10 + 22 + 300 + 9.0


def test_session_split(store: Store) -> None:
    store.write([chain(f"t:s{i}") for i in range(20)])
    held = score(store, ["chars4"], sessions="holdout", holdout_fraction=0.5)
    train = score(store, ["chars4"], sessions="train", holdout_fraction=0.5)
    assert held["holdout"].all() and not train["holdout"].any()
    assert held.height + train.height == 60
    with pytest.raises(UsageError, match="unknown session split"):
        score(store, ["chars4"], sessions="nope")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="no estimator"):
        score(store, [])


def test_summary_records_round_to_six_significant_digits() -> None:
    summary = pl.DataFrame(
        {
            "estimator": ["chars4"],
            "calls": [3],
            "delta_mae": [12345.678],
            "ctx_err_p50": [0.000123456789],
            "delta_bias": [math.nan],
            "ctx_err_mean": [-0.0],
            "static_overhead_p50": [None],
        },
        schema_overrides={"static_overhead_p50": pl.Float64},
    )
    [record] = summary_records(summary)
    assert record == {
        "estimator": "chars4",
        "calls": 3,
        "delta_mae": 12345.7,
        "ctx_err_p50": 0.000123457,
        "delta_bias": None,
        "ctx_err_mean": 0.0,
        "static_overhead_p50": None,
    }


def test_score_store_states_its_default_set_and_all() -> None:
    doc = " ".join((score_store.__doc__ or "").split())
    assert set(DEFAULT_SCORE_SET) <= set(re.split(r"[\s,;()]+", doc)), doc
    assert f"the name `{ALL_ESTIMATORS}` stands for every fixed-name estimator" in doc


def test_score_store_summarises_a_store(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with Store(db) as s:
        s.write([basic()])
    summary = score_store(db, ["chars4"])
    assert summary["estimator"].to_list() == ["chars4"] and summary["calls"].to_list() == [2]


def test_cli_score_json(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with Store(db) as s:
        s.write([basic(), chain("t:x")])
    result = CliRunner().invoke(app, ["score", "--db", str(db), "--json", "-e", "chars4", "-e", "cjk"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert isinstance(rows, list) and len(rows) == 2
    for row in rows:
        for key in (
            "estimator",
            "provider",
            "model",
            "calls",
            "breaks",
            "delta_mae",
            "delta_bias",
            "ctx_err_p50",
            "ctx_err_p90",
            "ctx_err_p99",
        ):
            assert key in row
        assert set(row["breaks_by_reason"]) == set(BREAK_REASONS)
    assert {r["estimator"] for r in rows} == {"chars4", "cjk"}
    assert rows[0]["calls"] == 4
    # figures keep six significant digits (calib.core.figures), not six decimal places
    with Store(db) as s:
        exact = summarise(score(s, ["chars4"])).to_dicts()[0]
    for key in ("delta_bias", "ctx_err_p50", "ctx_err_mean"):
        assert rows[0][key] == round_figure(exact[key])
    assert rows[0]["ctx_err_p50"] != round(exact["ctx_err_p50"], 6)


def test_cli_score_unknown_estimator_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with Store(db) as s:
        s.write([basic()])
    result = CliRunner().invoke(app, ["score", "--db", str(db), "-e", "nope"])
    assert result.exit_code == 2  # a usage error, listing the valid names
    assert "unknown estimator 'nope'" in result.output


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_score_store_in_batches_equals_scoring_the_whole_frame(tmp_path: Path, suffix: str) -> None:
    db = tmp_path / "s.duckdb"
    broken = chain("t:broken")
    break_chain("model_change", broken)
    with Store(db) as s:
        s.write([basic(f"t:b{k}") for k in range(4)] + [chain("t:chain"), broken])
        whole = score(s, ["chars4", "cjk"])
    expected = summarise(whole)
    out = tmp_path / f"calls{suffix}"
    # one session per batch: every summary figure and every written row as from the whole frame
    streamed = score_store(db, ["chars4", "cjk"], calls=out, batch_calls=1)
    assert streamed.equals(expected)
    read = {".parquet": pl.read_parquet, ".csv": pl.read_csv, ".jsonl": pl.read_ndjson}[suffix](out)
    frame = call_frame(whole)
    assert read.height == frame.height
    key = ["estimator", "session", "call"]
    assert read.sort(key)["predicted_ctx"].to_list() == frame.sort(key)["predicted_ctx"].to_list()
