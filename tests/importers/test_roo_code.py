"""The Roo Code importer on hand-written task folders (Roo's and Kilo Code's extension folders)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from calib.core.errors import InputError, InputWarning
from calib.core.records import ParsedSession
from calib.importers import get_importer, sniff_dir
from calib.importers.roo_code import IMPORTER

TASK = "0b8f1a52-6c1e-4e7a-9d0e-3f1b2c4d5e6f"


def _write(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def env(model: str) -> str:
    return (
        "<environment_details>\n# Current Mode\n<slug>code</slug>\n<name>Code</name>\n"
        f"<model>{model}</model>\n\n# Current Workspace Directory (/home/u/app) Files\nmain.py\n</environment_details>"
    )


def req(ts: int, protocol: str = "anthropic", **counts: Any) -> dict[str, Any]:
    return {
        "ts": ts,
        "type": "say",
        "say": "api_req_started",
        "text": json.dumps({"apiProtocol": protocol, **counts}),
    }


def history(*models: str) -> list[dict[str, Any]]:
    """A prompt naming the first model, then a call per model, each tool result naming the next."""
    out: list[dict[str, Any]] = []
    for k, model in enumerate(models):
        if k == 0:
            content = [
                {"type": "text", "text": "<task>\nFix the parser\n</task>"},
                {"type": "text", "text": env(model)},
            ]
        else:
            content = [
                {
                    "type": "tool_result",
                    "tool_use_id": f"toolu_{k}",
                    "content": [{"type": "text", "text": f"out {k}"}],
                },
                {"type": "text", "text": env(model)},
            ]
        out.append({"role": "user", "content": content, "ts": 100 * k + 60})
        out.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"step {k}"},
                    {
                        "type": "tool_use",
                        "id": f"toolu_{k + 1}",
                        "name": "read_file",
                        "input": {"path": "a.py"},
                    },
                ],
                "ts": 100 * k + 90,
            }
        )
    return out


def folder(root: Path, ui: list[Any], messages: list[Any], ext: str = "rooveterinaryinc.roo-cline") -> Path:
    path = root / "Code" / "User" / "globalStorage" / ext / "tasks" / TASK
    _write(path / "ui_messages.json", ui)
    _write(path / "api_conversation_history.json", messages)
    return path


def parse(path: Path) -> tuple[ParsedSession, list[InputWarning]]:
    records = list(IMPORTER.parse(path))
    sessions = [r for r in records if isinstance(r, ParsedSession)]
    assert len(sessions) == 1
    return sessions[0], [r for r in records if isinstance(r, InputWarning)]


@pytest.mark.parametrize(
    ("protocol", "counts", "expected"),
    [
        # Current Roo: tokensIn is the whole input for both protocols.
        (
            "anthropic",
            {"tokensIn": 9_512, "tokensOut": 30, "cacheWrites": 500, "cacheReads": 9_000},
            ("ok", 12, 9_000, 500, 9_512, 30),
        ),
        (
            "openai",
            {"tokensIn": 5_000, "tokensOut": 40, "cacheWrites": 0, "cacheReads": 4_096},
            ("ok", 904, 4_096, 0, 5_000, 40),
        ),
        # Older Roo wrote Anthropic's raw input, below the cache counts: the cache is added.
        (
            "anthropic",
            {"tokensIn": 12, "tokensOut": 30, "cacheWrites": 500, "cacheReads": 9_000},
            ("ok", 12, 9_000, 500, 9_512, 30),
        ),
        # No counts yet (the request never finished), zeros, and values that are no counts.
        ("anthropic", {}, ("missing", None, None, None, None, None)),
        ("openai", {"tokensIn": 0, "tokensOut": 0}, ("missing", None, None, None, None, None)),
        ("openai", {"tokensIn": 1.5, "tokensOut": 3}, ("invalid", None, None, None, None, None)),
    ],
)
def test_tokens_in_is_the_whole_input(
    tmp_path: Path, protocol: str, counts: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    session, warnings = parse(folder(tmp_path, [req(50, protocol, **counts)], history("claude-sonnet-4-5")))
    assert warnings == []
    call = session.calls[0]
    assert (
        call.usage_status,
        call.input,
        call.cache_read,
        call.cache_write,
        call.ctx,
        call.carry,
    ) == expected
    assert call.usage_style == "anthropic"
    if counts:
        assert call.usage_raw == {"apiProtocol": protocol, **counts}


def test_model_comes_from_the_environment_details(tmp_path: Path) -> None:
    ui = [
        {"ts": 10, "type": "say", "say": "task", "text": "Fix the parser"},
        req(50, tokensIn=1_000, tokensOut=10),
        req(150, "openai", tokensIn=1_200, tokensOut=10),
    ]
    session, _ = parse(folder(tmp_path, ui, history("claude-sonnet-4-5", "gpt-5")))
    assert [(c.provider, c.model) for c in session.calls] == [
        ("anthropic", "claude-sonnet-4-5"),
        ("openai", "gpt-5"),
    ]
    s = session.session
    assert (s.uid, s.tool, s.layout, s.title, s.project) == (
        f"roo-code:{TASK}",
        "roo-code",
        "roo-code-task",
        "Fix the parser",
        "/home/u/app",
    )
    # The task and its environment details are one user message: one part.
    first = session.parts[0]
    assert (first.kind, first.text) == (
        "user_text",
        "<task>\nFix the parser\n</task>\n\n" + env("claude-sonnet-4-5"),
    )
    assert [p.kind for p in session.parts[:6]] == [
        "user_text",
        "assistant_text",
        "tool_call",
        "tool_result",
        "user_text",
        "assistant_text",
    ]
    assert session.parts[3].tool_name == "read_file"  # named by the tool_use it answers
    assert [c.prompt_end for c in session.calls] == [1, 5]


def test_a_model_of_no_known_vendor_has_no_provider(tmp_path: Path) -> None:
    session, _ = parse(
        folder(tmp_path, [req(50, "openai", tokensIn=10, tokensOut=1)], history("qwen3-coder-30b"))
    )
    assert (session.calls[0].provider, session.calls[0].model) == (None, "qwen3-coder-30b")


def test_kilo_code_folders_and_the_history_item_workspace(tmp_path: Path) -> None:
    path = folder(
        tmp_path, [req(50, tokensIn=10, tokensOut=1)], history("claude-sonnet-4-5"), ext="kilocode.kilo-code"
    )
    _write(path / "history_item.json", {"id": TASK, "workspace": "/srv/kilo", "tokensIn": 10})
    session, _ = parse(path)
    assert (session.session.layout, session.session.tool, session.session.project) == (
        "kilo-code-task",
        "roo-code",
        "/srv/kilo",
    )


def test_cut_off_ui_messages_keeps_the_messages(tmp_path: Path) -> None:
    path = folder(tmp_path, [req(50, tokensIn=10, tokensOut=1)], history("claude-sonnet-4-5"))
    ui = path / "ui_messages.json"
    ui.write_text('[{"ts": 50, "type": "say", "say": "api_req', encoding="utf-8")
    session, (warning,) = parse(path)
    assert [c.usage_status for c in session.calls] == ["missing"] and len(session.parts) == 3
    assert str(warning).startswith("this file is not valid JSON (") and str(warning).endswith(
        f"the usage of this task's requests was left out, the rest of the task was imported ({ui}); ingest again once the agent has finished writing it"
    )


def test_a_message_that_is_not_one_is_left_out_with_a_warning(tmp_path: Path) -> None:
    messages = [*history("claude-sonnet-4-5"), {"role": "tool", "content": "?"}]
    path = folder(tmp_path, [req(50, tokensIn=10, tokensOut=1)], messages)
    session, (warning,) = parse(path)
    assert str(warning) == (
        "entry 2 of this file is not a user or assistant message; left out, the rest of the task was "
        f"imported ({path / 'api_conversation_history.json'})"
    )
    assert len(session.calls) == 1


def test_sniffing_claims_roo_and_kilo_folders_only(tmp_path: Path) -> None:
    roo = folder(tmp_path / "a", [req(50)], history("m"))
    kilo = folder(tmp_path / "b", [req(50)], history("m"), ext="kilocode.kilo-code")
    cline = folder(tmp_path / "c", [req(50)], history("m"), ext="saoudrizwan.claude-dev")
    assert IMPORTER.sniff_dir(roo) and IMPORTER.sniff_dir(kilo) and not IMPORTER.sniff_dir(cline)
    assert sniff_dir(roo) is IMPORTER and sniff_dir(cline) is get_importer("cline")
    # A copied task folder is told by its requests' apiProtocol.
    copied = tmp_path / "copy" / TASK
    _write(copied / "ui_messages.json", [req(50, tokensIn=1, tokensOut=1)])
    assert sniff_dir(copied) is IMPORTER
    unknown = tmp_path / "copy2" / TASK
    _write(unknown / "ui_messages.json", [{"ts": 1, "type": "say", "say": "text", "text": "hi"}])
    assert sniff_dir(unknown) is None
    assert not IMPORTER.sniff_dir(tmp_path) and not IMPORTER.sniff_file(roo / "ui_messages.json", b"[")
    with pytest.raises(InputError, match="not a Roo Code task folder"):
        list(IMPORTER.parse(cline))


def test_default_paths_cover_every_editor_and_os(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("APPDATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    paths = IMPORTER.default_paths()
    for ext in ("rooveterinaryinc.roo-cline", "kilocode.kilo-code"):
        tail = Path("User/globalStorage") / ext / "tasks"
        for user_dir in (
            ".config/Code",
            ".config/Code - Insiders",
            "Library/Application Support/Cursor",
            "AppData/Roaming/VSCodium",
            ".vscode-server/data",
        ):
            assert tmp_path / user_dir / tail in paths
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("APPDATA", str(tmp_path / "roam"))
    paths = IMPORTER.default_paths()
    assert tmp_path / "xdg/Windsurf/User/globalStorage/rooveterinaryinc.roo-cline/tasks" in paths
    assert tmp_path / "roam/Code/User/globalStorage/kilocode.kilo-code/tasks" in paths
