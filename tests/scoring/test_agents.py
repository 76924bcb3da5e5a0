"""The agents' own logged estimates, scored as `agent:TOOL` (`calib.scoring.agents`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from calib.cli.app import app
from calib.core.records import AgentEstimate
from calib.ingest.pipeline import ingest
from calib.scoring.agents import agent_estimate_summary
from calib.scoring.chain import is_holdout
from calib.store.store import Store
from calib.synth import write_sample


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Dexto's logs and llxprt-code's token-usage logs, each with its own estimate of every prompt."""
    root = tmp_path_factory.mktemp("agents")
    write_sample("dexto", root / "dexto", sessions=6, layout="dexto-log")
    write_sample("llxprt", root / "llxprt", sessions=6, layout="llxprt-chats-usage")
    path = root / "calib.duckdb"
    with Store(path) as store:
        assert ingest([root / "dexto", root / "llxprt"], store=store).ok
    return path


def _pairs(store: Store, tool: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    rows = store.con.execute(
        "SELECT e.estimated, e.actual, e.session_uid FROM agent_estimates e JOIN sessions s USING "
        "(session_uid) WHERE s.tool = ? AND e.actual > 0",
        [tool],
    ).fetchall()
    return np.array([r[0] for r in rows], float), np.array([r[1] for r in rows], float), [r[2] for r in rows]


def test_each_agents_pairs_are_scored_by_hand(db: Path) -> None:
    with Store(db, read_only=True) as store:
        summary = agent_estimate_summary(store)
        assert summary["estimator"].to_list() == ["agent:dexto", "agent:llxprt"]
        for row in summary.to_dicts():
            estimated, actual, _ = _pairs(store, row["estimator"].removeprefix("agent:"))
            error = (estimated - actual) / actual
            assert row["calls"] == row["e2e_calls"] == len(actual) > 10
            assert row["ctx_err_p50"] == pytest.approx(np.quantile(np.abs(error), 0.5))
            assert row["ctx_err_p90"] == pytest.approx(np.quantile(np.abs(error), 0.9))
            assert row["ctx_err_p99"] == row["e2e_err_p99"] == pytest.approx(np.quantile(np.abs(error), 0.99))
            assert row["ctx_err_mean"] == pytest.approx(error.mean())
            assert row["ctx_bias"] == pytest.approx(estimated.sum() / actual.sum())
            assert row["provider"] is None and row["model"] is None


def test_the_split_is_by_session_and_a_pair_without_one_is_unknown(db: Path, tmp_path: Path) -> None:
    with Store(db, read_only=True) as store:
        whole = {r["estimator"]: r["calls"] for r in agent_estimate_summary(store).to_dicts()}
        train = {
            r["estimator"]: r["calls"] for r in agent_estimate_summary(store, sessions="train").to_dicts()
        }
        held = {
            r["estimator"]: r["calls"] for r in agent_estimate_summary(store, sessions="holdout").to_dicts()
        }
        _, _, uids = _pairs(store, "dexto")
    expected_held = sum(is_holdout(uid) for uid in uids)
    assert held.get("agent:dexto", 0) == expected_held and train["agent:dexto"] == len(uids) - expected_held
    assert {k: train.get(k, 0) + held.get(k, 0) for k in whole} == whole
    # an older shared log line names no session: its agent is not known, and it is in neither split
    lone = tmp_path / "lone.duckdb"
    with Store(lone) as store:
        store.write([AgentEstimate(None, "/logs/shared.log", 3, estimated=900, actual=1000)])
        rows = agent_estimate_summary(store).to_dicts()
        assert [(r["estimator"], r["calls"], r["ctx_bias"]) for r in rows] == [("agent:unknown", 1, 0.9)]
        assert agent_estimate_summary(store, sessions="holdout").is_empty()
    # a store without any pair has no agent rows
    with Store(tmp_path / "empty.duckdb") as store:
        assert agent_estimate_summary(store).is_empty()


def test_calib_score_lists_them_after_the_estimators(db: Path) -> None:
    result = CliRunner().invoke(app, ["score", "--db", str(db), "-e", "chars4", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    names = [r["estimator"] for r in rows]
    assert names[-2:] == ["agent:dexto", "agent:llxprt"] and "chars4" in names
    result = CliRunner().invoke(app, ["score", "--db", str(db), "-e", "chars4"], env={"COLUMNS": "220"})
    assert result.exit_code == 0, result.output
    assert "agent:llxprt" in result.stdout and "(all)" in result.stdout
