from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path

import jsonschema
import polars as pl
import pytest
from helpers import shared_fixture
from typer.testing import CliRunner

from calib.calibration.pipeline import run_fit
from calib.cli.app import app
from calib.core.config import load_config, schema
from calib.ingest.pipeline import ingest
from calib.scoring.score import score, summarise
from calib.store.store import Store

WORDS = [
    "read",
    "write",
    "file",
    "test",
    "value",
    "error",
    "return",
    "import",
    "class",
    "def",
    "for",
    "while",
    "list",
    "dict",
]
RATIO, OVERHEAD = 1.3, 5  # the provider counts 1.3 x chars4 of every input part, plus 5 per part


def _chars4(text: str) -> int:
    return (len(text) + 2) // 4


def _write_gemini_sessions(root: Path, n: int, seed: int = 0) -> None:
    """Legacy gemini-cli recordings (layout B) whose usage follows RATIO and OVERHEAD exactly."""
    rng = random.Random(seed)
    chats = root / ".gemini" / "tmp" / ("ab" * 32) / "chats"
    chats.mkdir(parents=True)
    for s in range(n):
        session_id = f"{s:08x}-0000-4000-8000-{s:012x}"
        start = datetime(2026, 3, 1, 9) + timedelta(hours=s)
        model = ("gemini-2.5-pro", "gemini-2.5-flash")[s % 2]
        ctx = 9000 + rng.randint(0, 500)
        messages = []
        ts = start
        prompt = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 80)))
        messages.append({"id": f"u{s}", "timestamp": ts.isoformat() + "Z", "type": "user", "content": prompt})
        ctx += round(RATIO * _chars4(prompt)) + OVERHEAD
        for k in range(rng.randint(4, 9)):
            ts += timedelta(seconds=20)
            answer = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30)))
            output = rng.randint(10, 60)
            outputs = [
                " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 300)))
                for _ in range(rng.randint(1, 2))
            ]
            tool_calls = [
                {
                    "id": f"read_file_{s}_{k}_{i}",
                    "name": "read_file",
                    "args": {"path": f"f{i}.py"},
                    "result": [
                        {
                            "functionResponse": {
                                "id": f"read_file_{s}_{k}_{i}",
                                "name": "read_file",
                                "response": {"output": out},
                            }
                        }
                    ],
                    "status": "success",
                    "timestamp": ts.isoformat() + "Z",
                }
                for i, out in enumerate(outputs)
            ]
            tokens = {
                "input": ctx,
                "output": output,
                "cached": 0,
                "thoughts": 0,
                "tool": 0,
                "total": ctx + output,
            }
            messages.append(
                {"id": f"g{s}-{k}", "timestamp": ts.isoformat() + "Z", "type": "gemini", "content": answer,
                 "thoughts": [], "tokens": tokens, "model": model, "toolCalls": tool_calls}
            )  # fmt: skip
            ctx += output + sum(round(RATIO * _chars4(o)) + OVERHEAD for o in outputs)
        record = {
            "sessionId": session_id,
            "projectHash": "ab" * 32,
            "startTime": start.isoformat() + "Z",
            "lastUpdated": ts.isoformat() + "Z",
            "messages": messages,
        }
        name = f"session-{start:%Y-%m-%dT%H-%M}-{session_id[:8]}.json"
        (chats / name).write_text(json.dumps(record, indent=2), encoding="utf-8")


@pytest.fixture(scope="module")
def sessions_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gemini")
    _write_gemini_sessions(root, 40)
    return root


def test_run_fit_end_to_end(sessions_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    report = run_fit([sessions_dir], db=tmp_path / "c.duckdb", base="chars4", out=out)
    assert report.ingest is not None and report.ingest.sessions == 40 and not report.ingest.errors
    doc = load_config(out)
    assert doc == report.config
    jsonschema.validate(doc, schema())
    models = doc["providers"]["google"]["models"]
    assert set(models) == {"gemini-2.5-pro", "gemini-2.5-flash"}
    for params in models.values():
        assert params["ratios"]["tool"] == pytest.approx(RATIO, rel=0.01)
        assert params["message_overhead"] == pytest.approx(OVERHEAD, rel=0.05)
    assert report.holdout_sessions > 0 and report.train_calls > report.holdout_calls > 0
    assert {(r["provider"], r["model"]) for r in report.rows} == {("google", m) for m in models}
    for row in report.rows:
        assert row["delta_mae_after"] < 1.0 < row["delta_mae_before"]
        assert row["ctx_err_p90_after"] < row["ctx_err_p90_before"]
        assert row["level"] == f"google/{row['model']}"
    # re-running on the same store ingests nothing new and writes the same bytes
    again = run_fit([sessions_dir], db=tmp_path / "c.duckdb", base="chars4", out=tmp_path / "again.json")
    assert again.ingest is not None and again.ingest.sessions == 0
    assert (tmp_path / "again.json").read_bytes() == out.read_bytes()


@pytest.fixture(scope="module")
def sessions_db(sessions_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("store") / "c.duckdb"
    assert not ingest([sessions_dir], db=db).errors
    return db


@pytest.mark.parametrize("holdout", [0.5, 0.0])
def test_run_fit_in_batches_equals_one_batch(sessions_db: Path, tmp_path: Path, holdout: float) -> None:
    db, whole_out, batched_out = sessions_db, tmp_path / "whole.json", tmp_path / "batched.json"
    whole = run_fit(db=db, out=whole_out, holdout_fraction=holdout, ingest=False, batch_calls=10**9)
    # batches of a few sessions: the same config and held-out figures as from every call at once
    batched = run_fit(db=db, out=batched_out, holdout_fraction=holdout, ingest=False, batch_calls=40)
    assert batched_out.read_bytes() == whole_out.read_bytes()
    apart = {"out": None, "ingest": None}  # where each wrote its config; neither ingested
    assert {**batched.to_dict(), **apart} == {**whole.to_dict(), **apart}
    assert whole.train_calls > 0 and all(row["calls"] > 0 for row in whole.rows)
    if holdout:
        assert whole.holdout_sessions > 1 and whole.holdout_calls > 0
    else:  # nothing held out: the comparison runs on the training sessions
        assert whole.holdout_sessions == whole.holdout_calls == 0


def test_cli_fit_json_and_scoring_the_export(sessions_dir: Path, tmp_path: Path) -> None:
    db, out = tmp_path / "c.duckdb", tmp_path / "cal.json"
    runner = CliRunner()
    result = runner.invoke(
        app, ["fit", str(sessions_dir), "--db", str(db), "--out", str(out), "--json", "-q"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["base"] == "auto" and document["fallback"] == "charclass"
    assert document["out"] == str(out) and set(document["bases"]) == {"google"}
    assert document["config"] == json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(document["config"], schema())
    assert {m["model"] for m in document["models"]} == {"gemini-2.5-pro", "gemini-2.5-flash"}
    scored = runner.invoke(
        app,
        [
            "score",
            "--db",
            str(db),
            "--sessions",
            "holdout",
            "--json",
            "-e",
            f"calibrated:{out}",
            "-e",
            "chars4",
        ],
    )
    assert scored.exit_code == 0, scored.output
    rows = json.loads(scored.stdout)
    by = {(r["estimator"], r["model"]): r for r in rows}
    for model in ("gemini-2.5-pro", "gemini-2.5-flash"):
        assert by[(f"calibrated:{out}", model)]["delta_mae"] < by[("chars4", model)]["delta_mae"]
    text = runner.invoke(app, ["fit", "--db", str(db), "--out", str(out), "--base", "chars4"])
    assert text.exit_code == 0, text.output
    assert "gemini-2.5-flash" in text.stdout and "→" in text.stdout


def test_fit_on_an_empty_store_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["fit", "--db", str(tmp_path / "e.duckdb"), "--out", str(tmp_path / "x.json")]
    )
    assert result.exit_code == 2
    assert "no scorable calls" in result.output
    assert not (tmp_path / "x.json").exists()


@pytest.mark.realdata
def test_real_gemini_sessions(tmp_path: Path) -> None:
    fixtures = shared_fixture("gemini")
    db, out = tmp_path / "g.duckdb", tmp_path / "calibration.json"
    report = run_fit([fixtures], db=db, out=out)
    with Store(db) as store:
        seen = set(store.query("SELECT DISTINCT model FROM calls WHERE usage_status = 'ok'")["model"])
        rows = score(store, [f"calibrated:{out}", "chars4", "tiktoken:o200k_base"], sessions="holdout")
    jsonschema.validate(load_config(out), schema())
    assert set(report.config["providers"]["google"]["models"]) == seen
    summary = summarise(rows)
    held_models = summary.filter(pl.col("calls") > 0)["model"].unique().to_list()
    assert held_models
    for model in held_models:
        by = {r["estimator"]: r for r in summary.filter(pl.col("model") == model).to_dicts()}
        calibrated = by[f"calibrated:{out}"]
        for other in ("chars4", "tiktoken:o200k_base"):
            assert calibrated["calls"] == by[other]["calls"]
            assert calibrated["delta_mae"] < by[other]["delta_mae"], (model, other)
            assert calibrated["ctx_err_p90"] < by[other]["ctx_err_p90"], (model, other)


def test_fit_with_no_path_says_which_agent_folders_it_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from calib.synth import write_sample

    home = tmp_path / "home"
    made = write_sample("gemini-cli", home, sessions=6)
    monkeypatch.setenv("HOME", str(home))
    for variable in ("GEMINI_CLI_HOME", "XDG_DATA_HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(variable, raising=False)
    report = run_fit(db=tmp_path / "h.duckdb", out=None, candidates=["chars4"], holdout_fraction=0)
    assert [(f["tools"], f["sessions"]) for f in report.folders] == [(["gemini-cli"], made.sessions)]
    assert report.folders[0]["path"].startswith(str(home))
    result = CliRunner().invoke(
        app,
        ["fit", "--db", str(tmp_path / "i.duckdb"), "--out", str(tmp_path / "c.json"), "-q"],
        env={"HOME": str(home)},
    )
    assert result.exit_code == 0, result.output
    assert f"{report.folders[0]['path']}: {made.sessions} sessions (gemini-cli)" in result.stdout
