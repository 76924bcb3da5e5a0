"""The Qwen Code writer: a hand-built synthetic session written in Qwen Code's layout reads back exactly."""

from __future__ import annotations

import json
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from calib.core.errors import UsageError
from calib.core.records import ParsedSession
from calib.importers import sniff_file
from calib.importers.qwen_code import IMPORTER
from calib.ingest.sources import find_sources
from calib.synth.model import Step, SynthSession, ToolUse, Turn, Usage
from calib.synth.qwen_code import LAYOUTS, project_folder, usage_metadata, write

PROJECT = "/home/dev/Shop API.v2"
SID = "3e9b1d44-aaaa-4bbb-8ccc-000000000000"


def _session(provider: str = "qwen", model: str = "coder-model") -> SynthSession:
    t = datetime(2026, 5, 1, 10, 0, 0)

    def at(second: int) -> datetime:
        return t.replace(second=second)

    read = ToolUse(
        "call_r1", "read_file", json.dumps({"absolute_path": "/app.py"}, separators=(",", ":")), "import os\n"
    )
    shell = ToolUse(
        "call_s2",
        "run_shell_command",
        json.dumps({"command": "pytest -q", "note": "测试"}, ensure_ascii=False, separators=(",", ":")),
        "1 failed",
        is_error=True,
    )
    turns = [
        Turn(
            "t1",
            at(1),
            "Why do the tests fail?",
            [
                Step(
                    "s1",
                    at(5),
                    Usage(ctx=8000, output=40, reasoning=120, cache_read=6000),
                    reasoning="Look at app.py.",
                    tools=[read, shell],
                ),
                Step("s2", at(9), Usage(ctx=8300, output=25), text="The import is unused."),
            ],
        ),
        Turn(
            "t2",
            at(20),
            "修复它",
            [
                Step(
                    "s3",
                    at(25),
                    Usage(ctx=2100, output=30),
                    text="Fixed.",
                    compacted=True,
                    summary="<state_snapshot>tests fail on an unused import</state_snapshot>",
                ),
                Step("s4", at(30), None, text="Anything else?"),
            ],
        ),
    ]
    return SynthSession(
        tool="qwen-code",
        id=SID,
        title="Why do the tests fail?",
        project_dir=PROJECT,
        started_at=t,
        provider=provider,
        model=model,
        turns=turns,
    )


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _parsed(path: Path) -> ParsedSession:
    (parsed,) = [r for r in IMPORTER.parse(path) if isinstance(r, ParsedSession)]
    return parsed


def test_the_log_sits_where_qwen_code_keeps_it_and_is_one_chain(tmp_path: Path) -> None:
    (path,) = write([_session()], tmp_path / "out", "qwen-code-jsonl")
    assert project_folder(PROJECT) == "-home-dev-Shop-API-v2"
    assert (
        path == tmp_path / "out" / ".qwen" / "projects" / "-home-dev-Shop-API-v2" / "chats" / f"{SID}.jsonl"
    )
    assert sniff_file(path) is IMPORTER
    lines = _lines(path)
    assert lines[0]["parentUuid"] is None
    assert all(b["parentUuid"] == a["uuid"] for a, b in pairwise(lines))
    assert {line["sessionId"] for line in lines} == {SID} and {line["cwd"] for line in lines} == {PROJECT}
    kinds = [(line["type"], line.get("subtype")) for line in lines]
    assert kinds[:4] == [
        ("user", None),
        ("system", "ui_telemetry"),
        ("assistant", None),
        ("system", "ui_telemetry"),
    ]
    # the compression record comes before the prompt it was made for
    at = kinds.index(("system", "chat_compression"))
    assert kinds[at + 1] == ("user", None) and lines[at + 1]["message"]["parts"] == [{"text": "修复它"}]
    assert lines[at]["systemPayload"]["compressedHistory"] == [
        {
            "role": "user",
            "parts": [{"text": "<state_snapshot>tests fail on an unused import</state_snapshot>"}],
        }
    ]
    assert kinds[-1] == ("system", "custom_title")


def test_usage_is_written_as_each_back_end_converts_it() -> None:
    step = Step("s", datetime(2026, 5, 1), Usage(ctx=8000, output=40, reasoning=120, cache_read=6000))
    assert usage_metadata("qwen", step) == {
        "promptTokenCount": 8000,
        "candidatesTokenCount": 160,
        "thoughtsTokenCount": 120,
        "totalTokenCount": 8160,
        "cachedContentTokenCount": 6000,
    }
    assert usage_metadata("google", step) == {
        "promptTokenCount": 8000,
        "candidatesTokenCount": 40,
        "thoughtsTokenCount": 120,
        "totalTokenCount": 8160,
        "cachedContentTokenCount": 6000,
    }
    assert usage_metadata("qwen", Step("s", datetime(2026, 5, 1), None)) is None


@pytest.mark.parametrize(
    ("provider", "model", "auth"),
    [("qwen", "coder-model", "qwen-oauth"), ("google", "gemini-2.5-pro", "gemini-api-key")],
)
def test_written_session_reads_back_exactly(tmp_path: Path, provider: str, model: str, auth: str) -> None:
    synth = _session(provider, model)
    (path,) = write([synth], tmp_path / "out", "qwen-code-jsonl")
    events = [
        line["systemPayload"]["uiEvent"] for line in _lines(path) if line.get("subtype") == "ui_telemetry"
    ]
    assert {e["auth_type"] for e in events if e["event.name"] == "qwen-code.api_response"} == {auth}
    assert sum(e["event.name"] == "qwen-code.api_response" for e in events) == 3  # s4 reported no usage
    parsed = _parsed(path)
    assert parsed.session.native_id == SID and parsed.session.project == PROJECT
    assert [(c.provider, c.model) for c in parsed.calls] == [(provider, model)] * 4
    assert [c.usage_status for c in parsed.calls] == ["ok", "ok", "ok", "missing"]
    assert [c.ctx for c in parsed.calls] == [8000, 8300, 2100, None]
    assert [c.carry for c in parsed.calls] == [40, 25, 30, None]  # the thoughts never re-enter the prompt
    assert parsed.calls[0].cache_read == 6000
    assert [c.ts for c in parsed.calls] == [s.ts for t in synth.turns for s in t.steps]
    texts = [(p.kind, p.text) for p in parsed.parts]
    assert texts == [
        ("user_text", "Why do the tests fail?"),
        ("reasoning", "Look at app.py."),
        ("tool_call", '{"absolute_path":"/app.py"}'),
        ("tool_call", '{"command":"pytest -q","note":"测试"}'),
        ("tool_result", "import os\n"),
        ("tool_result", "1 failed"),
        ("assistant_text", "The import is unused."),
        ("summary", "<state_snapshot>tests fail on an unused import</state_snapshot>"),
        ("user_text", "修复它"),
        ("assistant_text", "Fixed."),
        ("assistant_text", "Anything else?"),
    ]
    assert [(c.prompt_start, c.prompt_end) for c in parsed.calls] == [(0, 1), (0, 6), (7, 9), (7, 10)]


def test_home_set_to_the_output_finds_the_logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    (path,) = write([_session()], out, "qwen-code-jsonl")
    monkeypatch.setenv("HOME", str(out))
    monkeypatch.delenv("QWEN_RUNTIME_DIR", raising=False)
    sources, _, errors = find_sources(IMPORTER.default_paths())
    assert not errors
    assert [(s.path, s.importer.name) for s in sources] == [(path, "qwen-code")]


def test_unknown_layout_is_a_usage_error(tmp_path: Path) -> None:
    assert LAYOUTS == ("qwen-code-jsonl",)
    with pytest.raises(UsageError, match="unknown Qwen Code layout"):
        write([_session()], tmp_path, "qwen-code-json")
