"""`calib ingest --where`: the folders each agent keeps its sessions in here, found or not; nothing imported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from calib.cli.app import app
from calib.importers import importer_names
from calib.synth import write_sample

# the variables that move an agent's folder away from the home folder
_MOVERS = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
           "XDG_CONFIG_HOME", "OPENCODE_DB", "DEXTO_HOME_DIR", "QWEN_RUNTIME_DIR", "LLXPRT_LOG_HOME",
           "CLINE_SESSION_DATA_DIR", "CLINE_DATA_DIR", "CLINE_DIR", "APPDATA")  # fmt: skip


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder holding Codex CLI's and Claude Code's sessions, and no other agent's."""
    for name in _MOVERS:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    for tool, layout, folder in (
        ("codex", "codex-jsonl", ".codex"),
        ("claude-code", "claude-code-jsonl", ".claude"),
    ):
        write_sample(tool, tmp_path / tool, layout=layout, sessions=1, seed=1)
        (tmp_path / tool / folder).rename(home / folder)
    monkeypatch.setenv("HOME", str(home))
    return home


def test_where_lists_every_agents_folders_and_marks_those_found(home: Path) -> None:
    result = CliRunner().invoke(app, ["ingest", "--where", "--json", "--db", str(home / "x.duckdb")])
    assert result.exit_code == 0, result.output
    folders = json.loads(result.stdout)["folders"]
    assert {f["tool"] for f in folders} == set(importer_names())
    found = {(f["tool"], f["path"]) for f in folders if f["exists"]}
    assert found == {
        ("codex", str(home / ".codex" / "sessions")),
        ("claude-code", str(home / ".claude" / "projects")),
    }
    assert not (home / "x.duckdb").exists()  # nothing imported, no store made


def test_where_in_text_names_each_agent_once_unless_several_folders_are_found(home: Path) -> None:
    result = CliRunner().invoke(app, ["ingest", "--where"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    by_tool = {line.split()[0]: line for line in lines[:-1]}
    assert len(by_tool) == len(lines) - 1 == len(importer_names())
    assert by_tool["codex"].split(None, 2)[1:] == ["found", str(home / ".codex" / "sessions")]
    assert by_tool["gemini-cli"].split(None, 3)[1:] == ["not", "found", str(home / ".gemini" / "tmp")]
    assert by_tool["cline"].endswith(" more)")
    assert lines[-1].startswith("2 of ") and lines[-1].endswith("with no path reads those found.")
