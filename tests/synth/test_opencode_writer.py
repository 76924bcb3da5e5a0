from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from calib.core.errors import UsageError
from calib.importers import sniff_dir, sniff_file
from calib.importers.common import PRUNED_TEXT
from calib.importers.opencode import IMPORTER
from calib.importers.opencode.build import COMPACTION_PROMPT
from calib.ingest.pipeline import ingest
from calib.store.store import Store
from calib.synth.model import Step, SynthSession, ToolUse, Turn, Usage
from calib.synth.opencode import LAYOUTS, write

T0 = datetime(2026, 2, 3, 9, 15, 0, 250000)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def coding_session() -> SynthSession:
    """Tools (one failing, one pruned), reasoning, a compaction inside a turn and one opening a turn,
    a call without usage and a failed call."""
    ls = ToolUse("call_ls", "bash", '{"command":"ls -la","cwd":"/srv/app"}', "total 2\n-rw-r--r-- a.py\n")
    read = ToolUse(
        "call_read", "read", '{"filePath":"/srv/app/a.py"}', "print('héllo')\n", pruned=True, pruned_at=at(95)
    )
    grep = ToolUse("call_grep", "grep", '{"pattern":"TODO"}', "grep: no such file", is_error=True)
    turns = [
        Turn(
            "t1",
            at(0),
            "Fix the bug in a.py — 修复",
            steps=[
                Step(
                    "s1",
                    at(2),
                    Usage(ctx=12_000, output=40, reasoning=120, cache_read=10_000, cache_write=1_500),
                    reasoning="Look at the files first.",
                    tools=[ls, grep],
                ),
                Step("s2", at(5), Usage(ctx=12_400, output=25, cache_read=11_500), tools=[read]),
                Step(
                    "s3",
                    at(9),
                    Usage(ctx=3_100, output=60, reasoning=10, cache_write=3_000),
                    text="Fixed it.",
                    compacted=True,
                    summary="We listed the files and read a.py.",
                ),
            ],
        ),
        Turn(
            "t2",
            at(100),
            "Now run the tests",
            steps=[
                Step(
                    "s4",
                    at(101),
                    Usage(ctx=3_300, output=15),
                    text="Running.",
                    compacted=True,
                    summary="Bug fixed in a.py.",
                ),
                Step("s5", at(104), None, text="(no usage recorded)"),
                Step("s6", at(107), None, error="Rate limited by provider"),
            ],
        ),
    ]
    return SynthSession(
        "opencode",
        "ses_0b1c2d3e4ffeAbCdEfGhIjKlMn",
        "Fix the bug",
        "/srv/app",
        T0,
        "anthropic",
        "claude-sonnet-4-5",
        turns=turns,
    )


def chat_session() -> SynthSession:
    turns = [
        Turn(
            "u1",
            at(500),
            "Quick question",
            steps=[Step("q1", at(501), Usage(ctx=8_000, output=12, reasoning=30), text="Sure.")],
        ),
        Turn(
            "u2",
            at(600),
            "Thanks",
            steps=[Step("q2", at(601), Usage(ctx=8_050, output=5, cache_read=7_900), text="Welcome.")],
        ),
    ]
    return SynthSession(
        "opencode",
        "ses_0a0a0a0a0ffeQwErTyUiOpAsDf",
        "Chat",
        "/home/me/notes",
        at(500),
        "google",
        "gemini-2.5-pro",
        turns=turns,
    )


def expected(
    session: SynthSession, layout: str
) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]], list[int]]:
    """What the importer must store: calls, parts, and where each call's history starts (part index)."""
    v0 = layout == "opencode-project-tree"
    last_ts = session.steps()[-1].ts
    parts: list[tuple[Any, ...]] = []
    calls: list[dict[str, Any]] = []
    starts: list[int] = []
    start = 0

    def compaction(step: Step) -> None:
        nonlocal start
        start = len(parts)
        if not v0 and layout != "opencode2-db":  # OpenCode 2 sends no compaction prompt
            parts.append(("user", "user_text", COMPACTION_PROMPT, None, None, True))
        parts.append(("assistant", "summary", step.summary, None, None, True))

    for turn in session.turns:
        if turn.steps and turn.steps[0].compacted:
            compaction(turn.steps[0])
        parts.append(("user", "user_text", turn.user_text, None, None, True))
        for index, step in enumerate(turn.steps):
            if step.compacted and index > 0:
                compaction(step)
            starts.append(start)
            resent = step.error is None
            if step.reasoning:
                parts.append(("assistant", "reasoning", step.reasoning, None, None, resent))
            if step.text:
                parts.append(("assistant", "assistant_text", step.text, None, None, resent))
            for tool in step.tools:
                parts.append(("assistant", "tool_call", tool.args_json, tool.name, None, resent))
            for tool in step.tools:
                pruned = tool.pruned and not tool.is_error and not v0
                pruned_at = (tool.pruned_at or last_ts) if pruned else None
                parts.append(("tool", "tool_result", tool.output, tool.name, pruned_at, resent))
            u = step.usage
            if u is None:
                calls.append(
                    {
                        "usage_status": "missing",
                        "ctx": None,
                        "carry": None,
                        "error": step.error,
                        "ts": step.ts,
                    }
                )
                continue
            output, reasoning = (u.output + u.reasoning, 0) if v0 else (u.output, u.reasoning)
            calls.append(
                {
                    "usage_status": "ok",
                    "input": u.uncached,
                    "output": output,
                    "reasoning": reasoning,
                    "cache_read": u.cache_read,
                    "cache_write": u.cache_write,
                    "ctx": u.ctx,
                    "carry": u.output + u.reasoning,
                    "provider": session.provider,
                    "model": session.model,
                    "error": step.error,
                    "ts": step.ts,
                }
            )
    return calls, parts, starts


@pytest.mark.parametrize("layout", LAYOUTS)
def test_round_trip(layout: str, tmp_path: Path, store: Store) -> None:
    sessions = [coding_session(), chat_session()]
    paths = write(sessions, tmp_path / "out", layout)
    result = ingest(paths, store=store)
    assert result.ok, result.errors
    assert result.sessions == 2
    stored = store.sessions()
    # an OpenCode 2 database also keeps sessions that only a 1.x binary wrote (read as opencode-db)
    want = {"opencode-db", "opencode2-db"} if layout == "opencode2-db" else {layout}
    assert set(stored["layout"].to_list()) <= want
    for session in sessions:
        uid = f"opencode:{session.id}"
        row = stored.filter(stored["session_uid"] == uid).to_dicts()[0]
        assert (row["title"], row["project"], row["started_at"]) == (
            session.title,
            session.project_dir,
            session.started_at,
        )
        want_calls, want_parts, want_starts = expected(session, layout)
        calls = store.query("SELECT * FROM calls WHERE session_uid = ? ORDER BY seq", [uid]).to_dicts()
        assert [{k: c[k] for k in w} for c, w in zip(calls, want_calls, strict=True)] == want_calls
        parts = store.parts(uid).to_dicts()
        got = [(p["role"], p["kind"], p["text"], p["tool_name"], p["pruned_at"], p["resent"]) for p in parts]
        assert got == want_parts
        assert all(p["pruned_text"] == (PRUNED_TEXT if p["pruned_at"] else None) for p in parts)
        assert [c["prompt_start"] for c in calls] == want_starts
        # Every call's prompt ends right before its own output, and outputs carry their call.
        for call in calls:
            produced = [p["seq"] for p in parts if p["call_uid"] == call["call_uid"]]
            assert all(seq >= call["prompt_end"] for seq in produced)
    again = ingest(paths, full=True, store=store)
    assert (again.sessions, again.calls, again.parts) == (0, 0, 0)


def test_sources_are_found_and_claimed_by_the_importer(tmp_path: Path) -> None:
    for layout in LAYOUTS:
        paths = write([chat_session()], tmp_path / layout, layout)
        for path in paths:
            owner = sniff_dir(path) if path.is_dir() else sniff_file(path)
            assert owner is IMPORTER, (layout, path)


def test_database_has_opencode_tables_and_wal_mode(tmp_path: Path) -> None:
    [db] = write([coding_session()], tmp_path, "opencode-db")
    assert db == tmp_path / ".local" / "share" / "opencode" / "opencode.db"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {
            "project",
            "session",
            "message",
            "part",
            "todo",
            "permission",
            "__drizzle_migrations",
        } <= tables
        assert con.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        data = json.loads(con.execute("SELECT data FROM message LIMIT 1").fetchone()[0])
        assert "id" not in data and "sessionID" not in data
    finally:
        con.close()


def test_json_tree_files_are_pretty_printed_with_ids(tmp_path: Path) -> None:
    [storage] = write([chat_session()], tmp_path, "opencode-json-tree")
    [message_file, *_] = sorted((storage / "message" / chat_session().id).iterdir())
    text = message_file.read_text(encoding="utf-8")
    assert text.startswith('{\n  "id": "msg_')
    parts = sorted((storage / "part" / message_file.stem).iterdir())
    assert all(json.loads(p.read_text())["messageID"] == message_file.stem for p in parts)


def test_unknown_layout_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="opencode-db"):
        write([chat_session()], tmp_path, "opencode-yaml")
