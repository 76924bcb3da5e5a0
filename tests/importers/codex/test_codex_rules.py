"""The Codex importer's rules, each on a small hand-written rollout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from calib.core.errors import InputError, InputWarning
from calib.core.records import ParsedSession
from calib.importers import HEAD_BYTES
from calib.importers.codex import IMPORTER, read_increment

SID = "019f0000-aaaa-7bbb-8ccc-ddddeeeeffff"
SYSTEM = "You are a coding agent."


def meta(**extra: Any) -> dict[str, Any]:
    payload = {
        "id": SID,
        "timestamp": "2026-06-01T10:00:00.000Z",
        "cwd": "/work/proj",
        "originator": "codex-tui",
        "cli_version": "0.142.2",
        "source": "cli",
        "model_provider": "openai",
        "base_instructions": {"text": SYSTEM},
        **extra,
    }
    return {"timestamp": "2026-06-01T10:00:01.000Z", "type": "session_meta", "payload": payload}


def item(payload: dict[str, Any], ts: str = "2026-06-01T10:00:02.000Z") -> dict[str, Any]:
    return {"timestamp": ts, "type": "response_item", "payload": payload}


def event(payload: dict[str, Any], ts: str = "2026-06-01T10:00:02.000Z") -> dict[str, Any]:
    return {"timestamp": ts, "type": "event_msg", "payload": payload}


def user(text: str) -> dict[str, Any]:
    return item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})


def assistant(text: str) -> dict[str, Any]:
    return item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})


def call(name: str, call_id: str, args: str = "{}") -> dict[str, Any]:
    return item({"type": "function_call", "name": name, "arguments": args, "call_id": call_id})


def result(call_id: str, output: Any) -> dict[str, Any]:
    return item({"type": "function_call_output", "call_id": call_id, "output": output})


def turn(model: str = "gpt-5.5", turn_id: str = "t1") -> dict[str, Any]:
    return {
        "timestamp": "2026-06-01T10:00:02.000Z",
        "type": "turn_context",
        "payload": {"turn_id": turn_id, "model": model},
    }


class Totals:
    """token_count events with a running total, as Codex writes them."""

    def __init__(self) -> None:
        self.total = {
            "input_tokens": 0,
            "cached_input_tokens": 0,
            "output_tokens": 0,
            "reasoning_output_tokens": 0,
            "total_tokens": 0,
        }

    def count(
        self, ctx: int, output: int, reasoning: int = 0, cached: int = 0, ts: str = "2026-06-01T10:00:03.000Z"
    ) -> dict[str, Any]:
        last = {
            "input_tokens": ctx,
            "cached_input_tokens": cached,
            "output_tokens": output,
            "reasoning_output_tokens": reasoning,
            "total_tokens": ctx + output,
        }
        for k, v in last.items():
            self.total[k] += v
        info = {
            "total_token_usage": dict(self.total),
            "last_token_usage": last,
            "model_context_window": 258400,
        }
        return event({"type": "token_count", "info": info, "rate_limits": None}, ts)


def write(
    tmp_path: Path, records: list[Any], name: str | None = None, folder: str = "sessions/2026/06/01"
) -> Path:
    path = tmp_path / folder / (name or f"rollout-2026-06-01T10-00-00-{SID}.jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def parse(path: Path) -> ParsedSession:
    """The one session `parse` yields (warnings about lines left out may follow it: see `warned`)."""
    records = list(IMPORTER.parse(path))
    assert isinstance(records[0], ParsedSession)
    assert all(isinstance(r, InputWarning) for r in records[1:])
    return records[0]


def warned(records: Any) -> list[tuple[int | None, str]]:
    """(line, message) of each warning among `records`, in order."""
    return [(r.line, str(r)) for r in records if isinstance(r, InputWarning)]


def basic(t: Totals) -> list[Any]:
    """One turn, two calls: a tool call and its result, then the answer."""
    return [
        meta(),
        turn(),
        user("fix the bug"),
        event({"type": "user_message", "message": "fix the bug"}),
        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "look first"}]}),
        assistant("Looking."),
        call("exec_command", "c1", '{"cmd":"ls"}'),
        result("c1", "a.py\nb.py"),
        t.count(1000, 50, reasoning=10),
        assistant("Done."),
        t.count(1100, 5, ts="2026-06-01T10:00:09.000Z"),
    ]


def test_calls_parts_and_attribution(tmp_path: Path) -> None:
    t = Totals()
    parsed = parse(write(tmp_path, basic(t)))
    s = parsed.session
    assert (s.uid, s.native_id, s.project, s.title, s.layout) == (
        f"codex:{SID}",
        SID,
        "/work/proj",
        "fix the bug",
        "codex-jsonl",
    )
    kinds = [(p.kind, p.text, p.call_uid) for p in parsed.parts]
    c0, c1 = (c.uid for c in parsed.calls)
    assert kinds == [
        ("system", SYSTEM, None),
        ("user_text", "fix the bug", None),
        ("reasoning", "look first", c0),
        ("assistant_text", "Looking.", c0),
        ("tool_call", '{"cmd":"ls"}', c0),
        ("tool_result", "a.py\nb.py", None),
        ("assistant_text", "Done.", c1),
    ]
    first, second = parsed.calls
    # Call 0 was sent the system prompt and the user message; the tool result (written before its
    # token_count, as 0.140+ does) is appended for call 1.
    assert (first.prompt_start, first.prompt_end, second.prompt_start, second.prompt_end) == (0, 2, 0, 6)
    # Codex passes the turn's reasoning back with each request: carry is the whole output.
    assert (first.input, first.output, first.reasoning, first.ctx, first.carry) == (1000, 50, 10, 1000, 50)
    assert (first.provider, first.model, first.usage_style, first.usage_status) == (
        "openai",
        "gpt-5.5",
        "openai",
        "ok",
    )
    assert first.usage_raw is not None and first.usage_raw["last_token_usage"]["input_tokens"] == 1000
    assert parsed.parts[5].tool_name == "exec_command"
    reasoning = parsed.parts[2]
    assert reasoning.resent and reasoning.pruned_at is None  # re-sent; the last turn's is never dropped


def _started(turn_id: str | None, ts: str) -> dict[str, Any]:
    payload = {"type": "task_started", "model_context_window": 258400}
    if turn_id is not None:
        payload["turn_id"] = turn_id
    return event(payload, ts)


def _context(turn_id: str | None, ts: str) -> dict[str, Any]:
    payload: dict[str, Any] = {"model": "gpt-5.5"}
    if turn_id is not None:
        payload["turn_id"] = turn_id
    return {"timestamp": ts, "type": "turn_context", "payload": payload}


def _think(text: str, ts: str) -> dict[str, Any]:
    return item({"type": "reasoning", "summary": [{"type": "summary_text", "text": text}]}, ts)


def three_turns(t: Totals, with_ids: bool = True) -> list[Any]:
    """Three turns (task_started, turn_context, user message), each with reasoning; the second is steered."""

    def tid(name: str) -> str | None:
        return name if with_ids else None

    return [
        meta(),
        _started(tid("t1"), "2026-06-01T10:00:02.000Z"),
        _context(tid("t1"), "2026-06-01T10:00:02.100Z"),
        user("first"),
        _think("plan one", "2026-06-01T10:00:03.000Z"),
        call("shell", "c1"),
        result("c1", "out"),
        t.count(1000, 40, reasoning=30, ts="2026-06-01T10:00:04.000Z"),
        _think("plan two", "2026-06-01T10:00:05.000Z"),
        assistant("done one"),
        t.count(1070, 20, reasoning=10, ts="2026-06-01T10:00:06.000Z"),
        event({"type": "task_complete"}, "2026-06-01T10:00:06.500Z"),
        _started(tid("t2"), "2026-06-01T10:01:00.000Z"),
        _context(tid("t2"), "2026-06-01T10:01:00.100Z"),
        user("second"),
        item({"type": "reasoning", "summary": [], "encrypted_content": None}, "2026-06-01T10:01:01.000Z"),
        call("shell", "c2"),
        result("c2", "out"),
        t.count(1060, 30, reasoning=25, ts="2026-06-01T10:01:02.000Z"),
        user("also this"),  # a message sent into the running turn: the turn goes on
        _think("plan three", "2026-06-01T10:01:03.000Z"),
        assistant("done two"),
        t.count(1110, 25, reasoning=15, ts="2026-06-01T10:01:04.000Z"),
        event({"type": "task_complete"}, "2026-06-01T10:01:04.500Z"),
        _started(tid("t3"), "2026-06-01T10:02:00.000Z"),
        _context(tid("t3"), "2026-06-01T10:02:00.100Z"),
        user("third"),
        _think("plan four", "2026-06-01T10:02:01.000Z"),
        assistant("done three"),
        t.count(1100, 10, reasoning=5, ts="2026-06-01T10:02:02.000Z"),
    ]


@pytest.mark.parametrize("with_ids", [True, False])
def test_reasoning_is_dropped_when_the_next_turn_starts(tmp_path: Path, with_ids: bool) -> None:
    from datetime import datetime

    parsed = parse(write(tmp_path, three_turns(Totals(), with_ids)))
    got = [(p.text, p.resent, p.pruned_at, p.pruned_text) for p in parsed.parts if p.kind == "reasoning"]
    second, third = datetime(2026, 6, 1, 10, 1), datetime(2026, 6, 1, 10, 2)
    # Pruned at the turn's task_started (its first line), not at its turn_context or user message; a
    # reasoning item with nothing recorded is still a part (empty), pruned like the others.
    assert got == [
        ("plan one", True, second, ""),
        ("plan two", True, second, ""),
        ("", True, third, ""),
        ("plan three", True, third, ""),
        ("plan four", True, None, None),
    ]
    assert [c.carry for c in parsed.calls] == [40, 20, 30, 25, 10]


def test_a_turn_context_inside_the_turn_starts_no_turn(tmp_path: Path) -> None:
    # After `compacted` Codex writes the open turn's turn_context again; older builds write no task_started.
    records = [
        meta(),
        _context("t1", "2026-06-01T10:00:02.000Z"),
        user("go"),
        _think("plan", "2026-06-01T10:00:03.000Z"),
        assistant("a"),
        Totals().count(500, 9, reasoning=4),
        _context("t1", "2026-06-01T10:00:05.000Z"),
    ]
    (reasoning,) = (p for p in parse(write(tmp_path, records)).parts if p.kind == "reasoning")
    assert reasoning.pruned_at is None
    records.append(_context("t2", "2026-06-01T10:00:09.000Z"))  # no task_started: the turn_context opens it
    (reasoning,) = (p for p in parse(write(tmp_path, records)).parts if p.kind == "reasoning")
    assert reasoning.pruned_at is not None and reasoning.pruned_at.second == 9


def test_tool_results_after_the_token_count_are_attributed_the_same(tmp_path: Path) -> None:
    # 0.118 wrote a call's token_count before the outputs of the tools it asked for.
    t = Totals()
    records = [
        meta(),
        turn(),
        user("go"),
        call("shell", "c1"),
        t.count(1000, 20),
        result("c1", "ok"),
        assistant("done"),
        t.count(1030, 3),
    ]
    parsed = parse(write(tmp_path, records))
    assert [(c.prompt_start, c.prompt_end) for c in parsed.calls] == [(0, 2), (0, 4)]
    assert [p.call_uid is None for p in parsed.parts] == [True, True, False, True, False]


def test_reemitted_token_count_is_dropped(tmp_path: Path) -> None:
    t = Totals()
    records = basic(t)
    records.insert(9, records[8])  # the same event again
    records.append(records[-1])
    parsed = parse(write(tmp_path, records))
    assert len(parsed.calls) == 2
    assert parsed.session.meta is not None and parsed.session.meta["reemitted_token_counts"] == 2


def test_null_info_is_skipped_before_output_and_a_missing_call_after(tmp_path: Path) -> None:
    t = Totals()
    null = event({"type": "token_count", "info": None, "rate_limits": None})
    records = [
        meta(),
        turn(),
        user("go"),
        null,
        assistant("one"),
        null,
        null,
        assistant("two"),
        t.count(900, 4),
    ]
    parsed = parse(write(tmp_path, records))
    assert [c.usage_status for c in parsed.calls] == ["missing", "ok"]
    assert parsed.calls[0].ctx is None and parsed.calls[0].usage_raw is None
    assert [p.call_uid for p in parsed.parts[2:]] == [c.uid for c in parsed.calls]
    meta_ = parsed.session.meta or {}
    assert meta_["token_counts_without_info"] == 2 and meta_["calls_without_usage"] == 1


def test_only_totals_are_differenced(tmp_path: Path) -> None:
    def totals(n: int, out: int) -> dict[str, Any]:
        usage = {
            "input_tokens": n,
            "cached_input_tokens": 0,
            "output_tokens": out,
            "reasoning_output_tokens": 0,
            "total_tokens": n + out,
        }
        return event({"type": "token_count", "info": {"total_token_usage": usage}})

    records = [meta(), turn(), user("go"), assistant("a"), totals(1000, 10), assistant("b"), totals(2100, 15)]
    parsed = parse(write(tmp_path, records))
    assert [(c.input, c.output) for c in parsed.calls] == [(1000, 10), (1100, 5)]


def test_output_of_an_aborted_turn_stays_as_input(tmp_path: Path) -> None:
    t = Totals()
    records = [
        meta(),
        turn(turn_id="t1"),
        user("go"),
        assistant("partial"),
        event({"type": "turn_aborted", "reason": "interrupted"}),
        turn(turn_id="t2"),
        user("again"),
        assistant("full"),
        t.count(1200, 5),
    ]
    parsed = parse(write(tmp_path, records))
    (only,) = parsed.calls
    assert [(p.text, p.call_uid) for p in parsed.parts[1:]] == [
        ("go", None),
        ("partial", None),
        ("again", None),
        ("full", only.uid),
    ]
    assert only.prompt_end == 4 and only.message_id == "t2"


def test_base_instructions_or_older_instructions_open_the_history(tmp_path: Path) -> None:
    old = meta()
    del old["payload"]["base_instructions"]
    old["payload"]["instructions"] = "Old system prompt."
    parsed = parse(write(tmp_path, [old, turn(), user("hi")]))
    assert [(p.seq, p.kind, p.role, p.text, p.call_uid) for p in parsed.parts[:1]] == [
        (0, "system", "system", "Old system prompt.", None)
    ]


def test_developer_messages_are_system_parts_and_content_items_are_flattened(tmp_path: Path) -> None:
    t = Totals()
    dev = item(
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions>"}]}
    )
    records = [
        meta(),
        dev,
        turn(),
        user("go"),
        call("view", "c1"),
        t.count(500, 5),
        result(
            "c1",
            [
                {"type": "input_text", "text": "line 1"},
                {"type": "input_image", "image_url": "data:x"},
                {"type": "input_text", "text": "line 2"},
            ],
        ),
        item(
            {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch", "call_id": "c2"}
        ),
        t.count(600, 5),
        item({"type": "custom_tool_call_output", "call_id": "c2", "output": "Success"}),
        item({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "x"}}),
        t.count(700, 5),
    ]
    parsed = parse(write(tmp_path, records))
    got = [(p.role, p.kind, p.text, p.tool_name) for p in parsed.parts]
    assert got == [
        ("system", "system", SYSTEM, None),
        ("system", "system", "<permissions>", None),
        ("user", "user_text", "go", None),
        ("assistant", "tool_call", "{}", "view"),
        ("user", "tool_result", "line 1\nline 2", "view"),
        ("assistant", "tool_call", "*** Begin Patch", "apply_patch"),
        ("user", "tool_result", "Success", "apply_patch"),
        ("assistant", "tool_call", '{"type":"search","query":"x"}', "web_search"),
    ]


def test_compacted_rebuilds_the_history_and_breaks_the_chain(tmp_path: Path) -> None:
    t = Totals()
    replacement = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the bug"}]},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "SUMMARY: we fixed a.py"}],
        },
        {"type": "compaction", "encrypted_content": "gAAAA"},
    ]
    records = [
        *basic(t),
        {
            "timestamp": "2026-06-01T10:01:00.000Z",
            "type": "compacted",
            "payload": {"message": "", "replacement_history": replacement},
        },
        event({"type": "context_compacted"}),
        turn(turn_id="t2"),
        user("next"),
        assistant("ok"),
        t.count(300, 2),
    ]
    parsed = parse(write(tmp_path, records))
    third = parsed.calls[2]
    rebuilt = parsed.parts[third.prompt_start : third.prompt_end]
    assert [(p.kind, p.text, p.call_uid) for p in rebuilt] == [
        ("system", SYSTEM, None),
        ("user_text", "fix the bug", None),  # seen before: a kept message
        ("summary", "SUMMARY: we fixed a.py", None),  # first seen in the replacement: the summary
        ("summary", "gAAAA", None),
        ("user_text", "next", None),
    ]
    assert third.prompt_start == 7 > parsed.calls[1].prompt_start
    (compaction,) = (parsed.session.meta or {})["compactions"]
    assert compaction["replacement_items"] == 3


def test_archived_copy_of_a_live_rollout_yields_nothing(tmp_path: Path) -> None:
    t = Totals()
    live = write(tmp_path, basic(t))
    flat = write(tmp_path, basic(Totals()), folder="archived_sessions")
    dated = write(tmp_path, basic(Totals()), folder="archived_sessions/2026/06/01")
    alone = write(
        tmp_path, basic(Totals()), name=f"rollout-2026-06-02T10-00-00-{SID}.jsonl", folder="archived_sessions"
    )
    assert len(list(IMPORTER.parse(live))) == 1
    assert list(IMPORTER.parse(flat)) == [] and list(IMPORTER.parse(dated)) == []
    assert read_increment(flat).records == []
    assert len(list(IMPORTER.parse(alone))) == 1  # no live copy: imported
    live.unlink()
    assert len(list(IMPORTER.parse(flat))) == 1


def test_damaged_middle_line_is_skipped_and_counted(tmp_path: Path) -> None:
    t = Totals()
    records: list[Any] = basic(t)
    records.insert(5, '{"timestamp":"2026-06-01T10:00:02.000Z","type":"response_item","payl')
    path = write(tmp_path, records)
    parsed = parse(path)
    assert len(parsed.calls) == 2 and (parsed.session.meta or {})["skipped_lines"] == 1
    [(line, message)] = warned(IMPORTER.parse(path))
    assert line == 6 and message.startswith("this line is not valid JSON (")
    assert message.endswith(f"); left out, the rest of the session was imported ({path}:6)")
    assert warned(read_increment(path).records) == [(line, message)]


def test_a_line_that_is_no_json_object_is_skipped_with_a_warning(tmp_path: Path) -> None:
    records: list[Any] = basic(Totals())
    records.insert(2, "null")
    path = write(tmp_path, records)
    assert len(parse(path).calls) == 2
    assert warned(IMPORTER.parse(path)) == [
        (3, f"this line is not a JSON object; left out, the rest of the session was imported ({path}:3)")
    ]


def test_a_damaged_line_is_warned_about_by_the_read_that_reads_it(tmp_path: Path) -> None:
    records: list[Any] = basic(Totals())
    records.insert(4, "{")
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)
    path = write(tmp_path, records)
    cut = text.index("\n{\n") + 1  # the damaged line 5 comes with the second read
    path.write_text(text[:cut], encoding="utf-8")
    first = read_increment(path)
    assert warned(first.records) == []
    path.write_text(text, encoding="utf-8")
    second = read_increment(path, first.offset, first.state)
    assert second.appended and [line for line, _ in warned(second.records)] == [5]
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(user("more")) + "\n")
    third = read_increment(path, second.offset, second.state)
    assert third.appended and warned(third.records) == []  # read on from after line 5
    assert [line for line, _ in warned(read_increment(path).records)] == [5]


def test_cut_off_last_line_waits_for_the_next_read(tmp_path: Path) -> None:
    t = Totals()
    records = basic(t)[:-2]  # the answer's token_count is the last line
    records.append(t.count(1100, 5, ts="2026-06-01T10:00:09.000Z"))
    full = "".join(json.dumps(r) + "\n" for r in records)
    path = write(tmp_path, records)
    line_start = full.rindex("\n", 0, len(full) - 1) + 1
    path.write_text(full[: line_start + 40], encoding="utf-8")  # 40 bytes into the last line
    whole = parse(path)
    assert len(whole.calls) == 1 and "skipped_lines" not in (whole.session.meta or {})
    n = len(records)
    unfinished = (
        f"the last line is unfinished (codex may still be writing it); left out ({path}:{n}); "
        "ingest again once it is complete to add it"
    )
    assert warned(IMPORTER.parse(path)) == [(n, unfinished)]
    first = read_increment(path)
    assert first.records == [whole, *first.records[1:]] and first.offset == line_start
    assert warned(first.records) == [(n, unfinished)]
    path.write_text(full, encoding="utf-8")
    second = read_increment(path, first.offset, first.state)
    assert second.appended
    (inc,) = second.records
    assert isinstance(inc, ParsedSession) and [c.seq for c in inc.calls] == [1] and inc.parts == []
    assert inc.session == parse(path).session
    assert second.offset == len(full.encode())


def test_incremental_reads_equal_one_whole_read(tmp_path: Path) -> None:
    t = Totals()
    records = [
        *basic(t),
        {
            "timestamp": "2026-06-01T10:01:00.000Z",
            "type": "compacted",
            "payload": {
                "replacement_history": [
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": "summary text"}],
                    }
                ]
            },
        },
        turn(turn_id="t2"),
        user("next"),
        call("shell", "c9"),
        result("c9", "out"),
        t.count(400, 9),
        assistant("bye"),
        t.count(420, 2),
    ]
    text = "".join(json.dumps(r) + "\n" for r in records)
    path = write(tmp_path, records)
    whole = parse(path)
    ends = [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    for split in ends[:-1]:
        for cut in (split, split + 7):  # at a line end, and inside the next line
            path.write_text(text[:cut], encoding="utf-8")
            first = read_increment(path)
            path.write_text(text, encoding="utf-8")
            second = read_increment(path, first.offset, first.state)
            a, *left_out = first.records
            (b,) = second.records
            assert isinstance(a, ParsedSession) and isinstance(b, ParsedSession)
            # A cut inside a line leaves that line out, with a warning naming it.
            assert [w.line for w in left_out if isinstance(w, InputWarning)] == (
                [] if cut == split else [ends.index(split) + 2]
            ), cut
            if second.appended:
                assert a.parts + b.parts == whole.parts, cut
                assert a.calls + b.calls == whole.calls, cut
                assert b.session == whole.session, cut
            else:
                assert b == whole, cut


@pytest.mark.parametrize("with_ids", [True, False])
def test_incremental_reads_across_new_turns_equal_one_whole_read(tmp_path: Path, with_ids: bool) -> None:
    records = three_turns(Totals(), with_ids)
    text = "".join(json.dumps(r) + "\n" for r in records)
    path = write(tmp_path, records)
    whole = parse(path)
    ends = [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    appended = whole_again = 0
    for cut in ends[:-1]:
        path.write_text(text[:cut], encoding="utf-8")
        first = read_increment(path)
        path.write_text(text, encoding="utf-8")
        second = read_increment(path, first.offset, first.state)
        (a,) = first.records
        (b,) = second.records
        assert isinstance(a, ParsedSession) and isinstance(b, ParsedSession)
        if second.appended:
            appended += 1
            assert a.parts + b.parts == whole.parts, cut
            assert a.calls + b.calls == whole.calls, cut
            assert b.session == whole.session, cut
        else:
            whole_again += 1
            assert b == whole, cut
    # Stored reasoning of a turn that a later one follows is re-read whole; other cuts read on.
    assert appended and whole_again


def test_output_waiting_for_its_call_across_reads_rereads_whole(tmp_path: Path) -> None:
    t = Totals()
    records = basic(t)
    path = write(tmp_path, records[:7])  # outputs written, token_count not yet
    first = read_increment(path)
    (a,) = first.records
    assert isinstance(a, ParsedSession) and not a.calls and a.parts[-1].call_uid is None
    write(tmp_path, records)
    second = read_increment(path, first.offset, first.state)
    assert not second.appended and second.records == [parse(path)]


def test_not_a_rollout_raises_input_error_naming_the_file(tmp_path: Path) -> None:
    empty = write(tmp_path, [], name=f"rollout-2026-06-01T10-00-00-{SID}x.jsonl")
    with pytest.raises(InputError) as info:
        list(IMPORTER.parse(empty))
    assert info.value.path == str(empty)
    wrong = write(tmp_path, [turn(), user("hi")], name=f"rollout-2026-06-01T10-00-00-{SID}y.jsonl")
    with pytest.raises(InputError) as info:
        list(IMPORTER.parse(wrong))
    assert info.value.path == str(wrong) and info.value.line == 1 and "session_meta" in str(info.value)
    damaged = write(
        tmp_path,
        ['{"timestamp":"x","type":"session_meta","pay', user("hi")],
        name=f"rollout-2026-06-01T10-00-00-{SID}z.jsonl",
    )
    with pytest.raises(InputError) as info:
        IMPORTER.parse_from(damaged, 0, None)
    assert info.value.line == 1


def test_sniffing_claims_rollouts_only(tmp_path: Path) -> None:
    path = write(tmp_path, basic(Totals()))
    assert IMPORTER.sniff_file(path, path.read_bytes()[:HEAD_BYTES])
    renamed = tmp_path / "copy.jsonl"
    renamed.write_bytes(path.read_bytes())
    assert IMPORTER.sniff_file(renamed, renamed.read_bytes()[:HEAD_BYTES])
    gemini = tmp_path / "session-2026-06-01T10-00-abcdefgh.jsonl"
    gemini.write_text('{"sessionId":"x","projectHash":"y","startTime":"z"}\n', encoding="utf-8")
    claude = tmp_path / "0b6c1a52-7c55-4d4b-9d3a-2d7f0f3c1e11.jsonl"
    claude.write_text(
        '{"type":"user","sessionId":"x","message":{"role":"user","content":"hi"}}\n', encoding="utf-8"
    )
    events = tmp_path / "events.jsonl"
    events.write_text('{"timestamp":"x","type":"event","payload":{}}\n', encoding="utf-8")
    for other in (gemini, claude, events):
        assert not IMPORTER.sniff_file(other, other.read_bytes()[:HEAD_BYTES])


def test_subagent_source_names_its_parent(tmp_path: Path) -> None:
    parent = "019f0000-1111-7222-8333-444455556666"
    source = {"subagent": {"thread_spawn": {"parent_thread_id": parent, "depth": 1}}}
    parsed = parse(write(tmp_path, [meta(source=source), turn(), user("sub task")]))
    assert parsed.session.is_subagent and parsed.session.parent_uid == f"codex:{parent}"
