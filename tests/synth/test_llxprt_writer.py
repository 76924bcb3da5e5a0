"""The llxprt-code writer: hand-built sessions written in both layouts, read as files and back through ingest."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from calib.core.errors import UsageError
from calib.ingest.pipeline import ingest
from calib.store.store import Store
from calib.synth.llxprt import LAYOUTS, write
from calib.synth.model import Step, SynthSession, ToolUse, Turn, Usage

T0 = datetime(2026, 3, 2, 9, 0, 0)
SID = "0b7d1f6e-8a24-4c55-9e3f-2d6a1c9b7e40"


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def session(provider: str = "anthropic", model: str = "claude-sonnet-4-5") -> SynthSession:
    """A tool loop with reasoning and cache, then a compacted turn whose first call lost its usage."""
    return SynthSession(
        tool="llxprt",
        id=SID,
        title="Fix the parser",
        project_dir="/work/proj",
        started_at=T0,
        provider=provider,
        model=model,
        turns=[
            Turn(
                "u1",
                T0,
                "Fix the bug",
                [
                    Step(
                        "a1",
                        at(2),
                        Usage(ctx=1000, output=50, reasoning=10, cache_read=800, cache_write=100),
                        reasoning="think",
                        text="Reading.",
                        tools=[ToolUse("c1", "read_file", '{"absolute_path":"/work/proj/a.py"}', "x = 1")],
                    ),
                    Step("a2", at(9), Usage(ctx=1100, output=5, cache_read=1000), text="Fixed."),
                ],
            ),
            Turn(
                "u2",
                at(60),
                "And the tests?",
                [
                    Step("a3", at(62), None, text="Running.", compacted=True, summary="<state_snapshot/>"),
                    Step("a4", at(70), Usage(ctx=400, output=7, reasoning=3), text="They pass."),
                ],
            ),
        ],
    )


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_recording_and_log_sit_where_llxprt_keeps_them(tmp_path: Path) -> None:
    files = write([session()], tmp_path, "llxprt-chats-usage")
    temp = tmp_path / ".local/state/llxprt-code/tmp" / hashlib.sha256(b"/work/proj").hexdigest()
    assert files == [
        temp / "chats" / f"session-2026-03-02T09-00-02-{SID[:12]}.jsonl",
        temp / "token-usage" / f"{SID}.jsonl",
    ]
    (alone,) = write([session()], tmp_path / "v10", "llxprt-chats")
    assert alone == tmp_path / "v10" / files[0].relative_to(tmp_path)
    start = _lines(alone)[0]["payload"]
    assert "cwd" not in start and start["workspaceDirs"] == ["/work/proj"]  # v0.10.0 wrote no cwd


def test_recording_lines_are_envelopes_with_per_call_usage(tmp_path: Path) -> None:
    recording, log = write([session("google", "gemini-2.5-pro")], tmp_path, "llxprt-chats-usage")
    lines = _lines(recording)
    assert [x["seq"] for x in lines] == list(range(1, len(lines) + 1))
    assert {x["v"] for x in lines} == {1}
    assert [x["type"] for x in lines] == [
        "session_start",
        "session_metadata",
        "content",  # human
        "content",  # ai a1
        "content",  # tool results
        "content",  # ai a2
        "compressed",
        "content",  # human
        "content",  # ai a3
        "content",  # ai a4
    ]
    assert lines[0]["payload"]["provider"] == "gemini" and lines[0]["payload"]["sessionId"] == SID
    ai = [
        x["payload"]["content"]
        for x in lines
        if x["type"] == "content" and x["payload"]["content"]["speaker"] == "ai"
    ]
    # Gemini's completion leaves the thoughts out; its total adds them.
    assert ai[0]["metadata"]["usage"] == {"promptTokens": 1000, "completionTokens": 50, "totalTokens": 1060}
    assert "usage" not in ai[2]["metadata"]
    assert [b["type"] for b in ai[0]["blocks"]] == ["thinking", "text", "tool_call"]
    records = _lines(log)
    assert [r["record_type"] for r in records] == ["turn", "turn", "compression", "turn"]
    assert [r["actual_prompt_tokens"] for r in records if r["record_type"] == "turn"] == [1000, 1100, 400]
    assert records[0]["reasoning_tokens"] == 10 and "cache_write_tokens" not in records[0]


def test_anthropic_usage_folds_thinking_into_completion_and_reports_cache_writes(tmp_path: Path) -> None:
    recording, log = write([session()], tmp_path, "llxprt-chats-usage")
    ai = [x["payload"]["content"] for x in _lines(recording) if x["type"] == "content"][1]
    assert ai["metadata"]["usage"]["completionTokens"] == 60
    first = _lines(log)[0]
    assert (first["cache_write_tokens"], first["cached_tokens"], "reasoning_tokens" in first) == (
        100,
        800,
        False,
    )


def test_every_seventh_billed_step_has_a_failed_attempt_first(tmp_path: Path) -> None:
    long = session("openai", "gpt-5")
    long.turns[0].steps = [
        Step(f"s{i}", at(2 + i), Usage(ctx=1000 + i, output=1), tools=[ToolUse(f"c{i}", "ls", "{}", ".")])
        for i in range(8)
    ]
    _, log = write([long], tmp_path, "llxprt-chats-usage")
    turns = [r for r in _lines(log) if r["record_type"] == "turn"]
    assert [(r["attempt_index"], r["attempt_outcome"], r["actual_prompt_tokens"]) for r in turns[6:8]] == [
        (0, "error", 0),
        (1, "success", 1006),
    ]
    assert turns[6]["turn_id"] == turns[7]["turn_id"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("provider", ["anthropic", "openai", "google"])
def test_ingest_gives_back_the_usage_written(tmp_path: Path, layout: str, provider: str) -> None:
    model = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-5", "google": "gemini-2.5-pro"}[provider]
    write([session(provider, model)], tmp_path / "data", layout)
    store = Store(tmp_path / "calib.duckdb")
    outcome = ingest([tmp_path / "data"], store=store)
    assert outcome.ok, [str(e) for e in outcome.errors]
    with store:
        calls = store.calls().sort("seq").to_dicts()
        parts = store.parts().sort("seq").to_dicts()
        estimates = store.agent_estimates()
    assert [c["usage_status"] for c in calls] == ["ok", "ok", "missing", "ok"]
    assert [c["ctx"] for c in calls] == [1000, 1100, None, 400]
    folded = 0 if provider == "google" else 1
    assert [c["carry"] for c in calls] == [50 + 10 * folded, 5, None, 7 + 3 * folded]
    joined = layout == "llxprt-chats-usage"
    assert calls[0]["cache_read"] == (800 if joined else None)
    assert calls[0]["cache_write"] == (100 if joined and provider == "anthropic" else None)
    assert calls[0]["reasoning"] == (10 if joined and provider != "anthropic" else None)
    assert (calls[2]["prompt_start"], calls[3]["prompt_start"]) == (6, 6)
    assert [p["kind"] for p in parts[6:8]] == ["summary", "user_text"]
    assert [p["resent"] for p in parts if p["kind"] == "reasoning"] == [provider != "google"]
    assert sorted(estimates["actual"].to_list()) == ([400, 1000, 1100] if joined else [])


def test_unknown_layout_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown llxprt layout"):
        write([session()], tmp_path, "llxprt-db")
