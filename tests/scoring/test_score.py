from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from calib.cli.app import app
from calib.core.records import Call, ParsedSession, Part, Session
from calib.scoring.score import BREAK_REASONS, features, is_holdout, score, summarise, update_estimates
from calib.store.store import Store

T0 = datetime(2026, 1, 5, 9, 0, 0)


def _call(uid: str, k: int, end: int, ctx: int, carry: int, **kw: object) -> Call:
    fields: dict = {"ts": T0 + timedelta(minutes=k), "provider": "openai", "model": "m1"}
    fields.update(kw)
    return Call(
        f"{uid}:c{k}", uid, k, 0, end, "ok", "openai", input=ctx, output=carry, ctx=ctx, carry=carry, **fields
    )


def _basic(uid: str = "t:basic") -> ParsedSession:
    """Three calls; chars4 counts are exact multiples so every figure is known by hand."""
    s = Session(uid, "test", uid, "/x", "test")
    c = [f"{uid}:c{k}" for k in range(3)]
    parts = [
        Part(f"{uid}:p0", uid, 0, "user", "user_text", "a" * 40, message_id="m0"),  # 10
        Part(f"{uid}:p1", uid, 1, "assistant", "assistant_text", "b" * 80, call_uid=c[0]),  # 20
        Part(f"{uid}:p2", uid, 2, "assistant", "reasoning", "r" * 400, call_uid=c[0], resent=False),
        Part(f"{uid}:p3", uid, 3, "assistant", "tool_call", "x" * 8, call_uid=c[0]),  # 2
        Part(f"{uid}:p4", uid, 4, "tool", "tool_result", "y" * 400, message_id="m2"),  # 100
        Part(f"{uid}:p5", uid, 5, "tool", "tool_result", "z" * 200, message_id="m2"),  # 50
        Part(f"{uid}:p6", uid, 6, "assistant", "assistant_text", "c" * 40, call_uid=c[1]),  # 10
        Part(f"{uid}:p7", uid, 7, "user", "user_text", "u" * 100, message_id="m4"),  # 25
    ]
    calls = [
        _call(uid, 0, 1, 1000, 20),
        _call(uid, 1, 6, 1000 + 20 + 160, 10),
        _call(uid, 2, 8, 1180 + 10 + 30, 5),
    ]
    return ParsedSession(s, calls, parts)


def test_delta_estimate_and_prediction_by_hand(store: Store) -> None:
    store.write([_basic()])
    rows = score(store, ["chars4"]).sort("seq")
    assert rows["status"].to_list() == ["baseline", "ok", "ok"]
    assert rows["delta"].to_list() == [None, 160, 30]
    # the appended parts exclude what call k-1 produced (its carry) and parts never re-sent
    assert rows["est_delta"].to_list() == [0.0, 150.0, 25.0]
    assert rows["messages"].to_list() == [0, 2, 1]
    assert rows["pred"].to_list() == [None, 1170.0, 1215.0]
    assert rows["error"].to_list() == [None, -10.0, -5.0]
    # full prompt of call 1: p0 + p1 + p3 + p4 + p5 (the reasoning part was never sent back)
    assert rows["est_full"].to_list() == [10.0, 182.0, 10 + 20 + 2 + 100 + 50 + 10 + 25.0]
    assert rows["full_messages"].to_list() == [1, 3, 4]
    assert rows["static_residual"][0] == 990.0


def test_summary_figures(store: Store) -> None:
    store.write([_basic()])
    summary = summarise(score(store, ["chars4", "cjk"]))
    row = summary.filter(pl.col("estimator") == "chars4").to_dicts()[0]
    assert (row["calls"], row["breaks"], row["baselines"], row["subagent_baselines"]) == (2, 0, 1, 0)
    assert row["delta_mae"] == pytest.approx(7.5)
    assert row["delta_bias"] == pytest.approx(175 / 190)
    rel = sorted([10 / 1180, 5 / 1220])
    assert row["ctx_err_p50"] == pytest.approx((rel[0] + rel[1]) / 2)
    assert row["ctx_err_p99"] == pytest.approx(rel[0] + 0.99 * (rel[1] - rel[0]))
    assert row["breaks_by_reason"] == dict.fromkeys(BREAK_REASONS, 0)
    assert summary.height == 2


def _chain(uid: str, *, subagent: bool = False) -> ParsedSession:
    """Three calls, each after one user message of 40 chars (10 chars4 tokens) and a 5% framing."""
    s = Session(uid, "test", uid, "/x", "test", is_subagent=subagent)
    parts, calls = [], []
    ctx = 2000
    for k in range(3):
        parts.append(Part(f"{uid}:u{k}", uid, 2 * k, "user", "user_text", "q" * 40))
        if k:
            ctx += 10 + 12  # previous carry + this message
        calls.append(_call(uid, k, 2 * k + 1, ctx, 10))
        parts.append(
            Part(
                f"{uid}:a{k}", uid, 2 * k + 1, "assistant", "assistant_text", "w" * 40, call_uid=calls[-1].uid
            )
        )
    return ParsedSession(s, calls, parts)


def _mutate(reason: str, p: ParsedSession) -> None:
    last = p.calls[2]
    if reason == "missing_usage":
        last.usage_status = "turn_summed"
    elif reason == "error":
        last.error = "stream aborted"
    elif reason == "model_change":
        last.model = "m2"
    elif reason == "compaction":
        last.prompt_start = 2
    elif reason == "compaction_summary":
        p.parts[4].kind = "summary"
    elif reason == "rewound":
        last.prompt_end = 2
    elif reason == "pruned":
        p.parts[0].pruned_at = T0 + timedelta(minutes=1, seconds=30)
        p.parts[0].pruned_text = "[cleared]"
    elif reason == "masked":
        p.parts[4].text = "<tool_output_masked>see tool-outputs/x.txt</tool_output_masked>"
    elif reason == "unrecorded":
        p.parts[4].resent = False
        last.ctx = (last.ctx or 0) + 5000
    elif reason == "negative_delta":
        last.ctx = (p.calls[1].ctx or 0) - 500


@pytest.mark.parametrize("reason", [*BREAK_REASONS, "compaction_summary"])
def test_each_chain_break_is_detected(store: Store, reason: str) -> None:
    session = _chain(f"t:{reason}")
    _mutate(reason, session)
    store.write([session])
    rows = score(store, ["chars4"]).sort("seq")
    assert rows["status"].to_list()[:2] == ["baseline", "ok"]
    assert rows["status"][2] == "break"
    assert rows["reason"][2] == reason.removesuffix("_summary")
    assert rows["pred"][2] is None and rows["error"][2] is None
    summary = summarise(rows)  # a model change puts the break in the new model's row
    assert summary["breaks"].sum() == 1 and summary["calls"].sum() == 1
    assert summary["breaks_by_reason"].struct.field(reason.removesuffix("_summary")).sum() == 1


def test_unbroken_chain_and_subagent_baseline(store: Store) -> None:
    store.write([_chain("t:main"), _chain("t:sub", subagent=True)])
    rows = score(store, ["chars4"])
    assert rows.filter(pl.col("status") == "break").is_empty()
    ok = rows.filter(pl.col("status") == "ok")
    assert ok["delta"].to_list() == [12] * 4
    assert ok["est_delta"].to_list() == [10.0] * 4
    summary = summarise(rows).to_dicts()[0]
    assert (summary["baselines"], summary["subagent_baselines"], summary["calls"]) == (1, 1, 4)


def test_pruned_text_counts_once_pruned(store: Store) -> None:
    session = _chain("t:prune")
    # pruned before call 1: call 0 saw the text, calls 1 and 2 the placeholder
    session.parts[0].pruned_at = T0 + timedelta(seconds=30)
    session.parts[0].pruned_text = "[cleared]" * 4  # 36 chars: 9 tokens
    store.write([session])
    rows = score(store, ["chars4"]).sort("seq")
    assert rows["reason"].to_list() == [None, "pruned", None]
    full = rows["est_full"].to_list()
    assert full[0] == 10.0
    assert full[2] == 9 + 10 + 10 + 10 + 10.0


def test_estimates_are_cached_and_stale_rows_recounted(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    session = _basic()
    store.write([session])
    assert update_estimates(store, ["chars4"]) == 8
    assert update_estimates(store, ["chars4"]) == 0
    stored = store.query("SELECT count(*) AS n FROM part_estimates WHERE source = 'chars4'")["n"][0]
    assert stored == 8
    session.parts[7].text = "v" * 12
    store.write([session])  # re-ingest rewrites the session: only the changed text is counted again
    assert update_estimates(store, ["chars4"]) == 1
    tokens = store.query(
        "SELECT tokens FROM part_estimates WHERE part_uid = 't:basic:p7' AND source = 'chars4'"
    )
    assert tokens["tokens"][0] == 3
    from calib.estimators import get_estimator

    monkeypatch.setattr(get_estimator("chars4"), "version", "2", raising=False)
    assert update_estimates(store, ["chars4"]) == 8
    store.write([ParsedSession(Session("t:other", "test", "o", "/y", "test"), [], [])])
    store.con.execute("DELETE FROM parts WHERE part_uid = 't:basic:p0'")
    update_estimates(store, ["chars4"])
    orphans = store.query("SELECT count(*) AS n FROM part_estimates WHERE part_uid = 't:basic:p0'")["n"][0]
    assert orphans == 0


def test_class_counts_are_stored_per_class(store: Store) -> None:
    store.write([_basic()])
    frame = features(store, ["class:letters", "class:digits"])
    row = frame.filter(pl.col("seq") == 1).to_dicts()[0]
    # appended: 400 + 200 letters of tool output, no digits
    assert row["a|class:letters|tool"] == 600.0
    assert row["a|class:digits|tool"] == 0.0
    # DuckDB draws its progress bar on stdout, where `--json` documents go
    assert store.con.execute("SELECT current_setting('enable_progress_bar')").fetchone() == (False,)


def test_holdout_split_is_stable_and_near_its_fraction() -> None:
    uids = [f"gemini-cli:{i}" for i in range(4000)]
    held = [u for u in uids if is_holdout(u, 0.2)]
    assert held == [u for u in uids if is_holdout(u, 0.2)]
    assert 0.17 < len(held) / len(uids) < 0.23
    assert not any(is_holdout(u, 0.0) for u in uids)


def test_cli_score_json(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with Store(db) as s:
        s.write([_basic(), _chain("t:x")])
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


def test_cli_score_unknown_estimator_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with Store(db) as s:
        s.write([_basic()])
    result = CliRunner().invoke(app, ["score", "--db", str(db), "-e", "nope"])
    assert result.exit_code == 1
    assert "unknown estimator 'nope'" in result.output
