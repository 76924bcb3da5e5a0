"""The gemini-cli writer: a hand-built synthetic session written in each layout reads back exactly."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest

from calib.core.errors import UsageError
from calib.importers import sniff_file
from calib.importers.gemini_cli import IMPORTER, thought_text
from calib.ingest.pipeline import ingest
from calib.store.store import Store
from calib.synth.gemini_cli import LAYOUTS, thought_for, write
from calib.synth.model import Step, SynthSession, ToolUse, Turn, Usage

PROJECT = "/home/dev/Shop API"


def _session() -> SynthSession:
    t = datetime(2026, 5, 1, 10, 0, 0)

    def at(second: int) -> datetime:
        return t.replace(second=second)

    read = ToolUse(
        "read_file_1", "read_file", json.dumps({"path": "app.py"}, separators=(",", ":")), "import os\n"
    )
    shell = ToolUse(
        "run_shell_command_2",
        "run_shell_command",
        json.dumps({"command": "pytest -q", "note": "测试"}, ensure_ascii=False, separators=(",", ":")),
        "Exit Code: 1\n1 failed",
        is_error=True,
    )
    turns = [
        Turn(
            "7c1f0a52-0000-4000-8000-000000000001",
            at(1),
            "Why do the tests fail?",
            [
                Step(
                    "7c1f0a52-0000-4000-8000-000000000002",
                    at(5),
                    Usage(ctx=8000, output=40, reasoning=120, cache_read=6000),
                    reasoning="**Reading the code**\n\nI should look at app.py first.",
                    tools=[read, shell],
                ),
                Step(
                    "7c1f0a52-0000-4000-8000-000000000003",
                    at(9),
                    Usage(ctx=8300, output=25),
                    reasoning="plain reasoning without a subject",
                    text="The import is unused.",
                    error="quota warning",
                ),
            ],
        ),
        Turn(
            "7c1f0a52-0000-4000-8000-000000000004",
            at(20),
            "修复它",
            [
                Step(
                    "7c1f0a52-0000-4000-8000-000000000005",
                    at(25),
                    Usage(ctx=2100, output=30, reasoning=10),
                    text="Fixed.",
                    compacted=True,
                    summary="<state_snapshot>tests fail on an unused import</state_snapshot>",
                ),
                Step("7c1f0a52-0000-4000-8000-000000000006", at(30), None, text="Anything else?"),
            ],
        ),
    ]
    return SynthSession(
        tool="gemini-cli",
        id="7c1f0a52-aaaa-4bbb-8ccc-000000000000",
        title="Fix failing tests",
        project_dir=PROJECT,
        started_at=t,
        provider="google",
        model="gemini-2.5-flash",
        turns=turns,
    )


@pytest.mark.parametrize("layout", LAYOUTS)
def test_written_session_reads_back_exactly(tmp_path: Path, store: Store, layout: str) -> None:
    synth = _session()
    paths = write([synth], tmp_path / "out", layout)
    assert len(paths) == 1
    path = paths[0]
    assert path.name == "session-2026-05-01T10-00-7c1f0a52.json" + ("l" if layout == "gemini-jsonl" else "")
    assert path.parent.name == "chats" and sniff_file(path) is IMPORTER

    result = ingest([tmp_path / "out"], store=store)
    assert result.errors == [] and result.sessions == 1
    session = store.sessions().row(0, named=True)
    assert session["layout"] == layout
    assert session["session_uid"] == f"gemini-cli:{synth.id}:2026-05-01T10:00:00.000Z"
    assert session["title"] == ("Fix failing tests" if layout != "gemini-json-string" else None)
    # JSONL builds use slug folders with a .project_root marker; older ones a hash with no registry.
    assert session["project"] == (PROJECT if layout == "gemini-jsonl" else None)

    calls = store.calls()
    steps = synth.steps()
    assert calls["message_id"].to_list() == [s.id for s in steps]
    assert calls["model"].to_list() == ["gemini-2.5-flash"] * 4
    assert calls["usage_status"].to_list() == ["ok", "ok", "ok", "missing"]
    for row, step in zip(calls.iter_rows(named=True), steps, strict=True):
        usage = step.usage
        if usage is None:
            assert row["input"] is None and row["ctx"] is None and row["usage_raw"] is None
            continue
        assert (row["input"], row["ctx"], row["output"], row["carry"]) == (
            usage.ctx,
            usage.ctx,
            usage.output,
            usage.output,
        )
        assert (row["reasoning"], row["cache_read"], row["total"]) == (
            usage.reasoning,
            usage.cache_read,
            usage.ctx + usage.output + usage.reasoning,
        )
    assert calls["delta"].to_list()[1] == 8300 - 8000 - 40

    parts = store.parts()
    for call, step in zip(calls.iter_rows(named=True), steps, strict=True):
        out = parts.filter(pl.col("call_uid") == call["call_uid"])
        assert out["seq"].min() == call["prompt_end"]
        expected = (
            ([("reasoning", step.reasoning)] if step.reasoning else [])
            + ([("assistant_text", step.text)] if step.text else [])
            + [("tool_call", t.args_json) for t in step.tools]
        )
        assert list(zip(out["kind"], out["text"], strict=True)) == expected
        assert out.filter(pl.col("kind") == "reasoning")["resent"].to_list() == [False] * bool(step.reasoning)

    first_call = calls.row(0, named=True)
    results = parts.filter(pl.col("kind") == "tool_result")
    read, shell = steps[0].tools
    # Exactly once each, although JSONL records them in toolCalls[].result and in a synthetic user turn.
    assert results["text"].to_list() == [read.output, shell.output]
    assert results["tool_name"].to_list() == ["read_file", "run_shell_command"]
    assert results["seq"].min() > first_call["prompt_end"]

    users = parts.filter(pl.col("kind") == "user_text")["text"].to_list()
    assert users[:2] == ["Why do the tests fail?", "修复它"]

    compacted = calls.row(2, named=True)
    window = parts.filter(
        (pl.col("seq") >= compacted["prompt_start"]) & (pl.col("seq") < compacted["prompt_end"])
    )
    if layout == "gemini-jsonl":
        assert window["kind"].to_list() == ["summary", "user_text"]
        assert window["text"].to_list() == [steps[2].summary, "修复它"]
        assert calls.row(3, named=True)["prompt_start"] == compacted["prompt_start"]
    else:  # legacy files record no compaction: the whole transcript is the prompt
        assert compacted["prompt_start"] == 0
        assert window["text"].to_list()[0] == "Why do the tests fail?"

    again = ingest([tmp_path / "out"], full=True, store=store)
    assert (again.sessions, again.calls, again.parts) == (0, 0, 0)


def test_jsonl_uses_the_append_log_features(tmp_path: Path) -> None:
    path = write([_session()], tmp_path, "gemini-jsonl")[0]
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert set(records[0]) >= {"sessionId", "projectHash", "startTime", "kind"}
    ids = [r["id"] for r in records if "id" in r]
    assert len(ids) > len(set(ids))  # messages are re-appended as they change
    assert any(isinstance(r.get("$set", {}).get("messages"), list) for r in records)
    responses = [r for r in records if r.get("type") == "user" and "functionResponse" in r["content"][0]]
    assert len(responses) == 1 and len(responses[0]["content"]) == 2
    marker = path.parent.parent / ".project_root"
    assert path.parent.parent.name == "shop-api" and marker.read_text() == PROJECT


def test_null_usage_is_written_as_null_tokens(tmp_path: Path) -> None:
    path = write([_session()], tmp_path, "gemini-json-parts")[0]
    record = json.loads(path.read_text())
    last = [m for m in record["messages"] if m["type"] == "gemini"][-1]
    assert last["tokens"] is None and last["model"] == "gemini-2.5-flash"
    assert "\n  " in path.read_text()  # pretty-printed like JSON.stringify(record, null, 2)


@pytest.mark.parametrize(
    "reasoning", ["**S**\n\nbody", "**S**", "**S**\n\n", "no subject", "**a** then **b**", " **S**\n\nx"]
)
def test_thoughts_read_back_as_the_same_reasoning(reasoning: str) -> None:
    assert thought_text(thought_for(reasoning, datetime(2026, 1, 1))) == reasoning


def test_unknown_layout_lists_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="gemini-jsonl"):
        write([_session()], tmp_path, "gemini-yaml")
