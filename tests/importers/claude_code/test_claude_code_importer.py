"""The Claude Code importer on small hand-written transcripts, one rule each, and on the shared real ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import shared_fixture

from calib.core.errors import InputError, InputWarning
from calib.core.records import ParsedSession
from calib.importers import HEAD_BYTES, get_importer, sniff_file
from calib.importers.claude_code import IMPORTER, config_dirs, parse_sessions
from calib.importers.common import PRUNED_TEXT
from calib.ingest.pipeline import ingest
from calib.store.store import Store

SID = "5f0c1d2e-3a4b-4c5d-8e9f-0a1b2c3d4e5f"
CWD = "/home/dev/my.repo"


def _env(uuid: str, parent: str | None, ts: int, kind: str, **fields: Any) -> dict[str, Any]:
    line: dict[str, Any] = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": CWD,
        "sessionId": SID,
        "version": "2.1.33",
        "type": kind,
        "uuid": uuid,
        "timestamp": f"2026-02-01T10:00:{ts:02d}.000Z",
    }
    line.update(fields)
    return line


def user(uuid: str, parent: str | None, ts: int, content: Any, **fields: Any) -> dict[str, Any]:
    return _env(uuid, parent, ts, "user", message={"role": "user", "content": content}, **fields)


def result(uuid: str, parent: str, ts: int, tool_id: str, text: Any) -> dict[str, Any]:
    block = {"tool_use_id": tool_id, "type": "tool_result", "content": text}
    return user(uuid, parent, ts, [block], toolUseResult={"stdout": "UI copy"})


def usage(output: int, input: int = 5, write: int = 100, read: int = 1000) -> dict[str, Any]:
    return {
        "input_tokens": input,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "output_tokens": output,
        "service_tier": "standard",
    }


def asst(
    uuid: str,
    parent: str | None,
    ts: int,
    mid: str,
    block: dict[str, Any],
    output: int,
    stop: str | None = None,
    model: str = "claude-opus-4-6",
    request: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    message = {
        "model": model,
        "id": mid,
        "type": "message",
        "role": "assistant",
        "content": [block],
        "stop_reason": stop,
        "usage": usage(output),
    }
    return _env(uuid, parent, ts, "assistant", message=message, requestId=request or f"req_{mid}", **fields)


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def tool(tid: str, name: str = "Bash", **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": name, "input": args or {"command": "ls"}}


def write(path: Path, lines: list[dict[str, Any]], tail: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + tail, encoding="utf-8")
    return path


def transcript(tmp_path: Path, lines: list[dict[str, Any]], tail: str = "") -> Path:
    return write(tmp_path / "projects" / "-home-dev-my-repo" / f"{SID}.jsonl", lines, tail)


def parse(path: Path) -> list[ParsedSession]:
    """The sessions `parse` yields (it may also yield warnings about lines left out: see `warned`)."""
    records = list(IMPORTER.parse(path))
    assert all(isinstance(r, ParsedSession | InputWarning) for r in records)
    return [r for r in records if isinstance(r, ParsedSession)]


def warned(records: Any) -> list[tuple[int | None, str]]:
    """(line, message) of each warning among `records`, in order."""
    return [(r.line, str(r)) for r in records if isinstance(r, InputWarning)]


def kinds(parsed: ParsedSession) -> list[tuple[str, str]]:
    return [(p.kind, p.text) for p in parsed.parts]


# -- calls -------------------------------------------------------------------------------------------


def test_lines_of_one_request_are_one_call_with_the_largest_output(tmp_path: Path) -> None:
    lines = [
        user("u1", None, 1, "list the files"),
        asst("a1", "u1", 2, "msg_1", {"type": "thinking", "thinking": "Let me look.", "signature": "x"}, 1),
        asst("a2", "a1", 2, "msg_1", text("Listing them."), 1),
        asst("a3", "a2", 3, "msg_1", tool("t1"), 250, stop="tool_use"),
        result("r1", "a3", 4, "t1", "a.txt\nb.txt"),
        asst("a4", "r1", 5, "msg_2", text("Two files."), 12, stop="end_turn"),
        # The same request written again (a resumed copy): still one call.
        asst("a5", "a4", 6, "msg_2", text("Two files."), 12, stop="end_turn"),
    ]
    [parsed] = parse(transcript(tmp_path, lines))
    first, second = parsed.calls
    assert len(parsed.calls) == 2
    assert (first.output, first.input, first.cache_write, first.cache_read) == (250, 5, 100, 1000)
    assert first.ctx == 1105 and first.carry == 250 and first.usage_status == "ok"
    assert first.usage_raw == usage(250) and first.finish == "tool_use"
    assert (first.provider, first.model, first.usage_style) == ("anthropic", "claude-opus-4-6", "anthropic")
    assert first.ts is not None and first.ts.second == 2
    assert kinds(parsed)[:5] == [
        ("user_text", "list the files"),
        ("reasoning", "Let me look."),
        ("assistant_text", "Listing them."),
        ("tool_call", '{"command":"ls"}'),
        ("tool_result", "a.txt\nb.txt"),
    ]
    assert parsed.parts[3].tool_name == "Bash" and parsed.parts[4].tool_name == "Bash"
    assert [p.call_uid for p in parsed.parts[:5]] == [None, first.uid, first.uid, first.uid, None]
    assert (first.prompt_start, first.prompt_end, second.prompt_end) == (0, 1, 5)
    assert parsed.session.uid == f"claude-code:{SID}" and parsed.session.project == CWD
    assert parsed.session.title == "list the files"
    assert parsed.session.meta is not None and parsed.session.meta["versions"] == ["2.1.33"]


def test_synthetic_and_api_error_lines_are_neither_calls_nor_parts(tmp_path: Path) -> None:
    synthetic = asst("s1", "u1", 2, "f9102ce6", text("No response requested."), 0, model="<synthetic>")
    synthetic.pop("requestId")
    error = asst("e1", "s1", 3, "err_1", text("API Error: 529 overloaded"), 0, isApiErrorMessage=True)
    lines = [
        user("u1", None, 1, "hello"),
        synthetic,
        error,
        user("u2", "e1", 4, "again"),
        asst("a1", "u2", 5, "msg_1", text("Hi."), 40, stop="end_turn"),
    ]
    [parsed] = parse(transcript(tmp_path, lines))
    assert [c.message_id for c in parsed.calls] == ["msg_1"]
    assert kinds(parsed) == [("user_text", "hello"), ("user_text", "again"), ("assistant_text", "Hi.")]
    assert parsed.session.meta is not None
    assert (parsed.session.meta["synthetic_lines"], parsed.session.meta["api_error_lines"]) == (1, 1)


def test_all_zero_usage_is_missing(tmp_path: Path) -> None:
    line = asst("a1", "u1", 2, "msg_1", text("Hi."), 0, stop="end_turn")
    line["message"]["usage"] = usage(0, 0, 0, 0)
    [parsed] = parse(transcript(tmp_path, [user("u1", None, 1, "hi"), line]))
    [call] = parsed.calls
    assert call.usage_status == "missing" and call.ctx is None and call.carry is None


# -- placeholders ------------------------------------------------------------------------------------


def test_a_streaming_placeholder_output_is_flagged_and_carries_nothing(tmp_path: Path) -> None:
    long = "word " * 200
    lines = [
        user("u1", None, 1, "explain"),
        # 2.1.4x: no stop_reason anywhere, and 3 output tokens for 1000 characters and a tool call.
        asst("a1", "u1", 2, "msg_1", text(long), 3),
        asst("a2", "a1", 2, "msg_1", tool("t1"), 3),
        result("r1", "a2", 3, "t1", "ok"),
        # A short final answer whose count was written: kept.
        asst("a3", "r1", 4, "msg_2", text("Done."), 2),
        # A long answer with its stop_reason is never a placeholder, whatever its count.
        asst("a4", "a3", 5, "msg_3", text(long), 3, stop="end_turn"),
    ]
    [parsed] = parse(transcript(tmp_path, lines))
    flags = [(c.output, c.output_placeholder, c.carry) for c in parsed.calls]
    assert flags == [(3, True, None), (2, False, 2), (3, False, 3)]
    assert parsed.session.meta is not None and parsed.session.meta["placeholder_calls"] == 1


# -- the tree ----------------------------------------------------------------------------------------


def test_parallel_tool_results_stay_on_the_path(tmp_path: Path) -> None:
    lines = [
        user("u1", None, 1, "check both"),
        asst("a1", "u1", 2, "msg_1", tool("tA", command="ls"), 1),
        asst("a2", "a1", 2, "msg_1", tool("tB", name="Read", file_path="x"), 90, stop="tool_use"),
        {"type": "progress", "uuid": "p1", "parentUuid": "a1", "sessionId": SID, "data": {}},
        result("rA", "p1", 3, "tA", "listing"),
        result("rB", "a2", 3, "tB", [{"type": "text", "text": "line 1"}, {"type": "text", "text": "line 2"}]),
        asst("a3", "rB", 4, "msg_2", text("Both fine."), 30, stop="end_turn"),
    ]
    sessions = parse(transcript(tmp_path, lines))
    assert len(sessions) == 1
    [parsed] = sessions
    assert kinds(parsed) == [
        ("user_text", "check both"),
        ("tool_call", '{"command":"ls"}'),
        ("tool_call", '{"file_path":"x"}'),
        ("tool_result", "listing"),
        ("tool_result", "line 1\nline 2"),
        ("assistant_text", "Both fine."),
    ]
    assert [p.tool_name for p in parsed.parts[3:5]] == ["Bash", "Read"]
    assert [c.prompt_end for c in parsed.calls] == [1, 5]


def test_a_real_fork_becomes_a_branch_session_and_no_call_counts_twice(tmp_path: Path) -> None:
    lines = [
        user("u1000000-first", None, 1, "start"),
        asst("a1", "u1000000-first", 2, "msg_1", text("Ready."), 40, stop="end_turn"),
        user("u2000000-old", "a1", 3, "do it the old way"),
        asst("a2", "u2000000-old", 4, "msg_2", text("Old way done."), 40, stop="end_turn"),
        # Rewound to after msg_1 and asked again: a second child of a1.
        user("u3000000-new", "a1", 5, "do it the new way"),
        asst("a3", "u3000000-new", 6, "msg_3", text("New way done."), 40, stop="end_turn"),
    ]
    main, branch = parse(transcript(tmp_path, lines))
    assert [c.message_id for c in main.calls] == ["msg_1", "msg_3"]
    assert kinds(main)[2] == ("user_text", "do it the new way")
    assert branch.session.uid == f"claude-code:{SID}:branch-u2000000"
    assert branch.session.parent_uid == main.session.uid and not branch.session.is_subagent
    assert [c.message_id for c in branch.calls] == ["msg_2"]
    assert kinds(branch) == [
        ("user_text", "start"),
        ("assistant_text", "Ready."),
        ("user_text", "do it the old way"),
        ("assistant_text", "Old way done."),
    ]
    # The shared prefix's output belongs to the main session's call, not the branch's.
    assert [p.call_uid for p in branch.parts] == [None, None, None, branch.calls[0].uid]
    assert branch.calls[0].prompt_end == 3
    assert main.session.meta is not None and main.session.meta["branches"] == 1


def test_a_resumed_exit_with_no_call_of_its_own_adds_no_session(tmp_path: Path) -> None:
    lines = [
        user("u1", None, 1, "start"),
        asst("a1", "u1", 2, "msg_1", text("Ready."), 40, stop="end_turn"),
        user("c1", "a1", 3, "<command-name>/exit</command-name>"),
        user("c2", "c1", 3, "<local-command-stdout>Goodbye!</local-command-stdout>"),
        user("u2", "a1", 9, "resumed"),
        asst("a2", "u2", 10, "msg_2", text("Back."), 40, stop="end_turn"),
    ]
    assert len(parse(transcript(tmp_path, lines))) == 1


def test_a_new_root_restarts_the_context(tmp_path: Path) -> None:
    lines = [
        user("u1", None, 1, "plan it"),
        asst("a1", "u1", 2, "msg_1", text("Plan."), 40, stop="end_turn"),
        user("u2", None, 3, "Implement the following plan: Plan."),
        asst("a2", "u2", 4, "msg_2", text("Done."), 40, stop="end_turn"),
    ]
    [parsed] = parse(transcript(tmp_path, lines))
    assert [(c.prompt_start, c.prompt_end) for c in parsed.calls] == [(0, 1), (2, 3)]
    assert parsed.session.meta is not None and parsed.session.meta["restarts"] == 1


def test_compact_boundary_starts_the_prompt_at_the_summary(tmp_path: Path) -> None:
    boundary = _env(
        "b1",
        None,
        5,
        "system",
        subtype="compact_boundary",
        content="Conversation compacted",
        logicalParentUuid="a2",
        compactMetadata={"trigger": "auto", "preTokens": 1500},
    )
    lines = [
        user("u1", None, 1, "start"),
        asst("a1", "u1", 2, "msg_1", tool("t1"), 90, stop="tool_use"),
        result("r1", "a1", 3, "t1", "out"),
        asst("a2", "r1", 4, "msg_2", text("Noted."), 40, stop="end_turn"),
        boundary,
        user(
            "s1",
            "b1",
            5,
            "Summary of the earlier work.",
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        ),
        user("u2", "s1", 6, "continue"),
        asst("a3", "u2", 7, "msg_3", text("Continuing."), 40, stop="end_turn"),
    ]
    [parsed] = parse(transcript(tmp_path, lines))
    last = parsed.calls[-1]
    assert parsed.parts[last.prompt_start].kind == "summary"
    assert [p.kind for p in parsed.parts[last.prompt_start : last.prompt_end]] == ["summary", "user_text"]
    assert [c.prompt_start for c in parsed.calls] == [0, 0, 4]
    assert parsed.session.meta is not None
    assert parsed.session.meta["compactions"] == [{"trigger": "auto", "preTokens": 1500, "at_call": 2}]


def test_microcompact_prunes_the_cleared_tool_results(tmp_path: Path) -> None:
    micro = _env(
        "m1",
        "a2",
        8,
        "system",
        subtype="microcompact_boundary",
        microcompactMetadata={
            "trigger": "auto",
            "preTokens": 9000,
            "tokensSaved": 4000,
            "compactedToolIds": ["t1"],
        },
    )
    lines = [
        user("u1", None, 1, "start"),
        asst("a1", "u1", 2, "msg_1", tool("t1"), 90, stop="tool_use"),
        result("r1", "a1", 3, "t1", "a long output"),
        asst("a2", "r1", 4, "msg_2", text("Noted."), 40, stop="end_turn"),
        micro,
        user("u2", "m1", 9, "next"),
        asst("a3", "u2", 10, "msg_3", text("Ok."), 40, stop="end_turn"),
    ]
    [parsed] = parse(transcript(tmp_path, lines))
    pruned = [p for p in parsed.parts if p.pruned_at is not None]
    assert [(p.kind, p.text, p.pruned_text) for p in pruned] == [
        ("tool_result", "a long output", PRUNED_TEXT)
    ]
    assert pruned[0].pruned_at is not None and pruned[0].pruned_at.second == 8
    assert parsed.session.meta is not None and parsed.session.meta["microcompactions"][0]["cleared"] == 1


def test_images_are_file_placeholders(tmp_path: Path) -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    lines = [
        user("u1", None, 1, [text("see this"), image]),
        asst("a1", "u1", 2, "msg_1", text("A square."), 40, stop="end_turn"),
    ]
    [parsed] = parse(transcript(tmp_path, lines))
    assert kinds(parsed)[:2] == [("user_text", "see this"), ("file", "[image image/png, 3 bytes]")]


# -- sub-agents --------------------------------------------------------------------------------------


def test_a_subagent_file_links_to_its_parent(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-home-dev-my-repo" / SID / "subagents"
    lines = [
        user("u1", None, 1, "find the bug", isSidechain=True, agentId="a1b2c3"),
        asst(
            "a1",
            "u1",
            2,
            "msg_9",
            text("Found."),
            40,
            stop="end_turn",
            model="claude-haiku-4-5",
            agentId="a1b2c3",
        ),
    ]
    path = write(folder / "agent-a1b2c3.jsonl", lines)
    (folder / "agent-a1b2c3.meta.json").write_text(json.dumps({"agentType": "Explore", "spawnDepth": 1}))
    [parsed] = parse(path)
    s = parsed.session
    assert s.uid == f"claude-code:{SID}:agent-a1b2c3" and s.native_id == SID
    assert s.parent_uid == f"claude-code:{SID}" and s.is_subagent
    assert s.meta is not None and (s.meta["agent_type"], s.meta["spawn_depth"]) == ("Explore", 1)
    assert parsed.calls[0].model == "claude-haiku-4-5"


# -- bad input ---------------------------------------------------------------------------------------


def _chat() -> list[dict[str, Any]]:
    return [
        user("u1", None, 1, "one"),
        asst("a1", "u1", 2, "msg_1", text("One."), 40, stop="end_turn"),
        user("u2", "a1", 3, "two"),
        asst("a2", "u2", 4, "msg_2", text("Two."), 40, stop="end_turn"),
    ]


def test_a_damaged_middle_line_is_skipped_and_counted(tmp_path: Path) -> None:
    path = transcript(tmp_path, _chat())
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(2, '{"parentUuid": "a1", "type": "progr\n')
    path.write_text("".join(lines))
    [parsed] = parse(path)
    assert len(parsed.calls) == 2
    assert parsed.session.meta is not None and parsed.session.meta["skipped_lines"] == 1
    [(line, message)] = warned(IMPORTER.parse(path))
    assert line == 3 and message.startswith("this line is not valid JSON (")
    assert message.endswith(f"); left out, the rest of the session was imported ({path}:3)")
    assert warned(IMPORTER.parse_from(path, 0, None).records) == [(line, message)]


def test_a_line_that_is_no_json_object_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = transcript(tmp_path, _chat())
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(1, "[1, 2]\n")
    path.write_text("".join(lines))
    [parsed] = parse(path)
    assert len(parsed.calls) == 2
    assert warned(IMPORTER.parse(path)) == [
        (2, f"this line is not a JSON object; left out, the rest of the session was imported ({path}:2)")
    ]


def test_a_damaged_line_is_warned_about_by_the_read_that_first_reaches_it(tmp_path: Path) -> None:
    chat = _chat()
    path = transcript(tmp_path, chat[:2])
    first = IMPORTER.parse_from(path, 0, None)
    assert warned(first.records) == []
    with path.open("a", encoding="utf-8") as fh:  # a damaged line arrives with the next turn
        fh.write("[3]\n" + "".join(json.dumps(line) + "\n" for line in chat[2:]))
    second = IMPORTER.parse_from(path, first.offset, first.state)
    assert second.appended
    assert [line for line, _ in warned(second.records)] == [3]
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(user("u3", "a2", 5, "three")) + "\n")
    third = IMPORTER.parse_from(path, second.offset, second.state)
    assert third.appended and warned(third.records) == []  # line 3 was read, and warned about, before
    assert [line for line, _ in warned(IMPORTER.parse_from(path, 0, None).records)] == [3]


def test_a_cut_off_last_line_waits_for_the_next_read(tmp_path: Path) -> None:
    chat = _chat()
    whole = json.dumps(chat[-1]) + "\n"
    path = transcript(tmp_path, chat[:-1], tail=whole[:40])
    [parsed] = parse(path)
    assert [c.message_id for c in parsed.calls] == ["msg_1"]
    unfinished = (
        f"the last line is unfinished (claude-code may still be writing it); left out ({path}:4); "
        "ingest again once it is complete to add it"
    )
    assert warned(IMPORTER.parse(path)) == [(4, unfinished)]
    first = IMPORTER.parse_from(path, 0, None)
    assert first.offset == len(path.read_bytes()) - 40
    assert warned(first.records) == [(4, unfinished)]
    with path.open("a", encoding="utf-8") as fh:
        fh.write(whole[40:])
    second = IMPORTER.parse_from(path, first.offset, first.state)
    assert second.appended
    [grown] = second.records
    assert isinstance(grown, ParsedSession)
    assert [c.message_id for c in grown.calls] == ["msg_2"] and grown.calls[0].seq == 1
    assert [p.seq for p in grown.parts] == [3]


def test_a_file_that_is_no_transcript_raises_a_clear_input_error(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps({"event": "click", "n": i}) + "\n" for i in range(3)))
    with pytest.raises(InputError) as info:
        list(IMPORTER.parse(path))
    assert info.value.path == str(path) and info.value.line == 1
    assert "not a Claude Code transcript" in str(info.value) and "--format" in str(info.value)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(InputError, match="empty file"):
        list(IMPORTER.parse(empty))


def test_sniffing_claims_transcripts_and_nothing_else(tmp_path: Path) -> None:
    path = transcript(tmp_path, _chat())
    assert sniff_file(path) is IMPORTER
    gemini = tmp_path / "session-2025-10-21T20-04-0b23371a.jsonl"
    gemini.write_text(json.dumps({"sessionId": SID, "projectHash": "ab", "startTime": "x"}) + "\n")
    codex = tmp_path / "rollout.jsonl"
    codex.write_text(json.dumps({"timestamp": "x", "type": "session_meta", "payload": {"id": SID}}) + "\n")
    for other in (gemini, codex):
        assert not IMPORTER.sniff_file(other, other.read_bytes()[:HEAD_BYTES])
    # A first line longer than the sniffer's view is judged from its keys.
    long = transcript(tmp_path / "long", [user("u1", None, 1, "x" * (2 * HEAD_BYTES)), *_chat()[1:]])
    assert IMPORTER.sniff_file(long, long.read_bytes()[:HEAD_BYTES])


def test_default_paths_follow_claude_config_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", f"{tmp_path / 'a'}, {tmp_path / 'b'}")
    assert IMPORTER.default_paths() == [tmp_path / "a" / "projects", tmp_path / "b" / "projects"]
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config_dirs()[1] == tmp_path / "xdg" / "claude"
    assert get_importer("claude-code") is IMPORTER


# -- incremental -------------------------------------------------------------------------------------


def _fixture_files() -> list[Path]:
    root = shared_fixture("claude-code")
    return sorted(root.glob("*/projects/*/*.jsonl"))


def test_incremental_reads_equal_one_whole_read(tmp_path: Path) -> None:
    source = next(p for p in _fixture_files() if p.name.startswith("0442a060"))
    data = source.read_bytes()
    cuts = [i + 1 for i, b in enumerate(data) if b == 0x0A][::97]
    path = tmp_path / "projects" / "p" / source.name
    path.parent.mkdir(parents=True)
    offset, state = 0, None
    stored: dict[str, ParsedSession] = {}
    appended = 0
    for cut in [*cuts[1:], len(data)]:
        path.write_bytes(data[:cut])
        inc = IMPORTER.parse_from(path, offset, state)
        offset, state = inc.offset, inc.state
        if not inc.appended:
            stored = {}
        appended += inc.appended
        for record in inc.records:
            assert isinstance(record, ParsedSession)
            have = stored.get(record.session.uid)
            if have is None:
                stored[record.session.uid] = ParsedSession(
                    record.session, list(record.calls), list(record.parts)
                )
            else:
                assert inc.appended
                stored[record.session.uid] = ParsedSession(
                    record.session, have.calls + record.calls, have.parts + record.parts
                )
    assert appended > 0
    whole = parse_sessions(path)
    assert [stored[p.session.uid] for p in whole] == whole


def test_ingesting_a_growing_transcript_stores_what_one_ingest_of_it_stores(tmp_path: Path) -> None:
    source = next(p for p in _fixture_files() if p.name.startswith("8209f1c2"))
    data = source.read_bytes()
    half = data.rfind(b"\n", 0, len(data) // 2) + 1
    grown = tmp_path / "grown" / "projects" / "p" / source.name
    grown.parent.mkdir(parents=True)
    grown.write_bytes(data[:half])
    with Store(tmp_path / "grown.duckdb") as store:
        assert ingest([grown.parent], store=store).ok
        grown.write_bytes(data)
        assert ingest([grown.parent], store=store).ok
        got = (store.calls().drop("session_uid"), store.parts().drop("session_uid"))
    with Store(tmp_path / "whole.duckdb") as store:
        assert ingest([source], store=store).ok
        want = (store.calls().drop("session_uid"), store.parts().drop("session_uid"))
    for a, b in zip(got, want, strict=True):
        cols = [c for c in a.columns if not c.endswith("_uid")]
        assert a.select(cols).sort("seq").equals(b.select(cols).sort("seq"))
