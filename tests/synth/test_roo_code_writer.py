"""The Roo Code writer: task folders under Roo's and Kilo's extension folders, read back exactly."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from calib.core.errors import UsageError
from calib.core.records import ParsedSession
from calib.importers.roo_code import IMPORTER
from calib.ingest.sources import default_paths, find_sources
from calib.synth.content.environment import roo_environment
from calib.synth.content.project import make_project
from calib.synth.model import Step, SynthSession, ToolUse, Turn, Usage
from calib.synth.roo_code import LAYOUTS, write

T0 = datetime(2026, 2, 3, 9, 15, 0, 250000)
TASK = "6f1c2d3e-4a5b-4c6d-8e7f-0a1b2c3d4e5f"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def session(provider: str, model: str) -> SynthSession:
    project = make_project(random.Random(1))
    read = ToolUse("call_read", "read_file", '{"path":"a.py"}', "print('héllo')\n")
    prompt = roo_environment("Fix the bug in a.py", model, project)
    turns = [
        Turn(
            "t1",
            at(0),
            prompt,
            steps=[
                Step(
                    "s1",
                    at(2),
                    Usage(ctx=12_000, output=40, cache_read=10_000, cache_write=1_500),
                    tools=[read],
                ),
                Step("s2", at(9), None, text="Fixed it."),
            ],
        )
    ]
    return SynthSession("roo-code", TASK, "Fix the bug", project.root, T0, provider, model, turns)


def _one(path: Path) -> ParsedSession:
    (parsed,) = [r for r in IMPORTER.parse(path) if isinstance(r, ParsedSession)]
    return parsed


@pytest.mark.parametrize(
    ("layout", "extension"),
    [("roo-code-task", "rooveterinaryinc.roo-cline"), ("kilo-code-task", "kilocode.kilo-code")],
)
def test_task_folder_with_whole_input_counts_and_the_model_in_the_environment(
    tmp_path: Path, layout: str, extension: str
) -> None:
    write([session("openai", "gpt-5")], tmp_path, layout)
    folder = tmp_path / ".config/Code/User/globalStorage" / extension / "tasks" / TASK
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["api_conversation_history.json", "history_item.json", "ui_messages.json"]
    ui = json.loads((folder / "ui_messages.json").read_text(encoding="utf-8"))
    requests = [json.loads(e["text"]) for e in ui if e.get("say") == "api_req_started"]
    assert requests[0]["apiProtocol"] == "openai" and requests[0]["tokensIn"] == 12_000
    assert requests[1] == {"apiProtocol": "openai"}
    history = json.loads((folder / "api_conversation_history.json").read_text(encoding="utf-8"))
    assert [b["type"] for b in history[0]["content"]] == ["text", "text"]
    assert "<model>gpt-5</model>" in history[0]["content"][1]["text"]
    parsed = _one(folder)
    assert parsed.session.layout == layout
    assert [(c.usage_status, c.ctx, c.provider, c.model) for c in parsed.calls] == [
        ("ok", 12_000, "openai", "gpt-5"),
        ("missing", None, "openai", "gpt-5"),
    ]
    assert parsed.parts[0].text == session("openai", "gpt-5").turns[0].user_text


def test_found_from_the_home_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("APPDATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    write([session("anthropic", "claude-sonnet-4-5")], tmp_path, "roo-code-task")
    sources, _, errors = find_sources(default_paths())
    assert errors == [] and [s.importer.name for s in sources] == ["roo-code"]


def test_unknown_layout_is_a_usage_error(tmp_path: Path) -> None:
    assert LAYOUTS == ("roo-code-task", "kilo-code-task")
    with pytest.raises(UsageError, match="unknown Roo Code layout"):
        write([session("openai", "gpt-5")], tmp_path, "roo-code-db")
