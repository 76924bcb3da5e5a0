"""The llxprt-code importer against hand-written recordings and token-usage logs in llxprt's real shapes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import pytest

from calib.core.errors import FileWarning, InputError, InputWarning, MoreWarnings
from calib.core.records import AgentEstimate, Call, ParsedSession, Record
from calib.importers import get_importer, sniff_file
from calib.importers.llxprt.paths import log_homes, temp_roots

IMPORTER = get_importer("llxprt")
SID = "5f0c2a9e-31d4-4c7e-9a61-0b2d7c8e4f10"
PROJECT = "/home/dev/shop"
HASH = hashlib.sha256(PROJECT.encode()).hexdigest()
NAME = f"session-2026-03-02T09-00-05-{SID[:12]}.jsonl"


def envelope(seq: int, kind: str, payload: dict[str, Any], second: int = 0) -> dict[str, Any]:
    return {"v": 1, "seq": seq, "ts": f"2026-03-02T09:00:{second:02d}.000Z", "type": kind, "payload": payload}


def start(provider: str = "anthropic", model: str = "claude-sonnet-4-5") -> dict[str, Any]:
    return {
        "sessionId": SID,
        "projectHash": HASH,
        "workspaceDirs": [PROJECT],
        "cwd": PROJECT,
        "provider": provider,
        "model": model,
        "startTime": "2026-03-02T09:00:00.000Z",
    }


def human(text: str, turn: str | None = None, prompt: str | None = None) -> dict[str, Any]:
    meta = {k: v for k, v in (("turnId", turn), ("promptId", prompt)) if v}
    return {"content": {"speaker": "human", "blocks": [{"type": "text", "text": text}], "metadata": meta}}


def ai(blocks: list[dict[str, Any]], usage: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    """An ai content as v0.10+ records it: stamped with its model (`model=None`: as older ones, without)."""
    metadata = {"model": "claude-sonnet-4-5", **meta}
    if metadata["model"] is None:
        del metadata["model"]
    if usage is not None:
        metadata["usage"] = usage
    return {"content": {"speaker": "ai", "blocks": blocks, "metadata": metadata}}


def tool(call_id: str, name: str, result: Any, **meta: Any) -> dict[str, Any]:
    block = {"type": "tool_response", "callId": call_id, "toolName": name, "result": result}
    return {"content": {"speaker": "tool", "blocks": [block], "metadata": meta}}


def usage(prompt: Any, completion: Any, total: Any = None) -> dict[str, Any]:
    total = total if total is not None else (prompt + completion if isinstance(prompt, int) else 0)
    return {"promptTokens": prompt, "completionTokens": completion, "totalTokens": total}


def write_recording(root: Path, events: list[tuple[str, dict[str, Any]]], *, first: Any = None) -> Path:
    """`root/tmp/<hash>/chats/session-...jsonl` holding session_start (or `first`) then `events`."""
    path = root / "tmp" / HASH / "chats" / NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [first if first is not None else envelope(1, "session_start", start())]
    for n, (kind, payload) in enumerate(events, start=2):
        lines.append(envelope(n, kind, payload, second=n))
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def write_usage_log(root: Path, records: list[dict[str, Any]], sid: str = SID) -> Path:
    path = root / "tmp" / HASH / "token-usage" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def turn_record(prompt_id: str, turn_id: str | None, actual: int, **fields: Any) -> dict[str, Any]:
    return {
        "record_type": "turn",
        "schema_version": 1,
        "ts": "2026-03-02T09:00:01.000Z",
        "prompt_id": prompt_id,
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "estimated_tokens": actual - 100,
        "estimator": "anthropic-char",
        "tiktoken_tokens": None,
        "tiktoken_estimation_failed": False,
        "actual_prompt_tokens": actual,
        "cached_tokens": 0,
        "effective_actual_tokens": actual,
        "session_id": SID,
        "turn_id": turn_id,
        "attempt_outcome": "success",
        **fields,
    }


def parse(path: Path) -> tuple[ParsedSession, list[InputWarning]]:
    records: list[Record] = list(IMPORTER.parse(path))
    sessions = [r for r in records if isinstance(r, ParsedSession)]
    assert len(sessions) == 1
    return sessions[0], [r for r in records if isinstance(r, InputWarning)]


def kinds(parsed: ParsedSession) -> list[tuple[str, str, str | None]]:
    return [(p.kind, p.text, p.call_uid) for p in parsed.parts]


# -- usage semantics ---------------------------------------------------------------------------------


def test_anthropic_prompt_includes_cache_and_completion_includes_thinking(tmp_path: Path) -> None:
    path = write_recording(
        tmp_path,
        [
            ("content", human("Fix the totals")),
            (
                "content",
                ai(
                    [
                        {"type": "thinking", "thought": "Look at the code first.", "signature": "sig"},
                        {"type": "text", "text": "Reading it."},
                        {
                            "type": "tool_call",
                            "id": "toolu_1",
                            "name": "read_file",
                            "parameters": {"absolute_path": "/a.py"},
                        },
                    ],
                    usage(12000, 240),
                    model="claude-sonnet-4-5",
                    id="msg_01",
                ),
            ),
            ("content", tool("toolu_1", "read_file", "print('hi')")),
            ("content", ai([{"type": "text", "text": "Done."}], usage(12400, 30))),
        ],
    )
    parsed, warnings = parse(path)
    assert warnings == []
    s = parsed.session
    assert (s.uid, s.native_id, s.layout, s.project) == (f"llxprt:{SID}", SID, "llxprt-chats", PROJECT)
    first, second = parsed.calls
    assert (first.provider, first.model, first.usage_style, first.usage_status) == (
        "anthropic",
        "claude-sonnet-4-5",
        "openai",
        "ok",
    )
    # promptTokens already holds cache reads and writes; completionTokens the thinking, re-sent.
    assert (first.ctx, first.input, first.output, first.carry, first.reasoning) == (
        12000,
        12000,
        240,
        240,
        None,
    )
    assert (first.cache_read, first.cache_write, first.message_id) == (None, None, "msg_01")
    assert first.usage_raw == {"usage": usage(12000, 240)}
    assert (first.prompt_start, first.prompt_end, second.prompt_end) == (0, 1, 5)
    assert kinds(parsed) == [
        ("user_text", "Fix the totals", None),
        ("reasoning", "Look at the code first.", first.uid),
        ("assistant_text", "Reading it.", first.uid),
        ("tool_call", '{"absolute_path":"/a.py"}', first.uid),
        ("tool_result", "print('hi')", None),
        ("assistant_text", "Done.", second.uid),
    ]
    assert all(p.resent for p in parsed.parts)
    assert [p.tool_name for p in parsed.parts if p.kind.startswith("tool")] == ["read_file", "read_file"]


def test_gemini_completion_leaves_thoughts_out_and_they_are_not_resent(tmp_path: Path) -> None:
    first = envelope(1, "session_start", start("gemini", "gemini-2.5-pro"))
    path = write_recording(
        tmp_path,
        [
            ("content", human("Why?")),
            (
                "content",
                ai(
                    [{"type": "thinking", "thought": "**Plan**"}, {"type": "text", "text": "Because."}],
                    usage(9000, 12),
                ),
            ),
        ],
        first=first,
    )
    parsed, _ = parse(path)
    (call,) = parsed.calls
    assert (call.provider, call.usage_style, call.ctx, call.output, call.carry) == (
        "google",
        "gemini",
        9000,
        12,
        12,
    )
    assert [(p.kind, p.resent) for p in parsed.parts] == [
        ("user_text", True),
        ("reasoning", False),
        ("assistant_text", True),
    ]


def test_one_response_split_over_ai_contents_is_one_call(tmp_path: Path) -> None:
    shared = usage(5000, 80)
    path = write_recording(
        tmp_path,
        [
            ("content", human("Go")),
            ("content", ai([{"type": "text", "text": "Part one."}], shared)),
            ("content", ai([{"type": "code", "code": "x = 1", "language": "python"}], shared)),
            ("content", ai([{"type": "text", "text": "A new response."}], usage(5100, 5))),
        ],
    )
    parsed, _ = parse(path)
    assert [(c.ctx, c.prompt_end) for c in parsed.calls] == [(5000, 1), (5100, 3)]
    assert kinds(parsed)[2] == ("assistant_text", "```python\nx = 1\n```", parsed.calls[0].uid)


@pytest.mark.parametrize(
    ("recorded", "status"),
    [
        (None, "missing"),
        (usage(0, 0, 0), "missing"),
        (usage("12000", 5), "invalid"),
        (usage(-3, 5), "invalid"),
    ],
)
def test_absent_zero_and_non_count_usage_is_never_a_target(
    tmp_path: Path, recorded: dict[str, Any] | None, status: str
) -> None:
    path = write_recording(
        tmp_path, [("content", human("Hi")), ("content", ai([{"type": "text", "text": "Yo"}], recorded))]
    )
    parsed, _ = parse(path)
    (call,) = parsed.calls
    assert (call.usage_status, call.ctx, call.carry) == (status, None, None)
    assert call.usage_raw == ({"usage": recorded} if recorded is not None else None)


# -- the token-usage log beside a recording ----------------------------------------------------------


def test_token_usage_log_joins_on_turn_id_and_then_prompt_id(tmp_path: Path) -> None:
    path = write_recording(
        tmp_path,
        [
            ("content", human("Fix it", turn="turn_a", prompt=f"{SID}########1")),
            (
                "content",
                ai(
                    [{"type": "tool_call", "id": "t1", "name": "read_file", "parameters": {}}],
                    usage(20000, 100),
                    turnId="turn_ai1",
                ),
            ),
            # The tool response keeps the id of its call (an id already on a content wins in llxprt).
            ("content", tool("t1", "read_file", "body", turnId="turn_ai1", promptId=f"{SID}########1")),
            ("content", ai([{"type": "text", "text": "Done"}], usage(20300, 20), turnId="turn_ai2")),
            ("content", human("Again", turn="turn_c", prompt=f"{SID}########2")),
            ("content", ai([{"type": "text", "text": "Sure"}], usage(20400, 4))),
        ],
    )
    log = write_usage_log(
        tmp_path,
        [
            turn_record(f"{SID}########1", "turn_a", 0, attempt_index=0, attempt_outcome="error"),
            turn_record(
                f"{SID}########1",
                "turn_a",
                20000,
                cached_tokens=18000,
                cache_write_tokens=1900,
                attempt_index=1,
            ),
            # The second send of prompt 1: its minted turn id is on no content; the count ties it.
            turn_record(f"{SID}########1", "turn_b", 20300, cached_tokens=19900, cache_read_tokens=19800),
            {
                "record_type": "compression",
                "schema_version": 1,
                "ts": "x",
                "session_id": SID,
                "turn_id": None,
            },
            turn_record(f"{SID}########2", "turn_c", 20400, reasoning_tokens=3, session_id="someone-else"),
            turn_record(f"{SID}########2", "turn_c", 20400, reasoning_tokens=4, subagent_name="reviewer"),
        ],
    )
    parsed, _ = parse(path)
    a, b, c = parsed.calls
    assert parsed.session.layout == "llxprt-chats-usage"
    assert parsed.session.meta is not None and parsed.session.meta["token_usage_log"] == str(log)
    assert (a.cache_read, a.cache_write, a.ctx) == (18000, 1900, 20000)  # the successful attempt
    assert a.usage_raw is not None and a.usage_raw["token_usage"]["attempt_index"] == 1
    assert (b.cache_read, b.cache_write) == (19800, None)  # cache_read_tokens wins over cached_tokens
    # Neither another session's record nor a sub-agent's joins.
    assert (c.cache_read, c.reasoning, c.usage_raw) == (None, None, {"usage": usage(20400, 4)})
    assert parsed.session.meta["token_usage_joined"] == 2


def test_a_call_without_usage_takes_the_count_only_from_a_turn_id_join(tmp_path: Path) -> None:
    path = write_recording(
        tmp_path,
        [
            ("content", human("Go", turn="turn_a", prompt="p1")),
            ("content", ai([{"type": "text", "text": "ok"}])),
            ("content", human("More", prompt="p1")),
            ("content", ai([{"type": "text", "text": "ok"}])),
        ],
    )
    write_usage_log(
        tmp_path,
        [
            turn_record("p1", "turn_a", 7000, output_tokens=9, reasoning_tokens=2),
            turn_record("p1", "x", 7100),
        ],
    )
    parsed, _ = parse(path)
    first, second = parsed.calls
    assert (first.usage_status, first.ctx, first.output, first.carry, first.reasoning) == (
        "ok",
        7000,
        9,
        9,
        2,
    )
    assert (second.usage_status, second.usage_raw) == ("missing", None)


def test_token_usage_log_alone_gives_the_agents_estimate_pairs(tmp_path: Path) -> None:
    log = write_usage_log(
        tmp_path,
        [
            turn_record("p1", "t1", 20000, subagent_name=None),
            turn_record(
                "p1", "t2", 0, estimated_tokens=500, attempt_outcome="error"
            ),  # no provider count: no pair
            {
                "prompt_id": "p2",
                "estimated_tokens": 900,
                "actual_prompt_tokens": 1000,
                "ts": "2026-03-02T09:01:00Z",
            },
            turn_record("p3", "t3", 5000, estimated_tokens=-4, subagent_name="reviewer"),
            {
                "record_type": "model_switch",
                "schema_version": 1,
                "ts": "x",
                "session_id": SID,
                "turn_id": None,
            },
        ],
    )
    assert sniff_file(log) is IMPORTER
    records = list(IMPORTER.parse(log))
    pairs = [r for r in records if isinstance(r, AgentEstimate)]
    assert [(p.session_uid, p.line, p.estimated, p.actual) for p in pairs] == [
        (f"llxprt:{SID}", 1, 19900, 20000),
        (f"llxprt:{SID}", 3, 900, 1000),
    ]
    (warning,) = [r for r in records if isinstance(r, InputWarning)]
    assert str(warning) == (
        "this line is a turn whose estimate or provider count is not a token count; left out, the other "
        f"records were imported ({log}:4)"
    )


# -- history events ----------------------------------------------------------------------------------


def test_compression_makes_the_summary_the_whole_history(tmp_path: Path) -> None:
    summary = {"speaker": "ai", "blocks": [{"type": "text", "text": "<state_snapshot>…</state_snapshot>"}]}
    path = write_recording(
        tmp_path,
        [
            ("content", human("One")),
            ("content", ai([{"type": "text", "text": "A"}], usage(9000, 1))),
            ("compressed", {"summary": summary, "itemsCompressed": 2}),
            ("content", human("Two")),
            ("content", ai([{"type": "text", "text": "B"}], usage(3000, 1))),
        ],
    )
    parsed, _ = parse(path)
    second = parsed.calls[1]
    assert (second.prompt_start, second.prompt_end) == (2, 4)
    assert [(p.kind, p.role) for p in parsed.parts[2:4]] == [("summary", "assistant"), ("user_text", "user")]
    assert parsed.session.meta is not None and parsed.session.meta["compressions"] == 1


def test_rewind_drops_the_last_items_and_the_calls_they_held(tmp_path: Path) -> None:
    path = write_recording(
        tmp_path,
        [
            ("content", human("One")),
            ("content", ai([{"type": "text", "text": "A"}], usage(9000, 1))),
            ("content", human("Wrong turn")),
            ("content", ai([{"type": "text", "text": "B"}], usage(9100, 1))),
            ("rewind", {"itemsRemoved": 2}),
            ("content", human("Right turn")),
            ("content", ai([{"type": "text", "text": "C"}], usage(9050, 1))),
        ],
    )
    parsed, _ = parse(path)
    assert [p.text for p in parsed.parts] == ["One", "A", "Right turn", "C"]
    assert [(c.seq, c.ctx, c.prompt_end) for c in parsed.calls] == [(0, 9000, 1), (1, 9050, 3)]
    assert parsed.session.meta is not None
    assert (parsed.session.meta["rewinds"], parsed.session.meta["rewound_items"]) == (1, 2)


def test_provider_switch_serves_the_calls_after_it(tmp_path: Path) -> None:
    path = write_recording(
        tmp_path,
        [
            ("content", human("One")),
            ("content", ai([{"type": "text", "text": "A"}], usage(9000, 1))),
            ("provider_switch", {"provider": "gemini", "model": "gemini-2.5-pro"}),
            ("session_metadata", {"title": "Totals"}),
            ("content", human("Two")),
            ("content", ai([{"type": "text", "text": "B"}], usage(9500, 1), model="gemini-2.5-flash")),
        ],
    )
    parsed, _ = parse(path)
    assert [(c.provider, c.model, c.usage_style) for c in parsed.calls] == [
        ("anthropic", "claude-sonnet-4-5", "openai"),
        ("google", "gemini-2.5-flash", "gemini"),  # the model stamped on the ai content wins
    ]
    assert parsed.session.title == "Totals"


# -- sniffing and default paths ----------------------------------------------------------------------


def test_sniffing_claims_recordings_and_usage_logs_only(tmp_path: Path) -> None:
    path = write_recording(tmp_path, [("content", human("Hi"))])
    assert sniff_file(path) is IMPORTER
    moved = tmp_path / "elsewhere" / "copy.jsonl"  # by its first line where the name says nothing
    moved.parent.mkdir()
    moved.write_bytes(path.read_bytes())
    assert sniff_file(moved) is IMPORTER
    gemini = tmp_path / "g" / "chats" / "session-2026-03-02T09-00-5f0c2a9e.jsonl"
    gemini.parent.mkdir(parents=True)
    gemini.write_text(json.dumps({"sessionId": SID, "projectHash": HASH, "startTime": "x"}) + "\n")
    assert not IMPORTER.sniff_file(gemini, gemini.read_bytes())
    assert sniff_file(gemini) is get_importer("gemini-cli")
    other = tmp_path / "tmp" / HASH / "token-usage" / "events.jsonl"
    other.parent.mkdir(parents=True)
    other.write_text('{"event": "click"}\n')
    assert not IMPORTER.sniff_file(other, other.read_bytes())
    assert not IMPORTER.sniff_file(other.with_name("empty.jsonl"), b"")


def test_log_folders_per_os_and_overrides() -> None:
    home = PurePosixPath("/home/u")
    assert temp_roots("linux", {}, home) == [
        PurePosixPath("/home/u/.local/state/llxprt-code/tmp"),
        PurePosixPath("/home/u/.llxprt/tmp"),
    ]
    assert log_homes("linux", {"XDG_STATE_HOME": "/xdg", "LLXPRT_CONFIG_HOME": "/cfg"}, home) == [
        PurePosixPath("/cfg"),
        PurePosixPath("/xdg/llxprt-code"),
        PurePosixPath("/home/u/.local/state/llxprt-code"),
        PurePosixPath("/home/u/.llxprt"),
    ]
    # LLXPRT_LOG_HOME wins over LLXPRT_CONFIG_HOME; a relative override is ignored, as llxprt does.
    both = {"LLXPRT_LOG_HOME": "/logs", "LLXPRT_CONFIG_HOME": "/cfg"}
    assert log_homes("darwin", both, home)[:2] == [
        PurePosixPath("/logs"),
        home / "Library" / "Logs" / "llxprt-code",
    ]
    assert log_homes("linux", {"LLXPRT_LOG_HOME": "rel/logs", "LLXPRT_CONFIG_HOME": " "}, home)[0] == (
        home / ".local" / "state" / "llxprt-code"
    )
    win = PureWindowsPath("C:/Users/u")
    assert log_homes("win32", {"LOCALAPPDATA": "D:\\Local"}, win) == [
        PureWindowsPath("D:/Local/llxprt-code/Log"),
        PureWindowsPath("C:/Users/u/.llxprt"),
    ]
    assert log_homes("win32", {}, win)[0] == PureWindowsPath("C:/Users/u/AppData/Local/llxprt-code/Log")


def test_default_paths_read_this_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.delenv("LLXPRT_CONFIG_HOME", raising=False)
    monkeypatch.setenv("LLXPRT_LOG_HOME", str(tmp_path / "logs"))
    assert IMPORTER.default_paths() == [
        tmp_path / "logs" / "tmp",
        tmp_path / ".local" / "state" / "llxprt-code" / "tmp",
        tmp_path / ".llxprt" / "tmp",
    ]


# -- bad input ---------------------------------------------------------------------------------------


def test_a_damaged_line_costs_only_itself(tmp_path: Path) -> None:
    path = write_recording(
        tmp_path,
        [("content", human("One")), ("content", ai([{"type": "text", "text": "A"}], usage(9000, 1)))],
    )
    lines = path.read_text().splitlines()
    lines.insert(2, '{"v":1,"seq":3,"ts":"x","type":"content","payl')
    lines.append('{"v":1,"seq":9,"type":"content","payload":{"content":{"speaker":"ai"')  # being written
    path.write_text("\n".join(lines))
    parsed, warnings = parse(path)
    assert [p.text for p in parsed.parts] == ["One", "A"]
    assert [str(w) for w in warnings] == [
        f"this line is not valid JSON (unexpected end of data); left out, the rest of the session was imported ({path}:3)",
        f"the last line is unfinished (llxprt may still be writing it); left out ({path}:5); "
        "ingest again once it is complete to add it",
    ]
    assert isinstance(warnings[1], FileWarning)


def test_many_damaged_lines_are_counted(tmp_path: Path) -> None:
    path = write_recording(tmp_path, [("content", human("One"))])
    path.write_text(path.read_text() + "not json\n" * 5)
    _, warnings = parse(path)
    assert len(warnings) == 4 and isinstance(warnings[-1], MoreWarnings) and warnings[-1].count == 2


@pytest.mark.parametrize(
    ("first", "message"),
    [
        (
            {**envelope(1, "session_start", start()), "v": 2},
            "recording format version v=2 is unknown (calib reads v=1) ({path}:1); it was written by a newer "
            "llxprt-code; upgrade calib, or leave this file out",
        ),
        (
            envelope(1, "content", human("Hi")),
            "the first line is not an llxprt-code session_start record ({path}:1); pass only files from "
            "<llxprt log dir>/tmp/<project>/chats, or another --format",
        ),
        (
            {**envelope(1, "session_start", start()), "payload": {"projectHash": HASH}},
            "session_start names no sessionId ({path}:1); the file is truncated or damaged; restore it or "
            "leave it out (other files were still imported)",
        ),
    ],
)
def test_an_unreadable_recording_is_one_input_error(
    tmp_path: Path, first: dict[str, Any], message: str
) -> None:
    path = write_recording(tmp_path, [("content", human("Hi"))], first=first)
    with pytest.raises(InputError) as info:
        list(IMPORTER.parse(path))
    assert str(info.value) == message.format(path=path)


def test_a_later_line_of_an_unknown_version_fails_the_file(tmp_path: Path) -> None:
    path = write_recording(tmp_path, [("content", human("Hi"))])
    path.write_text(path.read_text() + json.dumps({**envelope(3, "content", human("x")), "v": 7}) + "\n")
    with pytest.raises(InputError, match=r"version v=7 is unknown") as info:
        list(IMPORTER.parse(path))
    assert info.value.line == 3


def test_an_unknown_token_usage_schema_fails_that_log_only(tmp_path: Path) -> None:
    path = write_recording(
        tmp_path, [("content", human("Hi", turn="t1")), ("content", ai([], usage(100, 1)))]
    )
    log = write_usage_log(tmp_path, [turn_record("p", "t1", 100, schema_version=2)])
    with pytest.raises(InputError) as info:
        list(IMPORTER.parse(log))
    assert str(info.value) == (
        f"token-usage log schema_version 2 is unknown (calib reads 0 and 1) ({log}:1); it was written by a "
        "newer llxprt-code; upgrade calib, or leave this file out"
    )
    parsed, _ = parse(path)  # the recording still imports, without the join
    assert parsed.session.layout == "llxprt-chats"
    assert isinstance(parsed.calls[0], Call) and parsed.calls[0].ctx == 100


def test_empty_recording_is_one_input_error(tmp_path: Path) -> None:
    path = write_recording(tmp_path, [])
    path.write_text("")
    with pytest.raises(InputError, match=r"^empty file \("):
        list(IMPORTER.parse(path))


def test_a_response_without_usage_is_a_call_of_its_own(tmp_path: Path) -> None:
    path = write_recording(
        tmp_path,
        [
            ("content", human("Go")),
            ("content", ai([{"type": "text", "text": "Lost its usage."}])),
            ("content", ai([{"type": "text", "text": "Counted."}], usage(5100, 5))),
        ],
    )
    parsed, _ = parse(path)
    assert [(c.usage_status, c.ctx, c.prompt_end) for c in parsed.calls] == [
        ("missing", None, 1),
        ("ok", 5100, 2),
    ]


def test_anthropic_prompt_counts_before_v0_10_are_not_targets(tmp_path: Path) -> None:
    cached = {**usage(40, 12), "cache_read_input_tokens": 9000, "cache_creation_input_tokens": 300}
    path = write_recording(
        tmp_path,
        [
            ("content", human("One")),
            # Recorded without the model: promptTokens was input_tokens alone, the cache was dropped.
            ("content", ai([{"type": "text", "text": "A"}], usage(40, 12), model=None)),
            ("content", human("Two")),
            ("content", ai([{"type": "text", "text": "B"}], cached, model=None)),
            ("content", human("Three")),
            ("content", ai([{"type": "text", "text": "C"}], usage(9400, 3))),
        ],
    )
    parsed, _ = parse(path)
    old, kept, new = parsed.calls
    assert (old.usage_status, old.input, old.ctx, old.carry) == ("suspect", 40, None, None)
    assert old.usage_raw == {"usage": usage(40, 12)}
    # Where the cache counts were kept beside it, the prompt reads Anthropic-style.
    assert (kept.usage_status, kept.usage_style, kept.ctx, kept.carry) == ("ok", "anthropic", 9340, 12)
    assert (new.usage_status, new.usage_style, new.ctx) == ("ok", "openai", 9400)


def test_other_providers_before_v0_10_counted_the_cache_already(tmp_path: Path) -> None:
    first = envelope(1, "session_start", start("openai", "gpt-5"))
    path = write_recording(
        tmp_path,
        [
            ("content", human("One")),
            ("content", ai([{"type": "text", "text": "A"}], usage(7000, 9), model=None)),
        ],
        first=first,
    )
    parsed, _ = parse(path)
    (call,) = parsed.calls
    assert (call.usage_status, call.model, call.ctx, call.carry) == ("ok", "gpt-5", 7000, 9)


def test_records_of_odd_shapes_cost_only_themselves(tmp_path: Path) -> None:
    path = write_recording(
        tmp_path,
        [
            ("content", human("One")),
            ("content", {"content": {"speaker": "robot", "blocks": []}}),
            ("rewind", {"itemsRemoved": "all"}),
            (
                "content",
                ai(["not a block", {"type": "text", "text": "A"}, {"type": "hologram"}], usage(900, 1)),
            ),
        ],
    )
    lines = path.read_text().splitlines()
    lines.insert(1, json.dumps({"v": 1, "seq": 9, "ts": "x", "type": ["content"], "payload": {}}))
    path.write_text("\n".join(lines) + "\n")
    parsed, warnings = parse(path)
    assert [p.text for p in parsed.parts] == ["One", "A"]
    assert [w.line for w in warnings] == [4, 5]
    assert str(warnings[0]).startswith("this line is a content record without a valid IContent; left out")
    assert parsed.session.meta is not None and parsed.session.meta["unknown_records"] == 1
