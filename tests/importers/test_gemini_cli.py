"""The gemini-cli importer on small files written in each real layout, and on the shared real sessions."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import msgspec
import polars as pl
import pytest
from helpers import shared_fixture

from calib.core.errors import InputError, InputWarning
from calib.core.records import ParsedSession
from calib.importers import HEAD_BYTES, Importer, get_importer, sniff_file
from calib.importers.gemini_cli import IMPORTER, document, parse_session, part_uid_prefix, project
from calib.ingest.pipeline import ingest
from calib.store.columns import records_to_columns
from calib.store.store import Store

SID = "0b23371a-ce2e-4b1c-81a0-44af5d94d9ce"
START = "2025-10-21T20:04:20.819Z"
ROOT = "/home/dev/my-repo"
HASH = hashlib.sha256(ROOT.encode()).hexdigest()


def _tokens(input: int, output: int, cached: int = 0, thoughts: int = 0) -> dict[str, int]:
    return {
        "input": input,
        "output": output,
        "cached": cached,
        "thoughts": thoughts,
        "tool": 0,
        "total": input + output + thoughts,
    }


def _user(mid: str, content: Any, ts: str = "2025-10-21T20:04:21.000Z") -> dict[str, Any]:
    return {"id": mid, "timestamp": ts, "type": "user", "content": content}


def _gemini(
    mid: str,
    content: Any = "",
    tokens: dict[str, int] | None = None,
    thoughts: list[dict[str, str]] | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    model: str | None = "gemini-2.5-pro",
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": mid,
        "timestamp": "2025-10-21T20:04:30.000Z",
        "type": "gemini",
        "content": content,
        "thoughts": thoughts or [],
        "tokens": tokens,
        "model": model,
    }
    if tool_calls is not None:
        message["toolCalls"] = tool_calls
    return message


def _tool(cid: str, name: str, args: dict[str, Any], response: dict[str, Any] | None) -> dict[str, Any]:
    result = None
    if response is not None:
        result = [{"functionResponse": {"id": cid, "name": name, "response": response}}]
    return {"id": cid, "name": name, "args": args, "result": result, "status": "success"}


def _legacy(tmp_path: Path, messages: list[dict[str, Any]], project: str = HASH, **extra: Any) -> Path:
    chats = tmp_path / ".gemini" / "tmp" / project / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    path = chats / f"session-2025-10-21T20-04-{SID[:8]}.json"
    record = {"sessionId": SID, "projectHash": HASH, "startTime": START, "lastUpdated": START}
    record |= {"messages": messages, **extra}
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def _jsonl(
    path: Path, records: list[dict[str, Any]], sid: str = SID, start: str = START, **meta: Any
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    first = {"sessionId": sid, "projectHash": HASH, "startTime": start, "lastUpdated": start, **meta}
    lines = [json.dumps(r, ensure_ascii=False) for r in [first, *records]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _chats(tmp_path: Path, project: str = HASH) -> Path:
    return tmp_path / ".gemini" / "tmp" / project / "chats"


def _texts(parsed: ParsedSession) -> list[tuple[str, str, str]]:
    return [(p.role, p.kind, p.text) for p in parsed.parts]


def _sent_to(parsed: ParsedSession, k: int) -> list[str]:
    call = parsed.calls[k]
    return [p.text for p in parsed.parts[call.prompt_start : call.prompt_end]]


def test_importer_is_registered_and_satisfies_the_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(IMPORTER, Importer)
    assert get_importer("gemini-cli") is IMPORTER
    assert IMPORTER.name == "gemini-cli"
    monkeypatch.setenv("GEMINI_CLI_HOME", "/srv/alt")
    assert IMPORTER.default_paths() == [Path("/srv/alt/.gemini/tmp")]
    monkeypatch.delenv("GEMINI_CLI_HOME")
    assert IMPORTER.default_paths() == [Path.home() / ".gemini" / "tmp"]


def test_variant_a_string_content(tmp_path: Path) -> None:
    thoughts = [
        {"subject": "Planning", "description": "I will read it.", "timestamp": "2025-10-21T20:04:25.000Z"},
        {"subject": "", "description": "no subject here", "timestamp": "2025-10-21T20:04:26.000Z"},
    ]
    read = _tool("read_file-1", "read_file", {"path": "a.py", "note": "é"}, {"output": "print(1)"})
    missing = _tool("read_file-2", "read_file", {"path": "b.py"}, {"error": "File not found"})
    path = _legacy(
        tmp_path,
        [
            _user("u1", "Fix a.py"),
            _gemini("g1", "Reading.", _tokens(1000, 20, cached=600, thoughts=50), thoughts, [read, missing]),
            {"id": "w1", "timestamp": START, "type": "warning", "content": "slow network"},
            _gemini("g2", "Done.", _tokens(1100, 5)),
        ],
    )
    parsed = parse_session(path)
    session = parsed.session
    assert session.uid == f"gemini-cli:{SID}:{START}"
    assert (session.layout, session.tool, session.native_id) == ("gemini-json-string", "gemini-cli", SID)
    assert session.started_at is not None and session.started_at.isoformat() == "2025-10-21T20:04:20.819000"
    assert session.project is None  # a hash folder with no projects.json to resolve it
    assert session.meta is not None and session.meta["ui_messages"] == {"warning": 1}
    assert _texts(parsed) == [
        ("user", "user_text", "Fix a.py"),
        ("assistant", "reasoning", "**Planning**\n\nI will read it."),
        ("assistant", "reasoning", "no subject here"),
        ("assistant", "assistant_text", "Reading."),
        ("assistant", "tool_call", '{"path":"a.py","note":"é"}'),
        ("assistant", "tool_call", '{"path":"b.py"}'),
        ("user", "tool_result", "print(1)"),
        ("user", "tool_result", '{"error":"File not found"}'),
        ("assistant", "assistant_text", "Done."),
    ]
    assert [p.seq for p in parsed.parts] == list(range(9))
    assert [p.resent for p in parsed.parts[1:3]] == [False, False]
    assert [p.tool_name for p in parsed.parts[4:8]] == ["read_file"] * 4
    first, second = parsed.calls
    assert [p.call_uid for p in parsed.parts] == [None] + [first.uid] * 5 + [None, None, second.uid]
    assert (first.prompt_start, first.prompt_end, second.prompt_start, second.prompt_end) == (0, 1, 0, 8)
    assert (first.usage_status, first.usage_style, first.provider, first.model) == (
        "ok",
        "gemini",
        "google",
        "gemini-2.5-pro",
    )
    assert (first.input, first.output, first.reasoning, first.cache_read, first.tool_prompt, first.total) == (
        1000,
        20,
        50,
        600,
        0,
        1070,
    )
    assert (first.ctx, first.carry, first.cache_write, first.seq, second.seq) == (1000, 20, None, 0, 1)
    assert first.message_id == "g1" and first.usage_raw == _tokens(1000, 20, cached=600, thoughts=50)


def test_variant_b_part_lists_and_files(tmp_path: Path) -> None:
    png = base64.b64encode(b"\x89PNG" + bytes(96)).decode()
    user = _user(
        "u1",
        [
            {"text": "What is in this picture?"},
            {"inlineData": {"mimeType": "image/png", "data": png}},
            {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://b/doc.pdf"}},
        ],
    )
    path = _legacy(tmp_path, [user, _gemini("g1", "A cat.", _tokens(3300, 3))], kind="main", summary="Cat")
    parsed = parse_session(path)
    assert parsed.session.layout == "gemini-json-parts"
    assert parsed.session.title == "Cat"
    assert _texts(parsed) == [
        ("user", "user_text", "What is in this picture?"),
        ("user", "file", "[inlineData image/png, 100 bytes]"),
        ("user", "file", "[fileData application/pdf, gs://b/doc.pdf]"),
        ("assistant", "assistant_text", "A cat."),
    ]
    assert parsed.calls[0].prompt_end == 3


def test_hash_folder_resolved_through_projects_json(tmp_path: Path) -> None:
    path = _legacy(tmp_path, [_user("u1", "hi"), _gemini("g1", "hello", _tokens(10, 1))])
    (tmp_path / ".gemini" / "projects.json").write_text(json.dumps({"projects": {ROOT: "my-repo"}}))
    assert parse_session(path).session.project == ROOT


def test_zero_and_null_tokens_are_missing(tmp_path: Path) -> None:
    zeros = _tokens(0, 0)
    path = _legacy(
        tmp_path,
        [
            _user("u1", "go"),
            _gemini("g1", "a", zeros),
            _gemini("g2", "b", None),
            _gemini("g3", "c", _tokens(9, 1)),
        ],
    )
    calls = parse_session(path).calls
    assert [c.usage_status for c in calls] == ["missing", "missing", "ok"]
    for call in calls[:2]:
        cols = (call.input, call.output, call.reasoning, call.cache_read, call.tool_prompt, call.total)
        assert cols == (None,) * 6 and (call.ctx, call.carry) == (None, None)
    assert calls[0].usage_raw == zeros and calls[1].usage_raw is None


def test_jsonl_last_line_per_id_wins_and_set_patches(tmp_path: Path) -> None:
    call = _tool("ls-1", "list_directory", {"dir": "."}, None)
    done = _tool("ls-1", "list_directory", {"dir": "."}, {"output": "a.py\nb.py"})
    path = _jsonl(
        _chats(tmp_path) / f"session-2026-05-01T10-00-{SID[:8]}.jsonl",
        [
            _user("u1", [{"text": "list files"}]),
            {"$set": {"lastUpdated": "2026-05-01T10:00:05.000Z"}},
            _gemini("g1", "", None),
            _gemini("g1", "", _tokens(500, 8), tool_calls=[call]),
            _gemini("g1", "", _tokens(500, 8), tool_calls=[done]),
            _gemini("g2", "Two files.", _tokens(560, 4)),
            {"$set": {"summary": "List files", "lastUpdated": "2026-05-01T10:01:00.000Z"}},
        ],
    )
    parsed = parse_session(path)
    assert parsed.session.layout == "gemini-jsonl"
    assert parsed.session.title == "List files"
    assert (
        parsed.session.ended_at is not None and parsed.session.ended_at.isoformat() == "2026-05-01T10:01:00"
    )
    assert _texts(parsed) == [
        ("user", "user_text", "list files"),
        ("assistant", "tool_call", '{"dir":"."}'),
        ("user", "tool_result", "a.py\nb.py"),
        ("assistant", "assistant_text", "Two files."),
    ]
    assert [(c.message_id, c.input, c.prompt_end) for c in parsed.calls] == [("g1", 500, 1), ("g2", 560, 3)]


def test_jsonl_rewind_drops_the_message_and_everything_after(tmp_path: Path) -> None:
    path = _jsonl(
        _chats(tmp_path) / f"session-2026-05-01T10-00-{SID[:8]}.jsonl",
        [
            _user("u1", [{"text": "first"}]),
            _gemini("g1", "one", _tokens(100, 2)),
            _user("u2", [{"text": "oops"}]),
            _gemini("g2", "two", _tokens(120, 2)),
            {"$rewindTo": "u2"},
            _user("u3", [{"text": "second"}]),
            _gemini("g3", "three", _tokens(118, 2)),
        ],
    )
    parsed = parse_session(path)
    assert [t for _, _, t in _texts(parsed)] == ["first", "one", "second", "three"]
    assert [c.message_id for c in parsed.calls] == ["g1", "g3"]
    assert parsed.session.meta is not None and parsed.session.meta["rewinds"] == 1


def test_jsonl_checkpoint_keeps_every_call_and_restarts_the_prompt(tmp_path: Path) -> None:
    snapshot = _user("s1", [{"text": "<state_snapshot>we listed files</state_snapshot>"}])
    path = _jsonl(
        _chats(tmp_path) / f"session-2026-05-01T10-00-{SID[:8]}.jsonl",
        [
            _user("u1", [{"text": "long task"}]),
            _gemini("g1", "part one", _tokens(900_000, 10)),
            _user("u2", [{"text": "continue"}]),
            _gemini("g2", "part two", _tokens(950_000, 10)),
            {
                "$set": {
                    "messages": [snapshot, _user("u2", [{"text": "continue"}]), _gemini("g2", "part two")]
                }
            },
            _user("u3", [{"text": "and now?"}]),
            _gemini("g3", "part three", _tokens(4000, 10)),
        ],
    )
    parsed = parse_session(path)
    assert [c.message_id for c in parsed.calls] == ["g1", "g2", "g3"]
    # The checkpoint's copy of g2 carries no tokens: the usage recorded before it is kept.
    assert [c.input for c in parsed.calls] == [900_000, 950_000, 4000]
    assert _texts(parsed)[4:] == [
        ("user", "summary", "<state_snapshot>we listed files</state_snapshot>"),
        ("user", "user_text", "continue"),
        ("assistant", "assistant_text", "part two"),
        ("user", "user_text", "and now?"),
        ("assistant", "assistant_text", "part three"),
    ]
    last = parsed.calls[2]
    assert (last.prompt_start, last.prompt_end) == (4, 8)
    assert _sent_to(parsed, 1) == ["long task", "part one", "continue"]
    # The re-laid copy of g2 is history, not a second output of its call; its uids are fresh.
    copy = parsed.parts[6]
    assert copy.call_uid is None and copy.message_id == parsed.parts[3].message_id
    prefix = part_uid_prefix(parsed.session.uid)
    assert [p.uid for p in parsed.parts] == [f"{prefix}{p.seq}" for p in parsed.parts]
    assert len({p.uid for p in parsed.parts}) == len(parsed.parts)
    assert parsed.session.meta is not None and parsed.session.meta["checkpoints"] == 1


def test_synthetic_tool_response_turns_are_not_counted_twice(tmp_path: Path) -> None:
    done = _tool("grep-1", "grep", {"q": "x"}, {"output": "3 matches"})
    response_turn = _user(
        "r1", [{"functionResponse": {"id": "grep-1", "name": "grep", "response": {"output": "3 matches"}}}]
    )
    path = _jsonl(
        _chats(tmp_path) / f"session-2026-06-01T10-00-{SID[:8]}.jsonl",
        [
            _user("u1", [{"text": "find x"}]),
            _gemini("g1", "", _tokens(700, 9), tool_calls=[done]),
            response_turn,
            _gemini("g2", "Found 3.", _tokens(760, 3)),
        ],
    )
    parsed = parse_session(path)
    assert _texts(parsed) == [
        ("user", "user_text", "find x"),
        ("assistant", "tool_call", '{"q":"x"}'),
        ("user", "tool_result", "3 matches"),
        ("assistant", "assistant_text", "Found 3."),
    ]
    assert parsed.parts[2].tool_name == "grep" and parsed.parts[2].message_id == "r1"


def test_synthetic_model_turn_without_model_or_tokens_is_not_a_call(tmp_path: Path) -> None:
    path = _jsonl(
        _chats(tmp_path) / f"session-2026-06-01T10-00-{SID[:8]}.jsonl",
        [
            _user("u1", [{"text": "hi"}]),
            _gemini("ack", "Got it.", None, model=None),
            _gemini("g1", "ok", _tokens(5, 1)),
        ],
    )
    parsed = parse_session(path)
    assert [c.message_id for c in parsed.calls] == ["g1"]
    assert parsed.parts[1].text == "Got it." and parsed.parts[1].call_uid is None


def test_subagent_folder_points_at_its_parent(tmp_path: Path) -> None:
    chats = _chats(tmp_path)
    parent = _jsonl(
        chats / f"session-2026-05-01T10-00-{SID[:8]}.jsonl", [_user("u1", [{"text": "delegate"}])]
    )
    later = "2026-05-01T12:00:00.000Z"
    _jsonl(
        chats / f"session-2026-05-01T12-00-{SID[:8]}.jsonl", [_user("u9", [{"text": "after"}])], start=later
    )
    sub_id = "9f0e1d2c-0000-4000-8000-000000000001"
    sub = _jsonl(
        chats / SID / f"{sub_id}.jsonl",
        [_user("su1", [{"text": "investigate"}]), _gemini("sg1", "found it", _tokens(300, 4))],
        sid=sub_id,
        start="2026-05-01T10:05:00.000Z",
        kind="subagent",
        directories=[ROOT],
    )
    assert sniff_file(sub) is IMPORTER
    parsed = parse_session(sub)
    assert parsed.session.is_subagent
    assert parsed.session.parent_uid == parse_session(parent).session.uid
    assert parsed.session.uid == f"gemini-cli:{sub_id}:2026-05-01T10:05:00.000Z"
    assert parsed.session.meta is not None and parsed.session.meta["parent_session_id"] == SID


def test_parent_candidates_are_read_once_while_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chats = _chats(tmp_path)
    parent = chats / f"session-2026-05-01T10-00-{SID[:8]}.jsonl"
    _jsonl(parent, [_user("u1", [{"text": "delegate"}])])
    subs = [
        _jsonl(
            chats / SID / f"9f0e1d2c-0000-4000-8000-00000000000{k}.jsonl",
            [_user("su1", [{"text": "investigate"}])],
            sid=f"9f0e1d2c-0000-4000-8000-00000000000{k}",
            start="2026-05-01T10:05:00.000Z",
            kind="subagent",
        )
        for k in range(3)
    ]
    reads: list[Path] = []
    original = project._read_peek
    monkeypatch.setattr(project, "_read_peek", lambda path: reads.append(path) or original(path))
    monkeypatch.setattr(project, "_PEEKED", {})
    assert {parse_session(sub).session.parent_uid for sub in subs} == {parse_session(parent).session.uid}
    assert reads.count(parent) == 1
    # Rewritten (another start, one more message): read again, and the sub-agents follow it.
    _jsonl(parent, [_user("u1", [{"text": "delegate"}]), _user("u2", "x")], start="2026-05-01T09:00:00.000Z")
    assert parse_session(subs[0]).session.parent_uid == f"gemini-cli:{SID}:2026-05-01T09:00:00.000Z"
    assert reads.count(parent) == 2


def test_slug_folder_with_project_root_marker(tmp_path: Path) -> None:
    project = tmp_path / ".gemini" / "tmp" / "my-repo"
    project.mkdir(parents=True)
    (project / ".project_root").write_text(ROOT + "\n")
    path = _jsonl(
        project / "chats" / f"session-2026-05-01T10-00-{SID[:8]}.jsonl", [_user("u1", [{"text": "x"}])]
    )
    assert parse_session(path).session.project == ROOT


def test_json_converted_to_jsonl_is_the_same_session(tmp_path: Path, store: Store) -> None:
    messages = [_user("u1", [{"text": "go"}]), _gemini("g1", "went", _tokens(50, 2))]
    legacy = _legacy(tmp_path, messages)
    resumed = _jsonl(legacy.with_suffix(".jsonl"), [*messages, _user("u2", [{"text": "more"}])])
    assert parse_session(legacy).session.uid == parse_session(resumed).session.uid
    ingest([legacy.parent], store=store)
    assert store.counts()["sessions"] == 1
    assert store.parts()["text"].to_list() == ["go", "went", "more"]


def test_sniffing(tmp_path: Path) -> None:
    legacy = _legacy(tmp_path, [_user("u1", "hi")])
    jsonl = _jsonl(tmp_path / "elsewhere" / "log.jsonl", [_user("u1", [{"text": "hi"}])])
    recording = tmp_path / "x.responses"
    recording.write_text(json.dumps({"method": "generateContentStream", "response": [{"sessionId": "no"}]}))
    logs = tmp_path / "logs.json"
    logs.write_text(json.dumps([{"sessionId": SID, "messageId": 0, "type": "user", "message": "hi"}]))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"sessionID": "ses_1", "messages": []}))
    big = tmp_path / "big.json"  # a compact one-line record longer than the head
    big.write_text(
        json.dumps({"sessionId": SID, "projectHash": HASH, "messages": [_user("u", "x" * HEAD_BYTES)]})
    )
    assert sniff_file(legacy) is IMPORTER and sniff_file(jsonl) is IMPORTER and sniff_file(big) is IMPORTER
    assert IMPORTER.sniff_file(recording, recording.read_bytes()) is False
    assert IMPORTER.sniff_file(logs, logs.read_bytes()) is False
    assert IMPORTER.sniff_file(other, other.read_bytes()) is False
    assert IMPORTER.sniff_dir(legacy.parent) is False
    # A file named and placed as a recording is claimed even when damaged, so the damage is reported.
    damaged = legacy.parent / f"session-2025-10-22T09-00-{SID[:8]}.json"
    damaged.write_text("")
    assert IMPORTER.sniff_file(damaged, b"") is True


def test_truncated_json_names_the_line(tmp_path: Path) -> None:
    path = _legacy(tmp_path, [_user("u1", "hi"), _gemini("g1", "hello", _tokens(10, 1))])
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(InputError) as info:
        parse_session(path)
    err = info.value
    assert err.path == str(path) and err.line is not None and err.line > 1
    assert "\n" not in str(err) and "not valid JSON" in str(err)


def test_jsonl_corrupt_line_is_named(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "s.jsonl",
        [_user("u1", [{"text": "hi"}]), _gemini("g1", "a", _tokens(10, 1)), _user("u2", "b")],
    )
    lines = path.read_text().splitlines()
    lines[2] = lines[2][:15]
    path.write_text("\n".join(lines) + "\n")
    # A damaged line costs that line, not the session: it is left out with a warning naming it.
    session, warning = IMPORTER.parse(path)
    assert isinstance(session, ParsedSession) and isinstance(warning, InputWarning)
    assert warning.line == 3 and f"{path}:3" in str(warning)
    assert [p.text for p in session.parts] == ["hi", "b"]


@pytest.mark.parametrize(
    ("content", "what"),
    [
        ("", "empty file"),
        ("\n\n", "empty file"),
        ('{"hello": 1}\n{"id": "x"}\n', "first line is not gemini-cli session metadata"),
        ('["not", "a", "record"]', "not a gemini-cli session"),
        ('{"sessionId": "x", "messages": 3}', "`messages` is missing or not a list"),
    ],
)
def test_bad_input_raises_one_line_input_errors(tmp_path: Path, content: str, what: str) -> None:
    path = tmp_path / ("s.jsonl" if "first line" in what else "s.json")
    path.write_text(content)
    with pytest.raises(InputError) as info:
        parse_session(path)
    assert what in str(info.value) and str(path) in str(info.value) and "\n" not in str(info.value)


def _decoded_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every legacy recording decoded in full, as files the field-picking decoder rejects are."""

    class Refuses:
        def decode(self, data: bytes) -> Any:
            raise msgspec.DecodeError("refused")

    monkeypatch.setattr(document, "_LEGACY_DECODER", Refuses())


def test_legacy_fields_read_are_the_ones_a_full_decode_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    call = _tool("edit-1", "replace", {"file_path": "a.py", "new_string": "x = 1"}, {"output": "ok"})
    call |= {"resultDisplay": {"fileDiff": "@@ -1 +1 @@", "newContent": "x = 1"}, "description": "edit a.py"}
    thought = {"subject": "Plan", "description": "edit a.py", "timestamp": "2025-10-21T20:04:29.000Z"}
    path = _legacy(
        tmp_path,
        [
            _user("u1", [{"text": "fix a.py"}, {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]),
            _gemini("g1", "", _tokens(500, 8), thoughts=[thought], tool_calls=[call]),
            {"id": "i1", "type": "info", "content": "saved", "timestamp": START},
            _gemini("g2", [{"text": "done"}], _tokens(560, 2)) | {"displayContent": "done"},
        ],
        summary="fix a.py",
        kind="main",
        directories=["/home/dev/my-repo"],
        futureField={"nested": [1, 2]},
    )
    picked = parse_session(path)
    _decoded_whole(monkeypatch)
    whole = parse_session(path)
    assert picked == whole
    assert [p.kind for p in picked.parts] == [
        "user_text",
        "file",
        "reasoning",
        "tool_call",
        "tool_result",
        "assistant_text",
    ]
    assert picked.session.title == "fix a.py" and picked.session.meta is not None
    assert picked.session.meta["directories"] == ["/home/dev/my-repo"]


@pytest.mark.parametrize(
    ("messages", "what"),
    [
        ([_user("u1", "hi"), "not a message"], "message 1 is not a JSON object"),
        (
            [_user("u1", "hi"), _gemini("g1", "a", _tokens(10, 1)) | {"toolCalls": "x"}],
            "toolCalls is not a list",
        ),
    ],
)
def test_legacy_shapes_the_fast_decoder_rejects_report_as_before(
    tmp_path: Path, messages: list[Any], what: str
) -> None:
    path = _legacy(tmp_path, messages)
    with pytest.raises(InputError) as info:
        parse_session(path)
    assert what in str(info.value) and str(path) in str(info.value)


def test_legacy_tool_calls_that_are_not_objects_are_skipped(tmp_path: Path) -> None:
    call = _tool("grep-1", "grep", {"q": "x"}, {"output": "3 matches"})
    path = _legacy(tmp_path, [_user("u1", "find x"), _gemini("g1", "", _tokens(700, 9), tool_calls=[call])])
    record = json.loads(path.read_text())
    record["messages"][1]["toolCalls"].insert(0, None)
    path.write_text(json.dumps(record))
    assert _texts(parse_session(path))[1:] == [
        ("assistant", "tool_call", '{"q":"x"}'),
        ("user", "tool_result", "3 matches"),
    ]


def test_non_numeric_tokens_make_the_call_invalid_not_the_session(tmp_path: Path) -> None:
    bad = _tokens(10, 1) | {"input": "ten"}
    path = _jsonl(tmp_path / "s.jsonl", [_user("u1", [{"text": "hi"}]), _gemini("g1", "a", bad)])
    (call,) = parse_session(path).calls
    assert call.usage_status == "invalid" and call.usage_raw == bad
    assert (call.input, call.output, call.ctx, call.carry) == (None, None, None, None)


# -- real sessions -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = shared_fixture("gemini")
    with Store(tmp_path_factory.mktemp("real") / "calib.duckdb") as store:
        first = ingest([root], store=store)
        second = ingest([root], full=True, store=store)
        yield store, first, second


@pytest.mark.realdata
def test_real_sessions_import(real_store: Any) -> None:
    store, first, second = real_store
    assert first.errors == [] and first.files == 37 and first.sessions == 37
    assert sorted(Path(p).name for p in first.skipped) == [
        "browser-agent.persistent-session.responses",
        "context-compress-interactive.compress.responses",
    ]
    # Parsing every file again (--full) finds only rows the store already holds.
    assert (second.sessions, second.calls, second.parts, second.errors) == (0, 0, 0, [])
    calls = store.calls()
    ok = calls.filter(pl.col("usage_status") == "ok")
    assert ok.height == 2292
    assert ok.filter((pl.col("ctx") != pl.col("input")) | (pl.col("carry") != pl.col("output"))).height == 0
    missing = calls.filter(pl.col("usage_status") == "missing")
    assert missing["input"].null_count() == missing.height == 51


@pytest.mark.realdata
def test_real_hand_checked_delta(real_store: Any) -> None:
    store = real_store[0]
    # aim/[AUTO_REPAIR]/archive/raw/session-2026-03-18T02-08-6745da32.json: message eaa84ca4-... has
    # tokens input 1247, output 10; the next one, b3b887cc-..., input 2001. 2001 - 1247 - 10 = 744.
    session = "gemini-cli:6745da32-772a-411b-bdd7-c780c0da1cfb:2026-03-18T02:08:45.077Z"
    row = store.calls().filter(pl.col("call_uid") == f"{session}:b3b887cc-3241-460b-9b21-535a0424b9a6")
    assert row["delta"].to_list() == [744]


@pytest.mark.realdata
def test_real_subagents_find_their_parent(real_store: Any) -> None:
    sessions = real_store[0].sessions()
    subs = sessions.filter(pl.col("is_subagent"))
    assert subs.height == 15 and subs["parent_uid"].null_count() == 0
    assert set(subs["parent_uid"]) <= set(sessions.filter(~pl.col("is_subagent"))["session_uid"])
    sub = subs.filter(pl.col("session_uid").str.ends_with(":2026-03-18T02:37:50.007Z"))
    assert sub["parent_uid"].to_list() == [
        "gemini-cli:29f3682e-9391-4724-9a1b-be0bb537fd82:2026-03-18T02:33:04.581Z"
    ]


def _same_rows_both_ways(path: Path) -> None:
    """`parse` and `parse_from` (what ingest uses) give the same rows, as records only."""
    whole = records_to_columns(list(IMPORTER.parse(path)))
    increment = IMPORTER.parse_from(path, 0, None)
    assert records_to_columns(increment.records) == whole


def test_parse_and_parse_from_give_the_same_rows(tmp_path: Path) -> None:
    path = _jsonl(
        _chats(tmp_path) / f"session-2026-06-01T10-00-{SID[:8]}.jsonl",
        [
            _user("u1", [{"text": "long task"}]),
            _gemini("g1", "part one", _tokens(900_000, 10), thoughts=[{"subject": "S", "description": "D"}]),
            {
                "$set": {
                    "messages": [_user("s1", "<state_snapshot>x</state_snapshot>"), _gemini("g1", "part one")]
                }
            },
            _gemini("g2", "", _tokens(0, 0)),
            _gemini("g3", "", _tokens(4000, 10), tool_calls=[_tool("t1", "ls", {}, {"output": "a b"})]),
        ],
    )
    _same_rows_both_ways(path)


@pytest.mark.realdata
def test_real_parse_and_parse_from_give_the_same_rows() -> None:
    paths = sorted(shared_fixture("gemini").rglob("*.json"))
    assert len(paths) == 37
    for path in paths:
        _same_rows_both_ways(path)


def test_appended_read_gives_records_that_continue_the_whole_read(tmp_path: Path) -> None:
    path = _chats(tmp_path) / f"session-2026-06-01T10-00-{SID[:8]}.jsonl"
    first = [_user("u1", [{"text": "go"}]), _gemini("g1", "went", _tokens(100, 5))]
    _jsonl(path, first)
    start = IMPORTER.parse_from(path, 0, None)
    more = [
        _user("u2", [{"text": "on"}]),
        _gemini("g2", "gone", _tokens(200, 7), thoughts=[{"subject": "S"}]),
    ]
    _jsonl(path, [*first, *more])
    step = IMPORTER.parse_from(path, start.offset, start.state)
    assert step.appended and not start.appended
    (parsed,) = step.records
    whole = parse_session(path)
    assert parsed.session == whole.session
    assert parsed.parts == whole.parts[2:] and parsed.calls == whole.calls[1:]
    prefix = part_uid_prefix(whole.session.uid)
    assert [(p.seq, p.uid) for p in parsed.parts] == [(k, f"{prefix}{k}") for k in range(2, 5)]
    assert [c.seq for c in parsed.calls] == [1]
    assert parsed.calls[0].uid == f"{whole.session.uid}:g2"
