"""The Dexto importer against hand-built databases and logs in Dexto's real shapes."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from calib.core.errors import InputError, InputWarning
from calib.core.records import AgentEstimate, ParsedSession
from calib.importers import get_importer, sniff_file
from calib.ingest.pipeline import ingest
from calib.store.store import Store

IMPORTER = get_importer("dexto")
T0 = 1_769_940_000_000  # 2026-02-01T10:00:00Z in epoch ms
T0_DT = datetime(2026, 2, 1, 10, 0, 0)

KV_DDL = (
    "CREATE TABLE kv_store (key TEXT PRIMARY KEY, value TEXT NOT NULL, "
    "created_at INTEGER DEFAULT (strftime('%s', 'now')), updated_at INTEGER DEFAULT (strftime('%s', 'now')))"
)
LIST_DDL = (
    "CREATE TABLE list_store (key TEXT NOT NULL, value TEXT NOT NULL, sequence INTEGER, "
    "created_at INTEGER DEFAULT (strftime('%s', 'now')), PRIMARY KEY (key, sequence))"
)


def make_db(
    path: Path,
    sessions: dict[str, list[Any]],
    infos: dict[str, Any] | None = None,
    *,
    ddl: tuple[str, ...] = (KV_DDL, LIST_DDL),
) -> Path:
    """A database as Dexto's SQLiteStore writes it: JSON values, sequences from 1."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    for statement in ddl:
        con.execute(statement)
    for sid, messages in sessions.items():
        for n, msg in enumerate(messages, start=1):
            value = msg if isinstance(msg, str) else json.dumps(msg)
            con.execute(
                "INSERT INTO list_store (key, value, sequence) VALUES (?, ?, ?)",
                [f"messages:{sid}", value, n],
            )
    for sid, info in (infos or {}).items():
        con.execute("INSERT INTO kv_store (key, value) VALUES (?, ?)", [f"session:{sid}", json.dumps(info)])
    con.commit()
    con.close()
    return path


def user(mid: str, text: str, t: int = 0) -> dict[str, Any]:
    return {"id": mid, "role": "user", "content": [{"type": "text", "text": text}], "timestamp": T0 + t}


def assistant(mid: str, t: int = 0, **fields: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {"id": mid, "role": "assistant", "content": None, "timestamp": T0 + t}
    text = fields.pop("text", None)
    if text is not None:
        msg["content"] = [{"type": "text", "text": text}]
    msg.update(fields)
    return msg


def tool(mid: str, call_id: str, name: str, text: str, t: int = 0, **fields: Any) -> dict[str, Any]:
    return {
        "id": mid,
        "role": "tool",
        "content": [{"type": "text", "text": text}],
        "toolCallId": call_id,
        "name": name,
        "success": True,
        "timestamp": T0 + t,
        **fields,
    }


def call(cid: str, name: str, args: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def usage(
    inp: int, out: int, read: int | None = None, write: int | None = None, **extra: int
) -> dict[str, int]:
    u = {"inputTokens": inp, "outputTokens": out, "totalTokens": inp + out + (read or 0) + (write or 0)}
    if read is not None:
        u["cacheReadTokens"] = read
    if write is not None:
        u["cacheWriteTokens"] = write
    u.update(extra)
    return u


def parse(path: Path) -> list[ParsedSession]:
    records = list(IMPORTER.parse(path))
    assert all(isinstance(r, ParsedSession) for r in records)
    return [r for r in records if isinstance(r, ParsedSession)]


def only(path: Path) -> ParsedSession:
    (session,) = parse(path)
    return session


# -- a current (1.5+) session ------------------------------------------------------------------------


def modern_session() -> list[dict[str, Any]]:
    return [
        user("u1", "Find the bug in parser.py"),
        assistant(
            "a1",
            1000,
            reasoning="I should read the file first.",
            toolCalls=[call("c1", "read_file", '{ "path": "parser.py",  "limit": 50 }')],
            tokenUsage=usage(120, 80, 3000, 400, reasoningTokens=30),
            provider="anthropic",
            model="claude-sonnet-4-5",
            assistantOutput={"status": "complete"},
        ),
        tool("t1", "c1", "read_file", "def parse(x):\n    return x", 2000),
        assistant(
            "a2",
            3000,
            text="The bug is on line 2.",
            tokenUsage=usage(40, 25, 3400, 0, reasoningTokens=0),
            provider="anthropic",
            model="claude-sonnet-4-5",
            assistantOutput={"status": "complete"},
        ),
    ]


def test_modern_session_calls_usage_and_parts(tmp_path: Path) -> None:
    db = make_db(
        tmp_path / ".dexto" / "database" / "coding-agent.db",
        {"s1": modern_session()},
        {"s1": {"id": "s1", "createdAt": T0 - 5000, "lastActivity": T0 + 3000, "metadata": {"title": "Bug"}}},
    )
    parsed = only(db)
    s = parsed.session
    assert (s.uid, s.tool, s.native_id, s.layout) == ("dexto:s1", "dexto", "s1", "dexto-db")
    assert s.title == "Bug"
    assert s.started_at == datetime(2026, 2, 1, 9, 59, 55)
    assert s.project == str(tmp_path)
    assert s.meta is not None and s.meta["agent"] == "coding-agent"
    assert not s.is_subagent

    c1, c2 = parsed.calls
    assert (c1.uid, c1.seq, c1.message_id, c1.provider, c1.model) == (
        "dexto:s1:a1",
        0,
        "a1",
        "anthropic",
        "claude-sonnet-4-5",
    )
    assert (c1.input, c1.output, c1.reasoning, c1.cache_read, c1.cache_write) == (120, 80, 30, 3000, 400)
    assert (c1.ctx, c1.carry, c1.usage_status, c1.usage_style) == (3520, 80, "ok", "anthropic")
    assert c1.usage_raw == usage(120, 80, 3000, 400, reasoningTokens=30)
    assert c1.ts == datetime(2026, 2, 1, 10, 0, 1)
    assert (c2.ctx, c2.carry, c2.usage_status) == (3440, 25, "ok")
    assert c1.error is None and c1.finish == "complete"

    kinds = [(p.seq, p.role, p.kind, p.text, p.tool_name, p.call_uid) for p in parsed.parts]
    assert kinds == [
        (0, "user", "user_text", "Find the bug in parser.py", None, None),
        (1, "assistant", "reasoning", "I should read the file first.", None, "dexto:s1:a1"),
        (2, "assistant", "tool_call", '{"path":"parser.py","limit":50}', "read_file", "dexto:s1:a1"),
        (3, "tool", "tool_result", "def parse(x):\n    return x", "read_file", None),
        (4, "assistant", "assistant_text", "The bug is on line 2.", None, "dexto:s1:a2"),
    ]
    # Each call was sent everything before its own output.
    assert (c1.prompt_start, c1.prompt_end) == (0, 1)
    assert (c2.prompt_start, c2.prompt_end) == (0, 4)
    # Claude keeps thinking inside a tool loop.
    assert parsed.parts[1].resent is True


def test_reasoning_is_not_resent_outside_anthropic_tool_loops(tmp_path: Path) -> None:
    msgs = [
        user("u1", "hi"),
        assistant("a1", reasoning="hmm", text="hello", tokenUsage=usage(10, 5), provider="anthropic"),
        user("u2", "again"),
        assistant(
            "a2",
            reasoning="plan",
            toolCalls=[call("c", "ls", "{}")],
            tokenUsage=usage(10, 5),
            provider="openai",
        ),
    ]
    parts = only(make_db(tmp_path / "a.db", {"s": msgs})).parts
    reasoning = [p.resent for p in parts if p.kind == "reasoning"]
    assert reasoning == [False, False]


def test_stopped_call_and_missing_usage(tmp_path: Path) -> None:
    msgs = [
        user("u1", "go"),
        assistant("a1", text="partial", assistantOutput={"status": "stopped", "reason": "cancelled"}),
        assistant("a2", text="ok", tokenUsage=usage(0, 0, 0, 0), assistantOutput={"status": "complete"}),
    ]
    calls = only(make_db(tmp_path / "a.db", {"s": msgs})).calls
    assert [(c.usage_status, c.error, c.ctx) for c in calls] == [
        ("missing", "cancelled", None),
        ("missing", None, None),
    ]


def test_user_media_old_string_content_and_duplicates(tmp_path: Path) -> None:
    msgs = [
        {
            "id": "u1",
            "role": "user",
            "timestamp": T0,
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image", "image": "@blob:abc", "mimeType": "image/png"},
                {"type": "file", "data": "@blob:def", "mimeType": "application/pdf", "filename": "spec.pdf"},
                {"type": "ui-resource", "uri": "ui://x", "mimeType": "text/html"},
            ],
        },
        # Dexto <= 1.3 stored plain strings for assistant and tool content.
        {"id": "a1", "role": "assistant", "content": "seen", "timestamp": T0, "tokenUsage": usage(50, 2)},
        {"id": "a1", "role": "assistant", "content": "seen", "timestamp": T0, "tokenUsage": usage(50, 2)},
        {
            "id": "t9",
            "role": "tool",
            "content": "plain output",
            "toolCallId": "c",
            "name": "x",
            "timestamp": T0,
        },
    ]
    parsed = only(make_db(tmp_path / "a.db", {"s": msgs}))
    assert [(p.kind, p.text) for p in parsed.parts] == [
        ("user_text", "look"),
        ("file", "[image image/png]"),
        ("file", "[file spec.pdf]"),
        ("assistant_text", "seen"),
        ("tool_result", "plain output"),
    ]
    assert len(parsed.calls) == 1


def test_subagent_session_links_its_parent(tmp_path: Path) -> None:
    db = make_db(
        tmp_path / "a.db",
        {"child": [user("u", "sub task")], "parent": [user("p", "main")]},
        {"child": {"id": "child", "createdAt": T0, "lastActivity": T0, "parentSessionId": "parent"}},
    )
    by_id = {p.session.native_id: p.session for p in parse(db)}
    assert by_id["child"].is_subagent and by_id["child"].parent_uid == "dexto:parent"
    assert not by_id["parent"].is_subagent and by_id["parent"].parent_uid is None


# -- Dexto <= 1.3 --------------------------------------------------------------------------------------


def test_legacy_turn_summed_usage_is_flagged(tmp_path: Path) -> None:
    msgs = [
        user("u1", "do it"),
        assistant("a1", toolCalls=[call("c1", "ls", "{}")], provider="openai", model="gpt-4o"),
        tool("t1", "c1", "ls", "a b c"),
        assistant("a2", toolCalls=[call("c2", "cat", '{"f":"a"}')], provider="openai", model="gpt-4o"),
        tool("t2", "c2", "cat", "text"),
        assistant("a3", text="done", tokenUsage=usage(3000, 90), provider="openai", model="gpt-4o"),
        user("u2", "thanks"),
        assistant("a4", text="welcome", tokenUsage=usage(1100, 4), provider="openai", model="gpt-4o"),
    ]
    parsed = only(make_db(tmp_path / "dexto.db", {"old": msgs}))
    assert parsed.session.layout == "dexto-db-legacy"
    statuses = [(c.message_id, c.usage_status, c.input) for c in parsed.calls]
    assert statuses == [
        ("a1", "missing", None),
        ("a2", "missing", None),
        ("a3", "turn_summed", 3000),
        ("a4", "ok", 1100),
    ]


def test_legacy_anthropic_single_calls_are_lower_bounds(tmp_path: Path) -> None:
    msgs = [
        user("u1", "a"),
        assistant("a1", toolCalls=[call("c1", "ls", "{}")], provider="anthropic"),
        tool("t1", "c1", "ls", "x"),
        assistant("a2", text="b", tokenUsage=usage(900, 30), provider="anthropic"),
        user("u2", "c"),
        assistant("a3", text="d", tokenUsage=usage(200, 10), provider="anthropic"),
    ]
    calls = only(make_db(tmp_path / "a.db", {"s": msgs})).calls
    assert [c.usage_status for c in calls] == ["missing", "turn_summed", "suspect"]


def test_per_call_usage_without_cache_fields_is_not_legacy(tmp_path: Path) -> None:
    # Dexto 1.4-1.5.4 with a provider that reported no cache: every call has its own usage.
    msgs = [
        user("u1", "a"),
        assistant("a1", toolCalls=[call("c1", "ls", "{}")], tokenUsage=usage(500, 20), provider="groq"),
        tool("t1", "c1", "ls", "x"),
        assistant("a2", text="b", tokenUsage=usage(530, 30), provider="groq"),
    ]
    parsed = only(make_db(tmp_path / "a.db", {"s": msgs}))
    assert parsed.session.layout == "dexto-db"
    assert [c.usage_status for c in parsed.calls] == ["ok", "ok"]


def test_a_lost_intermediate_usage_in_new_data_is_not_legacy(tmp_path: Path) -> None:
    msgs = [
        user("u1", "a"),
        assistant("a1", toolCalls=[call("c1", "ls", "{}")], assistantOutput={"status": "stopped"}),
        tool("t1", "c1", "ls", "x"),
        assistant("a2", text="b", tokenUsage=usage(900, 30, 0, 0), assistantOutput={"status": "complete"}),
    ]
    parsed = only(make_db(tmp_path / "a.db", {"s": msgs}))
    assert parsed.session.layout == "dexto-db"
    assert [c.usage_status for c in parsed.calls] == ["missing", "ok"]


# -- Anthropic zero input ----------------------------------------------------------------------------


def test_anthropic_zero_input_with_cache_reads_is_suspect(tmp_path: Path) -> None:
    msgs = [
        user("u1", "a"),
        assistant(
            "a1", text="b", tokenUsage=usage(0, 30, 5000, 0), provider="anthropic", model="claude-opus-4"
        ),
        user("u2", "c"),
        assistant("a2", text="d", tokenUsage=usage(0, 30, 5000, 0), provider="openai", model="gpt-5"),
        user("u3", "e"),
        assistant(
            "a3", text="f", tokenUsage=usage(0, 30, 5000, 0), provider="bedrock", model="anthropic.claude-3"
        ),
    ]
    calls = only(make_db(tmp_path / "a.db", {"s": msgs})).calls
    assert [(c.usage_status, c.ctx) for c in calls] == [("suspect", 5000), ("ok", 5000), ("suspect", 5000)]


# -- pruning and compaction ----------------------------------------------------------------------------


def test_compacted_tool_output_is_pruned(tmp_path: Path) -> None:
    msgs = [
        user("u1", "a"),
        assistant("a1", toolCalls=[call("c1", "grep", "{}")], tokenUsage=usage(10, 1)),
        tool("t1", "c1", "grep", "long output " * 50, compactedAt=T0 + 60_000),
        assistant("a2", text="b", tokenUsage=usage(20, 1)),
    ]
    part = next(p for p in only(make_db(tmp_path / "a.db", {"s": msgs})).parts if p.kind == "tool_result")
    assert part.text == "long output " * 50
    assert part.pruned_at == datetime(2026, 2, 1, 10, 1, 0)
    assert part.pruned_text == "[Old tool result content cleared]"


def test_summary_restarts_the_history_with_the_preserved_messages(tmp_path: Path) -> None:
    msgs = [
        user("u1", "first"),  # 0: summarised
        assistant("a1", text="one", tokenUsage=usage(100, 10)),  # 1: summarised
        user("u2", "second"),  # 2: preserved
        assistant("a2", text="two", tokenUsage=usage(200, 10)),  # 3: preserved
        assistant(  # 4: the summary, appended after what it replaces
            "sum",
            text="<session_compaction>earlier</session_compaction>",
            metadata={"isSummary": True, "originalMessageCount": 2, "summarizedAt": T0},
            tokenUsage=usage(150, 40),
        ),
        user("u3", "third"),
        assistant("a3", text="three", tokenUsage=usage(90, 5)),
    ]
    parsed = only(make_db(tmp_path / "a.db", {"s": msgs}))
    texts = [(p.seq, p.kind, p.text) for p in parsed.parts]
    assert texts == [
        (0, "user_text", "first"),
        (1, "assistant_text", "one"),
        (2, "user_text", "second"),
        (3, "assistant_text", "two"),
        (4, "summary", "<session_compaction>earlier</session_compaction>"),
        (5, "user_text", "second"),
        (6, "assistant_text", "two"),
        (7, "user_text", "third"),
        (8, "assistant_text", "three"),
    ]
    copies = parsed.parts[5:7]
    assert [p.uid for p in copies] == ["dexto:s:u2:0@sum", "dexto:s:a2:0@sum"]
    assert all(p.call_uid is None for p in copies)
    # The summary is no call; the call after it was sent the summary, the preserved turn and "third".
    assert [c.message_id for c in parsed.calls] == ["a1", "a2", "a3"]
    a3 = parsed.calls[2]
    assert (a3.prompt_start, a3.prompt_end) == (4, 8)
    assert parsed.session.meta is not None
    assert parsed.session.meta["summary_usage"][0]["message_id"] == "sum"
    assert len({p.uid for p in parsed.parts}) == len(parsed.parts)


def test_legacy_summary_without_count_keeps_nothing_before_it(tmp_path: Path) -> None:
    msgs = [
        user("u1", "first"),
        assistant("s1", text="sum", metadata={"isSessionSummary": True}),
        user("u2", "next"),
        assistant("a2", text="x", tokenUsage=usage(10, 1)),
    ]
    parsed = only(make_db(tmp_path / "a.db", {"s": msgs}))
    assert [(p.kind, p.text) for p in parsed.parts] == [
        ("user_text", "first"),
        ("summary", "sum"),
        ("user_text", "next"),
        ("assistant_text", "x"),
    ]
    assert (parsed.calls[0].prompt_start, parsed.calls[0].prompt_end) == (1, 3)


# -- bad input -----------------------------------------------------------------------------------------


def test_a_damaged_row_costs_its_message_and_keeps_its_place(tmp_path: Path, store: Store) -> None:
    msgs = [
        user("u1", "first"),  # 0: summarised
        '{"id": "x", "role": "user", "content": [',  # 1: damaged, summarised
        user("u2", "second"),  # 2: preserved
        assistant("a2", text="two", tokenUsage=usage(200, 10)),  # 3: preserved
        assistant(  # 4: counts the damaged row among the messages it replaces
            "sum",
            text="<session_compaction>earlier</session_compaction>",
            metadata={"isSummary": True, "originalMessageCount": 2, "summarizedAt": T0},
        ),
        assistant("a3", text="three", toolCalls=5, tokenUsage=usage(90, 5)),  # 5: a field of a wrong type
        user("u4", "fourth"),  # 6
    ]
    db = make_db(tmp_path / "a.db", {"good": [user("u", "fine")], "bad": msgs})
    records = list(IMPORTER.parse(db))
    warnings = [str(r) for r in records if isinstance(r, InputWarning)]
    assert warnings == [
        "row messages:bad sequence 2 of table `list_store` is not valid JSON (unexpected end of data); "
        f"this message was left out, the rest of the database was imported ({db})",
        "row messages:bad sequence 6 of table `list_store` is a message calib cannot read (TypeError: 'int' "
        f"object is not iterable); this message was left out, the rest of the database was imported ({db})",
    ]
    bad = next(r for r in records if isinstance(r, ParsedSession) and r.session.uid == "dexto:bad")
    assert [p.uid.split(":", 2)[2] for p in bad.parts] == [
        "u1:0",
        "u2:0",
        "a2:0",
        "sum:0",
        "u2:0@sum",  # the preserved messages, counted as Dexto counted them
        "a2:0@sum",
        "u4:0",
    ]
    assert [c.message_id for c in bad.calls] == ["a2"]

    result = ingest([db], store=store)
    assert result.errors == [] and len(result.warnings) == 2
    assert store.counts()["sessions"] == 2


def test_unknown_schema_is_a_clear_error(tmp_path: Path) -> None:
    missing = make_db(tmp_path / "missing.db", {}, ddl=(KV_DDL,))
    with pytest.raises(InputError, match="no table list_store"):
        list(IMPORTER.parse(missing))

    newer = make_db(
        tmp_path / "newer.db",
        {},
        ddl=(
            KV_DDL,
            "CREATE TABLE list_store (key TEXT NOT NULL, value TEXT NOT NULL, sequence INTEGER, "
            "created_at INTEGER, owner TEXT NOT NULL, PRIMARY KEY (key, sequence))",
        ),
    )
    with pytest.raises(InputError, match=r"unknown required column.*owner"):
        list(IMPORTER.parse(newer))

    renamed = make_db(
        tmp_path / "renamed.db",
        {},
        ddl=(KV_DDL, "CREATE TABLE list_store (key TEXT, item TEXT, sequence INTEGER, created_at INTEGER)"),
    )
    with pytest.raises(InputError, match=r"list_store lacks column.*value"):
        list(IMPORTER.parse(renamed))

    # An optional extra column (a future index hint, say) does not stop the import.
    tolerant = make_db(
        tmp_path / "tolerant.db",
        {"s": [user("u", "x")]},
        ddl=(KV_DDL, LIST_DDL, "ALTER TABLE list_store ADD COLUMN note TEXT"),
    )
    assert only(tolerant).session.native_id == "s"


def test_unrelated_sqlite_database_is_not_claimed(tmp_path: Path, store: Store) -> None:
    other = tmp_path / "data" / "app.db"
    other.parent.mkdir()
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE session (id TEXT PRIMARY KEY, data TEXT)")
    con.commit()
    con.close()
    assert not IMPORTER.sniff_file(other, other.read_bytes()[:4096])
    assert sniff_file(other) is None
    result = ingest([tmp_path / "data"], store=store)
    assert result.skipped == [str(other)] and not result.errors


def test_database_is_never_modified(tmp_path: Path, store: Store) -> None:
    db = make_db(tmp_path / ".dexto" / "database" / "a.db", {"s1": modern_session()})
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode = WAL")
    con.close()
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    listing = sorted(p.name for p in db.parent.iterdir())
    result = ingest([tmp_path], store=store)
    assert result.ok and result.sessions == 1
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in db.parent.iterdir()) == listing


def test_live_wal_content_is_read(tmp_path: Path) -> None:
    db = make_db(tmp_path / "a.db", {"s1": [user("u", "committed before")]})
    writer = sqlite3.connect(db)
    try:
        writer.execute("PRAGMA journal_mode = WAL")
        writer.execute(
            "INSERT INTO list_store (key, value, sequence) VALUES (?, ?, ?)",
            ["messages:s2", json.dumps(user("v", "only in the WAL")), 1],
        )
        writer.commit()
        assert Path(str(db) + "-wal").exists()
        ids = sorted(p.session.native_id for p in parse(db))
    finally:
        writer.close()
    assert ids == ["s1", "s2"]


# -- logs ----------------------------------------------------------------------------------------------


def log_line(message: str, **fields: Any) -> str:
    entry = {
        "level": "info",
        "message": message,
        "timestamp": "2026-02-01T10:00:05.250Z",
        "component": "executor",
    }
    entry.update(fields)
    return json.dumps(entry, separators=(",", ":")) + "\n"


def test_log_lines_become_estimate_pairs(tmp_path: Path) -> None:
    log = tmp_path / ".dexto" / "logs" / "coding-agent" / "sess-1.log"
    log.parent.mkdir(parents=True)
    log.write_text(
        log_line("Session started", agentId="coding-agent", sessionId="sess-1")
        + log_line(
            "Context estimation accuracy: estimated=1200, actual=1300, error=-100 (-7.7%)",
            agentId="coding-agent",
            sessionId="sess-1",
        )
        + "not json at all\n"
        + '{"level":"info","message":"Context estimation accuracy: estimated=1, actual=2, err'  # cut by a crash
        + "\n"
        + log_line(
            "Context estimate (actuals-based): lastInput=1, lastOutput=2, newMsgs=3 (1 messages), total=6"
        )
        + log_line("Context estimation accuracy: estimated=990, actual=1000, error=-10 (-1.0%)")
    )
    head = log.read_bytes()[:4096]
    assert IMPORTER.sniff_file(log, head)
    records = list(IMPORTER.parse(log))
    assert all(isinstance(r, AgentEstimate) for r in records)
    pairs = [
        (r.line, r.estimated, r.actual, r.session_uid, r.agent)
        for r in records
        if isinstance(r, AgentEstimate)
    ]
    # The second pair names no session or agent: they come from where the file is.
    assert pairs == [
        (2, 1200, 1300, "dexto:sess-1", "coding-agent"),
        (6, 990, 1000, "dexto:sess-1", "coding-agent"),
    ]
    first = records[0]
    assert isinstance(first, AgentEstimate)
    assert first.ts == datetime(2026, 2, 1, 10, 0, 5, 250000)
    assert first.source_path == str(log)


def test_an_unfinished_last_log_line_is_a_warning_then_read_once_complete(tmp_path: Path) -> None:
    log = tmp_path / ".dexto" / "logs" / "coding-agent" / "sess-1.log"
    log.parent.mkdir(parents=True)
    done = log_line("Context estimation accuracy: estimated=990, actual=1000, error=-10 (-1.0%)")
    last = log_line("Context estimation accuracy: estimated=1200, actual=1300, error=-100 (-7.7%)")
    log.write_text(done + last[:40])  # Dexto is writing its second line
    records = list(IMPORTER.parse(log))
    assert [(r.line, r.actual) for r in records if isinstance(r, AgentEstimate)] == [(1, 1000)]
    warnings = [r for r in records if isinstance(r, InputWarning)]
    assert [str(w) for w in warnings] == [
        f"the last line is unfinished (dexto may still be writing it); left out ({log}:2); "
        "ingest again once it is complete to add it"
    ]
    log.write_text(done + last)
    records = list(IMPORTER.parse(log))
    assert [(r.line, r.actual) for r in records if isinstance(r, AgentEstimate)] == [(1, 1000), (2, 1300)]
    assert not any(isinstance(r, InputWarning) for r in records)
    # a last line that parses is complete, newline or not
    log.write_text(done + last.rstrip("\n"))
    assert [r.line for r in IMPORTER.parse(log) if isinstance(r, AgentEstimate)] == [1, 2]


def test_rotated_and_shared_logs(tmp_path: Path, store: Store) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    rotated = logs / "coding-agent.log.1"
    rotated.write_text(
        log_line("Context estimation accuracy: estimated=5, actual=7, error=-2 (-28.6%)", sessionId="abc")
    )
    winston = logs / "dexto.log"
    winston.write_text('{"level":"info","message":"Starting Dexto","timestamp":"2025-10-01 12:00:00"}\n')
    quiet = logs / "other-agent.log"
    quiet.write_text(log_line("nothing to see"))
    shared = logs / "coding-agent.log"
    # A shared per-agent log line that names no session is kept, with no session.
    shared.write_text(log_line("Context estimation accuracy: estimated=8, actual=9, error=-1 (-11.1%)"))
    result = ingest([logs], store=store)
    assert result.ok and result.files == 4 and result.estimates == 2
    rows = [
        (r["source_path"], r["session_uid"], r["agent"], r["estimated"], r["actual"])
        for r in store.agent_estimates().to_dicts()
    ]
    assert rows == [
        (str(shared), None, "coding-agent", 8, 9),
        (str(rotated), "dexto:abc", "coding-agent", 5, 7),
    ]


def test_logs_outside_a_logs_folder_or_not_json_are_not_claimed(tmp_path: Path) -> None:
    stray = tmp_path / "app.log"
    stray.write_text(log_line("Context estimation accuracy: estimated=1, actual=2, error=-1 (-50.0%)"))
    assert not IMPORTER.sniff_file(stray, stray.read_bytes())
    text = tmp_path / "logs" / "server.log"
    text.parent.mkdir()
    text.write_text("INFO 2026-01-01 started\n")
    assert not IMPORTER.sniff_file(text, text.read_bytes())


def test_default_paths_follow_dexto_home_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEXTO_HOME_DIR", str(tmp_path / "dx"))
    paths = IMPORTER.default_paths()
    assert paths[:2] == [tmp_path / "dx" / "database", tmp_path / "dx" / "logs"]
    assert Path.home() / ".dexto" / "database" in paths
    monkeypatch.delenv("DEXTO_HOME_DIR")
    assert IMPORTER.default_paths() == [Path.home() / ".dexto" / "database", Path.home() / ".dexto" / "logs"]
