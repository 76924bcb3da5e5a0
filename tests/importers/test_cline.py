"""The Cline importer on hand-written inputs: SDK session folders and legacy task folders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from calib.core.errors import InputError, InputWarning
from calib.core.records import Call, ParsedSession
from calib.importers import get_importer, sniff_dir
from calib.importers.cline import IMPORTER, data_dir, sessions_dir

SID = "1784094124598_rruoq"
T0 = 1_784_094_124_000


def _write(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def _parse(path: Path) -> tuple[list[ParsedSession], list[InputWarning]]:
    records = list(IMPORTER.parse(path))
    sessions = [r for r in records if isinstance(r, ParsedSession)]
    warnings = [r for r in records if isinstance(r, InputWarning)]
    assert len(sessions) + len(warnings) == len(records)
    return sessions, warnings


# -- SDK session folders ----------------------------------------------------------------------------


def user(text: str, ts: int) -> dict[str, Any]:
    return {"id": f"u{ts}", "role": "user", "content": [{"type": "text", "text": text}], "ts": ts}


def results(tool_id: str, output: str, ts: int) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": tool_id, "name": "read_files", "content": output}
    return {"id": f"r{ts}", "role": "user", "content": [block], "ts": ts}


def assistant(
    ts: int, metrics: dict[str, Any] | None, *, tool: str | None = None, text: str = "ok"
) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if tool:
        content.append({"type": "tool_use", "id": tool, "name": "read_files", "input": {"files": ["a.py"]}})
    message: dict[str, Any] = {
        "id": f"a{ts}",
        "role": "assistant",
        "content": content,
        "ts": ts,
        "modelInfo": {"id": "anthropic/claude-sonnet-4.5", "provider": "cline", "family": "claude-sonnet"},
    }
    if metrics is not None:
        message["metrics"] = metrics
    return message


def metrics(inp: int, out: int, read: int = 0, write: int = 0) -> dict[str, Any]:
    return {
        "inputTokens": inp,
        "outputTokens": out,
        "cacheReadTokens": read,
        "cacheWriteTokens": write,
        "cost": 0.01,
    }


def sdk_folder(root: Path, messages: list[dict[str, Any]], **document: Any) -> Path:
    folder = root / "sessions" / SID
    body = {"version": 1, "updated_at": "2026-07-15T05:42:04.818Z", "agent": "lead", "sessionId": SID}
    body.update(document)
    body["messages"] = messages
    _write(folder / f"{SID}.messages.json", body)
    _write(
        folder / f"{SID}.json",
        {
            "version": 1,
            "session_id": SID,
            "started_at": "2026-07-15T05:42:04.609Z",
            "ended_at": "2026-07-15T05:50:00.000Z",
            "provider": "cline",
            "model": "anthropic/claude-sonnet-4.5",
            "cwd": "/home/u/app",
            "workspace_root": "/home/u/app",
            "metadata": {"title": "Fix the parser"},
        },
    )
    return folder


def test_sdk_metrics_include_the_cache_and_become_per_call_usage(tmp_path: Path) -> None:
    folder = sdk_folder(
        tmp_path,
        [
            user("Fix the parser", T0),
            assistant(T0 + 10, metrics(34_334, 741), tool="toolu_1"),
            results("toolu_1", "def parse(): ...", T0 + 20),
            assistant(T0 + 30, metrics(35_912, 164, read=34_332, write=100)),
        ],
        system_prompt="You are Cline.",
    )
    (session,), warnings = _parse(folder)
    assert warnings == []
    s = session.session
    assert (s.uid, s.native_id, s.layout, s.project, s.title) == (
        f"cline:{SID}",
        SID,
        "cline-sdk",
        "/home/u/app",
        "Fix the parser",
    )
    assert s.source_path == str(folder)
    first, second = session.calls
    assert (first.usage_status, first.usage_style, first.input, first.ctx, first.carry) == (
        "ok",
        "anthropic",
        34_334,
        34_334,
        741,
    )
    # inputTokens holds the cache: the uncached rest is the input, the whole is ctx.
    assert (second.input, second.cache_read, second.cache_write, second.ctx) == (1_480, 34_332, 100, 35_912)
    assert (second.provider, second.model) == ("anthropic", "anthropic/claude-sonnet-4.5")
    assert second.usage_raw == metrics(35_912, 164, read=34_332, write=100)
    kinds = [(p.kind, p.call_uid) for p in session.parts]
    assert kinds == [
        ("system", None),
        ("user_text", None),
        ("assistant_text", first.uid),
        ("tool_call", first.uid),
        ("tool_result", None),
        ("assistant_text", second.uid),
    ]
    assert (first.prompt_end, second.prompt_end) == (2, 5)
    assert session.parts[4].tool_name == "read_files"


def test_sdk_run_total_on_the_last_message_is_not_a_per_call_target(tmp_path: Path) -> None:
    folder = sdk_folder(
        tmp_path,
        [
            user("first", T0),
            assistant(T0 + 10, None, tool="toolu_1"),
            results("toolu_1", "x", T0 + 20),
            assistant(T0 + 30, metrics(60_000, 300)),  # no earlier per-call usage: a run total
            user("second", T0 + 40),
            assistant(T0 + 50, metrics(31_000, 50)),  # a run of one call: its own usage
            user("third", T0 + 60),
            assistant(T0 + 70, None, tool="toolu_2"),
            results("toolu_2", "y", T0 + 80),
            assistant(T0 + 90, metrics(33_000, 40)),  # below 2 x 31 000: a call's own usage
            user("fourth", T0 + 100),
            assistant(T0 + 110, None, tool="toolu_3"),
            results("toolu_3", "z", T0 + 120),
            assistant(T0 + 130, metrics(70_000, 90)),  # at least 2 x 33 000: the run's total
        ],
    )
    (session,), _ = _parse(folder)
    assert [c.usage_status for c in session.calls] == [
        "missing",
        "turn_summed",
        "ok",
        "missing",
        "ok",
        "missing",
        "turn_summed",
    ]
    assert session.calls[1].ctx == 60_000  # kept, flagged


def test_sdk_counts_that_are_not_counts_are_invalid(tmp_path: Path) -> None:
    folder = sdk_folder(tmp_path, [user("q", T0), assistant(T0 + 1, metrics(-5, 10))])
    (session,), _ = _parse(folder)
    call = session.calls[0]
    assert (call.usage_status, call.ctx, call.carry) == ("invalid", None, None)
    assert call.usage_raw == metrics(-5, 10)


def test_sdk_sub_agent_files_are_sessions_of_their_own(tmp_path: Path) -> None:
    folder = sdk_folder(tmp_path, [user("q", T0), assistant(T0 + 1, metrics(100, 10))])
    _write(
        folder / "explorer.messages.json",
        {
            "version": 1,
            "agent": "subagent",
            "sessionId": f"{SID}__explorer",
            "messages": [user("look", T0 + 2), assistant(T0 + 3, metrics(50, 5))],
        },
    )
    (lead, sub), _ = _parse(folder)
    assert (sub.session.uid, sub.session.parent_uid, sub.session.is_subagent) == (
        f"cline:{SID}:explorer",
        lead.session.uid,
        True,
    )
    assert sub.calls[0].ctx == 50


def test_sdk_unknown_version_is_one_error_naming_the_file(tmp_path: Path) -> None:
    folder = sdk_folder(tmp_path, [user("q", T0)], version=2)
    with pytest.raises(InputError) as caught:
        list(IMPORTER.parse(folder))
    assert str(caught.value) == (
        f"Cline session file version 2 is not one calib knows (it reads version 1) "
        f"({folder / f'{SID}.messages.json'}); update calib; the other sources were still imported"
    )


def test_sdk_damaged_messages_file_costs_only_itself(tmp_path: Path) -> None:
    folder = sdk_folder(tmp_path, [user("q", T0), assistant(T0 + 1, metrics(100, 10))])
    path = folder / f"{SID}.messages.json"
    path.write_text(path.read_text()[:40], encoding="utf-8")
    sessions, (warning,) = _parse(folder)
    assert sessions == []
    assert str(warning).startswith("this file is not valid JSON (")
    assert str(warning).endswith(
        f"; the session's messages were left out, the rest of the session folder was imported ({path}); ingest again once the agent has finished writing it"
    )


def test_sdk_damaged_manifest_keeps_the_session(tmp_path: Path) -> None:
    folder = sdk_folder(tmp_path, [user("Fix it", T0), assistant(T0 + 1, metrics(100, 10))])
    (folder / f"{SID}.json").write_text("[1, 2]", encoding="utf-8")
    (session,), (warning,) = _parse(folder)
    assert session.session.title == "Fix it" and session.session.project is None
    assert str(warning) == (
        "this file is not a JSON object; the session's title and times were left out, the rest of the "
        f"session folder was imported ({folder / f'{SID}.json'})"
    )


# -- legacy task folders ----------------------------------------------------------------------------


def req(ts: int, provider: str | None, **counts: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "ts": ts,
        "type": "say",
        "say": "api_req_started",
        "text": json.dumps({"request": "q", **counts}),
    }
    if provider is not None:
        entry["modelInfo"] = {"modelId": "some-model", "providerId": provider, "mode": "act"}
    return entry


def task_folder(
    root: Path, ui: list[Any], history: list[Any] | None = None, *, ext: str = "saoudrizwan.claude-dev"
) -> Path:
    folder = root / "Code" / "User" / "globalStorage" / ext / "tasks" / "1761000000000"
    _write(folder / "ui_messages.json", ui)
    if history is not None:
        _write(folder / "api_conversation_history.json", history)
    return folder


def legacy_history(n: int, start: int = 100) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nFix it\n</task>"}], "ts": start - 50}
    ]
    for k in range(n):
        out.append(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": f"step {k}"}],
                "ts": start + 100 * k + 50,
            }
        )
        if k < n - 1:
            out.append(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": f"result {k}"}],
                    "ts": start + 100 * k + 60,
                }
            )
    return out


def _usage(call: Call) -> tuple[Any, ...]:
    return (call.usage_status, call.input, call.cache_read, call.cache_write, call.ctx, call.carry)


@pytest.mark.parametrize(
    ("provider", "counts", "expected"),
    [
        # Anthropic's handler writes the input without the cache.
        (
            "anthropic",
            {"tokensIn": 12, "tokensOut": 30, "cacheWrites": 500, "cacheReads": 9_000},
            ("ok", 12, 9_000, 500, 9_512, 30),
        ),
        (
            "cline",
            {"tokensIn": 349, "tokensOut": 10, "cacheWrites": 0, "cacheReads": 12_352},
            ("ok", 349, 12_352, 0, 12_701, 10),
        ),
        # OpenAI-compatible handlers write prompt_tokens, which hold the cache.
        (
            "openai",
            {"tokensIn": 5_000, "tokensOut": 10, "cacheWrites": 0, "cacheReads": 4_096},
            ("ok", 904, 4_096, 0, 5_000, 10),
        ),
        # ... and DeepSeek's miss count as writes, which do not fit inside the prompt beside the reads.
        (
            "xai",
            {"tokensIn": 5_000, "tokensOut": 10, "cacheWrites": 904, "cacheReads": 4_200},
            ("ok", 800, 4_200, 0, 5_000, 10),
        ),
        # DeepSeek's handler: tokensIn and cacheWrites are both the misses.
        (
            "deepseek",
            {"tokensIn": 700, "tokensOut": 10, "cacheWrites": 700, "cacheReads": 6_400},
            ("ok", 700, 6_400, 0, 7_100, 10),
        ),
        # Unknown providers and entries without modelInfo: Cline's own sum of the four counts.
        (
            "newvendor",
            {"tokensIn": 10, "tokensOut": 5, "cacheWrites": 20, "cacheReads": 30},
            ("ok", 10, 30, 20, 60, 5),
        ),
        (
            None,
            {"tokensIn": 10, "tokensOut": 5, "cacheWrites": 20, "cacheReads": 30},
            ("ok", 10, 30, 20, 60, 5),
        ),
        # Zeros (a stream that lost its usage) and no counts at all are missing; a string is no count.
        (
            "anthropic",
            {"tokensIn": 0, "tokensOut": 0, "cacheWrites": 0, "cacheReads": 0},
            ("missing", None, None, None, None, None),
        ),
        ("anthropic", {}, ("missing", None, None, None, None, None)),
        ("anthropic", {"tokensIn": "12", "tokensOut": 3}, ("invalid", None, None, None, None, None)),
    ],
)
def test_legacy_usage_follows_the_provider_handler(
    tmp_path: Path, provider: str | None, counts: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    folder = task_folder(tmp_path, [req(100, provider, **counts)], legacy_history(1))
    (session,), warnings = _parse(folder)
    assert warnings == []
    assert _usage(session.calls[0]) == expected
    assert session.session.layout == "cline-task"


def test_legacy_metrics_in_the_history_are_never_read(tmp_path: Path) -> None:
    history = legacy_history(1)
    history[1]["metrics"] = {"tokens": {"prompt": 99, "completion": 9, "cached": 999}, "cost": 1}
    history[1]["modelInfo"] = {"modelId": "claude-sonnet-4-5", "providerId": "anthropic", "mode": "act"}
    folder = task_folder(
        tmp_path,
        [{"ts": 100, "type": "say", "say": "api_req_started", "text": json.dumps({"request": "q"})}],
        history,
    )
    (session,), _ = _parse(folder)
    call = session.calls[0]
    assert (call.usage_status, call.ctx) == ("missing", None)
    assert (call.provider, call.model) == ("anthropic", "claude-sonnet-4-5")  # from the message's modelInfo


def test_legacy_requests_pair_with_messages_by_time_and_retries_keep_the_last(tmp_path: Path) -> None:
    ui = [
        {"ts": 40, "type": "say", "say": "task", "text": "Fix it"},
        req(100, "anthropic", tokensIn=5, tokensOut=1, cacheReads=100, cancelReason="streaming_failed"),
        req(120, "anthropic", tokensIn=6, tokensOut=2, cacheReads=100),  # the retry: this call's usage
        req(200, "anthropic"),  # no counts: the second call recorded none
        req(300, "anthropic", tokensIn=8, tokensOut=3, cacheReads=200),
    ]
    (session,), _ = _parse(task_folder(tmp_path, ui, legacy_history(3)))
    assert [(c.usage_status, c.ctx) for c in session.calls] == [("ok", 106), ("missing", None), ("ok", 208)]
    assert [c.error for c in session.calls] == [None, None, None]
    assert session.calls[0].ts is not None and session.calls[0].ts.microsecond == 120_000
    assert session.session.title == "Fix it"


def test_legacy_history_without_times_pairs_in_order(tmp_path: Path) -> None:
    history = legacy_history(2)
    for message in history:
        del message["ts"]
    ui = [
        req(100, "anthropic", tokensIn=5, tokensOut=1),
        req(150, "anthropic"),
        req(200, "anthropic", tokensIn=7, tokensOut=1),
    ]
    (session,), _ = _parse(task_folder(tmp_path, ui, history))
    assert [c.ctx for c in session.calls] == [5, 7]


def test_legacy_cut_off_ui_messages_costs_only_the_usage(tmp_path: Path) -> None:
    folder = task_folder(tmp_path, [req(100, "anthropic", tokensIn=5, tokensOut=1)], legacy_history(1))
    ui = folder / "ui_messages.json"
    ui.write_text(ui.read_text()[:-9], encoding="utf-8")
    (session,), (warning,) = _parse(folder)
    assert [c.usage_status for c in session.calls] == ["missing"]
    assert len(session.parts) == 2
    assert str(warning).startswith("this file is not valid JSON (")
    assert str(warning).endswith(
        f"cut off while being written?); the usage of this task's requests was left out, the rest of the "
        f"task was imported ({ui}); ingest again once the agent has finished writing it"
    )


def test_legacy_damaged_history_keeps_the_calls(tmp_path: Path) -> None:
    folder = task_folder(tmp_path, [req(100, "anthropic", tokensIn=5, tokensOut=1)], legacy_history(1))
    (folder / "api_conversation_history.json").write_text('{"role": "user"}', encoding="utf-8")
    (session,), (warning,) = _parse(folder)
    assert [(c.ctx, c.prompt_end) for c in session.calls] == [(5, 0)] and session.parts == []
    assert str(warning) == (
        "this file is not a JSON array; the messages of this task were left out (its calls kept), the "
        f"rest of the task was imported ({folder / 'api_conversation_history.json'})"
    )


def test_legacy_damaged_entries_are_warnings_naming_them(tmp_path: Path) -> None:
    bad_text = {"ts": 90, "type": "say", "say": "api_req_started", "text": "{not json"}
    folder = task_folder(
        tmp_path, ["oops", bad_text, req(100, "anthropic", tokensIn=5, tokensOut=1)], legacy_history(1)
    )
    (session,), warnings = _parse(folder)
    ui = folder / "ui_messages.json"
    assert [str(w) for w in warnings] == [
        f"entry 0 of this file is not a JSON object; left out, the rest of the task was imported ({ui})",
        f"entry 1 of this file is a request whose text is not a JSON object; left out, the rest of the task "
        f"was imported ({ui})",
    ]
    assert session.calls[0].ctx == 5


# -- sniffing and paths -----------------------------------------------------------------------------


def test_sniffing_claims_cline_folders_only(tmp_path: Path) -> None:
    sdk = sdk_folder(tmp_path, [user("q", T0)])
    legacy = task_folder(tmp_path, [req(100, "anthropic")], legacy_history(1))
    roo = task_folder(tmp_path / "r", [req(100, None)], legacy_history(1), ext="rooveterinaryinc.roo-cline")
    assert IMPORTER.sniff_dir(sdk) and IMPORTER.sniff_dir(legacy)
    assert sniff_dir(sdk) is IMPORTER and sniff_dir(legacy) is IMPORTER
    assert not IMPORTER.sniff_dir(roo) and sniff_dir(roo) is get_importer("roo-code")
    assert not IMPORTER.sniff_dir(tmp_path) and not IMPORTER.sniff_dir(tmp_path / "missing")
    assert not IMPORTER.sniff_file(sdk / f"{SID}.messages.json", b'{"version": 1')
    # A copied task folder (no extension folder above it) is told by its content.
    copied = tmp_path / "copy" / "task1"
    _write(copied / "ui_messages.json", [req(100, "anthropic", tokensIn=1, tokensOut=1)])
    assert sniff_dir(copied) is IMPORTER
    with pytest.raises(InputError, match="not a Cline session or task folder"):
        list(IMPORTER.parse(tmp_path))


def test_default_paths_follow_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CLINE_SESSION_DATA_DIR", "CLINE_DATA_DIR", "CLINE_DIR", "XDG_CONFIG_HOME", "APPDATA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    home = tmp_path
    paths = IMPORTER.default_paths()
    assert paths[:2] == [home / ".cline/data/sessions", home / ".cline/data/tasks"]
    storage = "User/globalStorage/saoudrizwan.claude-dev/tasks"
    for editor_dir in (
        home / ".config/Code",
        home / ".config/Cursor",
        home / ".config/Windsurf",
        home / ".config/VSCodium",
        home / "Library/Application Support/Code",
        home / "AppData/Roaming/Code",
        home / ".vscode-server/data",
    ):
        assert editor_dir / storage in paths
    monkeypatch.setenv("CLINE_DIR", str(tmp_path / "cd"))
    assert (sessions_dir(), data_dir()) == (tmp_path / "cd/data/sessions", tmp_path / "cd/data")
    monkeypatch.setenv("CLINE_DATA_DIR", str(tmp_path / "dd"))
    assert (sessions_dir(), data_dir()) == (tmp_path / "dd/sessions", tmp_path / "dd")
    monkeypatch.setenv("CLINE_SESSION_DATA_DIR", "~/ss")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("APPDATA", str(tmp_path / "roaming"))
    paths = IMPORTER.default_paths()
    assert paths[:2] == [home / "ss", tmp_path / "dd/tasks"]
    assert tmp_path / "xdg/Code" / storage in paths and tmp_path / "roaming/Cursor" / storage in paths


def test_a_flood_of_damaged_entries_is_counted_not_listed(tmp_path: Path) -> None:
    folder = task_folder(
        tmp_path, ["bad"] * 50 + [req(100, "anthropic", tokensIn=5, tokensOut=1)], legacy_history(1)
    )
    (session,), warnings = _parse(folder)
    assert [type(w).__name__ for w in warnings] == ["InputWarning"] * 3 + ["MoreWarnings"]
    assert str(warnings[-1]) == f"47 more lines left out ({folder})"
    assert session.calls[0].ctx == 5
