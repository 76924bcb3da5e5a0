"""calib cost: each call priced from genai-prices' table with the right counts in the right places, summed
per group; unknown models, uncached calls and calls without usage said, never guessed."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from benchmarks.harness import find_ccusage
from genai_prices import Usage, calc_price
from helpers import shared_fixture
from typer.testing import CliRunner

from calib.analysis.cost import run_cost
from calib.core.errors import UsageError
from calib.core.records import Call, ParsedSession, Part, Session
from calib.store.store import Store

DAY1, DAY2 = datetime(2026, 3, 2, 10, 0), datetime(2026, 3, 3, 9, 30)


def _session(uid: str, tool: str, calls: list[Call]) -> ParsedSession:
    parts = [Part(f"{uid}:p0", uid, 0, "user", "user_text", "hello")]
    return ParsedSession(Session(uid, tool, uid.split(":")[1], f"/logs/{uid}.jsonl", "test"), calls, parts)


def _call(uid: str, k: int, style: str, provider: str, model: str, ts: datetime, **usage: Any) -> Call:
    return Call(f"{uid}:c{k}", uid, k, 0, 1, "ok", style, ts=ts, provider=provider, model=model, **usage)  # type: ignore[arg-type]


def _per_mtok(model: str, provider: str, when: datetime) -> Any:
    """The table's prices of `model` at `when` (per million tokens, below any tier)."""
    price = calc_price(
        Usage(input_tokens=1, output_tokens=1),
        model,
        provider_id=provider,
        genai_request_timestamp=when.replace(tzinfo=UTC),
    ).model_price

    def base(value: Any) -> Decimal:
        return Decimal(0) if value is None else getattr(value, "base", value)

    return {
        k: base(getattr(price, f"{k}_mtok"))
        for k in ("input", "output", "cache_read", "cache_write", "cache_write_1h")
    }


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "calib.duckdb") as s:
        claude = "claude-code:a"
        s.write(
            [
                _session(
                    claude,
                    "claude-code",
                    [
                        # 5-minute writes only (no split recorded)
                        _call(claude, 0, "anthropic", "anthropic", "claude-opus-4-6", DAY1, input=10, output=200,
                              cache_read=0, cache_write=20_000, ctx=20_010, carry=200),
                        # the raw usage splits the writes: 1-hour ones cost more
                        _call(claude, 1, "anthropic", "anthropic", "claude-opus-4-6", DAY1, input=4, output=50,
                              cache_read=20_010, cache_write=3_000, ctx=23_014, carry=50,
                              usage_raw={"cache_creation": {"ephemeral_5m_input_tokens": 1_000,
                                                            "ephemeral_1h_input_tokens": 2_000}}),
                    ],
                ),
                _session(
                    "codex:b",
                    "codex",
                    # OpenAI style: the prompt holds its cached part, the output its reasoning
                    [_call("codex:b", 0, "openai", "openai", "gpt-5.4", DAY2, input=50_000, output=900, reasoning=600,
                           cache_read=40_000, ctx=50_000, carry=300)],
                ),
                _session(
                    "gemini-cli:c",
                    "gemini-cli",
                    [
                        # Gemini style: thoughts apart from the output, the tool-use prompt apart from the prompt
                        _call("gemini-cli:c", 0, "gemini", "google", "gemini-3-flash-preview", DAY2, input=8_000,
                              output=100, reasoning=400, cache_read=5_000, tool_prompt=30, ctx=8_000, carry=100),
                        # no cache field at all: priced as uncached
                        _call("gemini-cli:c", 1, "gemini", "google", "gemini-3-flash-preview", DAY2, input=9_000,
                              output=10, ctx=9_000, carry=10),
                        # no usage: neither tokens nor dollars
                        Call("gemini-cli:c:c2", "gemini-cli:c", 2, 0, 1, "missing", "gemini", ts=DAY2,
                             provider="google", model="gemini-3-flash-preview"),
                    ],
                ),
                _session(
                    "opencode:d",
                    "opencode",
                    [_call("opencode:d", 0, "anthropic", "opencode", "mystery-model-9", DAY2, input=1_000, output=10,
                           cache_read=0, cache_write=0, ctx=1_000, carry=10)],
                ),
            ]
        )  # fmt: skip
        yield s


def test_each_call_is_priced_from_the_table_with_its_counts_in_their_places(store: Store) -> None:
    db = store.path
    store.close()
    opus = _per_mtok("claude-opus-4-6", "anthropic", DAY1)
    gpt = _per_mtok("gpt-5.4", "openai", DAY2)
    flash = _per_mtok("gemini-3-flash-preview", "google", DAY2)
    m = Decimal(1_000_000)
    claude = (
        # uncached input is the prompt less what was read or written
        (10 * opus["input"] + 20_000 * opus["cache_write"] + 200 * opus["output"])
        + (4 * opus["input"] + 20_010 * opus["cache_read"] + 1_000 * opus["cache_write"] + 2_000 * opus["cache_write_1h"]
           + 50 * opus["output"])
    ) / m  # fmt: skip
    codex = (10_000 * gpt["input"] + 40_000 * gpt["cache_read"] + 900 * gpt["output"]) / m
    gemini = (
        (3_030 * flash["input"] + 5_000 * flash["cache_read"] + 500 * flash["output"])
        + (9_000 * flash["input"] + 10 * flash["output"])
    ) / m
    assert opus["cache_write_1h"] > opus["cache_write"] > opus["input"]  # the split matters
    report = run_cost(db, by="agent")
    rows = {r["agent"]: r for r in report.rows}
    assert rows["claude-code"]["usd"] == pytest.approx(float(claude), abs=1e-6)
    assert rows["codex"]["usd"] == pytest.approx(float(codex), abs=1e-6)
    assert rows["gemini-cli"]["usd"] == pytest.approx(float(gemini), abs=1e-6)
    # tokens: the whole prompt as input (gemini's tool-use prompt in it), the billed output
    assert (rows["codex"]["input_tokens"], rows["codex"]["output_tokens"]) == (50_000, 900)
    assert (rows["gemini-cli"]["input_tokens"], rows["gemini-cli"]["output_tokens"]) == (17_030, 510)
    assert (rows["gemini-cli"]["uncached_calls"], rows["gemini-cli"]["no_usage_calls"]) == (1, 1)
    assert rows["gemini-cli"]["calls"] == 3 and rows["gemini-cli"]["priced_calls"] == 2
    # a model the table does not know: its tokens, no dollars, and it is named
    assert rows["opencode"]["usd"] is None and rows["opencode"]["input_tokens"] == 1_000
    assert rows["opencode"]["unpriced_calls"] == 1
    assert report.unpriced_models == ["opencode/mystery-model-9"]
    assert report.total["usd"] == pytest.approx(float(claude + codex + gemini), abs=1e-6)
    notes = report.notes()
    assert any("1 calls of models genai-prices" in n and "mystery-model-9" in n for n in notes)
    assert "1 calls recorded no cache field: priced as all uncached input" in notes
    assert "1 calls have no usage: neither tokens nor dollars" in notes
    assert report.prices.startswith("genai-prices ")


def test_groups_by_session_model_and_day_add_up_to_the_same_total(store: Store) -> None:
    db = store.path
    store.close()
    totals = {}
    for by in ("session", "model", "agent", "day"):
        report = run_cost(db, by=by)
        assert sum(r["calls"] for r in report.rows) == 7
        totals[by] = sum(r["usd"] or 0 for r in report.rows)
    assert len({round(t, 6) for t in totals.values()}) == 1
    days = {r["day"]: r["calls"] for r in run_cost(db, by="day").rows}
    assert days == {"2026-03-02": 2, "2026-03-03": 5}
    sessions = run_cost(db, by="session").rows
    assert [r["session"] for r in sessions] == sorted(r["session"] for r in sessions)
    assert sessions[0]["file"] == "/logs/claude-code:a.jsonl"


def test_a_provider_the_table_lacks_is_priced_by_the_model_name_and_said(tmp_path: Path) -> None:
    # OpenCode names its own gateway as the provider; the table knows the model under Anthropic
    with Store(tmp_path / "calib.duckdb") as s:
        uid = "opencode:e"
        s.write([_session(uid, "opencode", [_call(uid, 0, "anthropic", "opencode", "claude-opus-4-6", DAY1,
                                                  input=1_000, output=10, cache_read=0, cache_write=0,
                                                  ctx=1_000, carry=10)])])  # fmt: skip
        db = s.path
    report = run_cost(db, by="model")
    opus = _per_mtok("claude-opus-4-6", "anthropic", DAY1)
    assert report.rows[0]["usd"] == pytest.approx(
        float((1_000 * opus["input"] + 10 * opus["output"]) / 1_000_000)
    )
    assert report.priced_elsewhere == ["opencode/claude-opus-4-6 as anthropic/claude-opus-4-6"]
    assert any(n.startswith("priced under another provider's entry of the table") for n in report.notes())


def test_one_session_or_one_agent_and_their_errors(store: Store) -> None:
    db = store.path
    store.close()
    assert [r["session"] for r in run_cost(db, session="b").rows] == ["codex:b"]
    assert [r["agent"] for r in run_cost(db, by="agent", agent="codex").rows] == ["codex"]
    with pytest.raises(UsageError) as err:
        run_cost(db, agent="cline")
    assert err.value.what == "no session of agent 'cline' in the store"
    assert err.value.hint == "agents in it: claude-code, codex, gemini-cli, opencode"
    with pytest.raises(UsageError) as err:
        run_cost(db, by="week")
    assert (err.value.what, err.value.hint) == (
        "cannot group costs by 'week'",
        "use one of: session, model, agent, day",
    )


def test_the_cli_prints_the_table_the_json_and_the_notes(store: Store) -> None:
    from calib.cli.app import app

    db = str(store.path)
    store.close()
    result = CliRunner().invoke(app, ["cost", "--db", db, "--by", "model", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["by"] == "model" and doc["unpriced_models"] == ["opencode/mystery-model-9"]
    assert {
        "calls",
        "input_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "output_tokens",
        "usd",
    } <= set(doc["rows"][0])
    result = CliRunner().invoke(app, ["cost", "--db", db, "--by", "agent"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "total" in out and "Note: 1 calls have no usage: neither tokens nor dollars." in out
    assert "Prices: genai-prices 0.2.3 (offline)" in out
    result = CliRunner().invoke(app, ["cost", "--db", db, "--by", "week"])
    assert result.exit_code == 2
    assert "Error: cannot group costs by 'week'" in result.output


@pytest.mark.realdata
@pytest.mark.parametrize(("agent", "env"), [("claude-code", "CLAUDE_CONFIG_DIR"), ("codex", "CODEX_HOME")])
def test_dollars_per_session_equal_ccusage(tmp_path: Path, agent: str, env: str) -> None:
    """Both price each call alone with the cache at its rates (Claude Code's 1-hour writes included), so
    the dollars agree to the micro-dollar wherever both tables know the model; ccusage (LiteLLM's
    table) also prices gpt-5.3-codex-spark, which genai-prices 0.2.3 does not."""
    from calib.ingest.pipeline import ingest_sessions

    ccusage = find_ccusage()
    if ccusage is None:
        pytest.skip("ccusage not found: set $CALIB_CCUSAGE or put ccusage on PATH")
    root = shared_fixture(agent)
    db = tmp_path / "calib.duckdb"
    ingest_sessions([root], db=db)
    with Store(db, read_only=True) as store:
        native = dict(store.query("SELECT session_uid, native_id FROM sessions").iter_rows())
    ours = {native[r["session"]]: r for r in run_cost(db, by="session").rows}
    compared = 0
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        sub = "claude" if agent == "claude-code" else "codex"
        run = subprocess.run(
            [ccusage, sub, "session", "--json", "--offline"],
            env={**os.environ, env: str(folder), "NO_COLOR": "1"},
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        for theirs in json.loads(run.stdout)["sessions"]:
            # Claude Code names the session, Codex its rollout file (which holds the session id)
            key, usd = theirs["sessionId"], theirs.get("totalCost", theirs.get("costUSD"))
            mine = next(v for k, v in ours.items() if k == key or k in key)
            if mine["unpriced_calls"]:
                assert mine["usd"] is None or mine["usd"] < usd
                continue
            assert mine["usd"] == pytest.approx(usd, abs=1e-5), key
            compared += 1
    assert compared >= (30 if agent == "claude-code" else 8)
