"""OpenCode 2 databases (`session_v2` + `session_message`, formats.md section 7) and the vendor of a call."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from helpers import shared_fixture

from calib.core.records import ParsedSession
from calib.importers import HEAD_BYTES, sniff_file
from calib.importers.common import PRUNED_TEXT, ms_to_datetime
from calib.importers.opencode import IMPORTER
from calib.importers.opencode.build import INTERRUPTED_TOOL
from calib.importers.opencode.providers import vendor
from calib.ingest.pipeline import ingest
from calib.store.store import Store
from calib.synth import generate, write_sample
from calib.synth.opencode import ORIGINS, origins

T0 = 1_790_000_000_000  # 2026-09, epoch ms

V2_DDL = """
CREATE TABLE session_v2 (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, slug text NOT NULL,
    directory text NOT NULL, title text NOT NULL, version text NOT NULL, model text,
    time_created integer NOT NULL, time_updated integer NOT NULL);
CREATE TABLE session_message (id text PRIMARY KEY, session_id text NOT NULL, type text NOT NULL,
    seq integer NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE UNIQUE INDEX session_message_seq ON session_message (session_id, seq);
CREATE TABLE data_migration (name text PRIMARY KEY, time_completed integer NOT NULL);
"""
V1_DDL = """
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, slug text NOT NULL,
    directory text NOT NULL, title text NOT NULL, version text NOT NULL,
    time_created integer NOT NULL, time_updated integer NOT NULL);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL,
    time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
    time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
"""


# -- hand-made rows -----------------------------------------------------------------------------------


def tokens(inp: int, out: int, reas: int = 0, read: int = 0, write: int = 0) -> dict[str, Any]:
    return {"input": inp, "output": out, "reasoning": reas, "cache": {"read": read, "write": write}}


def user(text: str, at: int = T0, **extra: Any) -> tuple[str, dict[str, Any]]:
    return "user", {"text": text, "time": {"created": at}, **extra}


def assistant(
    *content: dict[str, Any],
    tok: dict[str, Any] | None = None,
    at: int = T0,
    completed: bool = True,
    model: str = "claude-sonnet-4-5",
    provider: str = "anthropic",
    **extra: Any,
) -> tuple[str, dict[str, Any]]:
    times: dict[str, Any] = {"created": at}
    if completed:
        times["completed"] = at + 5
    data: dict[str, Any] = {
        "agent": "build",
        "model": {"id": model, "providerID": provider},
        "content": list(content),
        "finish": "stop",
        "cost": 0.01,
        "time": times,
        **extra,
    }
    if tok is not None:
        data["tokens"] = tok
    return "assistant", data


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def reasoning(t: str) -> dict[str, Any]:
    return {"type": "reasoning", "text": t}


def tool(
    call_id: str, name: str, args: Any, output: str, status: str = "completed", **times: int
) -> dict[str, Any]:
    state: dict[str, Any] = {"status": status, "input": args}
    if status == "completed":
        state.update(content=[{"type": "text", "text": output}], structured={})
    elif status == "error":
        state["error"] = output
    return {
        "type": "tool",
        "id": call_id,
        "name": name,
        "state": state,
        "time": {"created": T0, "ran": T0, "completed": T0 + 1, **times},
    }


Rows = list[tuple[str, dict[str, Any]]]


def add_v2(
    con: sqlite3.Connection, sid: str, rows: Rows, *, parent: str | None = None, start: int = 0
) -> None:
    con.execute(
        "INSERT OR IGNORE INTO session_v2 VALUES (?, 'proj', ?, 'slug', '/work/v2', ?, '2.0.25', ?, ?, ?)",
        (sid, parent, f"title {sid}", json.dumps({"id": "m", "providerID": "p"}), T0, T0 + 99),
    )
    for seq, (kind, data) in enumerate(rows, start):
        con.execute(
            "INSERT INTO session_message VALUES (?, ?, ?, ?, ?, ?, ?)",
            (f"msg_{sid}_{seq:03d}", sid, kind, seq, T0 + seq, T0 + seq, json.dumps(data)),
        )


def add_v1(con: sqlite3.Connection, sid: str, words: list[str], *, out: int = 7) -> None:
    """A 1.x session: one user message and one assistant step per word."""
    con.execute(
        "INSERT INTO session VALUES (?, 'proj', NULL, 'slug', '/work/v1', ?, '1.14.30', ?, ?)",
        (sid, f"v1 {sid}", T0, T0 + 9),
    )
    for i, word in enumerate(words):
        at = T0 + 10 * i
        umsg, amsg = f"msg_{sid}_u{i}", f"msg_{sid}_a{i}"
        con.execute(
            "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
            (umsg, sid, at, at, json.dumps({"role": "user", "time": {"created": at}})),
        )
        con.execute(
            "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
            (f"prt_{umsg}", umsg, sid, at, at, json.dumps({"type": "text", "text": word})),
        )
        info = {
            "role": "assistant",
            "parentID": umsg,
            "modelID": "gpt-5.4",
            "providerID": "github-copilot",
            "time": {"created": at + 1, "completed": at + 2},
            "tokens": {**tokens(100, out), "total": 100 + out},
        }
        con.execute(
            "INSERT INTO message VALUES (?, ?, ?, ?, ?)", (amsg, sid, at + 1, at + 1, json.dumps(info))
        )
        finish = {"type": "step-finish", "reason": "stop", "cost": 0, "tokens": info["tokens"]}
        for j, part in enumerate([{"type": "step-start"}, {"type": "text", "text": f"re {word}"}, finish]):
            con.execute(
                "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                (f"prt_{amsg}_{j}", amsg, sid, at + 1, at + 1, json.dumps(part)),
            )


def make_db(path: Path, *, v1: bool = True, v2: bool = True, wal: bool = False) -> sqlite3.Connection:
    con = sqlite3.connect(path, isolation_level=None)
    if wal:
        con.execute("PRAGMA journal_mode = WAL")
    con.executescript((V1_DDL if v1 else "") + (V2_DDL if v2 else ""))
    return con


def db_with(tmp_path: Path, rows: Rows, **kwargs: Any) -> Path:
    path = tmp_path / "opencode.db"
    con = make_db(path, **kwargs)
    add_v2(con, "ses_a", rows)
    con.close()
    return path


def parse_all(path: Path) -> dict[str, ParsedSession]:
    records = list(IMPORTER.parse(path))
    assert all(isinstance(r, ParsedSession) for r in records)
    return {r.session.native_id: r for r in records if isinstance(r, ParsedSession)}


def parse_one(path: Path) -> ParsedSession:
    [parsed] = parse_all(path).values()
    return parsed


def prompt(parsed: ParsedSession, k: int) -> list[tuple[str, str]]:
    call = parsed.calls[k]
    return [(p.kind, p.text) for p in parsed.parts[call.prompt_start : call.prompt_end]]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- detection ----------------------------------------------------------------------------------------


def test_v2_database_reads_v2_sessions_then_v1_only_ones_each_once(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    con = make_db(path)
    add_v1(con, "ses_old", ["one", "two"])  # a 1.x binary wrote it: 1.x tables only
    add_v1(con, "ses_mig", ["stale"])  # migrated: its 1.x rows stay, its 2.x rows win
    add_v2(con, "ses_mig", [user("fresh"), assistant(text("ok"), tok=tokens(10, 2))])
    add_v2(con, "ses_new", [user("hello"), assistant(text("hi"), tok=tokens(5, 1))])
    con.close()
    assert sniff_file(path) is IMPORTER
    sessions = parse_all(path)
    assert sorted(sessions) == ["ses_mig", "ses_new", "ses_old"]
    layouts = {sid: p.session.layout for sid, p in sessions.items()}
    assert layouts == {"ses_mig": "opencode2-db", "ses_new": "opencode2-db", "ses_old": "opencode-db"}
    assert [p.text for p in sessions["ses_mig"].parts] == ["fresh", "ok"]
    assert len(sessions["ses_old"].calls) == 2 and sessions["ses_old"].calls[0].ctx == 100
    # The same uid as a 1.x read of the same id, so a migrated session is the same session in the store.
    assert sessions["ses_mig"].session.uid == "opencode:ses_mig"
    assert (sessions["ses_new"].session.meta or {})["version"] == "2.0.25"
    assert sessions["ses_new"].session.project == "/work/v2"


def test_database_with_only_v2_tables_is_claimed_and_read(tmp_path: Path) -> None:
    path = db_with(tmp_path, [user("hello"), assistant(text("hi"), tok=tokens(5, 1))], v1=False)
    assert IMPORTER.sniff_file(path, path.read_bytes()[:HEAD_BYTES])
    parsed = parse_one(path)
    assert parsed.session.layout == "opencode2-db" and [c.ctx for c in parsed.calls] == [5]


def test_session_message_without_session_v2_is_the_ignored_1x_projection(tmp_path: Path) -> None:
    path = tmp_path / "opencode-dev.db"
    con = make_db(path, v2=False)
    add_v1(con, "ses_old", ["one"])
    con.execute(
        "CREATE TABLE session_message (id text PRIMARY KEY, session_id text, type text, seq integer, data text)"
    )
    con.execute(
        "INSERT INTO session_message VALUES ('e1', 'ses_old', 'user', 0, '{\"text\": \"projected\"}')"
    )
    con.execute("INSERT INTO session_message VALUES ('e2', 'ses_only_here', 'user', 0, '{}')")
    con.close()
    sessions = parse_all(path)
    assert list(sessions) == ["ses_old"]
    assert [p.text for p in sessions["ses_old"].parts] == ["one", "re one"]
    assert sessions["ses_old"].session.layout == "opencode-db"


# -- calls and usage ----------------------------------------------------------------------------------


def test_tokens_mean_the_same_for_every_provider(tmp_path: Path) -> None:
    rows = [
        user("q"),
        assistant(text("a"), reasoning("think"), tok=tokens(100, 20, 30, 1000, 50)),
        assistant(text("b"), tok=tokens(40, 10, 5, 1200, 0), model="gpt-5", provider="openai"),
        assistant(text("c"), tok=tokens(7, 3, 0, 1300, 0), model="gpt-5", provider="openai"),
    ]
    parsed = parse_one(db_with(tmp_path, rows))
    a, b, c = parsed.calls
    assert [x.ctx for x in parsed.calls] == [1150, 1240, 1307]
    assert [x.usage_style for x in parsed.calls] == ["anthropic"] * 3
    assert (a.input, a.output, a.reasoning, a.cache_read, a.cache_write) == (100, 20, 30, 1000, 50)
    assert [x.total for x in parsed.calls] == [1200, 1255, 1310]
    # Reasoning re-enters the next prompt while the model stays the same (the 1.x rule).
    assert (a.carry, b.carry, c.carry) == (20, 15, 3)
    assert [x.provider for x in parsed.calls] == ["anthropic", "openai", "openai"]
    assert a.usage_raw == {"tokens": tokens(100, 20, 30, 1000, 50), "cost": 0.01}
    assert a.ts == ms_to_datetime(T0)


def test_unfinished_step_and_error_without_tokens_are_calls_without_usage(tmp_path: Path) -> None:
    failed = {"name": "APIError", "message": "rate limited"}
    rows = [
        user("q"),
        assistant(text("partial"), tok=tokens(9, 9), completed=False),
        assistant(finish="error", error=failed),
        assistant(text("done"), tok=tokens(50, 5), finish="error", error=failed),
        assistant(text("zero"), tok=tokens(0, 0)),
    ]
    parsed = parse_one(db_with(tmp_path, rows))
    statuses = [(c.usage_status, c.ctx, c.error) for c in parsed.calls]
    assert statuses == [
        ("missing", None, None),
        ("missing", None, "rate limited"),
        ("ok", 50, "rate limited"),
        ("missing", None, None),
    ]
    assert parsed.calls[0].input is None and parsed.calls[0].usage_raw == {
        "tokens": tokens(9, 9),
        "cost": 0.01,
    }
    # An errored step is not sent again (as in 1.x).
    done = next(p for p in parsed.parts if p.text == "done")
    assert not done.resent and next(p for p in parsed.parts if p.text == "partial").resent


def test_tool_results_in_the_assistant_row_are_the_next_calls_input(tmp_path: Path) -> None:
    rows = [
        user("list files"),
        assistant(
            reasoning("look"),
            text("listing"),
            tool("c1", "bash", {"command": "ls"}, "a.py\nb.py"),
            tool("c2", "read", {"filePath": "x"}, "no such file", status="error"),
            tool("c3", "grep", {"pattern": "y"}, "", status="running"),
            tok=tokens(100, 10),
        ),
        assistant(text("two files"), tok=tokens(150, 3)),
    ]
    parsed = parse_one(db_with(tmp_path, rows))
    first, second = parsed.calls
    produced = [(p.kind, p.text, p.tool_name) for p in parsed.parts if p.call_uid == first.uid]
    assert produced == [
        ("reasoning", "look", None),
        ("assistant_text", "listing", None),
        ("tool_call", '{"command":"ls"}', "bash"),
        ("tool_call", '{"filePath":"x"}', "read"),
        ("tool_call", '{"pattern":"y"}', "grep"),
    ]
    assert prompt(parsed, 0) == [("user_text", "list files")]
    assert prompt(parsed, 1)[-3:] == [
        ("tool_result", "a.py\nb.py"),
        ("tool_result", "no such file"),
        ("tool_result", INTERRUPTED_TOOL),
    ]
    results = [p for p in parsed.parts if p.kind == "tool_result"]
    assert all(p.call_uid is None and p.role == "tool" for p in results)
    assert first.prompt_end == 1 and second.prompt_end == len(parsed.parts) - 1


def test_pruned_tool_output_is_sent_as_the_placeholder_from_then_on(tmp_path: Path) -> None:
    rows = [
        user("read"),
        assistant(tool("c1", "read", {"filePath": "a"}, "big output", pruned=T0 + 500), tok=tokens(10, 1)),
        assistant(text("ok"), tok=tokens(20, 1)),
    ]
    parsed = parse_one(db_with(tmp_path, rows))
    [result] = [p for p in parsed.parts if p.kind == "tool_result"]
    assert (result.text, result.pruned_at, result.pruned_text) == (
        "big output",
        ms_to_datetime(T0 + 500),
        PRUNED_TEXT,
    )


def test_completed_compaction_restarts_the_prompt_at_summary_and_recent(tmp_path: Path) -> None:
    rows = [
        user("first"),
        assistant(text("a1"), tok=tokens(100, 5)),
        ("compaction", {"status": "failed", "reason": "auto", "summary": "", "recent": ""}),
        ("compaction", {"status": "completed", "reason": "auto", "summary": "S", "recent": "user: first"}),
        user("second"),
        assistant(text("a2"), tok=tokens(30, 5)),
        ("compaction", {"status": "completed", "reason": "manual", "summary": "S2", "recent": ""}),
        assistant(text("a3"), tok=tokens(20, 5)),
    ]
    parsed = parse_one(db_with(tmp_path, rows))
    assert prompt(parsed, 1) == [("summary", "S"), ("user_text", "user: first"), ("user_text", "second")]
    assert prompt(parsed, 2) == [("summary", "S2")]
    summary = next(p for p in parsed.parts if p.text == "S")
    assert summary.call_uid is None
    assert [c.prompt_start for c in parsed.calls] == [0, 2, 6]


def test_system_synthetic_shell_and_bookkeeping_rows(tmp_path: Path) -> None:
    rows = [
        ("system", {"text": "Use tabs."}),
        user("go", files=[{"url": "file:///work/v2/a.png", "mime": "image/png"}]),
        ("synthetic", {"sessionID": "ses_a", "text": "Background job finished."}),
        ("shell", {"shellID": "sh1", "command": "git status", "status": "completed", "exit": 0,
                   "output": {"output": "clean", "truncated": False}}),
        ("agent-switched", {"agent": "plan"}),
        ("model-switched", {"model": {"id": "x", "providerID": "y"}}),
        ("location-switched", {"directory": "/tmp"}),
        ("skill", {"name": "s"}),
        ("idle", {"outcome": "done"}),
        assistant(text("ok"), tok=tokens(10, 1)),
    ]  # fmt: skip
    parsed = parse_one(db_with(tmp_path, rows))
    assert [(p.role, p.kind, p.text, p.call_uid) for p in parsed.parts[:-1]] == [
        ("system", "system", "Use tabs.", None),
        ("user", "user_text", "go", None),
        ("user", "file", "file:///work/v2/a.png", None),
        ("user", "user_text", "Background job finished.", None),
        ("user", "user_text", "git status", None),
        ("tool", "tool_result", "clean", None),
    ]
    assert parsed.calls[0].prompt_end == 6


def test_sub_agent_session_links_to_its_parent(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    con = make_db(path, v1=False)
    add_v2(con, "ses_parent", [user("delegate")])
    add_v2(con, "ses_child", [user("do it"), assistant(text("done"), tok=tokens(5, 1))], parent="ses_parent")
    con.close()
    sessions = parse_all(path)
    child = sessions["ses_child"].session
    assert (child.parent_uid, child.is_subagent) == ("opencode:ses_parent", True)
    assert not sessions["ses_parent"].session.is_subagent


# -- vendors ------------------------------------------------------------------------------------------


def test_vendor_of_routed_models() -> None:
    cases = {
        ("github-copilot", "claude-sonnet-4.6"): "anthropic",
        ("github-copilot", "gpt-5.4"): "openai",
        ("github-copilot", "gemini-3.1-pro-preview"): "google",
        ("github-copilot", "o3"): "openai",
        ("github-copilot", "o4-mini"): "openai",
        ("openrouter", "anthropic/claude-sonnet-4"): "anthropic",
        ("openrouter", "google/gemini-2.5-pro"): "google",
        ("openrouter", "deepseek/deepseek-chat"): "openrouter",
        ("opencode", "big-pickle"): "opencode",
        ("deepseek", "deepseek-chat"): "deepseek",
        ("github-copilot", "grok-code-fast-1"): "github-copilot",
    }
    assert {k: vendor(*k) for k in cases} == cases
    assert vendor("github-copilot", None) == "github-copilot"


def test_routed_calls_are_grouped_by_vendor_and_keep_their_route(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    con = make_db(path)
    add_v1(con, "ses_old", ["one"])
    add_v2(con, "ses_new", [user("q"), assistant(text("a"), tok=tokens(5, 1), model="claude-sonnet-4.6",
                                                 provider="github-copilot")])  # fmt: skip
    con.close()
    sessions = parse_all(path)
    old, new = sessions["ses_old"].calls[0], sessions["ses_new"].calls[0]
    assert (old.provider, old.model, (old.usage_raw or {})["route"]) == (
        "openai",
        "gpt-5.4",
        "github-copilot",
    )
    assert (new.provider, new.model, (new.usage_raw or {})["route"]) == (
        "anthropic",
        "claude-sonnet-4.6",
        "github-copilot",
    )


# -- read-only and incremental ------------------------------------------------------------------------


def test_live_wal_database_is_left_byte_identical(tmp_path: Path, store: Store) -> None:
    path = tmp_path / "opencode.db"
    writer = make_db(path, wal=True)
    try:
        add_v2(writer, "ses_a", [user("hello"), assistant(text("hi"), tok=tokens(5, 1))])
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        add_v2(writer, "ses_b", [user("more"), assistant(text("yes"), tok=tokens(6, 1))])
        writer.execute("BEGIN")
        add_v2(writer, "ses_c", [user("uncommitted")])  # must not be seen
        assert Path(f"{path}-wal").exists()
        files = [tmp_path / n for n in sorted(os.listdir(tmp_path)) if n.startswith("opencode.db")]
        before = {f.name: sha256(f) for f in files}
        result = ingest([path], store=store)
        assert result.ok, result.errors
        assert (result.sessions, result.calls) == (2, 2)
        after = {f.name: sha256(f) for f in tmp_path.iterdir() if f.name.startswith("opencode.db")}
        assert after == before and set(before) == {"opencode.db", "opencode.db-wal", "opencode.db-shm"}
        writer.execute("ROLLBACK")
    finally:
        writer.close()


def test_new_session_message_row_is_picked_up_by_the_next_ingest(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    path = db_with(data, [user("hello"), assistant(text("hi"), tok=tokens(5, 1))])
    db = tmp_path / "calib.duckdb"
    first = ingest([data], db=db)
    assert first.ok and (first.sessions, first.calls) == (1, 1)
    again = ingest([data], db=db)
    assert again.ok and (again.sessions, again.calls, again.parts) == (0, 0, 0)
    con = sqlite3.connect(path)
    add_v2(con, "ses_a", [user("next"), assistant(text("sure"), tok=tokens(9, 2))], start=2)
    con.commit()
    con.close()
    third = ingest([data], db=db)
    assert third.ok, third.errors
    with Store(db) as store:
        calls = store.calls().sort("seq")
        parts = store.parts().sort("seq")
    assert calls["ctx"].to_list() == [5, 9]
    assert parts["text"].to_list() == ["hello", "hi", "next", "sure"]


# -- synthetic mixed database --------------------------------------------------------------------------


def test_mixed_synthetic_database_holds_every_session_once_with_the_true_usage(tmp_path: Path) -> None:
    seed, n = 31, 9
    sessions = generate("opencode", sessions=n, seed=seed, layout="opencode2-db")
    placed = origins(sessions)
    assert set(placed) == set(ORIGINS)
    write_sample("opencode", tmp_path / "data", layout="opencode2-db", sessions=n, seed=seed)
    with Store(tmp_path / "calib.duckdb") as store:
        result = ingest([tmp_path / "data"], store=store)
        assert result.ok, result.errors
        stored = store.sessions()
        calls = store.calls()
    assert sorted(stored["native_id"].to_list()) == sorted(s.id for s in sessions)
    layout_of = dict(zip(stored["native_id"].to_list(), stored["layout"].to_list(), strict=True))
    for session, origin in zip(sessions, placed, strict=True):
        assert layout_of[session.id] == ("opencode-db" if origin == "v1" else "opencode2-db")
    truth = [rec for s in sessions for rec in s.truth["calls"]]
    assert calls.height == len(truth)
    reported = [rec for rec in truth if rec["reported"]]
    ok = calls.filter(pl.col("usage_status") == "ok")
    assert ok.height == len(reported)
    for column in ("ctx", "carry", "input", "cache_read", "cache_write"):
        assert ok[column].sum() == sum(rec[column] for rec in reported), column
    assert (ok["output"] + ok["reasoning"]).sum() == sum(rec["output"] + rec["reasoning"] for rec in reported)


# -- real data ----------------------------------------------------------------------------------------


@pytest.mark.realdata
def test_real_exports_import_every_assistant_call_with_tokens(store: Store) -> None:
    root = shared_fixture("opencode-entire")
    with_tokens = 0
    for file in root.rglob("*.json"):
        doc = json.loads(file.read_text(encoding="utf-8"))
        for message in doc["messages"]:
            info = message["info"]
            if info["role"] != "assistant":
                continue
            steps = [p for p in message["parts"] if p.get("type") == "step-finish"]
            tokens_of = [p["tokens"] for p in steps] or [info.get("tokens") or {}]
            with_tokens += sum(1 for t in tokens_of if any(_flat(t)))
    result = ingest([root], store=store)
    assert result.ok, result.errors
    calls = store.calls()
    assert result.sessions == 14 and calls.height >= with_tokens
    assert calls.filter(pl.col("usage_status") == "ok").height == with_tokens
    vendors = Counter(calls["provider"].to_list())
    assert set(vendors) == {"anthropic", "openai", "google"}
    routes = {json.loads(r).get("route") for r in calls["usage_raw"].to_list()}
    assert routes == {"github-copilot"}


def _flat(tokens: dict[str, Any]) -> list[int]:
    cache = tokens.get("cache") or {}
    values = [tokens.get(k) for k in ("input", "output", "reasoning")] + [
        cache.get("read"),
        cache.get("write"),
    ]
    return [v for v in values if isinstance(v, int) and v]
