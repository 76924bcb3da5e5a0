"""The Cline writer: both layouts where Cline keeps them, in its shapes, read back exactly by the importer."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from calib.core.errors import UsageError
from calib.core.records import ParsedSession
from calib.importers.cline import IMPORTER
from calib.ingest.sources import default_paths, find_sources
from calib.synth.cline import LAYOUTS, write
from calib.synth.model import Step, SynthSession, ToolUse, Turn, Usage

T0 = datetime(2026, 2, 3, 9, 15, 0, 250000)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def session(provider: str = "anthropic", model: str = "claude-sonnet-4-5") -> SynthSession:
    read = ToolUse("toolu_read", "read_file", '{"path":"a.py"}', "print('héllo')\n")
    fail = ToolUse("toolu_grep", "search_files", '{"regex":"TODO"}', "no such file", is_error=True)
    turns = [
        Turn(
            "t1",
            at(0),
            "Fix the bug in a.py — 修复",
            steps=[
                Step(
                    "s1",
                    at(2),
                    Usage(ctx=12_000, output=40, cache_read=10_000, cache_write=1_500),
                    tools=[read, fail],
                ),
                Step("s2", at(9), None, tools=[]),  # a call that recorded no usage
                Step("s3", at(15), Usage(ctx=12_600, output=25, cache_read=11_500), text="Fixed it."),
            ],
        ),
        Turn(
            "t2",
            at(60),
            "Thanks. Now run the tests.",
            steps=[Step("s4", at(62), Usage(ctx=12_700, output=9), text="Done.")],
        ),
    ]
    return SynthSession(
        tool="cline",
        id="1770110100250_ab3de",
        title="Fix the bug in a.py",
        project_dir="/srv/app",
        started_at=T0,
        provider=provider,
        model=model,
        turns=turns,
        system="You are Cline.",
    )


def _one(path: Path) -> ParsedSession:
    (parsed,) = [r for r in IMPORTER.parse(path) if isinstance(r, ParsedSession)]
    return parsed


def test_sdk_layout_is_a_session_folder_with_inclusive_metrics(tmp_path: Path) -> None:
    files = write([session()], tmp_path, "cline-sdk")
    folder = tmp_path / ".cline/data/sessions/1770110100250_ab3de"
    assert files == [folder / "1770110100250_ab3de.messages.json", folder / "1770110100250_ab3de.json"]
    document = json.loads(files[0].read_text(encoding="utf-8"))
    assert (document["version"], document["sessionId"], document["system_prompt"]) == (
        1,
        "1770110100250_ab3de",
        "You are Cline.",
    )
    assistants = [m for m in document["messages"] if m["role"] == "assistant"]
    assert assistants[0]["metrics"]["inputTokens"] == 12_000  # the whole prompt, cache included
    assert "metrics" not in assistants[1]
    assert assistants[0]["modelInfo"]["provider"] == "anthropic"
    parsed = _one(folder)
    assert [(c.usage_status, c.ctx, c.carry) for c in parsed.calls] == [
        ("ok", 12_000, 40),
        ("missing", None, None),
        ("ok", 12_600, 25),
        ("ok", 12_700, 9),
    ]
    assert parsed.calls[0].input == 500 and parsed.calls[0].ts == at(2)
    assert parsed.parts[0].kind == "system" and parsed.session.project == "/srv/app"


@pytest.mark.parametrize(
    ("provider", "model", "tokens_in", "writes"),
    [
        ("anthropic", "claude-sonnet-4-5", 500, 1_500),  # Anthropic's handler: without the cache
        ("deepseek", "deepseek-chat", 500, 500),  # DeepSeek's: the misses, twice
    ],
)
def test_task_layout_writes_counts_as_the_handler_yields_them(
    tmp_path: Path, provider: str, model: str, tokens_in: int, writes: int
) -> None:
    made = session(provider, model)
    if provider == "deepseek":
        made.turns[0].steps[0].usage = Usage(ctx=12_000, output=40, cache_read=11_500)
    write([made], tmp_path, "cline-task")
    folder = tmp_path / ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1770110100250_ab3de"
    assert sorted(p.name for p in folder.iterdir()) == [
        "api_conversation_history.json",
        "task_metadata.json",
        "ui_messages.json",
    ]
    ui = json.loads((folder / "ui_messages.json").read_text(encoding="utf-8"))
    requests = [json.loads(e["text"]) for e in ui if e.get("say") == "api_req_started"]
    assert len(requests) == 4 and "tokensIn" not in requests[1]
    assert (requests[0]["tokensIn"], requests[0]["cacheWrites"]) == (tokens_in, writes)
    assert all(e["modelInfo"]["modelId"] == model for e in ui)
    parsed = _one(folder)
    assert [c.ctx for c in parsed.calls] == [12_000, None, 12_600, 12_700]
    assert [c.ts for c in parsed.calls] == [at(2), at(9), at(15), at(62)]


def test_home_folder_layout_is_found_by_default_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("CLINE_SESSION_DATA_DIR", "CLINE_DATA_DIR", "CLINE_DIR", "XDG_CONFIG_HOME", "APPDATA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    write([session()], tmp_path / "a", "cline-sdk")
    write([session()], tmp_path / "b", "cline-task")
    for sub in ("a", "b"):
        monkeypatch.setenv("HOME", str(tmp_path / sub))
        sources, _, errors = find_sources(default_paths())
        assert errors == [] and [s.importer.name for s in sources] == ["cline"]


def test_unknown_layout_is_a_usage_error(tmp_path: Path) -> None:
    assert LAYOUTS == ("cline-sdk", "cline-task")
    with pytest.raises(UsageError, match="unknown Cline layout 'cline-db'"):
        write([session()], tmp_path, "cline-db")
